//! Moving the repository to the synced commit, under the bank's lock, in an order that a kill
//! at any point leaves recoverable:
//!
//! 0. the commit and its trees are in the object database already (invisible: no ref names
//!    them yet);
//! 1. `.lesson/sync-merge` records `HEAD-before target pending` (atomic write; `pending` the
//!    commit of the pending files): the note the next sync reads to finish the job;
//! 2. each working-tree file that changes is written atomically (temp + rename), new
//!    directories created, removed files removed;
//! 3. the index entries of those paths are set (`git update-index`, which writes the index
//!    through `index.lock` and a rename: all or nothing);
//! 4. the branch moves to the commit, compare-and-swap from HEAD-before (a ref never half
//!    written);
//! 5. the note is removed.
//!
//! Killed before 4, HEAD has not moved: `git status` shows the bank files written so far as
//! modified, and the next `lesson sync` sees the note and finishes (a file is written again
//! only when it still holds HEAD's or the pending version, or the target's already; one a
//! `lesson record` changed since is merged by the bank's rules). Killed after 4, the
//! repository is at the commit, clean; the next sync drops the note.

use std::path::Path;

use super::pending::is_bank_file;
use super::resolve::{derive, read_bank, Files};
use super::{SyncError, SyncOptions};
use crate::edit::BankLock;
use crate::git::repo::BankRepo;

/// The note of a sync that has not finished moving the repository (in `.lesson/`).
pub const NOTE: &str = "sync-merge";

/// Finish a sync killed while it moved the repository (see the module docs); whether there
/// was one.
pub fn resume(repo: &BankRepo, branch: &str, options: &SyncOptions) -> Result<bool, SyncError> {
    let note = crate::layout::state_path(&repo.bank, NOTE);
    if !note.exists() {
        return Ok(false);
    }
    let mut lock = BankLock::open(&repo.bank)?;
    lock.with(|| -> Result<bool, SyncError> {
        let text = std::fs::read_to_string(&note).unwrap_or_default();
        let mut words = text.split_whitespace();
        let before = words.next().and_then(|w| git2::Oid::from_str(w).ok());
        let target = words.next().and_then(|w| git2::Oid::from_str(w).ok());
        // a note of an older `lesson sync` has no third word: the target's first parent then
        let pending = words
            .next()
            .and_then(|w| git2::Oid::from_str(w).ok())
            .filter(|p| !p.is_zero());
        let head = super::remote::head_commit(repo)?.map(|c| c.id());
        let done = match (before, target) {
            (Some(before), Some(target)) if repo.repo.find_commit(target).is_ok() => {
                let before = (!before.is_zero()).then_some(before);
                if head == Some(target) {
                    true
                } else if head == before {
                    apply_locked(repo, branch, before, target, pending, options)?;
                    true
                } else {
                    false
                }
            }
            _ => false,
        };
        let _ = std::fs::remove_file(&note);
        Ok(done)
    })?
}

/// Move the repository from HEAD `before` to the commit `target` (see the module docs),
/// holding the bank's lock. `pending` is the commit of the pending files the target was
/// merged from (HEAD when there were none): a working-tree file that still holds its version
/// is not a change made beside the sync.
pub fn apply(
    repo: &BankRepo,
    branch: &str,
    before: Option<git2::Oid>,
    target: git2::Oid,
    pending: git2::Oid,
    options: &SyncOptions,
) -> Result<(), SyncError> {
    let mut lock = BankLock::open(&repo.bank)?;
    lock.with(|| apply_locked(repo, branch, before, target, Some(pending), options))?
}

/// One path's move.
struct Step {
    path: String,
    /// What the working tree gets (`None`: removed).
    write: Option<Vec<u8>>,
    /// Whether the working tree holds it already.
    written: bool,
    /// The index entry (the target's blob and mode; `None`: removed).
    index: Option<(git2::Oid, u32)>,
}

