//! Retrieval accounting (`lesson search --log RUN`, `lesson record --run RUN`, the figures in
//! `show`, `list` and `review`, `[retrieve] usage-weight`, `_index.md`'s variables) and the
//! retention policy (`[retention]`, `lesson archive --policy`).

use serde_json::Value;

use crate::sandbox::{diff, Run, Sandbox};

/// A request both retry lessons match.
const REQUEST: &str = "retry a call that keeps failing";

fn ok(s: &Sandbox, args: &[&str]) -> Run {
    let run = s.run(args);
    assert_eq!(run.code, 0, "lesson {args:?}: {run}");
    run
}

/// A new bank with three lessons: two about retries, one about something else.
fn bank() -> Sandbox {
    let s = Sandbox::new();
    ok(&s, &["init", "lessons"]);
    for (slug, title, trigger) in [
        (
            "cap-retry-attempts",
            "Cap retry attempts at five.",
            "A client retries a call that keeps failing.",
        ),
        (
            "retry-with-jitter",
            "Retry with exponential backoff and jitter.",
            "A client retries a call that keeps failing with 429.",
        ),
        (
            "pin-the-toolchain",
            "Pin the Rust toolchain in CI.",
            "A CI job builds a Rust crate.",
        ),
    ] {
        new_lesson(&s, slug, title, trigger, "retries");
    }
    s
}

/// `lesson new SLUG --title TITLE --trigger TRIGGER --tag TAG --evidence run:r0`.
fn new_lesson(s: &Sandbox, slug: &str, title: &str, trigger: &str, tag: &str) {
    let args = [
        "new",
        slug,
        "--title",
        title,
        "--trigger",
        trigger,
        "--tag",
        tag,
        "--evidence",
        "run:r0",
    ];
    ok(s, &args);
}

/// `lesson record SLUG APPLIED --run-outcome OUTCOME --run RUN` (the evidence is `run:RUN`).
fn record(s: &Sandbox, slug: &str, applied: &str, outcome: &str, run: &str) {
    ok(
        s,
        &[
            "record",
            slug,
            applied,
            "--run-outcome",
            outcome,
            "--run",
            run,
        ],
    );
}

fn shown_log(s: &Sandbox) -> String {
    std::fs::read_to_string(s.bank().join("_log/_shown.jsonl")).unwrap_or_default()
}

