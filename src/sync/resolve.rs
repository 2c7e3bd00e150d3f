//! The merge, in memory: libgit2 merges the trees; each conflicted bank path, and in a
//! criss-cross each ledger or lesson both sides changed that libgit2 merged by itself, is
//! merged by the bank's rules ([`crate::merge`]); an add/add of one slug goes through the `lesson add` gate;
//! counts and `_index.md` are re-derived. Nothing outside the object database is written, so a
//! real conflict leaves the repository exactly as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use globset::GlobSet;

use super::pending::{has_conflict_marker, is_bank_file, signature};
use super::{ConflictFile, SyncError, SyncOptions, SyncReport};
use crate::git::repo::BankRepo;

/// A bank's files in a tree: path relative to the bank -> bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Merge the commit `theirs` (the tip of the remote branch `branch`) into `ours`: the commit to
/// move to (`ours` when `theirs` is in it already, `theirs` for a fast-forward, else a new
/// merge commit), or `None` with the real conflicts in `report.conflicts`. A lesson added on
/// both sides keeps theirs' version (ours' with `keep_ours`), the other admitted as its
/// duplicate. The commits it brings are added to `report.fetched`.
pub fn merge(
    repo: &BankRepo,
    ours: git2::Oid,
    theirs: git2::Oid,
    branch: &str,
    keep_ours: bool,
    options: &SyncOptions,
    report: &mut SyncReport,
) -> Result<Option<git2::Oid>, SyncError> {
    let git = &repo.repo;
    if ours == theirs || git.graph_descendant_of(ours, theirs)? {
        return Ok(Some(ours));
    }
    let base = match git.merge_base(ours, theirs) {
        Ok(b) => b,
        Err(e) if e.code() == git2::ErrorCode::NotFound => {
            return Err(SyncError::Unrelated(format!("{}/{branch}", report.remote)))
        }
        Err(e) => return Err(e.into()),
    };
    let fetched = git.graph_ahead_behind(theirs, base)?.0;
    report.fetched += fetched;
    let ours_tree = git.find_commit(ours)?.tree()?;
    let theirs_tree = git.find_commit(theirs)?.tree()?;
    if base == ours {
        // a fast-forward: the remote's commits as they are
        outside_bank(repo, &ours_tree, &theirs_tree)?;
        return Ok(Some(theirs));
    }
    let base_tree = git.find_commit(base)?.tree()?;
    let mut opts = git2::MergeOptions::new();
    opts.find_renames(true);
    let mut index = git.merge_trees(&base_tree, &ours_tree, &theirs_tree, Some(&opts))?;
    let exclude = super::pending::exclude(repo);
    // libgit2's clean merges of ledgers are not taken on trust (its `merge=union` keeps an
    // event both sides hold at different places twice), nor, in a criss-cross (runtimes'
    // branches and the main branch merging each other), its clean merges of lessons
    let criss_cross = git.merge_bases(ours, theirs)?.len() > 1;
    remerge_clean(
        repo,
        &mut index,
        [&base_tree, &ours_tree, &theirs_tree],
        &exclude,
        criss_cross,
    )?;
    let mut conflicts = Vec::new();
    let mut add_add: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
    let mut resolved: Vec<(Vec<PathBuf>, String, Vec<u8>)> = Vec::new();
    let mut ledgers = Vec::new();
    if index.has_conflicts() {
        let mut entries = Vec::new();
        for conflict in index.conflicts()? {
            let conflict = conflict?;
            let side =
                |e: &Option<git2::IndexEntry>| -> Result<Option<(String, Vec<u8>)>, SyncError> {
                    match e {
                        Some(e) => {
                            let path = String::from_utf8_lossy(&e.path).into_owned();
                            let blob = git.find_blob(e.id)?;
                            Ok(Some((path, blob.content().to_vec())))
                        }
                        None => Ok(None),
                    }
                };
            entries.push((
                side(&conflict.ancestor)?,
                side(&conflict.our)?,
                side(&conflict.their)?,
            ));
        }
        for (all, path, result) in moved_and_changed(repo, &mut entries) {
            match result {
                Ok(text) => resolved.push((all, path, text.into_bytes())),
                Err(what) => conflicts.push(ConflictFile {
                    path,
                    what,
                    branch: String::new(),
                }),
            }
        }
        for (a, o, t) in entries {
            let anc_path = a.as_ref().map(|x| x.0.clone());
            // the path the result lives at: the side that renamed it, else ours
            let path = match (&o, &t) {
                (Some(o), Some(t)) if Some(&t.0) != anc_path.as_ref() => t.0.clone(),
                (Some(o), _) => o.0.clone(),
                (None, Some(t)) => t.0.clone(),
                (None, None) => anc_path.clone().unwrap_or_default(),
            };
            let mut all: Vec<PathBuf> = [&a, &o, &t]
                .into_iter()
                .flatten()
                .map(|x| PathBuf::from(&x.0))
                .collect();
            all.dedup();
            let rel = repo.bank_path(&path).map(str::to_string);
            let text = |x: &Option<(String, Vec<u8>)>| -> Option<String> {
                match x {
                    Some((_, b)) => String::from_utf8(b.clone()).ok(),
                    None => Some(String::new()),
                }
            };
            let mut conflict_at = |what: &str| {
                conflicts.push(ConflictFile {
                    path: path.clone(),
                    what: what.to_string(),
                    branch: String::new(),
                })
            };
            let Some(rel) = rel.filter(|r| is_bank_file(r, &exclude)) else {
                conflict_at("changed on both sides, and not a bank file `lesson sync` merges");
                continue;
            };
            let (Some(bt), Some(ot), Some(tt)) = (text(&a), text(&o), text(&t)) else {
                conflict_at("not UTF-8 text");
                continue;
            };
            if rel.starts_with("_log/") {
                ledgers.push((all, path.clone(), rel, a.is_none(), bt, ot, tt));
            } else if rel == crate::layout::INDEX_FILE {
                // regenerated below anyway
                resolved.push((
                    all,
                    path.clone(),
                    crate::merge::index_md(&bt, &ot, &tt).into_bytes(),
                ));
            } else if rel.ends_with(".md") {
                match (&a, &o, &t) {
                    (None, Some(_), Some(_)) => {
                        // add/add: the remote's version stays (ours' with `keep_ours`), the
                        // other goes through the gate
                        let slug = slug_of(&rel);
                        let (kept, admitted) = if keep_ours { (ot, tt) } else { (tt, ot) };
                        add_add.insert(slug, (rel.clone(), admitted.into_bytes()));
                        resolved.push((all, path.clone(), kept.into_bytes()));
                    }
                    (Some(_), Some(_), Some(_)) => match crate::merge::lesson(&bt, &ot, &tt) {
                        Ok(text) => resolved.push((all, path.clone(), text.into_bytes())),
                        Err(c) => {
                            conflict_at(&format!("both sides rewrote this lesson: {}", c.what))
                        }
                    },
                    (_, None, _) => {
                        conflict_at("deleted (or moved) locally and changed by the remote")
                    }
                    (_, _, None) => {
                        conflict_at("changed locally and deleted (or moved) by the remote")
                    }
                }
            } else {
                conflict_at("changed on both sides (only ledgers, lessons and `_index.md` merge by the bank's rules)");
            }
        }
    }
    for (all, path, rel, added, bt, ot, tt) in ledgers {
        let slug = slug_of(&rel);
        // an add/add: the kept version's lines first, so its `created` event stays the first
        let text = if added && !keep_ours && add_add.contains_key(&slug) {
            crate::merge::ledger(&bt, &tt, &ot)
        } else {
            crate::merge::ledger(&bt, &ot, &tt)
        };
        resolved.push((all, path, text.into_bytes()));
    }
    if !conflicts.is_empty() {
        report.conflicts = on_branch(conflicts, branch);
        return Ok(None);
    }
    for (all, path, bytes) in &resolved {
        for p in all {
            index.conflict_remove(p)?;
        }
        // an index libgit2 merged in memory takes entries by blob (`add_frombuffer` needs a
        // repository behind the index)
        let mut e = entry(path, 0o100644);
        e.id = git.blob(bytes)?;
        e.file_size = bytes.len() as u32;
        index.add(&e)?;
    }
    let merged_tree = git.find_tree(index.write_tree_to(git)?)?;
    // the work proportional to the change: only the files that differ from ours are read,
    // unless an add/add goes through the `lesson add` gate (which compares with every lesson)
    let derived = if add_add.is_empty() {
        derive_changed(repo, &ours_tree, &merged_tree, options.stamp.at)?
    } else {
        None
    };
    let (files, ours_files, tree) = match derived {
        Some((before, files)) => {
            let tree = replace(repo, &merged_tree, &before, &files)?;
            let ours_files = read_paths(repo, &ours_tree, files.keys())?;
            (files, ours_files, tree)
        }
        None => {
            let mut files = read_bank(repo, &merged_tree)?;
            let before = files.clone();
            for (slug, (rel, bytes)) in &add_add {
                let source = if keep_ours { branch } else { "local" };
                admit_duplicate(repo, &mut files, slug, rel, bytes, source, options)
                    .map_err(|e| SyncError::Derive(format!("{}: {e}", repo.repo_path(rel))))?;
                report.add_add.push(slug.clone());
            }
            let ours_files = read_bank(repo, &ours_tree)?;
            let changed: BTreeSet<String> = files
                .iter()
                .filter(|(rel, bytes)| {
                    crate::layout::is_ledger_path(rel) && ours_files.get(*rel) != Some(*bytes)
                })
                .map(|(rel, _)| slug_of(rel))
                .collect();
            derive(repo, &mut files, &changed, options.stamp.at)?;
            let tree = replace(repo, &merged_tree, &before, &files)?;
            (files, ours_files, tree)
        }
    };
    outside_bank(repo, &ours_tree, &tree)?;
    // never commit a conflict marker: every file the merge brings is checked
    let mut marked = Vec::new();
    for (rel, bytes) in &files {
        if ours_files.get(rel) != Some(bytes) && has_conflict_marker(bytes) {
            marked.push(ConflictFile {
                path: repo.repo_path(rel),
                what: "holds a merge-conflict marker".into(),
                branch: String::new(),
            });
        }
    }
    if !marked.is_empty() {
        report.conflicts = on_branch(marked, branch);
        return Ok(None);
    }
    let sig = signature(repo)?;
    let message = format!(
        "merge {}/{branch}: {fetched} commit{} from the remote\n",
        report.remote,
        if fetched == 1 { "" } else { "s" }
    );
    let parents = [&git.find_commit(ours)?, &git.find_commit(theirs)?];
    Ok(Some(
        git.commit(None, &sig, &sig, &message, &tree, &parents)?,
    ))
}

