//! `lesson sync`: commit the bank's pending files, fetch, merge by the bank's rules, re-derive,
//! push; retry on a non-fast-forward race.
//!
//! The work inside the repository is libgit2's (`git2`): status, blobs, trees, commits, the
//! index and refs. The network is the system `git`'s ([`crate::git::repo::BankRepo::git`]), so
//! credential helpers, ssh agents, proxies and signing work as the user's git does.
//!
//! One round ([`sync`]):
//!
//! 1. **pending** (`pending.rs`): the bank's changed files (lessons, `_log/`, `_index.md`,
//!    `_archive/`, `lesson.toml`, `templates/`, the bank's `.gitattributes`/`.gitignore`;
//!    never `.lesson/` nor anything outside the bank) become a commit *object* whose tree is
//!    HEAD's with only those paths replaced. Nothing moves yet: HEAD, the index and the working
//!    tree are as they were.
//! 2. **fetch** the remote branch (system git).
//! 3. **merge** (`resolve.rs`) that commit with the fetched one, in memory: libgit2 merges the
//!    trees, each conflicted bank path is resolved by the bank's rules ([`crate::merge`]), the
//!    counts of every lesson whose ledger changed are set from the merged ledger and `_index.md`
//!    is updated for the changed rows; only the files that differ from ours are read. A conflict in human-written text stops here, with nothing changed.
//! 4. **push** that commit by its hash (system git, never forced); a non-fast-forward
//!    rejection goes back to 1 with nothing changed locally, as [`BACKOFF`] says (exponential
//!    backoff with full jitter, bounded in attempts and time). Each attempt merges the same
//!    local changes with the newest remote commit, so the remote's history stays a line of
//!    merges of one side each.
//! 5. **apply** (`apply.rs`), under the bank's lock: working-tree files, then the index, then
//!    HEAD (see the order and why in `apply`).
//!
//! **A fleet: one branch per runtime.** One branch takes one push at a time, so a large fleet
//! gives each runtime a branch only it writes and merges those branches into the main one:
//!
//! - A runtime (`--branch lesson/RUNTIME --from main`, [`SyncOptions::from`]): step 2 fetches
//!   its own branch and the main branch in one `git fetch`; step 3 merges ours with its own
//!   branch (normally contained already), then with the main branch; step 4 pushes to its own
//!   branch, a fast-forward since nobody else writes there (a rejection still goes round the
//!   same retry loop).
//! - A merger (`--merge-branches [PATTERN]`, [`SyncOptions::merge_branches`]): step 2 lists
//!   the remote's branches matching the glob (`git ls-remote --heads`) and fetches them with
//!   the target branch in one `git fetch`; step 3 merges the target branch as a sync does,
//!   then each matching branch the result does not contain yet, in name order, each merge on
//!   top of the one before; step 4 pushes the target branch. A real conflict in any one branch
//!   stops the round with nothing changed, the conflicts naming that branch
//!   ([`ConflictFile::branch`]).
//!
//! Runtimes and the merger merge each other's commits back and forth, so merges are
//! criss-cross: two merge bases, of which libgit2 takes one, and the sides hold the same
//! ledger lines and evidence items in different orders. No outcome is counted twice: ledgers
//! merge as a union of lines (a line on both sides kept once) and lessons by
//! [`crate::merge::lesson`], which takes evidence as a set, also where libgit2's line merge
//! was clean (in a merge with several bases only: with one, a single-branch sync's merge is as
//! before), and counts are re-derived from the ledgers' distinct outcomes. A lesson added on
//! both sides keeps the main branch's version in both directions (a runtime keeps the branch
//! it receives, a merger its own), so a runtime and the merger admitting the same duplicate
//! at once write the same lesson.

mod apply;
mod pending;
mod remote;
mod resolve;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::curate::Stamp;
use crate::git::repo::{BankRepo, GitError};

pub use pending::has_conflict_marker;

pub use remote::Backoff;

