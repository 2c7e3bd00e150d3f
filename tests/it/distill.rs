//! `lesson distill` driven by a fake judge (`tests/judge/fake_judge.py`, its behaviour chosen by
//! its arguments) through every branch of the contract: verdicts, new lessons, duplicates,
//! conflicts, each gate failure, a judge that crashes, hangs or prints garbage, and a run
//! distilled twice. Each test snapshots the transcript and the byte diff of the bank, and
//! checks the bank's bytes where nothing may change.

use crate::sandbox::{diff, Run, Sandbox};

const FIXTURE: &str = "tests/fixtures/edits";
const RUN_ID: &str = "r_2026-11-22_d1";

/// A run that retried a rate-limited service: its request matches `retry-with-jitter`.
fn run_json(outcome: &str) -> String {
    format!(
        r#"{{"id": "{RUN_ID}", "outcome": "{outcome}",
  "request": "Retry calls to the shared service after it rate-limits us",
  "tags": ["retries"],
  "trajectory": ["GET /items", "429 Too Many Requests", "retried after 1.3 s", "200 OK"]}}
"#
    )
}

fn sandbox(outcome: &str) -> Sandbox {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    s.write("run.json", &run_json(outcome));
    s
}

/// `lesson distill --run run.json --judge 'python3 "$JUDGE" MODES'`.
fn distill(s: &Sandbox, modes: &str, extra: &[&str]) -> Run {
    let judge = format!("python3 \"$JUDGE\" {modes}");
    let mut args = vec!["distill", "--run", "run.json", "--judge", &judge];
    args.extend(extra);
    s.run(&args)
}

/// Distill with the run's `outcome` and `modes`; the transcript and the bank's diff.
fn case(outcome: &str, modes: &str) -> String {
    let s = sandbox(outcome);
    let before = s.tree();
    let run = distill(&s, modes, &[]);
    assert_eq!(run.code, 0, "{run}");
    let after = s.tree();
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "the bank lints clean afterwards: {lint}");
    format!("{run}--- diff\n{}", diff(&before, &after))
}

#[test]
fn followed_and_succeeded_counts_a_success() {
    insta::assert_snapshot!(case("success", "followed"));
}

#[test]
fn contradicted_and_succeeded_counts_a_failure() {
    insta::assert_snapshot!(case("success", "contradicted"));
}

#[test]
fn followed_and_failed_adds_evidence_only() {
    insta::assert_snapshot!(case("failure", "followed"));
}

#[test]
fn a_new_lesson_starts_at_half_confidence_with_the_runs_counts() {
    // the judge claims confidence 0.97 and 12 successes: kept as claims, not as counts
    insta::assert_snapshot!(case("success", "new"));
}

#[test]
fn a_duplicate_is_merged_into_the_existing_lesson() {
    insta::assert_snapshot!(case("success", "duplicate"));
}

#[test]
fn a_conflict_keeps_both_lessons_and_marks_them() {
    insta::assert_snapshot!(case("success", "conflict"));
}

#[test]
fn search_marks_a_judged_conflict_between_two_successes() {
    // both lessons are `success`: only the declared `conflicts_with` can pair them
    let s = sandbox("success");
    assert_eq!(distill(&s, "conflict", &[]).code, 0);
    let search = s.run(&[
        "search",
        "retry calls after a rate limit",
        "--format",
        "text",
    ]);
    assert_eq!(search.code, 0, "{search}");
    insta::assert_snapshot!(search.to_string());
}

#[test]
fn the_judge_sees_the_run_and_the_matched_lessons() {
    let s = sandbox("success");
    let run = distill(&s, "", &[]);
    assert_eq!(run.code, 0, "{run}");
    let calls = s.judge_calls();
    assert_eq!(calls.len(), 1);
    insta::assert_snapshot!(format!(
        "{run}--- request\n{}",
        serde_json::to_string_pretty(&calls[0]).unwrap()
    ));
}

/// Run `modes` and check that the bank is byte for byte as it was; the transcript.
fn refused(modes: &str, extra: &[&str], code: i32) -> String {
    let s = sandbox("success");
    let before = s.tree();
    let run = distill(&s, modes, extra);
    assert_eq!(run.code, code, "{run}");
    assert!(
        s.tree() == before,
        "the bank changed: {}",
        diff(&before, &s.tree())
    );
    run.to_string()
}