/// The conflicts of the merge with `branch`, named so.
fn on_branch(mut conflicts: Vec<ConflictFile>, branch: &str) -> Vec<ConflictFile> {
    for c in &mut conflicts {
        c.branch = branch.to_string();
    }
    conflicts
}

/// One side of a conflicted index entry: its path in the repository and its bytes.
type Side = Option<(String, Vec<u8>)>;

/// A lesson moved on one side (`lesson archive`: `<slug>.md` -> `_archive/<slug>.md`) and
/// changed in place on the other (`lesson record`) reaches the index as two conflicts libgit2
/// cannot tie together (git2 does not expose the index's rename records): the old path with
/// its ancestor and the changing side only, and the new path with the moving side only. Each
/// such pair of one slug is taken out of `entries` and merged by [`crate::merge::lesson`]
/// (base the old file, ours and theirs whichever side is which) at the new path; the old path
/// is left out of the tree. Returns the paths to clear, the path to write and the merge (or
/// what conflicts).
fn moved_and_changed(
    repo: &BankRepo,
    entries: &mut Vec<(Side, Side, Side)>,
) -> Vec<(Vec<PathBuf>, String, Result<String, String>)> {
    let lesson_slug = |side: &Side| -> Option<String> {
        let (path, _) = side.as_ref()?;
        let rel = repo.bank_path(path)?;
        rel.ends_with(".md").then(|| slug_of(rel))
    };
    let text = |side: &Side| -> Option<String> {
        side.as_ref()
            .and_then(|(_, b)| String::from_utf8(b.clone()).ok())
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let (a, o, t) = &entries[i];
        // the old path: an ancestor, changed on one side, gone on the other
        let Some(slug) = lesson_slug(a).filter(|_| o.is_some() != t.is_some()) else {
            i += 1;
            continue;
        };
        let ours_moved = o.is_none();
        // the new path: no ancestor, present only on the side the old path is gone from
        let partner = entries.iter().position(|(a2, o2, t2)| {
            let moving = if ours_moved { o2 } else { t2 };
            let other = if ours_moved { t2 } else { o2 };
            a2.is_none() && other.is_none() && lesson_slug(moving).as_deref() == Some(slug.as_str())
        });
        let Some(j) = partner else {
            i += 1;
            continue;
        };
        let (_, o2, t2) = &entries[j];
        let moved = if ours_moved { o2 } else { t2 };
        let changed = if ours_moved { t } else { o };
        let (Some(old), Some(new)) = (a.as_ref(), moved.as_ref()) else {
            i += 1;
            continue;
        };
        let (ours, theirs) = if ours_moved {
            (moved, changed)
        } else {
            (changed, moved)
        };
        let result = match (text(a), text(ours), text(theirs)) {
            (Some(bt), Some(ot), Some(tt)) => crate::merge::lesson(&bt, &ot, &tt).map_err(|c| {
                format!(
                    "moved ({} -> {}) on one side and rewritten on the other: {}",
                    old.0, new.0, c.what
                )
            }),
            _ => Err("not UTF-8 text".to_string()),
        };
        out.push((
            vec![PathBuf::from(&old.0), PathBuf::from(&new.0)],
            new.0.clone(),
            result,
        ));
        entries.remove(i.max(j));
        entries.remove(i.min(j));
        // the entry after the old path moved down to `i`, or to `i - 1` when the new path
        // came before it
        if j < i {
            i -= 1;
        }
    }
    out
}