/// How a sync retries when another runtime pushed first: exponential backoff with full jitter,
/// from 50 ms doubling to 4 s, at most 64 attempts and none started later than 5 minutes after
/// the first (the attempts' waits add up to about 3.8 minutes at most). A runtime that gives
/// up keeps its commits; the next sync publishes them.
pub const BACKOFF: Backoff = Backoff {
    base: std::time::Duration::from_millis(50),
    cap: std::time::Duration::from_secs(4),
    max_attempts: 64,
    deadline: std::time::Duration::from_secs(300),
};

/// What `lesson sync` is asked to do.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    /// The remote (default: the branch's upstream remote, else `origin`, else the only one).
    pub remote: Option<String>,
    /// The remote branch (default: the branch's upstream branch, else the current branch).
    pub branch: Option<String>,
    /// The message of the commit of pending files (default: generated from what changed).
    pub message: Option<String>,
    /// Say what would happen; change nothing (the fetch only updates what `git fetch` does).
    pub dry_run: bool,
    /// A runtime on a branch of its own: the remote branch it receives too (`main`), merged
    /// after `branch`; its version of a lesson added on both sides stays.
    pub from: Option<String>,
    /// A merger: the glob (`lesson/*`) naming the remote branches to merge into `branch`, one
    /// after another; `branch`'s version of a lesson added on both sides stays.
    pub merge_branches: Option<String>,
    /// Who and when, for the ledger events an add/add merge writes; `at` is also "now" for the
    /// regenerated `_index.md`.
    pub stamp: Stamp,
}

/// A file the merge could not resolve by the bank's rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConflictFile {
    /// The path, relative to the repository's work tree.
    pub path: String,
    /// What conflicts.
    pub what: String,
    /// The remote branch whose merge conflicts.
    pub branch: String,
}

/// A remote branch a sync merged (or found merged already) besides its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BranchTip {
    /// The branch's name on the remote.
    pub branch: String,
    /// The commit it pointed at.
    pub commit: String,
    /// How many of its commits the merge brought (0 when it was merged already).
    pub fetched: usize,
}

/// What a sync did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SyncReport {
    /// The remote and branch synced with.
    pub remote: String,
    /// The remote branch.
    pub branch: String,
    /// Whether nothing was written (a dry run).
    pub dry_run: bool,
    /// Commits made (or that would be): hashes, the pending-files commit and merge commits.
    pub commits: Vec<String>,
    /// The message of the pending-files commit, when there was one.
    pub message: Option<String>,
    /// The bank files committed from the working tree (paths relative to the work tree).
    pub files: Vec<String>,
    /// How many commits of the remote branch (`branch`) the fetch brought that were not in the
    /// local branch (those of the other branches merged: [`BranchTip::fetched`]).
    pub fetched: usize,
    /// Whether a merge (or a fast-forward) took the remote's commits in.
    pub merged: bool,
    /// Lessons added on both sides under one slug: the remote's version stayed, the local one
    /// was admitted as its duplicate.
    pub add_add: Vec<String>,
    /// How many times the push was rejected because the remote moved, and the round redone.
    pub retries: usize,
    /// Whether the push happened (or would happen).
    pub pushed: bool,
    /// Whether the remote branch did not exist (the first sync of an empty remote).
    pub new_branch: bool,
    /// Files that hold a real conflict: when not empty, nothing was changed and the sync
    /// stopped.
    pub conflicts: Vec<ConflictFile>,
    /// Whether an interrupted earlier sync was completed first.
    pub resumed: bool,
    /// The branch a runtime receives besides its own (`--from`).
    pub from: Option<String>,
    /// The glob of the branches a merger merges (`--merge-branches`).
    pub pattern: Option<String>,
    /// The branches (`from`, or those matching `pattern`) merged, in the order merged.
    pub merged_branches: Vec<BranchTip>,
    /// The branches (`from`, or those matching `pattern`) whose commits were merged already.
    pub contained_branches: Vec<BranchTip>,
}

impl SyncReport {
    /// The report as pretty JSON (`--format json`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes")
    }
}

