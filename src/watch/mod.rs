//! `lesson watch`: keep a bank's persisted index, its `_index.md` and its lint findings current
//! as files change, and vouch for the index so that `lesson search` can skip its stat walk.
//!
//! **Events are hints; the files are the truth.** The notify callback does nothing but push
//! what it got into a channel. The watcher collects a batch (until the debounce window passes
//! with no new event, or a cap), then re-stats the paths the events named and patches only
//! those ([`Retriever::refresh_paths`]): a path that is gone drops its record whatever the
//! event said (a delete is never dropped), a path that is a file is stat-ed, hashed when its
//! stat changed and parsed when its content did. A full stat walk ([`Retriever::refresh`])
//! reconciles everything instead when the platform asks for a rescan (inotify's queue
//! overflowed), on an event error, on a batch naming more than [`LARGE_BATCH`] paths, and when
//! a directory appears, vanishes or moves (files inside a directory moved in send no events).
//! Editors' atomic saves (a temp file renamed over the lesson) and `git checkout` bursts need no
//! special case: the temp file is not a lesson path, the rename names the lesson, a burst is
//! one batch.
//!
//! **What it writes**: the index in `.lesson/` (as every search does), `_index.md` when its
//! rendering changes (from the index, see [`listing`]), and the marker ([`marker`]). It ignores
//! `.lesson/` but for three hints: a changed index file or a vanished marker make it check that
//! the index on disk is still the one it vouches for, and adopt the disk's (with a walk) when
//! another process replaced it. `.git/` and other hidden or `_`-prefixed directories are not
//! watched at all.
//!
//! **The window**: a change is visible to a vouched search only once its batch is applied, that
//! is the debounce window plus the time to apply it after the last event of a burst. A search
//! in between sees the index as of the previous batch. Without a live watcher (none started,
//! or one killed) a search checks the files itself, as always.

pub mod follow;
pub mod listing;
pub mod serve;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::RecursiveMode;

use crate::bank::{BankError, INDEX_FILE};
use crate::config::CONFIG_FILE;
use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::edit::{self, BankLock, EditError, STATE_DIR};
use crate::index_md::{self, IndexEntry, IndexError};
use crate::retrieve::marker;
use crate::retrieve::store::{self, BASE_FILE, DELTA_FILE};
use crate::retrieve::Identity;
use crate::retrieve::{Refresh, RetrieveError, Retriever};
use crate::source::Source;
use crate::template::Template;
use crate::walk;

pub use crate::retrieve::marker::{Marker, MarkerError};

/// A batch naming more lesson paths than this is reconciled by a full stat walk: cheaper than
/// that many lookups, and the walk is the source of truth.
pub const LARGE_BATCH: usize = 2048;
/// The longest a batch waits for a quiet moment, in debounce windows (and at least a second):
/// a steady stream of events still gets applied.
const CAP_WINDOWS: u32 = 20;

/// How to watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// A batch is applied once no event came for this long.
    pub debounce: Duration,
    /// Poll the file system at this interval instead of using native events.
    pub poll: Option<Duration>,
    /// "Now" for expiry in `_index.md` and lint findings, read at each batch.
    pub clock: crate::bank::Clock,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            debounce: Duration::from_millis(200),
            poll: None,
            clock: crate::bank::Clock::System,
        }
    }
}

/// Watching failed to start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The bank could not be opened or indexed.
    #[error(transparent)]
    Retrieve(#[from] RetrieveError),
    /// The marker could not be taken (another watcher runs) or written.
    #[error(transparent)]
    Marker(#[from] MarkerError),
    /// The file-system watcher could not start.
    #[error("cannot watch {path}: {source}")]
    Notify {
        /// The directory.
        path: String,
        /// The cause.
        source: notify::Error,
    },
    /// `_index.md` could not be rendered.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A file could not be written.
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// What one batch did.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Distinct paths the batch's events named (inside the bank).
    pub paths: usize,
    /// Why the whole bank was walked instead of the named paths, when it was.
    pub reconciled: Option<String>,
    /// What the index refresh did.
    pub refresh: Refresh,
    /// Lesson files whose content was indexed anew (new or changed), relative to the bank.
    pub changed: Vec<String>,
    /// Whether `_index.md` was written.
    pub index_md_written: bool,
    /// Lint findings of the changed files (file rules), by path and position.
    pub diagnostics: Vec<Diagnostic>,
    /// The index generation vouched for after the batch (`None`: not vouching; searches check
    /// the files themselves).
    pub vouched: Option<u64>,
    /// Problems that did not stop the watcher.
    pub warnings: Vec<String>,
}

/// What in a batch may change `_index.md`, in order of the work it calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Listing {
    /// Nothing.
    Unchanged,
    /// The file itself (edited or deleted by someone, or our own write).
    File,
    /// A lesson's listed fields.
    Lessons,
    /// The `_index.md` template.
    Template,
}

