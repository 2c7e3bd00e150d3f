//! What a change does to the bank, between two revisions: the pull-request checks of
//! `lesson lint --base` and the review summary of `lesson diff`.
//!
//! Both start from one git diff of the two trees (or of the base tree and the working tree),
//! restricted to the bank's folder, with renames found by git's similarity detection
//! ([`changes`]); only the changed files are read (`review.rs`). The findings are diagnostics of
//! the rules G001..G006 (declared with the other rules in `lint::rules`, as [`Check::Base`]), placed
//! in the head version of each file, with the bank's levels, `--select` and the files'
//! suppressions applied ([`crate::lint::settle`]).
//!
//! [`Check::Base`]: crate::lint::Check::Base

pub mod changes;
mod review;

use std::path::Path;

use serde::Serialize;

use crate::bank::{Bank, BankError};
use crate::config::{Config, ConfigError, CONFIG_FILE};
use crate::dedup::DedupError;
use crate::diagnostic::Diagnostic;
use crate::git::repo::{BankRepo, GitError};
use crate::lint::Selection;
use crate::source::Source;

pub use changes::{Change, ChangeKind, Changes, Head};
pub use review::{Added, Moved, Nearest, Recorded, Rewritten, Supersession};

/// What can stop a comparison.
#[derive(Debug, thiserror::Error)]
pub enum PrError {
    /// The repository, a revision, or a read failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The head's `lesson.toml` is not valid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The head bank could not be loaded.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// Dedup could not run.
    #[error(transparent)]
    Dedup(#[from] DedupError),
}

/// The findings of `lesson lint --base`, and the texts they point into.
pub struct BaseCheck {
    /// The findings, levels and suppressions applied, sorted by path and position.
    pub diagnostics: Vec<Diagnostic>,
    /// The head versions of the files the findings point into (for the full format's
    /// snippets).
    pub sources: Vec<Source>,
    /// How many bank files changed.
    pub changed: usize,
}

/// Whether `lesson lint --base` runs the plain lint too: unless the selection keeps only the
/// pull-request rules (`--select G`), or the head is a commit (`--head`: the plain rules read the
/// working tree, which is not the head then).
pub fn runs_plain_lint(selection: &Selection, head_is_commit: bool) -> bool {
    !head_is_commit
        && crate::lint::RULES
            .iter()
            .any(|r| selection.selects(r) && !matches!(r.check, crate::lint::Check::Base))
}

/// The revisions being compared, as the user named them.
#[derive(Debug, Clone, Serialize)]
pub struct Revisions {
    /// The base revision.
    pub base: String,
    /// The head revision; `None` for the working tree.
    pub head: Option<String>,
}

/// The configuration of the head: its `lesson.toml` (the working tree's, or the head commit's),
/// the defaults when it has none.
fn head_config(changes: &Changes<'_>) -> Result<Config, PrError> {
    match changes.head_bytes(CONFIG_FILE)? {
        Some(bytes) => Ok(crate::lint::parse_config(
            &String::from_utf8_lossy(&bytes),
            CONFIG_FILE,
        )?),
        None => Ok(Config::default()),
    }
}

/// How many comparisons run with libgit2's hash verification off (see [`Unverified`]).
static UNVERIFIED: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// libgit2's strict hash verification, off while a comparison runs and back on when the last
/// one ends.
///
/// libgit2 hashes every object it reads again and compares it with the object's name (git
/// itself does not, outside `git fsck`): on a 100,000-lesson bank that costs the two 100,000-entry
/// trees of the bank's folder several times the diff itself. The switch is process-wide
/// (`git_libgit2_opts`), so it is scoped to the comparison, which only reads: a process that
/// also merges or commits (`lesson sync`, `lesson mcp`, a runtime that embeds the library) must
/// not go on reading unverified objects into the trees it writes. Another thread's git work that
/// runs during a comparison reads unverified objects meanwhile, as `git` would.
struct Unverified;

impl Unverified {
    fn begin() -> Unverified {
        let mut running = UNVERIFIED.lock().unwrap_or_else(|e| e.into_inner());
        if *running == 0 {
            git2::opts::strict_hash_verification(false);
        }
        *running += 1;
        Unverified
    }
}

impl Drop for Unverified {
    fn drop(&mut self) {
        let mut running = UNVERIFIED.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        if *running == 0 {
            git2::opts::strict_hash_verification(true);
        }
    }
}

/// Open the repository around the bank at `root` and diff `base` with `head` (`None`: the
/// working tree), then run `f` on the changes.
fn with_changes<T>(
    root: &Path,
    base: &str,
    head: Option<&str>,
    f: impl FnOnce(&Changes<'_>) -> Result<T, PrError>,
) -> Result<T, PrError> {
    let _unverified = Unverified::begin();
    let repo = BankRepo::open(root)?;
    let base = repo.commit(base)?;
    let head = match head {
        Some(rev) => Head::Commit(repo.commit(rev)?),
        None => Head::WorkTree,
    };
    let changes = Changes::between(&repo, base, head)?;
    f(&changes)
}

/// `lesson lint --base BASE [--head HEAD]`: the pull-request findings of the change from `base`
/// to `head` (`None`: the working tree) in the bank at `root` (findings' paths are below
/// `root` as given).
pub fn check(
    root: &Path,
    base: &str,
    head: Option<&str>,
    selection: &Selection,
) -> Result<BaseCheck, PrError> {
    with_changes(root, base, head, |changes| {
        let config = head_config(changes)?;
        let exclude = crate::bank::exclude_set(&config)?;
        let review = review::review(root, changes, &exclude, false)?;
        let diagnostics =
            crate::lint::settle(&config, selection, &review.docs, review.findings.clone());
        let mut sources = review.sources;
        sources.extend(review.docs.into_iter().map(|d| d.source));
        Ok(BaseCheck {
            diagnostics,
            sources,
            changed: changes.changes.len(),
        })
    })
}

/// What a change does to the bank, as `lesson diff` shows it to a reviewer.
pub struct Summary {
    /// The revisions compared.
    pub revisions: Revisions,
    /// Lessons added, with their nearest existing lesson.
    pub added: Vec<Added>,
    /// Outcomes recorded, per lesson.
    pub recorded: Vec<Recorded>,
    /// `supersedes` entries added.
    pub superseded: Vec<Supersession>,
    /// Lessons moved to `_archive/`.
    pub archived: Vec<Moved>,
    /// Lessons moved elsewhere in the bank.
    pub moved: Vec<Moved>,
    /// Lessons whose body or trigger changed.
    pub rewritten: Vec<Rewritten>,
    /// The findings of `lesson lint --base` (levels and suppressions applied).
    pub findings: Vec<Diagnostic>,
    /// The texts the findings point into.
    pub sources: Vec<Source>,
}

/// `lesson diff BASE [HEAD]`: what the change from `base` to `head` (`None`: the working tree)
/// does to the bank at `root`. Each added lesson is compared with the head's other lessons by
/// `dedup`'s rules (its nearest lesson that is not new itself).
pub fn diff(
    root: &Path,
    base: &str,
    head: Option<&str>,
    now: jiff::Timestamp,
) -> Result<Summary, PrError> {
    with_changes(root, base, head, |changes| {
        let config = head_config(changes)?;
        let exclude = crate::bank::exclude_set(&config)?;
        let mut review = review::review(root, changes, &exclude, true)?;
        if !review.added.is_empty() {
            let bank = head_bank(root, changes, config.clone(), &exclude, now)?;
            let new: std::collections::HashSet<String> =
                review.added.iter().map(|a| a.slug.clone()).collect();
            for (added, lesson) in review.added.iter_mut().zip(&review.added_lessons) {
                added.nearest = crate::dedup::duplicates_of(&bank, lesson)?
                    .into_iter()
                    .find(|pair| !new.contains(&pair.a))
                    .map(|pair| Nearest {
                        slug: pair.a,
                        score: pair.score,
                    });
            }
        }
        let findings = crate::lint::settle(
            &config,
            &Selection::default(),
            &review.docs,
            review.findings.clone(),
        );
        let mut sources = review.sources;
        sources.extend(review.docs.into_iter().map(|d| d.source));
        Ok(Summary {
            revisions: Revisions {
                base: base.to_string(),
                head: head.map(str::to_string),
            },
            added: review.added,
            recorded: review.recorded,
            superseded: review.superseded,
            archived: review.archived,
            moved: review.moved,
            rewritten: review.rewritten,
            findings,
            sources,
        })
    })
}

/// The head's bank: the working tree's, or the head commit's lesson files.
fn head_bank(
    root: &Path,
    changes: &Changes<'_>,
    config: Config,
    exclude: &globset::GlobSet,
    now: jiff::Timestamp,
) -> Result<Bank, PrError> {
    let files = changes.head_tree_files(|rel| crate::walk::is_lesson_path(rel, exclude))?;
    Ok(match files {
        None => crate::lint::load_lessons(root, now)?,
        Some(files) => Bank::from_files(
            root,
            config,
            files
                .into_iter()
                .map(|(rel, bytes)| (root.join(rel), bytes)),
            now,
            None,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::repo::run_git;

    /// A comparison reads without hash verification, and leaves it on for the rest of the
    /// process: a loose object whose bytes no longer match its name is refused afterwards.
    #[test]
    fn hash_verification_is_back_on_after_a_comparison() {
        let tmp = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            run_git(tmp.path(), args).unwrap();
        };
        git(&["init", "-q"]);
        let bank = tmp.path().join("lessons");
        std::fs::create_dir_all(&bank).unwrap();
        std::fs::write(bank.join("notes.txt"), "one\n").unwrap();
        git(&["add", "."]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@x",
            "commit",
            "-qm",
            "one",
        ]);
        let repo = git2::Repository::open(tmp.path()).unwrap();
        let odb = repo.odb().unwrap();
        let id = odb.write(git2::ObjectType::Blob, b"one\n").unwrap();
        let other = odb.write(git2::ObjectType::Blob, b"two\n").unwrap();
        let loose = |id: git2::Oid| {
            let hex = id.to_string();
            repo.path().join("objects").join(&hex[..2]).join(&hex[2..])
        };
        // the object named `id` now holds the bytes of `other`
        let (path, corrupt) = (loose(id), loose(other));
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        permissions.set_readonly(false);
        std::fs::set_permissions(&path, permissions).unwrap();
        std::fs::copy(&corrupt, &path).unwrap();

        let checked = check(&bank, "HEAD", None, &Selection::default()).unwrap();
        assert_eq!(checked.changed, 0);
        let fresh = git2::Repository::open(tmp.path()).unwrap();
        let read = fresh.find_blob(id);
        assert!(
            read.is_err(),
            "a corrupt object was read as {:?}",
            read.map(|b| b.content().to_vec())
        );
    }
}
