//! What the write door did during one call, for the report of a write (`--format json` of the
//! writers): [`recording`] collects every replacement, append and move this thread makes
//! through [`super::write_atomic`], [`super::append`] and [`super::move_file`] while its
//! closure runs. The writers run on the calling thread under the bank's lock, so the journal
//! is exactly what they changed, `_index.md` and ledgers included. Outside [`recording`]
//! nothing is kept: a write costs one thread-local check more.

use std::cell::RefCell;
use std::path::PathBuf;

/// One change to a file of the bank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A file replaced atomically; `created` when it did not exist before.
    Written {
        /// The file.
        path: PathBuf,
        /// Whether the write created it.
        created: bool,
    },
    /// Whole lines appended (a ledger's events, one per line); `created` when the append
    /// created the file.
    Appended {
        /// The file.
        path: PathBuf,
        /// Whether the append created it.
        created: bool,
        /// The lines, without their line breaks.
        lines: Vec<String>,
    },
    /// A file moved to a new name.
    Moved {
        /// Where it was.
        from: PathBuf,
        /// Where it is.
        to: PathBuf,
    },
}

thread_local! {
    static JOURNAL: RefCell<Option<Vec<Change>>> = const { RefCell::new(None) };
}

/// Run `f`, and return what it wrote through the write door (in order), beside its result.
/// Nested calls each see their own writes only.
pub fn recording<T>(f: impl FnOnce() -> T) -> (T, Vec<Change>) {
    let outer = JOURNAL.with(|j| j.borrow_mut().replace(Vec::new()));
    let result = f();
    let changes = JOURNAL.with(|j| std::mem::replace(&mut *j.borrow_mut(), outer));
    (result, changes.unwrap_or_default())
}

/// Note a change when this thread is recording; `change` is only built then.
pub(super) fn note(change: impl FnOnce() -> Change) {
    JOURNAL.with(|j| {
        if let Some(changes) = j.borrow_mut().as_mut() {
            changes.push(change());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_inside_and_restores_an_outer_journal() {
        note(|| unreachable!("not recording: the change is never built"));
        let ((), outer) = recording(|| {
            note(|| Change::Moved {
                from: "a".into(),
                to: "b".into(),
            });
            let ((), inner) = recording(|| {
                note(|| Change::Written {
                    path: "c".into(),
                    created: true,
                })
            });
            assert_eq!(inner.len(), 1);
        });
        assert_eq!(
            outer,
            vec![Change::Moved {
                from: "a".into(),
                to: "b".into()
            }]
        );
    }
}
