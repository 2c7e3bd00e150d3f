//! Regression tests of defects a new user met in the first hour (issue 14): a reader that goes
//! away, a refused write that wrote, lookups that printed the wrong lesson, an anonymous
//! recorder. Each test failed before its fix.

use std::path::Path;
use std::process::Stdio;

use crate::sandbox::{copy_dir, lesson, Sandbox};

/// Every reading command, on a bank with findings, lessons and an index: what `head -c 1`
/// does to it is closing the pipe before it writes.
const READERS: &[&[&str]] = &[
    &["list"],
    &["list", "--format", "json"],
    &["show", "keep-ci-green"],
    &["show", "keep-ci-green", "--format", "json"],
    &["rule"],
    &["rule", "--all"],
    &["rule", "S006"],
    &["config"],
    &["search", "ci", "--format", "json"],
    &["search", "ci", "--format", "text"],
    &["search", "ci"],
    &["dedup"],
    &["dedup", "--format", "json"],
    &["review"],
    &["review", "--format", "json"],
    &["index", "--stdout"],
    &["index", "--check"],
    &["lint"],
    &["lint", "--output-format", "concise"],
    &["lint", "--output-format", "json"],
    &["lint", "--output-format", "github"],
    &["lint", "--output-format", "sarif"],
    &["lint", "--diff"],
    &[
        "new",
        "a-new-lesson",
        "--title",
        "T.",
        "--trigger",
        "When.",
        "--evidence",
        "run:r1",
        "--dry-run",
    ],
];

/// Item 1: a reader that goes away (`| head -c 1`) ends every reading command quietly: no
/// panic, no error, the status of `rg` (0), or the command's own verdict (1 for findings).
#[test]
fn every_reading_command_ends_quietly_when_its_reader_goes_away() {
    let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
    // a stale index and a lint finding, so that check, diff and lint have something to print
    std::fs::write(s.bank().join("_index.md"), "stale\n").unwrap();
    for args in READERS {
        // the read end is closed before the command starts: its first write fails
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = lesson()
            .args(*args)
            .current_dir(s.path())
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(1)),
            "lesson {}: exit {code:?}, stderr: {stderr}",
            args.join(" ")
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "lesson {}: {stderr}",
            args.join(" ")
        );
    }
}

/// Item 3: a command refused at one of its targets writes nothing, not even the ledger line it
/// would have appended first. Here `_index.md` is a link out of the bank.
#[test]
fn a_refused_write_writes_nothing() {
    let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
    let outside = s.path().join("outside-index.md");
    std::fs::write(&outside, "not the bank's\n").unwrap();
    std::fs::remove_file(s.bank().join("_index.md")).unwrap();
    std::os::unix::fs::symlink(&outside, s.bank().join("_index.md")).unwrap();
    let before = s.tree();
    for args in [
        &[
            "record",
            "keep-ci-green",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r77",
        ][..],
        &["supersede", "lint-in-ci", "--by", "keep-ci-green"],
        &["archive", "run-clippy-in-ci"],
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 2, "{}: {run}", args.join(" "));
        assert!(
            run.stderr.contains("outside the bank"),
            "{}: {run}",
            args.join(" ")
        );
        let after = s.tree();
        assert!(
            after == before,
            "{} wrote before it was refused:\n{}",
            args.join(" "),
            crate::sandbox::diff(&before, &after)
        );
    }
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "not the bank's\n"
    );
}

