//! `cargo xtask fuzz [TARGET] [--seconds N]`: the cargo-fuzz targets of `fuzz/` (libFuzzer),
//! each for N seconds, from a seed corpus laid out at run time in `fuzz/corpus/TARGET/`
//! (git-ignored): the inputs saved under `tests/fuzz/TARGET/`, the fixtures and the project's
//! bank, and the shared corpora's markdown when present. What each target checks is
//! `tests/it/fuzz_checks.rs`.
//!
//! Needs a nightly toolchain (libFuzzer's coverage instrumentation): without one it says so
//! and skips. Installs `cargo-fuzz` when it is missing. Prints per target the executions, the
//! coverage (edges `cov`, features `ft`) and the corpus size libFuzzer ends with; a crash
//! stops the run with the input's path (save it under `tests/fuzz/TARGET/` with the fix).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::bench::Paths;

/// The targets, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[&str] = &[
    "parse", "ledger", "merge", "add", "judge", "index", "edit", "mcp",
];

/// The first lines of the `edit` target's seeds: each span edit the writers make.
const EDITS: &[&str] = &[
    "counts 3 5",
    "outcome mixed",
    "evidence run\tr_fuzz\tit worked: twice",
    "record 4 2 conversation\tc-7\t",
    "supersedes old-lesson other-one",
    "quarantine",
];

/// What to run.
#[derive(Debug, PartialEq)]
pub struct Options {
    /// One target, or all.
    pub target: Option<String>,
    /// Seconds per target.
    pub seconds: usize,
}

/// A seed file is at most this long (libFuzzer's `-max_len` is set to it as well).
const MAX_LEN: usize = 64 * 1024;
/// Markdown files taken from the shared corpora, at most.
const CORPUS_FILES: usize = 2000;

/// Run the targets.
pub fn run(options: &Options) -> anyhow::Result<()> {
    let paths = Paths::discover();
    if let Some(t) = &options.target {
        if !TARGETS.contains(&t.as_str()) {
            bail!(
                "unknown fuzz target `{t}` (targets: {})",
                TARGETS.join(", ")
            );
        }
    }
    if !has_nightly() {
        println!(
            "cargo xtask fuzz: skipped: it needs a nightly Rust toolchain for libFuzzer's coverage \
             instrumentation (`rustup toolchain install nightly`), and `cargo +nightly` does not run here"
        );
        return Ok(());
    }
    ensure_cargo_fuzz()?;
    let targets: Vec<&str> = match &options.target {
        Some(t) => vec![t.as_str()],
        None => TARGETS.to_vec(),
    };
    let mut summaries = Vec::new();
    for target in targets {
        let corpus = paths.root.join("fuzz/corpus").join(target);
        let seeds = seed(&paths.root, target, &corpus)?;
        println!("fuzz {target}: {seeds} seed inputs in {}", corpus.display());
        summaries.push((target, fuzz(&paths.root, target, &corpus, options.seconds)?));
    }
    println!("\ntarget   seconds  executions  exec/s  cov (edges)  ft (features)  corpus");
    for (target, s) in summaries {
        println!(
            "{target:<8} {:>7}  {:>10}  {:>6}  {:>11}  {:>13}  {:>6}",
            s.seconds, s.runs, s.per_second, s.cov, s.ft, s.corpus
        );
    }
    Ok(())
}

fn has_nightly() -> bool {
    cargo_nightly()
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `cargo +nightly`, without what the stable cargo that runs xtask put in the environment.
fn cargo_nightly() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly");
    for var in ["RUSTUP_TOOLCHAIN", "RUSTC", "RUSTDOC", "CARGO"] {
        cmd.env_remove(var);
    }
    cmd
}

fn ensure_cargo_fuzz() -> anyhow::Result<()> {
    let present = cargo_nightly()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    println!("cargo xtask fuzz: installing cargo-fuzz (cargo install cargo-fuzz --locked)");
    let status = Command::new("cargo")
        .args(["install", "cargo-fuzz", "--locked"])
        .status()
        .context("running cargo install")?;
    if !status.success() {
        bail!("cargo install cargo-fuzz --locked failed ({status})");
    }
    Ok(())
}

