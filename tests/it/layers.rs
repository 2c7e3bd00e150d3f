//! Layered banks (`[banks] include`): a front bank (`lessons/`) that reads a team's bank
//! (`team/`) beside its own lessons, never writes it, and promotes lessons into it.

use std::path::Path;

use crate::sandbox::{diff, Sandbox, Tree};

/// What the tests ask: the team's lesson matches it.
const REQUEST: &str = "the shared service answers 429 too many requests";

/// A front bank `lessons/` including `team/`, with one lesson in each.
fn layered() -> Sandbox {
    let s = Sandbox::new();
    for bank in ["lessons", "team"] {
        let init = s.run(&["init", bank]);
        assert_eq!(init.code, 0, "{init}");
    }
    include(&s, "lessons", &["../team"]);
    new(
        &s,
        "team",
        "retry-rate-limited-calls",
        "Retry rate-limited calls with exponential backoff",
        "A shared service answers 429 Too Many Requests",
        "retries",
    );
    new(
        &s,
        "lessons",
        "pin-the-rust-toolchain",
        "Pin the Rust toolchain in rust-toolchain.toml",
        "CI builds break the day a new stable Rust ships",
        "ci",
    );
    s
}

fn include(s: &Sandbox, bank: &str, banks: &[&str]) {
    let path = s.path().join(bank).join("lesson.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let list: Vec<String> = banks.iter().map(|b| format!("{b:?}")).collect();
    text.push_str(&format!("\n[banks]\ninclude = [{}]\n", list.join(", ")));
    std::fs::write(path, text).unwrap();
}

fn new(s: &Sandbox, bank: &str, slug: &str, title: &str, trigger: &str, tag: &str) {
    let run = s.run(&[
        "--dir",
        bank,
        "new",
        slug,
        "--title",
        title,
        "--trigger",
        trigger,
        "--tag",
        tag,
        "--evidence",
        "run:r_1",
    ]);
    assert_eq!(run.code, 0, "{run}");
}

/// Every file under `dir` of the sandbox but `.lesson/`, with its bytes.
fn tree(s: &Sandbox, dir: &str) -> Tree {
    let mut tree = Tree::new();
    for entry in walkdir::WalkDir::new(s.path().join(dir))
        .into_iter()
        .filter_entry(|e| e.file_name() != ".lesson")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        let rel = entry.path().strip_prefix(s.path()).unwrap();
        tree.insert(rel.to_path_buf(), std::fs::read(entry.path()).unwrap());
    }
    tree
}

/// `lesson search REQUEST --format json [ARGS]` in the front bank.
fn search(s: &Sandbox, request: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["search", request, "--format", "json"];
    all.extend_from_slice(args);
    json(&s.run(&all))
}

fn json(run: &crate::sandbox::Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "{run}");
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn a_hit_from_an_included_bank_names_its_bank() {
    let s = layered();
    let team_state = s.path().join("team/.lesson");
    let before = std::fs::read_dir(&team_state).map_or(0, |d| d.count());
    let found = search(&s, REQUEST, &[]);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits[0]["slug"], "retry-rate-limited-calls");
    assert_eq!(hits[0]["bank"], "../team");
    assert_eq!(
        hits[0]["path"],
        "lessons/../team/retry-rate-limited-calls.md"
    );
    assert_eq!(found["lessons"], 2);
    // the included bank's index is built in memory: nothing is written into its `.lesson/`
    let after = std::fs::read_dir(&team_state).map_or(0, |d| d.count());
    assert_eq!(before, after);
    assert!(!team_state.join("retrieve.idx").exists());
    insta::assert_snapshot!(s.transcript(&[
        &[
            "search",
            "429 too many requests from the shared service",
            "--format",
            "text"
        ],
        &["search", "429 too many requests from the shared service"],
        &["list"],
        &["show", "retry-rate-limited-calls"],
        &["dedup"],
    ]));
    insta::assert_snapshot!("list_json", s.run(&["list", "--format", "json"]).stdout);
}

#[test]
fn a_front_lesson_that_supersedes_an_included_one_hides_it() {
    let s = layered();
    new(
        &s,
        "lessons",
        "retry-with-the-retry-after-header",
        "Retry after the delay the Retry-After header names",
        "A shared service answers 429 Too Many Requests with a Retry-After header",
        "retries",
    );
    let path = s.bank().join("retry-with-the-retry-after-header.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen(
        "evidence:",
        "supersedes:\n  - retry-rate-limited-calls\nevidence:",
        1,
    );
    std::fs::write(&path, text).unwrap();
    let found = search(&s, REQUEST, &[]);
    let slugs: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["retry-with-the-retry-after-header"]);
    let listed = json(&s.run(&["list", "--format", "json", "--status", "superseded"]));
    assert_eq!(listed[0]["slug"], "retry-rate-limited-calls");
    assert_eq!(listed[0]["bank"], "../team");
    assert_eq!(
        listed[0]["superseded_by"][0],
        "retry-with-the-retry-after-header"
    );
    let why = s.run(&[
        "search",
        "the shared service answers 429 too many requests",
        "--explain",
        "retry-rate-limited-calls",
    ]);
    assert_eq!(
        why.stdout, "retry-rate-limited-calls: superseded by retry-with-the-retry-after-header\n",
        "{why}"
    );
    insta::assert_snapshot!(s.run(&["list"]).stdout);
}

