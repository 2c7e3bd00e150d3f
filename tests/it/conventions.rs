//! The output conventions every command shares: `--format json` of the writers (what changed,
//! checked against the bank's bytes before and after), `lesson rule --format json`, `--color`
//! and `NO_COLOR`, `--quiet` and `--verbose`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::sandbox::{Run, Sandbox, Tree};

const LEDGER: &str = "tests/fixtures/banks/ledger";
const EDITS: &str = "tests/fixtures/edits";
const SMALL: &str = "tests/fixtures/banks/small";

/// The bank-relative paths whose bytes differ between two trees (added, removed or changed).
fn changed(before: &Tree, after: &Tree) -> BTreeSet<String> {
    let rel = |p: &std::path::Path| {
        p.strip_prefix("lessons")
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut out = BTreeSet::new();
    for (path, bytes) in before {
        if after.get(path) != Some(bytes) {
            out.insert(rel(path));
        }
    }
    for path in after.keys() {
        if !before.contains_key(path) {
            out.insert(rel(path));
        }
    }
    out
}

/// The paths a writer's JSON report says it changed (both ends of a move).
fn reported(report: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in report["files"].as_array().unwrap() {
        out.insert(file["path"].as_str().unwrap().to_string());
        if let Some(from) = file["from"].as_str() {
            out.insert(from.to_string());
        }
    }
    out
}

/// Run a writer with `--format json`: it must succeed, print one JSON object whose `files` are
/// exactly the files whose bytes changed, whose `changed` says whether any did, whose `events`
/// are the lines its ledgers grew by; nothing on stderr. Returns the transcript.
fn write_json(s: &Sandbox, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let before = s.tree();
    let run = s.run(&all);
    let after = s.tree();
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(run.stderr, "", "{run}");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let changed = changed(&before, &after);
    assert_eq!(reported(&report), changed, "{run}");
    assert_eq!(report["changed"], Value::Bool(!changed.is_empty()));
    let grown: usize = changed
        .iter()
        .filter(|p| p.starts_with("_log/"))
        .map(|p| {
            let path = std::path::Path::new("lessons").join(p);
            let lines = |t: &Tree| {
                t.get(&path)
                    .map_or(0, |b| b.split(|&c| c == b'\n').count() - 1)
            };
            lines(&after) - lines(&before)
        })
        .sum();
    assert_eq!(report["events"].as_array().unwrap().len(), grown, "{run}");
    format!("$ lesson {}\n{}", all.join(" "), run.stdout)
}

#[test]
fn every_writer_reports_what_it_changed_as_json() {
    let s = Sandbox::with_indexed_bank(LEDGER);
    s.write(
        "c.json",
        r##"[{"slug": "cache-the-registry", "title": "Cache the registry index in CI.",
  "trigger": {"description": "CI jobs that download the crates.io index on every run.", "tags": ["ci"]},
  "outcome": "success", "evidence": [{"kind": "run", "ref": "r_c1"}]}]"##,
    );
    let record: &[&str] = &[
        "record",
        "flaky-retries",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_2026-11-22_a",
    ];
    let mut out = String::new();
    for args in [
        &[
            "new",
            "verify-page-id",
            "--title",
            "Verify the page id before clicking Load More twice",
            "--trigger",
            "A paginated list with a Load More button",
            "--tag",
            "pagination",
            "--evidence",
            "run:r_2026-04-21_a3f2e9",
        ][..],
        &[
            "new",
            "dry-lesson",
            "--title",
            "T",
            "--trigger",
            "d",
            "--evidence",
            "run:r1",
            "--dry-run",
        ],
        record,
        // a retry of the same observation: nothing changes
        record,
        // no ledger yet: the `imported` event goes first
        &[
            "record",
            "hand-written",
            "--contradicted",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r_2026-11-22_b",
        ],
        &["supersede", "flaky-retries", "--by", "run-clippy-in-ci"],
        &["archive", "--expired", "--dry-run"],
        &["archive", "--expired"],
        &["add", "c.json", "--dry-run"],
        &["add", "c.json"],
        &["add", "c.json"],
    ] {
        out.push_str(&write_json(&s, args));
    }
    assert_eq!(s.run(&["lint"]).code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn distill_reports_what_it_changed_as_json() {
    let s = Sandbox::with_indexed_bank(EDITS);
    s.write(
        "run.json",
        r#"{"id": "r_2026-11-22_d1", "outcome": "success",
  "request": "Retry calls to the shared service after it rate-limits us", "tags": ["retries"]}"#,
    );
    let args = [
        "distill",
        "--run",
        "run.json",
        "--judge",
        "python3 \"$JUDGE\" followed new",
    ];
    let first = write_json(&s, &args);
    let again = write_json(&s, &args);
    insta::assert_snapshot!(format!("{first}{again}"));
}

