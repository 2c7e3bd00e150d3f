//! `cargo xtask bench search`: `lesson search` on synthetic banks, side by side with the tools a
//! user would pick instead: `rg -l -i -F` (no index), SQLite FTS5 with the trigram tokenizer and
//! tantivy's BM25 (both through `xtask bench-helper`, so each build and each query is a new
//! process like `lesson search`).
//!
//! Per bank size it measures each indexer's build (wall, peak RSS, size on disk), then runs the
//! query set round-robin over the tools, `--runs` times, each query a new process. For lesson it
//! also times the search after one file was touched (mtime only) and after one file was edited,
//! which is the cost of bringing the index up to date without a watcher; then it starts
//! `lesson watch` and times the search with a watcher vouching for the index, and the time
//! from a file change to the watcher publishing the index that reflects it. Last, the warm
//! in-process query: `xtask bench-helper lesson-warm` opens the bank once with the lesson
//! library and times each query on the open `Retriever`, as a runtime would use it.
//!
//! Every tool runs on a copy of the generated bank (`target/bench/search/<n>/bank`), so the
//! indexes, the edits and the watcher never touch the bank the other benches read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::Context;

use super::json::Json;
use super::machine::Machine;
use super::measure::{self, Output, Sample, Stats};
use super::synthetic_bank::{self, SyntheticBank, GENERATOR_VERSION};
use super::table::{mib, ratio, secs, Align, Table};
use super::{tools, Options, Paths};
use crate::baseline::disk_size;

/// "Now" for every lesson run, as in the lint bench.
const NOW: &str = "2026-11-22T12:00:00Z";
/// Hits per query, for every tool that ranks (rg lists every matching file).
const K: usize = 10;
/// Queries in the set.
const QUERY_COUNT: usize = 20;
/// A build slower than this is measured once, not `--runs` times (FTS5's trigram index takes
/// over a minute at 100,000 lessons).
const ONCE_OVER: Duration = Duration::from_secs(30);
/// rg and SQLite FTS5 run on banks up to this size only. Above it, rg would read the whole bank
/// (1.4 GB at 1,000,000 lessons) for every query and FTS5's trigram build would take tens of
/// minutes; their rows say they were skipped.
const SLOW_TOOLS_UP_TO: usize = 100_000;

/// The programs the bench needs.
struct Programs {
    lesson: PathBuf,
    /// Why lesson's rows are skipped, when they are.
    lesson_skipped: Option<String>,
    rg: PathBuf,
    rg_version: String,
    xtask: PathBuf,
    /// With `--model DIR`: `lesson` built with the `semantic` feature, and the model directory.
    semantic: Option<(PathBuf, PathBuf)>,
}

/// A tool under test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Rg,
    Fts5,
    Tantivy,
    Lesson,
}

impl Tool {
    const ALL: [Tool; 4] = [Tool::Rg, Tool::Fts5, Tool::Tantivy, Tool::Lesson];

    fn name(self) -> &'static str {
        match self {
            Tool::Rg => "rg",
            Tool::Fts5 => "sqlite fts5",
            Tool::Tantivy => "tantivy",
            Tool::Lesson => "lesson search",
        }
    }

    fn stem(self) -> &'static str {
        match self {
            Tool::Rg => "rg",
            Tool::Fts5 => "fts5",
            Tool::Tantivy => "tantivy",
            Tool::Lesson => "lesson",
        }
    }
}

/// Where one bank's indexes go: the bank (lesson's `.lesson/`) and a work directory beside it.
struct Places<'a> {
    bank: &'a Path,
    fts5_db: PathBuf,
    tantivy_dir: PathBuf,
    out: PathBuf,
    lessons: usize,
}

impl Places<'_> {
    fn lesson_index(&self) -> PathBuf {
        self.bank.join(".lesson")
    }

    fn output(&self, what: &str) -> Output {
        let stem = format!("search-{}-{what}", self.lessons);
        Output {
            stdout: self.out.join(format!("{stem}.stdout")),
            stderr: self.out.join(format!("{stem}.stderr")),
        }
    }
}

/// A command and how to show it.
struct Cmd {
    command: Command,
    shown: String,
}

impl Cmd {
    fn new(program: &Path, args: Vec<OsString>, shown: String) -> Cmd {
        let mut command = Command::new(program);
        command
            .args(args)
            .env("LESSON_NOW", NOW)
            .env_remove("LESSON_DIR");
        Cmd { command, shown }
    }
}

fn os(items: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    items.iter().map(|s| s.as_ref().to_os_string()).collect()
}

/// How `tool` builds its index; `first_query` is what lesson's first search asks.
fn build_cmd(p: &Programs, at: &Places, tool: Tool, first_query: &str) -> Option<Cmd> {
    let bank = at.bank.display();
    match tool {
        Tool::Rg => None,
        Tool::Fts5 => Some(Cmd::new(
            &p.xtask,
            os(&[&"bench-helper", &"fts5-build", &at.bank, &at.fts5_db]),
            format!(
                "xtask bench-helper fts5-build {bank} {}",
                at.fts5_db.display()
            ),
        )),
        Tool::Tantivy => Some(Cmd::new(
            &p.xtask,
            os(&[&"bench-helper", &"tantivy-build", &at.bank, &at.tantivy_dir]),
            format!(
                "xtask bench-helper tantivy-build {bank} {}",
                at.tantivy_dir.display()
            ),
        )),
        // the first search builds the index; the build is timed with that query
        Tool::Lesson => Some(query_cmd(p, at, tool, first_query)),
    }
}

fn query_cmd(p: &Programs, at: &Places, tool: Tool, query: &str) -> Cmd {
    let bank = at.bank.display();
    let k = K.to_string();
    match tool {
        Tool::Rg => Cmd::new(
            &p.rg,
            os(&[&"-l", &"-i", &"-F", &"--", &query, &at.bank]),
            format!("rg -l -i -F {query:?} {bank}"),
        ),
        Tool::Fts5 => Cmd::new(
            &p.xtask,
            os(&[&"bench-helper", &"fts5-query", &at.fts5_db, &query, &k]),
            format!(
                "xtask bench-helper fts5-query {} {query:?} {k}",
                at.fts5_db.display()
            ),
        ),
        Tool::Tantivy => Cmd::new(
            &p.xtask,
            os(&[
                &"bench-helper",
                &"tantivy-query",
                &at.tantivy_dir,
                &query,
                &k,
            ]),
            format!(
                "xtask bench-helper tantivy-query {} {query:?} {k}",
                at.tantivy_dir.display()
            ),
        ),
        Tool::Lesson => {
            let mut command = tools::search_command(&p.lesson, at.bank, query, K);
            command.env("LESSON_NOW", NOW);
            Cmd {
                command,
                shown: format!("lesson search {query:?} --dir {bank} -k {K} --format json"),
            }
        }
    }
}

/// Samples and their summary.
#[derive(Default, Clone)]
struct Measured {
    samples: Vec<Sample>,
}

impl Measured {
    fn stats(&self) -> Option<Stats> {
        (!self.samples.is_empty()).then(|| Stats::of(&self.samples))
    }
}

/// One query's results for one tool.
#[derive(Default, Clone)]
struct PerQuery {
    measured: Measured,
    /// Hits of the last run (files for rg).
    hits: usize,
}

/// One row of the report.
struct Row {
    name: String,
    command: String,
    build: Measured,
    index_bytes: Option<u64>,
    query: Measured,
    per_query: Vec<(String, PerQuery)>,
    skipped: Option<String>,
    /// The row times something other than a query (a change reaching the index): no ratio
    /// to the query tools.
    not_a_query: bool,
}

impl Row {
    /// Add query `q`'s samples and its hit count (of the last run).
    fn push_query(&mut self, q: &str, samples: Vec<Sample>, hits: usize) {
        self.query.samples.extend(&samples);
        self.per_query.push((
            q.to_string(),
            PerQuery {
                measured: Measured { samples },
                hits,
            },
        ));
    }

    /// Log the median of the queries' samples, as `label`, with `max_rss_kib`.
    fn log_median(&self, n: usize, label: &str, max_rss_kib: u64) {
        if let Some(st) = self.query.stats() {
            let median = Sample {
                wall: st.median,
                user: st.cpu_median,
                sys: Duration::ZERO,
                max_rss_kib,
            };
            log(n, label, &median);
        }
    }

