//! Pull-request checks (`lesson lint --base`, rules G001..G006) and `lesson diff` (issue 15): a
//! temporary git repository whose folder `lessons/` is the bundled bank, a base commit, then a
//! change in the working tree (or a second commit).

use std::path::Path;
use std::process::Command;

use crate::sandbox::{lesson, Run, Sandbox};

/// `git ARGS` in `dir`, with no configuration from the machine.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Tess", "-c", "user.email=tess@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_DATE", "2026-11-22T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-11-22T12:00:00Z")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository holding the bundled bank in `lessons/` (and a file beside it), committed once
/// on `main`, with the branch `change` checked out.
fn repository() -> Sandbox {
    let s = Sandbox::with_bank("lessons");
    std::fs::write(s.path().join("README.md"), "a project with a bank\n").unwrap();
    git(s.path(), &["init", "-q", "-b", "main"]);
    git(s.path(), &["add", "."]);
    git(s.path(), &["commit", "-qm", "base"]);
    // the change is made on a branch: `main` stays the base
    git(s.path(), &["checkout", "-qb", "change"]);
    s
}

/// Commit everything in the working tree.
fn commit(s: &Sandbox, message: &str) {
    git(s.path(), &["add", "-A"]);
    git(s.path(), &["commit", "-qm", message]);
}

/// `lesson ARGS` in the sandbox with the fixed clock and recorder, and no git configuration
/// from the machine; the temp directory redacted.
fn run(s: &Sandbox, args: &[&str]) -> Run {
    let out = lesson()
        .args(args)
        .current_dir(s.path())
        .env("LESSON_BY", "tester")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", s.path())
        .output()
        .unwrap();
    let redact =
        |b: &[u8]| String::from_utf8_lossy(b).replace(&s.path().display().to_string(), "[TMP]");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: redact(&out.stdout),
        stderr: redact(&out.stderr),
    }
}

/// Runs, each with its command line.
fn transcript(s: &Sandbox, commands: &[&[&str]]) -> String {
    let mut out = String::new();
    for args in commands {
        out.push_str(&format!("$ lesson {}\n{}\n", args.join(" "), run(s, args)));
    }
    out
}

/// `lint --base main` with only the pull-request rules, concise and JSON.
fn base_findings(s: &Sandbox) -> String {
    base_findings_from(s, "main")
}

/// `lint --base BASE` with only the pull-request rules, concise and JSON.
fn base_findings_from(s: &Sandbox, base: &str) -> String {
    transcript(
        s,
        &[
            &[
                "lint",
                "--base",
                base,
                "--select",
                "G",
                "--output-format",
                "concise",
            ],
            &[
                "lint",
                "--base",
                base,
                "--select",
                "G",
                "--output-format",
                "json",
            ],
        ],
    )
}

fn ok(r: Run) -> Run {
    assert_eq!(r.code, 0, "{r}");
    r
}

fn edit(s: &Sandbox, rel: &str, f: impl FnOnce(String) -> String) {
    let path = s.bank().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = f(text.clone());
    assert_ne!(text, changed, "the edit of {rel} changed nothing");
    std::fs::write(path, changed).unwrap();
}

const RECORD: &[&str] = &[
    "record",
    "cite-evidence-by-id",
    "--followed",
    "--run-outcome",
    "success",
    "--evidence",
    "run:r_77",
];

/// What a curator does through the commands: record, archive, a new lesson that supersedes an
/// old one.
fn legitimate_change(s: &Sandbox) {
    ok(run(s, RECORD));
    ok(run(
        s,
        &["archive", "hold-rule-renames-until-the-registry-freezes"],
    ));
    ok(run(
        s,
        &[
            "new",
            "keep-triggers-narrow-and-tagged",
            "--title",
            "Tag every lesson with two or three narrow tags.",
            "--trigger",
            "Writing the trigger of a new lesson.",
            "--tag",
            "triggers",
            "--evidence",
            "run:r_78",
        ],
    ));
    ok(run(
        s,
        &[
            "supersede",
            "keep-triggers-narrow",
            "--by",
            "keep-triggers-narrow-and-tagged",
        ],
    ));
}

#[test]
fn a_change_made_with_record_archive_and_supersede_has_no_finding() {
    let s = repository();
    legitimate_change(&s);
    // the whole lint: the plain rules and the pull-request rules
    let lint = run(
        &s,
        &["lint", "--base", "main", "--output-format", "concise"],
    );
    assert_eq!(lint.code, 0, "{lint}");
    assert!(!lint.stdout.contains(": G0"), "{lint}");
    insta::assert_snapshot!(base_findings(&s));
    // the same change committed, compared commit to commit
    commit(&s, "curate");
    let committed = run(
        &s,
        &["lint", "--base", "main", "--head", "HEAD", "--select", "G"],
    );
    assert_eq!(committed.code, 0, "{committed}");
    let between = run(&s, &["lint", "--base", "HEAD~1", "--head", "HEAD"]);
    assert_eq!(between.code, 0, "{between}");
    assert!(between.stdout.ends_with("all clean\n"), "{between}");
}

