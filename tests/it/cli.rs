//! The commands that read and write a bank, run as a user would: the `lesson` binary in a
//! temp directory holding `lessons/` (copied from a fixture, or created by `lesson init`).
//! Each test snapshots what the command printed, its exit code and, for commands that write,
//! every file of the bank afterwards (in/out style).

use crate::sandbox::{Sandbox, NOW};

const SMALL: &str = "tests/fixtures/banks/small";

// --- init ---------------------------------------------------------------------------------

#[test]
fn init_creates_a_bank() {
    let s = Sandbox::new();
    let run = s.run(&["init"]);
    insta::assert_snapshot!(format!("{run}\n{}", s.listing()));
    assert_eq!(s.run(&["lint"]).code, 0, "a new bank lints clean");
}

#[test]
fn init_on_an_existing_bank_adds_what_is_missing_and_changes_nothing_else() {
    let s = Sandbox::new();
    assert_eq!(s.run(&["init", "lessons"]).code, 0);
    std::fs::write(s.bank().join("lesson.toml"), "# mine\n").unwrap();
    // an older bank: the union rule only, and an ignore file of its own
    std::fs::write(
        s.bank().join(".gitattributes"),
        "_log/*.jsonl merge=union\n",
    )
    .unwrap();
    std::fs::write(s.bank().join(".gitignore"), "target/").unwrap();
    let run = s.run(&["init", "lessons"]);
    insta::assert_snapshot!(format!("{run}\n{}", s.listing()));
    let before = s.listing();
    let again = s.run(&["init", "lessons"]);
    assert_eq!(again.code, 0);
    assert_eq!(again.stdout, "lessons is up to date as a lesson bank\n");
    assert_eq!(s.listing(), before);
}

// --- new ----------------------------------------------------------------------------------

#[test]
fn new_writes_the_lesson_and_updates_the_index() {
    let s = Sandbox::new();
    assert_eq!(s.run(&["init"]).code, 0);
    let run = s.run(&[
        "new",
        "verify-page-id",
        "--title",
        "Verify the page id: before clicking *Load More* twice",
        "--trigger",
        "A paginated list with a Load More button # in a browser",
        "--tag",
        "pagination",
        "--tag",
        "browser",
        "--target",
        "role=reviewer",
        "--target",
        "skill=rust-*",
        "--outcome",
        "failure",
        "--evidence",
        "run:r_2026-04-21_a3f2e9:clicked twice; the page id had not advanced",
        "--evidence",
        "wiki-page:https://wiki.test/pagination",
        "--confidence",
        "0.6",
    ]);
    insta::assert_snapshot!(format!("{run}\n{}", s.listing()));
    let check = s.run(&["index", "--check"]);
    assert_eq!((check.code, check.stdout.as_str()), (0, ""));
    assert_eq!(s.run(&["lint"]).code, 0);
}

#[test]
fn new_dry_run_prints_and_writes_nothing() {
    let s = Sandbox::with_bank(SMALL);
    let before = s.listing();
    let run = s.run(&[
        "new",
        "cite-evidence-refs",
        "--title",
        "Cite evidence by id, not in prose",
        "--trigger",
        "Writing a lesson",
        "--evidence",
        "work-item:pr-118",
        "--dry-run",
    ]);
    assert_eq!(s.listing(), before);
    assert!(
        !s.bank().join(".lesson").exists(),
        "a dry run takes no lock"
    );
    insta::assert_snapshot!(run.to_string());
}

