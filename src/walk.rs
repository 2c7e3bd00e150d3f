//! Finding a bank's lesson files: one walk, and one set of rules, for every reader of the bank.
//!
//! Rules: below the root, names starting with `.` or `_` are skipped (`_index.md`, `_archive/`,
//! `_log/`, `.lesson/`), and so is a top-level `templates/` directory; symlinks are followed
//! (a link back to an ancestor directory is reported, not followed), but never out of the bank
//! nor to a place the walk reaches by its own path (both reported at the link: the target is
//! not opened, and no file is found twice); files ending in `.md` are lessons unless an
//! `exclude` glob of `lesson.toml` matches their path relative to the root.
//! `visit` applies them to one directory entry; two walks drive it:
//!
//! - [`walk`], in order on one thread, reporting what it cannot read (loading and linting);
//! - [`lesson_files`], cheaply enough to run before every search: the work spread over
//!   rayon's threads (while one thread reads a directory, others stat the entries it has read
//!   so far, a batch at a time, and walk the subdirectories it found), each file stat-ed
//!   through its directory's handle.
//!
//! The walk costs what `find` costs: `read_dir` gives each entry's type without a `stat`, so
//! only directories and symlinks are stat-ed, and names are compared as bytes, never parsed
//! into path components.

use std::cmp::Ordering;
use std::ffi::OsString;
use std::fs::{DirEntry, Metadata};
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::GlobSet;

/// A place the walk could not read, or a symlink it did not follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkProblem {
    /// The entry (file, directory or link) concerned.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
    /// Which kind of problem.
    pub kind: WalkProblemKind,
}

/// The kinds of [`WalkProblem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkProblemKind {
    /// An entry that could not be read, or a symlink loop.
    Unreadable,
    /// A symlink whose target is outside the bank (not opened).
    OutsideBank,
    /// A symlink to a file or directory the walk reaches by its own path (not followed).
    Duplicate,
}

/// A lesson file the walk found.
#[derive(Debug)]
pub struct Found {
    /// `root` joined with the file's relative path.
    pub path: PathBuf,
    /// The length of the `root` prefix of `path` in bytes, separator included: the relative
    /// path is what follows.
    pub root_len: usize,
    /// How it was found: its directory entry, or the metadata of the file a symlink points to.
    pub how: How,
}

/// How a file was found.
#[derive(Debug)]
pub enum How {
    /// A plain directory entry (its metadata is one `fstatat` away through the directory).
    Entry(DirEntry),
    /// Through a symlink, already stat-ed to learn what it points to.
    Followed(Metadata),
}

impl Found {
    /// The path relative to the root, as the OS spells it.
    pub fn rel(&self) -> &Path {
        below_root(&self.path, self.root_len)
    }
}

/// The part of a found file's `path` below the root, given the [`Found::root_len`] it was
/// found with.
pub fn below_root(path: &Path, root_len: usize) -> &Path {
    let bytes = path.as_os_str().as_encoded_bytes();
    // SAFETY: the bytes come from an `OsStr` and are split right after a separator that the
    // walk itself inserted (`Path::join`), which is a boundary of the encoding.
    Path::new(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(&bytes[root_len..]) })
}