/// An index entry for a blob at `path` (stat data zero: git re-reads such a file).
pub fn entry(path: &str, mode: u32) -> git2::IndexEntry {
    git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: git2::Oid::ZERO_SHA1,
        flags: (path.len().min(0xfff)) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// The slug a bank path names (`_log/a.jsonl`, `_archive/a.md`, `sub/a.md` -> `a`).
fn slug_of(rel: &str) -> String {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".md"))
        .unwrap_or(name)
        .to_string()
}

/// Refuse a merge that changes files outside the bank: `lesson sync` writes the bank only.
fn outside_bank(
    repo: &BankRepo,
    from: &git2::Tree<'_>,
    to: &git2::Tree<'_>,
) -> Result<(), SyncError> {
    if repo.prefix.is_empty() {
        return Ok(());
    }
    let diff = repo.repo.diff_tree_to_tree(Some(from), Some(to), None)?;
    let outside: Vec<String> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .filter(|p| repo.bank_path(p).is_none())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if outside.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = outside.iter().take(5).map(String::as_str).collect();
    let more = if outside.len() > 5 {
        format!(" and {} more", outside.len() - 5)
    } else {
        String::new()
    };
    Err(SyncError::OutsideBank(format!(
        "{}{more}",
        shown.join(", ")
    )))
}

