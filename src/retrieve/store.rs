//! The persisted index in the bank's `.lesson/`: `retrieve.idx` (the base) and
//! `retrieve.delta` (changes since). Both are caches: every [`Retriever::refresh`] checks
//! them against the files, so a search is correct whatever state they are in.
//!
//! - **Checking** walks the bank as [`Bank::load`](crate::bank::Bank::load) does (see
//!   [`crate::walk`]) and compares each file's stat (size, mtime, ctime, inode) with its
//!   record. A file whose stat differs (or whose record is not yet settled: changed within
//!   [`SETTLE_NS`] of being read, when a second change could share its timestamps) is hashed;
//!   only when the hash differs is it parsed again. New files are parsed, vanished ones
//!   dropped. Nothing else is read: the index loads without parsing the bank.
//! - **Patching** writes the changed records, the base docs they replace and the new stats of
//!   touched files into a new delta. When the delta outgrows [`merge_threshold`], base and
//!   delta are merged into a new base instead (copying postings, parsing nothing).
//! - Every write increments the index's **generation** (in each segment's header), the hook
//!   by which a watcher can later vouch that the index is current without a stat walk.
//! - **Rebuilding** from scratch happens only when the base is missing, damaged (checksum,
//!   truncation), of another format version, or was built under another configuration
//!   (`[lint] size-limit` and `exclude` decide which files are lessons).
//! - **Writing** happens under the bank lock, into a temp file renamed over the old one, so
//!   concurrent readers see the old file or the new one, never a mix. A delta names the base
//!   it patches; a reader that pairs a new base with an old delta ignores the delta (and its
//!   check of the files finds the difference). A bank that cannot be written (read-only
//!   checkout) is searched all the same; the patch is just not kept.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use globset::GlobSet;
use rayon::prelude::*;

use crate::bank::{Bank, BankError};
use crate::config::Config;
use crate::document::Document;
use crate::edit::{self, BankLock};
use crate::source::{ReadProblem, Source};

use super::codec::{self, Corrupt};
use super::index::{self, Index};
use super::marker::{self, Identity};
use super::record::{self, FileStamp, FileStat, Ledgers, Record};
use super::segment::{self, Header, Kind, Part, Patch, Segment};
use super::{Request, Search, Settings};
use crate::walk;

pub use crate::layout::INDEX_BASE_FILE as BASE_FILE;
pub use crate::layout::INDEX_DELTA_FILE as DELTA_FILE;
/// A file changed less than this long before it was read may change again unseen within the
/// same timestamp tick; its record is re-hashed until it is older (2 s covers coarse clocks).
pub const SETTLE_NS: i64 = 2_000_000_000;
/// How many times a search checks the files of hits that changed under it before it checks
/// them under the bank lock.
const STALE_RECHECKS: usize = 3;