#[test]
fn g001_a_changed_ledger_line() {
    let s = repository();
    ok(run(&s, RECORD));
    commit(&s, "record");
    edit(&s, "_log/cite-evidence-by-id.jsonl", |t| {
        t.replace(r#""applied":"followed""#, r#""applied":"contradicted""#)
    });
    // against the base, the whole ledger is new: it only grew
    let from_main = run(&s, &["lint", "--base", "main", "--select", "G"]);
    assert_eq!(from_main.code, 0, "{from_main}");
    insta::assert_snapshot!(base_findings_from(&s, "HEAD"));
}

#[test]
fn g001_a_removed_ledger_line_and_a_deleted_ledger() {
    let s = repository();
    edit(&s, "_log/cite-evidence-by-id.jsonl", |t| {
        // the first line (its `created` event) removed
        t.split_once('\n').unwrap().1.to_string()
    });
    std::fs::remove_file(s.bank().join("_log/write-files-atomically.jsonl")).unwrap();
    insta::assert_snapshot!(base_findings(&s));
}

/// Lines appended on two branches and merged by union interleave: the base's lines are all
/// there, in order, so the ledger only grew.
#[test]
fn g001_lines_interleaved_by_a_union_merge_are_growth() {
    let s = repository();
    ok(run(&s, RECORD));
    commit(&s, "record");
    let ledger = s.bank().join("_log/cite-evidence-by-id.jsonl");
    let text = std::fs::read_to_string(&ledger).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let other = r#"{"at":"2026-11-22T12:00:01Z","event":"evidence","by":"peer","evidence":{"kind":"run","ref":"r_80"}}"#;
    std::fs::write(&ledger, format!("{first}\n{other}\n{rest}")).unwrap();
    let lint = run(&s, &["lint", "--base", "HEAD", "--select", "G"]);
    assert_eq!(lint.code, 0, "{lint}");
}

#[test]
fn g002_counts_typed_by_hand() {
    let s = repository();
    edit(&s, "write-files-atomically.md", |t| {
        t.replace("success_count: 0\n", "success_count: 9\n")
    });
    // a recorded outcome whose count was raised by more than the outcome
    ok(run(&s, RECORD));
    edit(&s, "cite-evidence-by-id.md", |t| {
        t.replace("success_count: 1\n", "success_count: 3\n")
    });
    insta::assert_snapshot!(base_findings(&s));
    // every output format carries the findings
    insta::assert_snapshot!(
        "g002_formats",
        transcript(
            &s,
            &[
                &["lint", "--base", "main", "--select", "G002"],
                &[
                    "lint",
                    "--base",
                    "main",
                    "--select",
                    "G002",
                    "--output-format",
                    "github"
                ],
            ]
        )
    );
    let sarif = run(
        &s,
        &[
            "lint",
            "--base",
            "main",
            "--select",
            "G002",
            "--output-format",
            "sarif",
        ],
    );
    assert_eq!(sarif.code, 1, "{sarif}");
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{sarif}");
    assert_eq!(results[0]["ruleId"], "G002");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        16
    );
}

#[test]
fn g003_a_deleted_lesson() {
    let s = repository();
    std::fs::remove_file(s.bank().join("use-exit-codes-0-1-2.md")).unwrap();
    std::fs::rename(
        s.bank().join("keep-triggers-narrow.md"),
        s.path().join("keep-triggers-narrow.md"),
    )
    .unwrap();
    insta::assert_snapshot!(base_findings(&s));
}

#[test]
fn g004_a_rename_to_a_new_slug() {
    let s = repository();
    std::fs::rename(
        s.bank().join("write-files-atomically.md"),
        s.bank().join("write-files-atomically-always.md"),
    )
    .unwrap();
    edit(&s, "write-files-atomically-always.md", |t| {
        t.replace(
            "slug: write-files-atomically\n",
            "slug: write-files-atomically-always\n",
        )
    });
    insta::assert_snapshot!(base_findings(&s));
    // a move to a folder keeps the slug; a rename that supersedes the old slug is a supersession
    std::fs::create_dir(s.bank().join("io")).unwrap();
    std::fs::rename(
        s.bank().join("keep-triggers-narrow.md"),
        s.bank().join("io/keep-triggers-narrow.md"),
    )
    .unwrap();
    edit(&s, "write-files-atomically-always.md", |t| {
        t.replace(
            "confidence: 0.9\n",
            "confidence: 0.9\nsupersedes: [write-files-atomically]\n",
        )
    });
    let lint = run(&s, &["lint", "--base", "main", "--select", "G"]);
    assert_eq!(lint.code, 0, "{lint}");
}