fn list_json(s: &Sandbox, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["list", "--format", "json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(s, &args).stdout).unwrap()
}

/// `(slug, shown, followed, helped, utility)` of each lesson, in the listing's order.
fn figures(list: &[Value]) -> Vec<(String, u64, u64, u64, Option<f64>)> {
    list.iter()
        .map(|l| {
            (
                l["slug"].as_str().unwrap().to_string(),
                l["shown"].as_u64().unwrap(),
                l["followed"].as_u64().unwrap(),
                l["helped"].as_u64().unwrap(),
                l["utility"].as_f64(),
            )
        })
        .collect()
}

#[test]
fn a_logged_search_appends_one_line_whatever_k_and_rewrites_no_lesson() {
    let s = bank();
    let before = s.tree();
    ok(&s, &["search", REQUEST, "--log", "r1"]);
    ok(&s, &["search", REQUEST, "--log", "r2", "-k", "1"]);
    ok(
        &s,
        &[
            "search", REQUEST, "--log", "r2", "-k", "50", "--format", "json",
        ],
    );
    let log = shown_log(&s);
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(
        log.lines().all(|l| l.contains("\"event\":\"shown\"")),
        "{log}"
    );
    // only the log changed: no lesson file, ledger or `_index.md`
    insta::assert_snapshot!(diff(&before, &s.tree()));
    // a search that shows nothing logs nothing; an unusable run id is refused before searching
    ok(&s, &["search", "zebra quantum violin", "--log", "r3"]);
    let bad = s.run(&["search", REQUEST, "--log", " "]);
    assert_eq!(bad.code, 2, "{bad}");
    assert!(bad.stderr.contains("run id"), "{bad}");
    let explain = s.run(&[
        "search",
        REQUEST,
        "--log",
        "r4",
        "--explain",
        "cap-retry-attempts",
    ]);
    assert_eq!(
        explain.code, 2,
        "--log cannot be combined with --explain: {explain}"
    );
    assert_eq!(shown_log(&s), log, "nothing more was logged");
    // the log is no lesson's ledger: the bank stays clean and `_index.md` current
    ok(&s, &["lint"]);
    ok(&s, &["index", "--check"]);
}

#[test]
fn logged_searches_and_recorded_outcomes_give_shown_followed_and_utility() {
    let s = bank();
    ok(&s, &["search", REQUEST, "--log", "r1"]);
    ok(&s, &["search", REQUEST, "--log", "r2"]);
    ok(&s, &["search", REQUEST, "--log", "r2"]); // the same run again: shown once
    ok(&s, &["search", REQUEST, "--log", "r3", "-k", "1"]);
    // r1 followed cap-retry-attempts and succeeded: helped
    record(&s, "cap-retry-attempts", "--followed", "success", "r1");
    // r2 followed it and failed (evidence elsewhere, linked by --run): followed, not helped
    ok(
        &s,
        &[
            "record",
            "cap-retry-attempts",
            "--followed",
            "--run-outcome",
            "failure",
            "--evidence",
            "work-item:pr-12",
            "--run",
            "r2",
        ],
    );
    // r2 contradicted retry-with-jitter: shown, not followed
    record(&s, "retry-with-jitter", "--contradicted", "success", "r2");
    // a run no logged search showed it to does not count
    record(&s, "retry-with-jitter", "--followed", "success", "r9");
    let list = list_json(&s, &[]);
    assert_eq!(
        figures(&list),
        [
            ("cap-retry-attempts".into(), 3, 2, 1, Some(0.3333)),
            ("pin-the-toolchain".into(), 0, 0, 0, None),
            ("retry-with-jitter".into(), 2, 0, 0, Some(0.0)),
        ]
    );
    let by_shown: Vec<String> = figures(&list_json(&s, &["--sort", "shown"]))
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(
        by_shown,
        [
            "cap-retry-attempts",
            "retry-with-jitter",
            "pin-the-toolchain"
        ]
    );
    let by_utility: Vec<String> = figures(&list_json(&s, &["--sort", "utility"]))
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert_eq!(
        by_utility,
        [
            "cap-retry-attempts",
            "retry-with-jitter",
            "pin-the-toolchain"
        ]
    );
    let out = s.transcript(&[
        &["list"],
        &["list", "--sort", "utility", "--status", "active"],
        &["show", "cap-retry-attempts"],
    ]);
    let show_json: Value =
        serde_json::from_str(&ok(&s, &["show", "cap-retry-attempts", "--format", "json"]).stdout)
            .unwrap();
    let ledger = std::fs::read_to_string(s.bank().join("_log/cap-retry-attempts.jsonl")).unwrap();
    insta::assert_snapshot!(format!(
        "{out}--- show --format json (figures)\n{}\n--- _log/_shown.jsonl\n{}--- _log/cap-retry-attempts.jsonl\n{ledger}",
        serde_json::to_string_pretty(&serde_json::json!({
            "shown": show_json["shown"],
            "last_shown": show_json["last_shown"],
            "followed": show_json["followed"],
            "helped": show_json["helped"],
            "utility": show_json["utility"],
        }))
        .unwrap(),
        shown_log(&s)
    ));
}

#[test]
fn review_lists_lessons_shown_but_never_followed_and_lessons_not_shown() {
    let s = bank();
    let config = s.bank().join("lesson.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[review]\n",
        "[review]\nshown-never-followed = 2\nunshown-days = 30\n",
    );
    std::fs::write(&config, text).unwrap();
    let before = s.run(&["review"]);
    assert!(
        !before.stdout.contains("unshown"),
        "no log, no figures: {before}"
    );
    ok(&s, &["search", REQUEST, "--log", "r1"]);
    ok(&s, &["search", REQUEST, "--log", "r2"]);
    record(&s, "cap-retry-attempts", "--followed", "success", "r2");
    let now = s.run(&["review"]);
    assert!(
        now.stdout.contains(
            "retry-with-jitter.md: shown-never-followed: shown to 2 runs, followed in none"
        ),
        "{now}"
    );
    assert!(!now.stdout.contains("unshown"), "{now}");
    let later = [("LESSON_NOW", "2027-01-15T00:00:00Z")];
    let out = format!(
        "{}{}",
        s.run_with_env(&["review"], &later),
        s.run_with_env(&["review", "--format", "json"], &later)
    );
    insta::assert_snapshot!(out);
}

/// Four lessons for the policy: one expired long ago, one contradicted three times (one of
/// them pinned), one failure-dominant for a long time but recent, one shown and never helping.
#[test]
fn the_policy_archives_exactly_what_its_rules_name_and_never_a_pinned_lesson() {
    let s = bank();
    new_lesson(
        &s,
        "old-advice",
        "Use the old API.",
        "A client calls the old API.",
        "api",
    );
    new_lesson(
        &s,
        "pinned-advice",
        "Keep the audit trail.",
        "A job deletes audit records.",
        "audit",
    );
    // pinned: metadata.lesson.pinned: true, added by hand
    let pinned = s.bank().join("pinned-advice.md");
    let text = std::fs::read_to_string(&pinned).unwrap().replacen(
        "outcome:",
        "metadata:\n  lesson:\n    pinned: true\noutcome:",
        1,
    );
    std::fs::write(&pinned, text).unwrap();
    for slug in ["old-advice", "pinned-advice"] {
        for run in ["c1", "c2", "c3"] {
            record(&s, slug, "--contradicted", "success", run);
        }
    }
    // pin-the-toolchain: expired on 2026-10-01
    let expiring = s.bank().join("pin-the-toolchain.md");
    let text = std::fs::read_to_string(&expiring).unwrap().replacen(
        "outcome:",
        "expires_at: 2026-10-01T00:00:00Z\noutcome:",
        1,
    );
    std::fs::write(&expiring, text).unwrap();
    // retry-with-jitter: shown to two runs, helped in none
    ok(&s, &["search", REQUEST, "--log", "r1"]);
    ok(&s, &["search", REQUEST, "--log", "r2"]);
    record(&s, "cap-retry-attempts", "--followed", "success", "r1");
    ok(&s, &["index"]);
    let config = s.bank().join("lesson.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    let start = text.find("\n[retention]").unwrap();
    text.truncate(start);
    text.push_str(
        "\n[retention]\narchive-expired-after-days = 30\narchive-contradicted-at = 3\narchive-below-utility = 0.25\nmin-shown = 2\n",
    );
    std::fs::write(&config, &text).unwrap();

    let before = s.tree();
    let dry = s.transcript(&[&["archive", "--policy", "--dry-run"], &["review"]]);
    assert_eq!(s.tree(), before, "a dry run and a review write nothing");
    let out = s.transcript(&[
        &["archive", "--policy", "--format", "json"],
        &["archive", "--policy"],
        &["list"],
        &["lint"],
    ]);
    assert!(s.bank().join("pinned-advice.md").is_file(), "pinned stays");
    for gone in ["old-advice", "pin-the-toolchain", "retry-with-jitter"] {
        assert!(
            s.bank().join(format!("_archive/{gone}.md")).is_file(),
            "{gone}"
        );
    }
    assert!(s.bank().join("cap-retry-attempts.md").is_file());
    let ledger = std::fs::read_to_string(s.bank().join("_log/old-advice.jsonl")).unwrap();
    assert!(
        ledger
            .lines()
            .last()
            .unwrap()
            .ends_with("\"to\":\"_archive/old-advice.md\",\"rule\":\"archive-contradicted-at\"}"),
        "{ledger}"
    );
    insta::assert_snapshot!(format!("{dry}{out}"));

    // review-contradicted-at: a lesson that still succeeds more than it fails is flagged, kept
    text.push_str("review-contradicted-at = 1\n");
    std::fs::write(&config, &text).unwrap();
    for run in ["s1", "s2"] {
        record(&s, "cap-retry-attempts", "--followed", "success", run);
    }
    record(&s, "cap-retry-attempts", "--contradicted", "success", "c9");
    let review = ok(&s, &["review"]).stdout;
    assert!(
        review.contains(
            "cap-retry-attempts.md: retention: flagged for review (review-contradicted-at)"
        ),
        "{review}"
    );
    let dry = ok(&s, &["archive", "--policy", "--dry-run"]);
    assert!(dry.stdout.contains("nothing to archive"), "{dry}");
}

#[test]
fn usage_weight_is_off_by_default_and_ranks_by_utility_when_set() {
    let s = bank();
    // two runs shown both retry lessons; only retry-with-jitter helped
    for run in ["r1", "r2"] {
        ok(&s, &["search", REQUEST, "--log", run]);
        record(&s, "retry-with-jitter", "--followed", "success", run);
        record(&s, "cap-retry-attempts", "--followed", "failure", run);
    }
    let hits = |s: &Sandbox| -> Vec<(String, Option<f64>)> {
        let out: Value =
            serde_json::from_str(&ok(s, &["search", REQUEST, "--format", "json"]).stdout).unwrap();
        out["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["slug"].as_str().unwrap().to_string(),
                    h["score"]["usage"].as_f64(),
                )
            })
            .collect()
    };
    let plain = hits(&s);
    assert!(plain.iter().all(|(_, u)| u.is_none()), "{plain:?}");
    let config = s.bank().join("lesson.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[retrieve]\nusage-weight = 1.0\n")).unwrap();
    let weighted = hits(&s);
    // helped 2 of 2 shown: (2 + 1) / (2 + 2); helped 0 of 2: 1 / 4
    let factor = |slug: &str| weighted.iter().find(|(s, _)| s == slug).unwrap().1;
    assert_eq!(factor("retry-with-jitter"), Some(0.75));
    assert_eq!(factor("cap-retry-attempts"), Some(0.25));
    assert_eq!(weighted[0].0, "retry-with-jitter", "{weighted:?}");
    let explain = ok(&s, &["search", REQUEST, "--explain", "cap-retry-attempts"]).stdout;
    assert!(explain.contains("× usage 0.25"), "{explain}");
}

