//! The bank's lesson files, found the way [`crate::bank::lesson_paths`] finds them (the same
//! rules; a test keeps the two in step), but cheaply enough to run before every search: plain
//! `read_dir`, no per-entry path parsing, each file stat-ed through its directory's handle,
//! and the work spread over rayon's threads: while one thread reads a directory, others stat
//! the entries it has read so far (a batch at a time) and walk the subdirectories it found.
//!
//! Rules: below the root, names starting with `.` or `_` are skipped (`_index.md`, `_archive/`,
//! `_log/`, `.lesson/`), and so is a top-level `templates/` directory; symlinks are followed
//! (a link back to an ancestor directory is not); files ending in `.md` are lessons unless an
//! `exclude` glob of `lesson.toml` matches their path relative to the root.

use std::cmp::Ordering;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::GlobSet;

/// A lesson file: its path relative to the root (`/`-separated) and its stat.
#[derive(Debug, Clone)]
pub struct File {
    /// Relative to the bank root, `/`-separated.
    pub rel: String,
    /// Its metadata (following symlinks), or `None` when it could not be read.
    pub meta: Option<std::fs::Metadata>,
}

/// Entries stat-ed per task: large enough that a task outweighs its scheduling, small enough
/// that stat-ing starts early and spreads evenly.
const BATCH: usize = 512;

/// Every lesson file under `root` with its metadata, in no particular order.
pub fn lesson_files(root: &Path, exclude: &GlobSet) -> Vec<File> {
    let found = Mutex::new(Vec::new());
    let ancestors: Vec<DirId> = dir_id(root).into_iter().collect();
    rayon::scope(|scope| {
        walk(
            scope,
            root.to_path_buf(),
            String::new(),
            ancestors,
            exclude,
            &found,
        );
    });
    found.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Whether a path relative to the root (`/`-separated) names a lesson file by the walk's
/// rules, without touching the file system: no component hidden or `_`-prefixed, not below
/// the top-level `templates/`, ending in `.md`, not excluded. (That it is a file, and not a
/// directory called `x.md`, is for the caller's stat to say.)
pub fn is_lesson_path(rel: &str, exclude: &GlobSet) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    let visible = parts
        .iter()
        .all(|p| !p.is_empty() && !p.starts_with('.') && !p.starts_with('_'));
    visible
        && !(parts.len() > 1 && parts[0] == "templates")
        && Path::new(rel).extension().is_some_and(|x| x == "md")
        && !exclude.is_match(Path::new(rel))
}

/// How a file was found: a plain directory entry (stat-ed later), or through a symlink
/// (already stat-ed to learn what it points to).
enum Found {
    Entry(std::fs::DirEntry),
    Followed(std::fs::Metadata),
}

fn stat_batch(batch: Vec<(String, Found)>, out: &Mutex<Vec<File>>) {
    let files: Vec<File> = batch
        .into_iter()
        .map(|(rel, entry)| {
            let meta = match entry {
                Found::Entry(e) => e.metadata().ok(),
                Found::Followed(m) => Some(m),
            };
            File { rel, meta }
        })
        .collect();
    out.lock().unwrap_or_else(|e| e.into_inner()).extend(files);
}

/// Read `dir` (`prefix` its path relative to the root, `ancestors` the directories above it
/// and itself), handing batches of files and each subdirectory to tasks of `scope`.
fn walk<'s>(
    scope: &rayon::Scope<'s>,
    dir: PathBuf,
    prefix: String,
    ancestors: Vec<DirId>,
    exclude: &'s GlobSet,
    out: &'s Mutex<Vec<File>>,
) {
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let top = prefix.is_empty();
    let mut batch: Vec<(String, Found)> = Vec::with_capacity(BATCH);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let followed = if file_type.is_symlink() {
            match std::fs::metadata(entry.path()) {
                Ok(m) => Some(m),
                Err(_) => continue,
            }
        } else {
            None
        };
        let (is_dir, is_file) = match &followed {
            Some(m) => (m.is_dir(), m.is_file()),
            None => (file_type.is_dir(), file_type.is_file()),
        };
        let rel = if top {
            name.to_string()
        } else {
            format!("{prefix}/{name}")
        };
        if is_dir {
            if top && name == "templates" {
                continue;
            }
            let path = entry.path();
            let Some(id) = dir_id(&path) else {
                continue;
            };
            if ancestors.contains(&id) {
                continue; // a symlink loop
            }
            let mut below = ancestors.clone();
            below.push(id);
            scope.spawn(move |scope| walk(scope, path, rel, below, exclude, out));
        } else if is_file && name.ends_with(".md") && !exclude.is_match(Path::new(&rel)) {
            let found = match followed {
                Some(m) => Found::Followed(m),
                None => Found::Entry(entry),
            };
            batch.push((rel, found));
            if batch.len() == BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                scope.spawn(move |_| stat_batch(full, out));
            }
        }
    }
    stat_batch(batch, out);
}

