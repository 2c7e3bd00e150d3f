//! The commits of one lesson's story (`lesson log`): every commit that touched its file, newest
//! first, following renames and the move to `_archive/` back to the commit that added it.

use std::path::Path;

use git2::{Oid, Sort};

use super::provenance::{commit_changes, Stamp, TreeCache};
use super::repo::{BankRepo, GitError};

/// What a commit did to the lesson's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Added it.
    Added,
    /// Changed its text.
    Modified,
    /// Moved it from another path (a rename, or the move to `_archive/`), changed or not.
    Renamed {
        /// Its path before, relative to the bank.
        from: String,
    },
}

/// A commit that touched the lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    /// The commit.
    pub stamp: Stamp,
    /// The first line of its message.
    pub summary: String,
    /// The lesson's path in that commit, relative to the bank.
    pub path: String,
    /// What it did.
    pub change: Change,
}

/// The commits that touched the lesson at `bank_rel` (its path in HEAD's tree, relative to the
/// bank), newest first, following renames back to the commit that added it. `None` when the
/// bank is not in git or HEAD has no commit; empty when HEAD does not hold the file.
pub fn touches(root: &Path, bank_rel: &str) -> Result<Option<Vec<Touch>>, GitError> {
    let repo = match BankRepo::open(root) {
        Ok(repo) => repo,
        Err(GitError::NotARepository(_) | GitError::Bare(_) | GitError::Outside { .. }) => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let Some(head) = repo.repo.head().ok().and_then(|h| h.target()) else {
        return Ok(None);
    };
    let mut revwalk = repo.repo.revwalk()?;
    revwalk.set_sorting(Sort::TOPOLOGICAL | Sort::TIME)?;
    revwalk.push(head)?;
    let mut name = bank_rel.to_string();
    let mut trees = TreeCache::default();
    let mut out = Vec::new();
    let head_holds = repo
        .repo
        .find_commit(head)?
        .tree()?
        .get_path(Path::new(&repo.repo_path(bank_rel)))
        .is_ok();
    if !head_holds {
        return Ok(Some(out));
    }
    for oid in revwalk {
        let oid: Oid = oid?;
        let commit = repo.repo.find_commit(oid)?;
        if commit.parent_count() > 1 {
            continue;
        }
        let Some((changes, renames)) =
            commit_changes(&repo.repo, &commit, &repo.prefix, &mut trees)?
        else {
            continue;
        };
        let change = if changes.modified.contains(&name) {
            Change::Modified
        } else if changes.added.iter().any(|(p, _)| *p == name) {
            Change::Added
        } else if let Some((from, _)) = renames.iter().find(|(_, to)| *to == name) {
            Change::Renamed { from: from.clone() }
        } else {
            continue;
        };
        out.push(Touch {
            stamp: Stamp::of(&commit),
            summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or(b"")).into_owned(),
            path: name.clone(),
            change: change.clone(),
        });
        match change {
            Change::Added => break,
            Change::Renamed { from } => name = from,
            Change::Modified => {}
        }
    }
    Ok(Some(out))
}
