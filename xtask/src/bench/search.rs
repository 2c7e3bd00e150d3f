//! `cargo xtask bench search`: `lesson search` on synthetic banks, side by side with the tools a
//! user would pick instead: `rg -l -i -F` (no index), SQLite FTS5 with the trigram tokenizer and
//! tantivy's BM25 (both through `xtask bench-helper`, so each build and each query is a new
//! process like `lesson search`).
//!
//! Per bank size it measures each indexer's build (wall, peak RSS, size on disk), then runs the
//! query set round-robin over the tools, `--runs` times, each query a new process. For lesson it
//! also times the search after one file was touched (mtime only) and after one file was edited,
//! which is the cost of bringing the index up to date without a watcher.

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

/// The programs the bench needs.
struct Programs {
    lesson: PathBuf,
    /// Why lesson's rows are skipped, when they are.
    lesson_skipped: Option<String>,
    rg: PathBuf,
    rg_version: String,
    xtask: PathBuf,
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
}

impl Row {
    fn new(name: &str, command: String) -> Row {
        Row {
            name: name.to_string(),
            command,
            build: Measured::default(),
            index_bytes: None,
            query: Measured::default(),
            per_query: Vec::new(),
            skipped: None,
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
        let places = Places {
            bank: &bank.dir,
            fts5_db: work.join("fts5.db"),
            tantivy_dir: work.join("tantivy"),
            out: out.clone(),
            lessons: n,
        };
        let (rows, notes) = measure_bank(&places, &programs, &queries, options.runs)?;
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
        .collect();

    let load_at_start = load_average();
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
    for (i, &tool) in Tool::ALL.iter().enumerate() {
        if !active.contains(&tool) {
            let why = p.lesson_skipped.clone().unwrap_or_default();
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
    rows.push(Row::skipped(
        "lesson with watcher",
        "placeholder: `lesson watch` does not exist yet; the rows above are without a watcher"
            .into(),
    ));
    rows.push(Row::skipped(
        "lesson in-process (warm)",
        "not measured: xtask does not link the lesson library (no `lesson::retrieve` API yet)"
            .into(),
    ));
    Ok((rows, notes))
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
                opt(over(query.map(|q| q.median), rg).map(ratio)),
                opt(over(query.map(|q| q.median), tantivy).map(ratio)),
            ]);
            table.row(cells);
        }
    }
    s += &table.render();
    s += "\nbuild: median wall time of a fresh index (lesson: the first `lesson search` with no .lesson/);\n\
          index: size on disk, and its ratio to the bank's lesson files; query: median wall time of a\n\
          new process over every query and run; / rg and / tantivy: query median over theirs.\n";
    for r in results {
        let lesson = r.query_median(Tool::Lesson.name());
        let line = match lesson {
            Some(l) => {
                let x = |v: Option<f64>| v.map_or_else(|| "-".into(), ratio);
                format!(
                    "lesson search {} = {} rg, {} tantivy; build {} tantivy's",
                    ms(l),
                    x(over(Some(l), r.query_median(Tool::Rg.name()))),
                    x(over(Some(l), r.query_median(Tool::Tantivy.name()))),
                    x(over(
                        r.build_median(Tool::Lesson.name()),
                        r.build_median(Tool::Tantivy.name())
                    )),
                )
            }
            None => "lesson search not measured".into(),
        };
        s += &format!("{:>7} lessons: {line}\n", r.bank.lessons);
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
                    let median = row.query.stats().map(|q| q.median);
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
