//! A retrieval test set in BEIR's layout: `corpus.jsonl` (`_id`, `title`, `text`),
//! `queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv` (`query-id corpus-id score`, tab
//! separated, a header line, extra columns ignored).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// A document of the corpus.
pub struct Document {
    /// `_id`.
    pub id: String,
    /// `title` (may be empty).
    pub title: String,
    /// `text`.
    pub text: String,
}

/// A query.
pub struct Query {
    /// `_id`.
    pub id: String,
    /// `text`.
    pub text: String,
}

/// A loaded set.
pub struct TestSet {
    /// The directory's name (`ir-cranfield`).
    pub name: String,
    /// The corpus, in file order.
    pub corpus: Vec<Document>,
    /// The queries, in file order.
    pub queries: Vec<Query>,
    /// Query id to (document id to grade).
    pub qrels: HashMap<String, HashMap<String, f64>>,
    /// The qrels file read.
    pub qrels_file: PathBuf,
}

/// Load the set in `dir`; `split` names the qrels file (`test` reads `qrels/test.tsv`). With no
/// split, `qrels/test.tsv` is read when it exists, else the only `.tsv` in `qrels/`.
pub fn load(dir: &Path, split: Option<&str>) -> anyhow::Result<TestSet> {
    let name = dir
        .canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .file_name()
        .map_or_else(|| "set".into(), |n| n.to_string_lossy().into_owned());
    let corpus = read_jsonl(&dir.join("corpus.jsonl"), |v| {
        Ok(Document {
            id: string_field(v, "_id")?,
            title: v["title"].as_str().unwrap_or("").to_string(),
            text: v["text"].as_str().unwrap_or("").to_string(),
        })
    })?;
    let queries = read_jsonl(&dir.join("queries.jsonl"), |v| {
        Ok(Query {
            id: string_field(v, "_id")?,
            text: string_field(v, "text")?,
        })
    })?;
    let qrels_file = qrels_file(&dir.join("qrels"), split)?;
    let text = std::fs::read_to_string(&qrels_file)
        .with_context(|| format!("cannot read {}", qrels_file.display()))?;
    let qrels = parse_qrels(&text).with_context(|| format!("in {}", qrels_file.display()))?;
    Ok(TestSet {
        name,
        corpus,
        queries,
        qrels,
        qrels_file,
    })
}

fn qrels_file(dir: &Path, split: Option<&str>) -> anyhow::Result<PathBuf> {
    if let Some(split) = split {
        let file = dir.join(format!("{split}.tsv"));
        if !file.is_file() {
            bail!("no qrels file {}", file.display());
        }
        return Ok(file);
    }
    let test = dir.join("test.tsv");
    if test.is_file() {
        return Ok(test);
    }
    let mut tsvs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    tsvs.sort();
    match tsvs.len() {
        1 => Ok(tsvs.remove(0)),
        0 => bail!("no .tsv file in {}", dir.display()),
        _ => bail!(
            "several qrels files in {} ({}): pick one with --split",
            dir.display(),
            tsvs.iter()
                .filter_map(|p| p.file_stem())
                .map(|s| s.to_string_lossy())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `query-id corpus-id score` lines; a first line whose score is not a number is the header.
pub fn parse_qrels(text: &str) -> anyhow::Result<HashMap<String, HashMap<String, f64>>> {
    let mut qrels: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 3 {
            bail!("line {}: expected query-id, corpus-id and score", i + 1);
        }
        let Ok(score) = cols[2].trim().parse::<f64>() else {
            if i == 0 {
                continue;
            }
            bail!("line {}: score {:?} is not a number", i + 1, cols[2]);
        };
        qrels
            .entry(cols[0].trim().to_string())
            .or_default()
            .insert(cols[1].trim().to_string(), score);
    }
    Ok(qrels)
}

fn string_field(v: &serde_json::Value, key: &str) -> anyhow::Result<String> {
    match &v[key] {
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        _ => bail!("no string `{key}`"),
    }
}

fn read_jsonl<T>(
    path: &Path,
    mut each: impl FnMut(&serde_json::Value) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let v: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not JSON", path.display(), i + 1))?;
            each(&v).with_context(|| format!("{}:{}", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_skip_the_header_and_extra_columns() {
        let q = parse_qrels(
            "query-id\tcorpus-id\tscore\tcode\n1\t184\t3\t2\n1\t29\t0\t-1\nQ-2\t<a:b>\t2\n",
        )
        .unwrap();
        assert_eq!(q["1"]["184"], 3.0);
        assert_eq!(q["1"]["29"], 0.0);
        assert_eq!(q["Q-2"]["<a:b>"], 2.0);
        assert!(parse_qrels("1\t2\n").is_err());
        assert!(parse_qrels("h\th\th\n1\t2\tx\n").is_err());
    }
}