enum Message {
    Event(notify::Result<notify::Event>),
    /// A search to answer ([`serve`]), and where the reply goes.
    Query(serve::Query, Sender<serve::Reply>),
    Stop,
}

/// Ends a running [`Watch::run`] from another thread (a signal handler): the batch in
/// progress is applied, then `run` returns.
#[derive(Debug, Clone)]
pub struct Stopper(Sender<Message>);

impl Stopper {
    /// Ask the watcher to stop.
    pub fn stop(&self) {
        let _ = self.0.send(Message::Stop);
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Event(e) => write!(f, "Event({e:?})"),
            Message::Query(q, _) => write!(f, "Query({q:?})"),
            Message::Stop => write!(f, "Stop"),
        }
    }
}

/// The events of one batch, reduced to what the batch needs.
#[derive(Debug, Default)]
struct Pending {
    paths: HashSet<PathBuf>,
    rescan: Option<String>,
}

impl Pending {
    fn add(&mut self, event: notify::Result<notify::Event>) {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                self.rescan
                    .get_or_insert(format!("the watcher reported: {e}"));
                return;
            }
        };
        if event.need_rescan() {
            self.rescan
                .get_or_insert("the file-system events overflowed".to_string());
        }
        if !is_read(&event) {
            self.paths.extend(event.paths);
        }
    }

    fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.rescan.is_none()
    }
}

/// What the paths of a batch of events name, sorted by the work they call for (the
/// watcher's and a [`follow::Follower`]'s alike).
#[derive(Debug, Default)]
struct Named {
    /// Lesson files, relative to the root.
    lessons: Vec<String>,
    /// Why the whole bank must be walked, when it must.
    walk: Option<String>,
    /// Why the index must be opened again (the configuration changed), when it must.
    reopen: Option<String>,
    /// The templates changed.
    template: bool,
    /// `_index.md` changed.
    index_md: bool,
    /// An index file or the marker in `.lesson/` changed.
    state: bool,
    /// Top-level directories to watch (new ones).
    watch: Vec<PathBuf>,
    /// Top-level directories gone (watched again when they come back).
    unwatch: Vec<PathBuf>,
}

impl Named {
    /// Sort the paths of `pending` (absolute, under `real_root`); `retriever` says which
    /// directories held lessons.
    fn sort(real_root: &Path, pending: Pending, retriever: &Retriever) -> Named {
        let mut named = Named {
            walk: pending.rescan,
            ..Named::default()
        };
        for abs in &pending.paths {
            let Ok(rel) = abs.strip_prefix(real_root) else {
                continue;
            };
            let rel = store::relative(Path::new(""), rel);
            let first = rel.split('/').next().unwrap_or_default();
            let single = !rel.contains('/');
            if rel.is_empty() {
                named
                    .walk
                    .get_or_insert("the bank directory changed".into());
            } else if first == STATE_DIR {
                let name = rel.rsplit('/').next().unwrap_or_default();
                named.state |= [BASE_FILE, DELTA_FILE, marker::MARKER_FILE].contains(&name);
            } else if single && rel == CONFIG_FILE {
                named.reopen = Some(format!("{CONFIG_FILE} changed"));
            } else if single && rel == INDEX_FILE {
                named.index_md = true;
            } else if first == crate::layout::TEMPLATES_DIR {
                // the top-level templates/ holds the `_index.md` template (a new one is watched)
                if single && abs.is_dir() {
                    named.watch.push(abs.clone());
                }
                named.template = true;
            } else if rel.split('/').any(hidden) {
                // ledgers, the archive, editors' and our own temp files, .git
            } else if real_root.join(&rel).is_dir() {
                if single {
                    named.watch.push(abs.clone());
                }
                named
                    .walk
                    .get_or_insert(format!("the directory {rel} appeared or changed"));
            } else if walk::is_lesson_path(&rel, retriever.exclude()) {
                named.lessons.push(rel);
            } else if !abs.exists() {
                if single {
                    named.unwatch.push(abs.clone());
                }
                let had_lessons = retriever.index().has_under(&rel).unwrap_or(true);
                if had_lessons {
                    named
                        .walk
                        .get_or_insert(format!("the directory {rel} moved or was removed"));
                }
            }
        }
        if named.lessons.len() > LARGE_BATCH {
            named.walk.get_or_insert(format!(
                "{} lesson files changed at once",
                named.lessons.len()
            ));
        }
        named
    }
}

