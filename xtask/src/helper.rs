//! `xtask bench-helper`: the baselines as one-shot processes, so that `cargo xtask bench search`
//! times them the way it times `lesson search` (a new process per build and per query, peak RSS
//! from `wait4`). Not meant to be typed by hand.
//!
//! ```text
//! xtask bench-helper fts5-build BANK DB          index BANK's lessons into a new SQLite DB
//! xtask bench-helper fts5-query DB QUERY [K]     print the K (10) best hits as JSON
//! xtask bench-helper tantivy-build BANK DIR      index BANK's lessons into a new tantivy DIR
//! xtask bench-helper tantivy-query DIR QUERY [K] print the K (10) best hits as JSON
//! ```

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};

use crate::baseline::{bm25, fts5, lesson_docs, Hit};
use crate::bench::json::Json;

/// The usage line of the helper.
pub const USAGE: &str = "Usage: xtask bench-helper (fts5-build BANK DB | fts5-query DB QUERY [K] | tantivy-build BANK DIR | tantivy-query DIR QUERY [K])";

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
