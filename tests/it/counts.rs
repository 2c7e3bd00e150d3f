//! Counts no ledger backs (issue 14, item 5): a hand edit of `success_count` fails lint before
//! `lesson record` can take it into a new ledger, and `lesson review` lists the counts a ledger
//! did take from a file (`imported`).

use crate::sandbox::Sandbox;

const SLUG: &str = "use-exit-codes-0-1-2";

/// The bundled bank with `success_count: 0` raised to 7 by hand in one lesson.
fn hand_edited(without_ledgers: bool) -> Sandbox {
    let s = Sandbox::with_bank("lessons");
    if without_ledgers {
        std::fs::remove_dir_all(s.bank().join("_log")).unwrap();
    }
    let path = s.bank().join(format!("{SLUG}.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\nsuccess_count: 0\n"));
    std::fs::write(
        &path,
        text.replace("\nsuccess_count: 0\n", "\nsuccess_count: 7\n"),
    )
    .unwrap();
    s
}

#[test]
fn the_bundled_bank_ships_a_ledger_for_every_lesson() {
    let s = Sandbox::with_bank("lessons");
    for entry in std::fs::read_dir(s.bank()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(slug) = name.strip_suffix(".md").filter(|n| !n.starts_with('_')) {
            assert!(
                s.bank().join(format!("_log/{slug}.jsonl")).is_file(),
                "lessons/{name} has no ledger"
            );
        }
    }
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "{lint}");
}

#[test]
fn a_hand_edited_count_without_a_ledger_fails_lint_before_record_imports_it() {
    let s = hand_edited(true);
    let lint = s.run(&["lint", "--output-format", "concise"]);
    assert_eq!(lint.code, 1, "{lint}");
    assert!(
        lint.stdout.contains(&format!(
            "L004 counts are 7/0 (success/failure) but it has no ledger (`_log/{SLUG}.jsonl`)"
        )),
        "{lint}"
    );
    // the finding is the only one, and only the unsafe fix resets it
    insta::assert_snapshot!(s.transcript(&[
        &["lint", "--output-format", "concise"],
        &["lint", "--unsafe-fixes", "--diff"],
    ]));

    // recorded anyway: the hand-edited 7 becomes the new ledger's `imported` event, which
    // `lesson review` puts in front of a human
    let record = s.run(&[
        "record",
        SLUG,
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_1",
    ]);
    assert_eq!(record.code, 0, "{record}");
    let ledger = std::fs::read_to_string(s.bank().join(format!("_log/{SLUG}.jsonl"))).unwrap();
    assert!(ledger.contains(r#""event":"imported","by":"tester","success_count":7"#));
    let review = s.run(&["review"]);
    assert!(
        review.stdout.contains(&format!(
            "lessons/{SLUG}.md: imported-counts: counts 7/0 entered its ledger from the file (`imported`, _log/{SLUG}.jsonl line 1, 2026-11-22 by tester), not from recorded outcomes: check them against real runs\n"
        )),
        "{review}"
    );
    let json = s.run(&["review", "--format", "json"]);
    let findings: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let imported: Vec<&serde_json::Value> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["reason"] == "imported-counts")
        .collect();
    assert_eq!(imported.len(), 1, "{json}");
    assert_eq!(
        imported[0]["imported"],
        serde_json::json!({
            "ledger": format!("_log/{SLUG}.jsonl"),
            "line": 1,
            "at": "2026-11-22T12:00:00Z",
            "by": "tester",
            "success_count": 7,
            "failure_count": 0
        })
    );
}

#[test]
fn a_hand_edited_count_in_the_bundled_bank_fails_lint_against_its_ledger() {
    let s = hand_edited(false);
    let lint = s.run(&["lint", "--output-format", "concise"]);
    assert_eq!(lint.code, 1, "{lint}");
    assert!(lint.stdout.contains("L001"), "{lint}");
    assert!(!lint.stdout.contains("L004"), "{lint}");
}

#[test]
fn counts_of_zero_and_counts_a_ledger_backs_need_nothing() {
    let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
    let lint = s.run(&["lint", "--output-format", "concise", "--select", "L004"]);
    // hand-written.md: 2/0 and no ledger; every other lesson's ledger records its counts
    assert_eq!(lint.code, 1, "{lint}");
    assert_eq!(
        lint.stdout.lines().filter(|l| l.contains("L004")).count(),
        1,
        "{lint}"
    );
    assert!(lint.stdout.contains("lessons/hand-written.md:"), "{lint}");
}

/// A lesson without count keys whose frontmatter ends with its evidence list: `record` appends
/// the item to the list and the count keys after it (it refused the lesson once: both
/// insertions fell at the list's end, the keys first).
#[test]
fn record_on_a_lesson_without_counts_that_ends_with_evidence() {
    let s = Sandbox::with_bank("lessons");
    let path = s.bank().join("no-counts.md");
    std::fs::write(
        &path,
        "---\nschema: learning/v1\nslug: no-counts\ntitle: Check the page id before loading more.\n\
         trigger:\n  description: The agent pages through a list with a Load More button.\n\
         outcome: success\nevidence:\n  - kind: run\n    ref: r0\n---\n\n\
         # Check the page id before loading more.\n\n## When this applies\n\nPaging.\n",
    )
    .unwrap();
    let out = s.run(&[
        "record",
        "no-counts",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r1",
    ]);
    assert_eq!(out.code, 0, "{out}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(
            "evidence:\n  - kind: run\n    ref: r0\n  - kind: run\n    ref: r1\n\
             success_count: 1\nfailure_count: 0\n---\n"
        ),
        "{text}"
    );
}