/// The bank's folder in `tree` (the tree itself when the bank is the repository's root);
/// `None` when the tree has no such folder.
fn bank_tree<'r>(
    repo: &'r BankRepo,
    tree: &git2::Tree<'_>,
) -> Result<Option<git2::Tree<'r>>, SyncError> {
    subtree(repo, tree, &repo.prefix)
}

/// The folder at `path` in `tree` (the tree itself for an empty path); `None` when the tree
/// has no such folder.
fn subtree<'r>(
    repo: &'r BankRepo,
    tree: &git2::Tree<'_>,
    path: &str,
) -> Result<Option<git2::Tree<'r>>, SyncError> {
    let git = &repo.repo;
    if path.is_empty() {
        return Ok(Some(git.find_tree(tree.id())?));
    }
    match tree.get_path(Path::new(path)) {
        Ok(e) if e.kind() == Some(git2::ObjectType::Tree) => Ok(Some(git.find_tree(e.id())?)),
        _ => Ok(None),
    }
}

/// The files at `paths` (relative to the bank) in `tree`; a path the tree has no file at is
/// left out.
pub fn read_paths<'p>(
    repo: &BankRepo,
    tree: &git2::Tree<'_>,
    paths: impl IntoIterator<Item = &'p String>,
) -> Result<Files, SyncError> {
    let mut files = Files::new();
    let Some(sub) = bank_tree(repo, tree)? else {
        return Ok(files);
    };
    for rel in paths {
        if let Ok(e) = sub.get_path(Path::new(rel)) {
            if e.kind() == Some(git2::ObjectType::Blob) {
                files.insert(rel.clone(), repo.repo.find_blob(e.id())?.content().to_vec());
            }
        }
    }
    Ok(files)
}

/// The bank files (relative to the bank) that differ between the trees `a` and `b`: one tree
/// diff, which skips every folder whose tree is the same on both sides.
fn changed_paths(
    repo: &BankRepo,
    a: &git2::Tree<'_>,
    b: &git2::Tree<'_>,
    under: Option<&str>,
) -> Result<BTreeSet<String>, SyncError> {
    let (Some(a), Some(b)) = (bank_tree(repo, a)?, bank_tree(repo, b)?) else {
        return Ok(BTreeSet::new());
    };
    // only one folder of the bank: diff its two trees, not the bank's (whose lessons folder
    // holds every lesson: 100,000 entries read twice per merge in a large bank)
    let (a, b, prefix) = match under {
        None => (Some(a), Some(b), String::new()),
        Some(dir) => (
            subtree(repo, &a, dir)?,
            subtree(repo, &b, dir)?,
            format!("{dir}/"),
        ),
    };
    if a.as_ref().map(git2::Tree::id) == b.as_ref().map(git2::Tree::id) {
        return Ok(BTreeSet::new());
    }
    let diff = repo.repo.diff_tree_to_tree(a.as_ref(), b.as_ref(), None)?;
    Ok(diff
        .deltas()
        .flat_map(|d| [d.old_file().path(), d.new_file().path()])
        .flatten()
        .map(|p| format!("{prefix}{}", p.to_string_lossy().replace('\\', "/")))
        .collect())
}

