//! The dense systems of `cargo xtask eval-retrieval` (xtask's `baselines` feature, which turns
//! on lesson's `semantic`): the sentence encoder through lesson's own code (`lesson::semantic`),
//! cosine over every document; lesson's hybrid ranking (`lesson::semantic::hybrid` of `lesson
//! search`'s lexical hits and the cosine); and the fusion variants it was chosen from, each over
//! a sweep of weights and for each text of a document the encoder may read.
//!
//! Embeddings are kept on disk under `target/bench/embeddings/`, one file per model identity,
//! each vector under the hash of the text it embeds ([`Store`]): a rerun embeds only the
//! queries, and a changed corpus only its changed documents.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use lesson::semantic::{self, Embedder};

use super::{bank, beir, metrics, System};
use crate::bench::json::Json;
use crate::bench::table::{Align, Table};

/// What text of a document the encoder reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DocText {
    /// The BEIR title, a newline, the text.
    TitleText,
    /// The text alone.
    Text,
    /// What the lesson written for the document holds: its title, `trigger.description` (the
    /// text on one line, cut at 1000 characters) and its body (the text).
    Lesson,
}

impl DocText {
    const ALL: [DocText; 3] = [DocText::TitleText, DocText::Text, DocText::Lesson];

    fn name(self) -> &'static str {
        match self {
            DocText::TitleText => "title + text",
            DocText::Text => "text",
            DocText::Lesson => "title + description + body",
        }
    }

    fn of(self, d: &beir::Document) -> String {
        match self {
            DocText::TitleText if d.title.is_empty() => d.text.clone(),
            DocText::TitleText => format!("{}\n{}", d.title, d.text),
            DocText::Text => d.text.clone(),
            DocText::Lesson => format!(
                "{}\n{}\n{}",
                bank::title_for(d),
                bank::description_for(d),
                bank::clean_text(&d.text).trim()
            ),
        }
    }
}

/// The text the dense system and lesson's hybrid embed.
const PRIMARY: DocText = DocText::TitleText;

/// Texts embedded per call (and appended to the store after each).
const CHUNK: usize = 64;

/// Embeddings on disk, content-addressed: `<dir>/<model identity>-<dimension>.f32` holds one
/// record per text, its [`semantic::text_key`] (40 ASCII bytes) then its vector
/// (little-endian `f32`s). Records are appended as they are embedded; a torn last record (an
/// interrupted run) is cut off when the store opens.
pub struct Store {
    path: PathBuf,
    dim: usize,
    vectors: HashMap<String, Vec<f32>>,
}

/// What [`Store::embed`] had to compute.
#[derive(Debug, Default, Clone, Copy)]
pub struct Embedded {
    /// Texts embedded now (the rest came from the store).
    pub count: usize,
    /// The time the encoder took for them.
    pub time: Duration,
}

impl Store {
    const KEY: usize = 40;

    /// Open (or start) the store of `model` in `dir`.
    pub fn open(dir: &Path, model: &dyn Embedder) -> anyhow::Result<Store> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let dim = model.dimension();
        let path = dir.join(format!("{}-{dim}.f32", model.identity()));
        let record = Self::KEY + dim * 4;
        let mut vectors = HashMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let whole = bytes.len() / record * record;
                if whole != bytes.len() {
                    let file = std::fs::OpenOptions::new().write(true).open(&path)?;
                    file.set_len(whole as u64)?;
                }
                for r in bytes[..whole].chunks_exact(record) {
                    let key = String::from_utf8_lossy(&r[..Self::KEY]).into_owned();
                    let v = r[Self::KEY..]
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    vectors.insert(key, v);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
        Ok(Store { path, dim, vectors })
    }

