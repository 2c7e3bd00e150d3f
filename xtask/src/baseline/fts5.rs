//! SQLite FTS5 with the trigram tokenizer: what a user who wants "rg, but indexed" would set up.
//! A query is one quoted phrase, which under the trigram tokenizer means a case-insensitive
//! substring match, the same semantics as `rg -i -F`; hits are ranked by FTS5's BM25 `rank`.

use std::path::Path;

use anyhow::Context;
use rusqlite::Connection;

use super::{Doc, Hit};

/// Write a fresh database at `db` (an existing one is replaced) holding `docs`; returns how many.
pub fn build(docs: impl Iterator<Item = anyhow::Result<Doc>>, db: &Path) -> anyhow::Result<usize> {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    let mut conn =
        Connection::open(db).with_context(|| format!("cannot create {}", db.display()))?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, body, tokenize = 'trigram');",
    )?;
    let tx = conn.transaction()?;
    let mut n = 0;
    {
        let mut insert = tx.prepare("INSERT INTO docs (id, title, body) VALUES (?1, ?2, ?3)")?;
        for doc in docs {
            let doc = doc?;
            insert.execute((&doc.id, &doc.title, &doc.text))?;
            n += 1;
        }
    }
    tx.commit()?;
    Ok(n)
}

/// The FTS5 query for `text`: one phrase, with `"` doubled.
pub fn phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The `k` best documents containing `text` (case-insensitive substring; at least 3 characters
/// for the trigram tokenizer to match anything).
pub fn query(db: &Path, text: &str, k: usize) -> anyhow::Result<Vec<Hit>> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open {}", db.display()))?;
    let mut stmt =
        conn.prepare("SELECT id, rank FROM docs WHERE docs MATCH ?1 ORDER BY rank LIMIT ?2")?;
    let hits = stmt
        .query_map((phrase(text), k as i64), |row| {
            Ok(Hit {
                id: row.get(0)?,
                score: -row.get::<_, f64>(1)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::super::tests::tiny_bank;
    use super::super::{disk_size, lesson_docs};
    use super::*;

    #[test]
    fn finds_substrings_case_insensitively_and_ranks() {
        let bank = tiny_bank("fts5");
        let db = bank.0.join("fts5.db");
        assert_eq!(build(lesson_docs(&bank.0).unwrap(), &db).unwrap(), 3);
        assert!(disk_size(&db) > 0);
        let ids = |q: &str| -> Vec<String> {
            query(&db, q, 10)
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect()
        };
        assert_eq!(ids("RATE LIMIT"), ["retry-rate-limit"]);
        assert_eq!(ids("lockfile"), ["pin-lockfile"]);
        assert_eq!(ids("yaml titles"), ["quote-yaml"]);
        assert!(ids("say \"hi\"").is_empty());
        // rebuilding replaces the database
        assert_eq!(build(lesson_docs(&bank.0).unwrap(), &db).unwrap(), 3);
        assert_eq!(ids("lockfile").len(), 1);
    }
}