/// Why a sync could not run or finish (a conflict is not an error: see
/// [`SyncReport::conflicts`]).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Finding or using the repository failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// libgit2 failed.
    #[error("git: {0}")]
    Lib(#[from] git2::Error),
    /// No remote to sync with.
    #[error("{0}")]
    NoRemote(String),
    /// HEAD names no branch.
    #[error("HEAD is detached (not on a branch): check out the branch to sync (`git switch BRANCH`), then run `lesson sync` again")]
    Detached,
    /// The branch has no commit and nothing to commit.
    #[error("{0}")]
    Unborn(String),
    /// A shallow clone has no merge base to merge with.
    #[error("the repository is a shallow clone: a merge needs the history; run `git fetch --unshallow`, then `lesson sync` again")]
    Shallow,
    /// No author identity is configured.
    #[error("no git identity to commit with ({0}): set one with `git config user.name \"Your Name\"` and `git config user.email you@example.com`")]
    NoIdentity(String),
    /// A file to commit holds a conflict marker.
    #[error("{0}: holds a merge-conflict marker (a line starting with `<<<<<<<` or `>>>>>>>`); finish that merge (`lesson lint` shows where: P015), then run `lesson sync` again")]
    ConflictMarker(String),
    /// The remote changed files outside the bank.
    #[error("the remote branch changed files outside the bank ({0}): `lesson sync` merges bank files only; run `git pull`, then `lesson sync` again")]
    OutsideBank(String),
    /// A local change outside the bank's rules would be overwritten.
    #[error("{0}: changed locally and by the remote; commit or stash it, run `git pull`, then `lesson sync` again")]
    LocalChange(String),
    /// The histories share no commit.
    #[error("the local branch and {0} share no history: run `git pull --allow-unrelated-histories`, then `lesson sync` again")]
    Unrelated(String),
    /// `--from` names a branch the remote does not have.
    #[error("{remote} has no branch `{branch}` to receive: check the name (`git ls-remote --heads {remote}`)")]
    NoBranch {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
    },
    /// The `--merge-branches` pattern is not a glob.
    #[error("--merge-branches {0}")]
    Pattern(String),
    /// The push kept being rejected.
    #[error("the push to {remote} {branch} was rejected {attempts} times in {elapsed} s because other runtimes kept pushing first; the local commits are kept (nothing is lost): run `lesson sync` again")]
    Exhausted {
        /// The remote.
        remote: String,
        /// Its branch.
        branch: String,
        /// How many attempts were made.
        attempts: usize,
        /// Seconds since the first attempt.
        elapsed: u64,
    },
    /// HEAD moved while the sync ran.
    #[error("HEAD moved while `lesson sync` ran (a commit by hand?); nothing was changed: run `lesson sync` again")]
    Moved,
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] crate::edit::EditError),
    /// Re-deriving counts, the index or admitting a duplicate failed.
    #[error("{0}")]
    Derive(String),
    /// An I/O error.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SyncError + '_ {
    move |source| SyncError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Sync the bank at `bank` with its remote (see the module docs). A real conflict is reported
/// in [`SyncReport::conflicts`] with nothing changed.
pub fn sync(bank: &Path, options: &SyncOptions) -> Result<SyncReport, SyncError> {
    sync_with(bank, options, &crate::progress::Silent)
}

