//! A bank: discovery, loading every lesson file in parallel, and derived status.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;

use crate::config::{Config, ConfigError, CONFIG_FILE};
use crate::document::{name_hash, Document};
use crate::lesson::Lesson;
use crate::source::{ReadProblem, Source};
use crate::walk::RootDir;

pub use crate::layout::INDEX_FILE;
/// The environment variable that names a bank.
pub const DIR_ENV: &str = "LESSON_DIR";

/// Loading a bank failed.
#[derive(Debug, thiserror::Error)]
pub enum BankError {
    /// The bank directory does not exist.
    #[error("no lesson bank at {0} (create one with `lesson init {0}`)")]
    NotFound(String),
    /// `lesson.toml` is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An exclude glob in `lesson.toml` does not compile.
    #[error("lesson.toml: invalid exclude glob `{glob}`: {message}")]
    Exclude {
        /// The glob.
        glob: String,
        /// Why.
        message: String,
    },
}

pub use crate::walk::{WalkProblem, WalkProblemKind};

/// Why a lesson is or is not active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Retrievable.
    Active,
    /// Named in another lesson's `supersedes` (the superseding slugs, sorted).
    Superseded(Vec<String>),
    /// Admitted in quarantine (`metadata.lesson.quarantine`: the injection-carrier rules it
    /// tripped): never served until `lesson review --approve` clears it.
    Quarantined(Vec<String>),
    /// Past its `expires_at`.
    Expired,
}

impl Status {
    /// A short label: `active`, `superseded`, `quarantined`, `expired`.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded(_) => "superseded",
            Status::Quarantined(_) => "quarantined",
            Status::Expired => "expired",
        }
    }

    /// The status of a lesson that `by` supersede (sorted), judged at `now`: superseded wins
    /// over quarantined, which wins over expired.
    pub fn of(lesson: &Lesson, by: Vec<String>, now: jiff::Timestamp) -> Status {
        if !by.is_empty() {
            Status::Superseded(by)
        } else if let Some(rules) = &lesson.quarantine {
            Status::Quarantined(rules.clone())
        } else if lesson.is_expired(now) {
            Status::Expired
        } else {
            Status::Active
        }
    }
}

/// A loaded bank.
#[derive(Debug)]
pub struct Bank {
    /// The bank directory as shown to the user.
    pub root: PathBuf,
    /// Its configuration.
    pub config: Config,
    /// Whether `lesson.toml` exists.
    pub has_config: bool,
    /// Every lesson file, sorted by path.
    pub documents: Vec<Document>,
    /// `_index.md`, when it exists.
    pub index: Option<Source>,
    /// Problems met while walking.
    pub walk_problems: Vec<WalkProblem>,
    /// The instant expiry is judged at.
    pub now: jiff::Timestamp,
    /// slug -> slugs of lessons that supersede it
    superseded_by: foldhash::HashMap<String, Vec<String>>,
    /// The [`name_hash`] of every slug in `superseded_by`.
    superseded_hashes: foldhash::HashSet<u64>,
}

/// File contents that replace what is on disk, keyed by display path (used by `--diff`).
pub type Overlay = HashMap<PathBuf, String>;

/// Find the bank: `--dir`, then `LESSON_DIR`, then the nearest ancestor of `cwd` holding
/// `lesson.toml`, then `./lessons`.
pub fn discover(dir: Option<&Path>, env: Option<&Path>, cwd: &Path) -> PathBuf {
    if let Some(dir) = dir.or(env) {
        return dir.to_path_buf();
    }
    for ancestor in cwd.ancestors() {
        if ancestor.join(CONFIG_FILE).is_file() {
            return relative_to(ancestor, cwd);
        }
    }
    PathBuf::from("lessons")
}

/// `path` relative to `base` when it lies below it (".` when equal), else as is.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

/// Where "now" comes from: the system clock, or a fixed instant (the command line's
/// `LESSON_NOW`, tests). The library reads no environment: a front end builds the clock, and a
/// long-lived process (`lesson watch`, a server) asks it at each use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// The system clock, read at each use.
    #[default]
    System,
    /// Always this instant.
    Fixed(jiff::Timestamp),
}