/// A running watcher over one bank.
pub struct Watch {
    /// The socket searches are answered on, when serving (dropped before the marker: the
    /// socket is removed while the lock is still held).
    #[cfg(unix)]
    server: Option<serve::Server>,
    /// How answers are printed, once serving.
    printer: Option<serve::Printer>,
    root: PathBuf,
    real_root: PathBuf,
    options: Options,
    marker: Marker,
    retriever: Retriever,
    /// Why the next batch must reopen the index with a full check (the last one failed).
    reopen: Option<String>,
    backend: Box<dyn notify::Watcher + Send>,
    watched: HashSet<PathBuf>,
    tx: Sender<Message>,
    rx: Receiver<Message>,
    /// The entries `_index.md` was last rendered from, and the text written or found.
    listing: Option<(Vec<IndexEntry>, String)>,
    /// The index could not be written (said once, until it can again).
    unwritable: bool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("root", &self.root)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Start watching the bank at `root`: take the marker (failing when another watcher
    /// runs), start the file-system watcher, bring the index and `_index.md` up to date with a
    /// full check, and vouch for the index. Events from the start on are kept for
    /// [`Watch::run`], so nothing that changes during the first check is missed.
    pub fn start(root: &Path, options: Options) -> Result<(Watch, Batch), WatchError> {
        if !root.is_dir() {
            return Err(
                RetrieveError::from(BankError::NotFound(root.display().to_string())).into(),
            );
        }
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let marker = Marker::acquire(root)?;
        let (tx, rx) = mpsc::channel();
        let sender = tx.clone();
        let handler = move |event: notify::Result<notify::Event>| {
            // reads (every search's, ours) are not changes, and must not keep a batch open
            if !event.as_ref().is_ok_and(is_read) {
                let _ = sender.send(Message::Event(event));
            }
        };
        let notify_error = |source| WatchError::Notify {
            path: root.display().to_string(),
            source,
        };
        let backend: Box<dyn notify::Watcher + Send> = match options.poll {
            Some(interval) => Box::new(
                notify::PollWatcher::new(handler, backend_config().with_poll_interval(interval))
                    .map_err(notify_error)?,
            ),
            None => Box::new(
                <notify::RecommendedWatcher as notify::Watcher>::new(handler, backend_config())
                    .map_err(notify_error)?,
            ),
        };
        let mut backend = backend;
        let mut watched = HashSet::new();
        let mut batch = Batch::default();
        // watching first: what changes during the first check comes as events afterwards
        watch_tree(
            backend.as_mut(),
            &real_root,
            &mut watched,
            &mut batch.warnings,
        )
        .map_err(notify_error)?;
        let retriever = Retriever::open(root)?;
        let mut watch = Watch {
            #[cfg(unix)]
            server: None,
            printer: None,
            root: root.to_path_buf(),
            real_root,
            options,
            marker,
            retriever,
            reopen: None,
            backend,
            watched,
            tx,
            rx,
            listing: None,
            unwritable: false,
        };
        batch.refresh = watch.retriever.last_refresh().clone();
        batch.reconciled = Some("the watcher started".into());
        watch.sync_index_md(Listing::Lessons, &mut batch)?;
        watch.vouch(&mut batch);
        Ok((watch, batch))
    }

    /// Answer searches on the bank's socket ([`serve`]) from now on, between batches, printed
    /// with `print` (`lesson::report::hits::print`); an error when the socket cannot be made
    /// (a path too long for one, say), and nothing without Unix sockets. Searches then search
    /// by themselves, as without a watcher.
    pub fn serve(&mut self, print: serve::Printer) -> std::io::Result<()> {
        self.printer = Some(print);
        #[cfg(unix)]
        {
            let tx = self.tx.clone();
            let server = serve::Server::start(&self.root, move |query, reply| {
                tx.send(Message::Query(query, reply)).is_ok()
            })?;
            self.server = Some(server);
        }
        Ok(())
    }

    /// The reply to `query`: the answer from the index as of the last batch, or why not.
    fn reply(&mut self, query: &serve::Query) -> serve::Reply {
        use serve::Reply::Declined;
        if query.version != env!("CARGO_PKG_VERSION") {
            return Declined(format!(
                "the watcher runs lesson {}",
                env!("CARGO_PKG_VERSION")
            ));
        }
        if let Some(why) = &self.reopen {
            return Declined(format!("the watcher's index is behind: {why}"));
        }
        let answer = match self.retriever.answer_still(&query.request) {
            Ok(Some(answer)) => answer,
            Ok(None) => {
                return Declined("the index must change before it can answer".into());
            }
            Err(e) => return Declined(e.to_string()),
        };
        let Some(print) = self.printer else {
            return Declined("the watcher does not serve".into());
        };
        match print(
            &self.retriever,
            &answer,
            query.shape,
            Path::new(&query.root),
        ) {
            Ok(printed) => serve::Reply::Answered {
                pid: std::process::id(),
                printed,
            },
            Err(e) => Declined(e.to_string()),
        }
    }

    /// A handle that stops [`Watch::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper(self.tx.clone())
    }