    fn new(name: &str, command: String) -> Row {
        Row {
            name: name.to_string(),
            command,
            build: Measured::default(),
            index_bytes: None,
            query: Measured::default(),
            per_query: Vec::new(),
            skipped: None,
            not_a_query: false,
        }
    }

    fn skipped(name: &str, why: String) -> Row {
        Row {
            skipped: Some(why),
            ..Row::new(name, String::new())
        }
    }
}

/// Everything measured on one bank.
struct SizeResult {
    bank: SyntheticBank,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl SizeResult {
    fn query_median(&self, name: &str) -> Option<Duration> {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.query.stats())
            .map(|s| s.median)
    }

    fn build_median(&self, name: &str) -> Option<Duration> {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.build.stats())
            .map(|s| s.median)
    }
}

/// Run the search bench.
pub fn run(paths: &Paths, options: &Options) -> anyhow::Result<()> {
    let machine = Machine::probe(&paths.root);
    // the semantic build first: both leave their binary at target/release/lesson, and the
    // plain one must be the one there for every other row
    let semantic = match &options.model {
        Some(dir) => {
            let dir = dir
                .canonicalize()
                .with_context(|| format!("--model {}", dir.display()))?;
            Some((tools::build_lesson_semantic(paths)?, dir))
        }
        None => None,
    };
    let lesson = tools::build_lesson(paths)?;
    let lesson_skipped = (!tools::has_subcommand(&lesson, "search")).then(|| {
        "the lesson binary has no `search` subcommand yet (`lesson search --help` failed)"
            .to_string()
    });
    if let Some(why) = &lesson_skipped {
        eprintln!("note: {why}; measuring the baselines only");
    }
    let (rg, rg_version) = tools::ripgrep()?;
    let programs = Programs {
        lesson,
        lesson_skipped,
        rg,
        rg_version,
        xtask: std::env::current_exe().context("cannot find the xtask binary")?,
        semantic,
    };
    let bench_dir = paths.bench();
    let banks = bench_dir.join("banks");
    let out = bench_dir.join("out");
    for dir in [&banks, &out] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let queries = synthetic_bank::queries(QUERY_COUNT);

    let mut results = Vec::new();
    for &n in &options.sizes {
        let bank = synthetic_bank::ensure(&banks, n)?;
        eprintln!(
            "bank {}: {n} lessons, {:.1} MB{}",
            bank.dir.display(),
            bank.bytes as f64 / 1e6,
            if bank.reused { ", reused" } else { "" }
        );
        let work = bench_dir.join("search").join(n.to_string());
        std::fs::create_dir_all(&work)
            .with_context(|| format!("cannot create {}", work.display()))?;
        let copy = work.join("bank");
        eprintln!("copying the bank to {}", copy.display());
        copy_bank(&bank.dir, &copy)?;
        let places = Places {
            bank: &copy,
            fts5_db: work.join("fts5.db"),
            tantivy_dir: work.join("tantivy"),
            out: out.clone(),
            lessons: n,
        };
        let (mut rows, mut notes) = measure_bank(&places, &programs, &queries, options.runs)?;
        if programs.semantic.is_some() && programs.lesson_skipped.is_none() {
            rows.extend(measure_model(
                &places,
                &programs,
                &work,
                &queries,
                options.runs,
                &mut notes,
            )?);
        }
        results.push(SizeResult { bank, rows, notes });
    }

    let report = render(&machine, &programs, options.runs, &queries, &results);
    print!("{report}");
    let json_path = bench_dir.join("search.json");
    let json = to_json(&machine, &programs, options.runs, &queries, &results);
    std::fs::write(&json_path, json.render())
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!("\nresults written to {}", json_path.display());
    Ok(())
}

fn timed(cmd: &mut Cmd, output: &Output, ok: &[i32]) -> anyhow::Result<Sample> {
    measure::run_allowing(&mut cmd.command, output, ok)
}

fn log(n: usize, label: &str, s: &Sample) {
    eprintln!(
        "  {n} lessons: {label:<34} {} (rss {})",
        secs(s.wall),
        mib(s.max_rss_kib)
    );
}

fn measure_bank(
    at: &Places,
    p: &Programs,
    queries: &[String],
    runs: usize,
) -> anyhow::Result<(Vec<Row>, Vec<String>)> {
    let n = at.lessons;
    let mut notes = Vec::new();
    let active: Vec<Tool> = Tool::ALL
        .into_iter()
        .filter(|&t| t != Tool::Lesson || p.lesson_skipped.is_none())
        .filter(|&t| !matches!(t, Tool::Rg | Tool::Fts5) || n <= SLOW_TOOLS_UP_TO)
        .collect();

    let load_at_start = load_average();
    notes.push(format!(
        "every tool ran on a copy of the generated bank: {}",
        at.bank.display()
    ));
    let cat = format!(
        "find {} -name '*.md' -print0 | xargs -0 cat > /dev/null",
        at.bank.display()
    );
    eprintln!("warming the page cache: {cat}");
    measure::run(
        Command::new("sh").args(["-c", &cat]),
        &at.output("warm-cache"),
    )?;

    // builds, round-robin
    let mut builds: Vec<Measured> = vec![Measured::default(); Tool::ALL.len()];
    for round in 1..=runs {
        for (i, &tool) in Tool::ALL.iter().enumerate() {
            if !active.contains(&tool) {
                continue;
            }
            let Some(mut cmd) = build_cmd(p, at, tool, &queries[0]) else {
                continue;
            };
            if builds[i]
                .samples
                .first()
                .is_some_and(|s| s.wall > ONCE_OVER)
            {
                continue;
            }
            if tool == Tool::Lesson {
                remove_dir(&at.lesson_index())?;
            }
            let sample = timed(
                &mut cmd,
                &at.output(&format!("{}-build", tool.stem())),
                &[0],
            )?;
            log(
                n,
                &format!("build {}, run {round}/{runs}", tool.name()),
                &sample,
            );
            builds[i].samples.push(sample);
        }
    }
    let index_bytes = |tool: Tool| match tool {
        Tool::Rg => None,
        Tool::Fts5 => Some(disk_size(&at.fts5_db)),
        Tool::Tantivy => Some(disk_size(&at.tantivy_dir)),
        Tool::Lesson => Some(disk_size(&at.lesson_index())),
    };
    if active.contains(&Tool::Lesson) && !at.lesson_index().is_dir() {
        notes.push(format!(
            "lesson search wrote no {}; its index size reads 0",
            at.lesson_index().display()
        ));
    }

    // queries, round-robin over tools within each query
    let mut per_query: Vec<Vec<PerQuery>> = vec![vec![PerQuery::default(); queries.len()]; 4];
    let mut lesson_top: Option<(String, Option<String>)> = None;
    for round in 1..=runs {
        for (qi, q) in queries.iter().enumerate() {
            for (i, &tool) in Tool::ALL.iter().enumerate() {
                if !active.contains(&tool) {
                    continue;
                }
                let output = at.output(&format!("{}-query", tool.stem()));
                // rg exits 1 when nothing matched
                let ok: &[i32] = if tool == Tool::Rg { &[0, 1] } else { &[0] };
                let sample = timed(&mut query_cmd(p, at, tool, q), &output, ok)?;
                let stdout = std::fs::read_to_string(&output.stdout).unwrap_or_default();
                let hits = if tool == Tool::Rg {
                    stdout.lines().count()
                } else {
                    let hits = tools::parse_search_hits(&stdout)
                        .with_context(|| format!("{} on {q:?}", tool.name()))?;
                    if tool == Tool::Lesson && lesson_top.is_none() {
                        lesson_top = hits.first().map(|h| (h.slug.clone(), h.path.clone()));
                    }
                    hits.len()
                };
                let entry = &mut per_query[i][qi];
                entry.measured.samples.push(sample);
                entry.hits = hits;
            }
        }
        eprintln!("  {n} lessons: queries, run {round}/{runs} done");
    }

    let mut rows = Vec::new();
    let logged = if active.contains(&Tool::Lesson) {
        Some(measure_logged(at, p, queries, runs, &mut notes)?)
    } else {
        None
    };
    for (i, &tool) in Tool::ALL.iter().enumerate() {
        if !active.contains(&tool) {
            let why = match tool {
                Tool::Lesson => p.lesson_skipped.clone().unwrap_or_default(),
                _ => format!(
                    "not run above {SLOW_TOOLS_UP_TO} lessons (rg reads every file per query, \
                     FTS5's trigram build takes tens of minutes)"
                ),
            };
            rows.push(Row::skipped(tool.name(), why));
            continue;
        }
        let mut row = Row::new(tool.name(), query_cmd(p, at, tool, "<query>").shown);
        row.build = builds[i].clone();
        if (1..runs).contains(&row.build.samples.len()) {
            notes.push(format!(
                "{} build measured once: it took over {}s",
                tool.name(),
                ONCE_OVER.as_secs()
            ));
        }
        row.index_bytes = index_bytes(tool);
        for (q, pq) in queries.iter().zip(&per_query[i]) {
            row.query.samples.extend(&pq.measured.samples);
            if pq.hits == 0 {
                notes.push(format!("{} found nothing for {q:?}", tool.name()));
            }
        }
        row.per_query = queries.iter().cloned().zip(per_query[i].clone()).collect();
        rows.push(row);
    }

    rows.extend(logged);
    rows.push(measure_stat_walk(at, p, runs)?);

    if p.lesson_skipped.is_none() {
        match &lesson_top {
            Some((slug, path)) => {
                // `path` may be absolute, relative to the bank or to the working directory
                let file = path
                    .iter()
                    .flat_map(|p| [at.bank.join(p), PathBuf::from(p)])
                    .find(|p| p.is_file())
                    .unwrap_or_else(|| at.bank.join(format!("{slug}.md")));
                rows.extend(measure_changes(
                    at,
                    p,
                    &queries[0],
                    slug,
                    &file,
                    runs,
                    &mut notes,
                )?);
            }
            None => notes.push(format!(
                "lesson search found nothing for {:?}: the change rows are not measured",
                queries[0]
            )),
        }
    } else {
        rows.push(Row::skipped(
            "lesson after touch",
            "needs `lesson search`".into(),
        ));
        rows.push(Row::skipped(
            "lesson after edit",
            "needs `lesson search`".into(),
        ));
    }
    notes.push(format!(
        "load average (1, 5, 15 min) at the start: {load_at_start}; at the end: {}",
        load_average()
    ));
    if p.lesson_skipped.is_some() {
        rows.push(Row::skipped(WATCHED_ROW, "needs `lesson search`".into()));
    } else if !tools::has_subcommand(&p.lesson, "watch") {
        rows.push(Row::skipped(
            WATCHED_ROW,
            "the lesson binary has no `watch` subcommand".into(),
        ));
    } else {
        rows.extend(measure_watcher(at, p, queries, runs, &mut notes)?);
    }
    for warm in [Warm::Lesson, Warm::Exhaustive] {
        if p.lesson_skipped.is_none() {
            rows.push(measure_warm(at, p, warm, queries, runs, &mut notes)?);
        } else {
            rows.push(Row::skipped(warm_row(warm), "needs `lesson search`".into()));
        }
    }
    if active.contains(&Tool::Tantivy) {
        rows.push(measure_warm(
            at,
            p,
            Warm::Tantivy,
            queries,
            runs,
            &mut notes,
        )?);
    } else {
        rows.push(Row::skipped(
            warm_row(Warm::Tantivy),
            "tantivy is not measured at this size".into(),
        ));
    }
    if p.lesson_skipped.is_none() && tools::has_subcommand(&p.lesson, "mcp") {
        rows.push(measure_mcp(at, p, queries, runs, &mut notes)?);
    } else {
        rows.push(Row::skipped(
            MCP_ROW,
            "the lesson binary has no `mcp` subcommand".into(),
        ));
    }
    Ok((rows, notes))
}