/// A `lesson record` stopped between its ledger append and its lesson write leaves counts
/// behind the ledger by the outcomes it appended: plain `--fix` completes them. A count raised
/// by hand above what the ledger backs needs `--unsafe-fixes`.
#[test]
fn counts_behind_the_ledger_are_a_safe_fix_counts_above_it_are_not() {
    let s = Sandbox::with_bank("lessons");
    let path = s.bank().join(format!("{SLUG}.md"));
    let before = std::fs::read_to_string(&path).unwrap();
    for run in ["r1", "r2"] {
        let evidence = format!("run:{run}");
        let out = s.run(&[
            "record",
            SLUG,
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            &evidence,
        ]);
        assert_eq!(out.code, 0, "{out}");
    }
    let recorded = std::fs::read_to_string(&path).unwrap();
    // the lesson as it was before both records: its ledger holds two outcomes more
    std::fs::write(&path, &before).unwrap();
    let lint = s.run(&["lint", "--output-format", "concise", "--select", "L001"]);
    assert_eq!(lint.code, 1, "{lint}");
    let fix = s.run(&["lint", "--fix", "--select", "L001"]);
    assert_eq!(fix.code, 0, "{fix}");
    let fixed = std::fs::read_to_string(&path).unwrap();
    let counts = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("success_count:") || l.starts_with("failure_count:"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(counts(&fixed), counts(&recorded));
    assert_eq!(s.run(&["lint", "--select", "L001"]).code, 0);

    // above the ledger: the plain fix leaves it, the unsafe one resets it
    std::fs::write(
        &path,
        fixed.replace("\nsuccess_count: 2\n", "\nsuccess_count: 9\n"),
    )
    .unwrap();
    let fix = s.run(&["lint", "--fix", "--select", "L001"]);
    assert_eq!(fix.code, 1, "{fix}");
    let fix = s.run(&["lint", "--fix", "--unsafe-fixes", "--select", "L001"]);
    assert_eq!(fix.code, 0, "{fix}");
    assert_eq!(
        counts(&std::fs::read_to_string(&path).unwrap()),
        counts(&recorded)
    );
}