#[test]
fn new_refuses_bad_slugs_existing_lessons_and_missing_evidence() {
    let s = Sandbox::with_bank(SMALL);
    let before = s.listing();
    let args = ["--title", "T", "--trigger", "d", "--evidence", "run:r1"];
    let new = |slug: &'static str| -> Vec<&str> {
        let mut v = vec!["new", slug];
        v.extend(args);
        v
    };
    let commands: Vec<Vec<&str>> = vec![
        new("../x"),
        new("A"),
        new("x/y"),
        new("Keep-CI-Green"),
        new("check-exit-codes"),
        new("lint-in-ci"),
        new("notes"),
        vec!["new", "fine-slug", "--title", "T", "--trigger", "d"],
        vec![
            "new",
            "fine-slug",
            "--title",
            "T",
            "--trigger",
            "d",
            "--evidence",
            "log:x",
        ],
        vec![
            "new",
            "fine-slug",
            "--title",
            "T",
            "--trigger",
            "d",
            "--evidence",
            "run:r1",
            "--target",
            "team=x",
        ],
        vec![
            "--dir",
            "nowhere",
            "new",
            "fine-slug",
            "--title",
            "T",
            "--trigger",
            "d",
            "--evidence",
            "run:r",
        ],
    ];
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    let out = s.transcript(&commands);
    assert_eq!(s.listing(), before, "a refused `new` writes nothing");
    assert!(!s.tmp.path().join("x.md").exists());
    assert!(!s.tmp.path().join("nowhere").exists());
    insta::assert_snapshot!(out);
}

#[test]
fn new_refuses_a_lesson_with_lint_errors_and_prints_them() {
    let s = Sandbox::new();
    assert_eq!(s.run(&["init"]).code, 0);
    // an override that forgets to quote: `title: a: b` is not YAML
    let template = BUILTIN_LESSON_TEMPLATE.replace("{{ title | yaml }}", "{{ title }}");
    std::fs::create_dir(s.bank().join("templates")).unwrap();
    std::fs::write(s.bank().join("templates/lesson.md.j2"), template).unwrap();
    let before = s.listing();
    let run = s.run(&[
        "new",
        "ab",
        "--title",
        "Note: this",
        "--trigger",
        "d",
        "--evidence",
        "run:r",
    ]);
    assert_eq!(s.listing(), before);
    insta::assert_snapshot!(run.to_string());
}

const BUILTIN_LESSON_TEMPLATE: &str = include_str!("../../templates/lesson.md.j2");

#[test]
fn new_round_trips_hostile_text() {
    let s = Sandbox::new();
    assert_eq!(s.run(&["init"]).code, 0);
    let cases = [
        ("colon", "Note: quote this"),
        ("star", "*.md files are lessons"),
        ("hash", "Issue #12 and a # comment"),
        ("quotes", "'single' and \"double\""),
        ("bool", "yes"),
        ("number", "0.5"),
        ("pipe", "a | b > c"),
        ("colon-end", "Ends with a colon:"),
        ("unicode", "Évite les « guillemets »\u{a0}!"),
        ("backslash", "C:\\path\\to"),
    ];
    for (slug, title) in cases {
        let slug = format!("title-{slug}");
        let run = s.run(&[
            "new",
            &slug,
            "--title",
            title,
            "--trigger",
            title,
            "--tag",
            "x",
            "--evidence",
            &format!("run:r_{slug}:{title}"),
        ]);
        assert_eq!(run.code, 0, "{title:?}: {run}");
        let show = s.run(&["show", &slug, "--format", "json"]);
        let json: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        assert_eq!(json["title"], title);
        assert_eq!(json["trigger"]["description"], title);
        assert_eq!(json["evidence"][0]["ref"], format!("r_{slug}"));
        assert_eq!(json["evidence"][0]["note"], title);
    }
    assert_eq!(s.run(&["index", "--check"]).code, 0);
}

// --- index --------------------------------------------------------------------------------

#[test]
fn index_check_reports_a_stale_index_and_index_fixes_it() {
    let s = Sandbox::with_bank(SMALL);
    let out = s.transcript(&[
        &["index", "--check"],
        &["index"],
        &["index"],
        &["index", "--check"],
    ]);
    insta::assert_snapshot!(out);
    let stdout = s.run(&["index", "--stdout"]).stdout;
    assert_eq!(
        stdout,
        std::fs::read_to_string(s.bank().join("_index.md")).unwrap()
    );
}