impl Clock {
    /// The instant now.
    pub fn now(self) -> jiff::Timestamp {
        match self {
            Clock::System => jiff::Timestamp::now(),
            Clock::Fixed(at) => at,
        }
    }
}

/// Decides whether a document has an error-level finding of its own: its parse diagnostics and
/// the file rules at the bank's levels, suppressions applied. The linter decides
/// (`lint::FileErrors`); the bank, which sits below it, takes the judge as an argument, and a
/// judged bank marks each document ([`Document::has_file_errors`]): `lesson list` and
/// `_index.md` leave such files out.
pub trait ErrorCheck: Sync {
    /// Whether `doc` (parsed in full) has an error-level finding of its own under `config`.
    fn has_errors(&self, doc: &Document, config: &Config, now: jiff::Timestamp) -> bool;
}

/// How much of each document a load keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Everything: text, YAML tree, lesson and body.
    Full,
    /// The lesson and the text, without the YAML tree and body.
    Lessons,
    /// The lesson only (no text).
    Models,
}

impl Bank {
    /// Every file of the bank that was read, and its `_index.md`: what a report of findings
    /// anywhere in the bank can point into (collect into [`crate::report::Sources`]).
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.documents
            .iter()
            .map(|d| &d.source)
            .chain(self.index.as_ref())
    }

    /// The files of the bank that `diagnostics` point into, and its `_index.md`: what a report
    /// needs, without a map of every file of a large bank that is clean.
    pub fn sources_for<'a>(
        &'a self,
        diagnostics: &'a [crate::diagnostic::Diagnostic],
    ) -> impl Iterator<Item = &'a Source> {
        let wanted: std::collections::HashSet<&Path> =
            diagnostics.iter().map(|d| d.path.as_path()).collect();
        let index = if diagnostics.is_empty() {
            None
        } else {
            self.index.as_ref()
        };
        self.documents
            .iter()
            .map(|d| &d.source)
            .filter(move |s| wanted.contains(s.path.as_path()))
            .chain(index)
    }

    /// A bank built from files that need not be on disk: a git tree (`lint --base`), fuzz
    /// inputs, fault tests. `files` are the bank's lesson files as `(path, bytes)`, paths below
    /// `root` as a walk of the bank gives them (`root.join(relative)`); the file at
    /// `root/_index.md` among them is the bank's `_index.md`. Files are read as from disk: over
    /// the size limit, invalid UTF-8 and NUL bytes are read problems, and the documents come in
    /// path order. Nothing is read from disk. With `check`, each document is judged
    /// ([`ErrorCheck`]).
    pub fn from_files(
        root: &Path,
        config: Config,
        files: impl IntoIterator<Item = (PathBuf, Vec<u8>)>,
        now: jiff::Timestamp,
        check: Option<&dyn ErrorCheck>,
    ) -> Bank {
        let index_path = root.join(INDEX_FILE);
        let limit = config.lint.size_limit;
        let mut index = None;
        let mut documents = Vec::new();
        for (path, bytes) in files {
            let size = bytes.len() as u64;
            let (source, problem) = if size > limit {
                let problem = ReadProblem::TooLarge { size, limit };
                (Source::new(path, String::new()), Some(problem))
            } else {
                Source::from_bytes(path, bytes)
            };
            if source.path == index_path {
                index = problem.is_none().then_some(source);
            } else {
                let mut doc = Document::parse(source, problem);
                if let Some(check) = check {
                    doc.set_file_errors(check.has_errors(&doc, &config, now));
                }
                documents.push(doc);
            }
        }
        fn bytes(d: &Document) -> &[u8] {
            d.source.path.as_os_str().as_encoded_bytes()
        }
        documents.sort_by(|a, b| bytes(a).cmp(bytes(b)));
        let mut bank = Bank::assemble(root, config, documents, index, Vec::new(), now);
        bank.has_config = true;
        bank
    }

    /// Load the bank at `root` (a display path, relative to the current directory or absolute),
    /// with expiry judged at `now`. Files are not judged for errors of their own: `lint::load`
    /// judges them.
    pub fn load(root: &Path, now: jiff::Timestamp) -> Result<Bank, BankError> {
        Bank::load_with(root, &Overlay::new(), now)
    }

    /// Load the lessons' frontmatter only, without parsing bodies: for commands that need the
    /// model but not the body. Files are not judged (`lint::load_lessons` judges them).
    pub fn load_lessons(root: &Path, now: jiff::Timestamp) -> Result<Bank, BankError> {
        let (bank, _) = Bank::load_as(root, &Overlay::new(), now, Keep::Lessons, None, |_, _| ())?;
        Ok(bank)
    }

    /// Load with file contents overridden by `overlay` and expiry judged at `now`. Files are
    /// not judged (`lint::load_with` judges them).
    pub fn load_with(
        root: &Path,
        overlay: &Overlay,
        now: jiff::Timestamp,
    ) -> Result<Bank, BankError> {
        let (bank, _) = Bank::load_as(root, overlay, now, Keep::Full, None, |_, _| ())?;
        Ok(bank)
    }

    /// Load, judging each file with `check` ([`ErrorCheck`]) and keeping `keep` of it. A judged
    /// file is parsed in full whatever `keep` says, then slimmed.
    pub fn load_judged(
        root: &Path,
        overlay: &Overlay,
        now: jiff::Timestamp,
        keep: Keep,
        check: &dyn ErrorCheck,
    ) -> Result<Bank, BankError> {
        let (bank, _) = Bank::load_as(root, overlay, now, keep, Some(check), |_, _| ())?;
        Ok(bank)
    }

    /// Load in full, handing each parsed document to `visit` (in parallel, with the bank's
    /// configuration) before it is stored: `visit` takes what it needs and may slim the document
    /// down. Its results come back in the order of [`Bank::documents`]. Whether each document
    /// has errors of its own ([`Document::has_file_errors`]) is `visit`'s to set.
    pub fn load_visiting<T: Send>(
        root: &Path,
        overlay: &Overlay,
        now: jiff::Timestamp,
        visit: impl Fn(&Config, &mut Document) -> T + Sync,
    ) -> Result<(Bank, Vec<T>), BankError> {
        Bank::load_as(root, overlay, now, Keep::Full, None, visit)
    }

    fn load_as<T: Send>(
        root: &Path,
        overlay: &Overlay,
        now: jiff::Timestamp,
        keep: Keep,
        check: Option<&dyn ErrorCheck>,
        visit: impl Fn(&Config, &mut Document) -> T + Sync,
    ) -> Result<(Bank, Vec<T>), BankError> {
        let parse = |config: &Config, file: FoundFile| {
            let (source, problem) = read(file, overlay, config.lint.size_limit);
            let mut doc = if keep == Keep::Full || check.is_some() {
                Document::parse(source, problem)
            } else {
                Document::parse_frontmatter(source, problem)
            };
            if let Some(check) = check {
                doc.set_file_errors(check.has_errors(&doc, config, now));
                if keep != Keep::Full {
                    doc.slim();
                }
            }
            if keep == Keep::Models {
                doc.forget_text();
            }
            let result = visit(config, &mut doc);
            Some((doc, result))
        };
        let (config, batches, walk_problems) = parse_files(root, parse)?;
        // `_index.md` is read while the documents are put in order
        let limit = config.lint.size_limit;
        let ((documents, visited), index) = rayon::join(
            || in_path_order(root, batches),
            || read_index(root, overlay, limit),
        );
        let mut bank = Bank::assemble(root, config, documents, index, walk_problems, now);
        bank.has_config = root.join(CONFIG_FILE).is_file();
        Ok((bank, visited))
    }

    /// Read every lesson file, check it for errors of its own ([`Document::has_file_errors`]),
    /// slim it, and keep only what `keep` makes of each document (the documents themselves are
    /// let go one by one as they are parsed): for a command that
    /// needs one small row per lesson, such as `lesson index`, on a bank of any size. The
    /// returned bank has no documents, so it knows no supersession ([`Bank::status`] says
    /// nothing true of a lesson): statuses are the caller's to derive from its rows, which come in
    /// no particular order. Its `_index.md` is read only when `with_index` asks for it.
    pub fn scan<T: Send>(
        root: &Path,
        now: jiff::Timestamp,
        with_index: bool,
        check: &dyn ErrorCheck,
        keep: impl Fn(&Config, Document) -> Option<T> + Sync,
    ) -> Result<(Bank, Vec<T>), BankError> {
        let overlay = Overlay::new();
        let parse = |config: &Config, file: FoundFile| {
            let (source, problem) = read(file, &overlay, config.lint.size_limit);
            let mut doc = Document::parse(source, problem);
            doc.set_file_errors(check.has_errors(&doc, config, now));
            doc.slim();
            keep(config, doc)
        };
        let (config, batches, walk_problems) = parse_files(root, parse)?;
        let limit = config.lint.size_limit;
        let (rows, index) = rayon::join(
            || {
                let mut rows = Vec::with_capacity(batches.iter().map(Vec::len).sum());
                rows.extend(batches.into_iter().flatten().flatten());
                rows
            },
            || {
                with_index
                    .then(|| read_index(root, &overlay, limit))
                    .flatten()
            },
        );
        let mut bank = Bank::assemble(root, config, Vec::new(), index, walk_problems, now);
        bank.has_config = root.join(CONFIG_FILE).is_file();
        Ok((bank, rows))
    }

    /// The bank around its documents: supersession mapped (`has_config` is the caller's).
    fn assemble(
        root: &Path,
        config: Config,
        documents: Vec<Document>,
        index: Option<Source>,
        walk_problems: Vec<WalkProblem>,
        now: jiff::Timestamp,
    ) -> Bank {
        let mut bank = Bank {
            root: root.to_path_buf(),
            has_config: false,
            config,
            documents,
            index,
            walk_problems,
            now,
            superseded_by: foldhash::HashMap::default(),
            superseded_hashes: foldhash::HashSet::default(),
        };
        bank.superseded_by = bank.supersession_map();
        bank.superseded_hashes = bank.superseded_by.keys().map(|s| name_hash(s)).collect();
        bank
    }

    /// Every parsed lesson with its document, in path order.
    pub fn lessons(&self) -> impl Iterator<Item = (&Document, &Lesson)> {
        self.documents
            .iter()
            .filter_map(|d| d.lesson.as_deref().map(|l| (d, l)))
    }

    /// Lessons by slug; the first file wins when slugs collide.
    pub fn by_slug(&self) -> BTreeMap<&str, (&Document, &Lesson)> {
        let mut map = BTreeMap::new();
        for (doc, lesson) in self.lessons() {
            map.entry(lesson.slug.value.as_str())
                .or_insert((doc, lesson));
        }
        map
    }

    fn supersession_map(&self) -> foldhash::HashMap<String, Vec<String>> {
        let mut map: foldhash::HashMap<String, Vec<String>> = foldhash::HashMap::default();
        // (each document's keys say whether its lesson supersedes anything)
        let superseding = self
            .documents
            .iter()
            .filter(|doc| doc.keys().supersedes)
            .filter_map(|doc| doc.lesson.as_deref());
        for lesson in superseding {
            for old in &lesson.supersedes {
                if old.value != lesson.slug.value {
                    map.entry(old.value.clone())
                        .or_default()
                        .push(lesson.slug.value.clone());
                }
            }
        }
        for v in map.values_mut() {
            v.sort();
            v.dedup();
        }
        map
    }

    /// Every `(superseded slug, superseding slug)` pair this bank's lessons declare, sorted.
    pub fn supersession(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = self
            .superseded_by
            .iter()
            .flat_map(|(old, by)| by.iter().map(move |b| (old.clone(), b.clone())))
            .collect();
        pairs.sort();
        pairs
    }

    /// Take lessons of other banks that supersede lessons of this one into its statuses (a
    /// layered stack, [`crate::layers`]): `old` is then superseded by `by` as if `by` were a
    /// lesson of this bank.
    pub fn supersede_from(&mut self, pairs: impl IntoIterator<Item = (String, String)>) {
        for (old, by) in pairs {
            let list = self.superseded_by.entry(old.clone()).or_default();
            if !list.contains(&by) {
                list.push(by);
                list.sort();
            }
            self.superseded_hashes.insert(name_hash(&old));
        }
    }

    /// Whether some lesson is superseded by more than one other.
    pub(crate) fn has_lesson_superseded_twice(&self) -> bool {
        self.superseded_by.values().any(|by| by.len() > 1)
    }

    /// The slugs of lessons that supersede `slug`, sorted.
    pub fn superseded_by(&self, slug: &str) -> &[String] {
        self.superseded_by.get(slug).map_or(&[], Vec::as_slice)
    }

    /// A lesson's status: superseded wins over quarantined, which wins over expired.
    pub fn status(&self, lesson: &Lesson) -> Status {
        self.status_hashed(lesson, name_hash(&lesson.slug.value))
    }

    /// [`Bank::status`] of a document's lesson (`None` without one), looked up by the hash its
    /// keys hold: a lesson that no other supersedes, almost every one, is known as such without
    /// reading its slug.
    pub fn status_of(&self, doc: &Document) -> Option<Status> {
        let lesson = doc.lesson.as_deref()?;
        Some(self.status_hashed(lesson, doc.keys().slug))
    }

    fn status_hashed(&self, lesson: &Lesson, hash: u64) -> Status {
        let by = if self.superseded_hashes.contains(&hash) {
            self.superseded_by(&lesson.slug.value)
        } else {
            &[]
        };
        Status::of(lesson, by.to_vec(), self.now)
    }

    /// The path of `_index.md`.
    pub fn index_path(&self) -> PathBuf {
        self.root.join(INDEX_FILE)
    }
}

