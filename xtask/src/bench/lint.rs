//! `cargo xtask bench lint`: `lesson lint` and `lesson index` on synthetic banks, against the
//! floors of reading every file (`cat`) and scanning every file (`rg`).
//!
//! The target (issue: performance budget) is lint + index within 3x of the rg floor at 100,000
//! lessons on 2 cores. Tools run round-robin, each as its own child process, so that a burst of
//! load from elsewhere on the machine spreads over all of them instead of hitting one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;

use super::json::Json;
use super::machine::Machine;
use super::measure::{self, Output, Sample, Stats};
use super::synthetic_bank::{self, SyntheticBank, GENERATOR_VERSION};
use super::table::{mib, ratio, secs, Align, Table};
use super::{tools, Options, Paths};

/// "Now" for every run, so that expiry (and anything derived from it) is reproducible.
const NOW: &str = "2026-11-22T12:00:00Z";
/// The budget: lint + index within this factor of the rg floor.
const TARGET_RATIO: f64 = 3.0;

/// What a tool stands for in the report.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Lint,
    Index,
    CatFloor,
    RgFloor,
}

/// One program to time on one bank.
struct Tool {
    name: &'static str,
    role: Role,
    program: PathBuf,
    args: Vec<OsString>,
    /// The command as a person would type it.
    shown: String,
    /// Why it is not run, when it is not.
    skipped: Option<String>,
}

impl Tool {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .env("LESSON_NOW", NOW)
            .env_remove("LESSON_DIR");
        cmd
    }
}

/// The programs the bench needs, found or built once.
struct Programs {
    lesson: PathBuf,
    has_index: bool,
    rg: PathBuf,
    rg_version: String,
}

fn tools_for(p: &Programs, bank: &Path) -> Vec<Tool> {
    let bank_s = bank.display().to_string();
    let lesson = |name, role, args: &[&str], skipped: Option<String>| {
        let mut full: Vec<OsString> = args.iter().map(OsString::from).collect();
        full.extend(["--dir".into(), bank.into()]);
        Tool {
            name,
            role,
            program: p.lesson.clone(),
            shown: format!("lesson {} --dir {bank_s}", args.join(" ")),
            args: full,
            skipped,
        }
    };
    let cat_script = r#"find "$1" -name '*.md' -print0 | xargs -0 cat > /dev/null"#;
    vec![
        lesson(
            "lesson lint",
            Role::Lint,
            &["lint", "--output-format", "concise", "--exit-zero"],
            None,
        ),
        lesson(
            "lesson index",
            Role::Index,
            &["index", "--stdout"],
            (!p.has_index).then(|| "the lesson binary has no `index` subcommand yet".to_string()),
        ),
        Tool {
            name: "cat floor",
            role: Role::CatFloor,
            program: "sh".into(),
            args: ["-c", cat_script, "sh"]
                .into_iter()
                .map(OsString::from)
                .chain([bank.into()])
                .collect(),
            shown: format!("find {bank_s} -name '*.md' -print0 | xargs -0 cat > /dev/null"),
            skipped: None,
        },
        Tool {
            name: "rg floor",
            role: Role::RgFloor,
            program: p.rg.clone(),
            args: ["-c", "--no-messages", "^---"]
                .into_iter()
                .map(OsString::from)
                .chain([bank.into()])
                .collect(),
            shown: format!("rg -c --no-messages '^---' {bank_s}"),
            skipped: None,
        },
    ]
}

/// A tool's outcome on one bank.
struct ToolResult {
    tool: Tool,
    samples: Vec<Sample>,
    stats: Option<Stats>,
}

/// Everything measured on one bank.
struct SizeResult {
    bank: SyntheticBank,
    tools: Vec<ToolResult>,
    notes: Vec<String>,
}

impl SizeResult {
    fn stats(&self, role: Role) -> Option<Stats> {
        self.tools
            .iter()
            .find(|t| t.tool.role == role)
            .and_then(|t| t.stats)
    }

    /// (best, median) of lint + index, when both ran.
    fn lint_plus_index(&self) -> Option<(Duration, Duration)> {
        let lint = self.stats(Role::Lint)?;
        let index = self.stats(Role::Index)?;
        Some((lint.best + index.best, lint.median + index.median))
    }
}

