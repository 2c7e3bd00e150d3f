//! Measure `lesson` retrieval on a BEIR-format set (corpus.jsonl, queries.jsonl,
//! qrels/test.tsv) against a word-level BM25 baseline shaped like tantivy's defaults (split on
//! non-alphanumeric characters, lowercase, drop tokens over 40 bytes, k1 1.2, b 0.75, title and
//! text fields summed).
//!
//! ```sh
//! cargo run --release --example retrieval_eval -- ../shared/corpora/ir-cranfield /tmp/cranfield-bank
//! ```
//!
//! The bank is written on the first run (one lesson per document: title, the first 1000
//! characters of the text as the trigger description, the full text as the body, no tags or
//! targets; slugs `doc-00000`… in corpus order) and searched through the persisted index with
//! the default `[retrieve]` settings, as `lesson search -k 10` does. `--set field=value`
//! overrides a ranking setting (title, description, tags, body, words, k1, b, min-similarity).
//! Metrics: nDCG@10 with graded gains (as pytrec_eval computes it), Recall@10 and MRR@10, over
//! the queries with at least one relevant document.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use lesson::retrieve::{Request, Retriever};

struct Doc {
    id: String,
    title: String,
    text: String,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = PathBuf::from(&args[0]);
    let bank = PathBuf::from(&args[1]);
    let sets: Vec<(String, f64)> = args[2..]
        .windows(2)
        .filter(|w| w[0] == "--set")
        .map(|w| {
            let (k, v) = w[1].split_once('=').expect("--set key=value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect();
    let docs = read_corpus(&corpus.join("corpus.jsonl"));
    let queries = read_queries(&corpus.join("queries.jsonl"));
    let qrels = read_qrels(&corpus.join("qrels/test.tsv"));
    if !bank.join("lesson.toml").exists() {
        write_bank(&bank, &docs);
    }
    let slug_to_id: HashMap<String, String> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (slug(i), d.id.clone()))
        .collect();

    let t = Instant::now();
    let mut retriever = Retriever::open(&bank).expect("open");
    eprintln!("open: {:.1?} {:?}", t.elapsed(), retriever.last_refresh());
    let mut settings = retriever.settings().clone();
    for (k, v) in &sets {
        match k.as_str() {
            "title" => settings.field_weights[0] = *v,
            "description" => settings.field_weights[1] = *v,
            "tags" => settings.field_weights[2] = *v,
            "body" => settings.field_weights[3] = *v,
            "words" => settings.word_weight = *v,
            "k1" => settings.k1 = *v,
            "b" => settings.b = *v,
            "min-similarity" => settings.min_similarity = *v,
            other => panic!("unknown setting {other}"),
        }
    }
    retriever.set_settings(settings);

    let bm25 = Bm25::new(&docs);
    let mut ours = Metrics::default();
    let mut base = Metrics::default();
    let mut postings = 0u64;
    let mut searches = 0u32;
    let mut ours_time = std::time::Duration::ZERO;
    for (qid, text) in &queries {
        let Some(rels) = qrels.get(qid) else { continue };
        let request = Request::new(text.clone()).k(10);
        let t = Instant::now();
        let found = retriever.search(&request).expect("search");
        ours_time += t.elapsed();
        searches += 1;
        postings += found.postings;
        let ranked: Vec<&str> = found
            .hits
            .iter()
            .map(|h| slug_to_id[&h.slug].as_str())
            .collect();
        ours.add(&ranked, rels);
        let ranked: Vec<&str> = bm25
            .search(text, 10)
            .into_iter()
            .map(|i| docs[i].id.as_str())
            .collect();
        base.add(&ranked, rels);
    }
    println!("{}", corpus.display());
    println!("  lesson search  {}", ours.report());
    println!("  bm25 baseline  {}", base.report());
    println!(
        "  lesson search: {:.2?}/query, {:.0} postings read per query",
        ours_time / searches.max(1),
        postings as f64 / f64::from(searches.max(1))
    );
}

#[derive(Default)]
struct Metrics {
    n: usize,
    ndcg: f64,
    recall: f64,
    mrr: f64,
}

impl Metrics {
    fn add(&mut self, ranked: &[&str], rels: &HashMap<String, f64>) {
        let relevant: usize = rels.values().filter(|&&g| g > 0.0).count();
        if relevant == 0 {
            return;
        }
        self.n += 1;
        let mut dcg = 0.0;
        let mut found = 0;
        let mut rr = 0.0;
        for (i, id) in ranked.iter().take(10).enumerate() {
            let g = rels.get(*id).copied().unwrap_or(0.0);
            if g > 0.0 {
                dcg += g / ((i + 2) as f64).log2();
                found += 1;
                if rr == 0.0 {
                    rr = 1.0 / (i + 1) as f64;
                }
            }
        }
        let mut ideal: Vec<f64> = rels.values().copied().filter(|&g| g > 0.0).collect();
        ideal.sort_by(|a, b| b.total_cmp(a));
        let idcg: f64 = ideal
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, g)| g / ((i + 2) as f64).log2())
            .sum();
        self.ndcg += dcg / idcg;
        self.recall += found as f64 / relevant as f64;
        self.mrr += rr;
    }