#[test]
fn a_refusal_in_json_is_an_error_envelope_and_writes_nothing() {
    let s = Sandbox::with_indexed_bank(EDITS);
    s.write(
        "bad.json",
        r#"{"slug": "Bad Slug", "title": "x", "trigger": {"description": "y"}}"#,
    );
    let before = s.tree();
    let run = s.run(&["add", "bad.json", "--format", "json"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(s.tree() == before);
    let envelope: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(envelope["ok"], Value::Bool(false));
    assert_eq!(envelope["error"]["code"], "lesson_invalid");
    assert!(!envelope["error"]["cause"]["diagnostics"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn rule_as_json() {
    let s = Sandbox::with_bank(SMALL);
    let one = s.run(&["rule", "S006", "--format", "json"]);
    assert_eq!(one.code, 0, "{one}");
    let one: Value = serde_json::from_str(&one.stdout).unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&one).unwrap());

    let all = s.run(&["rule", "--format", "json"]);
    let table = s.run(&["rule"]);
    let all: Value = serde_json::from_str(&all.stdout).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(
        all.len(),
        table.stdout.lines().count(),
        "one object per rule"
    );
    for (rule, line) in all.iter().zip(table.stdout.lines()) {
        let code = rule["code"].as_str().unwrap();
        assert!(line.starts_with(code), "{line} is not {code}");
        for key in ["name", "severity", "summary", "docs"] {
            assert!(rule[key].is_string(), "{code}: {key}");
        }
        assert!(rule["fixable"].is_boolean());
    }
    assert_eq!(s.run(&["rule", "Z999", "--format", "json"]).code, 2);
}

const ANSI: &str = "\u{1b}[";

#[test]
fn colour_is_decided_by_color_and_no_color() {
    let s = Sandbox::with_bank(SMALL);
    let lint = |args: &[&str], env: &[(&str, &str)]| -> Run {
        let mut all = vec!["lint"];
        all.extend(args);
        s.run_with_env(&all, env)
    };
    let always = lint(&["--color", "always"], &[]);
    assert_eq!(always.code, 1, "the small bank has errors: {always}");
    assert!(always.stdout.contains(ANSI), "{always}");
    // `always` wins over NO_COLOR; the flag is global (before the command too)
    assert!(lint(&["--color", "always"], &[("NO_COLOR", "1")])
        .stdout
        .contains(ANSI));
    assert!(s.run(&["--color", "always", "lint"]).stdout.contains(ANSI));
    // not a terminal (a pipe): `auto` does not colour, nor does `never` or NO_COLOR
    for (args, env) in [
        (&[][..], &[][..]),
        (&["--color", "auto"][..], &[][..]),
        (&["--color", "never"][..], &[][..]),
        (&[][..], &[("NO_COLOR", "1")][..]),
    ] {
        let run = lint(args, env);
        assert_eq!(run.code, 1);
        assert!(!run.stdout.contains(ANSI), "{args:?} {env:?}: {run}");
        assert!(!run.stderr.contains(ANSI), "{args:?} {env:?}: {run}");
    }
    assert_eq!(lint(&["--color", "sometimes"], &[]).code, 2);
}

#[test]
fn quiet_prints_the_data_and_errors_only() {
    let clean = Sandbox::new();
    assert_eq!(clean.run(&["init"]).code, 0);
    let lint = clean.run(&["lint"]);
    let quiet = clean.run(&["lint", "-q"]);
    assert!(lint.stdout.ends_with("checked: all clean\n"), "{lint}");
    assert_eq!(
        (quiet.code, quiet.stdout.as_str(), quiet.stderr.as_str()),
        (0, "", "")
    );

    // findings are the data asked for; the summary line is not
    let small = Sandbox::with_bank(SMALL);
    let loud = small.run(&["lint", "--output-format", "concise"]);
    let quiet = small.run(&["--quiet", "lint", "--output-format", "concise"]);
    assert_eq!(quiet.code, 1);
    let summary = loud.stdout.lines().last().unwrap();
    assert!(summary.contains("checked:"), "{loud}");
    assert_eq!(
        quiet.stdout,
        loud.stdout.replace(&format!("{summary}\n"), "")
    );

    // a writer prints nothing on success
    let s = Sandbox::with_indexed_bank(EDITS);
    let record = s.run(&[
        "record",
        "retry-with-jitter",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_q",
        "-q",
    ]);
    assert_eq!(
        (record.code, record.stdout.as_str(), record.stderr.as_str()),
        (0, "", "")
    );
    let index = s.run(&["index", "-q"]);
    assert_eq!(
        (index.code, index.stdout.as_str(), index.stderr.as_str()),
        (0, "", "")
    );
    // errors still say what went wrong
    let missing = s.run(&[
        "record",
        "nope",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r",
        "-q",
    ]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.starts_with("error: "), "{missing}");

    let both = s.run(&["lint", "-q", "-v"]);
    assert_eq!(both.code, 2, "{both}");
    assert!(both.stderr.contains("cannot be used with"), "{both}");
}

#[test]
fn verbose_says_which_bank_and_how_long() {
    let s = Sandbox::with_indexed_bank(EDITS);
    let run = s.run(&["lint", "--verbose"]);
    assert_eq!(run.code, 0, "{run}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines[0], "lesson: bank lessons", "{run}");
    let documents = s
        .tree()
        .keys()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .count()
        - 1;
    assert!(
        lines[1].starts_with(&format!("lesson: checking ({documents} steps): ")),
        "{run}"
    );
    assert!(lines[2].starts_with("lesson: bank rules: "), "{run}");
    assert!(lines[3].starts_with("lesson: done in "), "{run}");
    assert_eq!(lines.len(), 4, "{run}");
    // the data is the same with or without
    assert_eq!(run.stdout, s.run(&["lint"]).stdout);
}