/// Items 12 and 13: `show` refuses a slug two files share (it printed the copy), shows an
/// archived lesson from `_archive/` with a note, and its JSON carries the body.
#[test]
fn show_refuses_an_ambiguous_slug_and_finds_an_archived_lesson() {
    let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
    let bank = s.bank();
    std::fs::copy(
        bank.join("keep-ci-green.md"),
        bank.join("keep-ci-green-copy.md"),
    )
    .unwrap();
    let run = s.run(&["show", "keep-ci-green"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(
        run.stderr.contains("keep-ci-green.md") && run.stderr.contains("keep-ci-green-copy.md"),
        "{run}"
    );
    assert_eq!(run.stdout, "");
    std::fs::remove_file(bank.join("keep-ci-green-copy.md")).unwrap();

    let archived = s.run(&["archive", "run-clippy-in-ci"]);
    assert_eq!(archived.code, 0, "{archived}");
    let text = s.run(&["show", "run-clippy-in-ci"]);
    assert_eq!(text.code, 0, "{text}");
    assert!(
        text.stdout
            .starts_with("lessons/_archive/run-clippy-in-ci.md\n"),
        "{text}"
    );
    assert!(text.stderr.contains("is archived"), "{text}");
    let json = s.run(&["show", "run-clippy-in-ci", "--format", "json"]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["status"], "archived");
    let sections = value["body"]["sections"].as_array().unwrap();
    assert!(
        sections.iter().any(|s| s["heading"] == "When this applies"),
        "{value}"
    );
}

/// Item 14: without `--by`, `$LESSON_BY` or `$USER`, the recorder is the git author when the
/// bank is in a repository, else `uid<N>@host`; never `unknown`.
#[test]
fn the_recorder_is_never_unknown() {
    let recorded_by = |root: &Path, evidence: &str| -> String {
        let out = lesson()
            .args([
                "record",
                "keep-ci-green",
                "--followed",
                "--run-outcome",
                "success",
            ])
            .args(["--evidence", evidence])
            .current_dir(root)
            .env_remove("LESSON_BY")
            .env_remove("USER")
            .env_remove("USERNAME")
            .env_remove("LOGNAME")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = std::fs::read_to_string(root.join("lessons/_log/keep-ci-green.jsonl")).unwrap();
        let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
        last["by"].as_str().unwrap().to_string()
    };
    let plain = Sandbox::new();
    copy_dir(Path::new("tests/fixtures/banks/ledger"), &plain.bank());
    let by = recorded_by(plain.path(), "run:who-1");
    assert!(by.starts_with("uid") && by.contains('@'), "{by}");

    let repo = Sandbox::new();
    copy_dir(Path::new("tests/fixtures/banks/ledger"), &repo.bank());
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", repo.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {}", args.join(" "));
    };
    git(&["init", "-q", "."]);
    git(&["config", "user.name", "Ana"]);
    git(&["config", "user.email", "ana@example.org"]);
    assert_eq!(recorded_by(repo.path(), "run:who-2"), "ana@example.org");
}

/// Item 18: `lesson new` of a near-duplicate warns with the nearest lesson and its score (it
/// still writes: a human asked for it); a distinct lesson gets no such warning.
#[test]
fn new_warns_about_a_near_duplicate() {
    let s = Sandbox::with_bank("tests/fixtures/banks/retrieve");
    let new = |slug: &str, title: &str, trigger: &str| {
        s.run(&[
            "new",
            slug,
            "--title",
            title,
            "--trigger",
            trigger,
            "--tag",
            "ci",
            "--evidence",
            "run:r1",
        ])
    };
    let near = new(
        "cache-cargo-registry-in-ci-again",
        "Cache the cargo registry, not the target directory, in CI.",
        "Speeding up a slow Rust CI build.",
    );
    assert_eq!(near.code, 0, "{near}");
    assert!(
        near.stderr.contains(
            "warning: `cache-cargo-registry-in-ci-again` looks like a near-duplicate of \
             `cache-cargo-registry-in-ci` (score "
        ),
        "{near}"
    );
    assert!(s
        .bank()
        .join("cache-cargo-registry-in-ci-again.md")
        .is_file());
    let distinct = new(
        "water-the-ferns",
        "Water the ferns before the nightly CI job.",
        "Office plants wilting over the weekend.",
    );
    assert_eq!(distinct.code, 0, "{distinct}");
    assert!(!distinct.stderr.contains("near-duplicate"), "{distinct}");
}
