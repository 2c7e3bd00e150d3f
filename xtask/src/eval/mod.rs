//! `cargo xtask eval-retrieval DIR [--k 10] [--split test]`: retrieval quality of `lesson search`
//! on a BEIR-format test set, next to a tantivy BM25 baseline on the same documents and queries.
//!
//! The corpus becomes a throwaway bank under `target/bench/eval/<set>/bank` (one lesson per
//! document, see `bank.rs`), which `lesson lint` checks once. Every query runs through
//! `lesson search --format json -k K` as a new process and through BM25 in process; both
//! rankings are scored with nDCG@K, Recall@K and MRR@K over the queries that have at least one
//! relevant judgment. Results go to `target/bench/eval-<set>.json`.

mod bank;
mod beir;
#[cfg(feature = "baselines")]
mod dense;
mod metrics;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;

#[cfg(feature = "baselines")]
use crate::baseline::{bm25, Doc};
use crate::bench::json::Json;
use crate::bench::machine::Machine;
use crate::bench::measure::{self, Output};
use crate::bench::table::{secs, Align, Table};
use crate::bench::{tools, Paths};
use metrics::Scores;

/// "Now" for lesson, as in the benches (every lesson of the bank is equally old anyway).
const NOW: &str = "2026-11-22T12:00:00Z";

/// What to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The BEIR directory.
    pub dir: PathBuf,
    /// The cut-off.
    pub k: usize,
    /// The qrels split (`qrels/<split>.tsv`).
    pub split: Option<String>,
    /// Topic tags per lesson at most (0: untagged lessons, as the corpus has none).
    pub tags: usize,
    /// `[retrieve] inferred-tags` modes to run `lesson search` with, one system each (none:
    /// the bank's default).
    pub inferred_tags: Vec<String>,
    /// The model directory of the dense and hybrid systems (`--model`; else
    /// `target/models/all-MiniLM-L6-v2` when it exists; else both are skipped).
    pub model: Option<PathBuf>,
}

/// The system name of `lesson search` with `[retrieve] model` (the product's hybrid).
const PRODUCT_HYBRID: &str = "lesson search (model)";

/// Hits of `lesson search` read per query: the top K is scored, the rest is the lexical side of
/// the hybrid fusion (a document below it counts as lexically unrelated).
const POOL: usize = 100;

/// The dense system's name.
const DENSE: &str = "dense (lesson::semantic, --model)";

/// One system's outcome.
struct System {
    name: &'static str,
    skipped: Option<String>,
    /// Per judged query, in query order.
    scores: Vec<Scores>,
    /// Per judged query, the ranking (document ids, best first) and scores.
    rankings: Vec<Vec<(String, f64)>>,
    build: Option<Duration>,
    query_times: Vec<Duration>,
    peak_rss_kib: Option<u64>,
}

impl System {
    fn skipped(name: &'static str, why: String) -> System {
        System {
            name,
            skipped: Some(why),
            scores: Vec::new(),
            rankings: Vec::new(),
            build: None,
            query_times: Vec::new(),
            peak_rss_kib: None,
        }
    }

    fn query_median(&self) -> Option<Duration> {
        let mut t = self.query_times.clone();
        t.sort();
        t.get(t.len() / 2).copied()
    }
}

/// What `lesson lint` said about the generated bank.
struct LintSummary {
    errors: usize,
    warnings: usize,
    infos: usize,
    /// Codes of the error-level findings with their counts.
    error_codes: Vec<(String, usize)>,
    /// Codes of the warnings with their counts.
    warning_codes: Vec<(String, usize)>,
}

