//! The one door for writes: atomic replacement inside the bank, appends to ledgers, the bank's
//! lock, and span edits of a lesson's frontmatter ([`frontmatter`]).
//!
//! Every writer holds the bank's lock ([`BankLock`]) for its whole read-modify-write. A writer
//! killed between creating its temp file and renaming it leaves a `.lesson-tmp-*` file behind;
//! the next writer removes such leftovers as soon as it holds the lock (no live writer can own
//! one then), so they never accumulate and never reach git.

mod fault;
pub mod frontmatter;
pub mod journal;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub use crate::layout::STATE_DIR;
/// The name prefix of the temp files [`write_atomic`] renames into place.
pub const TEMP_PREFIX: &str = ".lesson-tmp-";

/// A write was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The target resolves outside the bank (a `../` slug, a symlink pointing elsewhere).
    #[error("refusing to write {path}: it is outside the bank {bank}")]
    OutsideBank {
        /// The path asked for.
        path: String,
        /// The bank root.
        bank: String,
    },
    /// The target lies in another bank (a directory below the root holding its own
    /// `lesson.toml`): an included bank is read, never written through the bank in front.
    #[error("refusing to write {path}: it is in the bank {other}, not in {bank}; run the command there (--dir {other}) or `lesson promote` into it")]
    OtherBank {
        /// The path asked for.
        path: String,
        /// The bank it lies in.
        other: String,
        /// The bank written.
        bank: String,
    },
    /// An I/O error, with the path involved.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EditError + '_ {
    move |source| EditError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// An I/O error without the temp file's name that `tempfile` adds to it ("at path
/// .lesson-tmp-…"): the user knows the file they asked to write, not our temp file.
fn plain(e: std::io::Error) -> std::io::Error {
    // tempfile wraps the OS error in one of its own that hides its code: keep its kind
    match (e.raw_os_error(), e.kind()) {
        (None, kind) if kind != std::io::ErrorKind::Other => std::io::Error::from(kind),
        _ => e,
    }
}

/// Resolve `path` for writing and check that it stays inside `bank`.
///
/// The parent directory must exist inside the bank; an existing target must not be a symlink
/// (replacing it would write through to wherever it points).
pub fn checked_target(bank: &Path, path: &Path) -> Result<PathBuf, EditError> {
    let outside = || EditError::OutsideBank {
        path: path.display().to_string(),
        bank: bank.display().to_string(),
    };
    let bank_real = bank.canonicalize().map_err(io(bank))?;
    let name = path.file_name().ok_or_else(outside)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent_real = parent.canonicalize().map_err(io(parent))?;
    if !parent_real.starts_with(&bank_real) {
        return Err(outside());
    }
    not_in_another_bank(bank, &bank_real, &parent_real, path)?;
    let target = parent_real.join(name);
    if target
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(outside());
    }
    Ok(target)
}

/// Refuse `path`, in the directory `dir_real` inside the bank, when a directory between the
/// bank's root and it holds a `lesson.toml`: it is then in another bank (an included bank
/// nested in this one's tree is read, never written through it).
fn not_in_another_bank(
    bank: &Path,
    bank_real: &Path,
    dir_real: &Path,
    path: &Path,
) -> Result<(), EditError> {
    match dir_real
        .ancestors()
        .take_while(|a| *a != bank_real)
        .find(|a| a.join(crate::layout::CONFIG_FILE).is_file())
    {
        Some(other) => Err(EditError::OtherBank {
            path: path.display().to_string(),
            other: other.display().to_string(),
            bank: bank.display().to_string(),
        }),
        None => Ok(()),
    }
}

/// Check every path a command will write before it writes the first: a refused target (a
/// symlink out of the bank, a `../` path) refuses the whole command with nothing written.
pub fn check_targets<'a>(
    bank: &Path,
    paths: impl IntoIterator<Item = &'a Path>,
) -> Result<(), EditError> {
    let bank_real = bank.canonicalize().map_err(io(bank))?;
    for path in paths {
        if path.parent().is_some_and(Path::exists) {
            checked_target(bank, path)?;
            continue;
        }
        // a file in a directory the write will create (`_log/` of a bank without ledgers):
        // the nearest directory that exists must be inside the bank
        let existing = path.ancestors().skip(1).find(|a| a.exists());
        let real = existing.and_then(|a| a.canonicalize().ok());
        let inside = real
            .as_ref()
            .is_some_and(|real| real.starts_with(&bank_real));
        if let Some(real) = real.as_ref().filter(|_| inside) {
            not_in_another_bank(bank, &bank_real, real, path)?;
        }
        if !inside {
            return Err(EditError::OutsideBank {
                path: path.display().to_string(),
                bank: bank.display().to_string(),
            });
        }
    }
    Ok(())
}

/// Write `contents` to `path` atomically: a temp file in the same directory, fsync, rename.
/// `path` must lie inside `bank`.
pub fn write_atomic(bank: &Path, path: &Path, contents: &[u8]) -> Result<(), EditError> {
    write_atomic_with(bank, path, contents, true)
}

