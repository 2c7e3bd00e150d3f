//! Every path a bank has on disk, named once (DESIGN.md §1). The modules that read or write
//! these join the names below to the bank's root; none spells one itself.
//!
//! ```text
//! lessons/                  the bank's root: any directory with lesson.toml (or ./lessons)
//!   lesson.toml             configuration
//!   _index.md               generated, committed
//!   <slug>.md               one lesson (also in subdirectories)
//!   _archive/<slug>.md      lessons moved out of the live set, never deleted
//!   _log/<slug>.jsonl       ledgers: append-only events
//!   _log/_shown.jsonl       what logged searches showed, one line a search (`usage`)
//!   templates/              the bank's template overrides
//!   .gitignore              written by `lesson init`: ignores .lesson/
//!   .gitattributes          written by `lesson init`: ledgers merge by union
//!   .lesson/                local state, git-ignored:
//!     lock                  the bank's lock (every read-modify-write)
//!     retrieve.idx          the retrieval index (base segment)
//!     retrieve.delta        its delta segment
//!     provenance            each lesson's created and changed commits, keyed by HEAD
//!     watch.lock, watch.json  a running `lesson watch` and the index it vouches for
//!     .gitignore            ignores everything in .lesson/ (for banks without `lesson init`)
//! ```

use std::path::{Path, PathBuf};

/// The bank's configuration.
pub const CONFIG_FILE: &str = "lesson.toml";
/// The generated index of the bank's lessons.
pub const INDEX_FILE: &str = "_index.md";
/// Lessons moved out of the live set by `lesson archive`.
pub const ARCHIVE_DIR: &str = "_archive";
/// Ledgers, one `<slug>.jsonl` a lesson.
pub const LOG_DIR: &str = "_log";
/// In [`LOG_DIR`]: the retrieval log, one line for each search logged for a run (`lesson
/// search --log RUN`). Its name starts with `_`, which no slug does, so it is no lesson's
/// ledger; it matches the ledgers' `_log/*.jsonl merge=union` attribute.
pub const SHOWN_LOG: &str = "_shown.jsonl";
/// The bank's template overrides (`templates/<name>`).
pub const TEMPLATES_DIR: &str = "templates";
/// Written by `lesson init` (and in `.lesson/`): what git ignores.
pub const GITIGNORE: &str = ".gitignore";
/// Written by `lesson init`: ledgers merge by union.
pub const GITATTRIBUTES: &str = ".gitattributes";
/// Local state, git-ignored.
pub const STATE_DIR: &str = ".lesson";
/// In [`STATE_DIR`]: the bank's lock.
pub const BANK_LOCK_FILE: &str = "lock";
/// In [`STATE_DIR`]: the retrieval index's base segment.
pub const INDEX_BASE_FILE: &str = "retrieve.idx";
/// In [`STATE_DIR`]: the retrieval index's delta segment.
pub const INDEX_DELTA_FILE: &str = "retrieve.delta";
/// In [`STATE_DIR`]: the lessons' embeddings under `[retrieve] model` (`retrieve::vectors`).
pub const VECTORS_FILE: &str = "retrieve.vectors";
/// In [`STATE_DIR`]: each lesson's created and last-changed commits, keyed by HEAD
/// (`git::provenance`).
pub const PROVENANCE_FILE: &str = "provenance";
/// In [`STATE_DIR`]: held by a running `lesson watch`.
pub const WATCH_LOCK_FILE: &str = "watch.lock";
/// In [`STATE_DIR`]: the identity of the index a running `lesson watch` vouches for.
pub const WATCH_MARKER_FILE: &str = "watch.json";

/// A file's path relative to the bank's root, `/`-separated (as git and the provenance cache
/// name it).
pub fn bank_relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A lesson's file at the bank's top level: `<root>/<slug>.md`.
pub fn lesson_path(root: &Path, slug: &str) -> PathBuf {
    root.join(format!("{slug}.md"))
}

/// Where `lesson archive` moves a lesson: `<root>/_archive/<slug>.md`.
pub fn archive_path(root: &Path, slug: &str) -> PathBuf {
    lesson_path(&root.join(ARCHIVE_DIR), slug)
}

/// A lesson's ledger: `<root>/_log/<slug>.jsonl`.
pub fn log_path(root: &Path, slug: &str) -> PathBuf {
    root.join(LOG_DIR).join(format!("{slug}.jsonl"))
}

/// The retrieval log: `<root>/_log/_shown.jsonl`.
pub fn shown_log_path(root: &Path) -> PathBuf {
    root.join(LOG_DIR).join(SHOWN_LOG)
}

/// Whether a bank-relative path (`/`-separated) is a lesson's ledger, `_log/<slug>.jsonl`:
/// not the retrieval log, nor anything in a subdirectory of `_log/`.
pub fn is_ledger_path(rel: &str) -> bool {
    rel.strip_prefix(LOG_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_suffix(".jsonl"))
        .is_some_and(|name| !name.is_empty() && !name.contains('/') && !name.starts_with('_'))
}

/// A file of the local state: `<root>/.lesson/<name>`.
pub fn state_path(root: &Path, name: &str) -> PathBuf {
    root.join(STATE_DIR).join(name)
}