#[test]
fn g005_a_dropped_supersedes_entry() {
    let s = repository();
    edit(&s, "run-clippy-with-deny-warnings-in-ci.md", |t| {
        t.replace(
            "supersedes: [fix-clippy-warnings-before-each-release]\n",
            "",
        )
    });
    insta::assert_snapshot!(base_findings(&s));
}

#[test]
fn g006_a_rewritten_body_and_trigger() {
    let s = repository();
    edit(&s, "write-files-atomically.md", |t| {
        t.replace(
            "when another process may read the file while it is written.",
            "when another process may read it.",
        )
    });
    edit(&s, "keep-triggers-narrow.md", |t| {
        t.replace(
            "tags: [curation, retrieval, triggers]",
            "tags: [curation, triggers]",
        )
    });
    insta::assert_snapshot!(base_findings(&s));
}

/// A rewrite a reviewer accepted is suppressed in the lesson like any finding, and a plain lint
/// does not call that suppression unused.
#[test]
fn g006_is_suppressed_in_the_lesson() {
    let s = repository();
    edit(&s, "write-files-atomically.md", |t| {
        t.replace(
            "when another process may read the file while it is written.",
            "when another process may read the file while it is written.\n\n<!-- lesson-allow G006: a typo fix -->",
        )
    });
    let lint = run(
        &s,
        &["lint", "--base", "main", "--output-format", "concise"],
    );
    assert_eq!(lint.code, 0, "{lint}");
    assert!(!lint.stdout.contains("G006"), "{lint}");
    assert!(!lint.stdout.contains("X001"), "{lint}");
    let plain = run(&s, &["lint", "--output-format", "concise"]);
    assert!(!plain.stdout.contains("X001"), "{plain}");
    // the level comes from lesson.toml like any rule's
    edit(&s, "lesson.toml", |t| {
        t.replace(
            "[lint.rules]\n",
            "[lint.rules]\nlesson-deleted = \"warning\"\n",
        )
    });
    std::fs::remove_file(s.bank().join("use-exit-codes-0-1-2.md")).unwrap();
    let lint = run(&s, &["lint", "--base", "main", "--select", "G"]);
    assert_eq!(lint.code, 0, "{lint}");
    assert!(lint.stdout.contains("warning[G003]"), "{lint}");
}

#[test]
fn the_rules_are_documented_and_bad_revisions_are_named() {
    let s = repository();
    insta::assert_snapshot!(transcript(
        &s,
        &[
            &["rule", "G002"],
            &["lint", "--base", "no-such-branch"],
            &["lint", "--head", "HEAD"],
            &["diff", "no-such-branch"],
        ]
    ));
}

/// A change with something in every section of `lesson diff`.
fn reviewed_change(s: &Sandbox) {
    legitimate_change(s);
    ok(run(
        s,
        &[
            "new",
            "replace-files-atomically-with-a-rename",
            "--title",
            "Replace files through a temp file in the same directory and a rename.",
            "--trigger",
            "A command rewrites a file the user cares about in place.",
            "--tag",
            "atomic-write",
            "--evidence",
            "run:r_79",
        ],
    ));
    ok(run(
        s,
        &[
            "record",
            "cite-evidence-by-id",
            "--contradicted",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r_81",
            "--by",
            "ci@runner-7",
        ],
    ));
    edit(s, "write-files-atomically.md", |t| {
        t.replace(
            "when another process may read the file while it is written.",
            "when another process may read it.",
        )
    });
    // a file outside the bank is no change of it
    std::fs::write(s.path().join("README.md"), "changed\n").unwrap();
}

#[test]
fn diff_in_every_format() {
    let s = repository();
    reviewed_change(&s);
    let out = transcript(
        &s,
        &[
            &["diff", "main"],
            &["diff", "main", "--format", "markdown"],
            &["diff", "main", "--format", "json"],
        ],
    );
    assert!(
        out.contains("replace-files-atomically-with-a-rename  Replace files through a temp file in the same directory and a rename. (nearest existing lesson: write-files-atomically"),
        "{out}"
    );
    insta::assert_snapshot!(out);
    // committed, the same change compared commit to commit reads the same
    commit(&s, "curate");
    let between = run(&s, &["diff", "main", "HEAD", "--format", "json"]);
    let working = run(&s, &["diff", "main", "--format", "json"]);
    let strip = |r: &Run| {
        let mut v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        v["head"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(&between), strip(&working));
    let empty = run(&s, &["diff", "HEAD"]);
    assert_eq!(
        empty.stdout,
        "HEAD → working tree\nno change to the bank's lessons or ledgers\n"
    );
}
