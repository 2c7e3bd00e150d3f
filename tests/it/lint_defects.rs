//! `lesson lint` must never pass silently on what it did not check (issue 14): paths outside
//! the bank, rule selectors and configured rules that name no rule, fixes `--fix` would not
//! apply, merge conflicts, file names that are not UTF-8, tab errors.

use std::path::PathBuf;

use crate::sandbox::{run_in as lesson, Sandbox};

/// A sandbox whose `lessons/` is a copy of `fixture`, and that bank's path.
fn sandbox(fixture: &str) -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::with_bank(fixture);
    let bank = sandbox.bank();
    (sandbox, bank)
}

/// Item 6: a path outside the bank, or one that does not exist, is a usage error naming the
/// path and the bank; never "all clean".
#[test]
fn a_path_outside_the_bank_is_a_usage_error() {
    let (tmp, bank) = sandbox("tests/fixtures/banks/small");
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    std::fs::write(tmp.path().join("outside/bad.md"), "---\nslug: [\n---\n").unwrap();
    let real_bank = bank.canonicalize().unwrap().display().to_string();
    for (cwd, path) in [
        (bank.as_path(), "../outside/bad.md"),
        (bank.as_path(), "/etc/passwd"),
        (bank.as_path(), ".."),
        (tmp.path(), "outside"),
        (bank.as_path(), "no-such-lesson.md"),
    ] {
        let run = lesson(cwd, &["lint", path]);
        assert_eq!(run.code, 2, "{path}: {run:?}");
        assert!(!run.stdout.contains("all clean"), "{path}: {run:?}");
        assert!(
            run.stderr.contains(path) && run.stderr.contains(&real_bank),
            "{path}: the message names neither the path nor the bank: {run:?}"
        );
    }
    // a file in the bank, given from inside it or from outside it, is still linted
    for (cwd, path) in [
        (bank.as_path(), "./check-exit-codes.md"),
        (tmp.path(), "lessons/check-exit-codes.md"),
    ] {
        let run = lesson(cwd, &["lint", path]);
        assert_ne!(run.code, 2, "{path}: {run:?}");
    }
}