    /// The bank's root, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The index as of the last batch (an embedding runtime can search it in-process).
    pub fn retriever(&self) -> &Retriever {
        &self.retriever
    }

    /// Apply batches as events come, calling `on_batch` after each, until stopped. The
    /// marker is withdrawn and the lock released when the watch is dropped.
    pub fn run(&mut self, mut on_batch: impl FnMut(&Batch)) {
        loop {
            let mut pending = Pending::default();
            let stop = match self.rx.recv() {
                Ok(Message::Event(e)) => {
                    pending.add(e);
                    self.collect(&mut pending)
                }
                Ok(Message::Query(query, reply)) => {
                    let _ = reply.send(self.reply(&query));
                    continue;
                }
                Ok(Message::Stop) | Err(_) => true,
            };
            if !pending.is_empty() {
                let batch = self.apply(pending);
                on_batch(&batch);
            }
            if stop {
                return;
            }
        }
    }

    /// Gather events until the debounce window passes without one (or the cap); true when a
    /// stop was asked for meanwhile.
    fn collect(&mut self, pending: &mut Pending) -> bool {
        let debounce = self.options.debounce;
        let cap = Instant::now() + (debounce * CAP_WINDOWS).max(Duration::from_secs(1));
        // the window runs from the last event: a search answered meanwhile does not restart it
        let mut quiet = Instant::now() + debounce;
        loop {
            let until = quiet.min(cap);
            let now = Instant::now();
            if now >= until {
                return false;
            }
            match self.rx.recv_timeout(until - now) {
                Ok(Message::Event(e)) => {
                    pending.add(e);
                    quiet = Instant::now() + debounce;
                }
                // as of the last batch: the one being gathered is not applied yet
                Ok(Message::Query(query, reply)) => {
                    let _ = reply.send(self.reply(&query));
                }
                Ok(Message::Stop) => return true,
                Err(RecvTimeoutError::Timeout) => return false,
                Err(RecvTimeoutError::Disconnected) => return true,
            }
        }
    }

    fn watch_dir(&mut self, dir: &Path, batch: &mut Batch) {
        watch_dir(
            self.backend.as_mut(),
            &mut self.watched,
            dir,
            &mut batch.warnings,
        );
    }

    /// Apply one batch; problems become warnings (and a full check next time), never an end.
    fn apply(&mut self, pending: Pending) -> Batch {
        let mut batch = Batch::default();
        if let Err(e) = self.try_apply(pending, &mut batch) {
            batch.warnings.push(e.to_string());
            // start over from the files next time; searches check the files meanwhile
            self.reopen = Some(format!("the last batch failed: {e}"));
            self.marker.withdraw();
            batch.vouched = None;
        }
        batch
    }