/// The ledgers (and with `lessons`, the lessons) both sides changed since the base that
/// libgit2 merged by itself (as text, or by the `merge=union` attribute), merged again by the
/// bank's rules ([`crate::merge::ledger`], [`crate::merge::lesson`]) in `index`. Once merges
/// have run both ways (a runtime's branch and the main branch merging each other), the two
/// sides can hold one ledger line or evidence item at different places: a line merge keeps it
/// twice where the bank's rules, which take both as sets, keep it once. Lessons are merged
/// again in a criss-cross merge only (several merge bases); a lesson the bank's rule finds in
/// conflict keeps libgit2's clean merge.
fn remerge_clean(
    repo: &BankRepo,
    index: &mut git2::Index,
    [base, ours, theirs]: [&git2::Tree<'_>; 3],
    exclude: &GlobSet,
    lessons: bool,
) -> Result<(), SyncError> {
    let git = &repo.repo;
    // outside a criss-cross only the ledgers are merged again: diff the ledgers' folder only
    let under = (!lessons).then_some(crate::layout::LOG_DIR);
    let theirs_changed = changed_paths(repo, base, theirs, under)?;
    if theirs_changed.is_empty() {
        return Ok(());
    }
    let both: BTreeSet<String> = changed_paths(repo, base, ours, under)?
        .into_iter()
        .filter(|p| {
            theirs_changed.contains(p)
                && (crate::layout::is_ledger_path(p)
                    || (lessons
                        && (crate::walk::is_lesson_path(p, exclude)
                            || (p.starts_with("_archive/") && p.ends_with(".md")))))
        })
        // no entry at stage 0: a conflict, resolved by the same rules after
        .filter(|p| index.get_path(Path::new(&repo.repo_path(p)), 0).is_some())
        .collect();
    if both.is_empty() {
        return Ok(());
    }
    let [b, o, t] = [base, ours, theirs].map(|tree| read_paths(repo, tree, &both));
    let (b, o, t) = (b?, o?, t?);
    let text = |files: &Files, rel: &String| {
        files
            .get(rel)
            .and_then(|bytes| String::from_utf8(bytes.clone()).ok())
    };
    for rel in &both {
        let (Some(ot), Some(tt)) = (text(&o, rel), text(&t, rel)) else {
            continue;
        };
        let merged = if crate::layout::is_ledger_path(rel) {
            crate::merge::ledger("", &ot, &tt)
        } else {
            let Some(Ok(merged)) = text(&b, rel).map(|bt| crate::merge::lesson(&bt, &ot, &tt))
            else {
                continue;
            };
            merged
        };
        let path = repo.repo_path(rel);
        let Some(current) = index.get_path(Path::new(&path), 0) else {
            continue;
        };
        if git.find_blob(current.id)?.content() != merged.as_bytes() {
            let mut e = entry(&path, current.mode);
            e.id = git.blob(merged.as_bytes())?;
            e.file_size = merged.len() as u32;
            index.add(&e)?;
        }
    }
    Ok(())
}

/// [`derive`] reading only what the merge changed: the files that differ between `ours` and
/// `merged`, the lessons of the ledgers among them (by their file name: `<slug>.md` in the
/// bank or `_archive/`), and `_index.md`, updated row by row ([`crate::index_md::patch`]) from
/// ours (a current `_index.md` stays current; the rows of unchanged lessons are ours'). The
/// files before and after, for [`replace`]; `None` when it cannot tell the result equals
/// [`derive`]'s (the configuration or templates changed, a ledger's lesson is not found by its
/// name, `_index.md` is not the built-in template's): derive from the whole bank then.
fn derive_changed(
    repo: &BankRepo,
    ours: &git2::Tree<'_>,
    merged: &git2::Tree<'_>,
    now: jiff::Timestamp,
) -> Result<Option<(Files, Files)>, SyncError> {
    let index_file = crate::layout::INDEX_FILE.to_string();
    let config_file = crate::config::CONFIG_FILE.to_string();
    let template = format!("templates/{}", crate::index_md::TEMPLATE);
    let changed = changed_paths(repo, ours, merged, None)?;
    if changed
        .iter()
        .any(|p| *p == config_file || p.starts_with("templates/"))
        || repo.bank.join(&template).exists()
    {
        return Ok(None);
    }
    let mut wanted: BTreeSet<String> = changed.clone();
    wanted.insert(config_file.clone());
    wanted.insert(index_file.clone());
    let ledgers: BTreeSet<String> = changed
        .iter()
        .filter(|p| crate::layout::is_ledger_path(p))
        .map(|p| slug_of(p))
        .collect();
    for slug in &ledgers {
        wanted.insert(format!("{slug}.md"));
        wanted.insert(format!("{}/{slug}.md", crate::layout::ARCHIVE_DIR));
    }
    let mut files = read_paths(repo, merged, &wanted)?;
    let config = config_of(&files);
    let exclude = crate::bank::exclude_set(&config).unwrap_or_else(|_| GlobSet::empty());
    // each changed ledger's lesson, found by its name, with that slug
    let archive = format!("{}/", crate::layout::ARCHIVE_DIR);
    for slug in &ledgers {
        let candidates: Vec<(PathBuf, Vec<u8>)> =
            [format!("{slug}.md"), format!("{archive}{slug}.md")]
                .into_iter()
                .filter_map(|rel| files.get(&rel).map(|b| (repo.bank.join(&rel), b.clone())))
                .collect();
        let log = format!("{}/{slug}.jsonl", crate::ledger::LOG_DIR);
        if !files.contains_key(&log) {
            continue;
        }
        let found = crate::Bank::from_files(&repo.bank, config.clone(), candidates, now, None);
        if !found.by_slug().contains_key(slug.as_str()) {
            return Ok(None);
        }
    }
    let before = files.clone();
    derive_counts(repo, &mut files, &ledgers, now);
    let Some(current) = read_paths(repo, ours, [&index_file])?.remove(&index_file) else {
        // no `_index.md` in ours: the merge brought one or there is none
        return Ok((!files.contains_key(&index_file)).then_some((before, files)));
    };
    if !files.contains_key(&index_file) {
        return Ok(Some((before, files)));
    }
    let Ok(current) = String::from_utf8(current) else {
        return Ok(None);
    };
    // the lessons whose rows change: those the merge or the counts changed
    let lessons: BTreeSet<String> = changed
        .iter()
        .chain(files.keys())
        .filter(|rel| crate::walk::is_lesson_path(rel, &exclude))
        .filter(|rel| before.get(*rel) != files.get(*rel) || changed.contains(*rel))
        .cloned()
        .collect();
    let old = read_paths(repo, ours, &lessons)?;
    let old = crate::Bank::from_files(
        &repo.bank,
        config.clone(),
        old.into_iter().map(|(rel, b)| (repo.bank.join(rel), b)),
        now,
        None,
    );
    // who supersedes whom, before and after, among the changed lessons
    let mut gone: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut came: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, lesson) in old.lessons() {
        for target in &lesson.supersedes {
            gone.entry(target.value.clone())
                .or_default()
                .insert(lesson.slug.value.clone());
        }
    }
    let new_files: Vec<(PathBuf, Vec<u8>)> = lessons
        .iter()
        .filter_map(|rel| files.get(rel).map(|b| (repo.bank.join(rel), b.clone())))
        .collect();
    let new = crate::Bank::from_files(&repo.bank, config.clone(), new_files, now, None);
    for (_, lesson) in new.lessons() {
        for target in &lesson.supersedes {
            came.entry(target.value.clone())
                .or_default()
                .insert(lesson.slug.value.clone());
        }
    }
    // the lessons whose status may change: those named, before or after
    let mut rows = lessons.clone();
    for target in gone.keys().chain(came.keys()) {
        rows.extend(crate::index_md::paths_of(&current, target));
    }
    let targets: Vec<String> = rows
        .iter()
        .filter(|rel| !files.contains_key(*rel))
        .cloned()
        .collect();
    let loaded = read_paths(repo, merged, &targets)?;
    let row_files: Vec<(PathBuf, Vec<u8>)> = rows
        .iter()
        .filter_map(|rel| {
            files
                .get(rel)
                .or_else(|| loaded.get(rel))
                .map(|b| (repo.bank.join(rel), b.clone()))
        })
        .collect();
    let check = crate::lint::FileErrors::default();
    let row_bank = crate::Bank::from_files(&repo.bank, config, row_files, now, Some(&check));
    let superseded_by = |slug: &str, before: &[String]| -> Vec<String> {
        let mut by: BTreeSet<String> = before.iter().cloned().collect();
        if let Some(gone) = gone.get(slug) {
            by.retain(|s| !gone.contains(s));
        }
        if let Some(came) = came.get(slug) {
            by.extend(came.iter().cloned());
        }
        by.remove(slug);
        by.into_iter().collect()
    };
    let patch = crate::index_md::Patch {
        remove: rows,
        rows: &row_bank,
        superseded_by: &superseded_by,
    };
    let Some(text) = crate::index_md::patch(&current, &patch) else {
        return Ok(None);
    };
    files.insert(index_file, text.into_bytes());
    Ok(Some((before, files)))
}

