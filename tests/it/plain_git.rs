//! Plain git (issue 15, acceptance 3): a bare repository and two clones of a repository whose
//! bank is its folder `lessons/`, each set up with `lesson init` or `lesson git install`, that
//! record outcomes and merge with `git pull --no-rebase`, never `lesson sync`. git finds the
//! merge driver as `lesson` on PATH: the tests put the built binary's directory first on it.
//!
//! Each git and lesson process runs with `HOME` in the temp directory and
//! `GIT_CONFIG_NOSYSTEM=1`, so the machine's git configuration does not leak in.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::sandbox::{Sandbox, BIN};

const NOW: &str = "2026-11-22T12:00:00Z";

struct World {
    tmp: tempfile::TempDir,
}

fn path_with_lesson() -> OsString {
    let bin_dir = Path::new(BIN).parent().unwrap().to_path_buf();
    let mut dirs = vec![bin_dir];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl World {
    /// A bare repository `remote.git` holding a bank `lessons/` with the lessons `alpha`,
    /// `beta` (adjacent rows of `_index.md`) and `retry`, made by `lesson init` and `lesson
    /// new` in a seed clone.
    fn new() -> World {
        let w = World {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.tmp.path().join("home")).unwrap();
        w.git(
            w.tmp.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        let seed = w.tmp.path().join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        w.git(&seed, &["init", "-q", "-b", "main"]);
        w.configure(&seed);
        w.ok(&seed, &["init", "lessons"]);
        for slug in ["alpha", "beta", "retry"] {
            w.ok(
                &seed,
                &[
                    "new",
                    slug,
                    "--title",
                    &format!("Do the {slug} thing."),
                    "--trigger",
                    &format!("When {slug} applies."),
                    "--tag",
                    slug,
                    "--evidence",
                    "run:r_seed",
                ],
            );
        }
        w.git(&seed, &["add", "-A"]);
        w.git(&seed, &["commit", "-qm", "seed"]);
        w.git(&seed, &["remote", "add", "origin", "../remote.git"]);
        w.git(&seed, &["push", "-q", "origin", "main"]);
        w
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn command(&self, program: &str, cwd: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(cwd)
            .env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env("PATH", path_with_lesson())
            .env("LESSON_NOW", NOW)
            .env_remove("LESSON_DIR")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
        cmd
    }

    fn git_output(&self, cwd: &Path, args: &[&str]) -> Output {
        self.command("git", cwd).args(args).output().unwrap()
    }

    fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.git_output(cwd, args);
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn configure(&self, repo: &Path) {
        self.git(repo, &["config", "user.name", "Tester"]);
        self.git(repo, &["config", "user.email", "tester@example.com"]);
    }

    /// `lesson ARGS` in `cwd` (the bank is found as `./lessons`), by `LESSON_BY=by`.
    fn lesson_by(&self, cwd: &Path, by: &str, now: &str, args: &[&str]) -> Output {
        self.command(BIN, cwd)
            .env("LESSON_BY", by)
            .env("LESSON_NOW", now)
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, cwd: &Path, args: &[&str]) -> String {
        let out = self.lesson_by(cwd, "seed@host", NOW, args);
        assert!(out.status.success(), "lesson {args:?}: {}", text(&out));
        text(&out)
    }

    /// A clone named `name`, set up by `setup`: `init` (the upgrade of an existing bank),
    /// `install` (`lesson git install`) or `none` (only the attributes the bank carries).
    fn clone(&self, name: &str, setup: &str) -> PathBuf {
        self.git(self.tmp.path(), &["clone", "-q", "remote.git", name]);
        let dir = self.tmp.path().join(name);
        self.configure(&dir);
        match setup {
            "init" => {
                let out = self.ok(&dir, &["init", "lessons"]);
                assert!(
                    out.contains("lessons is up to date as a lesson bank"),
                    "{out}"
                );
                assert!(out.contains("registered the merge driver"), "{out}");
            }
            "install" => {
                let out = self.ok(&dir, &["git", "install", "--dir", "lessons"]);
                assert!(out.contains("registered the merge driver"), "{out}");
                let again = self.ok(&dir, &["git", "install", "--dir", "lessons"]);
                assert!(again.contains("the merge driver is registered"), "{again}");
            }
            _ => {}
        }
        dir
    }

    /// `lesson record SLUG` in a clone, then a commit of the bank.
    fn record(&self, clone: &Path, by: &str, now: &str, slug: &str, verdict: &str, run: &str) {
        let evidence = format!("run:{run}");
        let out = self.lesson_by(
            clone,
            by,
            now,
            &[
                "record",
                slug,
                verdict,
                "--run-outcome",
                "success",
                "--evidence",
                &evidence,
            ],
        );
        assert!(out.status.success(), "record: {}", text(&out));
        self.git(clone, &["add", "-A", "lessons"]);
        self.git(clone, &["commit", "-qm", &format!("record {slug} {run}")]);
    }

    fn push(&self, clone: &Path) {
        self.git(clone, &["push", "-q", "origin", "main"]);
    }

    /// `git pull --no-rebase`: its output, whether it succeeded, and the unmerged files.
    fn pull(&self, clone: &Path) -> (bool, String, Vec<String>) {
        let out = self.git_output(
            clone,
            &["pull", "--no-rebase", "--no-edit", "origin", "main"],
        );
        let unmerged = self.git(clone, &["diff", "--name-only", "--diff-filter=U"]);
        (
            out.status.success(),
            text(&out),
            unmerged.lines().map(String::from).collect(),
        )
    }

    fn read(&self, clone: &Path, rel: &str) -> String {
        std::fs::read_to_string(clone.join("lessons").join(rel)).unwrap()
    }

    fn lint(&self, clone: &Path, args: &[&str]) -> Output {
        let mut all = vec!["lint"];
        all.extend_from_slice(args);
        self.lesson_by(clone, "x", NOW, &all)
    }
}

/// The `ref`s of a lesson's evidence, from the file's lines.
fn refs(lesson: &str) -> Vec<String> {
    lesson
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ref: "))
        .map(String::from)
        .collect()
}

fn counts(lesson: &str) -> (String, String) {
    let get = |key: &str| {
        lesson
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .to_string()
    };
    (get("success_count:"), get("failure_count:"))
}

fn assert_no_markers(clone: &Path) {
    for entry in walkdir::WalkDir::new(clone.join("lessons"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        assert!(
            !text.contains("<<<<<<<") && !text.contains(">>>>>>>"),
            "{} holds a conflict marker:\n{text}",
            entry.path().display()
        );
    }
}

#[test]
fn a_clone_that_records_on_the_same_lesson_merges_without_conflict() {
    let w = World::new();
    let a = w.clone("a", "init");
    let b = w.clone("b", "install");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "retry",
        "--followed",
        "r_a",
    );
    w.push(&a);
    w.record(
        &b,
        "bo@b",
        "2026-11-23T09:00:00Z",
        "retry",
        "--followed",
        "r_b",
    );
    let (ok, out, unmerged) = w.pull(&b);
    assert!(ok, "{out}");
    assert!(unmerged.is_empty(), "{unmerged:?}");
    assert_no_markers(&b);
    let lesson = w.read(&b, "retry.md");
    assert_eq!(refs(&lesson), ["r_seed", "r_b", "r_a"]);
    assert_eq!(counts(&lesson), ("2".into(), "0".into()));
    let ledger = w.read(&b, "_log/retry.jsonl");
    assert_eq!(ledger.lines().count(), 3, "{ledger}");
    // `_index.md`: both sides wrote the same row (count 1), taken once, so it is stale: lint
    // names exactly that (B008; counts = ledger) and `lesson lint --fix` or `lesson index`
    // repairs it
    let check = w.lesson_by(&b, "x", NOW, &["index", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    let lint = w.lint(&b, &["--output-format", "concise"]);
    assert_eq!(lint.status.code(), Some(1), "{}", text(&lint));
    let finding = regex::Regex::new(r"^\S+:\d+:\d+: [A-Z]\d{3} ").unwrap();
    let findings: Vec<String> = String::from_utf8_lossy(&lint.stdout)
        .lines()
        .filter(|l| finding.is_match(l))
        .map(String::from)
        .collect();
    assert_eq!(findings.len(), 1, "{}", text(&lint));
    assert!(
        findings[0].contains(" B008 [*] `_index.md` is out of date"),
        "{}",
        text(&lint)
    );
    // the safe fix regenerates it (as `lesson index` does)
    let fix = w.lint(&b, &["--fix"]);
    assert!(fix.status.success(), "{}", text(&fix));
    let check = w.lesson_by(&b, "x", NOW, &["index", "--check"]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(w.read(&b, "_index.md").contains("| 2 | 0 | active |"));
    let lint = w.lint(&b, &[]);
    assert!(lint.status.success(), "{}", text(&lint));
}

#[test]
fn records_on_adjacent_index_rows_merge_and_the_index_stays_current() {
    let w = World::new();
    let a = w.clone("a", "init");
    let b = w.clone("b", "install");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "alpha",
        "--followed",
        "r_a",
    );
    w.push(&a);
    w.record(
        &b,
        "bo@b",
        "2026-11-23T09:00:00Z",
        "beta",
        "--contradicted",
        "r_b",
    );
    // without the driver the two rows conflict line-wise: they are adjacent
    w.git(&b, &["fetch", "-q", "origin"]);
    let base = w.git(&b, &["show", "HEAD~1:lessons/_index.md"]);
    let ours = w.read(&b, "_index.md");
    let theirs = w.git(&b, &["show", "origin/main:lessons/_index.md"]);
    assert!(!lesson::merge::lines::merge(&base, &ours, &theirs, ("o", "t")).is_clean());
    let (ok, out, unmerged) = w.pull(&b);
    assert!(ok, "{out}");
    assert!(unmerged.is_empty(), "{unmerged:?}");
    assert_no_markers(&b);
    let check = w.lesson_by(&b, "x", NOW, &["index", "--check"]);
    assert!(check.status.success(), "{}", text(&check));
    let lint = w.lint(&b, &[]);
    assert!(lint.status.success(), "{}", text(&lint));
}

#[test]
fn the_same_run_recorded_on_both_clones_counts_once() {
    let w = World::new();
    let a = w.clone("a", "init");
    let b = w.clone("b", "install");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "retry",
        "--followed",
        "r_1",
    );
    w.push(&a);
    w.record(
        &b,
        "bo@b",
        "2026-11-23T08:00:30Z",
        "retry",
        "--followed",
        "r_1",
    );
    let (ok, out, unmerged) = w.pull(&b);
    assert!(ok, "{out}");
    assert!(unmerged.is_empty(), "{unmerged:?}");
    assert_no_markers(&b);
    // two ledger lines that differ only in `at` and `by`, one evidence item, one count
    let ledger = w.read(&b, "_log/retry.jsonl");
    assert_eq!(ledger.matches("\"ref\":\"r_1\"").count(), 2, "{ledger}");
    let lesson = w.read(&b, "retry.md");
    assert_eq!(refs(&lesson), ["r_seed", "r_1"]);
    assert_eq!(counts(&lesson), ("1".into(), "0".into()));
    let lint = w.lint(&b, &[]);
    assert!(lint.status.success(), "{}", text(&lint));
    let check = w.lesson_by(&b, "x", NOW, &["index", "--check"]);
    assert!(check.status.success(), "{}", text(&check));
    // the fix writes the ledger's count, one per run: nothing to change
    let fix = w.lint(&b, &["--fix", "--unsafe-fixes"]);
    assert!(fix.status.success(), "{}", text(&fix));
    assert_eq!(w.read(&b, "retry.md"), lesson);
}

#[test]
fn opposite_verdicts_for_one_run_are_a_lint_error_naming_both_lines() {
    let w = World::new();
    let a = w.clone("a", "init");
    let b = w.clone("b", "install");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "retry",
        "--followed",
        "r_1",
    );
    w.push(&a);
    w.record(
        &b,
        "bo@b",
        "2026-11-23T08:00:30Z",
        "retry",
        "--contradicted",
        "r_1",
    );
    let (ok, out, unmerged) = w.pull(&b);
    assert!(ok, "{out}");
    assert!(unmerged.is_empty(), "{unmerged:?}");
    let lint = w.lint(&b, &["--output-format", "concise"]);
    assert_eq!(lint.status.code(), Some(1), "{}", text(&lint));
    let out = text(&lint);
    let l005: Vec<&str> = out.lines().filter(|l| l.contains("L005")).collect();
    assert_eq!(l005.len(), 1, "{out}");
    // ours (b) comes first in the merged ledger: b's contradicted line 2, a's followed line 3
    assert!(
        l005[0].contains("`_log/retry.jsonl:2` says contradicted, run success (by bo@b)")
            && l005[0].contains("`_log/retry.jsonl:3` says followed, run success (by ana@a)"),
        "{out}"
    );
    // the counts are the first verdict's: no other finding
    assert!(!out.contains("L001"), "{out}");
    assert_eq!(counts(&w.read(&b, "retry.md")), ("0".into(), "1".into()));
}

#[test]
fn without_the_driver_two_records_conflict_in_the_lesson_file() {
    let w = World::new();
    let a = w.clone("a", "install");
    // b has the attributes but no driver registered: git merges lesson files as text
    let b = w.clone("b", "none");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "retry",
        "--followed",
        "r_a",
    );
    w.push(&a);
    w.record(
        &b,
        "bo@b",
        "2026-11-23T09:00:00Z",
        "retry",
        "--followed",
        "r_b",
    );
    let (ok, out, unmerged) = w.pull(&b);
    assert!(!ok, "{out}");
    // the ledger merged by union; the lesson file (evidence and counts) conflicts
    assert!(
        unmerged.contains(&"lessons/retry.md".to_string()),
        "{unmerged:?}"
    );
    assert!(
        !unmerged.iter().any(|f| f.contains("_log/")),
        "{unmerged:?}"
    );
    assert!(w.read(&b, "retry.md").contains("<<<<<<<"));
}

#[test]
fn merge_file_merges_two_records_and_marks_a_real_conflict() {
    let w = World::new();
    let a = w.clone("a", "install");
    let b = w.clone("b", "install");
    // git's %O %A %B %P: temp files, and the path that picks the rule
    let base = w.read(&a, "retry.md");
    w.record(
        &a,
        "ana@a",
        "2026-11-23T08:00:00Z",
        "retry",
        "--followed",
        "r_a",
    );
    w.record(
        &b,
        "bo@b",
        "2026-11-23T09:00:00Z",
        "retry",
        "--followed",
        "r_b",
    );
    let dir = w.tmp.path();
    std::fs::write(dir.join("base.md"), &base).unwrap();
    std::fs::write(dir.join("ours.md"), w.read(&b, "retry.md")).unwrap();
    std::fs::write(dir.join("theirs.md"), w.read(&a, "retry.md")).unwrap();
    let out = w.lesson_by(
        dir,
        "x",
        NOW,
        &["merge-file", "base.md", "ours.md", "theirs.md", "retry.md"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let merged = std::fs::read_to_string(dir.join("ours.md")).unwrap();
    assert_eq!(refs(&merged), ["r_seed", "r_b", "r_a"]);
    // two rewrites of the body: markers in ours, exit 1, the conflict named
    std::fs::write(
        dir.join("ours.md"),
        base.replace("When retry applies.", "A."),
    )
    .unwrap();
    std::fs::write(
        dir.join("theirs.md"),
        base.replace("When retry applies.", "B."),
    )
    .unwrap();
    let out = w.lesson_by(
        dir,
        "x",
        NOW,
        &["merge-file", "base.md", "ours.md", "theirs.md", "retry.md"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("retry.md: both sides changed `trigger`"),
        "{}",
        text(&out)
    );
    let merged = std::fs::read_to_string(dir.join("ours.md")).unwrap();
    assert!(merged.contains("<<<<<<< ours\n") && merged.contains(">>>>>>> theirs\n"));
}

#[test]
fn lint_fix_writes_the_count_of_distinct_runs_never_an_inflated_one() {
    // what a union merge of two ledgers leaves when both clones recorded one run, with the
    // counts a naive resolution of the lesson file wrote (each side's +1)
    let s = Sandbox::new();
    assert_eq!(s.run(&["init"]).code, 0);
    let new = s.run(&[
        "new",
        "retry",
        "--title",
        "Retry.",
        "--trigger",
        "Retrying.",
        "--evidence",
        "run:r0",
    ]);
    assert_eq!(new.code, 0, "{new}");
    let rec = s.run(&[
        "record",
        "retry",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r1",
    ]);
    assert_eq!(rec.code, 0, "{rec}");
    let log = s.bank().join("_log/retry.jsonl");
    let ledger = std::fs::read_to_string(&log).unwrap();
    let line = ledger.lines().last().unwrap();
    let twin = line
        .replace("\"by\":\"tester\"", "\"by\":\"other@host\"")
        .replace("12:00:00Z", "12:00:42Z");
    assert_ne!(twin, line);
    std::fs::write(&log, format!("{ledger}{twin}\n")).unwrap();
    let path = s.bank().join("retry.md");
    let lesson = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        lesson.replace("success_count: 1", "success_count: 2"),
    )
    .unwrap();
    let lint = s.run(&["lint", "--output-format", "concise"]);
    assert_eq!(lint.code, 1, "{lint}");
    assert!(
        lint.stdout.contains("the ledger `_log/retry.jsonl` says 1/0: initial 0/0 + 1 outcome (1 more line repeats a run, counted once)"),
        "{lint}"
    );
    let fix = s.run(&["lint", "--fix", "--unsafe-fixes"]);
    assert_eq!(fix.code, 0, "{fix}");
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(fixed.contains("success_count: 1\n"), "{fixed}");
}

#[test]
fn two_clones_that_log_searches_merge_without_conflict() {
    let w = World::new();
    let a = w.clone("a", "install");
    let b = w.clone("b", "install");
    let search = |clone: &Path, by: &str, now: &str, run: &str| {
        let out = w.lesson_by(
            clone,
            by,
            now,
            &["search", "do the retry thing", "--log", run],
        );
        assert!(out.status.success(), "search: {}", text(&out));
        w.git(clone, &["add", "-A", "lessons"]);
        w.git(clone, &["commit", "-qm", &format!("search {run}")]);
    };
    // the first round adds the log on both sides (an add/add), the second appends on both
    for round in 0..2 {
        search(&a, "ana@a", "2026-11-23T08:00:00Z", &format!("ra{round}"));
        w.push(&a);
        search(&b, "bo@b", "2026-11-23T09:00:00Z", &format!("rb{round}"));
        let (merged, out, unmerged) = w.pull(&b);
        assert!(merged && unmerged.is_empty(), "round {round}: {out}");
        w.push(&b);
        let (merged, out, _) = w.pull(&a);
        assert!(merged, "round {round}: {out}");
    }
    let log = w.read(&a, "_log/_shown.jsonl");
    assert_eq!(log, w.read(&b, "_log/_shown.jsonl"));
    let mut runs: Vec<&str> = log
        .lines()
        .map(|l| {
            l.split("\"run\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    runs.sort_unstable();
    assert_eq!(runs, ["ra0", "ra1", "rb0", "rb1"], "{log}");
    assert_no_markers(&a);
    let lint = w.lint(&a, &[]);
    assert!(lint.status.success(), "{}", text(&lint));
    let list = w.lesson_by(&a, "x", NOW, &["list", "--format", "json"]);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let retry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["slug"] == "retry")
        .unwrap();
    assert_eq!(retry["shown"], 4, "{retry}");
}
