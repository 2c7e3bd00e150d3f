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
//! ```

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

use crate::baseline::{bm25, fts5, lesson_docs, Hit};
use crate::bench::json::Json;

/// The usage line of the helper.
pub const USAGE: &str = "Usage: xtask bench-helper (fts5-build BANK DB | fts5-query DB QUERY [K] | tantivy-build BANK DIR | tantivy-query DIR QUERY [K] | lesson-warm BANK K RUNS QUERY...)";

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
        "lesson-warm" => {
            let number = |i: usize| -> anyhow::Result<usize> {
                arg(i)?
                    .parse()
                    .with_context(|| format!("argument {i} must be a number"))
            };
            lesson_warm(Path::new(arg(1)?), number(2)?, number(3)?, &args[4..])?;
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
fn lesson_warm(bank: &Path, k: usize, runs: usize, queries: &[String]) -> anyhow::Result<()> {
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
    let mut results = Vec::with_capacity(queries.len());
    for q in queries {
        let found = retriever.search(&request(q))?;
        results.push((
            found.hits.len(),
            found.hits.first().map(|h| h.slug.clone()),
            Vec::new(),
        ));
    }
    let mut logs: Vec<Vec<Json>> = vec![Vec::new(); queries.len()];
    for round in 0..runs {
        for (qi, (q, (_, _, times))) in queries.iter().zip(&mut results).enumerate() {
            let request = request(q);
            let start = Instant::now();
            let found = retriever.search(&request)?;
            times.push(Json::Num(start.elapsed().as_secs_f64()));
            // what `--log RUN` adds to a search: one locked append of the hits shown
            let slugs: Vec<&str> = found.hits.iter().map(|h| h.slug.as_str()).collect();
            let start = Instant::now();
            lesson::usage::log_shown(bank, &format!("warm-{round}-{qi}"), &slugs, now, "bench")?;
            logs[qi].push(Json::Num(start.elapsed().as_secs_f64()));
            std::hint::black_box(found);
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