/// [`sync`], telling `progress` its phases (`committing`, `fetching`, `merging` (once per
/// branch merged), `pushing`, `applying`; again for each round after a rejected push).
pub fn sync_with(
    bank: &Path,
    options: &SyncOptions,
    progress: &dyn crate::progress::Progress,
) -> Result<SyncReport, SyncError> {
    let repo = BankRepo::open(bank)?;
    if repo.repo.is_shallow() {
        return Err(SyncError::Shallow);
    }
    let branch = remote::current_branch(&repo)?;
    let target = remote::target(&repo, &branch, options)?;
    let mut report = SyncReport {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        dry_run: options.dry_run,
        from: options.from.clone(),
        pattern: options.merge_branches.clone(),
        ..SyncReport::default()
    };
    if options.dry_run {
        // every object a dry run writes (blobs and trees of the pending files, the merge's)
        // goes to memory: nothing reaches `.git/objects`
        repo.repo.odb()?.add_new_mempack_backend(1000)?;
    } else {
        report.resumed = apply::resume(&repo, &branch, options)?;
    }
    let mut attempt = 0;
    let started = std::time::Instant::now();
    // the pending files are read once: an attempt after a rejected push commits the same ones
    // (a file a `lesson record` changes meanwhile is merged when the sync applies, and
    // published by the next sync)
    let mut pending = None;
    loop {
        attempt += 1;
        let round = round(
            &repo,
            &branch,
            &target,
            options,
            &mut pending,
            &mut report,
            progress,
        )?;
        if !report.conflicts.is_empty() || options.dry_run {
            return Ok(report);
        }
        match round {
            Pushed::Yes | Pushed::Nothing => return Ok(report),
            Pushed::Rejected => {
                let wait = BACKOFF.delay(attempt, remote::random());
                if !BACKOFF.may_retry(attempt, started.elapsed(), wait) {
                    return Err(SyncError::Exhausted {
                        remote: target.remote.clone(),
                        branch: target.branch.clone(),
                        attempts: attempt,
                        elapsed: started.elapsed().as_secs(),
                    });
                }
                report.retries += 1;
                std::thread::sleep(wait);
            }
        }
    }
}

enum Pushed {
    Yes,
    Nothing,
    Rejected,
}