/// Every file of the bank's folder in `tree`, by its path relative to the bank.
pub fn read_bank(repo: &BankRepo, tree: &git2::Tree<'_>) -> Result<Files, SyncError> {
    let git = &repo.repo;
    let sub = if repo.prefix.is_empty() {
        git.find_tree(tree.id())?
    } else {
        match tree.get_path(Path::new(&repo.prefix)) {
            Ok(e) if e.kind() == Some(git2::ObjectType::Tree) => git.find_tree(e.id())?,
            _ => return Ok(Files::new()),
        }
    };
    let mut files = Files::new();
    let mut failed = None;
    sub.walk(git2::TreeWalkMode::PreOrder, |dir, e| {
        if e.kind() == Some(git2::ObjectType::Blob) {
            let rel = format!("{dir}{}", e.name().unwrap_or_default());
            match git.find_blob(e.id()) {
                Ok(b) => {
                    files.insert(rel, b.content().to_vec());
                }
                Err(err) => {
                    failed = Some(err);
                    return git2::TreeWalkResult::Abort;
                }
            }
        }
        git2::TreeWalkResult::Ok
    })?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(files),
    }
}

/// `tree` with the bank files that differ between `before` and `after` replaced (or removed).
pub fn replace<'r>(
    repo: &'r BankRepo,
    tree: &git2::Tree<'_>,
    before: &Files,
    after: &Files,
) -> Result<git2::Tree<'r>, SyncError> {
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut any = false;
    for (rel, bytes) in after {
        if before.get(rel) != Some(bytes) {
            let id = repo.repo.blob(bytes)?;
            update.upsert(repo.repo_path(rel), id, git2::FileMode::Blob);
            any = true;
        }
    }
    for rel in before.keys().filter(|r| !after.contains_key(*r)) {
        update.remove(repo.repo_path(rel));
        any = true;
    }
    let id = if any {
        update.create_updated(&repo.repo, tree)?
    } else {
        tree.id()
    };
    Ok(repo.repo.find_tree(id)?)
}

