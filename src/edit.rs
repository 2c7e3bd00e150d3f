//! The one door for writes: atomic replacement inside the bank, and the bank's lock.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Directory (inside the bank, git-ignored) for local state: lock, index cache.
pub const STATE_DIR: &str = ".lesson";

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
    let target = parent_real.join(name);
    if target
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(outside());
    }
    Ok(target)
}

/// Write `contents` to `path` atomically: a temp file in the same directory, fsync, rename.
/// `path` must lie inside `bank`.
pub fn write_atomic(bank: &Path, path: &Path, contents: &[u8]) -> Result<(), EditError> {
    let target = checked_target(bank, path)?;
    let dir = target.parent().expect("checked target has a parent");
    let mut builder = tempfile::Builder::new();
    builder.prefix(".lesson-tmp-");
    #[cfg(unix)]
    {
        // a new file gets the mode any editor would give it (0666 less the umask), not 0600
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(io(dir))?;
    tmp.write_all(contents).map_err(io(path))?;
    tmp.as_file().sync_all().map_err(io(path))?;
    if let Ok(meta) = std::fs::metadata(&target) {
        // keep the mode of the file we replace
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(&target).map_err(|e| EditError::Io {
        path: path.display().to_string(),
        source: e.error,
    })?;
    Ok(())
}

/// The bank's cross-process lock, held for the duration of a read-modify-write.
pub struct BankLock {
    lock: fd_lock::RwLock<File>,
}

impl BankLock {
    /// Open `.lesson/lock` (creating `.lesson/` and a `.gitignore` for it on first use).
    pub fn open(bank: &Path) -> Result<BankLock, EditError> {
        let dir = bank.join(STATE_DIR);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(BankLock {
            lock: fd_lock::RwLock::new(file),
        })
    }

    /// Block until the lock is held exclusively, then run `f`.
    pub fn with<T>(&mut self, f: impl FnOnce() -> T) -> Result<T, EditError> {
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