#[test]
fn index_check_shows_a_hand_edit() {
    let s = Sandbox::with_bank(SMALL);
    assert_eq!(s.run(&["index"]).code, 0);
    let path = s.bank().join("_index.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("| 3 | 1 |", "| 4 | 1 |")).unwrap();
    insta::assert_snapshot!(s.run(&["index", "--check"]).to_string());
}

// --- list and show ------------------------------------------------------------------------

#[test]
fn list_text_and_json() {
    let s = Sandbox::with_bank(SMALL);
    let out = s.transcript(&[
        &["list"],
        &["list", "--status", "superseded"],
        &["list", "--status", "active", "--format", "json"],
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn show_text_json_and_unknown() {
    let s = Sandbox::with_bank(SMALL);
    let out = s.transcript(&[
        &["show", "check-exit-codes"],
        &["show", "lint-in-ci", "--format", "json"],
        &["show", "check-exit-code"],
        &["show", "nothing-like-it"],
        &["show", "notes", "--format", "json"],
    ]);
    insta::assert_snapshot!(out);
}

const FIXABLE: &str = "tests/fixtures/banks/fixable";

#[test]
fn lint_diff_then_fix_converges_and_keeps_unfixable_errors() {
    let s = Sandbox::with_bank(FIXABLE);
    let before = s.listing();
    let out = s.transcript(&[&["lint", "--output-format", "concise"], &["lint", "--diff"]]);
    assert_eq!(s.listing(), before, "--diff must not write");
    let fixed = s.transcript(&[
        &["lint", "--fix", "--output-format", "concise"],
        &["lint", "--fix", "--output-format", "concise"],
        &["lint", "--diff"],
    ]);
    insta::assert_snapshot!(format!(
        "{out}{fixed}=== the bank after --fix\n{}",
        s.listing()
    ));
}

#[test]
fn lint_reports_only_on_the_paths_given() {
    let s = Sandbox::with_bank(FIXABLE);
    let run = s.run(&[
        "lint",
        "--output-format",
        "concise",
        "lessons/keep-vendor-fields-namespaced.md",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.lines().all(
            |l| l.starts_with("lessons/keep-vendor-fields-namespaced.md:")
                || l.starts_with("4 files checked")
        ),
        "{run}"
    );
    let missing = s.run(&["lint", "lessons/nope.md"]);
    assert_eq!(missing.code, 2, "{missing}");
}

#[test]
fn lint_honours_suppressions_and_levels() {
    let s = Sandbox::with_bank(FIXABLE);
    let run = s.run(&[
        "lint",
        "--output-format",
        "concise",
        "lessons/allowed-broad-trigger.md",
    ]);
    // T001 and D002 are suppressed in that file, and both suppressions are used: nothing remains
    // but the bank-wide stale index
    assert!(!run.stdout.contains("allowed-broad-trigger.md"), "{run}");
    std::fs::write(
        s.bank().join("lesson.toml"),
        "[lint.rules]\nunknown-field = \"warning\"\nindex-stale = \"off\"\nS005 = \"off\"\n",
    )
    .unwrap();
    let run = s.run(&[
        "lint",
        "--output-format",
        "concise",
        "--select",
        "S002,S005,B008",
    ]);
    insta::assert_snapshot!(run.to_string());
}

#[test]
fn rule_and_config_print_docs_and_the_resolved_configuration() {
    let s = Sandbox::with_bank(FIXABLE);
    let out = s.transcript(&[
        &["rule", "S017"],
        &["rule", "expires-at-without-offset"],
        &["rule", "S999"],
        &["config"],
    ]);
    insta::assert_snapshot!(out);
    let table = s.run(&["rule"]);
    for rule in lesson::lint::RULES {
        assert!(
            table.stdout.contains(rule.code),
            "`lesson rule` lacks {}",
            rule.code
        );
    }
    let all = s.run(&["rule", "--all"]);
    assert_eq!(
        all.stdout.matches("## What it does").count(),
        lesson::lint::RULES.len()
    );
}

// --- ledger: record, review, supersede, archive -----------------------------------------------

const LEDGER: &str = "tests/fixtures/banks/ledger";

/// The ledger fixture bank; `hand-written.md` has no ledger, so its age is its file's: fixed at
/// 2026-01-01.
fn ledger_bank() -> Sandbox {
    let s = Sandbox::with_bank(LEDGER);
    let new_year = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_225_600);
    std::fs::File::options()
        .write(true)
        .open(s.bank().join("hand-written.md"))
        .unwrap()
        .set_modified(new_year)
        .unwrap();
    s
}

#[test]
fn review_text_and_json() {
    let s = ledger_bank();
    let before = s.listing();
    let out = s.transcript(&[&["review"], &["review", "--format", "json"]]);
    assert_eq!(s.listing(), before, "review writes nothing");
    insta::assert_snapshot!(out);
}

#[test]
fn record_updates_counts_evidence_ledger_and_index() {
    let s = ledger_bank();
    let out = s.transcript(&[
        &[
            "record",
            "flaky-retries",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r_2026-11-22_a",
            "--by",
            "ci@runner-7",
        ],
        // a retry of the same observation appends nothing
        &[
            "record",
            "flaky-retries",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r_2026-11-22_a",
        ],
        // a lesson without a ledger: its counts become the `imported` event
        &[
            "record",
            "hand-written",
            "--contradicted",
            "--run-outcome",
            "success",
            "--evidence",
            "conversation:c_9:wrote one from a hunch; it held up",
        ],
        &[
            "record",
            "hand-written",
            "--followed",
            "--run-outcome",
            "failure",
            "--evidence",
            "run:r_2026-11-22_b",
        ],
        &["index", "--check"],
        &["lint", "--output-format", "concise"],
    ]);
    insta::assert_snapshot!(format!(
        "{out}{}",
        s.files(&[
            "flaky-retries.md",
            "hand-written.md",
            "_log/flaky-retries.jsonl",
            "_log/hand-written.jsonl",
        ])
    ));
}

#[test]
fn record_refusals_change_nothing() {
    let s = ledger_bank();
    let before = s.listing();
    let ok = ["--run-outcome", "success", "--evidence", "run:r_new"];
    let with = |prefix: &[&'static str], rest: &[&'static str]| -> Vec<&'static str> {
        prefix.iter().chain(rest).copied().collect()
    };
    let commands: Vec<Vec<&str>> = vec![
        with(&["record", "flaky-retry", "--followed"], &ok),
        with(
            &["record", "flaky-retries", "--followed", "--contradicted"],
            &ok,
        ),
        with(&["record", "flaky-retries"], &ok),
        vec![
            "record",
            "flaky-retries",
            "--followed",
            "--run-outcome",
            "maybe",
            "--evidence",
            "run:r1",
        ],
        vec![
            "record",
            "flaky-retries",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "log:r1",
        ],
        vec![
            "record",
            "flaky-retries",
            "--followed",
            "--run-outcome",
            "success",
        ],
        // r2 is recorded as followed with a successful run: one run is one observation
        vec![
            "record",
            "keep-ci-green",
            "--contradicted",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r2",
        ],
        with(&["record", "flaky-retries", "--followed", "--by", " "], &ok),
        with(
            &["--dir", "nowhere", "record", "flaky-retries", "--followed"],
            &ok,
        ),
    ];
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    let out = s.transcript(&commands);
    assert_eq!(s.listing(), before, "a refused `record` writes nothing");
    assert!(!s.tmp.path().join("nowhere").exists());
    insta::assert_snapshot!(out);
}

#[test]
fn supersede_writes_both_sides_once_and_refuses_what_it_cannot_do() {
    let s = ledger_bank();
    let out = s.transcript(&[
        &[
            "supersede",
            "flaky-retries",
            "hand-written",
            "--by",
            "run-clippy-in-ci",
        ],
        &[
            "supersede",
            "flaky-retries",
            "hand-written",
            "--by",
            "run-clippy-in-ci",
        ],
        &["supersede", "run-clippy-in-ci", "--by", "flaky-retries"],
        &[
            "supersede",
            "pin-the-toolchain",
            "--by",
            "pin-the-toolchain",
        ],
        &["supersede", "nope", "--by", "pin-the-toolchain"],
        &["supersede", "pin-the-toolchain", "--by", "nope"],
        &["supersede", "--by", "pin-the-toolchain"],
        &["index", "--check"],
        &["lint", "--output-format", "concise"],
    ]);
    insta::assert_snapshot!(format!(
        "{out}{}",
        s.files(&[
            "run-clippy-in-ci.md",
            "_log/flaky-retries.jsonl",
            "_log/hand-written.jsonl",
            "_log/run-clippy-in-ci.jsonl",
        ])
    ));
}

#[test]
fn archive_dry_run_then_archive() {
    let s = ledger_bank();
    let before = s.listing();
    let dry = s.transcript(&[&["archive", "--expired", "--dry-run"]]);
    assert_eq!(s.listing(), before, "a dry run writes nothing");
    let out = s.transcript(&[
        &["archive", "--expired"],
        &["archive", "--expired"],
        &["archive", "run-clippy-in-ci"],
        &["archive"],
        &["archive", "nope"],
        &[
            "record",
            "keep-ci-green",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r9",
        ],
        &["list"],
        &["index", "--check"],
    ]);
    insta::assert_snapshot!(format!(
        "{dry}{out}{}",
        s.files(&[
            "_archive",
            "_log/keep-ci-green.jsonl",
            "_log/run-clippy-in-ci.jsonl",
        ])
    ));
}

// --- search -------------------------------------------------------------------------------

const RETRIEVE: &str = "tests/fixtures/banks/retrieve";

/// A sandbox with the retrieval bank, every lesson last modified 30 days before NOW (its file,
/// and its ledger: a `created` event with its counts, recency's input outside git), so that
/// recency is the same on every run (0.5^(30/365) with the default half-life).
fn search_sandbox() -> Sandbox {
    let s = Sandbox::with_bank(RETRIEVE);
    let now: jiff::Timestamp = NOW.parse().unwrap();
    let month_ago = std::time::UNIX_EPOCH
        + std::time::Duration::from_secs((now.as_second() - 30 * 86_400) as u64);
    for entry in walkdir::WalkDir::new(s.bank()) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let file = std::fs::File::options()
                .write(true)
                .open(entry.path())
                .unwrap();
            file.set_modified(month_ago).unwrap();
        }
    }
    let at = jiff::Timestamp::from_second(now.as_second() - 30 * 86_400).unwrap();
    std::fs::create_dir_all(s.bank().join("_log")).unwrap();
    for entry in std::fs::read_dir(s.bank()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        let (Some(slug), Some("md")) = (field("slug:"), path.extension().and_then(|e| e.to_str()))
        else {
            continue;
        };
        let count = |name: &str| field(name).unwrap_or_else(|| "0".to_string());
        std::fs::write(
            s.bank().join(format!("_log/{slug}.jsonl")),
            format!(
                "{{\"at\":\"{at}\",\"event\":\"created\",\"by\":\"t\",\"success_count\":{},\"failure_count\":{}}}\n",
                count("success_count:"),
                count("failure_count:")
            ),
        )
        .unwrap();
    }
    s
}

#[test]
fn search_prompt_json_and_text_mark_cautions_and_conflicts() {
    let s = search_sandbox();
    insta::assert_snapshot!(s.transcript(&[
        &["search", "squash the feature branch", "--tag", "git"],
        &[
            "search",
            "squash the feature branch",
            "--tag",
            "git",
            "--format",
            "json",
        ],
        &["search", "the network test is flaky on CI"],
        &[
            "search",
            "the network test is flaky on CI",
            "--format",
            "text"
        ],
    ]));
}

#[test]
fn search_gates_targets_and_tags() {
    let s = search_sandbox();
    let text = ["--format", "text"];
    let run = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["search"];
        all.extend(args);
        all.extend(text);
        all.iter().map(|a| a.to_string()).collect()
    };
    let commands = [
        // targets: a lesson for reviewers needs the caller's role
        run(&["review the unsafe block in this pull request"]),
        run(&[
            "review the unsafe block in this pull request",
            "--role",
            "reviewer",
        ]),
        run(&[
            "review the unsafe block in this pull request",
            "--role",
            "author",
        ]),
        // a target with two keys needs both: operator claude-* and skill rust
        run(&["propose a rust patch", "--operator", "claude-code"]),
        run(&[
            "propose a rust patch",
            "--operator",
            "claude-code",
            "--skill",
            "rust",
        ]),
        run(&[
            "propose a rust patch",
            "--operator",
            "gpt-agent",
            "--skill",
            "rust",
        ]),
        // tags: "merge" is a known tag, so a tagged lesson must share it; --tag adds one
        run(&["squash merge"]),
        run(&["squash merge", "--tag", "release"]),
    ];
    let commands: Vec<Vec<&str>> = commands
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    insta::assert_snapshot!(s.transcript(&commands));
}

