//! The branch, the remote and the network: which remote branch to sync with, fetch and push
//! through the system `git` (never forced, never a `+refspec`), and the jitter between
//! attempts.

use std::time::Duration;

use super::{SyncError, SyncOptions};
use crate::git::repo::{BankRepo, GitError};

/// The remote branch a sync talks to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The remote's name.
    pub remote: String,
    /// The branch on the remote.
    pub branch: String,
}

/// The local branch HEAD names (`main`), also when it has no commit yet; an error when HEAD
/// is detached.
pub fn current_branch(repo: &BankRepo) -> Result<String, SyncError> {
    let head = repo.repo.find_reference("HEAD")?;
    match head.symbolic_target()? {
        Some(target) => Ok(target
            .strip_prefix("refs/heads/")
            .unwrap_or(target)
            .to_string()),
        None => Err(SyncError::Detached),
    }
}

/// HEAD's commit; `None` on an unborn branch.
pub fn head_commit(repo: &BankRepo) -> Result<Option<git2::Commit<'_>>, SyncError> {
    match repo.repo.head() {
        Ok(r) => Ok(Some(r.peel_to_commit()?)),
        Err(e)
            if matches!(
                e.code(),
                git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The remote and branch: the options', else the branch's upstream (`branch.NAME.remote`,
/// `branch.NAME.merge`), else `origin` (or the only remote) and the current branch's name.
pub fn target(repo: &BankRepo, branch: &str, options: &SyncOptions) -> Result<Target, SyncError> {
    let config = repo.repo.config()?;
    let get = |key: &str| config.get_string(key).ok().filter(|v| !v.is_empty());
    let remotes: Vec<String> = repo
        .repo
        .remotes()?
        .iter()
        .filter_map(|r| r.ok().flatten())
        .map(str::to_string)
        .collect();
    let remote = match &options.remote {
        Some(name) => {
            if !remotes.contains(name) {
                return Err(SyncError::NoRemote(format!(
                    "no remote named `{name}` (the repository has {}): add it with `git remote add {name} URL`",
                    if remotes.is_empty() {
                        "none".to_string()
                    } else {
                        remotes.join(", ")
                    }
                )));
            }
            name.clone()
        }
        None => match get(&format!("branch.{branch}.remote")) {
            Some(r) if remotes.contains(&r) => r,
            _ if remotes.iter().any(|r| r == "origin") => "origin".to_string(),
            _ if remotes.len() == 1 => remotes[0].clone(),
            _ if remotes.is_empty() => {
                return Err(SyncError::NoRemote(
                    "no remote is configured: add the shared repository with `git remote add origin URL`, then `lesson sync`".into(),
                ))
            }
            _ => {
                return Err(SyncError::NoRemote(format!(
                    "several remotes ({}) and no upstream for `{branch}`: say which with `lesson sync --remote NAME`",
                    remotes.join(", ")
                )))
            }
        },
    };
    let branch = match &options.branch {
        Some(b) => b.clone(),
        None => get(&format!("branch.{branch}.merge"))
            .map(|m| m.strip_prefix("refs/heads/").unwrap_or(&m).to_string())
            .unwrap_or_else(|| branch.to_string()),
    };
    Ok(Target { remote, branch })
}

/// Fetch the remote branch; its commit, `None` when the remote has no such branch (an empty
/// remote: the first sync pushes it). Only `FETCH_HEAD` (and the remote-tracking branch, as
/// `git fetch` does) change.
pub fn fetch(repo: &BankRepo, target: &Target) -> Result<Option<git2::Oid>, SyncError> {
    let refname = format!("refs/heads/{}", target.branch);
    let args = ["fetch", "--quiet", "--no-tags", &target.remote, &refname];
    match repo.git(&args) {
        Ok(_) => {}
        Err(GitError::Command { stderr, .. }) if stderr.contains("couldn't find remote ref") => {
            return Ok(None)
        }
        Err(e) => return Err(e.into()),
    }
    // FETCH_HEAD's first line is the branch fetched
    let fetch_head = repo.repo.path().join("FETCH_HEAD");
    let text = std::fs::read_to_string(&fetch_head).map_err(super::io_error(&fetch_head))?;
    let hash = text.split_whitespace().next().unwrap_or_default();
    Ok(Some(git2::Oid::from_str(hash)?))
}

/// Push the commit `commit` to the remote branch, never forced: `Ok(false)` when the remote
/// refused it because it moved (another runtime pushed first).
pub fn push(repo: &BankRepo, target: &Target, commit: git2::Oid) -> Result<bool, SyncError> {
    let refspec = format!("{commit}:refs/heads/{}", target.branch);
    debug_assert!(!refspec.starts_with('+'));
    match repo.git(&["push", "--quiet", &target.remote, &refspec]) {
        Ok(_) => Ok(true),
        Err(GitError::Command { stderr, .. }) if is_race(&stderr) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether a push failed because the remote branch moved under it (not for any other
/// reason): a non-fast-forward rejection, or a lost race for the ref's lock on the server.
fn is_race(stderr: &str) -> bool {
    [
        "fetch first",
        "non-fast-forward",
        "cannot lock ref",
        "failed to update ref",
        "stale info",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// Sleep a random while, growing with the attempt (25 ms to ~800 ms), so that runtimes that
/// raced do not race again in step.
pub fn jitter(attempt: usize) {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    let cap = 25u64 << attempt.min(5);
    std::thread::sleep(Duration::from_millis(25 + h.finish() % cap));
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_moved_remote_is_a_race() {
        assert!(super::is_race(
            "! [rejected]        HEAD -> main (fetch first)"
        ));
        assert!(super::is_race(
            "! [remote rejected] HEAD -> main (failed to update ref)"
        ));
        assert!(!super::is_race("fatal: Authentication failed"));
    }
}
