//! tantivy BM25 with the default tokenizer (split on non-alphanumerics, drop tokens over 40
//! bytes, lowercase; no stemming, no stop words) over `title` and `body`. Queries are parsed
//! leniently after removing query syntax, so each word is an optional (OR) term.

use std::path::Path;

use anyhow::Context;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, Schema, Value, STORED, STRING, TEXT};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument};

use super::{Doc, Hit};

/// Memory budget of the index writer, shared by its threads (tantivy's examples use 50 MB).
const WRITER_BUDGET: usize = 100_000_000;

struct Fields {
    id: Field,
    title: Field,
    body: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let id = builder.add_text_field("id", STRING | STORED);
    let title = builder.add_text_field("title", TEXT);
    let body = builder.add_text_field("body", TEXT);
    (builder.build(), Fields { id, title, body })
}

fn fields(index: &Index) -> anyhow::Result<Fields> {
    let schema = index.schema();
    Ok(Fields {
        id: schema.get_field("id")?,
        title: schema.get_field("title")?,
        body: schema.get_field("body")?,
    })
}

fn fill(index: &Index, docs: impl Iterator<Item = anyhow::Result<Doc>>) -> anyhow::Result<usize> {
    let f = fields(index)?;
    let mut writer: IndexWriter = index.writer(WRITER_BUDGET)?;
    let mut n = 0;
    for doc in docs {
        let doc = doc?;
        let mut d = TantivyDocument::default();
        d.add_text(f.id, &doc.id);
        d.add_text(f.title, &doc.title);
        d.add_text(f.body, &doc.text);
        writer.add_document(d)?;
        n += 1;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    Ok(n)
}

/// Write a fresh index in `dir` (an existing directory is replaced); returns how many documents.
pub fn build(docs: impl Iterator<Item = anyhow::Result<Doc>>, dir: &Path) -> anyhow::Result<usize> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let index = Index::create_in_dir(dir, schema().0)?;
    fill(&index, docs)
}

/// An index in memory, for the evaluation.
pub fn build_in_ram(docs: impl Iterator<Item = anyhow::Result<Doc>>) -> anyhow::Result<Searcher> {
    let index = Index::create_in_ram(schema().0);
    fill(&index, docs)?;
    Searcher::new(index)
}

/// An open index, ready for queries.
pub struct Searcher {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

impl Searcher {
    /// Open the index in `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<Searcher> {
        let index =
            Index::open_in_dir(dir).with_context(|| format!("cannot open {}", dir.display()))?;
        Searcher::new(index)
    }

    fn new(index: Index) -> anyhow::Result<Searcher> {
        let reader = index.reader()?;
        let fields = fields(&index)?;
        Ok(Searcher {
            index,
            reader,
            fields,
        })
    }

    /// The `k` best documents for `text`, by BM25 over title and body.
    pub fn search(&self, text: &str, k: usize) -> anyhow::Result<Vec<Hit>> {
        let parser = QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.body]);
        let (query, _errors) = parser.parse_query_lenient(&plain_words(text));
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(k.max(1)).order_by_score())?;
        top.into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = searcher.doc(address)?;
                let id = doc
                    .get_first(self.fields.id)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
                Ok(Hit {
                    id,
                    score: f64::from(score),
                })
            })
            .collect()
    }
}

/// `text` without query syntax: every character that is not alphanumeric becomes a space (the
/// default tokenizer splits there anyway) and the rest is lowercased (so `AND`, `OR` and `NOT`
/// are words, not operators).
pub fn plain_words(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    spaced
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::super::tests::tiny_bank;
    use super::super::{disk_size, lesson_docs};
    use super::*;

    #[test]
    fn strips_query_syntax() {
        assert_eq!(
            plain_words("title:foo AND (bar^2 OR \"baz\") -qux NOT x*"),
            "title foo and bar 2 or baz qux not x"
        );
        assert_eq!(plain_words("Émile's naïve café"), "émile s naïve café");
    }

    #[test]
    fn ranks_by_bm25_on_disk_and_in_ram() {
        let bank = tiny_bank("bm25");
        let dir = bank.0.join("tantivy");
        assert_eq!(build(lesson_docs(&bank.0).unwrap(), &dir).unwrap(), 3);
        assert!(disk_size(&dir) > 0);
        let on_disk = Searcher::open(&dir).unwrap();
        let in_ram = build_in_ram(lesson_docs(&bank.0).unwrap()).unwrap();
        for s in [&on_disk, &in_ram] {
            let hits = s.search("stale LOCKFILE (ci)", 10).unwrap();
            assert_eq!(hits[0].id, "pin-lockfile");
            assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
            assert_eq!(s.search("AND", 10).unwrap(), vec![]);
            assert_eq!(s.search("", 10).unwrap(), vec![]);
        }
    }
}