#[test]
fn every_gate_fails_closed() {
    // each beside a valid verdict or candidate: one failure and nothing at all is written
    for (mode, valid) in [
        ("schema", "followed"),
        ("uncited", "followed"),
        ("too-many", "followed"),
        ("secret", "followed"),
        ("stranger", "followed"),
        ("secret-note", "new"),
    ] {
        let out = refused(&format!("{valid} {mode}"), &[], 1);
        insta::assert_snapshot!(format!("gate-{mode}"), out);
    }
}

#[test]
fn a_judge_that_crashes_hangs_or_prints_garbage_changes_nothing() {
    insta::assert_snapshot!("judge-crash", refused("crash", &[], 2));
    insta::assert_snapshot!("judge-garbage", refused("garbage", &[], 2));
    insta::assert_snapshot!("judge-hang", refused("hang", &["--timeout", "1"], 2));
}

#[test]
fn a_run_distilled_twice_changes_nothing_the_second_time() {
    let s = sandbox("success");
    let first = distill(&s, "followed new duplicate conflict", &[]);
    assert_eq!(first.code, 0, "{first}");
    let after_first = s.tree();
    let second = distill(&s, "followed new duplicate conflict", &[]);
    assert_eq!(second.code, 0, "{second}");
    assert!(s.tree() == after_first, "{}", diff(&after_first, &s.tree()));
    assert_eq!(s.judge_calls().len(), 1, "the judge is not asked again");
    insta::assert_snapshot!(format!("{first}{second}"));
}

#[test]
fn the_judge_runs_without_the_lock_and_its_answer_merges_with_what_happened_meanwhile() {
    // the judge itself records an outcome on the lesson it judges: with the lock held during
    // the judge's call, that record would wait for it and the judge would time out
    let s = sandbox("success");
    let before = s.tree();
    let run = distill(&s, "record-meanwhile followed", &["--timeout", "60"]);
    assert_eq!(run.code, 0, "{run}");
    insta::assert_snapshot!(format!("{run}--- diff\n{}", diff(&before, &s.tree())));
}

