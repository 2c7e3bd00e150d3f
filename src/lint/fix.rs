//! Applying fixes: lint, apply every non-overlapping fix as span edits, lint again, until nothing
//! changes. Works on an in-memory overlay so `--diff` shows exactly what `--fix` would write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::bank::{Bank, BankError, Overlay};
use crate::diagnostic::{apply_edits, Applicability, Diagnostic, Fix};
use crate::lint::{lint_at, Selection};

/// At most this many lint-and-fix passes (fixes normally converge in two).
pub const MAX_PASSES: usize = 10;

/// The result of fixing a bank in memory.
#[derive(Debug)]
pub struct Fixed {
    /// Changed files: path -> (before, after). A missing file's "before" is empty.
    pub changes: BTreeMap<PathBuf, (String, String)>,
    /// How many fixes were applied over all passes.
    pub applied: usize,
    /// The bank as it would be after the fixes.
    pub bank: Bank,
    /// The diagnostics that remain after the fixes.
    pub remaining: Vec<Diagnostic>,
}

/// `lesson lint --fix` failed.
#[derive(Debug, thiserror::Error)]
pub enum FixError {
    /// There is no bank at the root.
    #[error(transparent)]
    Missing(BankError),
    /// The bank cannot be locked.
    #[error("cannot lock the bank at {root}")]
    Lock {
        /// The bank.
        root: String,
        /// Why.
        #[source]
        source: crate::edit::EditError,
    },
    /// The bank cannot be loaded.
    #[error("cannot load the bank at {root}")]
    Load {
        /// The bank.
        root: String,
        /// Why.
        #[source]
        source: BankError,
    },
    /// A fixed file cannot be written; the files before it were.
    #[error("cannot write fixes")]
    Write(#[source] crate::edit::EditError),
}

/// `lesson lint --fix`: fix the bank at `root` and write the changes, holding the bank's lock
/// for the whole read-modify-write, like every other writer.
pub fn fix_and_write(
    root: &Path,
    selection: &Selection,
    unsafe_fixes: bool,
    now: jiff::Timestamp,
) -> Result<Fixed, FixError> {
    let display = || root.display().to_string();
    if !root.is_dir() {
        return Err(FixError::Missing(BankError::NotFound(display())));
    }
    let lock_error = |source| FixError::Lock {
        root: display(),
        source,
    };
    let mut lock = crate::edit::BankLock::open(root).map_err(lock_error)?;
    lock.with(|| {
        let fixed = fix(root, Overlay::new(), selection, unsafe_fixes, now).map_err(|source| {
            FixError::Load {
                root: display(),
                source,
            }
        })?;
        write(root, &fixed.changes).map_err(FixError::Write)?;
        Ok(fixed)
    })
    .map_err(lock_error)?
}

/// Lint and fix the bank at `root` in memory, starting from the files in `base` (usually
/// empty: the files on disk). Unsafe fixes are applied only with `unsafe_fixes`.
pub fn fix(
    root: &Path,
    base: Overlay,
    selection: &Selection,
    unsafe_fixes: bool,
    now: jiff::Timestamp,
) -> Result<Fixed, BankError> {
    let mut overlay = base;
    let mut originals: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut applied = 0;
    let mut passes = 0;
    loop {
        let (bank, diagnostics) = lint_at(root, &overlay, now, selection)?;
        passes += 1;
        let mut by_path: BTreeMap<&Path, Vec<&Fix>> = BTreeMap::new();
        for d in &diagnostics {
            if let Some(fix) = &d.fix {
                if fix.applicability == Applicability::Safe || unsafe_fixes {
                    by_path.entry(d.path.as_path()).or_default().push(fix);
                }
            }
        }
        let mut changed = false;
        if passes <= MAX_PASSES {
            for (path, fixes) in by_path {
                let Some(before) = current_text(&bank, path) else {
                    continue;
                };
                let (after, n) = apply_fixes(&before, fixes);
                if n > 0 && after != before {
                    originals
                        .entry(path.to_path_buf())
                        .or_insert_with(|| before.clone());
                    overlay.insert(path.to_path_buf(), after);
                    applied += n;
                    changed = true;
                }
            }
        }
        if !changed {
            let changes = originals
                .into_iter()
                .filter_map(|(path, before)| {
                    let after = overlay.remove(&path)?;
                    (after != before).then_some((path, (before, after)))
                })
                .collect();
            return Ok(Fixed {
                changes,
                applied,
                bank,
                remaining: diagnostics,
            });
        }
    }
}

/// The text a fix for `path` applies to: a parsed lesson's text, `_index.md`, or "" for a file
/// that does not exist yet. Files that could not be read as text are never edited.
fn current_text(bank: &Bank, path: &Path) -> Option<String> {
    if let Some(doc) = bank.documents.iter().find(|d| d.source.path == path) {
        debug_assert!(!doc.is_trimmed(), "a fix needs the whole text");
        return doc.read_problem.is_none().then(|| doc.source.text.clone());
    }
    if path == bank.index_path() {
        return Some(
            bank.index
                .as_ref()
                .map_or_else(String::new, |s| s.text.clone()),
        );
    }
    None
}

/// Apply whole fixes in order of position, skipping any fix that overlaps one already taken.
/// Returns the new text and the number of fixes taken.
pub fn apply_fixes(text: &str, mut fixes: Vec<&Fix>) -> (String, usize) {
    fixes.sort_by_key(|f| f.edits.first().map(|e| (e.range.start, e.range.end)));
    let mut taken = Vec::new();
    let mut count = 0;
    let mut end: Option<usize> = None;
    for fix in fixes {
        let Some(start) = fix.edits.first().map(|e| e.range.start) else {
            continue;
        };
        if end.is_some_and(|end| start < end) {
            continue;
        }
        end = fix.edits.iter().map(|e| e.range.end).max();
        taken.extend(fix.edits.iter());
        count += 1;
    }
    let (out, _) = apply_edits(text, taken);
    (out, count)
}

/// Write the changes of a fix run to disk, atomically, each inside the bank.
pub fn write(
    root: &Path,
    changes: &BTreeMap<PathBuf, (String, String)>,
) -> Result<(), crate::edit::EditError> {
    // every target is checked before the first write: a refused one writes nothing
    crate::edit::check_targets(root, changes.keys().map(|p| p.as_path()))?;
    for (path, (_, after)) in changes {
        crate::edit::write_atomic(root, path, after.as_bytes())?;
    }
    Ok(())
}

/// A unified diff of the changes, file by file.
pub fn unified_diff(changes: &BTreeMap<PathBuf, (String, String)>) -> String {
    let mut out = String::new();
    for (path, (before, after)) in changes {
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(before, after);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(2)
                .header(&format!("a/{name}"), &format!("b/{name}"))
                .to_string(),
        );
    }
    out
}