/// A bank's root directory, held open while its files are read: each file is opened relative
/// to it (`openat`), so that the kernel walks only the part of the path below the root rather
/// than every component of the root again for each of 100,000 files. Where the root cannot be
/// held open (or off Unix), files are opened by their whole path.
#[derive(Debug)]
pub struct RootDir {
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl RootDir {
    /// Hold `root` open.
    pub fn open(root: &Path) -> RootDir {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            RootDir {
                fd: rustix::fs::open(root, flags, Mode::empty()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = root;
            RootDir {}
        }
    }

    /// Open a found file for reading: `path` is the root joined with `rel`.
    pub fn open_file(&self, path: &Path, rel: &Path) -> std::io::Result<std::fs::File> {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            use rustix::fs::{Mode, OFlags};
            return rustix::fs::openat(fd, rel, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
                .map(std::fs::File::from)
                .map_err(std::io::Error::from);
        }
        let _ = rel;
        std::fs::File::open(path)
    }

    /// What `stat` says of a found file `rel` (a symlink followed, as the walk follows one):
    /// its size, mtime and ctime in nanoseconds since the epoch, and its inode; one `statx`
    /// relative to the root. `None` where the root is not held open (or off Unix), or the
    /// file cannot be stat-ed: the caller reads the file instead.
    pub fn stamp(&self, rel: &Path) -> Option<(u64, i64, i64, u64)> {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            let st = rustix::fs::statat(fd, rel, rustix::fs::AtFlags::empty()).ok()?;
            let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
            #[allow(clippy::unnecessary_cast)] // the fields' types differ between targets
            return Some((
                st.st_size as u64,
                ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
                ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
                st.st_ino as u64,
            ));
        }
        let _ = rel;
        None
    }

    /// Read a file whole ([`RootDir::open_file`]'s), `size` bytes expected (what is allocated
    /// at first, up to 16 MiB: a hint, never trusted further). Read through `take`, whose
    /// `read_to_end` does not ask the file its size and position first (`File`'s does: two
    /// system calls more than the open, the reads and the close).
    pub fn read(&self, path: &Path, rel: &Path, size: usize) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut bytes = Vec::with_capacity(size.min(1 << 24) + 1);
        self.open_file(path, rel)?
            .take(u64::MAX)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

/// The walk's rules for one bank.
struct Rules<'a> {
    exclude: &'a GlobSet,
    /// The length of the root prefix of every path the walk makes, separator included.
    root_len: usize,
    /// The root with every symlink resolved: where a link may lead.
    canonical_root: Option<PathBuf>,
}

impl Rules<'_> {
    fn new<'a>(root: &Path, exclude: &'a GlobSet) -> Rules<'a> {
        Rules {
            exclude,
            root_len: root.join("x").as_os_str().len() - 1,
            canonical_root: std::fs::canonicalize(root).ok(),
        }
    }

    /// Why the symlink at `path` (to a directory when `dir`) is not followed, if it is not:
    /// it leads out of the bank, or to a place the walk reaches by its own path. Only links
    /// pay for this (a `realpath`); the target is never opened.
    fn link_problem(&self, path: &Path, dir: bool) -> Option<WalkProblem> {
        link_problem(self.canonical_root.as_deref(), self.exclude, path, dir)
    }
}

/// Whether the walk would refuse the lesson file at `rel` (`/`-separated, below `root`) for
/// the symlinks on its way: one leads out of the bank, or to a file the walk reaches by its
/// own path. For a path named by something other than the walk (a watcher's event); a
/// `realpath` each, nothing opened.
pub fn refused_link(root: &Path, rel: &str, exclude: &GlobSet) -> bool {
    let canonical_root = std::fs::canonicalize(root).ok();
    let path = root.join(rel);
    match (&canonical_root, std::fs::canonicalize(&path)) {
        (Some(c), Ok(target)) if target == c.join(rel) => false,
        (_, Err(_)) => false,
        _ => link_problem(canonical_root.as_deref(), exclude, &path, false).is_some(),
    }
}