/// A lesson file as [`parse_files`] hands it over: its path, and how to open it.
struct FoundFile<'a> {
    path: PathBuf,
    /// Where the part of `path` below the root starts.
    root_len: usize,
    root: &'a RootDir,
}

fn read(file: FoundFile, overlay: &Overlay, limit: u64) -> (Source, Option<ReadProblem>) {
    match overlay.get(&file.path) {
        Some(text) => Source::from_bytes(file.path, text.clone().into_bytes()),
        None => {
            let opened = file.root.open_file(
                &file.path,
                crate::walk::below_root(&file.path, file.root_len),
            );
            Source::read_opened(opened, file.path, limit)
        }
    }
}

/// What [`parse_files`] gives: the configuration, the results batch by batch, the walk's problems.
type Parsed<R> = (Config, Vec<Vec<R>>, Vec<WalkProblem>);

/// Load the bank's configuration, walk `root` and hand each lesson file's path to `parse`, in
/// parallel, while the walk goes on: the walk runs on its own thread and hands over batches of
/// paths as it finds them, so files are parsed while the directories are still being read. The
/// results come back batch by batch, in no particular order.
fn parse_files<R: Send>(
    root: &Path,
    parse: impl Fn(&Config, FoundFile) -> R + Sync,
) -> Result<Parsed<R>, BankError> {
    if !root.is_dir() {
        return Err(BankError::NotFound(root.display().to_string()));
    }
    let config = Config::load(root)?;
    let exclude = &exclude_set(&config)?;
    let root_dir = RootDir::open(root);
    let (batches, problems) = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(PathBuf, usize)>>(64);
        let walker = scope.spawn(move || {
            const BATCH: usize = 256;
            let mut batch = Vec::with_capacity(BATCH);
            let mut problems = Vec::new();
            crate::walk::walk(
                root,
                exclude,
                &mut |f| {
                    batch.push((f.path, f.root_len));
                    if batch.len() == BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        let _ = tx.send(full);
                    }
                },
                &mut problems,
            );
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
            problems
        });
        // each batch stays in its own vector: what is kept is moved once more (into path order,
        // say) rather than through the growth and concatenation of one big collection
        let batches: Vec<Vec<R>> = rx
            .into_iter()
            .par_bridge()
            .map(|batch| {
                batch
                    .into_iter()
                    .map(|(path, root_len)| {
                        let file = FoundFile {
                            path,
                            root_len,
                            root: &root_dir,
                        };
                        parse(&config, file)
                    })
                    .collect()
            })
            .collect();
        (batches, walker.join().expect("the walk does not panic"))
    });
    Ok((config, batches, problems))
}