/// A warm in-process query.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Warm {
    /// `lesson::retrieve::Retriever::search`.
    Lesson,
    /// The same index searched exhaustively (every posting scored): the pruned search's oracle.
    Exhaustive,
    /// tantivy's searcher kept open.
    Tantivy,
    /// `Retriever::search` on a bank with `[retrieve] model` (the request embedded, the hybrid
    /// ranking).
    Model,
}

/// The name of the warm in-process row of `warm`.
fn warm_row(warm: Warm) -> &'static str {
    match warm {
        Warm::Lesson => "lesson in-process (warm)",
        Warm::Exhaustive => "lesson exhaustive (warm)",
        Warm::Tantivy => "tantivy in-process (warm)",
        Warm::Model => MODEL_WARM_ROW,
    }
}

/// The name of the row of `lesson search` with `[retrieve] model`, a new process per query.
const MODEL_ROW: &str = "lesson with model";
/// The name of the warm in-process row with `[retrieve] model`.
const MODEL_WARM_ROW: &str = "lesson with model in-process (warm)";

/// `lesson search` with `[retrieve] model` (`--model DIR`), on a copy of the bank with the key
/// set: the first search from an empty `.lesson/` (it builds the index and embeds every
/// lesson) as the build, the index with its vectors as the size, each query as a new process,
/// then the warm in-process query on the same bank.
fn measure_model(
    at: &Places,
    p: &Programs,
    work: &Path,
    queries: &[String],
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Row>> {
    let Some((bin, model)) = &p.semantic else {
        return Ok(Vec::new());
    };
    let n = at.lessons;
    let bank = work.join("bank-model");
    copy_bank(at.bank, &bank)?;
    remove_dir(&bank.join(".lesson"))?;
    let config = bank.join("lesson.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap_or_default();
    let quoted = model
        .to_string_lossy()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    toml += &format!("\n[retrieve]\nmodel = \"{quoted}\"\n");
    std::fs::write(&config, toml).with_context(|| format!("cannot write {}", config.display()))?;
    let search = |q: &str| {
        let mut command = tools::search_command(bin, &bank, q, K);
        command.env("LESSON_NOW", NOW);
        Cmd {
            command,
            shown: format!(
                "lesson search QUERY --dir {} -k {K} --format json ([retrieve] model = {})",
                bank.display(),
                model.display()
            ),
        }
    };
    let output = at.output("model");
    let mut first = search(&queries[0]);
    let mut row = Row::new(MODEL_ROW, first.shown.clone());
    eprintln!("  {n} lessons: lesson with model, first search (embeds every lesson)");
    let build = timed(&mut first, &output, &[0])?;
    let stderr = std::fs::read_to_string(&output.stderr).unwrap_or_default();
    if let Some(warning) = stderr.lines().find(|l| l.contains("[retrieve] model")) {
        anyhow::bail!("lesson did not use the model: {warning}");
    }
    log(n, "lesson with model, first search", &build);
    row.build.samples.push(build);
    row.index_bytes = Some(disk_size(&bank.join(".lesson")));
    for q in queries {
        let mut samples = Vec::new();
        for _ in 0..runs {
            samples.push(timed(&mut search(q), &output, &[0])?);
        }
        let stdout = std::fs::read_to_string(&output.stdout)?;
        let hits = tools::parse_search_hits(&stdout)?.len();
        row.push_query(q, samples, hits);
    }
    let rss = row.query.samples.iter().map(|s| s.max_rss_kib).max();
    row.log_median(n, "lesson with model, median query", rss.unwrap_or(0));
    notes.push(format!(
        "{MODEL_ROW}: a copy of the bank with [retrieve] model = {}; its build is the first search \
         from an empty .lesson/ (the index and every lesson's vector), its size the .lesson/ \
         folder with the vectors, each query a new process of lesson built with the semantic feature",
        model.display()
    ));
    let places = Places {
        bank: &bank,
        fts5_db: at.fts5_db.clone(),
        tantivy_dir: at.tantivy_dir.clone(),
        out: at.out.clone(),
        lessons: n,
    };
    let warm = measure_warm(&places, p, Warm::Model, queries, runs, notes)?;
    Ok(vec![row, warm])
}

/// The name of the stat-walk floor row.
const STAT_WALK_ROW: &str = "stat-walk floor";

/// The floor of a search without a watcher: `xtask bench-helper stat-walk`, a new process that
/// walks the bank with lesson's walker and stats every lesson file, reading none (what `lesson
/// search` must do before it can trust its index). Measured `runs` × 5 times.
fn measure_stat_walk(at: &Places, p: &Programs, runs: usize) -> anyhow::Result<Row> {
    let mut cmd = Cmd::new(
        &p.xtask,
        os(&[&"bench-helper", &"stat-walk", &at.bank]),
        format!("xtask bench-helper stat-walk {}", at.bank.display()),
    );
    let output = at.output("stat-walk");
    let mut row = Row::new(STAT_WALK_ROW, cmd.shown.clone());
    for _ in 0..runs * 5 {
        row.query.samples.push(timed(&mut cmd, &output, &[0])?);
    }
    if let Some(st) = row.query.stats() {
        let median = Sample {
            wall: st.median,
            user: st.cpu_median,
            sys: Duration::ZERO,
            max_rss_kib: 0,
        };
        log(at.lessons, "stat-walk floor, median", &median);
    }
    Ok(row)
}

/// The name of the row of a logged search.
const LOGGED_ROW: &str = "lesson search --log";

/// The cost of `--log RUN` (retrieval accounting): each query as a new process, unlogged then
/// logged with a run id of its own, alternately, so that both see the same cache and load; the
/// row is the logged runs, and a note gives both medians and their difference.
fn measure_logged(
    at: &Places,
    p: &Programs,
    queries: &[String],
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Row> {
    let n = at.lessons;
    let mut plain = Measured::default();
    let mut row = Row::new(
        LOGGED_ROW,
        format!(
            "{} --log RUN",
            query_cmd(p, at, Tool::Lesson, "<query>").shown
        ),
    );
    // (logged − unlogged) of each pair, wall and CPU: a new process's stat walk dwarfs the
    // append, so the difference of two medians is mostly noise; the median of the paired
    // differences is not
    let mut wall_diffs: Vec<f64> = Vec::new();
    let mut cpu_diffs: Vec<f64> = Vec::new();
    for round in 1..=runs {
        for (qi, q) in queries.iter().enumerate() {
            let mut unlogged = query_cmd(p, at, Tool::Lesson, q);
            let mut cmd = query_cmd(p, at, Tool::Lesson, q);
            cmd.command
                .args(["--log", &format!("bench-{round}-{qi}")])
                .env("LESSON_BY", "bench");
            // which goes first alternates, so that neither always runs on the other's cache
            let (plain_sample, sample) = if (round + qi) % 2 == 0 {
                let a = timed(&mut unlogged, &at.output("lesson-unlogged"), &[0])?;
                (a, timed(&mut cmd, &at.output("lesson-logged"), &[0])?)
            } else {
                let b = timed(&mut cmd, &at.output("lesson-logged"), &[0])?;
                (
                    timed(&mut unlogged, &at.output("lesson-unlogged"), &[0])?,
                    b,
                )
            };
            plain.samples.push(plain_sample);
            let cpu = |s: &Sample| (s.user + s.sys).as_secs_f64();
            wall_diffs.push(sample.wall.as_secs_f64() - plain_sample.wall.as_secs_f64());
            cpu_diffs.push(cpu(&sample) - cpu(&plain_sample));
            row.query.samples.push(sample);
            let entry = PerQuery {
                measured: Measured {
                    samples: vec![sample],
                },
                hits: 0,
            };
            match row.per_query.get_mut(qi) {
                Some((_, pq)) => pq.measured.samples.push(sample),
                None => row.per_query.push((q.clone(), entry)),
            }
        }
        eprintln!("  {n} lessons: logged and unlogged queries, run {round}/{runs} done");
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    if let (Some(logged), Some(unlogged)) = (row.query.stats(), plain.stats()) {
        notes.push(format!(
            "{LOGGED_ROW}: median {} a search logged (one line appended to _log/_shown.jsonl) against {} \
             the same searches unlogged, as new processes in {} pairs (which runs first alternates); \
             per pair, logged minus unlogged: wall {:+.2} ms median ({:+.2} ms mean), CPU {:+.2} ms \
             median ({:+.2} ms mean); the in-process append alone is the warm row's note",
            ms(logged.median),
            ms(unlogged.median),
            wall_diffs.len(),
            median(&mut wall_diffs) * 1e3,
            mean(&wall_diffs) * 1e3,
            median(&mut cpu_diffs) * 1e3,
            mean(&cpu_diffs) * 1e3,
        ));
    }
    Ok(row)
}

/// The warm in-process query: `xtask bench-helper lesson-warm` opens the bank once with the
/// lesson library and times each query `runs` times on the open [`lesson::retrieve::Retriever`];
/// `tantivy-warm` does the same with tantivy's searcher kept open.
/// Each sample's peak RSS is the helper's whole peak (the open index and every query).
fn measure_warm(
    at: &Places,
    p: &Programs,
    tool: Warm,
    queries: &[String],
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Row> {
    let n = at.lessons;
    let (helper, dir) = match tool {
        Warm::Tantivy => ("tantivy-warm", at.tantivy_dir.as_path()),
        Warm::Lesson | Warm::Model => ("lesson-warm", at.bank),
        Warm::Exhaustive => ("lesson-warm-exhaustive", at.bank),
    };
    let mut args = os(&[
        &"bench-helper",
        &helper,
        &dir,
        &K.to_string(),
        &runs.to_string(),
    ]);
    args.extend(queries.iter().map(OsString::from));
    let mut cmd = Cmd::new(
        &p.xtask,
        args,
        format!(
            "xtask bench-helper {helper} {} {K} {runs} <queries>",
            dir.display()
        ),
    );
    cmd.command.env("LESSON_NOW", NOW);
    let output = at.output(helper);
    let process = timed(&mut cmd, &output, &[0])?;
    let stdout = std::fs::read_to_string(&output.stdout)
        .with_context(|| format!("cannot read {}", output.stdout.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&stdout).with_context(|| format!("{helper} printed no JSON"))?;
    let secs_of = |v: &serde_json::Value| Duration::from_secs_f64(v.as_f64().unwrap_or(0.0));
    let open = secs_of(&json["open_s"]);
    let mut row = Row::new(warm_row(tool), cmd.shown);
    for (q, entry) in queries
        .iter()
        .zip(json["queries"].as_array().into_iter().flatten())
    {
        let samples: Vec<Sample> = entry["runs_s"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| Sample {
                wall: secs_of(t),
                user: secs_of(t),
                sys: Duration::ZERO,
                max_rss_kib: process.max_rss_kib,
            })
            .collect();
        let hits = entry["hits"].as_u64().unwrap_or(0) as usize;
        if hits == 0 {
            notes.push(format!("{} found nothing for {q:?}", warm_row(tool)));
        }
        row.push_query(q, samples, hits);
    }
    row.log_median(
        n,
        &format!("{}, median query", warm_row(tool)),
        process.max_rss_kib,
    );
    notes.push(match tool {
        Warm::Exhaustive => format!(
            "lesson exhaustive (warm): the same open index, every query scoring every posting \
             term at a time (the pruned search's oracle; Retriever::open took {})",
            ms(open)
        ),
        Warm::Model => format!(
            "{MODEL_WARM_ROW}: Retriever::open (load the index, the model and the vectors) took {}, \
             once; the query column is one Retriever::search (the request embedded, every eligible \
             lesson's cosine fused with its lexical similarity), timed inside the process",
            ms(open)
        ),
        Warm::Tantivy => format!(
            "tantivy in-process (warm): opening the index took {}, once; the query column is one \
             search on the searcher kept open (the same queries, hits read back), timed inside \
             the process",
            ms(open)
        ),
        _ => format!(
            "lesson in-process (warm): Retriever::open (load the index, check the files) took {}, once; \
             the query column is one Retriever::search on the open index (no file check), \
             timed inside the process (the xtask binary, system allocator)",
            ms(open)
        ),
    });
    let mut log_times: Vec<f64> = json["queries"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|q| q["log_s"].as_array().into_iter().flatten())
        .filter_map(serde_json::Value::as_f64)
        .collect();
    log_times.sort_by(f64::total_cmp);
    if let (Some(median), Some(max)) = (log_times.get(log_times.len() / 2), log_times.last()) {
        notes.push(format!(
            "lesson in-process (warm): logging a search's hits for a run (lesson::usage::log_shown, \
             what --log adds: the lock, one appended line) took {:.3} ms median, {:.3} ms at most, over {} searches",
            median * 1e3,
            max * 1e3,
            log_times.len()
        ));
    }
    Ok(row)
}

/// The name of the row of a query through a running `lesson mcp`.
const MCP_ROW: &str = "lesson mcp (running server)";

/// A query through a running `lesson mcp`: one server is started on the bank and initialized
/// (not timed), then each query is a `tools/call search` written to its stdin and its answer
/// read from its stdout, timed from the write to the whole answer. The server keeps its index
/// open between calls and current with its own file watcher (`lesson::watch::follow`: a
/// barrier through the watcher's events before each search, no stat walk). Its RSS is the
/// server's peak (`VmHWM`) at the end.
fn measure_mcp(
    at: &Places,
    p: &Programs,
    queries: &[String],
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Row> {
    let n = at.lessons;
    let start = std::time::Instant::now();
    let mut server = crate::mcp::McpClient::start(&p.lesson, at.bank, "bench")?;
    // the first call opens the index (Retriever::open), not timed as a query
    server.call("search", serde_json::json!({"request": "warm up", "k": K}))?;
    let opened = start.elapsed();
    let mut row = Row::new(
        MCP_ROW,
        format!(
            "lesson mcp --dir {} (tools/call search {{request, k: {K}}})",
            at.bank.display()
        ),
    );
    let mut per_query: Vec<(String, PerQuery)> = queries
        .iter()
        .map(|q| (q.clone(), PerQuery::default()))
        .collect();
    for _ in 0..runs {
        for (q, entry) in per_query.iter_mut() {
            let t = std::time::Instant::now();
            let answer = server.call("search", serde_json::json!({"request": q, "k": K}))?;
            let wall = t.elapsed();
            entry.hits = answer["hits"].as_array().map_or(0, Vec::len);
            entry.measured.samples.push(Sample {
                wall,
                user: wall,
                sys: Duration::ZERO,
                max_rss_kib: 0,
            });
        }
    }
    let rss = server.peak_rss_kib();
    drop(server);
    for (q, entry) in &mut per_query {
        for s in &mut entry.measured.samples {
            s.max_rss_kib = rss;
        }
        if entry.hits == 0 {
            notes.push(format!("lesson mcp found nothing for {q:?}"));
        }
        row.query.samples.extend(&entry.measured.samples);
    }
    row.per_query = per_query;
    if let Some(st) = row.query.stats() {
        let median = Sample {
            wall: st.median,
            user: st.cpu_median,
            sys: Duration::ZERO,
            max_rss_kib: rss,
        };
        log(n, "mcp (running server), median query", &median);
    }
    notes.push(format!(
        "lesson mcp (running server): start, initialize and the first search (Retriever::open) took {}, once; \
         the query column is a tools/call search written to the server and its whole answer read \
         (JSON-RPC over pipes, the server's barrier through its file watcher, the search, the \
         prompt block, the hits as JSON)",
        ms(opened)
    ));
    Ok(row)
}

/// Restores a file's bytes when dropped, so that an edited bank goes back to its stamp even when
/// a run fails halfway.
struct Restore {
    path: PathBuf,
    original: Vec<u8>,
}

impl Drop for Restore {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.path, &self.original) {
            eprintln!("cannot restore {}: {e}", self.path.display());
        }
    }
}

/// The search after a change, without a watcher: after `touch` (mtime only: the stat walk sees a
/// change, the content hash does not) and after an edit that adds a unique word (the index must
/// reflect it: the edited lesson must come first for that word).
fn measure_changes(
    at: &Places,
    p: &Programs,
    query: &str,
    slug: &str,
    file: &Path,
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Row>> {
    let n = at.lessons;
    let original =
        std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let output = at.output("lesson-change");
    let mut touch = Row::new(
        "lesson after touch",
        format!("touch {}; lesson search {query:?} …", file.display()),
    );
    let mut edit = Row::new(
        "lesson after edit",
        format!(
            "append a unique word to {}; lesson search \"<word>\" …",
            file.display()
        ),
    );
    let mut reflected = 0;
    for round in 1..=runs {
        // touch: a new mtime, the same bytes
        let handle = std::fs::File::options()
            .write(true)
            .open(file)
            .with_context(|| format!("cannot open {}", file.display()))?;
        handle.set_modified(SystemTime::now())?;
        drop(handle);
        let sample = timed(&mut query_cmd(p, at, Tool::Lesson, query), &output, &[0])?;
        log(
            n,
            &format!("lesson after touch, run {round}/{runs}"),
            &sample,
        );
        touch.query.samples.push(sample);

        // edit: a word no other lesson has
        let word = format!("quokkamarker{round}zq");
        let guard = Restore {
            path: file.to_path_buf(),
            original: original.clone(),
        };
        let mut edited = original.clone();
        edited.extend_from_slice(format!("\nThe {word} step was added by the bench.\n").as_bytes());
        std::fs::write(file, &edited)
            .with_context(|| format!("cannot write {}", file.display()))?;
        let sample = timed(&mut query_cmd(p, at, Tool::Lesson, &word), &output, &[0])?;
        let stdout = std::fs::read_to_string(&output.stdout).unwrap_or_default();
        let hits = tools::parse_search_hits(&stdout)?;
        if hits.first().is_some_and(|h| h.slug == slug) {
            reflected += 1;
        }
        log(
            n,
            &format!("lesson after edit, run {round}/{runs}"),
            &sample,
        );
        edit.query.samples.push(sample);
        drop(guard);
        // bring the index back in line with the restored file, untimed
        timed(&mut query_cmd(p, at, Tool::Lesson, query), &output, &[0])?;
    }
    if reflected < runs {
        notes.push(format!(
            "after an edit, lesson search ranked the edited lesson `{slug}` first for its new \
             word in only {reflected} of {runs} runs: the index may not reflect the change"
        ));
    } else {
        notes.push(format!(
            "after each edit, the edited lesson `{slug}` came first for its new word: the index \
             reflected the change"
        ));
    }
    Ok(vec![touch, edit])
}

/// The debounce the bench's watcher runs with.
const WATCH_DEBOUNCE: Duration = Duration::from_millis(50);
/// Changes timed from the file to the watcher's published index, per bank size (at least).
const WATCH_CHANGES: usize = 10;
/// How long the watcher may take to start (its first check of the bank) or to apply a change
/// before the bench gives up.
const WATCH_PATIENCE: Duration = Duration::from_secs(600);

/// A `lesson watch` child, stopped (SIGINT) when dropped.
struct WatchChild {
    child: std::process::Child,
    bank: PathBuf,
}

impl WatchChild {
    fn start(p: &Programs, at: &Places, extra: &[&str]) -> anyhow::Result<WatchChild> {
        let output = at.output("lesson-watch");
        let create = |path: &Path| {
            std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))
        };
        let child = Command::new(&p.lesson)
            .arg("watch")
            .arg("--dir")
            .arg(at.bank)
            .arg("--debounce")
            .arg(WATCH_DEBOUNCE.as_millis().to_string())
            .args(extra)
            .env("LESSON_NOW", NOW)
            .env_remove("LESSON_DIR")
            .stdin(std::process::Stdio::null())
            .stdout(create(&output.stdout)?)
            .stderr(create(&output.stderr)?)
            .spawn()
            .context("cannot start lesson watch")?;
        let mut w = WatchChild {
            child,
            bank: at.bank.to_path_buf(),
        };
        let pid = w.child.id();
        let started = std::time::Instant::now();
        while marker(&w.bank).is_none_or(|(owner, _)| owner != pid) {
            if let Some(status) = w.child.try_wait()? {
                let stderr = std::fs::read_to_string(&output.stderr).unwrap_or_default();
                anyhow::bail!("lesson watch exited ({status}) before publishing: {stderr}");
            }
            if started.elapsed() > WATCH_PATIENCE {
                anyhow::bail!("lesson watch published no marker in {WATCH_PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(w)
    }

    fn generation(&self) -> Option<u64> {
        marker(&self.bank).map(|(_, generation)| generation)
    }

    /// Peak resident memory so far, in KiB (`VmHWM`; 0 where `/proc` does not say).
    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// SIGINT, then wait: whether it exited with status 0.
    fn stop(mut self) -> anyhow::Result<bool> {
        let pid = libc::pid_t::try_from(self.child.id()).context("pid out of range")?;
        // SAFETY: kill has no memory preconditions; `pid` is our own unreaped child.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let status = self.child.wait()?;
        Ok(status.success())
    }
}

impl Drop for WatchChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The pid and generation in a bank's `.lesson/watch.json`, if it holds one.
fn marker(bank: &Path) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(bank.join(".lesson").join("watch.json")).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = u32::try_from(json.get("pid")?.as_u64()?).ok()?;
    Some((pid, json.get("generation")?.as_u64()?))
}

/// With `lesson watch` running: every query as a new process (the watcher answers it, from
/// the index it holds open), then the time from a file change to the watcher publishing the
/// generation that reflects it, minus the debounce; last, the queries again with a watcher that
/// does not answer (`--no-serve`: the search opens the index the watcher vouches for).
fn measure_watcher(
    at: &Places,
    p: &Programs,
    queries: &[String],
    runs: usize,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Row>> {
    let n = at.lessons;
    eprintln!("  {n} lessons: starting lesson watch");
    let watcher = WatchChild::start(p, at, &[])?;
    let vouched = watcher.generation();
    let (search, retrievable) = watched_queries(at, p, queries, runs, WATCHED_ROW, "lesson watch")?;
    if watcher.generation() != vouched {
        notes.push("the watcher published another generation during the queries".into());
    }

    // a change: a word no lesson has, appended to one lesson, then the file restored
    let mut change = Row::new(
        "lesson watch: change to index",
        format!(
            "append a unique word to a lesson (a temp file renamed over it); poll \
             .lesson/watch.json until the generation moves; minus the {} ms debounce",
            WATCH_DEBOUNCE.as_millis()
        ),
    );
    change.not_a_query = true;
    let mut files = retrievable;
    if files.len() < WATCH_CHANGES {
        for file in lesson_files(at.bank, WATCH_CHANGES)? {
            if files.len() < WATCH_CHANGES && !files.contains(&file) {
                files.push(file);
            }
        }
    }
    let mut reflected = 0;
    let check = at.output("lesson-watched-change");
    for (i, file) in files.iter().enumerate() {
        let original =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let guard = Restore {
            path: file.clone(),
            original: original.clone(),
        };
        let word = format!("wombatmarker{i}zq");
        let mut edited = original.clone();
        edited.extend_from_slice(format!("\nThe {word} step was added by the bench.\n").as_bytes());
        // saved as editors save, a temp file renamed over the lesson: the change lands at once
        // (a batch can see a plain write half done when the machine is loaded)
        let temp = file.with_file_name(format!(".bench-{i}.tmp"));
        std::fs::write(&temp, &edited)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        let before = watcher.generation();
        let start = std::time::Instant::now();
        std::fs::rename(&temp, file).with_context(|| format!("cannot write {}", file.display()))?;
        let took = wait_for_generation(&watcher, before, start)?;
        change.query.samples.push(Sample {
            wall: took.saturating_sub(WATCH_DEBOUNCE),
            user: Duration::ZERO,
            sys: Duration::ZERO,
            max_rss_kib: 0,
        });
        timed(&mut query_cmd(p, at, Tool::Lesson, &word), &check, &[0])?;
        let stdout = std::fs::read_to_string(&check.stdout).unwrap_or_default();
        let hits = tools::parse_search_hits(&stdout)?;
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
        if hits.first().map(|h| Some(&h.slug)) == Some(stem.as_ref()) {
            reflected += 1;
        }
        // restored the same way, then let the watcher settle before the next change
        std::fs::write(&temp, &original)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        let before = watcher.generation();
        std::fs::rename(&temp, file).with_context(|| format!("cannot write {}", file.display()))?;
        std::mem::forget(guard);
        wait_for_generation(&watcher, before, std::time::Instant::now())?;
        settle(&watcher);
        log(
            n,
            &format!("change reflected, {}/{}", i + 1, files.len()),
            &change.query.samples[i],
        );
    }
    // the watcher's own peak memory stands in the change row's memory column
    let peak = watcher.peak_rss_kib();
    if let Some(s) = change.query.samples.first_mut() {
        s.max_rss_kib = peak;
    }
    notes.push(format!(
        "lesson watch: {reflected} of {} changed lessons came first for their new word in a \
         search right after the watcher published; its peak RSS {} (in the change row)",
        files.len(),
        super::table::mib(peak)
    ));
    if !watcher.stop()? {
        notes.push("lesson watch did not exit with 0 on SIGINT".into());
    }

    eprintln!("  {n} lessons: starting lesson watch --no-serve");
    let watcher = WatchChild::start(p, at, &["--no-serve"])?;
    let (unserved, _) = watched_queries(
        at,
        p,
        queries,
        runs,
        UNSERVED_ROW,
        "lesson watch --no-serve",
    )?;
    if !watcher.stop()? {
        notes.push("lesson watch --no-serve did not exit with 0 on SIGINT".into());
    }
    Ok(vec![search, change, unserved])
}

/// The row of the queries with a watcher that answers them.
const WATCHED_ROW: &str = "lesson with watcher";
/// The row of the queries with a watcher that does not (`--no-serve`).
const UNSERVED_ROW: &str = "lesson with watcher, not serving";

/// Every query as a new process, `runs` times, while the watcher started as `watch` runs: the
/// row `name`, and the files of the lessons found (for the change row to edit).
fn watched_queries(
    at: &Places,
    p: &Programs,
    queries: &[String],
    runs: usize,
    name: &str,
    watch: &str,
) -> anyhow::Result<(Row, Vec<PathBuf>)> {
    let n = at.lessons;
    let mut search = Row::new(
        name,
        format!(
            "{watch} --dir {} --debounce {}; {}",
            at.bank.display(),
            WATCH_DEBOUNCE.as_millis(),
            query_cmd(p, at, Tool::Lesson, "<query>").shown
        ),
    );
    let output = at.output(&format!("lesson-watched-query-{}", search_slug(name)));
    let mut retrievable: Vec<PathBuf> = Vec::new();
    for round in 1..=runs {
        for q in queries {
            let sample = timed(&mut query_cmd(p, at, Tool::Lesson, q), &output, &[0])?;
            let stdout = std::fs::read_to_string(&output.stdout).unwrap_or_default();
            let found = tools::parse_search_hits(&stdout)?;
            let hits = found.len();
            // lessons a search returns (active, for anyone): the ones the change row edits
            for hit in found {
                let file = hit
                    .path
                    .iter()
                    .flat_map(|p| [at.bank.join(p), PathBuf::from(p)])
                    .find(|p| p.is_file())
                    .unwrap_or_else(|| at.bank.join(format!("{}.md", hit.slug)));
                if retrievable.len() < WATCH_CHANGES && !retrievable.contains(&file) {
                    retrievable.push(file);
                }
            }
            search.query.samples.push(sample);
            match search.per_query.iter_mut().find(|(pq, _)| pq == q) {
                Some((_, pq)) => {
                    pq.measured.samples.push(sample);
                    pq.hits = hits;
                }
                None => search.per_query.push((
                    q.clone(),
                    PerQuery {
                        measured: Measured {
                            samples: vec![sample],
                        },
                        hits,
                    },
                )),
            }
        }
        eprintln!("  {n} lessons: queries ({name}), run {round}/{runs} done");
    }
    Ok((search, retrievable))
}

/// A row's name as a file-name piece.
fn search_slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Poll the marker in a tight loop until its generation moves past `before`; the time since
/// `start`.
fn wait_for_generation(
    watcher: &WatchChild,
    before: Option<u64>,
    start: std::time::Instant,
) -> anyhow::Result<Duration> {
    loop {
        let now = watcher.generation();
        if now.is_some() && now > before {
            return Ok(start.elapsed());
        }
        if start.elapsed() > WATCH_PATIENCE {
            anyhow::bail!("lesson watch published no new generation in {WATCH_PATIENCE:?}");
        }
        // a tight loop, but one that lets the watcher run on a two-core machine
        std::thread::yield_now();
    }
}

/// Wait until the watcher's generation has not moved for a few debounce windows.
fn settle(watcher: &WatchChild) {
    let mut last = watcher.generation();
    let mut quiet = std::time::Instant::now();
    while quiet.elapsed() < WATCH_DEBOUNCE * 4 {
        std::thread::sleep(WATCH_DEBOUNCE / 5);
        let now = watcher.generation();
        if now != last {
            last = now;
            quiet = std::time::Instant::now();
        }
    }
}

/// The first `count` lesson files of a bank, by name (deterministic; a fallback when the
/// queries returned too few lessons).
fn lesson_files(bank: &Path, count: usize) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(bank)
        .with_context(|| format!("cannot read {}", bank.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.ends_with(".md") && !name.starts_with('_') && !name.starts_with('.')
        })
        .collect();
    files.sort();
    files.truncate(count);
    Ok(files)
}

/// Copy a bank (without its `.lesson/` cache) to `to`, replacing what was there.
fn copy_bank(from: &Path, to: &Path) -> anyhow::Result<()> {
    remove_dir(to)?;
    copy_tree(from, to)
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?
    {
        let entry = entry?;
        if entry.file_name() == ".lesson" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// `/proc/loadavg`'s first three fields: other work on the machine skews the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "unknown".into(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

fn remove_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", dir.display())),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn over(a: Option<Duration>, b: Option<Duration>) -> Option<f64> {
    let (a, b) = (a?.as_secs_f64(), b?.as_secs_f64());
    (b > 0.0).then(|| a / b)
}

fn render(
    machine: &Machine,
    programs: &Programs,
    runs: usize,
    queries: &[String],
    results: &[SizeResult],
) -> String {
    let mut s = format!(
        "\nsearch bench: {}\n{}, lesson {}, generator {GENERATOR_VERSION}, {} queries x {runs} runs, top {K}, LESSON_NOW={NOW}\n\n",
        machine.summary(),
        programs.rg_version,
        programs.lesson.display(),
        queries.len(),
    );
    let mut table = Table::new(vec![
        ("lessons", Align::Right),
        ("tool", Align::Left),
        ("build", Align::Right),
        ("index", Align::Right),
        ("/ bank", Align::Right),
        ("query median", Align::Right),
        ("build RSS", Align::Right),
        ("query RSS", Align::Right),
        ("/ rg", Align::Right),
        ("/ tantivy", Align::Right),
    ]);
    for r in results {
        let rg = r.query_median(Tool::Rg.name());
        let tantivy = r.query_median(Tool::Tantivy.name());
        for row in &r.rows {
            let mut cells = vec![r.bank.lessons.to_string(), row.name.clone()];
            if row.skipped.is_some() {
                cells.push("skipped".into());
                table.row(cells);
                continue;
            }
            let build = row.build.stats();
            let query = row.query.stats();
            let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            cells.extend([
                opt(build.map(|b| secs(b.median))),
                opt(row.index_bytes.map(mb)),
                opt(row
                    .index_bytes
                    .map(|b| ratio(b as f64 / r.bank.bytes.max(1) as f64))),
                opt(query.map(|q| ms(q.median))),
                opt(build.map(|b| mib(b.peak_rss_kib))),
                opt(query.map(|q| mib(q.peak_rss_kib))),
                opt(over(query.map(|q| q.median), rg)
                    .filter(|_| !row.not_a_query)
                    .map(ratio)),
                opt(over(query.map(|q| q.median), tantivy)
                    .filter(|_| !row.not_a_query)
                    .map(ratio)),
            ]);
            table.row(cells);
        }
    }
    s += &table.render();
    s += &growth(results);
    s += "\nbuild: median wall time of a fresh index (lesson: the first `lesson search` with no .lesson/);\n\
          index: size on disk, and its ratio to the bank's lesson files; query: median wall time of a\n\
          new process over every query and run; / rg and / tantivy: query median over theirs.\n\
          lesson with watcher: the same queries while `lesson watch` runs, which answers them;\n\
          lesson with watcher, not serving: the same with `lesson watch --no-serve`, which only\n\
          vouches for the index (the search opens it and skips its stat walk);\n\
          lesson watch: change to index: in the query column, the median time from writing a lesson\n\
          to the watcher publishing the index that reflects it, minus the debounce; in the query RSS\n\
          column, the watcher's peak RSS.\n\
          lesson in-process (warm): one query on a Retriever the process keeps open (the library,\n\
          as a runtime would use it), timed inside the process; its RSS is the process's peak.\n\
          lesson exhaustive (warm): the same, every posting scored (the pruned search's oracle).\n\
          tantivy in-process (warm): the same queries on tantivy's searcher kept open.\n\
          stat-walk floor: a new process that stats every lesson file with lesson's walker and\n\
          reads nothing: what a search without a watcher pays before it trusts its index.\n\
          lesson mcp (running server): one tools/call search through a running `lesson mcp`, from\n\
          the request written to the answer read; its RSS is the server's peak.\n";
    let x = |v: Option<f64>| v.map_or_else(|| "-".into(), ratio);
    for r in results {
        // a query time as ratios to rg's and tantivy's medians
        let vs = |t: Duration| {
            (
                x(over(Some(t), r.query_median(Tool::Rg.name()))),
                x(over(Some(t), r.query_median(Tool::Tantivy.name()))),
            )
        };
        let lesson = r.query_median(Tool::Lesson.name());
        let line = match lesson {
            Some(l) => {
                let (rg, tantivy) = vs(l);
                format!(
                    "lesson search {} = {rg} rg, {tantivy} tantivy; build {} tantivy's",
                    ms(l),
                    x(over(
                        r.build_median(Tool::Lesson.name()),
                        r.build_median(Tool::Tantivy.name())
                    )),
                )
            }
            None => "lesson search not measured".into(),
        };
        s += &format!("{:>7} lessons: {line}\n", r.bank.lessons);
        if let Some(w) = r.query_median(WATCHED_ROW) {
            let (rg, tantivy) = vs(w);
            s += &format!(
                "         with a watcher: lesson search {} = {rg} rg, {tantivy} tantivy; a change reaches the index {} after the debounce\n",
                ms(w),
                r.query_median("lesson watch: change to index")
                    .map_or_else(|| "-".into(), ms),
            );
        }
        if let Some(w) = r.query_median(UNSERVED_ROW) {
            let (rg, tantivy) = vs(w);
            s += &format!(
                "         with a watcher that does not answer (--no-serve): lesson search {} = {rg} rg, {tantivy} tantivy\n",
                ms(w),
            );
        }
        if let (Some(l), Some(walk)) = (lesson, r.query_median(STAT_WALK_ROW)) {
            s += &format!(
                "         without a watcher: lesson search {} = {} the stat-walk floor ({})\n",
                ms(l),
                x(over(Some(l), Some(walk))),
                ms(walk),
            );
        }
        if let Some(w) = r.query_median(warm_row(Warm::Lesson)) {
            let (rg, tantivy) = vs(w);
            let warm = r.query_median(warm_row(Warm::Tantivy));
            let exhaustive = r.query_median(warm_row(Warm::Exhaustive));
            s += &format!(
                "         in-process, warm: a query {} = {rg} rg, {tantivy} tantivy's one-shot process, {} tantivy's warm query ({}), {} the exhaustive query ({})\n",
                ms(w),
                x(over(Some(w), warm)),
                warm.map_or_else(|| "-".into(), ms),
                x(over(Some(w), exhaustive)),
                exhaustive.map_or_else(|| "-".into(), ms),
            );
        }
        if let Some(m) = r.query_median(MCP_ROW) {
            let (rg, tantivy) = vs(m);
            s += &format!(
                "         through lesson mcp: a query {} = {rg} rg, {tantivy} tantivy's one-shot process\n",
                ms(m),
            );
        }
        for row in &r.rows {
            if let Some(why) = &row.skipped {
                s += &format!("         note: {} skipped: {why}\n", row.name);
            }
        }
        for note in &r.notes {
            s += &format!("         note: {note}\n");
        }
    }
    s
}

/// How each row's figures grow from one bank size to the next: the query median's factor
/// and the build's, for every row measured at both sizes.
fn growth(results: &[SizeResult]) -> String {
    let mut s = String::new();
    for pair in results.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let mut table = Table::new(vec![
            ("tool", Align::Left),
            ("query", Align::Right),
            ("query x", Align::Right),
            ("build", Align::Right),
            ("build x", Align::Right),
        ]);
        let factor = |x: Option<Duration>, y: Option<Duration>| match (x, y) {
            (Some(x), Some(y)) if !x.is_zero() => ratio(y.as_secs_f64() / x.as_secs_f64()),
            _ => "-".into(),
        };
        let span =
            |x: Option<Duration>, y: Option<Duration>, f: fn(Duration) -> String| match (x, y) {
                (Some(x), Some(y)) => format!("{} to {}", f(x), f(y)),
                _ => "-".into(),
            };
        for row in b.rows.iter().filter(|r| r.skipped.is_none()) {
            let (qa, qb) = (a.query_median(&row.name), b.query_median(&row.name));
            let (ba, bb) = (a.build_median(&row.name), b.build_median(&row.name));
            if (qa.is_none() || qb.is_none()) && (ba.is_none() || bb.is_none()) {
                continue;
            }
            table.row(vec![
                row.name.clone(),
                span(qa, qb, ms),
                factor(qa, qb),
                span(ba, bb, secs),
                factor(ba, bb),
            ]);
        }
        s += &format!(
            "\ngrowth from {} to {} lessons ({}x the lessons):\n",
            a.bank.lessons,
            b.bank.lessons,
            b.bank.lessons as f64 / a.bank.lessons.max(1) as f64
        );
        s += &table.render();
    }
    s
}

fn stats_json(m: &Measured) -> Json {
    let dur = |d: Duration| Json::Num(d.as_secs_f64());
    let Some(st) = m.stats() else {
        return Json::Null;
    };
    let samples = m.samples.iter().map(|s| s.to_json()).collect();
    Json::Obj(vec![
        ("best_s", dur(st.best)),
        ("median_s", dur(st.median)),
        ("cpu_median_s", dur(st.cpu_median)),
        ("peak_rss_kib", Json::Int(st.peak_rss_kib)),
        ("runs", Json::Arr(samples)),
    ])
}

fn to_json(
    machine: &Machine,
    programs: &Programs,
    runs: usize,
    queries: &[String],
    results: &[SizeResult],
) -> Json {
    let sizes = results
        .iter()
        .map(|r| {
            let rg = r.query_median(Tool::Rg.name());
            let tantivy = r.query_median(Tool::Tantivy.name());
            let rows = r
                .rows
                .iter()
                .map(|row| {
                    let median = row
                        .query
                        .stats()
                        .map(|q| q.median)
                        .filter(|_| !row.not_a_query);
                    let per_query = row
                        .per_query
                        .iter()
                        .map(|(q, pq)| {
                            Json::Obj(vec![
                                ("query", Json::str(q)),
                                (
                                    "median_s",
                                    Json::opt_num(
                                        pq.measured.stats().map(|s| s.median.as_secs_f64()),
                                    ),
                                ),
                                ("hits", Json::Int(pq.hits as u64)),
                            ])
                        })
                        .collect();
                    Json::Obj(vec![
                        ("name", Json::str(&row.name)),
                        ("command", Json::str(&row.command)),
                        ("skipped", row.skipped.clone().map_or(Json::Null, Json::Str)),
                        ("build", stats_json(&row.build)),
                        ("index_bytes", row.index_bytes.map_or(Json::Null, Json::Int)),
                        (
                            "index_over_bank",
                            Json::opt_num(
                                row.index_bytes
                                    .map(|b| b as f64 / r.bank.bytes.max(1) as f64),
                            ),
                        ),
                        ("query", stats_json(&row.query)),
                        ("query_median_over_rg", Json::opt_num(over(median, rg))),
                        (
                            "query_median_over_tantivy",
                            Json::opt_num(over(median, tantivy)),
                        ),
                        ("per_query", Json::Arr(per_query)),
                    ])
                })
                .collect();
            Json::Obj(vec![
                ("lessons", Json::Int(r.bank.lessons as u64)),
                ("bank", Json::str(r.bank.dir.display().to_string())),
                ("bytes", Json::Int(r.bank.bytes)),
                ("tools", Json::Arr(rows)),
                ("notes", Json::Arr(r.notes.iter().map(Json::str).collect())),
            ])
        })
        .collect();
    Json::Obj(vec![
        ("bench", Json::str("search")),
        ("machine", machine.to_json()),
        ("ripgrep", Json::str(&programs.rg_version)),
        ("generator_version", Json::Int(u64::from(GENERATOR_VERSION))),
        ("lesson_now", Json::str(NOW)),
        ("runs_per_query", Json::Int(runs as u64)),
        ("k", Json::Int(K as u64)),
        (
            "queries",
            Json::Arr(queries.iter().map(Json::str).collect()),
        ),
        ("sizes", Json::Arr(sizes)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bank_copy_leaves_the_cache_behind_and_replaces_the_last_copy() {
        let tmp = std::env::temp_dir().join(format!("xtask-copy-{}", std::process::id()));
        let (from, to) = (tmp.join("from"), tmp.join("to"));
        std::fs::create_dir_all(from.join(".lesson")).unwrap();
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("a.md"), "a").unwrap();
        std::fs::write(from.join("sub/b.md"), "b").unwrap();
        std::fs::write(from.join(".lesson/retrieve.idx"), "x").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("stale.md"), "old").unwrap();
        copy_bank(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("sub/b.md")).unwrap(), "b");
        assert!(to.join("a.md").is_file());
        assert!(!to.join(".lesson").exists());
        assert!(!to.join("stale.md").exists());
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn the_marker_gives_pid_and_generation() {
        let tmp = std::env::temp_dir().join(format!("xtask-marker-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join(".lesson")).unwrap();
        assert_eq!(marker(&tmp), None);
        std::fs::write(
            tmp.join(".lesson/watch.json"),
            r#"{"pid":42,"index_id":1,"generation":7,"base":2,"delta":null}"#,
        )
        .unwrap();
        assert_eq!(marker(&tmp), Some((42, 7)));
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn ratios_and_formats() {
        let d = Duration::from_millis;
        assert_eq!(over(Some(d(30)), Some(d(10))), Some(3.0));
        assert_eq!(over(Some(d(30)), None), None);
        assert_eq!(over(Some(d(30)), Some(d(0))), None);
        assert_eq!(ms(Duration::from_micros(7250)), "7.2 ms");
        assert_eq!(mb(2_500_000), "2.5 MB");
    }

    #[test]
    fn commands_quote_queries_and_have_builds() {
        let p = Programs {
            lesson: "lesson".into(),
            lesson_skipped: None,
            rg: "rg".into(),
            rg_version: String::new(),
            xtask: "xtask".into(),
            semantic: None,
        };
        let at = Places {
            bank: Path::new("/bank"),
            fts5_db: "/w/fts5.db".into(),
            tantivy_dir: "/w/tantivy".into(),
            out: "/out".into(),
            lessons: 1,
        };
        assert!(build_cmd(&p, &at, Tool::Rg, "q").is_none());
        let q = query_cmd(&p, &at, Tool::Rg, "-x y");
        let args: Vec<_> = q.command.get_args().collect();
        assert_eq!(args, ["-l", "-i", "-F", "--", "-x y", "/bank"]);
        let l = query_cmd(&p, &at, Tool::Lesson, "-x");
        let args: Vec<_> = l.command.get_args().collect();
        assert_eq!(
            args,
            [
                "search", "--dir", "/bank", "-k", "10", "--budget", "1000000", "--format", "json",
                "--", "-x"
            ]
        );
        assert!(build_cmd(&p, &at, Tool::Fts5, "q").is_some());
        let b = build_cmd(&p, &at, Tool::Lesson, "q").unwrap();
        assert_eq!(b.command.get_args().last().unwrap(), "q");
    }
}
