//! `lesson init`: a new bank.

use std::path::{Path, PathBuf};

use crate::bank::{BankError, Overlay, INDEX_FILE};
use crate::config::CONFIG_FILE;
use crate::edit::{EditError, STATE_DIR, TEMP_PREFIX};
use crate::index_md::IndexError;

pub use crate::layout::GITATTRIBUTES;
pub use crate::layout::GITIGNORE;
/// Ledgers are append-only: git merges them by keeping the lines of both sides.
pub const INIT_GITATTRIBUTES: &str = "_log/*.jsonl merge=union\n";

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
"#;

/// `lesson init` failed or was refused.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// `lesson init` would overwrite files.
    #[error("refusing to overwrite {}: {dir} is already set up as a bank", .files.join(", "))]
    Exists {
        /// The bank directory.
        dir: String,
        /// The existing files.
        files: Vec<String>,
    },
    /// `_index.md` could not be rendered or written.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The bank could not be loaded.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] EditError),
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

/// Create a bank at `dir`: `lesson.toml`, `.gitignore`, `.gitattributes`, `_index.md`. Refuses
/// (writing nothing) when any of them exists. `now` is the instant the new bank is loaded at
/// to render its `_index.md`. Returns the files written.
pub fn init(dir: &Path, now: jiff::Timestamp) -> Result<Vec<PathBuf>, InitError> {
    let files = init_files(dir);
    let refuse = |files: &[PathBuf]| {
        let existing: Vec<String> = files
            .iter()
            .filter(|p| p.symlink_metadata().is_ok())
            .map(|p| p.display().to_string())
            .collect();
        if existing.is_empty() {
            Ok(())
        } else {
            Err(InitError::Exists {
                dir: dir.display().to_string(),
                files: existing,
            })
        }
    };
    refuse(&files)?;
    std::fs::create_dir_all(dir).map_err(|source| EditError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    crate::edit::BankLock::open(dir)?.with(|| {
        // again under the lock: another `lesson init` may have won the race
        refuse(&files)?;
        let [config, gitignore, gitattributes, _index] = &files;
        crate::edit::write_atomic(dir, config, INIT_CONFIG.as_bytes())?;
        // a writer killed before its rename leaves a temp file until the next writer's lock
        let ignored = format!("{STATE_DIR}/\n{TEMP_PREFIX}*\n");
        crate::edit::write_atomic(dir, gitignore, ignored.as_bytes())?;
        crate::edit::write_atomic(dir, gitattributes, INIT_GITATTRIBUTES.as_bytes())?;
        let bank = crate::lint::load_with(dir, &Overlay::new(), now)?;
        crate::index_md::refresh(&bank)?;
        Ok(files.to_vec())
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

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