/// The bank's `_index.md` (from the overlay when it has it), if it exists and can be read.
fn read_index(root: &Path, overlay: &Overlay, limit: u64) -> Option<Source> {
    let path = root.join(INDEX_FILE);
    if let Some(text) = overlay.get(&path) {
        Some(Source::new(path, text.clone()))
    } else if path.is_file() {
        let (source, problem) = Source::read(&path, path.clone(), limit.max(64 << 20));
        problem.is_none().then_some(source)
    } else {
        None
    }
}

/// Documents (with what their visit returned) sorted by the bytes of their paths: the order
/// of [`lesson_paths`]. Sorts positions, then moves each document once, in parallel: each
/// batch behind a lock that a move holds for a moment (there are hundreds of batches and two
/// or so threads taking from them).
fn in_path_order<T: Send>(
    root: &Path,
    batches: Vec<Vec<Option<(Document, T)>>>,
) -> (Vec<Document>, Vec<T>) {
    fn path<T>(item: &Option<(Document, T)>) -> &[u8] {
        let (doc, _) = item.as_ref().expect("filled by the parse");
        doc.source.path.as_os_str().as_encoded_bytes()
    }
    // every path starts with the root's: positions are sorted by the 8 bytes after it first,
    // which decide most comparisons without reaching into the paths
    let root = root.as_os_str().as_encoded_bytes();
    let skip = if batches
        .iter()
        .flatten()
        .all(|item| path(item).starts_with(root))
    {
        root.len()
    } else {
        0
    };
    let mut order: Vec<(u64, &[u8], u32, u32)> =
        Vec::with_capacity(batches.iter().map(Vec::len).sum());
    order.extend(batches.iter().enumerate().flat_map(|(b, batch)| {
        batch.iter().enumerate().map(move |(i, item)| {
            let path = path(item);
            let mut head = [0u8; 8];
            let rest = &path[skip..];
            let n = rest.len().min(8);
            head[..n].copy_from_slice(&rest[..n]);
            // a tie is broken by the bytes after those 8, not from the root on: a path holds no
            // NUL, so equal heads are the same bytes (and the root's are the same in all)
            (u64::from_be_bytes(head), &rest[n..], b as u32, i as u32)
        })
    }));
    order.par_sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    let order: Vec<(usize, usize)> = order
        .into_iter()
        .map(|(_, _, b, i)| (b as usize, i as usize))
        .collect();
    let batches: Vec<std::sync::Mutex<_>> =
        batches.into_iter().map(std::sync::Mutex::new).collect();
    let mut documents = Vec::with_capacity(order.len());
    let mut visited = Vec::with_capacity(order.len());
    order
        .par_iter()
        .map(|&(b, i)| {
            let mut batch = batches[b].lock().unwrap_or_else(|e| e.into_inner());
            batch[i].take().expect("each position once")
        })
        .unzip_into_vecs(&mut documents, &mut visited);
    (documents, visited)
}