    fn try_apply(&mut self, pending: Pending, batch: &mut Batch) -> Result<(), WatchError> {
        batch.paths = pending.paths.len();
        let named = Named::sort(&self.real_root, pending, &self.retriever);
        for dir in &named.watch {
            self.watch_dir(dir, batch);
        }
        for dir in &named.unwatch {
            self.watched.remove(dir);
        }
        let Named {
            lessons,
            walk: walk_why,
            reopen,
            template: template_touched,
            index_md: index_md_touched,
            state: state_touched,
            ..
        } = named;
        let earlier = self.reopen.take();
        let mut reopen_why = reopen.or(earlier);

        if state_touched
            && reopen_why.is_none()
            && Identity::on_disk(&self.root) != Some(self.retriever.identity())
        {
            // another process replaced the index: adopt the files' state with a full check
            reopen_why = Some("another process rewrote the index".into());
        }

        let mut listing = Listing::Unchanged;
        if index_md_touched {
            listing = Listing::File;
        }
        if template_touched {
            listing = Listing::Template;
        }
        let reconcile = match (reopen_why, walk_why) {
            (Some(why), _) => Some((why, true)),
            (None, Some(why)) => Some((why, false)),
            (None, None) => None,
        };
        if let Some((why, reopen)) = reconcile {
            let before = self.hashes();
            if reopen {
                self.retriever = Retriever::open(&self.root)?;
            } else {
                self.retriever.refresh()?;
            }
            batch.changed = self.changed_since(&before)?;
            batch.refresh = self.retriever.last_refresh().clone();
            batch.reconciled = Some(why);
            listing = listing.max(Listing::Lessons);
        } else if !lessons.is_empty() {
            let before = self.keys(&lessons)?;
            batch.changed = self.retriever.refresh_paths(&lessons)?;
            batch.refresh = self.retriever.last_refresh().clone();
            if self.keys(&lessons)? != before {
                listing = listing.max(Listing::Lessons);
            }
        }
        self.sync_index_md(listing, batch)?;
        self.vouch(batch);
        batch.diagnostics = self.lint(&batch.changed);
        Ok(())
    }

    /// What `_index.md` shows of each path.
    fn keys(&self, paths: &[String]) -> Result<Vec<Option<listing::Key>>, WatchError> {
        let index = self.retriever.index();
        paths
            .iter()
            .map(|p| listing::key(index, p).map_err(|e| RetrieveError::from(e).into()))
            .collect()
    }

    /// Each indexed file's content hash, to tell after a full check which files changed.
    fn hashes(&self) -> HashMap<String, u64> {
        self.retriever
            .index()
            .entries()
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|e| (e.path.to_string(), e.stat.hash))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn changed_since(&self, before: &HashMap<String, u64>) -> Result<Vec<String>, WatchError> {
        let entries = self
            .retriever
            .index()
            .entries()
            .map_err(RetrieveError::from)?;
        Ok(entries
            .into_iter()
            .filter(|e| before.get(e.path) != Some(&e.stat.hash))
            .map(|e| e.path.to_string())
            .collect())
    }

    /// Publish the index's identity when the index on disk is the one held, else withdraw.
    fn vouch(&mut self, batch: &mut Batch) {
        let mine = self.retriever.identity();
        if Identity::on_disk(&self.root) != Some(mine) {
            self.marker.withdraw();
            if !self.unwritable {
                self.unwritable = true;
                batch.warnings.push(format!(
                    "cannot keep the index in {}; searches check the files themselves",
                    self.root.join(STATE_DIR).display()
                ));
            }
            return;
        }
        self.unwritable = false;
        if !self.root.join(STATE_DIR).join(marker::LOCK_FILE).is_file() {
            // `.lesson/` was removed under us: a lock on a deleted file guards nothing
            let state = self.real_root.join(STATE_DIR);
            let _ = self.backend.watch(&state, RecursiveMode::NonRecursive);
            match Marker::acquire(&self.root) {
                Ok(marker) => {
                    self.marker = marker;
                    // the socket went with the directory
                    #[cfg(unix)]
                    if let (Some(_), Some(print)) = (self.server.take(), self.printer) {
                        if let Err(e) = self.serve(print) {
                            batch.warnings.push(format!("cannot answer searches: {e}"));
                        }
                    }
                }
                Err(e) => {
                    batch.warnings.push(e.to_string());
                    return;
                }
            }
        }
        // every byte checked once (a segment checks each section once), so that searches
        // need not; a damaged index is vouched for unchecked, and the search that reads the
        // damage rebuilds it
        let checked = self.retriever.index().check_all().is_ok();
        if marker::read(&self.root).map(|v| (v.index, v.checked)) != Some((mine, checked)) {
            if let Err(e) = self.marker.publish(mine, checked) {
                batch.warnings.push(e.to_string());
                self.marker.withdraw();
                return;
            }
        }
        batch.vouched = Some(mine.generation);
    }

