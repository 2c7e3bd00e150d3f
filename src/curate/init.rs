//! `lesson init`: a new bank, or what an existing bank lacks (`.gitignore` and `.gitattributes`
//! lines, `lesson.toml`, `_index.md`, the merge driver in the clone's git configuration).

use std::path::{Path, PathBuf};

use crate::bank::{BankError, Overlay, INDEX_FILE};
use crate::config::CONFIG_FILE;
use crate::edit::{EditError, STATE_DIR, TEMP_PREFIX};
use crate::git::driver::Installed;
use crate::git::repo::{BankRepo, GitError};
use crate::index_md::IndexError;

pub use crate::layout::GITATTRIBUTES;
pub use crate::layout::GITIGNORE;

/// `lesson.toml` of a new bank: every setting commented out at its default.
pub const INIT_CONFIG: &str = r#"# lesson.toml: the configuration of this lesson bank.
# Every setting is optional; a commented line shows the default.

[lint]
# Files larger than this many bytes are reported, not read.
# size-limit = 1048576
# Globs (relative to the bank) of markdown files that are not lessons.
# exclude = ["README.md"]

[lint.rules]
# Rule levels by code or name: "error", "warning", "info" or "off"; `lesson rule` lists the rules.
# index-stale = "error"

[review]
# The mixed band (`lesson review`, rule L003): both counts at least mixed-min, and the smaller
# at least mixed-ratio of the larger.
# mixed-min = 3
# mixed-ratio = 0.5
# A lesson with no recorded outcome this many days after it was created is listed for review.
# unapplied-days = 90
# With logged searches (`lesson search --log RUN`): a lesson shown to this many runs and followed
# in none, and one no logged search showed for this many days, are listed (0: never).
# shown-never-followed = 10
# unshown-days = 90

[distill]
# The gates of `lesson distill` (see the README): at most max-candidates per run (more refuses
# the answer); runs whose trajectory has fewer than min-steps steps are skipped; candidates the
# judge rates below min-confidence are dropped (an admitted lesson is stored at 0.5 whatever
# the rating); with secrets set to "redact", secrets in bodies and notes become
# `[redacted: KIND]` instead of refusing the answer.
# max-candidates = 5
# min-steps = 0
# min-confidence = 0.0
# secrets = "refuse"

[retention]
# `lesson archive --policy` moves the lessons these rules name to _archive/. Every rule is off
# until set: archive-expired-after-days, archive-failure-dominant-after-days,
# archive-contradicted-at, archive-below-utility (after min-shown showings) and
# review-contradicted-at (see the README). A lesson with `metadata.lesson.pinned: true` never
# moves.
# min-shown = 10
"#;

/// The lines `.gitattributes` of a bank needs: ledgers merge by union (built into git), lesson
/// files and `_index.md` by the bank's merge driver (`lesson git install`).
pub const ATTRIBUTE_LINES: &[&str] = &[
    "_log/*.jsonl merge=union",
    "*.md merge=lesson",
    "_index.md merge=lesson",
];

/// The lines `.gitignore` of a bank needs: the local state, and the temp files a writer killed
/// before its rename leaves until the next writer's lock.
pub fn ignore_lines() -> [String; 2] {
    [format!("{STATE_DIR}/"), format!("{TEMP_PREFIX}*")]
}

/// `lesson init` failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// `_index.md` could not be rendered or written.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The bank could not be loaded.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The merge driver could not be registered in the repository's configuration.
    #[error("cannot register the merge driver: {0}")]
    Git(#[from] GitError),
}

/// What `lesson init` did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// The file did not exist and was written.
    Created,
    /// The file existed; these missing lines were appended (nothing else changed).
    Appended(Vec<String>),
    /// The file existed and had everything.
    Unchanged,
}

/// What `lesson init` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialized {
    /// Each file of [`init_files`] and what happened to it, in that order.
    pub files: Vec<(PathBuf, FileChange)>,
    /// The merge driver's registration, when the bank is in a git repository.
    pub driver: Option<Installed>,
}

impl Initialized {
    /// Whether the bank existed already (a file was there before).
    pub fn upgraded(&self) -> bool {
        self.files.iter().any(|(_, c)| *c != FileChange::Created)
    }
}

/// The files `lesson init` creates, in the order it writes them.
pub fn init_files(dir: &Path) -> [PathBuf; 4] {
    [
        dir.join(CONFIG_FILE),
        dir.join(GITIGNORE),
        dir.join(GITATTRIBUTES),
        dir.join(INDEX_FILE),
    ]
}

/// The lines of `needed` that `text` lacks. A `.gitattributes` line counts as present when a
/// line has the same pattern and the same `merge=` attribute; an ignore line when a line is it.
fn missing_lines(text: &str, needed: &[String]) -> Vec<String> {
    let present = |want: &str| {
        let mut w = want.split_whitespace();
        let (pattern, attr) = (w.next(), w.next());
        text.lines().any(|line| {
            let mut tokens = line.split_whitespace();
            tokens.next() == pattern && attr.is_none_or(|a| tokens.any(|t| t == a))
        })
    };
    needed.iter().filter(|l| !present(l)).cloned().collect()
}

