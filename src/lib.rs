//! `lesson`: manage a git-versioned bank of AIP-11 `LESSON.md` files.
//!
//! The library owns everything but the command line: reading and parsing files with exact
//! positions ([`source`], [`document`], [`yaml`]), the typed model ([`lesson`]), banks
//! ([`bank`]), lint rules and fixes ([`lint`]), output formats ([`report`]) and the generated
//! index ([`index_md`]). It has no terminal or clap dependency, so runtimes can embed it.
//!
//! A runtime that embeds it opens a [`retrieve::Retriever`] once, asks it before each turn
//! ([`retrieve::Retriever::answer`]) and records what happened after
//! ([`curate::record::record`]); [`Bank::open`] loads a bank, [`lint::lint`] checks it, and
//! [`define_lesson`] admits a lesson defined in code through the gate of `lesson add`. The
//! README's "Embedding the library" is a whole runtime loop (`examples/embed.rs`).

#![warn(missing_docs)]

pub mod bank;
mod checksum;
pub mod config;
pub mod curate;
pub mod dedup;
pub mod diagnostic;
pub mod distill;
pub mod document;
pub mod edit;
pub mod embed;
pub mod git;
pub mod index_md;
pub mod layers;
pub mod layout;
pub mod ledger;
pub mod lesson;
pub mod lint;
pub mod listing;
pub mod merge;
pub mod pr;
pub mod progress;
pub mod report;
pub mod retrieve;
pub mod schema;
pub mod semantic;
pub mod source;
pub mod sync;
pub mod template;
pub mod usage;
pub mod walk;
pub mod watch;
pub mod yaml;

pub use bank::Bank;
pub use diagnostic::{Diagnostic, Severity};
pub use embed::define_lesson;
pub use lesson::Lesson;

/// A property test's case count: `n`, times `LESSON_STRESS` when set (`cargo xtask stress`
/// runs the tests with more cases).
#[cfg(test)]
pub(crate) fn test_cases(n: u32) -> u32 {
    n * std::env::var("LESSON_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}