#[test]
fn search_skips_superseded_and_expired_lessons() {
    let s = search_sandbox();
    insta::assert_snapshot!(s.transcript(&[
        &[
            "search",
            "cache the target directory in CI",
            "--format",
            "text"
        ],
        &["search", "nightly toolchain in CI", "--format", "text"],
        &[
            "search",
            "nightly toolchain in CI",
            "--format",
            "text",
            "--include-expired",
        ],
    ]));
}

#[test]
fn search_budget_cuts_between_whole_lessons() {
    let s = search_sandbox();
    let request = "cache the cargo registry for a slow rust CI build";
    insta::assert_snapshot!(s.transcript(&[
        &["search", request, "--format", "text", "--budget", "1000"],
        &["search", request, "--format", "text", "--budget", "90"],
        &["search", request, "--budget", "90"],
        &["search", request, "--budget", "10"],
        &["search", request, "-k", "1"],
    ]));
}

/// Give the sandbox's bank its own prompt template.
fn prompt_template(s: &Sandbox, text: &str) {
    std::fs::create_dir_all(s.bank().join("templates")).unwrap();
    std::fs::write(s.bank().join("templates/prompt.md.j2"), text).unwrap();
}

/// The block holds the most hits that fit, all of them tried first: with a bank template
/// whose block is longest for a single lesson (a preamble only then), every hit is shown when
/// they all fit, though one alone would not.
#[test]
fn search_budget_shows_every_hit_when_all_fit_whatever_one_alone_takes() {
    let s = search_sandbox();
    prompt_template(
        &s,
        "{% if lessons | length == 1 %}{{ 'x' * 2000 }}{% endif %}\
         {% for l in lessons %}- {{ l.slug }}\n{% endfor %}",
    );
    let request = "cache the cargo registry for a slow rust CI build";
    let out = s.run(&[
        "search", request, "--format", "prompt", "-k", "2", "--budget", "100",
    ]);
    assert_eq!(out.code, 0, "{out}");
    let lines: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), 2, "{out}");
    // one hit alone is over the budget
    let one = s.run(&[
        "search", request, "--format", "prompt", "-k", "1", "--budget", "100",
    ]);
    assert!(one.stdout.trim().is_empty(), "{one}");
}