#[test]
fn a_bad_run_file_is_refused_before_the_judge_is_called() {
    let s = sandbox("success");
    let before = s.tree();
    let mut out = String::new();
    for (name, text) in [
        ("no-id.json", r#"{"outcome": "success"}"#),
        ("bad-outcome.json", r#"{"id": "r1", "outcome": "partial"}"#),
        ("not-json.json", "id: r1\n"),
    ] {
        s.write(name, text);
        let judge = "python3 \"$JUDGE\" new";
        out.push_str(
            &s.run(&["distill", "--run", name, "--judge", judge])
                .to_string(),
        );
    }
    assert!(s.tree() == before);
    assert!(s.judge_calls().is_empty());
    insta::assert_snapshot!(out);
}

#[test]
fn a_run_recorded_by_hand_is_not_recorded_twice() {
    // `lesson record` cited the run before: the same verdict is a retry, another one is refused
    // (one run is one observation) and reported, and the rest of the answer still applies
    let mut out = String::new();
    for (by_hand, verdict) in [
        ("--followed", "followed"),
        ("--contradicted", "followed new"),
    ] {
        let s = sandbox("success");
        let evidence = format!("run:{RUN_ID}");
        let record = s.run(&[
            "record",
            "retry-with-jitter",
            by_hand,
            "--run-outcome",
            "success",
            "--evidence",
            &evidence,
        ]);
        assert_eq!(record.code, 0, "{record}");
        let before = s.tree();
        let run = distill(&s, verdict, &[]);
        assert_eq!(run.code, 0, "{run}");
        out.push_str(&format!("{run}--- diff\n{}", diff(&before, &s.tree())));
    }
    insta::assert_snapshot!(out);
}

// --- [distill] gates (issue 17) -----------------------------------------------------------

/// A sandbox whose `lesson.toml` ends with `[distill]` and `keys`.
fn gated(outcome: &str, keys: &str) -> Sandbox {
    let s = sandbox(outcome);
    let path = s.bank().join("lesson.toml");
    let mut toml = std::fs::read_to_string(&path).unwrap();
    toml.push_str(&format!("\n[distill]\n{keys}\n"));
    std::fs::write(&path, toml).unwrap();
    // the index records the configuration's bytes nowhere: it stays current
    s
}

#[test]
fn a_run_shorter_than_min_steps_is_skipped_cleanly() {
    // the run's trajectory has 4 steps
    let s = gated("success", "min-steps = 5");
    let before = s.tree();
    let text = distill(&s, "followed new", &[]);
    let json = distill(&s, "followed new", &["--format", "json"]);
    assert_eq!((text.code, json.code), (0, 0), "{text}{json}");
    assert!(s.tree() == before, "{}", diff(&before, &s.tree()));
    assert!(s.judge_calls().is_empty(), "the judge is not called");
    insta::assert_snapshot!(format!("{text}{json}"));

    // at the threshold the run is distilled
    let s = gated("success", "min-steps = 4");
    let run = distill(&s, "followed", &[]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(s.judge_calls().len(), 1);
    assert!(run.stdout.contains("counts"), "{run}");

    // a trajectory that is an object with `steps`, and a run without one
    for (trajectory, skipped) in [
        (r#""trajectory": {"steps": [1, 2, 3, 4, 5]}"#, false),
        (r#""trajectory": "one long string""#, true),
        (r#""notes": "no trajectory""#, true),
    ] {
        let s = gated("success", "min-steps = 5");
        s.write(
            "run.json",
            &format!(r#"{{"id": "{RUN_ID}", "outcome": "success", "request": "Retry calls to the shared service", {trajectory}}}"#),
        );
        let run = distill(&s, "followed", &[]);
        assert_eq!(run.code, 0, "{run}");
        assert_eq!(
            run.stdout.contains("skipped"),
            skipped,
            "{trajectory}: {run}"
        );
        assert_eq!(s.judge_calls().is_empty(), skipped, "{trajectory}");
    }
}

#[test]
fn min_confidence_drops_low_rated_candidates_and_stores_half() {
    // `new` is rated 0.97, `unsure` 0.3, `duplicate` not at all (AIP-11's 0.5)
    let s = gated("success", "min-confidence = 0.6");
    let before = s.tree();
    let run = distill(&s, "followed new unsure duplicate", &[]);
    assert_eq!(run.code, 0, "{run}");
    let lesson = std::fs::read_to_string(s.bank().join("cap-retry-attempts.md")).unwrap();
    assert!(
        lesson.contains("confidence: 0.5\n"),
        "the claim is a gate, never a value: {lesson}"
    );
    assert!(!s.bank().join("maybe-retry-twice.md").exists());
    assert!(!s.bank().join("jitter-the-retries.md").exists());
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "{lint}");
    let json = gated("success", "min-confidence = 0.6");
    let json = distill(&json, "unsure", &["--format", "json"]);
    assert_eq!(json.code, 0, "{json}");
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        value["result"]["dropped"][0]["candidate"], "judge:candidates[0]",
        "{value}"
    );
    insta::assert_snapshot!(format!("{run}--- diff\n{}", diff(&before, &s.tree())));
}

#[test]
fn redact_replaces_secrets_in_bodies_and_notes_and_admits_the_rest() {
    let s = gated("success", r#"secrets = "redact""#);
    let before = s.tree();
    let run = distill(&s, "secret-note secret secret-body", &[]);
    assert_eq!(run.code, 0, "{run}");
    let after = s.tree();
    for (path, bytes) in &after {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains("ghp_"), "{} keeps the token", path.display());
    }
    let body = std::fs::read_to_string(s.bank().join("rotate-leaked-tokens.md")).unwrap();
    assert!(
        body.contains("The run printed [redacted: GitHub personal access token]; revoke it"),
        "{body}"
    );
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "{lint}");
    insta::assert_snapshot!(format!("{run}--- diff\n{}", diff(&before, &after)));
}

#[test]
fn redact_still_refuses_a_secret_it_does_not_redact_and_refuse_is_the_default() {
    for keys in [r#"secrets = "redact""#, r#"secrets = "refuse""#, ""] {
        for modes in ["secret-title", "followed secret"] {
            if keys.contains("redact") && modes.contains("followed") {
                continue;
            }
            let s = gated("success", keys);
            let before = s.tree();
            let run = distill(&s, modes, &[]);
            assert_eq!(run.code, 1, "[distill] {keys}, {modes}: {run}");
            assert!(run.stderr.contains("D005"), "{run}");
            assert!(s.tree() == before, "{}", diff(&before, &s.tree()));
        }
    }
    let s = gated("success", r#"secrets = "ignore""#);
    let run = distill(&s, "followed", &[]);
    assert_eq!(
        run.code, 2,
        "an unknown policy is a configuration error: {run}"
    );
}
