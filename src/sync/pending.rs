//! The bank's pending files and the commit that holds them: HEAD's tree with only the bank's
//! changed paths replaced, so that other files of a bigger repository (staged or not) are
//! neither committed nor touched.

use std::collections::BTreeMap;
use std::path::Path;

use globset::GlobSet;

use super::SyncError;
use crate::git::repo::BankRepo;
use crate::ledger::Event;

/// One bank file that differs from HEAD in the working tree.
#[derive(Debug, Clone)]
pub struct Change {
    /// Its path in the repository.
    pub path: String,
    /// Its path in the bank.
    pub bank_rel: String,
    /// Its blob and mode in the working tree; `None` when it was deleted.
    pub blob: Option<(git2::Oid, i32)>,
    /// Its text in the working tree (empty when deleted).
    pub text: String,
    /// Its text in HEAD (`None` when new).
    pub before: Option<String>,
}

/// The bank's `[lint] exclude` globs (files they match are not lessons).
pub fn exclude(repo: &BankRepo) -> GlobSet {
    crate::config::Config::load(&repo.bank)
        .ok()
        .and_then(|c| crate::bank::exclude_set(&c).ok())
        .unwrap_or_else(GlobSet::empty)
}

/// Whether a path relative to the bank is one `lesson sync` commits: lessons, `_log/`
/// ledgers, `_index.md`, `_archive/`, `lesson.toml`, `templates/`, and the bank's
/// `.gitattributes`/`.gitignore`. Never `.lesson/` (the local cache and the lock), nor a temp
/// file a killed writer left.
pub fn is_bank_file(rel: &str, exclude: &GlobSet) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rel.starts_with(".lesson/") || name.starts_with(crate::edit::TEMP_PREFIX) {
        return false;
    }
    matches!(
        rel,
        "lesson.toml" | "_index.md" | ".gitattributes" | ".gitignore"
    ) || (rel.starts_with("_log/") && rel.ends_with(".jsonl"))
        || rel.starts_with("_archive/")
        || rel.starts_with("templates/")
        || crate::walk::is_lesson_path(rel, exclude)
}

/// Whether `text` has a line that starts a git conflict marker (`<<<<<<<` or `>>>>>>>`,
/// followed by the end of the line or a space): the check of the P015 `merge-conflict` rule.
pub fn has_conflict_marker(text: &[u8]) -> bool {
    text.split(|&b| b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (line.starts_with(b"<<<<<<<") || line.starts_with(b">>>>>>>"))
            && matches!(line.get(7), None | Some(b' '))
    })
}

fn blob_of<'r>(tree: Option<&git2::Tree<'r>>, path: &str) -> Option<(git2::Oid, i32)> {
    let entry = tree?.get_path(Path::new(path)).ok()?;
    Some((entry.id(), entry.filemode()))
}

/// The bank files whose working-tree state differs from HEAD's, in path order. Their blobs are
/// written to the object database (invisible until a commit names them).
pub fn changes(
    repo: &BankRepo,
    head: Option<&git2::Commit<'_>>,
    exclude: &GlobSet,
) -> Result<Vec<Change>, SyncError> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .include_unmodified(false)
        .exclude_submodules(true)
        .renames_head_to_index(false)
        .renames_index_to_workdir(false);
    if !repo.prefix.is_empty() {
        opts.pathspec(&repo.prefix);
    }
    let statuses = repo.repo.statuses(Some(&mut opts))?;
    let head_tree = head.map(|c| c.tree()).transpose()?;
    let mut found = BTreeMap::new();
    for entry in statuses.iter() {
        let Ok(path) = entry.path() else { continue };
        let Some(rel) = repo.bank_path(path) else {
            continue;
        };
        if !is_bank_file(rel, exclude) || entry.status().is_ignored() {
            continue;
        }
        let file = repo.workdir.join(path);
        let before = blob_of(head_tree.as_ref(), path);
        let (blob, text) = match std::fs::symlink_metadata(&file) {
            Ok(meta) if meta.is_file() => {
                let bytes = std::fs::read(&file).map_err(super::io_error(&file))?;
                let mode = if is_executable(&meta) {
                    0o100755
                } else {
                    0o100644
                };
                let id = repo.repo.blob(&bytes)?;
                (
                    Some((id, mode)),
                    String::from_utf8_lossy(&bytes).into_owned(),
                )
            }
            // a symlink or a directory where a file was: not the bank's to commit
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, String::new()),
            Err(e) => return Err(super::io_error(&file)(e)),
        };
        if blob == before {
            // staged, then changed back: nothing to commit
            continue;
        }
        if blob.is_some() && has_conflict_marker(text.as_bytes()) {
            return Err(SyncError::ConflictMarker(path.to_string()));
        }
        let before = match before {
            Some((id, _)) => {
                Some(String::from_utf8_lossy(repo.repo.find_blob(id)?.content()).into_owned())
            }
            None => None,
        };
        found.insert(
            path.to_string(),
            Change {
                path: path.to_string(),
                bank_rel: rel.to_string(),
                blob,
                text,
                before,
            },
        );
    }
    Ok(found.into_values().collect())
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    false
}