    /// Keep `_index.md` what `lesson index` would write, doing no more work than `what`
    /// changed calls for: when only the file changed (a hand edit, our own write), the last
    /// rendering stands; changed lessons recompute the entries, rendered again only when they
    /// differ; a changed template renders again.
    ///
    /// A rendering that differs from the file is written under the bank lock, after the files
    /// are checked again under it: a writer through `lesson` (which patches `_index.md`
    /// itself, under the same lock) may have changed a lesson since this batch's events, and
    /// its row must not be put back as it was.
    fn sync_index_md(&mut self, what: Listing, batch: &mut Batch) -> Result<(), WatchError> {
        if what == Listing::Unchanged {
            return Ok(());
        }
        let path = self.root.join(INDEX_FILE);
        let on_disk = std::fs::read_to_string(&path).ok();
        let (entries, text) = self.render(what)?;
        if on_disk.as_ref() == Some(&text) {
            self.listing = Some((entries, text));
            return Ok(());
        }
        self.listing = Some((entries, text));
        let mut lock = BankLock::open(&self.root)?;
        let written = lock.with(|| self.write_index_md(&path, batch))??;
        batch.index_md_written |= written;
        Ok(())
    }

    /// Check the files again and write `_index.md` when its rendering differs from the file;
    /// the caller holds the bank lock.
    fn write_index_md(&mut self, path: &Path, batch: &mut Batch) -> Result<bool, WatchError> {
        let before = self.hashes();
        self.retriever.with_lock_held(|r| r.refresh().map(|_| ()))?;
        let after = self.hashes();
        let removed = before.keys().any(|p| !after.contains_key(p));
        let mut changed: Vec<String> = after
            .into_iter()
            .filter(|(p, h)| before.get(p) != Some(h))
            .map(|(p, _)| p)
            .collect();
        changed.sort_unstable();
        if !changed.is_empty() || removed {
            for p in changed {
                if !batch.changed.contains(&p) {
                    batch.changed.push(p);
                }
            }
            let rendered = self.render(Listing::Lessons)?;
            self.listing = Some(rendered);
        }
        let text = &self.listing.as_ref().expect("rendered by the caller").1;
        if std::fs::read_to_string(path).ok().as_ref() == Some(text) {
            return Ok(false);
        }
        edit::write_atomic(&self.root, path, text.as_bytes())?;
        Ok(true)
    }

    /// The entries and text of `_index.md` for what changed (see [`Watch::sync_index_md`]).
    fn render(&mut self, what: Listing) -> Result<(Vec<IndexEntry>, String), WatchError> {
        Ok(match (what, self.listing.take()) {
            (Listing::File, Some(last)) => last,
            (what, last) => {
                let now = self.options.clock.now();
                let entries =
                    listing::entries(self.retriever.index(), now).map_err(RetrieveError::from)?;
                let text = match last {
                    Some((old, text)) if old == entries && what != Listing::Template => text,
                    _ => {
                        let template = Template::load(
                            &self.root,
                            index_md::TEMPLATE,
                            index_md::BUILTIN_TEMPLATE,
                        )
                        .map_err(IndexError::from)?;
                        index_md::render_entries_at(&self.root, &template, entries.clone(), true)?
                    }
                };
                (entries, text)
            }
        })
    }

    /// The file rules' findings on each changed file (read and parsed again in full).
    fn lint(&self, changed: &[String]) -> Vec<Diagnostic> {
        let config = self.retriever.config();
        let now = self.options.clock.now();
        let limit = config.lint.size_limit;
        let mut out = Vec::new();
        for rel in changed {
            let path = self.root.join(rel);
            if !path.is_file() {
                continue;
            }
            let (source, problem) = Source::read(&path, path.clone(), limit);
            let doc = Document::parse(source, problem);
            out.extend(crate::lint::lint_file(&doc, config, now));
        }
        out
    }
}

/// Watch the root and `.lesson/` (not recursively) and every visible top-level directory
/// (recursively): `.git/` and `_log/` churn is never delivered.
fn watch_tree(
    backend: &mut dyn notify::Watcher,
    root: &Path,
    watched: &mut HashSet<PathBuf>,
    warnings: &mut Vec<String>,
) -> notify::Result<()> {
    backend.watch(root, RecursiveMode::NonRecursive)?;
    let state = root.join(STATE_DIR);
    if let Err(e) = backend.watch(&state, RecursiveMode::NonRecursive) {
        warnings.push(format!("cannot watch {}: {e}", state.display()));
    }
    for entry in std::fs::read_dir(root)
        .map_err(notify::Error::io)?
        .flatten()
    {
        let name = entry.file_name();
        if !hidden(&name.to_string_lossy()) && entry.path().is_dir() {
            watch_dir(backend, watched, &entry.path(), warnings);
        }
    }
    Ok(())
}