/// [`write_atomic`], the temp file fsynced before the rename only when `durable`. Readers
/// still see the old file or the new one whole; after a crash the new one may have lost its
/// bytes. For the retrieval index: a cache whose every open checks its checksums and rebuilds
/// it from the files when they fail, so such a loss costs a rebuild, while waiting for the disk
/// would cost every build and patch.
pub fn write_atomic_with(
    bank: &Path,
    path: &Path,
    contents: &[u8],
    durable: bool,
) -> Result<(), EditError> {
    let target = checked_target(bank, path)?;
    let dir = target.parent().expect("checked target has a parent");
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    #[cfg(unix)]
    {
        // a new file gets the mode any editor would give it (0666 less the umask), not 0600
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(|e| io(path)(plain(e)))?;
    fault::point("write_atomic: temp file created");
    tmp.as_file_mut().write_all(contents).map_err(io(path))?;
    fault::point("write_atomic: temp file written");
    if durable {
        tmp.as_file().sync_all().map_err(|e| io(path)(plain(e)))?;
    }
    fault::point("write_atomic: temp file synced");
    let existed = match std::fs::metadata(&target) {
        Ok(meta) => {
            // keep the mode of the file we replace
            let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
            true
        }
        Err(_) => false,
    };
    tmp.persist(&target).map_err(|e| EditError::Io {
        path: path.display().to_string(),
        source: plain(e.error),
    })?;
    fault::point("write_atomic: renamed into place");
    journal::note(|| journal::Change::Written {
        path: path.to_path_buf(),
        created: !existed,
    });
    Ok(())
}

/// Append whole lines to the file at `path` inside `bank` (created when missing): one `write`
/// with `O_APPEND`, then fsync. When the file does not end with a line break (an earlier append
/// was cut short), a `\n` goes first, so the new lines start on a line of their own. Returns
/// whether that repair was needed. The caller holds the bank's lock.
pub fn append(bank: &Path, path: &Path, lines: &[u8]) -> Result<bool, EditError> {
    append_with(bank, path, lines, true)
}

/// [`append`], fsynced only when `durable`: the retrieval log (`crate::usage`) is appended on
/// the search path, where a lost line costs one count and waiting for the disk costs every
/// search.
pub fn append_with(
    bank: &Path,
    path: &Path,
    lines: &[u8],
    durable: bool,
) -> Result<bool, EditError> {
    let target = checked_target(bank, path)?;
    let created = !target.exists();
    let mut file = File::options()
        .read(true)
        .append(true)
        .create(true)
        .open(&target)
        .map_err(io(path))?;
    let len = file.metadata().map_err(io(path))?.len();
    let mut repaired = false;
    if len > 0 {
        let mut last = [0u8];
        file.seek(SeekFrom::End(-1)).map_err(io(path))?;
        file.read_exact(&mut last).map_err(io(path))?;
        repaired = last[0] != b'\n';
    }
    let mut buf = Vec::with_capacity(lines.len() + 1);
    if repaired {
        buf.push(b'\n');
    }
    buf.extend_from_slice(lines);
    fault::point("append: before the write");
    if buf.len() > 1 {
        // a write torn in the middle of a line (what a kill during a large write can leave)
        fault::point_with("append: half a line written", || {
            let _ = file.write_all(&buf[..buf.len() / 2]);
        });
    }
    file.write_all(&buf).map_err(io(path))?;
    fault::point("append: written");
    if durable {
        file.sync_data().map_err(io(path))?;
    }
    if created {
        sync_dir(target.parent().expect("checked target has a parent"));
    }
    journal::note(|| journal::Change::Appended {
        path: path.to_path_buf(),
        created,
        lines: String::from_utf8_lossy(lines)
            .lines()
            .map(str::to_string)
            .collect(),
    });
    Ok(repaired)
}

/// Move the regular file `from` to `to` (a new name), both inside `bank`: one rename, so the
/// file is at one place or the other, never both, never neither. Refuses to replace an existing
/// file or to move a symlink. The caller holds the bank's lock.
pub fn move_file(bank: &Path, from: &Path, to: &Path) -> Result<(), EditError> {
    let meta = from.symlink_metadata().map_err(io(from))?;
    if !meta.is_file() {
        return Err(EditError::Io {
            path: from.display().to_string(),
            source: std::io::Error::other("not a regular file (a symlink?); move it by hand"),
        });
    }
    let source = checked_target(bank, from)?;
    let target = checked_target(bank, to)?;
    if target.symlink_metadata().is_ok() {
        return Err(EditError::Io {
            path: to.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "already exists; refusing to replace it",
            ),
        });
    }
    fault::point("move_file: before the rename");
    std::fs::rename(&source, &target).map_err(io(from))?;
    fault::point("move_file: renamed");
    for dir in [target.parent(), source.parent()].into_iter().flatten() {
        sync_dir(dir);
    }
    journal::note(|| journal::Change::Moved {
        from: from.to_path_buf(),
        to: to.to_path_buf(),
    });
    Ok(())
}

