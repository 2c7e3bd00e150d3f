//! Progress of long operations, for a front end to show. The library draws nothing and
//! depends on no terminal crate: an operation that can take long on a large bank (the load and
//! lint of [`crate::lint::lint_report_with`], the phases of [`crate::sync::sync_with`]) tells a
//! [`Progress`] what it is doing, and the front end decides whether and how to show it (the
//! `lesson` binary draws a bar on a terminal). The plain functions ([`crate::lint::lint_report`],
//! [`crate::sync::sync`]) pass [`Silent`], whose methods do nothing.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use lesson::lint::{lint_report_with, Selection};
//! use lesson::progress::Progress;
//!
//! /// Counts the steps of every phase.
//! #[derive(Default)]
//! struct Steps(AtomicU64);
//!
//! impl Progress for Steps {
//!     fn advance(&self, n: u64) {
//!         self.0.fetch_add(n, Ordering::Relaxed);
//!     }
//! }
//!
//! let steps = Steps::default();
//! let now = "2026-11-22T12:00:00Z".parse().unwrap();
//! let (bank, _findings) =
//!     lint_report_with("lessons".as_ref(), now, &Selection::default(), &steps).unwrap();
//! // one step per file checked
//! assert_eq!(steps.0.load(Ordering::Relaxed), bank.documents.len() as u64);
//! ```

/// What a long operation reports as it goes. Every method has an empty default, and all may be
/// called from several threads at once ([`Progress::advance`] in particular, from the threads
/// of a parallel load).
pub trait Progress: Sync {
    /// A phase begins: what it does, in a few words (`checking`, `fetching`), and how many
    /// steps it has when that is known beforehand.
    fn begin(&self, _phase: &str, _total: Option<u64>) {}
    /// `n` more steps of the current phase are done.
    fn advance(&self, _n: u64) {}
    /// The current phase is over.
    fn end(&self) {}
}

/// Reports nothing: the progress of the functions that take none.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {}

/// Run `f` as the phase `name` of `progress` (begun before, ended after, also when `f` fails).
pub fn phase<T>(progress: &dyn Progress, name: &str, f: impl FnOnce() -> T) -> T {
    progress.begin(name, None);
    let result = f();
    progress.end();
    result
}