    /// The vectors of `texts` in their order: from the store, else embedded by `model` (and
    /// stored).
    pub fn embed(
        &mut self,
        model: &dyn Embedder,
        texts: &[String],
    ) -> anyhow::Result<(Vec<Vec<f32>>, Embedded)> {
        let keys: Vec<String> = texts.iter().map(|t| semantic::text_key(t)).collect();
        let mut missing: Vec<usize> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (i, key) in keys.iter().enumerate() {
            if !self.vectors.contains_key(key) && queued.insert(key.as_str()) {
                missing.push(i);
            }
        }
        let mut embedded = Embedded::default();
        if !missing.is_empty() {
            eprintln!(
                "dense: embedding {} texts (the other {} are repeats or in the store {})",
                missing.len(),
                texts.len() - missing.len(),
                self.path.display()
            );
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        for chunk in missing.chunks(CHUNK) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
            let started = Instant::now();
            let vectors = model.embed(&batch)?;
            embedded.time += started.elapsed();
            embedded.count += chunk.len();
            let mut bytes = Vec::with_capacity(chunk.len() * (Self::KEY + self.dim * 4));
            for (&i, v) in chunk.iter().zip(vectors) {
                bytes.extend(keys[i].as_bytes());
                bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                self.vectors.insert(keys[i].clone(), v);
            }
            file.write_all(&bytes)
                .with_context(|| format!("cannot write {}", self.path.display()))?;
            eprintln!(
                "  {} of {} ({:.1} ms per text)",
                embedded.count,
                missing.len(),
                embedded.time.as_secs_f64() * 1e3 / embedded.count as f64
            );
        }
        let out = keys.iter().map(|k| self.vectors[k].clone()).collect();
        Ok((out, embedded))
    }
}

/// One judged query's two sides.
struct Sides<'a> {
    /// `lesson search`'s hits (document index, score), best first.
    lexical: Vec<(usize, f64)>,
    /// The cosine of every document.
    cosine: &'a [f32],
    /// The [`DENSE_POOL`] documents of highest cosine, best first.
    dense: Vec<usize>,
}

/// Documents of the dense side a fusion over candidates sees at most (as many as the lexical
/// side's [`super::POOL`]).
const DENSE_POOL: usize = 100;

/// The documents of highest score, best first (ties by index), `n` at most.
fn top_n(scores: &[f64], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(n);
    order
}

/// The fusions measured.
#[derive(Debug, Clone, Copy)]
enum Fusion {
    /// Over every document: lexical / its max (0 for a document the lexical side did not
    /// return), cosine min-max normalised over the corpus; convex.
    MinMaxAll,
    /// Reciprocal rank fusion of the lexical hits and the dense top [`DENSE_POOL`]:
    /// `(1 − w) / (k + lexical rank) + w / (k + dense rank)`, an absent rank adding 0.
    Rrf(f64),
    /// Over the union of each side's top `n`: each side's score as a z-score over its own top
    /// `n` (a document the lexical side did not return takes its lowest score); convex.
    ZUnion(usize),
    /// As [`Fusion::ZUnion`], each side min-max normalised over its own top `n`.
    MinMaxUnion(usize),
    /// Over the union of each side's top `n`: the raw scores, both on a fixed scale (lesson's
    /// similarity in `[0, 1)`, 0 for a document the lexical side did not return; the cosine);
    /// convex. lesson's own (`lesson::semantic::hybrid`).
    Raw(usize),
}

impl Fusion {
    const ALL: [Fusion; 13] = [
        Fusion::MinMaxAll,
        Fusion::Rrf(10.0),
        Fusion::Rrf(30.0),
        Fusion::Rrf(60.0),
        Fusion::ZUnion(10),
        Fusion::ZUnion(20),
        Fusion::ZUnion(50),
        Fusion::ZUnion(100),
        Fusion::MinMaxUnion(20),
        Fusion::MinMaxUnion(100),
        Fusion::Raw(10),
        Fusion::Raw(20),
        Fusion::Raw(100),
    ];

    fn name(self) -> String {
        match self {
            Fusion::MinMaxAll => "min-max, all documents".into(),
            Fusion::Rrf(k) => format!("RRF k={k}"),
            Fusion::ZUnion(n) => format!("z-score, union of top {n}"),
            Fusion::MinMaxUnion(n) => format!("min-max, union of top {n}"),
            Fusion::Raw(n) => format!("raw scores, union of top {n}"),
        }
    }

