//! The generation marker: how a running watcher tells `lesson search` that the persisted index
//! is current, so that a search can skip its stat walk.
//!
//! - While it runs, a watcher holds an exclusive lock on `.lesson/watch.lock` (released by the
//!   kernel when the process ends, however it ends: Ctrl-C, SIGKILL, a crash).
//! - After each batch is applied, it writes `.lesson/watch.json` (atomically): its pid and the
//!   [`Identity`] of the index it holds, which is the index on disk.
//! - A search trusts the index without a walk only when the lock is held **and** the index it
//!   loaded has the vouched identity ([`vouched`], used by
//!   [`Retriever::open_fast`](crate::retrieve::Retriever::open_fast)). Any other state (no
//!   watcher, a killed one, an index another process wrote since) falls back to the walk.
//!
//! Order matters. A search looks at the lock before it reads the marker, and a starting
//! watcher removes any marker before it takes the lock: so a marker left by a watcher that
//! died is never read as the word of a live one. A marker removed under a live watcher (a
//! second `lesson watch` starting, a user) only costs searches their walk until the watcher
//! publishes again, which it does as soon as it sees the marker go.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::segment::{Kind, Segment};
use super::store::{state_path, BASE_FILE, DELTA_FILE};
use crate::edit::{self, EditError, STATE_DIR};

/// Which index a process holds: its base (id and checksum), its delta's checksum and the
/// generation. Any write changes it, so two processes that report the same identity hold the
/// same bytes: what a watcher vouches for (`lesson watch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Identity {
    /// The base's id.
    pub index_id: u64,
    /// The highest generation of base and delta.
    pub generation: u64,
    /// The base's stored checksum.
    pub base: u64,
    /// The delta's stored checksum, when a delta patches the base.
    pub delta: Option<u64>,
}

impl Identity {
    /// The identity of the index in `root`'s `.lesson/`, from the two files' headers alone
    /// (`None` without a base). A delta counts when it names the base, as [`Index::new`](super::index::Index::new)
    /// pairs them.
    pub fn on_disk(root: &Path) -> Option<Identity> {
        let (kind, base, base_sum) = Segment::peek(&state_path(root, BASE_FILE))?;
        if kind != Kind::Base {
            return None;
        }
        let delta = Segment::peek(&state_path(root, DELTA_FILE))
            .filter(|(kind, d, _)| *kind == Kind::Delta && d.index_id == base.index_id);
        Some(Identity {
            index_id: base.index_id,
            generation: delta.map_or(base.generation, |(_, d, _)| {
                d.generation.max(base.generation)
            }),
            base: base_sum,
            delta: delta.map(|(_, _, sum)| sum),
        })
    }
}

pub use crate::layout::WATCH_LOCK_FILE as LOCK_FILE;
pub use crate::layout::WATCH_MARKER_FILE as MARKER_FILE;

/// What `.lesson/watch.json` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vouch {
    /// The watcher's process id (for people; the lock is what counts).
    pub pid: u32,
    /// The index the watcher holds and vouches is current, generation included.
    #[serde(flatten)]
    pub index: Identity,
    /// Whether the watcher checked every byte of that index against its checksums
    /// ([`Index::check_all`](super::index::Index::check_all)): a search that loads the same
    /// identity then checks none of them again. Absent (a marker of an older `lesson`): no.
    #[serde(default)]
    pub checked: bool,
}

/// The marker could not be taken or written.
#[derive(Debug, thiserror::Error)]
pub enum MarkerError {
    /// Another watcher holds the lock.
    #[error("another `lesson watch`{} is watching {bank}", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Busy {
        /// The bank.
        bank: String,
        /// The other watcher's pid, when its marker says.
        pid: Option<u32>,
    },
    /// The lock file could not be opened or locked.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The marker could not be written.
    #[error(transparent)]
    Write(#[from] EditError),
}

/// A watcher's hold on a bank: the lock, and the marker it publishes. Dropping it removes the
/// marker, then releases the lock.
#[derive(Debug)]
pub struct Marker {
    root: PathBuf,
    lock: Option<fd_lock::RwLock<File>>,
}

/// `.lesson/<name>` of a bank.
fn state(root: &Path, name: &str) -> PathBuf {
    root.join(STATE_DIR).join(name)
}

impl Marker {
    /// Take the bank's watcher lock (creating `.lesson/` if needed), removing any marker
    /// first. Fails with [`MarkerError::Busy`] when another watcher holds the lock (retried
    /// for a moment: a search checking the lock holds it shared for an instant).
    pub fn acquire(root: &Path) -> Result<Marker, MarkerError> {
        let dir = root.join(STATE_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| MarkerError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let other = read(root).map(|v| v.pid);
        withdraw(root);
        let path = state(root, LOCK_FILE);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| MarkerError::Io {
                path: path.display().to_string(),
                source,
            })?;
        let mut lock = fd_lock::RwLock::new(file);
        for attempt in 0.. {
            match lock.try_write() {
                Ok(guard) => {
                    // held until the file closes: when the marker drops or the process ends
                    std::mem::forget(guard);
                    break;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock && attempt < 50 => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    return Err(MarkerError::Busy {
                        bank: root.display().to_string(),
                        pid: other,
                    })
                }
                Err(source) => {
                    return Err(MarkerError::Io {
                        path: path.display().to_string(),
                        source,
                    })
                }
            }
        }
        Ok(Marker {
            root: root.to_path_buf(),
            lock: Some(lock),
        })
    }

    /// Vouch for `index`: write the marker (atomically). Call it only once the index on disk
    /// has this identity and reflects every change seen so far.
    pub fn publish(&self, index: Identity, checked: bool) -> Result<(), MarkerError> {
        let vouch = Vouch {
            pid: std::process::id(),
            index,
            checked,
        };
        let mut json = serde_json::to_string(&vouch).expect("a vouch serialises");
        json.push('\n');
        edit::write_atomic(&self.root, &state(&self.root, MARKER_FILE), json.as_bytes())?;
        Ok(())
    }

    /// Stop vouching (remove the marker) but keep the lock.
    pub fn withdraw(&self) {
        withdraw(&self.root);
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        withdraw(&self.root);
        // closing the file releases the lock
        drop(self.lock.take());
    }
}

fn withdraw(root: &Path) {
    let _ = std::fs::remove_file(state(root, MARKER_FILE));
}

/// The marker as written, whether or not its watcher still runs.
pub fn read(root: &Path) -> Option<Vouch> {
    let text = std::fs::read_to_string(state(root, MARKER_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether a watcher holds the bank's lock now.
pub fn watcher_running(root: &Path) -> bool {
    let Ok(file) = File::open(state(root, LOCK_FILE)) else {
        return false;
    };
    let lock = fd_lock::RwLock::new(file);
    let held = matches!(lock.try_read(), Err(e) if e.kind() == ErrorKind::WouldBlock);
    held
}

/// The index identity a live watcher vouches for: `None` when no watcher holds the lock, or it
/// has published nothing (yet). The lock is looked at first (see the module docs).
pub fn vouched(root: &Path) -> Option<Identity> {
    vouch(root).map(|v| v.index)
}

/// A live watcher's marker: [`vouched`] with whether it checked the index's bytes.
pub fn vouch(root: &Path) -> Option<Vouch> {
    if !watcher_running(root) {
        return None;
    }
    read(root)
}