/// Watch a top-level directory recursively, once.
fn watch_dir(
    backend: &mut dyn notify::Watcher,
    watched: &mut HashSet<PathBuf>,
    dir: &Path,
    warnings: &mut Vec<String>,
) {
    if watched.contains(dir) {
        return;
    }
    match backend.watch(dir, RecursiveMode::Recursive) {
        Ok(()) => {
            watched.insert(dir.to_path_buf());
        }
        Err(e) => warnings.push(format!("cannot watch {}: {e}", dir.display())),
    }
}

/// Whether an event is a read (an open, a close after reading): only a close after writing
/// among the access events says something changed.
fn is_read(event: &notify::Event) -> bool {
    matches!(event.kind, EventKind::Access(kind) if kind != AccessKind::Close(AccessMode::Write))
}

/// The events a watcher asks the kernel for: changes, and a written file's close. Not opens
/// and read-only closes, which [`is_read`] would drop anyway: asked for, each file a reader
/// opens in the bank (a search opens its hits, the index, the configuration) woke the
/// watcher's thread twice, on the reader's core, and the reader waited for it (17 context
/// switches in one `lesson search` at 100,000 lessons).
pub(crate) fn backend_config() -> notify::Config {
    notify::Config::default()
        .with_event_kinds(notify::EventKindMask::CORE | notify::EventKindMask::ACCESS_CLOSE)
}