/// Run the evaluation.
pub fn run(options: &Options) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let machine = Machine::probe(&paths.root);
    let set = beir::load(&options.dir, options.split.as_deref())?;
    let k = options.k;
    eprintln!(
        "{}: {} documents, {} queries, qrels {} ({} queries judged)",
        set.name,
        set.corpus.len(),
        set.queries.len(),
        set.qrels_file.display(),
        set.qrels.len()
    );
    let name = if options.tags > 0 {
        format!("{}-tags{}", set.name, options.tags)
    } else {
        set.name.clone()
    };
    let work = paths.bench().join("eval").join(&name);
    let bank_dir = work.join("bank");
    let out = work.join("out");
    if bank_dir.exists() {
        std::fs::remove_dir_all(&bank_dir)
            .with_context(|| format!("cannot remove {}", bank_dir.display()))?;
    }
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mapping = bank::write(&bank_dir, &set.corpus, &options.dir, options.tags)?;
    let toml = std::fs::read_to_string(bank_dir.join("lesson.toml"))?;
    let tsv: String = mapping
        .iter()
        .map(|(slug, id)| format!("{slug}\t{id}\n"))
        .collect();
    std::fs::write(work.join("mapping.tsv"), tsv)?;
    eprintln!(
        "wrote {} lessons to {} (slug to document id: {})",
        mapping.len(),
        bank_dir.display(),
        work.join("mapping.tsv").display()
    );

    // the queries that can be scored: at least one relevant judgment
    let judged: Vec<&beir::Query> = set
        .queries
        .iter()
        .filter(|q| {
            set.qrels
                .get(&q.id)
                .is_some_and(|j| j.values().any(|&g| g > 0.0))
        })
        .collect();
    let unjudged = set.queries.len() - judged.len();

    let lesson = tools::build_lesson(&paths)?;
    let lint = lint_bank(&lesson, &bank_dir, &out)?;
    eprintln!(
        "lesson lint on the generated bank: {} errors, {} warnings, {} infos",
        lint.errors, lint.warnings, lint.infos
    );

    let bm25 = run_bm25(&set.corpus, &judged, &set.qrels, k)?;
    let mut systems = vec![bm25];
    let modes: Vec<Option<&str>> = if options.inferred_tags.is_empty() {
        vec![None]
    } else {
        options
            .inferred_tags
            .iter()
            .map(|m| Some(m.as_str()))
            .collect()
    };
    for mode in modes {
        let name: &'static str = match mode {
            None => "lesson search",
            Some(m) => Box::leak(format!("lesson search ({m})").into_boxed_str()),
        };
        if !tools::has_subcommand(&lesson, "search") {
            systems.push(System::skipped(
                name,
                "the lesson binary has no `search` subcommand yet (`lesson search --help` failed)"
                    .into(),
            ));
            continue;
        }
        // the mode is read from lesson.toml at each search; it does not touch the index
        let mut config = toml.clone();
        if let Some(m) = mode {
            config += &format!("\n[retrieve]\ninferred-tags = \"{m}\"\n");
        }
        std::fs::write(bank_dir.join("lesson.toml"), config)?;
        let mut system = run_lesson(&lesson, &bank_dir, &out, &mapping, &judged, &set.qrels, k)?;
        system.name = name;
        systems.push(system);
    }
    let model_dir = options.model.clone().or_else(|| {
        Some(crate::model::default_dir(&paths)).filter(|d| crate::model::is_model_dir(d))
    });
    let (dense_report, dense_json) = match model_dir {
        None => {
            let why = "no model: `cargo xtask model`, or --model DIR".to_string();
            systems.push(System::skipped(DENSE, why.clone()));
            systems.push(System::skipped("lesson hybrid", why.clone()));
            systems.push(System::skipped(PRODUCT_HYBRID, why));
            (String::new(), Json::Null)
        }
        Some(dir) => {
            let dense = run_dense(
                &dir,
                &set,
                &judged,
                &paths.bench().join("embeddings"),
                k,
                &mut systems,
            )?;
            // the product's own hybrid: `lesson search` with `[retrieve] model`, vectors in
            // the bank's index, the fusion inside the retrieve contract
            let semantic = tools::build_lesson_semantic(&paths)?;
            let dir = dir.canonicalize().unwrap_or(dir);
            let model = dir
                .to_string_lossy()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            std::fs::write(
                bank_dir.join("lesson.toml"),
                format!("{toml}\n[retrieve]\nmodel = \"{model}\"\n"),
            )?;
            let mut system =
                run_lesson(&semantic, &bank_dir, &out, &mapping, &judged, &set.qrels, k)?;
            system.name = PRODUCT_HYBRID;
            systems.push(system);
            std::fs::write(bank_dir.join("lesson.toml"), &toml)?;
            dense
        }
    };
    for s in systems.iter().filter(|s| s.skipped.is_none()) {
        let tag: String = s
            .name
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && *w != "search")
            .collect::<Vec<_>>()
            .join("-");
        let path = work.join(format!("{tag}.run"));
        std::fs::write(&path, trec_run(s, &judged))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }

    let mut report = format!(
        "\nretrieval eval on {}{}: {} documents, {} queries scored ({} without a relevant judgment \
         skipped), qrels {}\n{}\n\n",
        set.name,
        if options.tags > 0 {
            format!(
                " (each lesson tagged with up to {} topic words of its title)",
                options.tags
            )
        } else {
            String::new()
        },
        set.corpus.len(),
        judged.len(),
        unjudged,
        set.qrels_file.display(),
        machine.summary()
    );
    let mut table = Table::new(vec![
        ("system", Align::Left),
        ("nDCG", Align::Right),
        ("Recall", Align::Right),
        ("MRR", Align::Right),
        ("build", Align::Right),
        ("query median", Align::Right),
    ]);
    for s in &systems {
        let mut row = vec![s.name.to_string()];
        if s.skipped.is_some() {
            row.push("skipped".into());
        } else {
            let m = metrics::mean(&s.scores);
            row.extend([
                format!("{:.4}", m.ndcg),
                format!("{:.4}", m.recall),
                format!("{:.4}", m.mrr),
                s.build.map_or_else(|| "-".into(), secs),
                s.query_median().map_or_else(
                    || "-".into(),
                    |d| format!("{:.1} ms", d.as_secs_f64() * 1e3),
                ),
            ]);
        }
        table.row(row);
    }
    report += &format!("at k = {k}:\n");
    report += &table.render();
    report += &dense_report;
    for s in &systems {
        if let Some(why) = &s.skipped {
            report += &format!("{} skipped: {why}\n", s.name);
        }
    }
    report += &format!(
        "\nlesson lint on the generated bank ({}): {} errors, {} warnings, {} infos{}\n",
        bank_dir.display(),
        lint.errors,
        lint.warnings,
        lint.infos,
        if lint.error_codes.is_empty() && lint.warning_codes.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                lint.error_codes
                    .iter()
                    .chain(&lint.warning_codes)
                    .map(|(c, n)| format!("{c} x{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    report += "bm25: tantivy, default tokenizer, title + text, query words OR-ed; build and query times are in process.\n\
               lesson search: a new process per query; its build is the first search on the fresh bank; \
               the top 100 hits are read, the top k scored.\n\
               dense: lesson::semantic in process (title + text, 256-token cut, mean pooling, cosine over \
               every document); build = loading the model and embedding what the store under \
               target/bench/embeddings lacks; query = embedding the request and the cosines.\n\
               lesson hybrid: lesson::semantic::hybrid of lesson search's top 100 (the similarity part of each hit's score) and the dense top 100.\n\
               lesson search (model): `lesson search` built with the `semantic` feature, `[retrieve] model` set: \
               the hybrid inside the retrieve contract (lessons embedded as title, description and body, int8 \
               vectors in .lesson/); its build is the first search, embedding every lesson.\n";
    report += &format!(
        "rankings in TREC run format: {}/<system>.run\n",
        work.display()
    );
    print!("{report}");

    let json_path = paths.bench().join(format!("eval-{name}.json"));
    let json = to_json(
        &set, options, &judged, unjudged, &lint, &systems, &machine, &bank_dir, dense_json,
    );
    std::fs::write(&json_path, json.render())
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!("\nresults written to {}", json_path.display());
    Ok(())
}

/// The rankings in TREC run format (`qid Q0 docid rank score tag`), for trec_eval or
/// pytrec_eval to check the figures.
fn trec_run(s: &System, queries: &[&beir::Query]) -> String {
    let tag: String = s.name.split(' ').next().unwrap_or("run").to_string();
    let mut out = String::new();
    for (q, ranking) in queries.iter().zip(&s.rankings) {
        for (rank, (doc, score)) in ranking.iter().enumerate() {
            let score = if score.is_finite() { *score } else { 0.0 };
            out += &format!("{}\tQ0\t{doc}\t{}\t{score}\t{tag}\n", q.id, rank + 1);
        }
    }
    out
}

fn lint_bank(lesson: &Path, bank: &Path, out: &Path) -> anyhow::Result<LintSummary> {
    let output = Output {
        stdout: out.join("lint.json"),
        stderr: out.join("lint.stderr"),
    };
    measure::run(
        Command::new(lesson)
            .args(["lint", "--output-format", "json", "--exit-zero", "--dir"])
            .arg(bank)
            .env("LESSON_NOW", NOW)
            .env_remove("LESSON_DIR"),
        &output,
    )?;
    let text = std::fs::read_to_string(&output.stdout)?;
    let findings: serde_json::Value = serde_json::from_str(&text)
        .context("`lesson lint --output-format json` printed no JSON")?;
    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    for f in findings.as_array().map(Vec::as_slice).unwrap_or_default() {
        let severity = f["severity"].as_str().unwrap_or("?").to_string();
        let code = format!(
            "{} {}",
            f["code"].as_str().unwrap_or("?"),
            f["name"].as_str().unwrap_or("")
        );
        *counts.entry((severity, code)).or_default() += 1;
    }
    let by = |level: &str| {
        let mut v: Vec<(String, usize)> = counts
            .iter()
            .filter(|((s, _), _)| s == level)
            .map(|((_, c), n)| (c.clone(), *n))
            .collect();
        v.sort();
        v
    };
    let total = |v: &[(String, usize)]| v.iter().map(|(_, n)| n).sum();
    let (errors, warnings, infos) = (by("error"), by("warning"), by("info"));
    Ok(LintSummary {
        errors: total(&errors),
        warnings: total(&warnings),
        infos: total(&infos),
        error_codes: errors,
        warning_codes: warnings,
    })
}

/// The dense and hybrid systems with the model in `dir` (see `dense.rs`), appended to
/// `systems`; returns the report's section and its JSON.
#[cfg(feature = "baselines")]
fn run_dense(
    dir: &Path,
    set: &beir::TestSet,
    judged: &[&beir::Query],
    store: &Path,
    k: usize,
    systems: &mut Vec<System>,
) -> anyhow::Result<(String, Json)> {
    dense::run(dir, set, judged, store, k, systems)
}

#[cfg(not(feature = "baselines"))]
fn run_dense(
    _: &Path,
    _: &beir::TestSet,
    _: &[&beir::Query],
    _: &Path,
    _: usize,
    systems: &mut Vec<System>,
) -> anyhow::Result<(String, Json)> {
    let why = "the dense systems need xtask's `baselines` feature: run `cargo xtask`".to_string();
    systems.push(System::skipped(DENSE, why.clone()));
    systems.push(System::skipped("lesson hybrid", why));
    Ok((String::new(), Json::Null))
}

#[cfg(not(feature = "baselines"))]
fn run_bm25(
    _: &[beir::Document],
    _: &[&beir::Query],
    _: &HashMap<String, HashMap<String, f64>>,
    _: usize,
) -> anyhow::Result<System> {
    Ok(System::skipped(
        "bm25 (tantivy)",
        "the BM25 baseline needs xtask's `baselines` feature: run `cargo xtask`".into(),
    ))
}

#[cfg(feature = "baselines")]
fn run_bm25(
    corpus: &[beir::Document],
    queries: &[&beir::Query],
    qrels: &HashMap<String, HashMap<String, f64>>,
    k: usize,
) -> anyhow::Result<System> {
    let started = Instant::now();
    let searcher = bm25::build_in_ram(corpus.iter().map(|d| {
        Ok(Doc {
            id: d.id.clone(),
            title: d.title.clone(),
            text: d.text.clone(),
        })
    }))?;
    let build = started.elapsed();
    let mut scores = Vec::new();
    let mut rankings = Vec::new();
    let mut query_times = Vec::new();
    for q in queries {
        let started = Instant::now();
        let hits = searcher.search(&q.text, k)?;
        query_times.push(started.elapsed());
        let ranking: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
        scores.push(metrics::evaluate(&ranking, &qrels[&q.id], k));
        rankings.push(hits.into_iter().map(|h| (h.id, h.score)).collect());
    }
    Ok(System {
        name: "bm25 (tantivy)",
        skipped: None,
        scores,
        rankings,
        build: Some(build),
        query_times,
        peak_rss_kib: None,
    })
}

fn run_lesson(
    lesson: &Path,
    bank: &Path,
    out: &Path,
    mapping: &[(String, String)],
    queries: &[&beir::Query],
    qrels: &HashMap<String, HashMap<String, f64>>,
    k: usize,
) -> anyhow::Result<System> {
    let lookup = bank::lookup(mapping);
    let output = Output {
        stdout: out.join("search.stdout"),
        stderr: out.join("search.stderr"),
    };
    let search = |text: &str| {
        let mut cmd = tools::search_command(lesson, bank, text, k.max(POOL));
        cmd.env("LESSON_NOW", NOW);
        cmd
    };
    let mut peak = 0;
    let first = queries.first().map_or("index", |q| q.text.as_str());
    eprintln!("lesson search: building the index with the first query");
    let build = measure::run(&mut search(first), &output)?;
    peak = peak.max(build.max_rss_kib);
    let mut scores = Vec::new();
    let mut rankings = Vec::new();
    let mut query_times = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        let sample = measure::run(&mut search(&q.text), &output)
            .with_context(|| format!("query {}", q.id))?;
        peak = peak.max(sample.max_rss_kib);
        query_times.push(sample.wall);
        let stdout = std::fs::read_to_string(&output.stdout)?;
        let hits = tools::parse_search_hits(&stdout).with_context(|| format!("query {}", q.id))?;
        let ranking: Vec<String> = hits
            .iter()
            .map(|h| {
                lookup
                    .get(h.slug.as_str())
                    .map_or_else(|| h.slug.clone(), |id| id.to_string())
            })
            .collect();
        scores.push(metrics::evaluate(
            &ranking[..k.min(ranking.len())],
            &qrels[&q.id],
            k,
        ));
        // the lexical side of the hybrid: the similarity part (the other parts are the same
        // for every lesson of this bank)
        rankings.push(
            ranking
                .into_iter()
                .zip(hits.iter().map(|h| h.similarity.unwrap_or(h.score)))
                .collect(),
        );
        if (i + 1) % 50 == 0 {
            eprintln!("  {} of {} queries", i + 1, queries.len());
        }
    }
    Ok(System {
        name: "lesson search",
        skipped: None,
        scores,
        rankings,
        build: Some(build.wall),
        query_times,
        peak_rss_kib: Some(peak),
    })
}