fn config_of(files: &Files) -> crate::config::Config {
    files
        .get(crate::config::CONFIG_FILE)
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|t| crate::config::Config::parse(t, crate::config::CONFIG_FILE).ok())
        .unwrap_or_default()
}

/// The bank the files make, its root the bank's directory (for templates and messages).
fn bank_of(repo: &BankRepo, files: &Files, now: jiff::Timestamp) -> crate::Bank {
    bank_at(&repo.bank, files, now)
}

fn bank_at(root: &Path, files: &Files, now: jiff::Timestamp) -> crate::Bank {
    let config = config_of(files);
    let exclude = crate::bank::exclude_set(&config).unwrap_or_else(|_| GlobSet::empty());
    let lessons = files
        .iter()
        .filter(|(rel, _)| {
            *rel == crate::layout::INDEX_FILE || crate::walk::is_lesson_path(rel, &exclude)
        })
        .map(|(rel, b)| (root.join(rel), b.clone()));
    let check = crate::lint::FileErrors::default();
    crate::Bank::from_files(root, config, lessons, now, Some(&check))
}

/// Re-derive what the merge cannot take from either side: the counts of every lesson (live or
/// in `_archive/`) whose ledger is in `ledgers` (set from the merged ledger by the span edit
/// `lint --fix` makes for L001), then `_index.md` (when the bank has one).
pub fn derive(
    repo: &BankRepo,
    files: &mut Files,
    ledgers: &BTreeSet<String>,
    now: jiff::Timestamp,
) -> Result<(), SyncError> {
    derive_counts(repo, files, ledgers, now);
    if files.contains_key(crate::layout::INDEX_FILE) {
        let bank = bank_of(repo, files, now);
        let text = crate::index_md::render(&bank).map_err(|e| SyncError::Derive(e.to_string()))?;
        files.insert(crate::layout::INDEX_FILE.to_string(), text.into_bytes());
    }
    Ok(())
}