/// See [`Rules::link_problem`].
fn link_problem(
    canonical_root: Option<&Path>,
    exclude: &GlobSet,
    path: &Path,
    dir: bool,
) -> Option<WalkProblem> {
    let problem = |message: String, kind| {
        Some(WalkProblem {
            path: path.to_path_buf(),
            message,
            kind,
        })
    };
    let outside = || {
        problem(
            "symlink to a path outside the bank; not read".to_string(),
            WalkProblemKind::OutsideBank,
        )
    };
    let (Some(root), Ok(target)) = (canonical_root, std::fs::canonicalize(path)) else {
        return outside();
    };
    let Ok(rel) = target.strip_prefix(root) else {
        return outside();
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let rel = parts.join("/");
    let walked = if dir {
        !rel.is_empty()
            && parts
                .iter()
                .all(|p| !p.starts_with('.') && !p.starts_with('_'))
            && parts[0] != "templates"
    } else {
        is_lesson_path(&rel, exclude)
    };
    if walked {
        return problem(
            format!("symlink to `{rel}`, which is walked by its own path; not followed"),
            WalkProblemKind::Duplicate,
        );
    }
    None
}

/// A directory entry the walk keeps.
enum Visit {
    /// A directory to walk (not an ancestor of itself): its path, name and id.
    Dir(PathBuf, OsString, DirId),
    /// A lesson file: its path, name and how it was found.
    File(PathBuf, OsString, How),
}

/// The walk's rules applied to one entry of a directory (`top`: of the root; `ancestors`: the
/// ids of the directories from the root down to this one). `None`: skipped by the rules.
fn visit(
    entry: std::io::Result<DirEntry>,
    dir: &Path,
    top: bool,
    rules: &Rules,
    ancestors: &[DirId],
) -> Option<Result<Visit, WalkProblem>> {
    let problem = |path: PathBuf, err: &std::io::Error| {
        Some(Err(WalkProblem {
            path,
            message: err.to_string(),
            kind: WalkProblemKind::Unreadable,
        }))
    };
    let entry = match entry {
        Ok(entry) => entry,
        Err(err) => return problem(dir.to_path_buf(), &err),
    };
    let file_name = entry.file_name();
    let name = file_name.as_encoded_bytes();
    if name.starts_with(b".") || name.starts_with(b"_") {
        return None;
    }
    let file_type = match entry.file_type() {
        Ok(t) => t,
        Err(err) => return problem(entry.path(), &err),
    };
    let path = entry.path();
    let (is_dir, is_file, followed) = if file_type.is_symlink() {
        match std::fs::metadata(&path) {
            Ok(m) => (m.is_dir(), m.is_file(), Some(m)),
            Err(err) => return problem(path, &err),
        }
    } else {
        (file_type.is_dir(), file_type.is_file(), None)
    };
    let linked = followed.is_some();
    if is_dir {
        if top && name == b"templates" {
            return None;
        }
        let meta = match followed {
            Some(m) => Some(m),
            None => std::fs::metadata(&path).ok(),
        };
        let id = dir_id(&path, meta.as_ref())?;
        if ancestors.contains(&id) {
            return Some(Err(WalkProblem {
                path,
                message: "symlink loop; not followed".to_string(),
                kind: WalkProblemKind::Unreadable,
            }));
        }
        if linked {
            if let Some(problem) = rules.link_problem(&path, true) {
                return Some(Err(problem));
            }
        }
        Some(Ok(Visit::Dir(path, file_name, id)))
    } else if is_file && name.ends_with(b".md") && name.len() > 3 {
        if !rules.exclude.is_empty() && rules.exclude.is_match(below_root(&path, rules.root_len)) {
            return None;
        }
        if linked {
            if let Some(problem) = rules.link_problem(&path, false) {
                return Some(Err(problem));
            }
        }
        let how = match followed {
            Some(m) => How::Followed(m),
            None => How::Entry(entry),
        };
        Some(Ok(Visit::File(path, file_name, how)))
    } else {
        None
    }
}

/// Walk `root`, calling `found` for every lesson file, in directory order (not sorted).
pub fn walk(
    root: &Path,
    exclude: &GlobSet,
    found: &mut dyn FnMut(Found),
    problems: &mut Vec<WalkProblem>,
) {
    let mut ancestors = Vec::new();
    if let Some(id) = dir_id(root, std::fs::metadata(root).ok().as_ref()) {
        ancestors.push(id);
    }
    let mut w = Walker {
        rules: Rules::new(root, exclude),
        found,
        problems,
        ancestors,
    };
    w.dir(root, 1);
}

struct Walker<'a> {
    rules: Rules<'a>,
    found: &'a mut dyn FnMut(Found),
    problems: &'a mut Vec<WalkProblem>,
    ancestors: Vec<DirId>,
}

impl Walker<'_> {
    fn dir(&mut self, dir: &Path, depth: usize) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) => {
                return self.problems.push(WalkProblem {
                    path: dir.to_path_buf(),
                    message: err.to_string(),
                    kind: WalkProblemKind::Unreadable,
                })
            }
        };
        for entry in entries {
            match visit(entry, dir, depth == 1, &self.rules, &self.ancestors) {
                None => {}
                Some(Err(problem)) => self.problems.push(problem),
                Some(Ok(Visit::Dir(path, _, id))) => {
                    self.ancestors.push(id);
                    self.dir(&path, depth + 1);
                    self.ancestors.pop();
                }
                Some(Ok(Visit::File(path, _, how))) => (self.found)(Found {
                    path,
                    root_len: self.rules.root_len,
                    how,
                }),
            }
        }
    }
}