/// Retrieval failed.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// The bank could not be opened.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// The index in memory is inconsistent (a bug: the files on disk are checked on load).
    #[error(transparent)]
    Corrupt(#[from] Corrupt),
    /// The bank's prompt template does not load or render.
    #[error(transparent)]
    Template(#[from] crate::template::TemplateError),
    /// The retrieval log could not be read or written.
    #[error(transparent)]
    Usage(#[from] crate::usage::UsageError),
}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Refresh {
    /// Why the index was rebuilt from scratch, if it was.
    pub rebuilt: Option<String>,
    /// Files checked.
    pub files: usize,
    /// Files parsed: new or changed (all of them on a rebuild).
    pub parsed: usize,
    /// Files gone since the last check.
    pub removed: usize,
    /// Files hashed because their stat differed or was not settled.
    pub hashed: usize,
    /// Whether the result was written to `.lesson/` (false when nothing changed or the bank
    /// is not writable).
    pub persisted: bool,
    /// The generation of the index in use.
    pub generation: u64,
    /// Lessons embedded for semantic retrieval (`[retrieve] model`): new or changed ones.
    #[serde(skip_serializing_if = "is_zero")]
    pub embedded: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A bank's persisted index, checked against the files and ready to search.
#[derive(Debug)]
pub struct Retriever {
    root: PathBuf,
    config: Config,
    settings: Settings,
    exclude: GlobSet,
    index: Index,
    pub(super) last: Refresh,
    /// The semantic side (`[retrieve] model`), when a model is configured and works.
    pub(super) dense: Option<super::dense::Dense>,
    /// Why the configured model is not in use.
    pub(super) semantic_problem: Option<Arc<crate::semantic::ModelError>>,
    /// Set while the bank lock is held by this retriever: nothing is written then.
    unpersisted: bool,
    /// Set while the caller holds the bank lock ([`Retriever::holding`]): the index is
    /// written without taking it again.
    lock_held: bool,
    /// What the ranking's recency was read from.
    provenance: Option<Arc<crate::git::provenance::Provenance>>,
    /// An included bank's index: checked against the files and patched in memory only,
    /// never written (the bank in front may not own it), and searched without its lock.
    pub(super) read_only: bool,
    /// The banks this one includes (`[banks] include`), each with its own index; empty for a
    /// bank that includes none.
    pub(super) layers: Vec<super::layered::Included>,
    /// Whether the included banks were checked since the last search.
    pub(super) layers_checked: bool,
}

impl Retriever {
    /// Open the bank at `root`: load its index, check it against the files, patch or rebuild
    /// what differs and keep the result in `.lesson/` when the bank is writable. Keep it open:
    /// each later search checks only the files' stats.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let bank = dir.path();
    /// # lesson::curate::init::init(bank, jiff::Timestamp::now())?;
    /// # lesson::define_lesson(bank, serde_json::json!({
    /// #     "slug": "cite-the-source-url", "title": "Cite the source URL of every quoted figure.",
    /// #     "trigger": {"description": "A summary quotes figures from web pages.", "tags": ["research"]},
    /// #     "outcome": "success", "evidence": [{"kind": "run", "ref": "run-1"}],
    /// # }), &lesson::curate::Stamp::now("doc"))?;
    /// use lesson::retrieve::{Request, Retriever};
    ///
    /// let mut retriever = Retriever::open(bank)?;
    /// // the answer an agent's prompt gets: hits cut to the token budget, and the block
    /// let answer = retriever.answer(&Request::new("summarise a web page with figures"))?;
    /// assert_eq!(answer.hits[0].slug, "cite-the-source-url");
    /// assert!(answer.prompt.text.contains("Cite the source URL"));
    /// // the ranked hits alone, with every score part
    /// let found = retriever.search(&Request::new("research figures").k(3))?;
    /// assert_eq!(found.hits.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(root: &Path) -> Result<Retriever, RetrieveError> {
        let (mut r, why) = Retriever::load(root, None)?;
        r.refresh_with(why)?;
        r.open_layers()?;
        Ok(r)
    }

    /// The bank's configuration and its index as loaded (or an empty one, with why it must be
    /// rebuilt); bytes that `vouch` says a live watcher checked are not checked again.
    fn load(
        root: &Path,
        vouch: Option<&marker::Vouch>,
    ) -> Result<(Retriever, Option<String>), RetrieveError> {
        if !root.is_dir() {
            return Err(BankError::NotFound(root.display().to_string()).into());
        }
        let config = Config::load(root).map_err(BankError::from)?;
        crate::lint::check_config(root, &config).map_err(BankError::from)?;
        let exclude = crate::bank::exclude_set(&config)?;
        let config_hash = config_hash(&config);
        let (index, why) = match load(root, config_hash, vouch) {
            Ok(index) => (index, None),
            Err(why) => (
                Index::new(
                    Arc::new(Segment::empty(Header {
                        index_id: 0,
                        generation: 0,
                        config_hash,
                    })),
                    None,
                )?
                .reading_files_at(root),
                Some(why),
            ),
        };
        let mut r = Retriever {
            root: root.to_path_buf(),
            settings: Settings::from_config(&config.retrieve),
            config,
            exclude,
            index,
            last: Refresh::default(),
            unpersisted: false,
            lock_held: false,
            provenance: None,
            read_only: false,
            layers: Vec::new(),
            layers_checked: false,
            dense: None,
            semantic_problem: None,
        };
        r.open_model();
        Ok((r, why))
    }

    /// Check the index against the files again, patching what changed.
    pub fn refresh(&mut self) -> Result<&Refresh, RetrieveError> {
        self.refresh_with(None)?;
        Ok(&self.last)
    }

    /// What the last refresh did.
    pub fn last_refresh(&self) -> &Refresh {
        &self.last
    }

    /// The bank's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The ranking settings (from `[retrieve]`).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Change the ranking settings (they do not affect the index).
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// The index in use.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Search the index as it was at the last refresh. A posting list found damaged (they are
    /// checked as they are read) rebuilds the index from the files, and a hit whose file
    /// changed since (its bytes no longer match the index) has its file checked again; then
    /// the search runs again. Hits whose files keep changing under it are checked and
    /// searched once more under the bank lock, so that a write through `lesson` (which takes
    /// it) cannot drop them from the answer.
    pub fn search(&mut self, request: &Request) -> Result<Search, RetrieveError> {
        self.read_usage()?;
        if self.layers.is_empty() {
            self.search_own(request)
        } else {
            self.search_layered(request)
        }
    }

    /// [`Retriever::search`] of the index exactly as it is: `None` where that search would
    /// change it first (a hit's file changed, the index is damaged) and for a bank that
    /// includes others (their files are theirs to check).
    pub(crate) fn search_still(
        &mut self,
        request: &Request,
    ) -> Result<Option<Search>, RetrieveError> {
        if !self.layers.is_empty() {
            return Ok(None);
        }
        self.read_usage()?;
        let query = self.request_vector(request);
        Ok(match self.search_index(request, query.as_deref())? {
            Ok(found) if found.stale.is_empty() => Some(found),
            _ => None,
        })
    }

    /// `[retrieve] usage-weight`: the retrieval figures as they are now.
    fn read_usage(&mut self) -> Result<(), RetrieveError> {
        if self.settings.usage_weight > 0.0 {
            let log = crate::usage::ShownLog::read(&self.root)?;
            self.settings.usage = Some(Arc::new(log.figures(&self.root)?));
        }
        Ok(())
    }

    /// [`Retriever::search`] of this bank's own index alone.
    pub(super) fn search_own(&mut self, request: &Request) -> Result<Search, RetrieveError> {
        let mut rebuilds = 0;
        let mut rechecks = 0;
        let query = self.request_vector(request);
        loop {
            match self.search_index(request, query.as_deref())? {
                Ok(found) if found.stale.is_empty() => return Ok(found),
                Ok(found) if rechecks < STALE_RECHECKS => {
                    rechecks += 1;
                    self.refresh_paths(&found.stale)?;
                }
                Ok(found) => return self.search_locked(request, &found.stale, query.as_deref()),
                Err(damaged) if rebuilds < 2 => {
                    rebuilds += 1;
                    self.refresh_with(Some(damaged.to_string()))?;
                }
                Err(damaged) => return Err(damaged.into()),
            }
        }
    }

    /// Check `stale` and search under the bank lock (the result is kept in memory only: the
    /// index is written under the same lock).
    fn search_locked(
        &mut self,
        request: &Request,
        stale: &[String],
        query: Option<&[f32]>,
    ) -> Result<Search, RetrieveError> {
        // an included bank's lock is never taken (the front bank may not own it)
        let lock = match self.read_only {
            true => None,
            false => BankLock::open(&self.root).ok(),
        };
        let Some(mut lock) = lock else {
            return self.search_checked(request, stale, query);
        };
        self.unpersisted = true;
        let found = lock.with_unswept(|| self.search_checked(request, stale, query));
        self.unpersisted = false;
        match found {
            Ok(found) => found,
            // the lock could not be taken: as good as the files allow
            Err(_) => self.search_checked(request, stale, query),
        }
    }

    /// Check `stale`, search, and check again the files of any new hit found changed, until
    /// a search finds no file it has not checked changed. Under the bank lock no writer
    /// through `lesson` changes a file once checked, so this ends with every hit current;
    /// the checks re-ranked the docs, and the new top K may hold a file a writer changed
    /// before the lock was taken. A file still changing (an editor, which takes no lock)
    /// is checked once and its hit left out.
    fn search_checked(
        &mut self,
        request: &Request,
        stale: &[String],
        query: Option<&[f32]>,
    ) -> Result<Search, RetrieveError> {
        let mut checked: HashSet<String> = HashSet::new();
        let mut todo: Vec<String> = stale.to_vec();
        loop {
            self.refresh_paths(&todo)?;
            checked.extend(todo);
            let found = self.search_index(request, query)??;
            todo = found
                .stale
                .iter()
                .filter(|p| !checked.contains(*p))
                .cloned()
                .collect();
            if todo.is_empty() {
                return Ok(found);
            }
        }
    }

    /// The index's search (hybrid with the request's embedding `query`, when there is one
    /// and the semantic side is on); the outer error is the semantic side's, the inner the
    /// index's.
    fn search_index(
        &mut self,
        request: &Request,
        query: Option<&[f32]>,
    ) -> Result<Result<Search, Corrupt>, RetrieveError> {
        if query.is_some() {
            self.sync_vectors()?;
        }
        let weight = self.semantic_weight();
        let Some(fed) = query.and_then(|query| self.fed(query)) else {
            return Ok(self.index.search(request, &self.settings));
        };
        let semantic = index::Semantic {
            cosines: index::Cosines::Fed(&fed),
            weight,
        };
        // the cosines computed on another thread as the search reads them
        Ok(rayon::scope(|s| {
            s.spawn(|_| fed.run());
            self.index.search_hybrid(request, &self.settings, semantic)
        }))
    }

    /// The identity of the index in use.
    pub fn identity(&self) -> Identity {
        let base = self.index.base();
        Identity {
            index_id: base.header.index_id,
            generation: self.generation(),
            base: base.checksum(),
            delta: self.index.delta().map(|d| d.checksum()),
        }
    }

    /// The compiled `[lint] exclude` globs: which `.md` files are not lessons.
    pub fn exclude(&self) -> &GlobSet {
        &self.exclude
    }

    /// The bank's root, as given to [`Retriever::open`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Open like [`Retriever::open`], but without checking the files when a live watcher
    /// vouches for the index as loaded: `lesson watch` holds `.lesson/watch.lock` and has
    /// published this very index's [`Identity`] (see [`marker`]). Otherwise (no
    /// watcher, a killed one, another index on disk) the files are checked as `open` checks
    /// them. The lock is looked at before the marker is read, so a marker left by a watcher
    /// that died is never taken for a live one's.
    ///
    /// A vouched index is as of the watcher's last batch: a file changed inside its debounce
    /// window is not seen yet. What a hit shows is read from its file, though, and only when
    /// the file still has the indexed bytes ([`Retriever::search`]): a hit whose file changed
    /// in the window is never shown with its old text; the search checks the files and runs
    /// again instead.
    pub fn open_fast(root: &Path) -> Result<Retriever, RetrieveError> {
        let mut r = Retriever::open_vouched(root, false)?;
        r.open_layers()?;
        Ok(r)
    }

    /// [`Retriever::open_fast`] of this bank alone; `read_only` for an included bank.
    pub(super) fn open_vouched(root: &Path, read_only: bool) -> Result<Retriever, RetrieveError> {
        // the marker first: what it vouches for is not checked as the index opens
        let vouch = marker::vouch(root);
        let (mut r, why) = Retriever::load(root, vouch.as_ref())?;
        r.read_only = read_only;
        if let Some(vouch) = vouch {
            if why.is_none() && r.identity() == vouch.index {
                if vouch.checked {
                    r.index.trust();
                }
                r.last = Refresh {
                    generation: vouch.index.generation,
                    ..Refresh::default()
                };
                r.apply_provenance();
                return Ok(r);
            }
        }
        r.refresh_with(why)?;
        Ok(r)
    }

    /// Check only the files at `paths` (relative to the root, `/`-separated: what a watcher's
    /// events name) and patch what changed; every other record is kept as it is. A path that
    /// is not a lesson file by the walk's rules ([`walk::is_lesson_path`]) is skipped; one
    /// that is no longer a file drops its record. Returns the paths parsed (new files and
    /// changed contents), sorted; [`Retriever::last_refresh`] says the rest.
    pub fn refresh_paths(&mut self, paths: &[String]) -> Result<Vec<String>, RetrieveError> {
        let limit = self.config.lint.size_limit;
        let config = &self.config;
        let mut wanted: Vec<&str> = paths
            .iter()
            .map(String::as_str)
            .filter(|rel| walk::is_lesson_path(rel, &self.exclude))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut report = Refresh {
            files: wanted.len(),
            ..Refresh::default()
        };
        let mut replaced: Vec<u32> = Vec::new();
        let mut todo: Vec<(&str, Option<index::IndexedFile>, std::fs::Metadata)> = Vec::new();
        for rel in wanted {
            let entry = self.index.find(rel)?;
            let meta = std::fs::metadata(self.root.join(rel))
                .ok()
                .filter(std::fs::Metadata::is_file)
                // a link the walk does not follow is no lesson here either (a realpath per
                // named path, never per file of a walk)
                .filter(|_| !walk::refused_link(&self.root, rel, &self.exclude));
            match (entry, meta) {
                (entry, Some(meta)) => todo.push((rel, entry, meta)),
                (Some(gone), None) => {
                    report.removed += 1;
                    replaced.push(gone.id);
                }
                (None, None) => {}
            }
        }
        let root = &self.root;
        let changes: Vec<Change> = todo
            .into_par_iter()
            .map(|(rel, entry, meta)| {
                let path = root.join(rel);
                match entry {
                    Some(entry) => check(rel, &entry, &path, Some(stamp(&meta)), limit, config),
                    None => Change::Parsed(read_record(rel, &path, limit, config)),
                }
            })
            .collect();
        let mut records: Vec<Record> = Vec::new();
        let mut restat: Vec<(u32, FileStat)> = Vec::new();
        for change in changes {
            match change {
                Change::None => {}
                Change::Hashed(touched) => {
                    report.hashed += 1;
                    restat.extend(touched);
                }
                Change::Reparsed(id, record) => {
                    report.hashed += 1;
                    report.parsed += 1;
                    replaced.push(id);
                    records.push(record);
                }
                Change::Parsed(record) => {
                    report.parsed += 1;
                    records.push(record);
                }
            }
        }
        let mut parsed: Vec<String> = records.iter().map(|r| r.path.clone()).collect();
        parsed.sort_unstable();
        if records.is_empty() && replaced.is_empty() && restat.is_empty() {
            report.generation = self.generation();
        } else {
            self.apply(replaced, restat, records, &mut report)?;
            self.apply_provenance();
        }
        self.last = report;
        self.last.embedded = self.sync_vectors()?;
        Ok(parsed)
    }

    /// Check the files (or rebuild), then take the ranking's recency input from the bank's
    /// provenance when it is in git.
    fn refresh_with(&mut self, rebuild: Option<String>) -> Result<(), RetrieveError> {
        match self.refresh_files(rebuild) {
            // a section whose checksum fails only when the check reads it: rebuild from the files
            Err(RetrieveError::Corrupt(damaged)) => {
                self.refresh_files(Some(damaged.to_string()))?
            }
            other => other?,
        }
        self.apply_provenance();
        self.last.embedded = self.sync_vectors()?;
        Ok(())
    }

    /// Rank by each lesson's last commit when the bank is in git (read from the provenance
    /// cache, which walks only commits it has not seen): the index holds no git state, since
    /// HEAD moves without any file changing. A failure to read history ranks by the ledgers.
    pub(super) fn apply_provenance(&mut self) {
        let provenance = match self.read_only {
            true => crate::git::provenance::Provenance::of_bank_unwritten(&self.root),
            false => crate::git::provenance::Provenance::of_bank(&self.root),
        };
        let provenance = provenance.ok().flatten().map(Arc::new);
        self.index.set_provenance(provenance.clone());
        self.provenance = provenance;
    }

    /// Each lesson's created and changed commits, as the ranking last read them (`None` when
    /// the bank is not in git).
    pub fn provenance(&self) -> Option<&Arc<crate::git::provenance::Provenance>> {
        self.provenance.as_ref()
    }

    fn refresh_files(&mut self, rebuild: Option<String>) -> Result<(), RetrieveError> {
        let limit = self.config.lint.size_limit;
        let config = &self.config;
        if let Some(why) = rebuild {
            // every file is opened and stat-ed as it is read
            let mut files = walk::lesson_paths(&self.root, &self.exclude);
            files.par_sort_unstable_by(|a, b| walk::path_order(&a.rel, &b.rel));
            let mut report = Refresh {
                files: files.len(),
                parsed: files.len(),
                rebuilt: Some(why),
                ..Refresh::default()
            };
            self.rebuild(&files, &mut report)?;
            self.last = report;
            return Ok(());
        }
        // each file's path, its hash and its stamp (less than half of what its whole
        // metadata takes, so that the passes below read less)
        let mut files = walk::lesson_files_kept(&self.root, &self.exclude, |rel, meta| Walked {
            hash: segment::path_hash(&rel),
            stamp: meta.as_ref().map(stamp),
            rel,
        });
        let index = &self.index;
        let mut report = Refresh {
            files: files.len(),
            ..Refresh::default()
        };

        // join the walk with the index by each path's hash: the files sorted by it, as each
        // segment's path table is, which holds each doc's stamp, so that both are read front
        // to back (a lookup a file, in no order, costs more in cache misses than the sort)
        files.par_sort_unstable_by_key(|f| f.hash);
        let keys: Vec<u64> = files.iter().map(|f| f.hash).collect();
        let pairs = index.docs_with_path_hashes(&keys)?;
        drop(keys);
        let mut shared = vec![false; files.len()];
        let mut once = vec![false; files.len()];
        for &(file, _, _) in &pairs {
            let file = file as usize;
            shared[file] |= once[file];
            once[file] = true;
        }
        let found: Vec<(u32, Joined)> = pairs
            .par_iter()
            .map(|&(file, id, old)| {
                let f = &files[file as usize];
                let same = unchanged(&old, f.stamp.as_ref(), limit);
                // a doc whose stat says the file is as indexed is taken on that (the path's
                // hash, size, times to the nanosecond and inode all agreeing), unless another
                // doc shares the hash; any other only if its path is the file's
                let joined =
                    if (same && !shared[file as usize]) || index.path(id as usize)? == f.rel {
                        match same {
                            true => Joined::Unchanged(id),
                            false => Joined::Check(id, index.stat(id as usize)?),
                        }
                    } else {
                        Joined::New
                    };
                Ok((file, joined))
            })
            .collect::<Result<_, Corrupt>>()?;
        drop(pairs);
        let mut joined = vec![Joined::New; files.len()];
        for (file, j) in found {
            if j.id().is_some() {
                joined[file as usize] = j;
            }
        }
        // a doc claimed twice: a path sharing its hash was taken on its stat alone, so each
        // claim is checked against the doc's path
        let mut claims = vec![0u8; index.id_count()];
        for j in &joined {
            if let Some(id) = j.id() {
                claims[id as usize] = claims[id as usize].saturating_add(1);
            }
        }
        let mut todo: Vec<(&Walked, Joined)> = Vec::new();
        for (f, mut j) in files.iter().zip(joined) {
            if let Joined::Unchanged(id) = j {
                if claims[id as usize] > 1 && index.path(id as usize)? != f.rel {
                    claims[id as usize] -= 1;
                    j = Joined::New;
                }
            }
            if !matches!(j, Joined::Unchanged(_)) {
                todo.push((f, j));
            }
        }
        let mut replaced: Vec<u32> = (0..index.id_count())
            .filter(|&id| index.is_live(id) && claims[id] == 0)
            .map(|id| id as u32)
            .collect();
        report.removed = replaced.len();

        // read and hash only what may have changed, and parse only what did; only the changes
        // are collected (a `Change` holds a whole record)
        let root = &self.root;
        let changes: Vec<Change> = todo
            .into_par_iter()
            .map(|(f, j)| match j {
                Joined::Check(id, stat) => check(
                    &f.rel,
                    &index::IndexedFile {
                        id,
                        path: &f.rel,
                        stat,
                    },
                    &root.join(&f.rel),
                    f.stamp,
                    limit,
                    config,
                ),
                _ => Change::Parsed(read_record(&f.rel, &root.join(&f.rel), limit, config)),
            })
            .collect();
        let mut records: Vec<Record> = Vec::new();
        let mut restat: Vec<(u32, FileStat)> = Vec::new();
        for change in changes {
            match change {
                Change::None => {}
                Change::Hashed(None) => report.hashed += 1,
                Change::Hashed(Some(touched)) => {
                    report.hashed += 1;
                    restat.push(touched);
                }
                Change::Reparsed(id, record) => {
                    report.hashed += 1;
                    report.parsed += 1;
                    replaced.push(id);
                    records.push(record);
                }
                Change::Parsed(record) => {
                    report.parsed += 1;
                    records.push(record);
                }
            }
        }
        if records.is_empty() && replaced.is_empty() && restat.is_empty() {
            report.generation = self.generation();
            self.last = report;
            return Ok(());
        }
        self.apply(replaced, restat, records, &mut report)?;
        self.last = report;
        Ok(())
    }

    fn generation(&self) -> u64 {
        let base = self.index.base().header.generation;
        self.index
            .delta()
            .map_or(base, |d| d.header.generation.max(base))
    }

    /// Make `replaced` docs gone, `restat` docs re-stated and `records` present, in memory and
    /// (when possible) on disk.
    fn apply(
        &mut self,
        replaced: Vec<u32>,
        restat: Vec<(u32, FileStat)>,
        records: Vec<Record>,
        report: &mut Refresh,
    ) -> Result<(), RetrieveError> {
        let generation = self.generation() + 1;
        let config_hash = config_hash(&self.config);
        let base = self.index.base().clone();
        let base_count = self.index.base_count();
        let base_id = base.header.index_id;
        let (mut patch, old_delta) = match self.index.delta() {
            Some(d) => (
                Patch {
                    deleted: d.deleted()?,
                    restat: d.restat()?,
                },
                Some(d.clone()),
            ),
            None => (Patch::default(), None),
        };
        // what changed in the old delta's docs, by their id in it
        let delta_docs = old_delta.as_ref().map_or(0, |d| d.doc_count());
        let mut delta_dead = vec![false; delta_docs];
        let mut delta_restat: HashMap<u32, FileStat> = HashMap::new();
        for &id in &replaced {
            match (id as usize).checked_sub(base_count) {
                None => patch.deleted.push(id),
                Some(local) => delta_dead[local] = true,
            }
        }
        for (id, stat) in restat {
            match (id as usize).checked_sub(base_count) {
                None => patch.restat.push((id, stat)),
                Some(local) => {
                    delta_restat.insert(local as u32, stat);
                }
            }
        }
        // later stats win; deleted docs need none
        patch.restat.reverse();
        patch.restat.sort_by_key(|(id, _)| *id);
        patch.restat.dedup_by_key(|(id, _)| *id);
        let deleted: HashSet<u32> = patch.deleted.iter().copied().collect();
        patch.restat.retain(|(id, _)| !deleted.contains(id));

        let header = Header {
            index_id: base_id,
            generation,
            config_hash,
        };
        let fresh = Segment::parse(segment::encode(
            Kind::Delta,
            header,
            records,
            &Patch::default(),
        ))?;
        let no_restat = HashMap::new();
        let mut parts = vec![];
        if let Some(d) = &old_delta {
            parts.push(Part {
                segment: d,
                dead: &delta_dead,
                restat: &delta_restat,
            });
        }
        parts.push(Part {
            segment: &fresh,
            dead: &[],
            restat: &no_restat,
        });
        let delta = Segment::parse(segment::merge(Kind::Delta, header, &parts, &patch)?)?;
        let live_base = base_count - deleted.len();
        if delta.doc_count() > merge_threshold(live_base)
            || patch.restat.len() > live_base / 4 + 512
        {
            self.fold(&delta, generation, report)?;
        } else {
            let delta = Arc::new(delta);
            self.index = Index::new(base, Some(delta.clone()))?.reading_files_at(&self.root);
            report.persisted = self.persist(|root| {
                // only patch the base this delta was made for
                if on_disk_base_id(root) != Some(base_id) {
                    return Ok(());
                }
                let bytes = delta.bytes().expect("a new delta is in memory");
                edit::write_atomic_with(root, &state_path(root, DELTA_FILE), bytes, false)
            });
        }
        report.generation = generation;
        Ok(())
    }

    /// Check the files, then fold the delta into a new base. A refresh does this by itself
    /// when the delta grows past [`merge_threshold`].
    pub fn compact(&mut self) -> Result<&Refresh, RetrieveError> {
        self.refresh_with(None)?;
        if let Some(delta) = self.index.delta().cloned() {
            let generation = self.generation() + 1;
            let mut report = Refresh {
                files: self.last.files,
                generation,
                ..Refresh::default()
            };
            self.fold(&delta, generation, &mut report)?;
            self.apply_provenance();
            self.last = report;
        }
        Ok(&self.last)
    }

    /// Merge the base and `delta` (which patches it) into a new base, and use it.
    fn fold(
        &mut self,
        delta: &Segment,
        generation: u64,
        report: &mut Refresh,
    ) -> Result<(), RetrieveError> {
        let base = self.index.base().clone();
        let mut dead = vec![false; base.doc_count()];
        for id in delta.deleted()? {
            *dead
                .get_mut(id as usize)
                .ok_or(Corrupt("deleted doc out of range"))? = true;
        }
        let base_restat: HashMap<u32, FileStat> = delta.restat()?.into_iter().collect();
        let no_restat = HashMap::new();
        let header = Header {
            index_id: new_index_id(generation),
            generation,
            config_hash: config_hash(&self.config),
        };
        let parts = [
            Part {
                segment: &base,
                dead: &dead,
                restat: &base_restat,
            },
            Part {
                segment: delta,
                dead: &[],
                restat: &no_restat,
            },
        ];
        let merged = Segment::parse(segment::merge(
            Kind::Base,
            header,
            &parts,
            &Patch::default(),
        )?)?;
        self.install_base(merged, report)
    }

    /// Parse every file (`files` sorted by path) into a new base, a chunk at a time.
    fn rebuild(
        &mut self,
        files: &[walk::StatedFile],
        report: &mut Refresh,
    ) -> Result<(), RetrieveError> {
        let limit = self.config.lint.size_limit;
        let config = &self.config;
        let generation = self.generation() + 1;
        let mut encoder = segment::Encoder::default();
        let listed = record::list_ledgers(&self.root);
        let ledgers = listed.as_ref().map_or(Ledgers::Look, Ledgers::Listed);
        let dir = walk::RootDir::open(&self.root);
        for chunk in files.chunks(segment::Encoder::CHUNK) {
            // each file read and analysed by one task, while its text is in the cache
            let analysed: Vec<segment::Analysed> = chunk
                .par_iter()
                .map(|f| {
                    let path = self.root.join(&f.rel);
                    let record =
                        read_record_with(ledgers, &f.rel, (&path, Some(&dir)), limit, config);
                    segment::analyse_sharded(&record)
                })
                .collect();
            encoder.add_analysed(analysed);
        }
        let header = Header {
            index_id: new_index_id(generation),
            generation,
            config_hash: config_hash(&self.config),
        };
        let base = Segment::parse(encoder.finish(Kind::Base, header, &Patch::default()))?;
        self.install_base(base, report)?;
        report.generation = generation;
        Ok(())
    }

    /// Use a new base (and no delta), and write it.
    fn install_base(&mut self, base: Segment, report: &mut Refresh) -> Result<(), RetrieveError> {
        let base = Arc::new(base);
        self.index = Index::new(base.clone(), None)?.reading_files_at(&self.root);
        report.persisted = self.persist(|root| {
            let bytes = base.bytes().expect("a new base is in memory");
            // a cache, checked on every open: not waited onto the disk
            edit::write_atomic_with(root, &state_path(root, BASE_FILE), bytes, false)?;
            match std::fs::remove_file(state_path(root, DELTA_FILE)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(edit::EditError::Io {
                    path: DELTA_FILE.into(),
                    source: e,
                }),
                _ => Ok(()),
            }
        });
        Ok(())
    }

    /// Run `f` on this retriever while the caller holds the bank lock: what `f` refreshes is
    /// written to `.lesson/` without taking the lock again (a second lock would wait for the
    /// first). A writer that renders from the index (`lesson watch` writing `_index.md`)
    /// checks the files this way under its lock, so that no write made before it took the
    /// lock is missing from what it writes.
    pub fn with_lock_held<T>(&mut self, f: impl FnOnce(&mut Retriever) -> T) -> T {
        self.lock_held = true;
        let out = f(self);
        self.lock_held = false;
        out
    }

    /// Run `write` under the bank lock; false when the bank cannot be locked or written.
    pub(super) fn persist(&self, write: impl FnOnce(&Path) -> Result<(), edit::EditError>) -> bool {
        if self.unpersisted || self.read_only {
            return false;
        }
        // the cache ignores itself, in banks that `lesson init` did not set up too
        let ignore_self = || {
            let ignore = state_path(&self.root, crate::layout::GITIGNORE);
            if !ignore.exists() {
                let _ = edit::write_atomic(&self.root, &ignore, b"*\n");
            }
        };
        if self.lock_held {
            ignore_self();
            return write(&self.root).is_ok();
        }
        let Ok(mut lock) = BankLock::open(&self.root) else {
            return false;
        };
        // index files are written in `.lesson/`, where the lock's temp-file sweep never looks
        matches!(
            lock.with_unswept(|| {
                ignore_self();
                write(&self.root)
            }),
            Ok(Ok(()))
        )
    }
}

/// Docs a delta may hold before base and delta are merged into a new base: a fixed allowance
/// plus a sixty-fourth of the base, so that a delta stays small next to its base.
pub fn merge_threshold(base_docs: usize) -> usize {
    512 + base_docs / 64
}

enum Change {
    None,
    /// Hashed: same content (with the new stat when it should be kept).
    Hashed(Option<(u32, FileStat)>),
    Reparsed(u32, Record),
    Parsed(Record),
}

fn check(
    rel: &str,
    entry: &index::IndexedFile,
    path: &Path,
    stamp: Option<FileStat>,
    limit: u64,
    config: &Config,
) -> Change {
    let Some(stamp) = stamp else {
        // vanished between the walk and its stat: recorded as unreadable, re-checked next time
        return Change::Reparsed(entry.id, read_record(rel, path, limit, config));
    };
    if unchanged(&entry.stat.stamp(), Some(&stamp), limit) {
        return Change::None;
    }
    let old = entry.stat;
    if stamp.size != old.size || stamp.size > limit {
        return Change::Reparsed(entry.id, read_record(rel, path, limit, config));
    }
    let read_at = wall_clock_ns();
    let Ok(bytes) = std::fs::read(path) else {
        return Change::Reparsed(entry.id, read_record(rel, path, limit, config));
    };
    let hash = codec::checksum(&bytes);
    if hash != old.hash || bytes.len() as u64 != stamp.size {
        return Change::Reparsed(
            entry.id,
            record_from_bytes(
                (rel, path, bytes),
                stamp,
                read_at,
                limit,
                config,
                Ledgers::Look,
            ),
        );
    }
    let stat = FileStat {
        hash,
        settled: settled(&stamp, read_at),
        ..stamp
    };
    if stat == old {
        Change::Hashed(None)
    } else {
        Change::Hashed(Some((entry.id, stat)))
    }
}

/// A lesson file as the walk found it: its path relative to the root, the path's hash
/// ([`segment::path_hash`]) and its stamp ([`stamp`]; `None` when it could not be stat-ed).
struct Walked {
    rel: String,
    hash: u64,
    stamp: Option<FileStat>,
}

/// A walked file joined with the index.
#[derive(Debug, Clone, Copy)]
enum Joined {
    /// No live doc has its path.
    New,
    /// The live doc of its path, whose stat says it is as indexed.
    Unchanged(u32),
    /// The live doc of its path (checked against the doc's), with its stat when indexed.
    Check(u32, FileStat),
}

impl Joined {
    fn id(&self) -> Option<u32> {
        match *self {
            Joined::New => None,
            Joined::Unchanged(id) | Joined::Check(id, _) => Some(id),
        }
    }
}

/// Whether a file's stat says it is as indexed (then it is not read). A file over the size
/// limit is never read: its record holds nothing a racy change could make stale.
/// `old` is what the index holds, `stamp` what the file's stat says now (`None`: it has none).
fn unchanged(old: &FileStamp, stamp: Option<&FileStat>, limit: u64) -> bool {
    stamp.is_some_and(|stamp| old.same(stamp) && (old.settled || stamp.size > limit))
}

/// Read and parse one file into a record, as [`Bank::load`] reads it (a file over the size
/// limit is not read; an unreadable one is no lesson until its stat changes).
pub(super) fn read_record(rel: &str, path: &Path, limit: u64, config: &Config) -> Record {
    read_record_with(Ledgers::Look, rel, (path, None), limit, config)
}

/// [`read_record`], the lesson's ledger found as `ledgers` says, the file opened below `dir`
/// when the root is held open.
fn read_record_with(
    ledgers: Ledgers,
    rel: &str,
    (path, dir): (&Path, Option<&walk::RootDir>),
    limit: u64,
    config: &Config,
) -> Record {
    let read_at = wall_clock_ns();
    let unreadable = |stamp: Option<FileStat>, problem: ReadProblem| {
        let doc = Document::parse(Source::new(path, String::new()), Some(problem));
        let stat = match stamp {
            Some(stamp) => FileStat {
                settled: settled(&stamp, read_at),
                ..stamp
            },
            None => FileStat::default(),
        };
        Record::with_ledgers(rel.to_string(), stat, &doc, config, ledgers)
    };
    let io = |e: std::io::Error| ReadProblem::Io {
        message: e.to_string(),
    };
    // the stat of the open file, not of the path: one lookup of the path, not two
    let file = match dir {
        Some(dir) => dir.open_file(path, Path::new(rel)),
        None => std::fs::File::open(path),
    };
    let (file, meta) = match file.and_then(|f| Ok((f.metadata()?, f))) {
        Ok((meta, file)) => (file, meta),
        // a file that cannot be opened keeps the stat of its path, when it has one, so that
        // it is not read again until that changes
        Err(e) => return unreadable(std::fs::metadata(path).ok().map(|m| stamp(&m)), io(e)),
    };
    let stamp = stamp(&meta);
    if meta.len() > limit {
        return unreadable(
            Some(stamp),
            ReadProblem::TooLarge {
                size: meta.len(),
                limit,
            },
        );
    }
    match read_sized(&file, meta.len()) {
        Ok(bytes) => {
            let file = (rel, path, bytes);
            record_from_bytes(file, stamp, read_at, limit, config, ledgers)
        }
        Err(e) => unreadable(Some(stamp), io(e)),
    }
}

/// The whole of an open file that `stat` said was `size` bytes, in as many reads as it takes
/// (one, then one that finds the end, for a file that did not change): not `read_to_end`, which
/// for a `File` asks the size again (a `statx`) and the position (an `lseek`), two calls more
/// for every file a rebuild reads.
fn read_sized(mut file: &std::fs::File, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    // one byte over the size, so that a file that did not change ends without growing the buffer
    let mut bytes = vec![0; usize::try_from(size).unwrap_or(0).saturating_add(1)];
    let mut len = 0;
    loop {
        if len == bytes.len() {
            // it grew since its stat
            bytes.resize(bytes.len().saturating_mul(2).max(64), 0);
        }
        match file.read(&mut bytes[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(len);
    Ok(bytes)
}

/// The record of a file's bytes (`file`: its path relative to the root, its path, the bytes).
fn record_from_bytes(
    (rel, path, bytes): (&str, &Path, Vec<u8>),
    stamp: FileStat,
    read_at: i64,
    limit: u64,
    config: &Config,
    ledgers: Ledgers,
) -> Record {
    let stat = FileStat {
        size: bytes.len() as u64,
        hash: codec::checksum(&bytes),
        // a file that grew past the limit between stat and read is still a file to re-check
        settled: settled(&stamp, read_at) && bytes.len() as u64 <= limit,
        ..stamp
    };
    let (source, problem) = Source::from_bytes(path.to_path_buf(), bytes);
    let doc = Document::parse(source, problem);
    Record::with_ledgers(rel.to_string(), stat, &doc, config, ledgers)
}

/// What `stat` says of a file (not settled, no hash yet).
fn stamp(meta: &std::fs::Metadata) -> FileStat {
    #[cfg(unix)]
    let (ctime_ns, ino) = {
        use std::os::unix::fs::MetadataExt;
        (
            meta.ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
            meta.ino(),
        )
    };
    #[cfg(not(unix))]
    let (ctime_ns, ino) = (0, 0);
    FileStat {
        size: meta.len(),
        mtime_ns: mtime_ns(meta),
        ctime_ns,
        ino,
        hash: 0,
        settled: false,
    }
}

/// Whether a file read at `read_at_ns` can no longer change unseen within its stat's clock
/// tick: both its mtime and ctime are more than [`SETTLE_NS`] older.
fn settled(stamp: &FileStat, read_at_ns: i64) -> bool {
    read_at_ns.saturating_sub(stamp.mtime_ns.max(stamp.ctime_ns)) > SETTLE_NS
}

fn wall_clock_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A file's mtime in nanoseconds since the epoch (0 when unknown).
pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    let Ok(t) = meta.modified() else {
        return 0;
    };
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// `path` relative to `root`, with `/` separators.
pub fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

pub(crate) use crate::layout::state_path;

/// Load the base and delta; `Err` says why a rebuild is needed.
fn load(root: &Path, config_hash: u64, vouch: Option<&marker::Vouch>) -> Result<Index, String> {
    let base = match Segment::open(&state_path(root, BASE_FILE)) {
        Ok(Ok(base)) => base,
        Ok(Err(damaged)) => return Err(damaged.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("no index yet".into()),
        Err(e) => return Err(format!("cannot read the index: {e}")),
    };
    if base.kind != Kind::Base {
        return Err("the index file is not a base".into());
    }
    if base.header.config_hash != config_hash {
        return Err("the configuration changed".into());
    }
    let delta = match Segment::open(&state_path(root, DELTA_FILE)) {
        Ok(Ok(delta)) => Some(Arc::new(delta)),
        _ => None,
    };
    // bytes a live watcher checked whole are not checked again, not even the sections the
    // index reads as it opens (doc lengths, ranks: 100,000 lessons' worth)
    if let Some(vouch) = vouch.filter(|v| v.checked) {
        let paired = delta
            .as_deref()
            .filter(|d| d.kind == Kind::Delta && d.header.index_id == base.header.index_id);
        let identity = Identity {
            index_id: base.header.index_id,
            generation: paired.map_or(base.header.generation, |d| {
                d.header.generation.max(base.header.generation)
            }),
            base: base.checksum(),
            delta: paired.map(Segment::checksum),
        };
        if identity == vouch.index {
            base.trust();
            paired.map(Segment::trust);
        }
    }
    let base = Arc::new(base);
    let index = match Index::new(base.clone(), delta) {
        Ok(index) => index,
        // a damaged delta only costs re-checking the files: drop it
        Err(_) => Index::new(base, None).map_err(|e| e.to_string())?,
    };
    Ok(index.reading_files_at(root))
}

/// The index id of the base on disk, from its header alone.
fn on_disk_base_id(root: &Path) -> Option<u64> {
    Segment::peek(&state_path(root, BASE_FILE)).map(|(_, header, _)| header.index_id)
}

fn new_index_id(generation: u64) -> u64 {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&wall_clock_ns().to_le_bytes());
    bytes.extend_from_slice(&std::process::id().to_le_bytes());
    bytes.extend_from_slice(&generation.to_le_bytes());
    codec::checksum(&bytes) | 1
}

/// What in the configuration shapes the index: which files are read as lessons, and which
/// findings hold a lesson back (the lint settings).
pub fn config_hash(config: &Config) -> u64 {
    let mut key = format!("v{}\n{}\n", segment::FORMAT_VERSION, config.lint.size_limit);
    for glob in &config.lint.exclude {
        key.push_str(glob);
        key.push('\n');
    }
    key.push_str(&format!("{:?}\n", config.lint));
    super::text::fnv1a(key.as_bytes())
}

/// Records of a loaded bank's documents (stat taken now), for an in-memory index.
pub fn records_of_bank(bank: &Bank) -> Vec<Record> {
    bank.documents
        .par_iter()
        .map(|doc| {
            let meta = std::fs::metadata(&doc.source.path).ok();
            let stat = FileStat {
                hash: codec::checksum(doc.source.text.as_bytes()),
                settled: true,
                ..meta.as_ref().map(stamp).unwrap_or_default()
            };
            Record::new(
                relative(&bank.root, &doc.source.path),
                stat,
                doc,
                &bank.config,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file is read whole whatever its stat said: the size it had, less (it grew since)
    /// or more (it shrank), empty or not.
    #[test]
    fn a_file_is_read_whole_whatever_size_its_stat_gave() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f.md");
        for len in [0usize, 1, 63, 64, 65, 4096, 100_000] {
            let want: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            std::fs::write(&path, &want).unwrap();
            for size in [0, 1, len.saturating_sub(1), len, len + 1, 2 * len + 5] {
                let file = std::fs::File::open(&path).unwrap();
                let got = read_sized(&file, size as u64).unwrap();
                assert!(got == want, "{len} bytes, stat said {size}");
            }
        }
    }

    /// Paths share hashes under test ([`segment::path_hash`] keeps four bits): a check of the
    /// files still takes each file to its own doc, whether its stat vouches for it or not, and
    /// finds what changed, as a fresh build does.
    #[test]
    fn a_check_of_the_files_tells_apart_paths_that_share_a_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let lesson = |slug: &str, word: &str| {
            format!(
                "---\nschema: learning/v1\nslug: {slug}\ntitle: {word} {slug}\n\
                 trigger:\n  description: When {word} happens\noutcome: success\nevidence:\n  \
                 - kind: run\n    ref: r1\n---\n\n# {word}\n"
            )
        };
        let write = |name: &str, word: &str| {
            std::fs::write(root.join(format!("{name}.md")), lesson(name, word)).unwrap()
        };
        const WORDS: [&str; 4] = ["alpha", "bravo", "charlie", "delta"];
        let names: Vec<String> = (0..40).map(|i| format!("l{i:02}")).collect();
        for (i, name) in names.iter().enumerate() {
            write(name, WORDS[i % 4]);
        }
        let hashes: HashSet<u64> = names
            .iter()
            .map(|n| segment::path_hash(&format!("{n}.md")))
            .collect();
        assert!(hashes.len() < names.len(), "no shared hash");
        drop(Retriever::open(root).unwrap());
        // past the settling time, the stats vouch for the files they stamp
        std::thread::sleep(std::time::Duration::from_millis(2_100));
        let r = Retriever::open(root).unwrap();
        let built = r.last_refresh().clone();
        assert_eq!((built.files, built.parsed, built.removed), (40, 0, 0));
        drop(r);
        let r = Retriever::open(root).unwrap();
        let checked = r.last_refresh();
        assert_eq!((checked.hashed, checked.parsed, checked.removed), (0, 0, 0));
        drop(r);

        write("l03", "beta");
        std::fs::remove_file(root.join("l07.md")).unwrap();
        write("n00", "gamma");
        std::fs::rename(root.join("l11.md"), root.join("m11.md")).unwrap();
        let mut r = Retriever::open(root).unwrap();
        let changed = r.last_refresh().clone();
        assert_eq!(
            (
                changed.files,
                changed.hashed,
                changed.parsed,
                changed.removed
            ),
            (40, 1, 3, 2),
            "{changed:?}"
        );
        let now = jiff::Timestamp::now();
        let slugs = |r: &mut Retriever, text: &str| -> Vec<String> {
            let request = Request::new(text).k(50).now(now);
            let mut slugs: Vec<String> = r
                .search(&request)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.slug)
                .collect();
            slugs.sort();
            slugs
        };
        let asked = WORDS.iter().chain(&["beta", "gamma"]);
        let answers: Vec<Vec<String>> = asked.clone().map(|t| slugs(&mut r, t)).collect();
        for (k, answer) in answers[..4].iter().enumerate() {
            // `l07` gone, `l03` now of another word, `l11` at its new path
            let expected: Vec<&String> = names
                .iter()
                .enumerate()
                .filter(|&(i, n)| i % 4 == k && n != "l07" && n != "l03")
                .map(|(_, n)| n)
                .collect();
            assert_eq!(answer.iter().collect::<Vec<_>>(), expected, "{}", WORDS[k]);
        }
        assert_eq!(answers[4], ["l03"]);
        assert_eq!(answers[5], ["n00"]);
        drop(r);
        std::fs::remove_dir_all(root.join(".lesson")).unwrap();
        let mut fresh = Retriever::open(root).unwrap();
        assert!(fresh.last_refresh().rebuilt.is_some());
        for (text, answer) in asked.zip(&answers) {
            assert_eq!(&slugs(&mut fresh, text), answer, "{text}");
        }
    }

    /// An index kept open parses a hit's file once, and serves an edited lesson's new text
    /// (its bytes, not the parse kept of the old ones).
    #[test]
    fn a_kept_open_retriever_serves_an_edited_lesson_as_it_now_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |soil: &str| std::fs::write(tmp.path().join("a.md"), ficus(soil)).unwrap();
        write("dry");
        let mut r = Retriever::open(tmp.path()).unwrap();
        let mut described = || described(&mut r);
        assert_eq!(described(), "When the soil is dry");
        assert_eq!(described(), "When the soil is dry");
        write("wet");
        assert_eq!(described(), "When the soil is wet");
        write("dry");
        assert_eq!(described(), "When the soil is dry");
    }

    /// A lesson whose description says how the soil is.
    fn ficus(soil: &str) -> String {
        format!(
            "---\nschema: learning/v1\nslug: water-the-ficus\ntitle: Water the ficus\n\
             trigger:\n  description: When the soil is {soil}\noutcome: success\n\
             evidence:\n  - kind: run\n    ref: r1\n---\n\n# Water the ficus\n"
        )
    }

    /// The description of the one hit for "water the ficus".
    fn described(r: &mut Retriever) -> String {
        let request = Request::new("water the ficus").now(jiff::Timestamp::now());
        let hits = r.search(&request).unwrap().hits;
        assert_eq!(hits.len(), 1);
        hits[0].description.clone()
    }

    /// Once a lesson's stat is settled, its kept parse is vouched for by a stat that still
    /// says what it said (the file is not read again); an edit of the same size, in place,
    /// is seen all the same.
    #[test]
    #[cfg(unix)]
    fn a_settled_hit_is_vouched_for_by_its_stat_and_an_edit_still_shows() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |soil: &str| {
            let text = ficus(soil);
            let mut file = std::fs::File::options()
                .write(true)
                .create(true)
                .truncate(false)
                .open(tmp.path().join("a.md"))
                .unwrap();
            std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
        };
        write("dry");
        let mut r = Retriever::open(tmp.path()).unwrap();
        // past the settling time, a check of the files records the stat as settled
        std::thread::sleep(std::time::Duration::from_millis(2_100));
        r.refresh().unwrap();
        let indexed = r.index().find("a.md").unwrap().unwrap();
        assert!(indexed.stat.settled, "{:?}", indexed.stat);
        let ino = indexed.stat.ino;
        let mut described = || described(&mut r);
        assert_eq!(described(), "When the soil is dry");
        assert_eq!(described(), "When the soil is dry");
        // the same size, the same inode: only the times tell
        write("wet");
        let now = std::fs::metadata(tmp.path().join("a.md")).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::ino(&now), ino);
        assert_eq!(described(), "When the soil is wet");
    }

    /// A base whose lesson bits are damaged (its head intact) is refused as it opens, unless
    /// a live watcher vouches that it checked these very bytes: then nothing is checked again,
    /// not even what the index reads as it opens.
    #[test]
    fn a_checked_vouch_spares_the_checks_as_the_index_opens() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("a.md"),
            "---\nschema: learning/v1\nslug: water-the-ficus\ntitle: Water the ficus\n\
             trigger:\n  description: When the soil is dry\noutcome: success\nevidence:\n  \
             - kind: run\n    ref: r1\n---\n\n# Water the ficus\n",
        )
        .unwrap();
        let r = Retriever::open(tmp.path()).unwrap();
        let (identity, hash) = (r.identity(), config_hash(r.config()));
        drop(r);
        let path = state_path(tmp.path(), BASE_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let bits = Segment::parse(bytes.clone()).unwrap().lesson_bits_range();
        assert!(!bits.is_empty());
        bytes[bits.start] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let vouch = |index, checked| marker::Vouch {
            pid: 1,
            index,
            checked,
        };
        let opens = |v: Option<&marker::Vouch>| load(tmp.path(), hash, v).is_ok();
        assert!(!opens(None), "damage is found without a vouch");
        assert!(!opens(Some(&vouch(identity, false))), "nor checked");
        assert!(
            opens(Some(&vouch(identity, true))),
            "checked by the watcher"
        );
        let other = Identity {
            generation: identity.generation + 1,
            ..identity
        };
        assert!(!opens(Some(&vouch(other, true))), "a vouch for other bytes");
    }
}