/// Item 7: an unknown rule in `--select` is a usage error with the closest rule; code prefixes
/// and `ALL` select (as in ruff); an unknown rule in `lesson.toml` is an error too.
#[test]
fn unknown_rules_are_errors_with_a_suggestion() {
    let (tmp, bank) = sandbox("tests/fixtures/banks/fixable");
    let cwd = tmp.path();
    for (select, suggestion) in [
        ("NOPE", None),
        ("S13", Some("S013")),
        ("S06", None),
        ("unknwon-field", Some("unknown-field")),
        ("S002,Y", None),
    ] {
        let run = lesson(cwd, &["lint", "--select", select]);
        assert_eq!(run.code, 2, "{select}: {run:?}");
        assert!(run.stdout.is_empty(), "{select}: {run:?}");
        assert!(run.stderr.contains("for '--select"), "{select}: {run:?}");
        if let Some(s) = suggestion {
            assert!(
                run.stderr.contains(&format!("did you mean `{s}`?")),
                "{select}: {run:?}"
            );
        }
    }
    let count = |select: &str| {
        let run = lesson(
            cwd,
            &["lint", "--select", select, "--output-format", "concise"],
        );
        assert_eq!(run.code, 1, "{select}: {run:?}");
        run.stdout.lines().count() - 1
    };
    // S002 (unknown-field) fires in this bank; a prefix or ALL includes it
    let one = count("S002");
    assert!(one > 0);
    assert_eq!(count("unknown-field"), one);
    assert!(count("S00") >= one);
    assert!(count("s") >= count("S00"));
    assert!(count("ALL") > count("s"));

    std::fs::write(bank.join("lesson.toml"), "[lint.rules]\nS13 = \"off\"\n").unwrap();
    let run = lesson(cwd, &["lint"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("lesson.toml:2:1: [lint.rules]: unknown rule `S13`; did you mean `S013`?"),
        "{run:?}"
    );
}

/// Item 8: only safe fixes count as fixable with `--fix`; unsafe ones are "hidden fixes"
/// (ruff's words), counted as fixable only with `--unsafe-fixes`.
#[test]
fn unsafe_fixes_are_not_counted_as_fixable_with_fix() {
    // every D004 fix is unsafe
    let (tmp, _) = sandbox("tests/fixtures/rules/D004");
    let cwd = tmp.path();
    let last = |args: &[&str]| {
        let run = lesson(cwd, args);
        run.stdout.lines().last().unwrap_or_default().to_string()
    };
    let concise = ["lint", "--select", "D004", "--output-format", "concise"];
    let run = lesson(cwd, &concise);
    assert!(!run.stdout.contains("[*]"), "{run:?}");
    assert_eq!(
        last(&concise),
        "2 files checked: 9 warnings (no fixes available; 9 hidden fixes can be enabled with the `--unsafe-fixes` option)"
    );
    assert_eq!(
        last(&[&concise[..], &["--unsafe-fixes"]].concat()),
        "2 files checked: 9 warnings (9 fixable with `lesson lint --fix --unsafe-fixes`)"
    );
    assert_eq!(
        last(&[&concise[..], &["--fix"]].concat()),
        "fixed 0 findings in 0 files; 2 files checked: 9 warnings (no fixes available; 9 hidden fixes can be enabled with the `--unsafe-fixes` option)"
    );

    // a safe fix and an unsafe one: one fixable, one hidden
    let (tmp, bank) = sandbox("tests/fixtures/rules/S005");
    let cwd = tmp.path();
    std::fs::copy(
        "tests/fixtures/rules/D004/zero-width.md",
        bank.join("zero-width.md"),
    )
    .unwrap();
    let run = lesson(
        cwd,
        &[
            "lint",
            "--select",
            "S005,D004",
            "--output-format",
            "concise",
        ],
    );
    let line = run.stdout.lines().last().unwrap();
    assert!(
        line.ends_with("fixable with `lesson lint --fix`; 5 hidden fixes can be enabled with the `--unsafe-fixes` option)"),
        "{run:?}"
    );
}

/// Item 9: a merge conflict is P015 at its marker, and in the frontmatter it hides the YAML
/// errors it causes; a `=======` heading underline is no conflict.
#[test]
fn a_merge_conflict_is_reported_at_its_marker_and_hides_the_yaml_errors() {
    let (tmp, _) = sandbox("tests/fixtures/rules/P015");
    let run = lesson(tmp.path(), &["lint", "--output-format", "concise"]);
    assert_eq!(run.code, 1, "{run:?}");
    let findings: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("lessons/") && !l.contains(" B008 "))
        .collect();
    assert_eq!(
        findings,
        [
            "lessons/retry-with-jitter.md:4:1: P015 unresolved merge conflict (lines 4-8)",
            "lessons/write-files-atomically.md:24:1: P015 unresolved merge conflict (lines 24-30)",
            "lessons/write-files-atomically.md:35:1: P015 unresolved merge conflict: a `>>>>>>>` marker closes no conflict",
        ],
        "{run:?}"
    );
    // with the rule off, the YAML error is reported as before
    std::fs::write(
        tmp.path().join("lessons/lesson.toml"),
        "[lint.rules]\nmerge-conflict = \"off\"\n",
    )
    .unwrap();
    let run = lesson(tmp.path(), &["lint", "--output-format", "concise"]);
    assert!(
        run.stdout
            .contains("lessons/retry-with-jitter.md:5:1: P008"),
        "{run:?}"
    );
    assert!(!run.stdout.contains("P015"), "{run:?}");
}

/// Item 15: a file name that is not UTF-8 is percent-encoded in JSON and SARIF (the bytes, not
/// U+FFFD), and its slug is still checked against it.
#[cfg(target_os = "linux")]
#[test]
fn a_non_utf8_file_name_is_percent_encoded_and_checked() {
    use std::os::unix::ffi::OsStrExt;
    let (tmp, bank) = sandbox("tests/fixtures/rules/B008");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9 100%.md");
    std::fs::copy(
        "tests/fixtures/rules/B008/write-files-atomically.md",
        bank.join(name),
    )
    .unwrap();
    let run = lesson(
        tmp.path(),
        &["lint", "--select", "B001", "--output-format", "json"],
    );
    let found: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let paths: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "B001")
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["lessons/caf%E9 100%25.md"], "{run:?}");

    let run = lesson(
        tmp.path(),
        &["lint", "--select", "B001", "--output-format", "sarif"],
    );
    let log: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let uri = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"];
    assert_eq!(uri, "lessons/caf%E9%20100%25.md", "{run:?}");
}