/// One round: pending commit, fetch, merge, apply, push.
fn round(
    repo: &BankRepo,
    branch: &str,
    target: &remote::Target,
    options: &SyncOptions,
    pending: &mut Option<Vec<pending::Change>>,
    report: &mut SyncReport,
    progress: &dyn crate::progress::Progress,
) -> Result<Pushed, SyncError> {
    use crate::progress::phase;
    // what an earlier, rejected attempt made is not what this one makes
    report.commits.clear();
    report.merged = false;
    report.fetched = 0;
    report.add_add.clear();
    report.merged_branches.clear();
    report.contained_branches.clear();
    let head = remote::head_commit(repo)?;
    let changes = match pending {
        Some(changes) => changes,
        None => {
            let exclude = pending::exclude(repo);
            pending.insert(pending::changes(repo, head.as_ref(), &exclude)?)
        }
    };
    let ours = if changes.is_empty() {
        head.as_ref().map(|c| c.id())
    } else {
        let message = options
            .message
            .clone()
            .unwrap_or_else(|| pending::message(repo, head.as_ref(), changes));
        let id = phase(progress, "committing", || {
            pending::commit(repo, head.as_ref(), changes, &message)
        })?;
        report.message.get_or_insert(message);
        for c in changes.iter() {
            if !report.files.contains(&c.path) {
                report.files.push(c.path.clone());
            }
        }
        report.commits.push(id.to_string());
        Some(id)
    };
    // the target branch, and the branches merged after it: a runtime's `--from`, a merger's
    // branches matching `--merge-branches` (listed, then fetched with the target in one fetch)
    let tips = phase(progress, "fetching", || {
        let mut others: Vec<String> = match (&options.from, &options.merge_branches) {
            (Some(from), _) => vec![from.clone()],
            (None, Some(pattern)) => remote::matching_branches(repo, &target.remote, pattern)?,
            (None, None) => Vec::new(),
        };
        others.retain(|b| *b != target.branch);
        let mut wanted = vec![target.branch.clone()];
        wanted.extend(others.iter().cloned());
        let tips = remote::fetch_branches(repo, &target.remote, &wanted)?;
        Ok::<_, SyncError>((others, tips))
    })?;
    let (others, tips) = tips;
    if let Some(from) = options.from.as_ref().filter(|f| others.contains(f)) {
        if !tips.contains_key(from) {
            return Err(SyncError::NoBranch {
                remote: target.remote.clone(),
                branch: from.clone(),
            });
        }
    }
    let theirs = tips.get(&target.branch).copied();
    report.new_branch = theirs.is_none();
    let Some(ours) = ours else {
        // an unborn branch with nothing to commit
        return match theirs {
            None => Err(SyncError::Unborn(format!(
                "the branch `{branch}` has no commit yet and the bank has nothing to commit; add a lesson (`lesson new`) or commit by hand, then `lesson sync`"
            ))),
            Some(_) => Err(SyncError::Unborn(format!(
                "the branch `{branch}` has no commit yet but {} {} has: run `git pull {} {}` first, then `lesson sync`",
                target.remote, target.branch, target.remote, target.branch
            ))),
        };
    };
    // one merge into the result so far: the merge commit (or the fast-forward), `None` on a
    // real conflict (in `report.conflicts`)
    let merge = |ours: git2::Oid,
                 theirs: git2::Oid,
                 branch: &str,
                 keep_ours: bool,
                 report: &mut SyncReport|
     -> Result<Option<git2::Oid>, SyncError> {
        let merged = phase(progress, "merging", || {
            resolve::merge(repo, ours, theirs, branch, keep_ours, options, report)
        })?;
        match merged {
            Some(id) if report.conflicts.is_empty() => {
                if id != ours {
                    report.merged = true;
                    // a new merge commit (not a fast-forward to theirs)
                    if id != theirs {
                        report.commits.push(id.to_string());
                    }
                }
                Ok(Some(id))
            }
            _ => Ok(None),
        }
    };
    let mut final_commit = ours;
    if let Some(theirs) = theirs {
        if head.is_none() {
            return Err(SyncError::Unborn(format!(
                "the branch `{branch}` has no commit yet but {} {} has: run `git pull {} {}` first, then `lesson sync`",
                target.remote, target.branch, target.remote, target.branch
            )));
        }
        match merge(ours, theirs, &target.branch, false, report)? {
            Some(id) => final_commit = id,
            None => return Ok(Pushed::Nothing),
        }
    }
    // then each other branch, in name order: a runtime keeps the main branch's version of a
    // lesson added on both sides (as it keeps the remote's), a merger keeps its own (the main
    // branch's), so that both directions of a criss-cross settle an add/add alike
    let keep_ours = options.merge_branches.is_some();
    for branch in &others {
        let Some(&tip) = tips.get(branch) else {
            continue;
        };
        let mut seen = BranchTip {
            branch: branch.clone(),
            commit: tip.to_string(),
            fetched: 0,
        };
        if final_commit == tip || repo.repo.graph_descendant_of(final_commit, tip)? {
            report.contained_branches.push(seen);
            continue;
        }
        // `fetched` counts the target branch's commits; each other branch's are its own
        let fetched = report.fetched;
        let merged = merge(final_commit, tip, branch, keep_ours, report)?;
        seen.fetched = std::mem::replace(&mut report.fetched, fetched) - fetched;
        match merged {
            Some(id) => final_commit = id,
            None => return Ok(Pushed::Nothing),
        }
        report.merged_branches.push(seen);
    }
    let head_id = head.as_ref().map(|c| c.id());
    let ahead = match theirs {
        None => true,
        Some(t) => final_commit != t && !repo.repo.graph_descendant_of(t, final_commit)?,
    };
    if options.dry_run {
        report.pushed = ahead;
        return Ok(Pushed::Nothing);
    }
    // the push comes first, by the commit's hash: a rejected push leaves the repository
    // untouched, and the next attempt merges the same local changes with the newer remote
    // (never our own earlier merge with an older one: criss-cross merges are what reorder
    // evidence lists into conflicts)
    let pushed = if ahead {
        if !phase(progress, "pushing", || {
            remote::push(repo, target, final_commit)
        })? {
            return Ok(Pushed::Rejected);
        }
        report.pushed = true;
        Pushed::Yes
    } else {
        Pushed::Nothing
    };
    if head_id != Some(final_commit) {
        phase(progress, "applying", || {
            apply::apply(repo, branch, head_id, final_commit, ours, options)
        })?;
    }
    Ok(pushed)
}