/// Names the bank's walk skips below the root: hidden or `_`-prefixed.
fn hidden(name: &str) -> bool {
    name.starts_with('.') || name.starts_with('_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(slug: &str, title: &str) -> String {
        format!(
            "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: When {title}\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n"
        )
    }

    /// A watcher whose backend delivers nothing on its own (polling once an hour): batches
    /// are made by hand.
    fn quiet_watch(root: &Path) -> Watch {
        let options = Options {
            debounce: Duration::from_millis(10),
            poll: Some(Duration::from_secs(3600)),
            clock: crate::bank::Clock::System,
        };
        Watch::start(root, options).unwrap().0
    }

    fn found(w: &Watch, word: &str) -> Vec<String> {
        let request = crate::retrieve::Request::new(word);
        let settings = w.retriever().settings().clone();
        let hits = w
            .retriever()
            .index()
            .search(&request, &settings)
            .unwrap()
            .hits;
        hits.into_iter().map(|h| h.slug).collect()
    }

    /// A configuration that lets the tests' one-letter slugs be served.
    const SHORT_SLUGS: &str = "[lint]\nrules = { invalid-slug = \"off\" }\n";

    fn bank() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        // one-letter slugs are errors (S006), which would hold every lesson back
        std::fs::write(tmp.path().join("lesson.toml"), SHORT_SLUGS).unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::fs::write(tmp.path().join("a.md"), lesson("a", "Alpha ficus")).unwrap();
        std::fs::write(tmp.path().join("sub/b.md"), lesson("b", "Beta ficus")).unwrap();
        tmp
    }

    #[test]
    fn a_rescan_reconciles_what_no_event_named() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        std::fs::write(root.join("a.md"), lesson("a", "Alpha orchid")).unwrap();
        std::fs::write(root.join("c.md"), lesson("c", "Gamma orchid")).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::new(),
            rescan: Some("the file-system events overflowed".into()),
        });
        assert_eq!(
            batch.reconciled.as_deref(),
            Some("the file-system events overflowed")
        );
        assert_eq!(batch.changed, ["a.md", "c.md"]);
        assert_eq!(found(&w, "orchid"), ["a", "c"]);
        assert_eq!(batch.vouched, Some(w.retriever().identity().generation));
        assert!(batch.index_md_written);
    }

    #[test]
    fn a_vanished_directory_drops_its_lessons_though_only_the_directory_was_named() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        std::fs::remove_dir_all(root.join("sub")).unwrap();
        let named = w.real_root.join("sub");
        let batch = w.apply(Pending {
            paths: HashSet::from([named]),
            rescan: None,
        });
        assert_eq!(
            batch.reconciled.as_deref(),
            Some("the directory sub moved or was removed")
        );
        assert_eq!(found(&w, "ficus"), ["a"]);
    }

    #[test]
    fn a_batch_of_named_paths_touches_only_those() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        std::fs::write(root.join("a.md"), lesson("a", "Alpha orchid")).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("a.md"), w.real_root.join(".a.md.swp")]),
            rescan: None,
        });
        assert_eq!(batch.reconciled, None);
        assert_eq!(batch.changed, ["a.md"]);
        assert_eq!(batch.refresh.files, 1);
        assert_eq!(found(&w, "orchid"), ["a"]);
        // the title changed: _index.md follows
        assert!(batch.index_md_written);
        // changed behind the watcher's back, and not named: not seen (events are the hints)
        std::fs::write(root.join("sub/b.md"), lesson("b", "Beta orchid")).unwrap();
        // a body-only edit leaves the listing as it was
        let text = lesson("a", "Alpha orchid") + "\nMore words on the tulip.\n";
        std::fs::write(root.join("a.md"), text).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("a.md")]),
            rescan: None,
        });
        assert_eq!(batch.changed, ["a.md"]);
        assert_eq!(found(&w, "tulip"), ["a"]);
        assert_eq!(found(&w, "orchid"), ["a"]);
        assert!(!batch.index_md_written);
    }

    #[test]
    fn index_md_is_written_from_the_files_as_they_are_under_the_lock() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        // a writer changed b (and, through `lesson`, would have patched its row) after the
        // events of this batch: the rendering must not put b's old row back
        std::fs::write(root.join("sub/b.md"), lesson("b", "Beta orchid")).unwrap();
        std::fs::write(root.join("a.md"), lesson("a", "Alpha lily")).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("a.md")]),
            rescan: None,
        });
        assert!(batch.index_md_written);
        assert_eq!(batch.changed, ["a.md", "sub/b.md"]);
        assert_eq!(found(&w, "orchid"), ["b"]);
        let written = std::fs::read_to_string(root.join(INDEX_FILE)).unwrap();
        assert!(written.contains("Beta orchid"), "{written}");
        assert!(written.contains("Alpha lily"), "{written}");
        // and a lesson removed behind the batch is not listed again (nor kept listed when its
        // own event comes)
        std::fs::remove_file(root.join("sub/b.md")).unwrap();
        std::fs::write(root.join("a.md"), lesson("a", "Alpha rose")).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("a.md")]),
            rescan: None,
        });
        assert!(batch.index_md_written);
        let written = std::fs::read_to_string(root.join(INDEX_FILE)).unwrap();
        assert!(!written.contains("Beta orchid"), "{written}");
        assert!(written.contains("Alpha rose"), "{written}");
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("sub/b.md")]),
            rescan: None,
        });
        assert!(!batch.index_md_written);
        assert_eq!(
            std::fs::read_to_string(root.join(INDEX_FILE)).unwrap(),
            written
        );
    }

    #[test]
    fn index_md_is_put_back_after_a_hand_edit_and_follows_its_template() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        let written = std::fs::read_to_string(root.join(INDEX_FILE)).unwrap();
        let named = HashSet::from([w.real_root.join(INDEX_FILE)]);
        // our own write comes back as an event: nothing to do
        let batch = w.apply(Pending {
            paths: named.clone(),
            rescan: None,
        });
        assert!(!batch.index_md_written);
        std::fs::write(root.join(INDEX_FILE), "edited by hand\n").unwrap();
        let batch = w.apply(Pending {
            paths: named.clone(),
            rescan: None,
        });
        assert!(batch.index_md_written);
        assert_eq!(
            std::fs::read_to_string(root.join(INDEX_FILE)).unwrap(),
            written
        );
        std::fs::create_dir(root.join("templates")).unwrap();
        std::fs::write(
            root.join("templates").join(index_md::TEMPLATE),
            "{{ counts.total }} lessons\n",
        )
        .unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("templates")]),
            rescan: None,
        });
        assert!(batch.index_md_written);
        assert_eq!(
            std::fs::read_to_string(root.join(INDEX_FILE)).unwrap(),
            "2 lessons\n"
        );
    }

    #[test]
    fn a_configuration_change_reopens_the_index() {
        let tmp = bank();
        let root = tmp.path();
        let mut w = quiet_watch(root);
        let config = format!("[lint]\nexclude = [\"sub/**\"]\n{}", &SHORT_SLUGS[6..]);
        std::fs::write(root.join("lesson.toml"), config).unwrap();
        let batch = w.apply(Pending {
            paths: HashSet::from([w.real_root.join("lesson.toml")]),
            rescan: None,
        });
        assert_eq!(batch.reconciled.as_deref(), Some("lesson.toml changed"));
        assert_eq!(found(&w, "ficus"), ["a"]);
        assert!(batch.index_md_written);
    }
}