/// A lesson file with its stat: its path relative to the root (`/`-separated).
#[derive(Debug, Clone)]
pub struct StatedFile {
    /// Relative to the bank root, `/`-separated.
    pub rel: String,
    /// Its metadata (following symlinks), or `None` when it could not be read.
    pub meta: Option<Metadata>,
}

/// Entries stat-ed per task: large enough that a task outweighs its scheduling, small enough
/// that stat-ing starts early and spreads evenly.
const BATCH: usize = 512;

/// Every lesson file under `root` with its metadata, in no particular order; what cannot be
/// read is left out (the walk of [`walk`] reports it).
pub fn lesson_files(root: &Path, exclude: &GlobSet) -> Vec<StatedFile> {
    find_lesson_files(root, exclude, true, &|rel, meta| StatedFile { rel, meta })
}

/// [`lesson_files`], each file made into what `keep` makes of its path and metadata as it is
/// stat-ed (on the walk's threads, the metadata still in cache): for a caller that keeps less
/// of a file than its whole metadata.
pub fn lesson_files_kept<T: Send>(
    root: &Path,
    exclude: &GlobSet,
    keep: impl Fn(String, Option<Metadata>) -> T + Sync,
) -> Vec<T> {
    find_lesson_files(root, exclude, true, &keep)
}

/// [`lesson_files`] without their metadata (but for the files reached through a symlink, which
/// the walk stats to follow): for a caller that opens and stats every file anyway.
pub fn lesson_paths(root: &Path, exclude: &GlobSet) -> Vec<StatedFile> {
    find_lesson_files(root, exclude, false, &|rel, meta| StatedFile { rel, meta })
}

/// What a walk makes of each file it finds.
type Keep<'k, T> = &'k (dyn Fn(String, Option<Metadata>) -> T + Sync);