    fn report(&self) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "nDCG@10 {:.4}  Recall@10 {:.4}  MRR@10 {:.4}  ({} queries)",
            self.ndcg / n,
            self.recall / n,
            self.mrr / n,
            self.n
        )
    }
}

fn slug(i: usize) -> String {
    format!("doc-{i:05}")
}

fn write_bank(bank: &Path, docs: &[Doc]) {
    std::fs::create_dir_all(bank).unwrap();
    std::fs::write(bank.join("lesson.toml"), "").unwrap();
    for (i, d) in docs.iter().enumerate() {
        let title = if d.title.trim().is_empty() {
            d.id.as_str()
        } else {
            d.title.trim()
        };
        let description: String = d.text.chars().take(1000).collect();
        let text = format!(
            "---\nschema: learning/v1\nslug: {}\ntitle: {}\ntrigger:\n  description: {}\noutcome: success\nevidence:\n  - kind: run\n    ref: beir-{}\n---\n\n# {}\n\n{}\n",
            slug(i),
            lesson::yaml::emit::yaml_scalar(title),
            lesson::yaml::emit::yaml_scalar(description.trim()),
            i,
            title,
            d.text
        );
        std::fs::write(bank.join(format!("{}.md", slug(i))), text).unwrap();
    }
}

fn read_corpus(path: &Path) -> Vec<Doc> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Doc {
                id: v["_id"].as_str().unwrap().to_string(),
                title: v["title"].as_str().unwrap_or("").to_string(),
                text: v["text"].as_str().unwrap_or("").to_string(),
            }
        })
        .collect()
}

fn read_queries(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["_id"].as_str().unwrap().to_string(),
                v["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn read_qrels(path: &Path) -> HashMap<String, HashMap<String, f64>> {
    let mut out: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        out.entry(cols[0].to_string())
            .or_default()
            .insert(cols[1].to_string(), cols[2].parse().unwrap());
    }
    out
}

/// Word-level BM25 over title and text, like a default tantivy index.
struct Bm25 {
    fields: [Field; 2],
    n: usize,
}

struct Field {
    postings: HashMap<String, Vec<(usize, u32)>>,
    lens: Vec<u32>,
    avg: f64,
}

fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty() && t.len() <= 40)
        .map(str::to_lowercase)
        .collect()
}

impl Field {
    fn new(texts: &[&str]) -> Field {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lens = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let toks = tokens(t);
            lens.push(toks.len() as u32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for tok in toks {
                *tf.entry(tok).or_default() += 1;
            }
            for (tok, n) in tf {
                postings.entry(tok).or_default().push((i, n));
            }
        }
        let avg = lens.iter().map(|&l| l as f64).sum::<f64>() / lens.len().max(1) as f64;
        Field {
            postings,
            lens,
            avg,
        }
    }
}

impl Bm25 {
    fn new(docs: &[Doc]) -> Bm25 {
        let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
        let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
        Bm25 {
            fields: [Field::new(&titles), Field::new(&texts)],
            n: docs.len(),
        }
    }

    fn search(&self, query: &str, k: usize) -> Vec<usize> {
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for tok in tokens(query) {
            for f in &self.fields {
                let Some(list) = f.postings.get(&tok) else {
                    continue;
                };
                let df = list.len() as f64;
                let idf = (1.0 + (self.n as f64 - df + 0.5) / (df + 0.5)).ln();
                for &(d, tf) in list {
                    let tf = tf as f64;
                    let norm = 1.2 * (1.0 - 0.75 + 0.75 * f.lens[d] as f64 / f.avg);
                    *scores.entry(d).or_default() += idf * tf * 2.2 / (tf + norm);
                }
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(k).map(|(d, _)| d).collect()
    }
}