/// The compiled `[lint] exclude` globs of a configuration.
pub fn exclude_set(config: &Config) -> Result<GlobSet, BankError> {
    let mut builder = GlobSetBuilder::new();
    for glob in &config.lint.exclude {
        let g = Glob::new(glob).map_err(|e| BankError::Exclude {
            glob: glob.clone(),
            message: e.kind().to_string(),
        })?;
        builder.add(g);
    }
    builder.build().map_err(|e| BankError::Exclude {
        glob: String::new(),
        message: e.to_string(),
    })
}

/// The bank's lesson files (`*.md`, recursively), sorted by their bytes, and problems met on the
/// way.
pub fn lesson_paths(root: &Path, exclude: &GlobSet) -> (Vec<PathBuf>, Vec<WalkProblem>) {
    let mut paths = Vec::new();
    let mut problems = Vec::new();
    crate::walk::walk(root, exclude, &mut |f| paths.push(f.path), &mut problems);
    // byte order: deterministic, and much cheaper than comparing paths component by component
    paths.par_sort_unstable_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    (paths, problems)
}

#[cfg(test)]
mod tests {
    /// A bank built from the bytes of a fixture bank's files lints exactly as the bank loaded
    /// from disk (the same documents in the same order, the same findings).
    #[test]
    fn a_bank_from_files_lints_as_the_bank_on_disk() {
        let root = std::path::Path::new("tests/fixtures/banks/ledger");
        let now: jiff::Timestamp = "2026-11-22T12:00:00Z".parse().unwrap();
        let on_disk = super::Bank::load_with(root, &super::Overlay::new(), now).unwrap();
        let mut files: Vec<(std::path::PathBuf, Vec<u8>)> = on_disk
            .sources()
            .map(|s| (s.path.clone(), std::fs::read(&s.path).unwrap()))
            .collect();
        files.reverse();
        let config = crate::config::Config::load(root).unwrap();
        let from_files = super::Bank::from_files(root, config, files, now, None);
        let paths = |b: &super::Bank| -> Vec<std::path::PathBuf> {
            b.documents.iter().map(|d| d.source.path.clone()).collect()
        };
        assert_eq!(paths(&from_files), paths(&on_disk));
        assert_eq!(from_files.index.is_some(), on_disk.index.is_some());
        let selection = crate::lint::Selection::default();
        let findings = crate::lint::lint(&on_disk, &selection);
        assert!(!findings.is_empty(), "the fixture has findings to compare");
        assert_eq!(crate::lint::lint(&from_files, &selection), findings);
    }