fn find_lesson_files<T: Send>(root: &Path, exclude: &GlobSet, stat: bool, keep: Keep<T>) -> Vec<T> {
    let found = Mutex::new(Vec::new());
    let ancestors: Vec<DirId> = dir_id(root, std::fs::metadata(root).ok().as_ref())
        .into_iter()
        .collect();
    let rules = Rules::new(root, exclude);
    rayon::scope(|scope| {
        walk_parallel(
            scope,
            root.to_path_buf(),
            String::new(),
            ancestors,
            (&rules, stat, keep),
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

fn stat_batch<T>(batch: Vec<(String, How)>, stat: bool, keep: Keep<T>, out: &Mutex<Vec<T>>) {
    let files: Vec<T> = batch
        .into_iter()
        .map(|(rel, how)| {
            let meta = match how {
                How::Entry(e) => stat.then(|| e.metadata().ok()).flatten(),
                How::Followed(m) => Some(m),
            };
            keep(rel, meta)
        })
        .collect();
    out.lock().unwrap_or_else(|e| e.into_inner()).extend(files);
}

/// Read `dir` (`prefix` its path relative to the root, `ancestors` the directories above it
/// and itself), handing batches of files (stat-ed when `stat`) and each subdirectory to tasks
/// of `scope`.
fn walk_parallel<'s, T: Send>(
    scope: &rayon::Scope<'s>,
    dir: PathBuf,
    prefix: String,
    ancestors: Vec<DirId>,
    (rules, stat, keep): (&'s Rules<'s>, bool, Keep<'s, T>),
    out: &'s Mutex<Vec<T>>,
) {
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let top = prefix.is_empty();
    let rel_of = |name: &OsString| {
        let name = name.to_string_lossy();
        if top {
            name.into_owned()
        } else {
            format!("{prefix}/{name}")
        }
    };
    let mut batch: Vec<(String, How)> = Vec::with_capacity(BATCH);
    for entry in entries {
        match visit(entry, &dir, top, rules, &ancestors) {
            None | Some(Err(_)) => {}
            Some(Ok(Visit::Dir(path, name, id))) => {
                let rel = rel_of(&name);
                let mut below = ancestors.clone();
                below.push(id);
                let how = (rules, stat, keep);
                scope.spawn(move |scope| walk_parallel(scope, path, rel, below, how, out));
            }
            Some(Ok(Visit::File(_, name, how))) => {
                batch.push((rel_of(&name), how));
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    scope.spawn(move |_| stat_batch(full, stat, keep, out));
                }
            }
        }
    }
    stat_batch(batch, stat, keep, out);
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

/// Order `/`-separated relative paths as [`Path`] orders them (component by component): bytes
/// compared with `/` below every other byte.
pub fn path_order(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let common = common_prefix(a, b);
    let key = |c: u8| if c == b'/' { 0 } else { c };
    match (a.get(common), b.get(common)) {
        (Some(&x), Some(&y)) => key(x).cmp(&key(y)),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

/// The length of the longest common prefix of `a` and `b`, compared eight bytes at a time (a
/// rebuild sorts 100,000 paths that share their directories).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 <= n {
        let diff = word(a, i) ^ word(b, i);
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(unix)]
type DirId = (u64, u64);
#[cfg(not(unix))]
type DirId = PathBuf;

#[cfg(unix)]
fn dir_id(_path: &Path, meta: Option<&Metadata>) -> Option<DirId> {
    use std::os::unix::fs::MetadataExt;
    meta.map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn dir_id(path: &Path, _meta: Option<&Metadata>) -> Option<DirId> {
    path.canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file is opened below the root held open, also through a symlinked directory; a
    /// missing file fails as `File::open` does; a root that cannot be held open falls back to
    /// whole paths.
    #[test]
    fn files_open_relative_to_the_root() {
        use std::io::Read;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("bank");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.md"), "alpha").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("sub"), root.join("link")).unwrap();
        let read = |dir: &RootDir, rel: &str| -> std::io::Result<String> {
            let mut text = String::new();
            dir.open_file(&root.join(rel), Path::new(rel))?
                .read_to_string(&mut text)?;
            Ok(text)
        };
        let dir = RootDir::open(&root);
        assert_eq!(read(&dir, "sub/a.md").unwrap(), "alpha");
        #[cfg(unix)]
        assert_eq!(read(&dir, "link/a.md").unwrap(), "alpha");
        let missing = read(&dir, "sub/b.md").unwrap_err();
        let expected = std::fs::File::open(root.join("sub/b.md")).unwrap_err();
        assert_eq!(missing.kind(), expected.kind());
        assert_eq!(missing.to_string(), expected.to_string());
        // the root is renamed away after it was opened: the held root still reads it (so reads
        // do go through it); a root that does not exist is not held, and whole paths are
        // opened instead
        #[cfg(unix)]
        {
            std::fs::rename(&root, tmp.path().join("moved")).unwrap();
            assert_eq!(read(&dir, "sub/a.md").unwrap(), "alpha");
            let gone = RootDir::open(&root);
            std::fs::rename(tmp.path().join("moved"), &root).unwrap();
            assert_eq!(read(&gone, "sub/a.md").unwrap(), "alpha");
        }
    }

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

    proptest::proptest! {
        /// The common prefix found a word at a time is the one found a byte at a time.
        #[test]
        fn common_prefix_is_the_bytewise_one(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
            shared in 0usize..30,
        ) {
            let b: Vec<u8> = a.iter().take(shared).chain(&b).copied().collect();
            let bytewise = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            proptest::prop_assert_eq!(common_prefix(&a, &b), bytewise);
        }
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
        let ours: Vec<StatedFile> = lesson_files(root, &exclude);
        // the same files (each walker keeps its own order)
        let mut paths: Vec<std::path::PathBuf> = ours.iter().map(|f| root.join(&f.rel)).collect();
        paths.sort();
        bank.sort();
        assert_eq!(paths, bank);
        assert!(ours
            .iter()
            .all(|f| f.meta.as_ref().is_some_and(|m| m.is_file())));
        assert!(ours.iter().any(|f| f.rel == "sub/README.md"));
        // without their stats: the same files, and no stat (no symlink here is followed: each
        // leads out of the bank or to a file the walk reaches by its own path)
        let mut unstated: Vec<StatedFile> = lesson_paths(root, &exclude);
        let rels = |files: &mut Vec<StatedFile>| {
            files.sort_by(|a, b| a.rel.cmp(&b.rel));
            files.iter().map(|f| f.rel.clone()).collect::<Vec<_>>()
        };
        assert_eq!(rels(&mut unstated), rels(&mut ours.clone()));
        assert!(unstated.iter().all(|f| f.meta.is_none()));
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
