//! A [`Retriever`] that a long-lived process (`lesson mcp`, an embedding runtime) keeps current
//! with its own file-system watcher, so that a search costs no stat walk of the bank.
//!
//! **A barrier makes it exact.** Events are queued by the kernel when a change is made, but
//! reach the process later, through the watcher's thread. So before each search
//! ([`Follower::sync`]) the follower writes a counter into its own file in `.lesson/`
//! (`follow-<pid>-<n>.sync`) and waits for that write's event: events of one watcher come in
//! the order the kernel queued them, so every change made before the sync began (by another
//! `lesson mcp`, `lesson record`, an editor, `git checkout`) has been received by then. The
//! paths they name are checked as `lesson watch` checks them ([`Retriever::refresh_paths`]; a
//! full stat walk on an overflow, a new or vanished directory, a large batch; the index opened
//! again when `lesson.toml` changed). No event: nothing is read.
//!
//! This holds where the events of one watcher are ordered: inotify, on Linux. Elsewhere, and
//! whenever the watcher cannot start or a barrier does not come back in time, the follower
//! checks the files before each search as `lesson search` does ([`Retriever::keep_fresh`]),
//! and tries to follow again a little later.
//!
//! The ranking's recency comes from git history, which moves without any lesson file
//! changing: the follower reads it again when the repository's `HEAD` or its reflog changed.
//!
//! A follower killed without its `Drop` leaves its sync file behind; the next follower to
//! start removes those whose owner is gone (each is locked while its owner lives).

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::edit::STATE_DIR;
use crate::retrieve::{Freshness, RetrieveError, Retriever};

use super::{is_read, watch_dir, watch_tree, Named, Pending};

/// How long a barrier may take to come back before the follower checks the files instead.
const BARRIER_BOUND: Duration = Duration::from_secs(2);
/// How long after following stopped the follower tries again.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// A sync file younger than this is never removed as a leftover (its owner may not have
/// locked it yet).
const LEFTOVER_AGE: Duration = Duration::from_secs(60);
/// The name of sync files: `follow-<pid>-<n>.sync` in `.lesson/`.
const SYNC_PREFIX: &str = "follow-";
const SYNC_SUFFIX: &str = ".sync";

/// How [`Follower::sync`] made the index current.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// No change since the last sync: nothing was read.
    Unchanged,
    /// The files the events named were checked (this many paths).
    Paths(usize),
    /// The whole bank was walked (why).
    Walked(String),
    /// Not following (why): the files were checked as `lesson search` checks them.
    Checked(String, Freshness),
}

/// A retriever kept current by its own watcher (see the module docs).
#[derive(Debug)]
pub struct Follower {
    root: PathBuf,
    retriever: Retriever,
    live: Option<Live>,
    /// Why the follower is not following, and since when.
    stopped: Option<(String, Instant)>,
    head: HeadStamp,
}

impl Follower {
    /// Open the bank at `root` ([`Retriever::open`]: the files are checked once) and start
    /// following it. A watcher that cannot start is no error: the follower checks the files
    /// before each search instead ([`Follower::following`] says why).
    pub fn open(root: &Path) -> Result<Follower, RetrieveError> {
        // watching first: what changes during the first check comes as events afterwards
        let live = Live::start(root);
        let retriever = Retriever::open(root)?;
        let (live, stopped) = match live {
            Ok(live) => (Some(live), None),
            Err(why) => (None, Some((why, Instant::now()))),
        };
        Ok(Follower {
            root: root.to_path_buf(),
            retriever,
            live,
            stopped,
            head: HeadStamp::of(root),
        })
    }

    /// `Ok` when following, else why not (the files are then checked before each search).
    pub fn following(&self) -> Result<(), &str> {
        match &self.stopped {
            None => Ok(()),
            Some((why, _)) => Err(why),
        }
    }

    /// The retriever, as current as the last [`Follower::sync`] made it.
    pub fn retriever(&mut self) -> &mut Retriever {
        &mut self.retriever
    }

