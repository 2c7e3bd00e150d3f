//! The dense systems of `cargo xtask eval-retrieval --model DIR`: the sentence encoder through
//! lesson's own code (`lesson::semantic`), cosine over every document; and lesson's hybrid
//! ranking, lesson's lexical similarity fused with that cosine by `lesson::semantic::fuse`.
//!
//! Document embeddings are cached under the set's work directory, keyed by the model's
//! identity, so that a second run embeds only the queries.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use lesson::semantic::{self, Model};

use super::{beir, metrics, System};

/// The cosine of every document to every judged query, with what it took.
pub struct Dense {
    /// `cosines[q][d]`: query `q` (judged order) against document `d` (corpus order).
    pub cosines: Vec<Vec<f32>>,
    /// Loading the model and embedding the corpus (zero when the embeddings were cached).
    pub build: Duration,
    /// Per query: embedding it and scoring every document.
    pub query_times: Vec<Duration>,
}

/// The text of a document the encoder reads: its title, then its text.
fn doc_text(d: &beir::Document) -> String {
    if d.title.is_empty() {
        d.text.clone()
    } else {
        format!("{}\n{}", d.title, d.text)
    }
}

/// Embed the corpus (or read the cache) and every judged query.
pub fn embed(
    model_dir: &Path,
    corpus: &[beir::Document],
    queries: &[&beir::Query],
    work: &Path,
) -> anyhow::Result<Dense> {
    let started = Instant::now();
    let model = Model::load(model_dir)?;
    let dim = model.dimension();
    let cache = work.join(format!("dense-{}.f32", &model.identity()[..16]));
    let docs: Vec<Vec<f32>> = match std::fs::read(&cache) {
        Ok(bytes) if bytes.len() == corpus.len() * dim * 4 => bytes
            .chunks_exact(dim * 4)
            .map(|v| {
                v.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            })
            .collect(),
        _ => {
            eprintln!(
                "dense: embedding {} documents with {}",
                corpus.len(),
                model_dir.display()
            );
            let texts: Vec<String> = corpus.iter().map(doc_text).collect();
            let mut docs = Vec::with_capacity(texts.len());
            for (i, chunk) in texts.chunks(256).enumerate() {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                docs.extend(model.embed(&refs)?);
                eprintln!("  {} of {}", (i * 256 + chunk.len()), texts.len());
            }
            let bytes: Vec<u8> = docs
                .iter()
                .flatten()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            std::fs::write(&cache, bytes)
                .with_context(|| format!("cannot write {}", cache.display()))?;
            docs
        }
    };
    let build = started.elapsed();
    let mut cosines = Vec::with_capacity(queries.len());
    let mut query_times = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        let v = model.embed_one(&q.text)?;
        cosines.push(docs.iter().map(|d| semantic::dot(&v, d)).collect());
        query_times.push(started.elapsed());
    }
    Ok(Dense {
        cosines,
        build,
        query_times,
    })
}

/// Rank documents by a score per document, best first (ties by corpus order), top `k`.
fn top(scores: &[f64], corpus: &[beir::Document], k: usize) -> Vec<(String, f64)> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(k)
        .map(|i| (corpus[i].id.clone(), scores[i]))
        .collect()
}

fn system(
    name: &'static str,
    rankings: Vec<Vec<(String, f64)>>,
    queries: &[&beir::Query],
    qrels: &HashMap<String, HashMap<String, f64>>,
    k: usize,
) -> System {
    let scores = queries
        .iter()
        .zip(&rankings)
        .map(|(q, r)| {
            let ids: Vec<String> = r.iter().map(|(id, _)| id.clone()).collect();
            metrics::evaluate(&ids, &qrels[&q.id], k)
        })
        .collect();
    System {
        name,
        skipped: None,
        scores,
        rankings,
        build: None,
        query_times: Vec::new(),
        peak_rss_kib: None,
    }
}

/// The dense system: every document by cosine.
pub fn dense_system(
    dense: &Dense,
    corpus: &[beir::Document],
    queries: &[&beir::Query],
    qrels: &HashMap<String, HashMap<String, f64>>,
    k: usize,
) -> System {
    let rankings = dense
        .cosines
        .iter()
        .map(|c| {
            top(
                &c.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(),
                corpus,
                k,
            )
        })
        .collect();
    let mut s = system(
        "dense MiniLM (lesson::semantic)",
        rankings,
        queries,
        qrels,
        k,
    );
    s.build = Some(dense.build);
    s.query_times = dense.query_times.clone();
    s
}

/// The hybrid system at `weight`: lesson's lexical similarity (from its ranking, documents it
/// did not return count 0) fused with the cosine by [`semantic::fuse`] over every document.
pub fn hybrid_system(
    name: &'static str,
    dense: &Dense,
    lexical: &[Vec<(String, f64)>],
    weight: f64,
    corpus: &[beir::Document],
    queries: &[&beir::Query],
    qrels: &HashMap<String, HashMap<String, f64>>,
    k: usize,
) -> System {
    let position: HashMap<&str, usize> = corpus
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let rankings = dense
        .cosines
        .iter()
        .zip(lexical)
        .map(|(cos, lex)| {
            let mut lexical = vec![0.0; corpus.len()];
            for (id, s) in lex {
                if let Some(&i) = position.get(id.as_str()) {
                    lexical[i] = *s;
                }
            }
            let cos: Vec<f64> = cos.iter().map(|&x| f64::from(x)).collect();
            top(&semantic::fuse(&lexical, &cos, weight), corpus, k)
        })
        .collect();
    system(name, rankings, queries, qrels, k)
}
