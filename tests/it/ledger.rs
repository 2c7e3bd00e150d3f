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

/// Set `[review] mixed-min` out of reach of the test's counts (L003 never fires).
fn keep_out_of_the_mixed_band(bank: &Path) {
    let config = bank.join("lesson.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let changed = text.replace("# mixed-min = 3\n", "mixed-min = 1000\n");
    assert_ne!(
        text, changed,
        "lesson init's lesson.toml has no `# mixed-min = 3` line"
    );
    std::fs::write(&config, changed).unwrap();
}

/// The state a run of `killed_records_leave_a_bank_that_parses_and_lint_repairs` once failed
/// in, made directly: most records were killed before they appended, the survivors' outcomes
/// put the lesson in the mixed band (3 successes, 3 failures), the lesson's counts lag behind its
/// ledger, and the ledger's last line was cut short. The unsafe fixes bring the counts to the
/// ledger's (the torn line ignored) and set `outcome: mixed`, and what is left is the
/// counter-example the mixed lesson now needs (D003), which no fix can write: with the default
/// band that test could not pass, whatever the library did.
#[test]
fn killed_records_that_leave_a_mixed_lesson_and_a_torn_line_are_repaired_but_for_d003() {
    let tmp = tempfile::tempdir().unwrap();
    let bank = bank_with_one_lesson(tmp.path());
    let mut recorded = 0;
    for (i, reference) in [(0, "probe"), (8, "k8"), (16, "k16"), (3, "k3"), (4, "k4")] {
        assert!(record_cmd(&bank, i, reference).status().unwrap().success());
        recorded += 1;
    }
    assert_eq!(recorded, 5);
    let counts_before = lesson_counts(&bank);
    assert_eq!(counts_before, counts(2, 3));
    // killed after its append: the ledger is ahead of the lesson by one success
    let log = lesson::ledger::path(&bank, SLUG);
    let mut ledger = std::fs::read_to_string(&log).unwrap();
    let last = ledger.lines().last().unwrap().to_string();
    ledger.push_str(&last.replace("\"ref\":\"k4\"", "\"ref\":\"k5\""));
    ledger.push('\n');
    // and one cut short in its append: no line ending, not JSON
    ledger.push_str(&last[..last.len() / 2].replace("k4", "k6"));
    std::fs::write(&log, &ledger).unwrap();
    let read = Ledger::read(&bank, SLUG).unwrap();
    assert_eq!(read.problems.len(), 1);
    assert!(read.problems[0].unterminated);
    assert_eq!(read.tally().unwrap().counts(), counts(3, 3));

    let fix = run(&bank, &["lint", "--fix", "--unsafe-fixes"]);
    assert!(fix.status.success(), "{}", output_text(&fix));
    assert_eq!(lesson_counts(&bank), counts(3, 3));
    let text = std::fs::read_to_string(bank.join(format!("{SLUG}.md"))).unwrap();
    assert!(text.contains("\noutcome: mixed\n"), "{text}");
    let lint = run(&bank, &["lint", "--output-format", "concise"]);
    let codes: Vec<&str> = std::str::from_utf8(&lint.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("checked"))
        .filter_map(|l| l.split(' ').nth(1))
        .collect();
    assert_eq!(codes, ["L002", "D003"], "{}", output_text(&lint));
    // fixing again changes nothing: the fixes converged
    let again = run(&bank, &["lint", "--fix", "--unsafe-fixes"]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("fixed 0 findings"),
        "{}",
        output_text(&again)
    );

    // the kill test's bank: the band out of reach, the same state lints clean but for L002
    let tmp = tempfile::tempdir().unwrap();
    let other = bank_with_one_lesson(tmp.path());
    keep_out_of_the_mixed_band(&other);
    for (i, reference) in [(0, "probe"), (8, "k8"), (16, "k16"), (3, "k3"), (4, "k4")] {
        assert!(record_cmd(&other, i, reference).status().unwrap().success());
    }
    std::fs::write(lesson::ledger::path(&other, SLUG), &ledger).unwrap();
    let fix = run(&other, &["lint", "--fix", "--unsafe-fixes"]);
    assert!(fix.status.success(), "{}", output_text(&fix));
    assert_eq!(lesson_counts(&other), counts(3, 3));
    let lint = run(&other, &["lint", "--output-format", "concise"]);
    let stdout = String::from_utf8_lossy(&lint.stdout);
    assert!(
        stdout
            .lines()
            .all(|l| l.contains("L002") || l.contains("checked")),
        "{}",
        output_text(&lint)
    );
}

/// What a failing run of the kill test needs to be understood: the seed, what each iteration
/// did, and the bank's ledger, lesson and index as they are now.
fn kill_state(seed: u64, log: &[String], bank: &Path) -> String {
    let read = |p: PathBuf| std::fs::read_to_string(&p).unwrap_or_else(|e| format!("<{e}>"));
    format!(
        "seed {seed:#x} (replay with LESSON_KILL_SEED={seed:#x})\niterations:\n{}\n--- {SLUG}.md\n{}\n--- _log/{SLUG}.jsonl\n{}\n--- _index.md\n{}",
        log.join("\n"),
        read(bank.join(format!("{SLUG}.md"))),
        read(lesson::ledger::path(bank, SLUG)),
        read(bank.join("_index.md")),
    )
}

fn output_text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn killed_records_leave_a_bank_that_parses_and_lint_repairs() {
    const ITERATIONS: usize = 50;
    let seed = std::env::var("LESSON_KILL_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x5eed_1e55_0000_0001);
    let tmp = tempfile::tempdir().unwrap();
    let bank = bank_with_one_lesson(tmp.path());
    // which records survive depends on the machine's load: when most are killed before they
    // append (the kill window is measured once, on the probe), the few left can put the lesson in
    // the mixed band, and the unsafe fix of L003 then asks for a counter-example (D003). This
    // test is about the ledger, not the review band: keep the band out of reach
    keep_out_of_the_mixed_band(&bank);
    // how long one record takes here, so that kills land before, during and after its writes
    let probe = Instant::now();
    assert!(record_cmd(&bank, 0, "probe").status().unwrap().success());
    let span = probe.elapsed().as_micros() as u64 * 3 / 2;
    let mut rng = Rng(seed);
    let (mut killed, mut ledger_ahead, mut left_temp, mut torn) = (0, 0, 0, 0);
    let mut log = Vec::new();
    let started = Instant::now();
    for i in 1..=ITERATIONS {
        let mut child = record_cmd(&bank, i, &format!("k{i}")).spawn().unwrap();
        let wait = rng.below(span);
        std::thread::sleep(Duration::from_micros(wait));
        let running = child.try_wait().unwrap().is_none();
        if running {
            killed += 1;
        }
        let _ = child.kill();
        child.wait().unwrap();

        let loaded = Bank::load_with(&bank, &Overlay::new(), NOW.parse().unwrap()).unwrap();
        for doc in &loaded.documents {
            assert!(
                doc.lesson.is_some() && doc.yaml_errors.is_empty(),
                "iteration {i}: {} does not parse\n{}",
                doc.source.path.display(),
                kill_state(seed, &log, &bank)
            );
        }
        // the ledger always reads: a line cut short would be reported (L002) and ignored
        let ledger = Ledger::read(&bank, SLUG).unwrap();
        torn += ledger.problems.len();
        let ahead = ledger.tally().unwrap().counts() != lesson_counts(&bank);
        if ahead {
            ledger_ahead += 1;
        }
        let temps = temp_files(&bank);
        if !temps.is_empty() {
            left_temp += 1;
        }
        log.push(format!(
            "{i}: {} after {wait} µs; ledger {} lines, {} problems, counts {}; {} temp files",
            if running { "killed" } else { "finished" },
            ledger.entries.len() + ledger.problems.len(),
            ledger.problems.len(),
            if ahead {
                "behind the ledger"
            } else {
                "in line"
            },
            temps.len()
        ));
    }
    eprintln!(
        "seed {seed:#x}: {ITERATIONS} records, {killed} killed mid-run (kill window {span} µs), \
         in {:.1?}: {ledger_ahead} times the ledger was ahead of the counts, {left_temp} times a \
         temp file was left, {torn} torn lines",
        started.elapsed()
    );
    assert!(killed > 0, "no record was killed while it ran");

    let fix = run(&bank, &["lint", "--fix", "--unsafe-fixes"]);
    let fixed = || {
        format!(
            "{}\n--- lint --fix --unsafe-fixes\n{}",
            kill_state(seed, &log, &bank),
            output_text(&fix)
        )
    };
    let ledger = Ledger::read(&bank, SLUG).unwrap();
    assert_eq!(
        lesson_counts(&bank),
        ledger.tally().unwrap().counts(),
        "{}",
        fixed()
    );
    assert!(
        temp_files(&bank).is_empty(),
        "{:?}\n{}",
        temp_files(&bank),
        fixed()
    );
    // what may remain: warnings about torn ledger lines, nothing at error level
    let lint = run(&bank, &["lint", "--output-format", "concise"]);
    let stdout = String::from_utf8_lossy(&lint.stdout);
    let failed = || format!("{}\n--- lint\n{}", fixed(), output_text(&lint));
    assert!(lint.status.success(), "{}", failed());
    assert!(
        stdout
            .lines()
            .all(|l| l.contains("L002") || l.contains("checked")),
        "{}",
        failed()
    );
}