/// HEAD's tree (the empty tree on an unborn branch) with `changes` applied.
pub fn tree_with<'r>(
    repo: &'r BankRepo,
    head: Option<&git2::Commit<'_>>,
    changes: &[(String, Option<(git2::Oid, i32)>)],
) -> Result<git2::Tree<'r>, SyncError> {
    let base = match head {
        Some(c) => repo.repo.find_tree(c.tree_id())?,
        None => {
            let empty = repo.repo.treebuilder(None)?.write()?;
            repo.repo.find_tree(empty)?
        }
    };
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, blob) in changes {
        match blob {
            Some((id, mode)) => {
                let mode = if *mode == 0o100755 {
                    git2::FileMode::BlobExecutable
                } else {
                    git2::FileMode::Blob
                };
                update.upsert(path.as_str(), *id, mode);
            }
            None => {
                update.remove(path.as_str());
            }
        }
    }
    let id = update.create_updated(&repo.repo, &base)?;
    Ok(repo.repo.find_tree(id)?)
}

/// The author and committer from the repository's configuration.
pub fn signature(repo: &BankRepo) -> Result<git2::Signature<'static>, SyncError> {
    repo.repo
        .signature()
        .map_err(|e| SyncError::NoIdentity(e.message().to_string()))
}

/// The commit (an object only: no ref moves) of `changes` on top of HEAD.
pub fn commit(
    repo: &BankRepo,
    head: Option<&git2::Commit<'_>>,
    changes: &[Change],
    message: &str,
) -> Result<git2::Oid, SyncError> {
    let sig = signature(repo)?;
    let list: Vec<(String, Option<(git2::Oid, i32)>)> =
        changes.iter().map(|c| (c.path.clone(), c.blob)).collect();
    let tree = tree_with(repo, head, &list)?;
    let parents: Vec<&git2::Commit<'_>> = head.into_iter().collect();
    Ok(repo
        .repo
        .commit(None, &sig, &sig, message, &tree, &parents)?)
}

/// The generated message: what the ledger lines added and the files added say
/// (`record 3, add 1: slug-a, slug-b`).
pub fn message(_repo: &BankRepo, _head: Option<&git2::Commit<'_>>, changes: &[Change]) -> String {
    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut slugs: Vec<String> = Vec::new();
    let note = |slug: &str, slugs: &mut Vec<String>| {
        if !slugs.iter().any(|s| s == slug) {
            slugs.push(slug.to_string());
        }
    };
    let mut other = 0;
    for c in changes {
        let rel = c.bank_rel.as_str();
        if let Some(slug) = rel
            .strip_prefix("_log/")
            .and_then(|r| r.strip_suffix(".jsonl"))
        {
            let old: std::collections::HashSet<&str> =
                c.before.as_deref().unwrap_or("").lines().collect();
            for line in c.text.lines().filter(|l| !old.contains(l)) {
                let kind = match Event::parse(line).map(|e| e.kind.name().to_string()) {
                    Ok(k) if k == "shown" => "search",
                    Ok(k) if k == "outcome" => "record",
                    Ok(k) if k == "created" || k == "imported" => "add",
                    Ok(k) if k == "merged" => "merge",
                    Ok(k) if k == "superseded" => "supersede",
                    Ok(k) if k == "archived" => "archive",
                    Ok(k) if k == "evidence" => "evidence",
                    _ => "event",
                };
                *kinds.entry(kind).or_default() += 1;
            }
            if crate::layout::is_ledger_path(rel) {
                note(slug, &mut slugs);
            }
        } else if let Some(stem) = rel.strip_suffix(".md").filter(|_| rel != "_index.md") {
            let slug = stem.rsplit('/').next().unwrap_or(stem);
            note(slug, &mut slugs);
        } else if rel != "_index.md" {
            other += 1;
        }
    }
    let mut parts: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if parts.is_empty() {
        let n = changes.iter().filter(|c| c.bank_rel != "_index.md").count();
        parts.push(format!("edit {n}"));
    } else if other > 0 {
        parts.push(format!("edit {other}"));
    }
    let mut message = parts.join(", ");
    if !slugs.is_empty() {
        let shown: Vec<&str> = slugs.iter().take(12).map(String::as_str).collect();
        message.push_str(": ");
        message.push_str(&shown.join(", "));
        if slugs.len() > shown.len() {
            message.push_str(&format!(" and {} more", slugs.len() - shown.len()));
        }
    }
    message.push('\n');
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bank_files_are_the_banks_own() {
        let none = GlobSet::empty();
        for yes in [
            "a.md",
            "sub/b.md",
            "_log/a.jsonl",
            "_index.md",
            "_archive/a.md",
            "lesson.toml",
            "templates/lesson.md.j2",
            ".gitattributes",
            ".gitignore",
        ] {
            assert!(is_bank_file(yes, &none), "{yes}");
        }
        for no in [
            ".lesson/lock",
            ".lesson/index/seg",
            ".lesson-tmp-abc",
            "_log/.lesson-tmp-x",
            "notes.txt",
            ".hidden/a.md",
        ] {
            assert!(!is_bank_file(no, &none), "{no}");
        }
    }

    #[test]
    fn conflict_markers_are_whole_markers_at_a_line_start() {
        assert!(has_conflict_marker(b"a\n<<<<<<< HEAD\nb\n"));
        assert!(has_conflict_marker(b">>>>>>>\r\n"));
        assert!(!has_conflict_marker(b"Title\n=======\n"));
        assert!(!has_conflict_marker(b"<<<<<<<< eight\n x <<<<<<< y\n"));
    }
}