    /// Make the index as current as a new `lesson search` process would find the bank: apply
    /// every change made before this call (see the module docs).
    pub fn sync(&mut self) -> Result<Synced, RetrieveError> {
        if self.live.is_none() {
            self.restart()?;
        }
        let synced = match self.live.as_mut().map(Live::barrier) {
            Some(Ok(pending)) => self.apply(pending)?,
            Some(Err(why)) => {
                // events may have been lost: check the files, follow anew later
                self.live = None;
                self.stopped = Some((why.clone(), Instant::now()));
                self.retriever.refresh()?;
                Synced::Walked(why)
            }
            None => {
                let why = self.stopped.as_ref().map_or("", |(w, _)| w).to_string();
                let freshness = self.retriever.keep_fresh()?;
                Synced::Checked(why, freshness)
            }
        };
        let head = HeadStamp::of(&self.root);
        if head != self.head {
            self.head = head;
            self.retriever.refresh_provenance();
        }
        Ok(synced)
    }

    /// Follow again when following stopped long enough ago; the files are checked in full
    /// since events may have been missed meanwhile.
    fn restart(&mut self) -> Result<(), RetrieveError> {
        let due = self
            .stopped
            .as_ref()
            .is_none_or(|(_, at)| at.elapsed() >= RETRY_AFTER);
        if !due {
            return Ok(());
        }
        match Live::start(&self.root) {
            Ok(live) => {
                self.live = Some(live);
                self.stopped = None;
                self.retriever.refresh()?;
            }
            Err(why) => self.stopped = Some((why, Instant::now())),
        }
        Ok(())
    }

    /// Apply the changes the events named.
    fn apply(&mut self, pending: Pending) -> Result<Synced, RetrieveError> {
        let live = self.live.as_mut().expect("following");
        if pending.is_empty() {
            return Ok(Synced::Unchanged);
        }
        let named = Named::sort(&live.real_root, pending, &self.retriever);
        let mut warnings = Vec::new();
        for dir in &named.watch {
            watch_dir(live.backend.as_mut(), &mut live.watched, dir, &mut warnings);
        }
        for dir in &named.unwatch {
            live.watched.remove(dir);
        }
        if let Some(why) = warnings.into_iter().next() {
            // a directory not watched: its changes would go unseen
            self.live = None;
            self.stopped = Some((why.clone(), Instant::now()));
            self.retriever.refresh()?;
            return Ok(Synced::Walked(why));
        }
        if let Some(why) = named.reopen {
            self.retriever = Retriever::open(&self.root)?;
            return Ok(Synced::Walked(why));
        }
        if let Some(why) = named.walk {
            self.retriever.refresh()?;
            return Ok(Synced::Walked(why));
        }
        if named.lessons.is_empty() {
            return Ok(Synced::Unchanged);
        }
        self.retriever.refresh_paths(&named.lessons)?;
        Ok(Synced::Paths(named.lessons.len()))
    }
}

/// A running watcher and its sync file.
struct Live {
    real_root: PathBuf,
    backend: Box<dyn notify::Watcher + Send>,
    watched: HashSet<PathBuf>,
    rx: Receiver<notify::Result<notify::Event>>,
    sync: SyncFile,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("real_root", &self.real_root)
            .field("sync", &self.sync.path)
            .finish_non_exhaustive()
    }
}

impl Live {
    /// Start watching; `Err` says why following is not possible.
    fn start(root: &Path) -> Result<Live, String> {
        if !cfg!(target_os = "linux") {
            return Err("events are ordered only with inotify (Linux)".into());
        }
        let real_root = root
            .canonicalize()
            .map_err(|e| format!("{}: {e}", root.display()))?;
        let sync = SyncFile::create(&real_root)?;
        let (tx, rx) = mpsc::channel();
        let handler = move |event: notify::Result<notify::Event>| {
            // reads (every search's) are not changes
            if !event.as_ref().is_ok_and(is_read) {
                let _ = tx.send(event);
            }
        };
        let mut backend: Box<dyn notify::Watcher + Send> = Box::new(
            <notify::RecommendedWatcher as notify::Watcher>::new(handler, super::backend_config())
                .map_err(|e| format!("cannot watch: {e}"))?,
        );
        let mut watched = HashSet::new();
        let mut warnings = Vec::new();
        watch_tree(backend.as_mut(), &real_root, &mut watched, &mut warnings)
            .map_err(|e| format!("cannot watch {}: {e}", real_root.display()))?;
        if let Some(w) = warnings.into_iter().next() {
            return Err(w);
        }
        let mut live = Live {
            real_root,
            backend,
            watched,
            rx,
            sync,
        };
        // the first barrier proves the events come
        live.barrier()?;
        Ok(live)
    }

