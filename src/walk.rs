//! Finding a bank's lesson files: one walk for every reader of the bank.
//!
//! Rules: below the root, names starting with `.` or `_` are skipped (`_index.md`, `_archive/`,
//! `_log/`, `.lesson/`), and so is a top-level `templates/` directory; symlinks are followed
//! (a link back to an ancestor directory is reported, not followed); files ending in `.md` are
//! lessons unless an `exclude` glob of `lesson.toml` matches their path relative to the root.
//!
//! The walk costs what `find` costs: `read_dir` gives each entry's type without a `stat`, so
//! only directories and symlinks are stat-ed, and names are compared as bytes, never parsed
//! into path components.

use std::fs::{DirEntry, Metadata};
use std::path::{Path, PathBuf};

use globset::GlobSet;

/// A place the walk could not read, or a symlink loop it did not follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkProblem {
    /// The entry (file, directory or link) concerned.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
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
    let root_len = root.join("x").as_os_str().len() - 1;
    let mut w = Walker {
        exclude,
        root_len,
        found,
        problems,
        ancestors,
    };
    w.dir(root, 1);
}

struct Walker<'a> {
    exclude: &'a GlobSet,
    root_len: usize,
    found: &'a mut dyn FnMut(Found),
    problems: &'a mut Vec<WalkProblem>,
    ancestors: Vec<DirId>,
}

impl Walker<'_> {
    fn problem(&mut self, path: PathBuf, err: &std::io::Error) {
        self.problems.push(WalkProblem {
            path,
            message: err.to_string(),
        });
    }

    fn dir(&mut self, dir: &Path, depth: usize) {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) => return self.problem(dir.to_path_buf(), &err),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    self.problem(dir.to_path_buf(), &err);
                    continue;
                }
            };
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            if name.starts_with(b".") || name.starts_with(b"_") {
                continue;
            }
            let file_type = match entry.file_type() {
                Ok(t) => t,
                Err(err) => {
                    self.problem(entry.path(), &err);
                    continue;
                }
            };
            let path = entry.path();
            let (is_dir, is_file, followed) = if file_type.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) => (m.is_dir(), m.is_file(), Some(m)),
                    Err(err) => {
                        self.problem(path, &err);
                        continue;
                    }
                }
            } else {
                (file_type.is_dir(), file_type.is_file(), None)
            };
            if is_dir {
                if depth == 1 && name == b"templates" {
                    continue;
                }
                let meta = match followed {
                    Some(m) => Some(m),
                    None => std::fs::metadata(&path).ok(),
                };
                let Some(id) = dir_id(&path, meta.as_ref()) else {
                    continue;
                };
                if self.ancestors.contains(&id) {
                    self.problems.push(WalkProblem {
                        path,
                        message: "symlink loop; not followed".to_string(),
                    });
                    continue;
                }
                self.ancestors.push(id);
                self.dir(&path, depth + 1);
                self.ancestors.pop();
            } else if is_file && name.ends_with(b".md") && name.len() > 3 {
                let found = Found {
                    path,
                    root_len: self.root_len,
                    how: match followed {
                        Some(m) => How::Followed(m),
                        None => How::Entry(entry),
                    },
                };
                if !self.exclude.is_empty() && self.exclude.is_match(found.rel()) {
                    continue;
                }
                (self.found)(found);
            }
        }
    }
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
}