/// Run the lint bench.
pub fn run(paths: &Paths, options: &Options) -> anyhow::Result<()> {
    let machine = Machine::probe(&paths.root);
    let lesson = tools::build_lesson(paths)?;
    let has_index = tools::has_subcommand(&lesson, "index");
    let (rg, rg_version) = tools::ripgrep()?;
    let programs = Programs {
        lesson,
        has_index,
        rg,
        rg_version,
    };
    let bench_dir = paths.bench();
    let banks = bench_dir.join("banks");
    let out = bench_dir.join("out");
    for dir in [&banks, &out] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }

    let mut results = Vec::new();
    for &n in &options.sizes {
        let bank = synthetic_bank::ensure(&banks, n)?;
        eprintln!(
            "bank {}: {n} lessons, {:.1} MB ({} bytes/lesson){}",
            bank.dir.display(),
            bank.bytes as f64 / 1e6,
            bank.bytes / n as u64,
            if bank.reused { ", reused" } else { "" }
        );
        results.push(measure_bank(bank, &programs, &out, options.runs)?);
    }

    let report = render(&machine, &programs, options.runs, &results);
    print!("{report}");
    let json_path = bench_dir.join("lint.json");
    let json = to_json(&machine, &programs, options.runs, &results);
    std::fs::write(&json_path, json.render())
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!("\nresults written to {}", json_path.display());
    Ok(())
}

fn measure_bank(
    bank: SyntheticBank,
    programs: &Programs,
    out: &Path,
    runs: usize,
) -> anyhow::Result<SizeResult> {
    let n = bank.lessons;
    let tools = tools_for(programs, &bank.dir);
    let output = |tool: &Tool| {
        let stem = format!("{n}-{}", tool.name.replace(' ', "-"));
        Output {
            stdout: out.join(format!("{stem}.stdout")),
            stderr: out.join(format!("{stem}.stderr")),
        }
    };
    prepare_index(&bank, programs, out)?;
    let cat = tools.iter().find(|t| t.role == Role::CatFloor).unwrap();
    eprintln!("warming the page cache before every run: {}", cat.shown);

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); tools.len()];
    for round in 1..=runs {
        for (i, tool) in tools.iter().enumerate() {
            if tool.skipped.is_some() {
                continue;
            }
            // every timed run starts from the same page cache: some virtual machines hand
            // cached pages back to the host within seconds, so the tool that ran just before
            // would otherwise decide how warm the next one finds the bank
            measure::run(&mut cat.command(), &output(cat))?;
            let sample = measure::run(&mut tool.command(), &output(tool))?;
            eprintln!(
                "  {n} lessons, run {round}/{runs}: {:<12} {} (cpu {}, rss {})",
                tool.name,
                secs(sample.wall),
                secs(sample.user + sample.sys),
                mib(sample.max_rss_kib)
            );
            samples[i].push(sample);
        }
    }

    let mut notes = Vec::new();
    for tool in &tools {
        if let Some(why) = &tool.skipped {
            notes.push(format!("{} skipped: {why}", tool.name));
        }
    }
    let rg = tools.iter().find(|t| t.role == Role::RgFloor).unwrap();
    let matched = line_count(&output(rg).stdout);
    if matched != n {
        notes.push(format!(
            "rg matched {matched} of {n} lesson files; the floor is not comparable"
        ));
    }
    let lint = tools.iter().find(|t| t.role == Role::Lint).unwrap();
    let lint_out = std::fs::read_to_string(output(lint).stdout).unwrap_or_default();
    notes.push(format!(
        "lesson lint printed {} lines, the last: {:?}",
        lint_out.lines().count(),
        lint_out.lines().last().unwrap_or("")
    ));

    let tools = tools
        .into_iter()
        .zip(samples)
        .map(|(tool, samples)| {
            let stats = (!samples.is_empty()).then(|| Stats::of(&samples));
            ToolResult {
                tool,
                samples,
                stats,
            }
        })
        .collect();
    Ok(SizeResult { bank, tools, notes })
}

/// Give the bank a current `_index.md` when the binary can write one (a maintained bank has
/// one, and lint reports it missing otherwise); else remove one left by an earlier binary, which
/// the floors would read and this lint would not.
fn prepare_index(bank: &SyntheticBank, programs: &Programs, out: &Path) -> anyhow::Result<()> {
    let n = bank.lessons;
    let path = bank.dir.join("_index.md");
    if !programs.has_index {
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
        return Ok(());
    }
    eprintln!("writing {} with `lesson index` (untimed)", path.display());
    let mut write_index = Command::new(&programs.lesson);
    write_index
        .args(["index", "--dir"])
        .arg(&bank.dir)
        .env("LESSON_NOW", NOW)
        .env_remove("LESSON_DIR");
    let output = Output {
        stdout: out.join(format!("{n}-index-write.stdout")),
        stderr: out.join(format!("{n}-index-write.stderr")),
    };
    measure::run(&mut write_index, &output)?;
    Ok(())
}

fn line_count(path: &Path) -> usize {
    std::fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}

fn ratio_to(value: Duration, floor: Option<Stats>) -> Option<f64> {
    let floor = floor?.median.as_secs_f64();
    (floor > 0.0).then(|| value.as_secs_f64() / floor)
}

