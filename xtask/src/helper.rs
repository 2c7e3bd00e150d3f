//! `xtask bench-helper`: the baselines as one-shot processes, so that `cargo xtask bench search`
//! times them the way it times `lesson search` (a new process per build and per query, peak RSS
//! from `wait4`). Not meant to be typed by hand.
//!
//! ```text
//! xtask bench-helper fts5-build BANK DB          index BANK's lessons into a new SQLite DB
//! xtask bench-helper fts5-query DB QUERY [K]     print the K (10) best hits as JSON
//! xtask bench-helper tantivy-build BANK DIR      index BANK's lessons into a new tantivy DIR
//! xtask bench-helper tantivy-query DIR QUERY [K] print the K (10) best hits as JSON
//! xtask bench-helper lesson-warm BANK K RUNS QUERY...
//!                                                open BANK with the lesson library once, run
//!                                                every query once untimed, then RUNS timed
//!                                                rounds (each followed by the append of
//!                                                `--log`); print the timings as JSON
//! xtask bench-helper lesson-warm-exhaustive BANK K RUNS QUERY...
//!                                                the same, every query scoring every posting
//!                                                (no append)
//! xtask bench-helper tantivy-warm DIR K RUNS QUERY...
//!                                                the same with tantivy: the searcher opened
//!                                                once and kept open
//! xtask bench-helper stat-walk BANK              stat every lesson file of BANK with lesson's
//!                                                walker, read nothing; print the count
//! ```

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

use crate::baseline::{bm25, fts5, lesson_docs, Hit};
use crate::bench::json::Json;

/// The usage line of the helper.
pub const USAGE: &str = "Usage: xtask bench-helper (fts5-build BANK DB | fts5-query DB QUERY [K] | tantivy-build BANK DIR | tantivy-query DIR QUERY [K] | lesson-warm[-exhaustive] BANK K RUNS QUERY... | tantivy-warm DIR K RUNS QUERY... | stat-walk BANK)";

/// Run one helper command.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("missing argument\n{USAGE}"))
    };
    let k = || -> anyhow::Result<usize> {
        args.get(3)
            .map_or(Ok(10), |k| k.parse())
            .context("K must be a number")
    };
    match arg(0)? {
        "fts5-build" => {
            let n = fts5::build(lesson_docs(Path::new(arg(1)?))?, Path::new(arg(2)?))?;
            println!("{n} documents");
        }
        "fts5-query" => print_hits(&fts5::query(Path::new(arg(1)?), arg(2)?, k()?)?)?,
        "tantivy-build" => {
            let n = bm25::build(lesson_docs(Path::new(arg(1)?))?, Path::new(arg(2)?))?;
            println!("{n} documents");
        }
        "tantivy-query" => {
            let searcher = bm25::Searcher::open(Path::new(arg(1)?))?;
            print_hits(&searcher.search(arg(2)?, k()?)?)?;
        }
        "lesson-warm" | "lesson-warm-exhaustive" | "tantivy-warm" => {
            let number = |i: usize| -> anyhow::Result<usize> {
                arg(i)?
                    .parse()
                    .with_context(|| format!("argument {i} must be a number"))
            };
            let (dir, k, runs, queries) = (Path::new(arg(1)?), number(2)?, number(3)?, &args[4..]);
            match arg(0)? {
                "tantivy-warm" => tantivy_warm(dir, k, runs, queries)?,
                helper => lesson_warm(dir, k, runs, queries, helper.ends_with("exhaustive"))?,
            }
        }
        "stat-walk" => {
            let config = lesson::config::Config::default();
            let exclude = lesson::bank::exclude_set(&config)?;
            let files = lesson::walk::lesson_files(Path::new(arg(1)?), &exclude);
            let stated = files.iter().filter(|f| f.meta.is_some()).count();
            println!("{stated} lesson files stat-ed");
        }
        other => bail!("unknown helper `{other}`\n{USAGE}"),
    }
    Ok(())
}

/// Hits as a JSON array of `{"slug", "score"}`, the shape `lesson search --format json` prints.
fn print_hits(hits: &[Hit]) -> anyhow::Result<()> {
    let json = Json::Arr(
        hits.iter()
            .map(|h| {
                Json::Obj(vec![
                    ("slug", Json::str(&h.id)),
                    ("score", Json::Num(h.score)),
                ])
            })
            .collect(),
    );
    std::io::stdout()
        .lock()
        .write_all(json.render().as_bytes())?;
    Ok(())
}