/// Lay out the seed corpus of `target` in `corpus` (files named by a hash of their bytes);
/// returns how many inputs it holds.
fn seed(root: &Path, target: &str, corpus: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(corpus).with_context(|| corpus.display().to_string())?;
    let saved = files(&root.join("tests/fuzz").join(target), |_| true, usize::MAX);
    let markdown = |p: &Path| {
        p.extension()
            .is_some_and(|e| e == "md" || e == "mdc" || e == "mdx")
    };
    let jsonl = |p: &Path| p.extension().is_some_and(|e| e == "jsonl");
    let corpora = root.join("../shared/corpora");
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    let mut read_all = |paths: Vec<PathBuf>| {
        for p in paths {
            if let Ok(bytes) = std::fs::read(&p) {
                inputs.push(bytes);
            }
        }
    };
    read_all(saved);
    match target {
        "parse" | "add" => {
            read_all(files(&root.join("tests/fixtures"), markdown, usize::MAX));
            read_all(files(&root.join("lessons"), markdown, usize::MAX));
            if target == "parse" {
                read_all(files(&corpora, markdown, CORPUS_FILES));
            }
        }
        "ledger" => read_all(files(&root.join("tests/fixtures"), jsonl, usize::MAX)),
        "merge" => {
            let ledgers = files(&root.join("tests/fixtures"), jsonl, usize::MAX);
            let texts: Vec<Vec<u8>> = ledgers
                .iter()
                .filter_map(|p| std::fs::read(p).ok())
                .collect();
            // each ledger against the next: ours, a NUL byte, theirs
            for (i, ours) in texts.iter().enumerate() {
                let theirs = &texts[(i + 1) % texts.len()];
                inputs.push([ours.as_slice(), b"\0", theirs].concat());
            }
        }
        "edit" => {
            let mut lessons = files(&root.join("tests/fixtures"), markdown, usize::MAX);
            lessons.extend(files(&root.join("lessons"), markdown, usize::MAX));
            // each file under each edit: the edit's line, then the file
            for p in lessons {
                let Ok(bytes) = std::fs::read(&p) else {
                    continue;
                };
                for edit in EDITS {
                    inputs.push([edit.as_bytes(), b"\n", &bytes].concat());
                }
            }
        }
        _ => {}
    }
    let mut seen = HashSet::new();
    for bytes in inputs {
        if bytes.len() > MAX_LEN {
            continue;
        }
        let name = format!("seed-{:016x}", fnv(&bytes));
        if seen.insert(name.clone()) {
            std::fs::write(corpus.join(&name), &bytes)?;
        }
    }
    Ok(std::fs::read_dir(corpus)?.count())
}

/// The files under `dir` that `keep` takes, at most `limit`, in path order.
fn files(dir: &Path, keep: impl Fn(&Path) -> bool, limit: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.path()));
        for e in entries {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && keep(&p) => {
                    out.push(p);
                    if out.len() >= limit {
                        return out;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// libFuzzer's closing figures.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    seconds: u64,
    runs: u64,
    per_second: u64,
    cov: u64,
    ft: u64,
    corpus: u64,
}

/// Run one target for `seconds`; a crash is an error naming the saved input.
fn fuzz(root: &Path, target: &str, corpus: &Path, seconds: usize) -> anyhow::Result<Summary> {
    let out = cargo_nightly()
        .current_dir(root)
        .args(["fuzz", "run", target])
        .arg(corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-max_len={MAX_LEN}"))
        .arg("-rss_limit_mb=4096")
        .arg("-print_final_stats=1")
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .output()
        .context("running cargo fuzz")?;
    let log = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = log.lines().rev().take(40).collect();
    if !out.status.success() {
        let artifact = log
            .lines()
            .find_map(|l| l.split("Test unit written to ").nth(1))
            .unwrap_or("(no artifact written)");
        bail!(
            "fuzz target {target} failed ({}): input {artifact}\n{}\n\nsave the input under tests/fuzz/{target}/ \
             (named after what broke), fix the library, and check with `cargo test --test it fuzz::`",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(summary(&log))
}

/// Read libFuzzer's last status line (`#N DONE cov: C ft: F corp: K/...`), its closing
/// `Done N runs in S second(s)` and `-print_final_stats` (`stat::number_of_executed_units`,
/// `stat::average_exec_per_sec`).
pub fn summary(log: &str) -> Summary {
    let mut s = Summary::default();
    let field = |line: &str, name: &str| -> Option<u64> {
        let rest = line.split(name).nth(1)?;
        rest.split(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())?
            .parse()
            .ok()
    };
    for line in log.lines() {
        if line.starts_with('#') && line.contains(" cov: ") {
            s.cov = field(line, " cov: ").unwrap_or(s.cov);
            s.ft = field(line, " ft: ").unwrap_or(s.ft);
            s.corpus = field(line, " corp: ").unwrap_or(s.corpus);
        }
        if line.starts_with("Done ") {
            s.seconds = field(line, " runs in ").unwrap_or(s.seconds);
        }
        if let Some(n) = field(line, "stat::number_of_executed_units:") {
            s.runs = n;
        }
        if let Some(n) = field(line, "stat::average_exec_per_sec:") {
            s.per_second = n;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzers_closing_figures() {
        let log = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 11 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #5000\tDONE   cov: 1234 ft: 5678 corp: 321/45Kb lim: 4096 exec/s: 2500 rss: 80Mb\n\
                   Done 5000 runs in 2 second(s)\nstat::number_of_executed_units: 5000\n\
                   stat::average_exec_per_sec:     2500\nstat::peak_rss_mb:              80\n";
        assert_eq!(
            summary(log),
            Summary {
                seconds: 2,
                runs: 5000,
                per_second: 2500,
                cov: 1234,
                ft: 5678,
                corpus: 321
            }
        );
    }

    #[test]
    fn every_target_has_a_fuzz_binary_and_saved_inputs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
        for t in TARGETS {
            assert!(
                manifest.contains(&format!("name = \"{t}\"")),
                "{t} not in fuzz/Cargo.toml"
            );
            assert!(
                root.join(format!("fuzz/fuzz_targets/{t}.rs")).is_file(),
                "{t}"
            );
            assert!(
                !files(&root.join("tests/fuzz").join(t), |_| true, 1).is_empty(),
                "{t}"
            );
        }
    }
}