    use super::*;

    /// Documents come in the byte order of their paths whatever order the walk finds them
    /// in: names that share their first eight bytes, a file beside a directory of the same
    /// stem, non-ASCII names.
    #[test]
    fn documents_are_in_path_byte_order() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let names = [
            "a.md",
            "a/b.md",
            "a/a/a.md",
            "a-b.md",
            "ab.md",
            "aaaaaaa.md",
            "aaaaaaaa.md",
            "aaaaaaaab.md",
            "aaaaaaaa/x.md",
            "Z.md",
            "\u{e9}.md",
            "z/\u{e9}t\u{e9}.md",
        ];
        for name in names {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "# not a lesson\n").unwrap();
        }
        let bank = Bank::load_with(root, &Overlay::new(), jiff::Timestamp::UNIX_EPOCH).unwrap();
        let got: Vec<&[u8]> = bank
            .documents
            .iter()
            .map(|d| d.source.path.as_os_str().as_encoded_bytes())
            .collect();
        let mut want: Vec<Vec<u8>> = names
            .iter()
            .map(|n| root.join(n).into_os_string().into_encoded_bytes())
            .collect();
        want.sort();
        assert_eq!(got, want.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }

    #[test]
    fn discovery_order() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        let flag = Path::new("flag");
        let env = Path::new("env");
        assert_eq!(discover(Some(flag), Some(env), &deep), flag);
        assert_eq!(discover(None, Some(env), &deep), env);
        assert_eq!(discover(None, None, &deep), Path::new("lessons"));
        std::fs::write(root.join("a").join(CONFIG_FILE), "").unwrap();
        assert_eq!(discover(None, None, &deep), root.join("a"));
        std::fs::write(deep.join(CONFIG_FILE), "").unwrap();
        assert_eq!(discover(None, None, &deep), Path::new("."));
    }

    #[test]
    fn walk_skips_index_archive_hidden_and_templates() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for dir in ["_archive", ".lesson", "templates", "sub"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in [
            "a.md",
            "_index.md",
            "_archive/old.md",
            ".lesson/x.md",
            "templates/t.md",
            "sub/b.md",
            "README.md",
            "notes.txt",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let exclude = exclude_set(&Config::default()).unwrap();
        let (paths, problems) = lesson_paths(root, &exclude);
        let rel: Vec<_> = paths
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        assert_eq!(rel, vec![PathBuf::from("a.md"), PathBuf::from("sub/b.md")]);
        assert!(problems.is_empty());
    }
}
