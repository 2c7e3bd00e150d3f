//! The branch, the remote and the network: which remote branch to sync with, fetch and push
//! through the system `git` (never forced, never a `+refspec`), and the jitter between
//! attempts.

use std::collections::BTreeMap;
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

/// Fetch the branches `branches` of `remote` in one `git fetch`: each one's commit, by name; a
/// branch the remote does not have is left out (the fetch is run again without it). Only
/// `FETCH_HEAD` (and remote-tracking branches, as `git fetch` does) change.
pub fn fetch_branches(
    repo: &BankRepo,
    remote: &str,
    branches: &[String],
) -> Result<BTreeMap<String, git2::Oid>, SyncError> {
    let mut wanted: Vec<String> = branches.iter().map(|b| format!("refs/heads/{b}")).collect();
    wanted.sort();
    wanted.dedup();
    loop {
        if wanted.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut args = vec!["fetch", "--quiet", "--no-tags", remote];
        args.extend(wanted.iter().map(String::as_str));
        match repo.git(&args) {
            Ok(_) => break,
            Err(GitError::Command { stderr, .. })
                if stderr.contains("couldn't find remote ref") =>
            {
                // `fatal: couldn't find remote ref refs/heads/NAME`: fetch the others
                let missing = stderr
                    .split("couldn't find remote ref ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .map(str::to_string);
                let before = wanted.len();
                wanted.retain(|w| Some(w) != missing.as_ref());
                if wanted.len() == before {
                    return Err(GitError::Command {
                        args: format!("fetch {remote}"),
                        status: "failed".into(),
                        stderr,
                    }
                    .into());
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    // FETCH_HEAD: one line per branch fetched, `HASH<TAB><TAB>branch 'NAME' of URL`
    let fetch_head = repo.repo.path().join("FETCH_HEAD");
    let text = std::fs::read_to_string(&fetch_head).map_err(super::io_error(&fetch_head))?;
    let mut tips = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, '\t');
        let (Some(hash), Some(_), Some(what)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // a branch name holds no space: the name ends at the first `' of `
        let Some(name) = what
            .strip_prefix("branch '")
            .and_then(|rest| rest.split("' of ").next())
        else {
            continue;
        };
        if wanted
            .iter()
            .any(|w| w.strip_prefix("refs/heads/") == Some(name))
        {
            tips.insert(name.to_string(), git2::Oid::from_str(hash)?);
        }
    }
    Ok(tips)
}

/// The remote's branches whose names match the glob `pattern` (`lesson/*`; `*` also matches
/// `/`, as in a git refspec), by name, from one `git ls-remote --heads`.
pub fn matching_branches(
    repo: &BankRepo,
    remote: &str,
    pattern: &str,
) -> Result<Vec<String>, SyncError> {
    let glob = globset::Glob::new(pattern)
        .map_err(|e| SyncError::Pattern(format!("`{pattern}`: {e}")))?
        .compile_matcher();
    let out = repo.git(&["ls-remote", "--heads", remote])?;
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split('\t').nth(1)?.strip_prefix("refs/heads/"))
        .filter(|name| glob.is_match(name))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
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

/// How `lesson sync` waits between attempts after a push lost a race: exponential backoff with
/// full jitter (the wait after the `n`th rejection is uniform in `[0, min(cap, base·2^(n−1))]`),
/// so that runtimes that raced spread out instead of racing again in step, and a runtime that
/// lost many times still tries again within `cap`. Bounded twice: at most `max_attempts`
/// attempts, and no new attempt starts once `deadline` has passed since the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The longest wait after the first rejection.
    pub base: Duration,
    /// The longest wait after any rejection.
    pub cap: Duration,
    /// Attempts (fetch, merge, push) at most.
    pub max_attempts: usize,
    /// No attempt starts later than this after the first.
    pub deadline: Duration,
}

impl Backoff {
    /// The longest wait after `rejections` rejected pushes (at least 1): `base·2^(rejections−1)`,
    /// at most `cap`.
    pub fn ceiling(&self, rejections: usize) -> Duration {
        let doublings = rejections.saturating_sub(1).min(30) as u32;
        self.base.saturating_mul(1u32 << doublings).min(self.cap)
    }

    /// The wait after `rejections` rejected pushes, `random` a uniformly random number (full
    /// jitter: anything from zero to [`Backoff::ceiling`]).
    pub fn delay(&self, rejections: usize, random: u64) -> Duration {
        let ceiling = self.ceiling(rejections).as_micros() as u64;
        Duration::from_micros(random % (ceiling + 1))
    }

    /// Whether another attempt may start after `attempts` attempts, `elapsed` after the first
    /// began, and a wait of `wait` before it.
    pub fn may_retry(&self, attempts: usize, elapsed: Duration, wait: Duration) -> bool {
        attempts < self.max_attempts && elapsed + wait < self.deadline
    }

    /// The most time a sync can spend waiting between attempts.
    pub fn max_total_wait(&self) -> Duration {
        (1..self.max_attempts)
            .map(|n| self.ceiling(n))
            .sum::<Duration>()
            .min(self.deadline)
    }
}

/// A random number for the jitter (no cryptographic quality needed: runtimes need only not
/// wait in step).
pub fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.write_u32(std::process::id());
    h.finish()
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

    #[test]
    fn backoff_grows_to_its_cap_and_is_bounded() {
        use std::time::Duration;
        let b = super::super::BACKOFF;
        let ms = Duration::from_millis;
        assert_eq!(b.ceiling(1), b.base);
        assert_eq!(b.ceiling(2), b.base * 2);
        assert_eq!(b.ceiling(3), b.base * 4);
        assert_eq!(b.ceiling(1_000), b.cap);
        // full jitter: anywhere from zero to the ceiling, never above it
        assert_eq!(b.delay(3, 0), Duration::ZERO);
        for r in [1, 7, 999_999, u64::MAX] {
            assert!(b.delay(3, r) <= b.ceiling(3));
            assert!(b.delay(1_000, r) <= b.cap);
        }
        // bounded by attempts and by the deadline
        assert!(b.may_retry(1, Duration::ZERO, ms(0)));
        assert!(!b.may_retry(b.max_attempts, Duration::ZERO, ms(0)));
        assert!(!b.may_retry(2, b.deadline, ms(0)));
        assert!(!b.may_retry(2, b.deadline - ms(10), ms(20)));
        assert!(b.max_total_wait() <= b.deadline);
        // what the README says
        assert_eq!(
            (b.base, b.cap, b.max_attempts, b.deadline),
            (ms(50), Duration::from_secs(4), 64, Duration::from_secs(300))
        );
    }
}