fn render(machine: &Machine, programs: &Programs, runs: usize, results: &[SizeResult]) -> String {
    let mut s = format!(
        "\nlint bench: {}\n{}, lesson {}, generator {GENERATOR_VERSION}, {runs} runs per tool, LESSON_NOW={NOW}\n\n",
        machine.summary(),
        programs.rg_version,
        programs.lesson.display(),
    );
    let mut table = Table::new(vec![
        ("lessons", Align::Right),
        ("tool", Align::Left),
        ("best", Align::Right),
        ("median", Align::Right),
        ("cpu (median)", Align::Right),
        ("peak RSS", Align::Right),
        ("median / rg", Align::Right),
    ]);
    for r in results {
        let rg = r.stats(Role::RgFloor);
        for t in &r.tools {
            let mut row = vec![r.bank.lessons.to_string(), t.tool.name.to_string()];
            match t.stats {
                Some(st) => row.extend([
                    secs(st.best),
                    secs(st.median),
                    secs(st.cpu_median),
                    mib(st.peak_rss_kib),
                    ratio_to(st.median, rg).map_or_else(String::new, ratio),
                ]),
                None => row.push("skipped".into()),
            }
            table.row(row);
        }
        if let Some((best, median)) = r.lint_plus_index() {
            let mut row = vec![r.bank.lessons.to_string(), "lint + index".to_string()];
            row.extend([secs(best), secs(median), String::new(), String::new()]);
            row.push(ratio_to(median, rg).map_or_else(String::new, ratio));
            table.row(row);
        }
    }
    s += &table.render();
    s += &format!(
        "\ntarget: lint + index within {TARGET_RATIO}x of the rg floor (medians) at 100000 lessons on 2 cores\n"
    );
    for r in results {
        let rg = r.stats(Role::RgFloor);
        let verdict = match (r.lint_plus_index(), r.stats(Role::Lint)) {
            (Some((_, median)), _) => ratio_to(median, rg).map(|x| {
                format!(
                    "lint + index = {x:.2}x rg: {}",
                    if x <= TARGET_RATIO {
                        "within target"
                    } else {
                        "over target"
                    }
                )
            }),
            (None, Some(lint)) => ratio_to(lint.median, rg)
                .map(|x| format!("lint alone = {x:.2}x rg (no index to add)")),
            (None, None) => None,
        };
        s += &format!(
            "{:>7} lessons: {}\n",
            r.bank.lessons,
            verdict.unwrap_or_else(|| "no ratio".into())
        );
        for note in &r.notes {
            s += &format!("         note: {note}\n");
        }
    }
    s
}

fn to_json(machine: &Machine, programs: &Programs, runs: usize, results: &[SizeResult]) -> Json {
    let dur = |d: Duration| Json::Num(d.as_secs_f64());
    let sizes = results
        .iter()
        .map(|r| {
            let rg = r.stats(Role::RgFloor);
            let tools = r
                .tools
                .iter()
                .map(|t| {
                    let samples = t.samples.iter().map(|s| s.to_json()).collect();
                    let mut fields = vec![
                        ("name", Json::str(t.tool.name)),
                        ("command", Json::str(&t.tool.shown)),
                        (
                            "skipped",
                            t.tool.skipped.clone().map_or(Json::Null, Json::Str),
                        ),
                        ("runs", Json::Arr(samples)),
                    ];
                    if let Some(st) = t.stats {
                        fields.extend([
                            ("best_s", dur(st.best)),
                            ("median_s", dur(st.median)),
                            ("cpu_median_s", dur(st.cpu_median)),
                            ("peak_rss_kib", Json::Int(st.peak_rss_kib)),
                            ("median_over_rg", Json::opt_num(ratio_to(st.median, rg))),
                        ]);
                    }
                    Json::Obj(fields)
                })
                .collect();
            let combined = r.lint_plus_index().map_or(Json::Null, |(best, median)| {
                Json::Obj(vec![
                    ("best_s", dur(best)),
                    ("median_s", dur(median)),
                    ("median_over_rg", Json::opt_num(ratio_to(median, rg))),
                    ("target_ratio", Json::Num(TARGET_RATIO)),
                ])
            });
            Json::Obj(vec![
                ("lessons", Json::Int(r.bank.lessons as u64)),
                ("bank", Json::str(r.bank.dir.display().to_string())),
                ("bytes", Json::Int(r.bank.bytes)),
                ("tools", Json::Arr(tools)),
                ("lint_plus_index", combined),
                ("notes", Json::Arr(r.notes.iter().map(Json::str).collect())),
            ])
        })
        .collect();
    Json::Obj(vec![
        ("bench", Json::str("lint")),
        ("machine", machine.to_json()),
        ("ripgrep", Json::str(&programs.rg_version)),
        ("generator_version", Json::Int(u64::from(GENERATOR_VERSION))),
        ("lesson_now", Json::str(NOW)),
        ("runs_per_tool", Json::Int(runs as u64)),
        ("sizes", Json::Arr(sizes)),
    ])
}