    /// The fused score of each candidate.
    fn fuse(self, s: &Sides, w: f64) -> Vec<(usize, f64)> {
        match self {
            Fusion::MinMaxAll => {
                let max = s.lexical.first().map_or(0.0, |&(_, x)| x);
                let (lo, hi) = s
                    .cosine
                    .iter()
                    .fold((f32::MAX, f32::MIN), |(lo, hi), &c| (lo.min(c), hi.max(c)));
                let mut lexical = vec![0.0; s.cosine.len()];
                for &(d, x) in &s.lexical {
                    lexical[d] = if max > 0.0 { x / max } else { 0.0 };
                }
                let span = f64::from(hi - lo);
                s.cosine
                    .iter()
                    .enumerate()
                    .map(|(d, &c)| {
                        let c = if span > 0.0 {
                            f64::from(c - lo) / span
                        } else {
                            0.0
                        };
                        (d, (1.0 - w) * lexical[d] + w * c)
                    })
                    .collect()
            }
            Fusion::Rrf(k) => {
                let mut fused: HashMap<usize, f64> = HashMap::new();
                for (rank, &(d, _)) in s.lexical.iter().enumerate() {
                    *fused.entry(d).or_default() += (1.0 - w) / (k + rank as f64 + 1.0);
                }
                for (rank, &d) in s.dense.iter().enumerate() {
                    *fused.entry(d).or_default() += w / (k + rank as f64 + 1.0);
                }
                fused.into_iter().collect()
            }
            Fusion::Raw(n) => library_fusion(s, n, w),
            Fusion::ZUnion(n) | Fusion::MinMaxUnion(n) => {
                let z = matches!(self, Fusion::ZUnion(_));
                let lexical = &s.lexical[..n.min(s.lexical.len())];
                let dense = &s.dense[..n.min(s.dense.len())];
                let lex_scores: Vec<f64> = lexical.iter().map(|&(_, x)| x).collect();
                let cos_scores: Vec<f64> = dense.iter().map(|&d| f64::from(s.cosine[d])).collect();
                let norm_lex = Normal::of(&lex_scores, z);
                let norm_cos = Normal::of(&cos_scores, z);
                let lowest = lex_scores.last().copied().unwrap_or(0.0);
                let by_doc: HashMap<usize, f64> = lexical.iter().copied().collect();
                let mut candidates: Vec<usize> = lexical.iter().map(|&(d, _)| d).collect();
                candidates.extend(dense.iter().filter(|d| !by_doc.contains_key(d)));
                candidates
                    .into_iter()
                    .map(|d| {
                        let l = norm_lex.apply(by_doc.get(&d).copied().unwrap_or(lowest));
                        let c = norm_cos.apply(f64::from(s.cosine[d]));
                        (d, (1.0 - w) * l + w * c)
                    })
                    .collect()
            }
        }
    }
}

/// A normalisation fitted on one side's scores: `(x − center) / scale`.
struct Normal {
    center: f64,
    scale: f64,
}

impl Normal {
    /// z-scores (`z`) or min-max.
    fn of(scores: &[f64], z: bool) -> Normal {
        if scores.is_empty() {
            return Normal {
                center: 0.0,
                scale: 0.0,
            };
        }
        if z {
            let n = scores.len() as f64;
            let mean = scores.iter().sum::<f64>() / n;
            let var = scores.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
            Normal {
                center: mean,
                scale: var.sqrt(),
            }
        } else {
            let lo = scores.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            Normal {
                center: lo,
                scale: hi - lo,
            }
        }
    }

    fn apply(&self, x: f64) -> f64 {
        if self.scale > 0.0 {
            (x - self.center) / self.scale
        } else {
            0.0
        }
    }
}

/// Fusion weights measured (0 = lexical, 1 = dense).
const WEIGHTS: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
const WEIGHT_COLUMNS: [&str; 9] = [
    "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9",
];

