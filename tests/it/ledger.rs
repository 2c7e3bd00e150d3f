//! The ledger under load and under SIGKILL, with the real binary: concurrent `lesson record`
//! processes lose no event, and a `lesson record` killed at any moment leaves a bank whose files
//! parse and whose counts `lesson lint --fix --unsafe-fixes` brings back to the ledger's.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lesson::bank::{Bank, Overlay};
use lesson::ledger::{Counts, EventKind, Ledger};

use crate::sandbox::{lesson, NOW};

const SLUG: &str = "retry-with-jitter";

fn lesson_cmd(bank: &Path) -> Command {
    let mut cmd = lesson();
    cmd.arg("--dir").arg(bank).env("LESSON_BY", "stress");
    cmd
}

fn run(bank: &Path, args: &[&str]) -> Output {
    lesson_cmd(bank).args(args).output().unwrap()
}

/// A bank with one lesson made by `lesson new` (so its ledger starts with `created`).
fn bank_with_one_lesson(tmp: &Path) -> PathBuf {
    let bank = tmp.join("lessons");
    assert!(run(&bank, &["init", bank.to_str().unwrap()])
        .status
        .success());
    let out = run(
        &bank,
        &[
            "new",
            SLUG,
            "--title",
            "Add jitter to retries",
            "--trigger",
            "Retrying calls to a shared service",
            "--tag",
            "retries",
            "--evidence",
            "run:r_seed",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    bank
}

/// The flags of the `i`-th record and what it adds to the counts.
fn nth_outcome(i: usize) -> (&'static str, &'static str, Counts) {
    // mostly successes, so that the lesson stays out of the mixed band (L003)
    match i % 8 {
        0 => ("--contradicted", "success", counts(0, 1)),
        1 => ("--followed", "failure", counts(0, 0)),
        2 => ("--contradicted", "failure", counts(0, 0)),
        _ => ("--followed", "success", counts(1, 0)),
    }
}

fn counts(success_count: u64, failure_count: u64) -> Counts {
    Counts {
        success_count,
        failure_count,
    }
}

fn record_cmd(bank: &Path, i: usize, reference: &str) -> Command {
    let (applied, run, _) = nth_outcome(i);
    let mut cmd = lesson_cmd(bank);
    cmd.args(["record", SLUG, applied, "--run-outcome", run, "--evidence"])
        .arg(format!("run:{reference}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn lesson_counts(bank: &Path) -> Counts {
    let bank = Bank::load_with(bank, &Overlay::new(), NOW.parse().unwrap()).unwrap();
    let (_, lesson) = bank.by_slug()[SLUG];
    counts(lesson.successes(), lesson.failures())
}

#[test]
fn concurrent_records_lose_no_event() {
    const PROCESSES: usize = 8;
    const RECORDS: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let bank = bank_with_one_lesson(tmp.path());
    let started = Instant::now();
    let workers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let bank = bank.clone();
            std::thread::spawn(move || {
                for i in 0..RECORDS {
                    let out = record_cmd(&bank, p * RECORDS + i, &format!("p{p}-{i}"))
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    eprintln!(
        "{} records from {PROCESSES} processes in {:.1?}",
        PROCESSES * RECORDS,
        started.elapsed()
    );

    let text = std::fs::read_to_string(lesson::ledger::path(&bank, SLUG)).unwrap();
    assert!(text.ends_with('\n'));
    let ledger = Ledger::read(&bank, SLUG).unwrap();
    assert!(ledger.problems.is_empty(), "{:?}", ledger.problems);
    assert_eq!(
        ledger.entries.len(),
        text.lines().count(),
        "every line whole"
    );
    assert!(matches!(
        ledger.entries[0].event.kind,
        EventKind::Created(_)
    ));
    assert_eq!(ledger.outcomes().count(), PROCESSES * RECORDS);
    let mut expected = counts(0, 0);
    for i in 0..PROCESSES * RECORDS {
        let add = nth_outcome(i).2;
        expected.success_count += add.success_count;
        expected.failure_count += add.failure_count;
    }
    assert_eq!(ledger.tally().unwrap().counts(), expected);
    assert_eq!(lesson_counts(&bank), expected);
    let lint = run(&bank, &["lint"]);
    assert!(
        lint.status.success() && String::from_utf8_lossy(&lint.stdout).contains("all clean"),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
}

/// A small deterministic generator (xorshift64*), so that a failing run can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn temp_files(bank: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(bank)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".lesson-tmp-"))
        .map(|e| e.path().to_path_buf())
        .collect()
}

#[test]
fn killed_records_leave_a_bank_that_parses_and_lint_repairs() {
    const ITERATIONS: usize = 50;
    let seed = 0x5eed_1e55_0000_0001;
    let tmp = tempfile::tempdir().unwrap();
    let bank = bank_with_one_lesson(tmp.path());
    // how long one record takes here, so that kills land before, during and after its writes
    let probe = Instant::now();
    assert!(record_cmd(&bank, 0, "probe").status().unwrap().success());
    let span = probe.elapsed().as_micros() as u64 * 3 / 2;
    let mut rng = Rng(seed);
    let (mut killed, mut ledger_ahead, mut left_temp, mut torn) = (0, 0, 0, 0);
    let started = Instant::now();
    for i in 1..=ITERATIONS {
        let mut child = record_cmd(&bank, i, &format!("k{i}")).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(span)));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();

        let loaded = Bank::load_with(&bank, &Overlay::new(), NOW.parse().unwrap()).unwrap();
        for doc in &loaded.documents {
            assert!(
                doc.lesson.is_some() && doc.yaml_errors.is_empty(),
                "seed {seed:#x}, iteration {i}: {} does not parse",
                doc.source.path.display()
            );
        }
        // the ledger always reads: a line cut short would be reported (L002) and ignored
        let ledger = Ledger::read(&bank, SLUG).unwrap();
        torn += ledger.problems.len();
        if ledger.tally().unwrap().counts() != lesson_counts(&bank) {
            ledger_ahead += 1;
        }
        if !temp_files(&bank).is_empty() {
            left_temp += 1;
        }
    }
    eprintln!(
        "{ITERATIONS} records, {killed} killed mid-run (kill window {span} µs), in {:.1?}: \
         {ledger_ahead} times the ledger was ahead of the counts, {left_temp} times a temp file \
         was left, {torn} torn lines",
        started.elapsed()
    );
    assert!(killed > 0, "no record was killed while it ran");

    let fix = run(&bank, &["lint", "--fix", "--unsafe-fixes"]);
    let report = String::from_utf8_lossy(&fix.stdout).to_string();
    let ledger = Ledger::read(&bank, SLUG).unwrap();
    assert_eq!(
        lesson_counts(&bank),
        ledger.tally().unwrap().counts(),
        "{report}"
    );
    assert!(temp_files(&bank).is_empty(), "{:?}", temp_files(&bank));
    // what may remain: warnings about torn ledger lines, nothing at error level
    let lint = run(&bank, &["lint", "--output-format", "concise"]);
    let stdout = String::from_utf8_lossy(&lint.stdout);
    assert!(lint.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .all(|l| l.contains("L002") || l.contains("checked")),
        "{stdout}"
    );
}