#[test]
fn search_finds_cjk_typos_and_identifiers() {
    let s = search_sandbox();
    insta::assert_snapshot!(s.transcript(&[
        &["search", "数据库连接", "--format", "text"],
        &["search", "每个请求都新建连接太慢了", "--format", "text"],
        &["search", "sqaush the featrue brnach", "--format", "text"],
        &["search", "squash the featrue brnach", "--format", "text"],
        &["search", "parse_config_file", "--format", "text"],
        &["search", "ParseConfigFile", "--format", "text"],
        &[
            "search",
            "how do I bake a chocolate cake",
            "--format",
            "text"
        ],
    ]));
}

#[test]
fn search_reads_stdin_and_explains_why_a_lesson_is_in_or_out() {
    let s = search_sandbox();
    let q = "squash the feature branch";
    let run = s.run_with_stdin(
        &["search", "-", "--format", "text"],
        format!("{q}\n").as_bytes(),
    );
    let mut out = format!("$ echo '{q}' | lesson search - --format text\n{run}\n");
    out += &s.transcript(&[
        &["search", q, "--explain", "squash-merge-feature-branches"],
        &[
            "search",
            q,
            "-k",
            "1",
            "--explain",
            "never-squash-release-branches",
        ],
        &[
            "search",
            q,
            "--budget",
            "20",
            "--explain",
            "squash-merge-feature-branches",
        ],
        &[
            "search",
            q,
            "--tag",
            "release",
            "--explain",
            "squash-merge-feature-branches",
        ],
        &["search", q, "--explain", "review-unsafe-blocks"],
        &["search", q, "--explain", "cache-target-dir-in-ci"],
        &["search", q, "--explain", "pin-the-nightly-toolchain"],
        &["search", q, "--explain", "reuse-database-connection-pool"],
        &["search", q, "--explain", "no-such-lesson"],
        &[
            "search",
            q,
            "--explain",
            "squash-merge-feature-branches",
            "--format",
            "json",
        ],
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn search_without_text_shows_the_best_lessons_that_pass_the_gates() {
    let s = search_sandbox();
    insta::assert_snapshot!(s.transcript(&[
        &["search"],
        &["search", "", "--format", "text"],
        &["search", "", "--tag", "ci", "--format", "text"],
        &["search", "--role", "reviewer", "-k", "2", "--format", "text"],
    ]));
}

#[test]
fn a_recorded_contradiction_that_names_the_other_lesson_marks_a_conflict() {
    let s = search_sandbox();
    let q = ["search", "squash the feature branch", "--tag", "git"];
    let record =
        |slug: &'static str, applied: &'static str, run: &'static str, other: &'static str| {
            vec![
                "record",
                slug,
                applied,
                "--run-outcome",
                "success",
                "--evidence",
                run,
                "--conflicts-with",
                other,
            ]
        };
    let a = record(
        "never-squash-release-branches",
        "--contradicted",
        "run:r_77",
        "squash-merge-feature-branches",
    );
    let again = record(
        "never-squash-release-branches",
        "--contradicted",
        "run:r_77",
        "squash-merge-feature-branches",
    );
    let followed = record(
        "squash-merge-feature-branches",
        "--followed",
        "run:r_78",
        "never-squash-release-branches",
    );
    let unknown = record(
        "squash-merge-feature-branches",
        "--contradicted",
        "run:r_79",
        "no-such-lesson",
    );
    let itself = record(
        "squash-merge-feature-branches",
        "--contradicted",
        "run:r_80",
        "squash-merge-feature-branches",
    );
    let mut out = s.transcript(&[&q, &a, &again, &q, &followed, &unknown, &itself]);
    out += &s.files(&["_log/never-squash-release-branches.jsonl"]);
    insta::assert_snapshot!(out);
}

#[test]
fn search_overrides_the_prompt_template_and_refuses_a_missing_bank() {
    let s = search_sandbox();
    prompt_template(
        &s,
        "{{ label }}\n{% for l in lessons %}* {{ l.slug }} ({{ l.c }})\n{% endfor %}",
    );
    insta::assert_snapshot!(s.transcript(&[
        &["search", "squash the feature branch", "--tag", "git"],
        &["--dir", "nowhere", "search", "x"],
    ]));
}