/// Make a new directory entry durable (best effort; a no-op where directories cannot be opened).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Remove the `.lesson-tmp-*` files a killed writer left in the bank's directories (hidden
/// directories and `_`-prefixed ones below the root are not lesson directories and are
/// skipped). Only call it holding the bank's lock. Returns the files removed.
pub fn remove_leftover_temp_files(bank: &Path) -> Vec<PathBuf> {
    let walker = walkdir::WalkDir::new(bank)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0
                || !e.file_type().is_dir()
                || !(name.starts_with('.') || name.starts_with('_'))
        });
    let mut removed = Vec::new();
    for entry in walker.filter_map(Result::ok) {
        let leftover = entry.file_type().is_file()
            && entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
        if leftover && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path().to_path_buf());
        }
    }
    removed
}

/// The bank's cross-process lock, held for the duration of a read-modify-write.
pub struct BankLock {
    lock: fd_lock::RwLock<File>,
    bank: PathBuf,
}

impl BankLock {
    /// Open `.lesson/lock`, creating `.lesson/` on first use (`lesson init` git-ignores it).
    /// A `.lesson/` or a lock file that resolves outside the bank (a symlink) is refused.
    pub fn open(bank: &Path) -> Result<BankLock, EditError> {
        let dir = bank.join(STATE_DIR);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = checked_target(bank, &dir.join(crate::layout::BANK_LOCK_FILE))?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(BankLock {
            lock: fd_lock::RwLock::new(file),
            bank: bank.to_path_buf(),
        })
    }

    /// Block until the lock is held exclusively, remove temp files killed writers left, then
    /// run `f`.
    pub fn with<T>(&mut self, f: impl FnOnce() -> T) -> Result<T, EditError> {
        let _guard = self.lock.write().map_err(|source| EditError::Io {
            path: STATE_DIR.into(),
            source,
        })?;
        remove_leftover_temp_files(&self.bank);
        Ok(f())
    }

    /// [`BankLock::with`] without the sweep for temp files killed writers left: for writers
    /// whose own temp files live in `.lesson/`, which the sweep never visits (the persisted
    /// index), so that they do not pay a walk of the whole bank for each write.
    pub fn with_unswept<T>(&mut self, f: impl FnOnce() -> T) -> Result<T, EditError> {
        let _guard = self.lock.write().map_err(|source| EditError::Io {
            path: STATE_DIR.into(),
            source,
        })?;
        Ok(f())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_outside_the_bank() {
        let dir = tempfile::tempdir().unwrap();
        let bank = dir.path().join("bank");
        std::fs::create_dir(&bank).unwrap();
        let err = write_atomic(&bank, &bank.join("../x.md"), b"x").unwrap_err();
        assert!(matches!(err, EditError::OutsideBank { .. }));
        assert!(!dir.path().join("x.md").exists());
        write_atomic(&bank, &bank.join("ok.md"), b"ok").unwrap();
        assert_eq!(std::fs::read_to_string(bank.join("ok.md")).unwrap(), "ok");
        let leftovers: Vec<_> = std::fs::read_dir(&bank).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn append_starts_on_a_fresh_line_after_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.jsonl");
        assert!(!append(dir.path(), &path, b"one\n").unwrap());
        std::fs::write(&path, "one\ntw").unwrap();
        assert!(append(dir.path(), &path, b"three\n").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntw\nthree\n");
        assert!(append(dir.path(), &dir.path().join("../x"), b"x\n").is_err());
    }

    #[test]
    fn the_lock_removes_leftover_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let bank = dir.path();
        std::fs::create_dir_all(bank.join("sub")).unwrap();
        std::fs::create_dir_all(bank.join(".git")).unwrap();
        for f in [
            ".lesson-tmp-a1",
            "sub/.lesson-tmp-b2",
            ".git/.lesson-tmp-c3",
            "keep.md",
        ] {
            std::fs::write(bank.join(f), "x").unwrap();
        }
        BankLock::open(bank).unwrap().with(|| ()).unwrap();
        assert!(!bank.join(".lesson-tmp-a1").exists());
        assert!(!bank.join("sub/.lesson-tmp-b2").exists());
        assert!(bank.join(".git/.lesson-tmp-c3").exists());
        assert!(bank.join("keep.md").exists());
    }

    #[cfg(unix)]
    #[test]
    fn new_files_get_the_mode_of_a_plainly_created_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |name: &str| {
            let meta = std::fs::metadata(dir.path().join(name)).unwrap();
            meta.permissions().mode() & 0o777
        };
        std::fs::write(dir.path().join("plain.md"), b"x").unwrap();
        write_atomic(dir.path(), &dir.path().join("new.md"), b"x").unwrap();
        assert_eq!(mode("new.md"), mode("plain.md"));
    }

    #[cfg(unix)]
    #[test]
    fn refuses_to_write_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let bank = dir.path().join("bank");
        std::fs::create_dir(&bank).unwrap();
        std::fs::write(dir.path().join("outside.md"), "keep").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.md"), bank.join("link.md")).unwrap();
        assert!(write_atomic(&bank, &bank.join("link.md"), b"x").is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("outside.md")).unwrap(),
            "keep"
        );
    }
}