#[allow(clippy::too_many_arguments)]
fn to_json(
    set: &beir::TestSet,
    options: &Options,
    judged: &[&beir::Query],
    unjudged: usize,
    lint: &LintSummary,
    systems: &[System],
    machine: &Machine,
    bank: &Path,
    dense: Json,
) -> Json {
    let counts = |v: &[(String, usize)]| {
        Json::Arr(
            v.iter()
                .map(|(c, n)| {
                    Json::Obj(vec![
                        ("rule", Json::str(c)),
                        ("count", Json::Int(*n as u64)),
                    ])
                })
                .collect(),
        )
    };
    let systems = systems
        .iter()
        .map(|s| {
            let mut fields = vec![
                ("name", Json::str(s.name)),
                ("skipped", s.skipped.clone().map_or(Json::Null, Json::Str)),
            ];
            if s.skipped.is_none() {
                let m = metrics::mean(&s.scores);
                fields.extend([
                    ("ndcg", Json::Num(m.ndcg)),
                    ("recall", Json::Num(m.recall)),
                    ("mrr", Json::Num(m.mrr)),
                    ("build_s", Json::opt_num(s.build.map(|d| d.as_secs_f64()))),
                    (
                        "query_median_s",
                        Json::opt_num(s.query_median().map(|d| d.as_secs_f64())),
                    ),
                    ("peak_rss_kib", s.peak_rss_kib.map_or(Json::Null, Json::Int)),
                    (
                        "per_query",
                        Json::Arr(
                            judged
                                .iter()
                                .zip(&s.scores)
                                .map(|(q, sc)| {
                                    Json::Obj(vec![
                                        ("query", Json::str(&q.id)),
                                        ("ndcg", Json::Num(sc.ndcg)),
                                        ("recall", Json::Num(sc.recall)),
                                        ("mrr", Json::Num(sc.mrr)),
                                    ])
                                })
                                .collect(),
                        ),
                    ),
                ]);
            }
            Json::Obj(fields)
        })
        .collect();
    Json::Obj(vec![
        ("eval", Json::str("retrieval")),
        ("set", Json::str(&set.name)),
        ("dir", Json::str(options.dir.display().to_string())),
        ("qrels", Json::str(set.qrels_file.display().to_string())),
        ("k", Json::Int(options.k as u64)),
        ("tags", Json::Int(options.tags as u64)),
        ("documents", Json::Int(set.corpus.len() as u64)),
        ("queries", Json::Int(set.queries.len() as u64)),
        ("queries_scored", Json::Int(judged.len() as u64)),
        (
            "queries_without_relevant_judgment",
            Json::Int(unjudged as u64),
        ),
        (
            "gain",
            Json::str("linear (the qrels grade), log2(rank + 1) discount, relevant = grade > 0"),
        ),
        ("bank", Json::str(bank.display().to_string())),
        (
            "lint",
            Json::Obj(vec![
                ("errors", Json::Int(lint.errors as u64)),
                ("warnings", Json::Int(lint.warnings as u64)),
                ("infos", Json::Int(lint.infos as u64)),
                ("error_rules", counts(&lint.error_codes)),
                ("warning_rules", counts(&lint.warning_codes)),
            ]),
        ),
        ("machine", machine.to_json()),
        ("systems", Json::Arr(systems)),
        ("dense", dense),
    ])
}