/// The counts part of [`derive`]: the lessons among `files` whose ledger is in `ledgers` get
/// the counts of their merged ledger.
fn derive_counts(
    repo: &BankRepo,
    files: &mut Files,
    ledgers: &BTreeSet<String>,
    now: jiff::Timestamp,
) {
    if !ledgers.is_empty() {
        // the live lessons, and those in `_archive/` (a record merged into an archive move)
        let live = bank_of(repo, files, now);
        let archive = format!("{}/", crate::layout::ARCHIVE_DIR);
        let archived: Vec<(PathBuf, Vec<u8>)> = files
            .iter()
            .filter(|(rel, _)| {
                rel.strip_prefix(&archive)
                    .and_then(|name| name.strip_suffix(".md"))
                    .is_some_and(|slug| ledgers.contains(slug))
            })
            .map(|(rel, b)| (repo.bank.join(rel), b.clone()))
            .collect();
        let archived = crate::Bank::from_files(&repo.bank, config_of(files), archived, now, None);
        let mut edited = Vec::new();
        for (slug, (doc, lesson)) in live.by_slug().into_iter().chain(archived.by_slug()) {
            if !ledgers.contains(slug) {
                continue;
            }
            let log = format!("{}/{slug}.jsonl", crate::ledger::LOG_DIR);
            let Some(bytes) = files.get(&log) else {
                continue;
            };
            let ledger = crate::ledger::Ledger::parse(&repo.bank.join(&log), bytes);
            let Some(tally) = ledger.tally() else {
                continue;
            };
            let expected = tally.counts();
            if lesson.counts() == expected {
                continue;
            }
            let full = doc.full();
            let Ok(fm) = crate::edit::frontmatter::Frontmatter::of(&full) else {
                continue;
            };
            let Ok(edits) = fm.set_counts(expected) else {
                continue;
            };
            let (text, _) = crate::diagnostic::apply_edits(&full.source.text, &edits);
            let rel = doc
                .source
                .path
                .strip_prefix(&repo.bank)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            edited.push((rel, text.into_bytes()));
        }
        for (rel, bytes) in edited {
            files.insert(rel, bytes);
        }
    }
}

/// An add/add of one slug: the kept lesson (in `files` already) stays; the other version
/// (`ours`, named `<rel> (<source>)`) is admitted through the `lesson add` gate as its
/// duplicate, as `lesson add` would have done on one machine: its evidence items appended, a
/// `merged` event naming the source.
/// The gate writes into a scratch copy of the two files below `.lesson/`, never into the bank.
fn admit_duplicate(
    repo: &BankRepo,
    files: &mut Files,
    slug: &str,
    rel: &str,
    ours: &[u8],
    source: &str,
    options: &SyncOptions,
) -> Result<(), String> {
    use crate::curate::add::{prepare_all, Batch, Candidate, Intake};
    let state = repo.bank.join(crate::layout::STATE_DIR);
    std::fs::create_dir_all(&state).map_err(|e| e.to_string())?;
    let scratch = tempfile::Builder::new()
        .prefix("sync-")
        .tempdir_in(&state)
        .map_err(|e| e.to_string())?;
    let root = scratch.path();
    let log = format!("{}/{slug}.jsonl", crate::ledger::LOG_DIR);
    for name in [rel, log.as_str()] {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        if let Some(bytes) = files.get(name) {
            std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
        }
    }
    let bank = bank_at(root, files, options.stamp.at);
    let candidate = Candidate::from_markdown(format!("{rel} ({source})"), ours.to_vec());
    let intake = Intake {
        origin: serde_json::Map::new(),
        run: None,
        run_id: None,
        // the local version was admitted on its machine; only its evidence is merged here
        screen: false,
    };
    let (prepared, rejection) = prepare_all(&bank, std::slice::from_ref(&candidate), &intake);
    if rejection.refused() || prepared.is_empty() {
        return Err(format!(
            "added on both sides; the local version could not be admitted as the remote's duplicate: {rejection}"
        ));
    }
    let mut batch = Batch::new(bank, options.stamp.clone(), None);
    batch.admit(&prepared[0]).map_err(|e| e.to_string())?;
    batch.commit().map_err(|e| e.to_string())?;
    for name in [rel, log.as_str()] {
        if let Ok(bytes) = std::fs::read(root.join(name)) {
            files.insert(name.to_string(), bytes);
        }
    }
    Ok(())
}