/// Set up a bank at `dir`, or bring an existing one up to date: write `lesson.toml` and
/// `_index.md` when absent (never changing them when present), append the missing lines of
/// `.gitignore` and `.gitattributes` (creating them when absent; existing lines are never
/// rewritten), and, when the bank is in a git repository, register the merge driver in its
/// configuration ([`crate::git::driver::install`]). `now` is the instant the bank is loaded at
/// to render a new `_index.md`. Running it twice changes nothing the second time.
pub fn init(dir: &Path, now: jiff::Timestamp) -> Result<Initialized, InitError> {
    std::fs::create_dir_all(dir).map_err(|source| EditError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let files = init_files(dir);
    let changes = crate::edit::BankLock::open(dir)?.with(|| -> Result<_, InitError> {
        let [config, gitignore, gitattributes, index] = &files;
        let exists = |p: &Path| p.symlink_metadata().is_ok();
        let mut changes = Vec::new();
        changes.push(if exists(config) {
            FileChange::Unchanged
        } else {
            crate::edit::write_atomic(dir, config, INIT_CONFIG.as_bytes())?;
            FileChange::Created
        });
        let attributes: Vec<String> = ATTRIBUTE_LINES.iter().map(|l| l.to_string()).collect();
        for (path, needed) in [
            (gitignore, ignore_lines().to_vec()),
            (gitattributes, attributes),
        ] {
            changes.push(add_lines(dir, path, &needed)?);
        }
        changes.push(if exists(index) {
            FileChange::Unchanged
        } else {
            let bank = crate::lint::load_with(dir, &Overlay::new(), now)?;
            crate::index_md::refresh(&bank)?;
            FileChange::Created
        });
        Ok(changes)
    })??;
    let driver = match BankRepo::open(dir) {
        Ok(repo) => Some(crate::git::driver::install(&repo)?),
        Err(GitError::NotARepository(_) | GitError::Bare(_) | GitError::Outside { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    Ok(Initialized {
        files: files.into_iter().zip(changes).collect(),
        driver,
    })
}

/// Create `path` with `needed`, or append the lines of `needed` it lacks.
fn add_lines(dir: &Path, path: &Path, needed: &[String]) -> Result<FileChange, InitError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let text: String = needed.iter().map(|l| format!("{l}\n")).collect();
            crate::edit::write_atomic(dir, path, text.as_bytes())?;
            return Ok(FileChange::Created);
        }
        Err(source) => {
            return Err(EditError::Io {
                path: path.display().to_string(),
                source,
            }
            .into())
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let missing = missing_lines(&text, needed);
    if missing.is_empty() {
        return Ok(FileChange::Unchanged);
    }
    let mut new = bytes.clone();
    if !new.is_empty() && !new.ends_with(b"\n") {
        new.push(b'\n');
    }
    for line in &missing {
        new.extend_from_slice(line.as_bytes());
        new.push(b'\n');
    }
    crate::edit::write_atomic(dir, path, &new)?;
    Ok(FileChange::Appended(missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_lines_match_pattern_and_attribute() {
        let needed: Vec<String> = ATTRIBUTE_LINES.iter().map(|l| l.to_string()).collect();
        let text = "_log/*.jsonl   merge=union -text\n*.md merge=binary\n";
        assert_eq!(
            missing_lines(text, &needed),
            ["*.md merge=lesson", "_index.md merge=lesson"]
        );
        assert_eq!(
            missing_lines(".lesson/\n", &ignore_lines()),
            [".lesson-tmp-*"]
        );
    }

    #[test]
    fn init_on_an_existing_bank_appends_what_is_missing_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join(GITATTRIBUTES), "*.png binary").unwrap();
        std::fs::write(dir.join(CONFIG_FILE), "# mine\n").unwrap();
        std::fs::write(dir.join(INDEX_FILE), "stale\n").unwrap();
        let now = "2026-11-22T12:00:00Z".parse().unwrap();
        let done = init(dir, now).unwrap();
        assert!(done.upgraded());
        let changes: Vec<&FileChange> = done.files.iter().map(|(_, c)| c).collect();
        assert_eq!(
            changes,
            [
                &FileChange::Unchanged,
                &FileChange::Created,
                &FileChange::Appended(ATTRIBUTE_LINES.iter().map(|l| l.to_string()).collect()),
                &FileChange::Unchanged,
            ]
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(GITATTRIBUTES)).unwrap(),
            "*.png binary\n_log/*.jsonl merge=union\n*.md merge=lesson\n_index.md merge=lesson\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(CONFIG_FILE)).unwrap(),
            "# mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join(INDEX_FILE)).unwrap(),
            "stale\n"
        );
        let again = init(dir, now).unwrap();
        assert!(again.files.iter().all(|(_, c)| *c == FileChange::Unchanged));
    }

    #[test]
    fn init_config_shows_the_defaults() {
        let parsed = crate::lint::parse_config(INIT_CONFIG, "lesson.toml").unwrap();
        assert_eq!(parsed, crate::config::Config::default());
        let uncommented: String = INIT_CONFIG
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if rest.contains(" = ") => rest,
                _ => l,
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let parsed = crate::lint::parse_config(&uncommented, "lesson.toml").unwrap();
        let mut expected = crate::config::Config::default();
        expected
            .lint
            .rules
            .insert("index-stale".into(), crate::config::Level::Error);
        assert_eq!(parsed, expected);
    }
}