    /// Write the sync file and collect every event until its own: all the changes made before
    /// this call. `Err` when it does not come back in time or the watcher failed.
    fn barrier(&mut self) -> Result<Pending, String> {
        self.sync.bump()?;
        let mut pending = Pending::default();
        let until = Instant::now() + BARRIER_BOUND;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Ok(event)) if event.paths.contains(&self.sync.path) => return Ok(pending),
                Ok(Ok(event)) => pending.add(Ok(event)),
                // a watch limit reached, a read failure: events may be missing from now on
                Ok(Err(e)) => return Err(format!("the watcher reported: {e}")),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "the watcher did not answer within {} s",
                        BARRIER_BOUND.as_secs()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => return Err("the watcher stopped".into()),
            }
        }
    }
}

/// This follower's file in `.lesson/`: locked while it lives, written at each barrier,
/// removed when dropped.
struct SyncFile {
    path: PathBuf,
    file: File,
    /// Holds the lock that tells a live owner from a leftover.
    _lock: fd_lock::RwLock<File>,
    count: u64,
}

impl SyncFile {
    fn create(real_root: &Path) -> Result<SyncFile, String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = real_root.join(STATE_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        remove_leftovers(&dir);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(
            "{SYNC_PREFIX}{}-{n}{SYNC_SUFFIX}",
            std::process::id()
        ));
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = File::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&path)
            .map_err(fail)?;
        let mut lock = fd_lock::RwLock::new(file.try_clone().map_err(fail)?);
        match lock.try_write() {
            // held until the file closes (when this drops)
            Ok(guard) => std::mem::forget(guard),
            Err(e) => return Err(fail(e)),
        }
        Ok(SyncFile {
            path,
            file,
            _lock: lock,
            count: 0,
        })
    }

    /// Write the next count: one modify event.
    fn bump(&mut self) -> Result<(), String> {
        self.count += 1;
        write_at(&self.file, &self.count.to_le_bytes())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

impl Drop for SyncFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, 0)
}

#[cfg(not(unix))]
fn write_at(mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, Write};
    file.seek(std::io::SeekFrom::Start(0))?;
    file.write_all(bytes)
}

/// Remove the sync files of followers that are gone: old enough and not locked.
fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(SYNC_PREFIX) && name.ends_with(SYNC_SUFFIX)) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= LEFTOVER_AGE);
        if !old {
            continue;
        }
        let Ok(file) = File::options().write(true).open(entry.path()) else {
            continue;
        };
        let mut lock = fd_lock::RwLock::new(file);
        if let Ok(guard) = lock.try_write() {
            let _ = std::fs::remove_file(entry.path());
            drop(guard);
        };
    }
}

/// What says the repository's `HEAD` moved: the stat of its `HEAD` file and of its reflog
/// (a commit on the current branch changes only the reflog and the branch's ref).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct HeadStamp(Vec<Option<(u64, std::time::SystemTime)>>);

impl HeadStamp {
    fn of(root: &Path) -> HeadStamp {
        let Some(git_dir) = git_dir(root) else {
            return HeadStamp::default();
        };
        HeadStamp(
            ["HEAD", "logs/HEAD"]
                .iter()
                .map(|f| {
                    std::fs::metadata(git_dir.join(f))
                        .ok()
                        .and_then(|m| Some((m.len(), m.modified().ok()?)))
                })
                .collect(),
        )
    }
}