#[test]
fn index_template_variables_are_filled_only_for_a_template_that_names_them() {
    let s = bank();
    ok(&s, &["search", REQUEST, "--log", "r1"]);
    record(&s, "cap-retry-attempts", "--followed", "success", "r1");
    // the built-in template: a logged search leaves `_index.md` current
    ok(&s, &["search", REQUEST, "--log", "r2"]);
    ok(&s, &["index", "--check"]);
    std::fs::create_dir_all(s.bank().join("templates")).unwrap();
    std::fs::write(
        s.bank().join("templates/_index.md.j2"),
        "{% for l in lessons %}{{ l.slug }} shown={{ l.shown }} followed={{ l.followed }} helped={{ l.helped }} utility={{ l.utility }} last={{ l.last_shown }}\n{% endfor %}",
    )
    .unwrap();
    ok(&s, &["index"]);
    let index = std::fs::read_to_string(s.bank().join("_index.md")).unwrap();
    insta::assert_snapshot!(index);
}

#[test]
fn record_with_run_needs_no_evidence_and_a_bad_run_id_writes_nothing() {
    let s = bank();
    let before = s.tree();
    let bad = s.run(&[
        "record",
        "cap-retry-attempts",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r1",
        "--run",
        "two\nlines",
    ]);
    assert_eq!(bad.code, 2, "{bad}");
    assert_eq!(s.tree(), before);
    let neither = s.run(&[
        "record",
        "cap-retry-attempts",
        "--followed",
        "--run-outcome",
        "success",
    ]);
    assert_eq!(neither.code, 2, "{neither}");
    record(&s, "cap-retry-attempts", "--followed", "success", "r1");
    let text = std::fs::read_to_string(s.bank().join("cap-retry-attempts.md")).unwrap();
    assert!(text.contains("ref: r1"), "the evidence is run:r1: {text}");
}
