//! The tools a user would pick instead of `lesson search`, as code: SQLite FTS5 with the trigram
//! tokenizer and tantivy's BM25. `cargo xtask bench search` runs them as child processes through
//! `cargo xtask bench-helper` (see `helper.rs`); `cargo xtask eval-retrieval` calls BM25 in
//! process. Both index the same thing: a title and the full text of each document.

#[cfg(feature = "baselines")]
pub mod bm25;
#[cfg(feature = "baselines")]
pub mod fts5;

use std::path::{Path, PathBuf};

use anyhow::Context;

/// One document to index.
pub struct Doc {
    /// What a hit returns (a lesson's slug, a BEIR document id).
    pub id: String,
    /// The title (a lesson's `# ` heading).
    pub title: String,
    /// The full text (a lesson's whole file, frontmatter included).
    pub text: String,
}

/// A ranked hit, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The document's id.
    pub id: String,
    /// The tool's own score (BM25 for both; FTS5's `rank` is negated so that higher is better).
    pub score: f64,
}

/// The lesson files of a bank: every `*.md` except `_index.md`, in hidden directories neither
/// (`.lesson/`, `.git/`), sorted.
pub fn lesson_files(bank: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![bank.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".md") && name != "_index.md" {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The lessons of a bank as documents, read one at a time (so that a build's peak memory is the
/// index's, not the bank's).
pub fn lesson_docs(bank: &Path) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Doc>>> {
    Ok(lesson_files(bank)?.into_iter().map(|path| {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .unwrap_or("")
            .trim()
            .to_string();
        Ok(Doc { id, title, text })
    }))
}

/// Total size in bytes of the files under `path` (or of `path` itself).
pub fn disk_size(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| disk_size(&e.path()))
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed on drop.
    pub struct Scratch(pub PathBuf);

    impl Scratch {
        pub fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A three-lesson bank with an `_index.md` and a hidden index directory to skip.
    pub fn tiny_bank(name: &str) -> Scratch {
        let s = Scratch::new(name);
        let lesson = |title: &str, body: &str| {
            format!("---\nschema: learning/v1\ntitle: {title}\n---\n\n# {title}\n\n{body}\n")
        };
        let files = [
            (
                "retry-rate-limit.md",
                lesson(
                    "Retry when the API returns 429.",
                    "Back off on a rate limit.",
                ),
            ),
            (
                "pin-lockfile.md",
                lesson(
                    "Pin the lockfile in CI.",
                    "A stale lockfile broke the build.",
                ),
            ),
            (
                "quote-yaml.md",
                lesson("Quote YAML titles.", "Colons in titles break YAML."),
            ),
            (
                "_index.md",
                "# Lessons\n\nrate limit lockfile\n".to_string(),
            ),
            (".lesson/x.md", "rate limit".to_string()),
        ];
        for (name, text) in files {
            let path = s.0.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        s
    }

    #[test]
    fn walks_lessons_only_and_reads_titles() {
        let bank = tiny_bank("walk");
        let docs: Vec<Doc> = lesson_docs(&bank.0)
            .unwrap()
            .collect::<anyhow::Result<_>>()
            .unwrap();
        let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["pin-lockfile", "quote-yaml", "retry-rate-limit"]);
        assert_eq!(docs[0].title, "Pin the lockfile in CI.");
        assert!(disk_size(&bank.0) > disk_size(&bank.0.join("pin-lockfile.md")));
    }
}