/// A ranking of candidates, best first (ties by corpus order), cut at `k`, as document ids.
fn ranked(
    mut scored: Vec<(usize, f64)>,
    corpus: &[beir::Document],
    k: usize,
) -> Vec<(String, f64)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
        .into_iter()
        .take(k)
        .map(|(d, x)| (corpus[d].id.clone(), x))
        .collect()
}

/// Score rankings (one per judged query) into a system.
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

/// Run the dense systems with the model in `model_dir` and append them to `systems` (after
/// lesson's lexical one, whose hits are the hybrid's lexical side); returns the report's section
/// (embedding speed, the fusion tables) and its JSON.
pub fn run(
    model_dir: &Path,
    set: &beir::TestSet,
    queries: &[&beir::Query],
    store_dir: &Path,
    k: usize,
    systems: &mut Vec<System>,
) -> anyhow::Result<(String, Json)> {
    let started = Instant::now();
    let model = semantic::load(model_dir)?;
    let model: &dyn Embedder = model.as_ref();
    let load = started.elapsed();
    let mut store = Store::open(store_dir, model)?;
    let corpus = &set.corpus;

    // the requests, embedded one at a time as a search would
    let mut request_vectors = Vec::with_capacity(queries.len());
    let mut request_times = Vec::with_capacity(queries.len());
    for q in queries {
        let started = Instant::now();
        request_vectors.push(model.embed(&[q.text.as_str()])?.pop().unwrap_or_default());
        request_times.push(started.elapsed());
    }
    let mut sorted = request_times.clone();
    sorted.sort();
    let request_median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();

    let position: HashMap<&str, usize> = corpus
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let lexical: Option<Vec<Vec<(usize, f64)>>> = systems
        .iter()
        .find(|s| s.name == "lesson search" && s.skipped.is_none())
        .map(|s| {
            s.rankings
                .iter()
                .map(|r| {
                    r.iter()
                        .filter_map(|(id, x)| Some((*position.get(id.as_str())?, *x)))
                        .collect()
                })
                .collect()
        });

    let mut report = String::new();
    let mut json_rows = Vec::new();
    let mut speed = Vec::new();
    for text in DocText::ALL {
        let texts: Vec<String> = corpus.iter().map(|d| text.of(d)).collect();
        let (docs, embedded) = store.embed(model, &texts)?;
        if embedded.count > 0 {
            speed.push((text, embedded));
        }
        let mut query_times = Vec::with_capacity(queries.len());
        let cosines: Vec<Vec<f32>> = request_vectors
            .iter()
            .zip(&request_times)
            .map(|(v, t)| {
                let started = Instant::now();
                let c = docs.iter().map(|d| semantic::dot(v, d)).collect();
                query_times.push(*t + started.elapsed());
                c
            })
            .collect();
        let dense_rankings: Vec<Vec<(String, f64)>> = cosines
            .iter()
            .map(|c| {
                let scores: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
                let top = top_n(&scores, k);
                top.into_iter()
                    .map(|d| (corpus[d].id.clone(), scores[d]))
                    .collect()
            })
            .collect();
        let dense = system("dense", dense_rankings, queries, &set.qrels, k);
        let dense_ndcg = metrics::mean(&dense.scores).ndcg;
        if text == PRIMARY {
            let mut s = dense;
            s.name = super::DENSE;
            s.build = Some(load + embedded.time);
            s.query_times = query_times;
            systems.push(s);
        }
        let Some(lexical) = &lexical else { continue };
        let sides: Vec<Sides> = lexical
            .iter()
            .zip(&cosines)
            .map(|(lex, cos)| {
                let scores: Vec<f64> = cos.iter().map(|&x| f64::from(x)).collect();
                Sides {
                    lexical: lex.clone(),
                    cosine: cos,
                    dense: top_n(&scores, DENSE_POOL),
                }
            })
            .collect();
        let evaluate = |f: &dyn Fn(&Sides) -> Vec<(usize, f64)>| -> f64 {
            let rankings = sides.iter().map(|s| ranked(f(s), corpus, k)).collect();
            metrics::mean(&system("fused", rankings, queries, &set.qrels, k).scores).ndcg
        };
        if text == PRIMARY {
            let weight = model.default_weight();
            let rankings = sides
                .iter()
                .map(|s| ranked(library_fusion(s, DENSE_POOL, weight), corpus, k))
                .collect();
            let name: &'static str =
                Box::leak(format!("lesson hybrid (weight {weight})").into_boxed_str());
            systems.push(system(name, rankings, queries, &set.qrels, k));
        }
        let mut header = vec![("fusion", Align::Left)];
        header.extend(WEIGHT_COLUMNS.iter().map(|w| (*w, Align::Right)));
        header.push(("best", Align::Right));
        let mut table = Table::new(header);
        for fusion in Fusion::ALL {
            let mut row = vec![fusion.name()];
            let mut best = (0.0, f64::NEG_INFINITY);
            for w in WEIGHTS {
                let ndcg = evaluate(&|s| fusion.fuse(s, w));
                if ndcg > best.1 {
                    best = (w, ndcg);
                }
                row.push(format!("{ndcg:.4}"));
                json_rows.push(Json::Obj(vec![
                    ("text", Json::str(text.name())),
                    ("fusion", Json::str(fusion.name())),
                    ("weight", Json::Num(w)),
                    ("ndcg", Json::Num(ndcg)),
                ]));
            }
            row.push(format!("{:.4} at {:.1}", best.1, best.0));
            table.row(row);
        }
        json_rows.push(Json::Obj(vec![
            ("text", Json::str(text.name())),
            ("fusion", Json::str("dense")),
            ("weight", Json::Num(1.0)),
            ("ndcg", Json::Num(dense_ndcg)),
        ]));
        report += &format!(
            "\nfusion of lesson search's top {} and the cosine, nDCG@{k}; documents embedded as {} \
             (dense alone {dense_ndcg:.4}); weight 0 = lexical, 1 = dense:\n",
            super::POOL,
            text.name()
        );
        report += &table.render();
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut head = format!(
        "\nembedding ({}): model loaded in {:.2} s; requests embedded one at a time, median {:.1} ms",
        model_dir.display(),
        load.as_secs_f64(),
        ms(request_median)
    );
    for (text, e) in &speed {
        head += &format!(
            "; {} documents ({}) in {:.1} s, {:.1} ms per document (wall time, one text per thread)",
            e.count,
            text.name(),
            e.time.as_secs_f64(),
            ms(e.time) / e.count as f64
        );
    }
    if speed.is_empty() {
        head += "; every document's vector came from the store";
    }
    head += "\n";
    let json = Json::Obj(vec![
        ("model", Json::str(model.identity())),
        ("load_s", Json::Num(load.as_secs_f64())),
        ("request_median_ms", Json::Num(ms(request_median))),
        (
            "embedded",
            Json::Arr(
                speed
                    .iter()
                    .map(|(text, e)| {
                        Json::Obj(vec![
                            ("text", Json::str(text.name())),
                            ("documents", Json::Int(e.count as u64)),
                            ("ms_per_document", Json::Num(ms(e.time) / e.count as f64)),
                        ])
                    })
                    .collect(),
            ),
        ),
        ("fusion", Json::Arr(json_rows)),
    ]);
    Ok((head + &report, json))
}

/// lesson's own hybrid ranking (`lesson::semantic::hybrid`) of each side's top `n`.
fn library_fusion(s: &Sides, n: usize, weight: f64) -> Vec<(usize, f64)> {
    let dense: Vec<(usize, f64)> = s.dense[..n.min(s.dense.len())]
        .iter()
        .map(|&d| (d, f64::from(s.cosine[d])))
        .collect();
    semantic::hybrid(
        &s.lexical[..n.min(s.lexical.len())],
        &dense,
        |&d| f64::from(s.cosine[d]),
        weight,
    )
}