#[test]
fn hits_of_several_banks_are_merged_by_score() {
    let s = layered();
    new(
        &s,
        "lessons",
        "back-off-when-the-service-answers-429",
        "Back off when the shared service answers 429",
        "Calls to the shared service fail with 429 Too Many Requests",
        "retries",
    );
    let found = search(&s, REQUEST, &[]);
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    let scores: Vec<f64> = hits
        .iter()
        .map(|h| h["score"]["score"].as_f64().unwrap())
        .collect();
    assert!(scores[0] >= scores[1], "{scores:?}");
    let banks: Vec<&str> = hits.iter().map(|h| h["bank"].as_str().unwrap()).collect();
    assert!(
        banks.contains(&".") && banks.contains(&"../team"),
        "{banks:?}"
    );
    // K is the whole answer's, not each bank's
    let one = search(&s, REQUEST, &["-k", "1"]);
    assert_eq!(one["hits"].as_array().unwrap().len(), 1);
    assert_eq!(one["hits"][0]["slug"], hits[0]["slug"]);
}

#[test]
fn writes_go_to_the_front_bank_never_into_an_included_one() {
    let s = layered();
    let team = tree(&s, "team");
    let refused = s.run(&[
        "record",
        "retry-rate-limited-calls",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_2",
    ]);
    assert_eq!(refused.code, 2, "{refused}");
    insta::assert_snapshot!(refused.stderr);
    assert_eq!(diff(&team, &tree(&s, "team")), "(no file changed)\n");
    // a new lesson goes to the front bank
    new(
        &s,
        "lessons",
        "cache-the-cargo-registry",
        "Cache the cargo registry between CI runs",
        "CI spends minutes downloading crates on every run",
        "ci",
    );
    assert!(s.bank().join("cache-the-cargo-registry.md").is_file());
    assert_eq!(diff(&team, &tree(&s, "team")), "(no file changed)\n");
    // the write door refuses a path in a bank nested below the one it writes
    let nested = s.bank().join("_team");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(nested.join("lesson.toml"), "").unwrap();
    let err = lesson::edit::write_atomic(&s.bank(), &nested.join("x.md"), b"x").unwrap_err();
    assert!(
        matches!(err, lesson::edit::EditError::OtherBank { .. }),
        "{err}"
    );
    assert!(!nested.join("x.md").exists());
}

#[test]
fn promote_goes_through_the_other_banks_gate() {
    let s = layered();
    // a near-duplicate of the team's lesson is refused, and nothing is written anywhere
    new(
        &s,
        "lessons",
        "retry-rate-limited-calls-with-backoff",
        "Retry rate-limited calls with exponential backoff and jitter",
        "A shared service answers 429 Too Many Requests",
        "retries",
    );
    let (front, team) = (tree(&s, "lessons"), tree(&s, "team"));
    let refused = s.run(&[
        "promote",
        "retry-rate-limited-calls-with-backoff",
        "--to",
        "../team",
    ]);
    assert_eq!(refused.code, 2, "{refused}");
    assert!(refused.stderr.contains("reads like it"), "{refused}");
    assert_eq!(diff(&front, &tree(&s, "lessons")), "(no file changed)\n");
    assert_eq!(diff(&team, &tree(&s, "team")), "(no file changed)\n");
    // a distinct lesson is admitted: the team's ledger starts with an `imported` event that
    // cites it, this bank keeps it in `_archive/`
    let promoted = s.run(&[
        "promote",
        "pin-the-rust-toolchain",
        "--to",
        "../team",
        "--format",
        "json",
    ]);
    assert_eq!(promoted.code, 0, "{promoted}");
    let team_log =
        std::fs::read_to_string(s.path().join("team/_log/pin-the-rust-toolchain.jsonl")).unwrap();
    assert!(
        team_log.starts_with("{\"at\":\"2026-11-22T12:00:00Z\",\"event\":\"imported\""),
        "{team_log}"
    );
    assert!(team_log.contains(
        "\"promoted_from\":{\"bank\":\"../lessons\",\"slug\":\"pin-the-rust-toolchain\"}"
    ));
    insta::assert_snapshot!(format!(
        "{}\n{}\n{}",
        promoted.stdout,
        diff(&front, &tree(&s, "lessons")),
        diff(&team, &tree(&s, "team"))
    ));
    // the lesson is now the team's, found through the front bank
    let found = json(&s.run(&["show", "pin-the-rust-toolchain", "--format", "json"]));
    assert_eq!(found["bank"], "../team");
    assert_eq!(found["status"], "active");
    assert_eq!(
        found["trigger"]["description"],
        "CI builds break the day a new stable Rust ships"
    );
}

#[test]
fn a_missing_include_is_an_error_at_its_entry() {
    let s = layered();
    include(&s, "team", &["../nowhere"]);
    for args in [
        &["search", "anything"][..],
        &["list"],
        &["show", "x"],
        &["review"],
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 2, "{run}");
        assert!(run.stderr.contains("team/lesson.toml:"), "{run}");
        assert!(
            run.stderr
                .contains(":12: [banks] include: no bank at `../nowhere`"),
            "{run}"
        );
    }
    insta::assert_snapshot!(s.run(&["list"]).stderr);
}

#[test]
fn an_include_loop_is_refused() {
    let s = layered();
    include(&s, "team", &["../lessons"]);
    let run = s.run(&["search", "429 too many requests"]);
    assert_eq!(run.code, 2, "{run}");
    insta::assert_snapshot!(run.stderr);
    assert!(!Path::new(&s.path().join("team/.lesson/retrieve.idx")).exists());
}