/// The git directory of the repository holding the bank, looked up once per process and bank.
fn git_dir(root: &Path) -> Option<PathBuf> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static KNOWN: OnceLock<Mutex<HashMap<PathBuf, Option<PathBuf>>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    let mut known = known.lock().unwrap_or_else(|p| p.into_inner());
    known
        .entry(root.to_path_buf())
        .or_insert_with(|| {
            crate::git::repo::BankRepo::open(root)
                .ok()
                .map(|r| r.repo.path().to_path_buf())
        })
        .clone()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn lesson(slug: &str, title: &str) -> String {
        format!(
            "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: When {title}\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n"
        )
    }

    fn bank() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        // short slugs are errors (S006), which would hold every lesson back
        std::fs::write(
            dir.path().join("lesson.toml"),
            "[lint]\nrules = { invalid-slug = \"off\" }\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("topic")).unwrap();
        std::fs::write(
            dir.path().join("alpha.md"),
            lesson("alpha", "Frobnicate the widget twice."),
        )
        .unwrap();
        dir
    }

    fn found(f: &mut Follower, word: &str) -> Vec<String> {
        let req = crate::retrieve::Request::new(word).k(10);
        f.retriever()
            .search(&req)
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.slug)
            .collect()
    }

    #[test]
    fn a_search_sees_every_change_made_before_it_without_a_walk() {
        let dir = bank();
        let root = dir.path();
        let mut f = Follower::open(root).unwrap();
        assert_eq!(f.following(), Ok(()));
        assert_eq!(f.sync().unwrap(), Synced::Unchanged);
        assert_eq!(found(&mut f, "widget"), ["alpha"]);

        // a new lesson in a subdirectory, written as another process would: seen at once
        std::fs::write(
            root.join("topic/beta.md"),
            lesson("beta", "Polish the widget gently."),
        )
        .unwrap();
        assert_eq!(f.sync().unwrap(), Synced::Paths(1));
        assert_eq!(f.retriever().last_refresh().files, 1, "only the named path");
        assert_eq!(found(&mut f, "polish"), ["beta"]);

        // an atomic save (temp file renamed over the lesson) changes its text
        let tmp = root.join("topic/.beta.md.tmp");
        std::fs::write(&tmp, lesson("beta", "Sand the gadget gently.")).unwrap();
        std::fs::rename(&tmp, root.join("topic/beta.md")).unwrap();
        assert!(matches!(f.sync().unwrap(), Synced::Paths(_)));
        assert!(found(&mut f, "polish").is_empty());
        assert_eq!(found(&mut f, "gadget"), ["beta"]);

        // a deletion drops it
        std::fs::remove_file(root.join("alpha.md")).unwrap();
        f.sync().unwrap();
        assert!(found(&mut f, "frobnicate").is_empty());

        // a new directory with a lesson in it: the whole bank is walked
        std::fs::create_dir(root.join("fresh")).unwrap();
        std::fs::write(
            root.join("fresh/gamma.md"),
            lesson("gamma", "Calibrate the gizmo."),
        )
        .unwrap();
        assert!(matches!(f.sync().unwrap(), Synced::Walked(_)));
        assert_eq!(found(&mut f, "gizmo"), ["gamma"]);
        // and followed from then on
        std::fs::write(
            root.join("fresh/delta.md"),
            lesson("delta", "Tune the doohickey."),
        )
        .unwrap();
        assert_eq!(f.sync().unwrap(), Synced::Paths(1));
        assert_eq!(found(&mut f, "doohickey"), ["delta"]);

        // nothing changed: nothing read
        assert_eq!(f.sync().unwrap(), Synced::Unchanged);
    }

    #[test]
    fn the_sync_file_goes_with_its_follower_and_leftovers_are_swept() {
        let dir = bank();
        let root = dir.path();
        let state = root.join(STATE_DIR);
        let syncs = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(&state)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(SYNC_PREFIX))
                .collect();
            v.sort();
            v
        };
        let f = Follower::open(root).unwrap();
        assert_eq!(syncs().len(), 1);
        // a leftover of a killed follower: unlocked and old
        let leftover = state.join(format!("{SYNC_PREFIX}1-0{SYNC_SUFFIX}"));
        std::fs::write(&leftover, "").unwrap();
        let old = std::time::SystemTime::now() - 2 * LEFTOVER_AGE;
        File::options()
            .write(true)
            .open(&leftover)
            .unwrap()
            .set_modified(old)
            .unwrap();
        // a live follower's file, just as old, stays: it is locked
        let leftover_name = leftover.file_name().unwrap().to_string_lossy().into_owned();
        let mine = state.join(syncs().into_iter().find(|n| *n != leftover_name).unwrap());
        File::options()
            .write(true)
            .open(&mine)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let g = Follower::open(root).unwrap();
        assert!(!leftover.exists());
        assert!(mine.exists());
        assert_eq!(syncs().len(), 2);
        drop(f);
        drop(g);
        assert!(syncs().is_empty());
    }
}