/// The warm in-process query: what a runtime pays per turn when it keeps a
/// [`lesson::retrieve::Retriever`] open. Opening it (load the index and check it against the
/// files) is timed once; every query then runs once untimed and `runs` times timed, each a
/// [`Retriever::search`](lesson::retrieve::Retriever::search) on the index as opened. Prints
/// `{"open_s", "queries": [{"query", "hits", "top", "runs_s": [...]}]}`.
/// With `exhaustive`, each query scores every posting (the pruned search's oracle), on the
/// same open index.
fn lesson_warm(
    bank: &Path,
    k: usize,
    runs: usize,
    queries: &[String],
    exhaustive: bool,
) -> anyhow::Result<()> {
    use lesson::retrieve::{Request, Retriever};
    use std::time::Instant;

    let now = match std::env::var("LESSON_NOW") {
        Ok(v) => v.parse()?,
        Err(_) => jiff::Timestamp::now(),
    };
    let start = Instant::now();
    let mut retriever =
        Retriever::open(bank).with_context(|| format!("cannot open {}", bank.display()))?;
    let open = start.elapsed();
    let request = |q: &str| Request::new(q).k(k).now(now);
    let search = |q: &str| -> anyhow::Result<(std::time::Duration, Vec<String>)> {
        let request = request(q);
        let start = Instant::now();
        let found = if exhaustive {
            let settings = retriever.settings().clone();
            retriever.index().search_exhaustive(&request, &settings)?
        } else {
            retriever.search(&request)?
        };
        let took = start.elapsed();
        Ok((took, found.hits.iter().map(|h| h.slug.clone()).collect()))
    };
    // what `--log RUN` adds to a search: one locked append of the hits shown
    let log_shown: Option<LogShown<'_>> = (!exhaustive).then(|| {
        Box::new(move |run: &str, hits: &[String]| {
            let slugs: Vec<&str> = hits.iter().map(String::as_str).collect();
            let start = Instant::now();
            lesson::usage::log_shown(bank, run, &slugs, now, "bench")?;
            Ok(start.elapsed())
        }) as LogShown<'_>
    });
    warm_rounds(open, runs, queries, search, log_shown)
}

/// tantivy's warm query, as [`lesson_warm`] times lesson's: the index opened once (timed),
/// the searcher kept, every query once untimed and then `runs` rounds timed.
fn tantivy_warm(dir: &Path, k: usize, runs: usize, queries: &[String]) -> anyhow::Result<()> {
    use std::time::Instant;

    let start = Instant::now();
    let searcher = bm25::Searcher::open(dir)?;
    let open = start.elapsed();
    let search = |q: &str| -> anyhow::Result<(std::time::Duration, Vec<String>)> {
        let start = Instant::now();
        let hits = searcher.search(q, k)?;
        let took = start.elapsed();
        Ok((took, hits.into_iter().map(|h| h.id).collect()))
    };
    warm_rounds(open, runs, queries, search, None)
}

/// The append `--log RUN` adds after a search (run id, the hits shown), timing itself.
type LogShown<'a> = Box<dyn FnMut(&str, &[String]) -> anyhow::Result<std::time::Duration> + 'a>;

/// Every query once untimed, then `runs` timed rounds of `search` (which times itself and
/// gives the hits' ids), each followed by `log_shown` when given; prints `{"open_s",
/// "queries": [{"query", "hits", "top", "runs_s", "log_s"}]}`.
fn warm_rounds(
    open: std::time::Duration,
    runs: usize,
    queries: &[String],
    mut search: impl FnMut(&str) -> anyhow::Result<(std::time::Duration, Vec<String>)>,
    mut log_shown: Option<LogShown<'_>>,
) -> anyhow::Result<()> {
    let mut results = Vec::with_capacity(queries.len());
    for q in queries {
        let (_, hits) = search(q)?;
        results.push((hits.len(), hits.into_iter().next(), Vec::new()));
    }
    let mut logs: Vec<Vec<Json>> = vec![Vec::new(); queries.len()];
    for round in 0..runs {
        for (qi, (q, (_, _, times))) in queries.iter().zip(&mut results).enumerate() {
            let (took, hits) = search(q)?;
            times.push(Json::Num(took.as_secs_f64()));
            if let Some(log) = log_shown.as_mut() {
                logs[qi].push(Json::Num(
                    log(&format!("warm-{round}-{qi}"), &hits)?.as_secs_f64(),
                ));
            }
            std::hint::black_box(hits);
        }
    }
    let json = Json::Obj(vec![
        ("open_s", Json::Num(open.as_secs_f64())),
        (
            "queries",
            Json::Arr(
                queries
                    .iter()
                    .zip(results)
                    .zip(logs)
                    .map(|((q, (hits, top, times)), log)| {
                        Json::Obj(vec![
                            ("query", Json::str(q)),
                            ("hits", Json::Int(hits as u64)),
                            ("top", top.map_or(Json::Null, |t| Json::str(&t))),
                            ("runs_s", Json::Arr(times)),
                            ("log_s", Json::Arr(log)),
                        ])
                    })
                    .collect(),
            ),
        ),
    ]);
    std::io::stdout()
        .lock()
        .write_all(json.render().as_bytes())?;
    Ok(())
}