/// A fast hasher for paths (a word at a time): the index's paths are joined with the walk's
/// on every search.
#[derive(Default)]
pub struct PathHasher(u64);

impl Hasher for PathHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            h = (h.rotate_left(5) ^ u64::from_le_bytes(a)).wrapping_mul(K);
        }
        let mut a = [0u8; 8];
        a[..words.remainder().len()].copy_from_slice(words.remainder());
        h = (h.rotate_left(5) ^ u64::from_le_bytes(a) ^ bytes.len() as u64).wrapping_mul(K);
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        let h = (self.0 ^ (self.0 >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^ (h >> 32)
    }
}

#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = PathBuf;

#[cfg(unix)]
fn dir_id(dir: &Path) -> Option<DirId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn dir_id(dir: &Path) -> Option<DirId> {
    dir.canonicalize().ok()
}

/// Order `/`-separated relative paths as [`Path`] orders them (component by component): bytes
/// compared with `/` below every other byte.
pub fn path_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let key = |c: u8| if c == b'/' { 0 } else { c };
    match (a.get(common), b.get(common)) {
        (Some(&x), Some(&y)) => key(x).cmp(&key(y)),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_order_is_component_order() {
        let mut paths = vec![
            "a-b.md", "a/b.md", "a.md", "a/b/c.md", "ab.md", "a b.md", "a/a.md", "b.md", "A.md",
            "a/b-c.md", "a/b/a.md", "é.md", "a0.md",
        ];
        let mut by_path = paths.clone();
        by_path.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, by_path);
    }

    #[test]
    fn finds_what_the_bank_finds() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in [
            "_archive",
            ".lesson",
            "templates",
            "sub/templates",
            "sub/_log",
            "a-b",
            "a",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "a.md",
            "a-b/x.md",
            "a/x.md",
            "a.b.md",
            "_index.md",
            ".hidden.md",
            "_archive/old.md",
            ".lesson/x.md",
            "templates/t.md",
            "sub/templates/t.md",
            "sub/_log/l.md",
            "sub/b.md",
            "README.md",
            "sub/README.md",
            "notes.txt",
            "upper.MD",
            "skip-me.md",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("sub"), root.join("link")).unwrap();
            std::os::unix::fs::symlink(root, root.join("sub/loop")).unwrap();
            std::os::unix::fs::symlink(root.join("a.md"), root.join("alias.md")).unwrap();
            std::os::unix::fs::symlink(root.join("gone.md"), root.join("broken.md")).unwrap();
        }
        let mut exclude = globset::GlobSetBuilder::new();
        exclude.add(globset::Glob::new("README.md").unwrap());
        exclude.add(globset::Glob::new("skip-*.md").unwrap());
        let exclude = exclude.build().unwrap();
        let (mut bank, _) = crate::bank::lesson_paths(root, &exclude);
        let ours: Vec<File> = lesson_files(root, &exclude);
        // the same files (each walker keeps its own order)
        let mut paths: Vec<std::path::PathBuf> = ours.iter().map(|f| root.join(&f.rel)).collect();
        paths.sort();
        bank.sort();
        assert_eq!(paths, bank);
        assert!(ours
            .iter()
            .all(|f| f.meta.as_ref().is_some_and(|m| m.is_file())));
        assert!(ours.iter().any(|f| f.rel == "sub/README.md"));
        // the rules without the walk agree with it on every file and directory made above
        let mut names: Vec<String> = walkdir::WalkDir::new(root)
            .follow_links(false)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| crate::retrieve::store::relative(root, e.path()))
            .collect();
        names.sort();
        let found: std::collections::HashSet<&str> = ours.iter().map(|f| f.rel.as_str()).collect();
        for name in &names {
            assert_eq!(
                is_lesson_path(name, &exclude),
                found.contains(name.as_str()),
                "{name}"
            );
        }
    }
}