fn apply_locked(
    repo: &BankRepo,
    branch: &str,
    before: Option<git2::Oid>,
    target: git2::Oid,
    pending: Option<git2::Oid>,
    options: &SyncOptions,
) -> Result<(), SyncError> {
    let git = &repo.repo;
    let head = super::remote::head_commit(repo)?.map(|c| c.id());
    if head != before {
        return Err(SyncError::Moved);
    }
    let commit = git.find_commit(target)?;
    let target_tree = commit.tree()?;
    let empty = git.find_tree(git.treebuilder(None)?.write()?)?;
    let head_tree = match before {
        Some(id) => git.find_commit(id)?.tree()?,
        None => empty.clone(),
    };
    // the commit of pending files this target was merged from (a merge of several branches
    // is a chain of merges: only the first holds it as a parent)
    let pending_tree = match pending.or_else(|| commit.parent_ids().next()) {
        Some(p) => git.find_commit(p)?.tree()?,
        None => empty,
    };
    let exclude = super::pending::exclude(repo);
    let blob = |tree: &git2::Tree<'_>, path: &str| -> Option<(git2::Oid, u32)> {
        tree.get_path(Path::new(path))
            .ok()
            .map(|e| (e.id(), e.filemode() as u32))
    };
    let diff = git.diff_tree_to_tree(Some(&head_tree), Some(&target_tree), None)?;
    let mut paths: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    paths.sort();
    paths.dedup();
    let mut steps = Vec::new();
    // bank files a `lesson record` changed since the sync read them: merged with the target
    let mut moved: Files = Files::new();
    for path in paths {
        let want = blob(&target_tree, &path);
        let file = repo.workdir.join(&path);
        let current = match std::fs::symlink_metadata(&file) {
            Ok(m) if m.is_file() => Some(std::fs::read(&file).map_err(super::io_error(&file))?),
            Ok(_) => return Err(SyncError::LocalChange(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(super::io_error(&file)(e)),
        };
        let current_id = match &current {
            Some(b) => Some(git2::Oid::hash_object(git2::ObjectType::Blob, b)?),
            None => None,
        };
        let id = |v: Option<(git2::Oid, u32)>| v.map(|(id, _)| id);
        let wanted = match want {
            Some((id, _)) => Some(git.find_blob(id)?.content().to_vec()),
            None => None,
        };
        let pending = blob(&pending_tree, &path);
        if current_id == id(want) {
            steps.push(Step {
                path,
                write: wanted,
                written: true,
                index: want,
            });
            continue;
        }
        if current_id == id(blob(&head_tree, &path)) || current_id == id(pending) {
            steps.push(Step {
                path,
                write: wanted,
                written: false,
                index: want,
            });
            continue;
        }
        // changed since: by a writer beside the sync, or by hand
        let rel = repo.bank_path(&path).map(str::to_string);
        let Some(rel) = rel.filter(|r| is_bank_file(r, &exclude)) else {
            return Err(SyncError::LocalChange(path));
        };
        let text = |b: Option<Vec<u8>>| String::from_utf8(b.unwrap_or_default()).ok();
        let base = match pending {
            Some((id, _)) => Some(git.find_blob(id)?.content().to_vec()),
            None => None,
        };
        let (Some(base), Some(theirs), Some(local)) =
            (text(base), text(wanted.clone()), text(current))
        else {
            return Err(SyncError::LocalChange(path));
        };
        let merged = if rel.starts_with("_log/") {
            crate::merge::ledger(&base, &theirs, &local)
        } else if rel == crate::layout::INDEX_FILE {
            theirs
        } else if rel.ends_with(".md") {
            crate::merge::lesson(&base, &theirs, &local)
                .map_err(|_| SyncError::LocalChange(path.clone()))?
        } else {
            return Err(SyncError::LocalChange(path));
        };
        moved.insert(rel, merged.clone().into_bytes());
        steps.push(Step {
            path,
            write: Some(merged.into_bytes()),
            written: false,
            index: want,
        });
    }
    if !moved.is_empty() {
        // the working tree keeps the local change on top of the target: counts and the index
        // re-derived from the files as they will be
        let mut files = read_bank(repo, &target_tree)?;
        let before_files = files.clone();
        let slugs = moved
            .keys()
            .filter_map(|r| r.strip_prefix("_log/")?.strip_suffix(".jsonl"))
            .map(str::to_string)
            .collect();
        files.extend(moved);
        derive(repo, &mut files, &slugs, options.stamp.at)?;
        for (rel, bytes) in &files {
            if before_files.get(rel) == Some(bytes) {
                continue;
            }
            let path = repo.repo_path(rel);
            match steps.iter_mut().find(|s| s.path == path) {
                Some(step) => {
                    step.write = Some(bytes.clone());
                    step.written = false;
                }
                None => steps.push(Step {
                    index: blob(&target_tree, &path),
                    path,
                    write: Some(bytes.clone()),
                    written: false,
                }),
            }
        }
    }
    // 1. the note
    let note = crate::layout::state_path(&repo.bank, NOTE);
    let line = format!(
        "{} {target} {}\n",
        before.unwrap_or(git2::Oid::ZERO_SHA1),
        pending.unwrap_or(git2::Oid::ZERO_SHA1)
    );
    crate::edit::write_atomic(&repo.bank, &note, line.as_bytes())?;
    // 2. the working tree
    for step in steps.iter().filter(|s| !s.written) {
        let file = repo.workdir.join(&step.path);
        match &step.write {
            Some(bytes) => {
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir).map_err(super::io_error(dir))?;
                }
                crate::edit::write_atomic(&repo.bank, &file, bytes)?;
            }
            None => match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(super::io_error(&file)(e)),
            },
        }
    }
    // 3. the index, by the system git (`update-index`): libgit2 rewriting the whole index
    // could lose the racy-git smudge of an unrelated entry modified in the same second, and
    // hide that modification from `git status`
    let mut restat: Vec<String> = Vec::new();
    let mut cacheinfo: Vec<String> = Vec::new();
    for step in &steps {
        match step.index {
            Some((id, mode)) => {
                let on_disk = step
                    .write
                    .as_deref()
                    .map(|b| git2::Oid::hash_object(git2::ObjectType::Blob, b))
                    .transpose()?;
                if on_disk == Some(id) {
                    // stat data from the file: `git status` need not re-read it
                    restat.push(step.path.clone());
                } else {
                    cacheinfo.push(format!("{mode:o},{id},{}", step.path));
                }
            }
            // a path the target does not have: its file is gone, `--remove` drops the entry
            None => restat.push(step.path.clone()),
        }
    }
    for chunk in restat.chunks(200) {
        let mut args = vec!["update-index", "--add", "--remove", "--"];
        args.extend(chunk.iter().map(String::as_str));
        repo.git(&args)?;
    }
    for chunk in cacheinfo.chunks(200) {
        let mut args = vec!["update-index", "--add"];
        for info in chunk {
            args.push("--cacheinfo");
            args.push(info);
        }
        repo.git(&args)?;
    }
    // 4. the branch
    let name = format!("refs/heads/{branch}");
    let message = format!(
        "lesson sync: {}",
        commit.summary().ok().flatten().unwrap_or("sync")
    );
    match before {
        Some(before) => {
            git.reference_matching(&name, target, true, before, &message)?;
        }
        None => {
            git.reference(&name, target, false, &message)?;
        }
    }
    // 5. done
    let _ = std::fs::remove_file(&note);
    Ok(())
}
