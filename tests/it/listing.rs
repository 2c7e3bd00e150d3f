//! `lesson list` by time, tag, outcome, origin and author, sorted and cut (issue 17): each
//! filter and sort on a bank whose ledgers say when and by whom each lesson was written, the
//! dates from git when the bank is committed, and the MCP `list` tool with the same filters.

use serde_json::{json, Value};

use crate::provenance::{commit_all, git_at};
use crate::sandbox::Sandbox;

/// One lesson of the bank: slug, tags, outcome, evidence (`kind`, `ref`), counts, extra
/// frontmatter, and its ledger's events (`at`, `by`, the event's own fields).
struct Spec {
    slug: &'static str,
    tags: &'static str,
    outcome: &'static str,
    evidence: (&'static str, &'static str),
    counts: (u64, u64),
    extra: &'static str,
    events: &'static [(&'static str, &'static str, &'static str)],
}

const CREATED: &str = r#""event":"created","success_count":0,"failure_count":0"#;
const FOLLOWED: &str = r#""event":"outcome","applied":"followed","run":"success","delta":{"success":1,"failure":0},"evidence":{"kind":"run","ref":"r_later"}"#;
const CONTRADICTED: &str = r#""event":"outcome","applied":"contradicted","run":"success","delta":{"success":0,"failure":1},"evidence":{"kind":"run","ref":"r_later"}"#;

/// The bank (the clock is 2026-11-22T12:00:00Z): dates and authors from the ledgers.
const BANK: &[Spec] = &[
    Spec {
        slug: "retry-with-jitter",
        tags: "[retries, http]",
        outcome: "success",
        evidence: ("run", "r_2026-11-20_a"),
        counts: (1, 0),
        extra: "",
        events: &[
            ("2026-11-20T09:00:00Z", "ana@laptop", CREATED),
            ("2026-11-21T10:00:00Z", "ci@runner-7", FOLLOWED),
        ],
    },
    Spec {
        slug: "cap-retry-attempts",
        tags: "[retries]",
        outcome: "failure",
        evidence: ("run", "r_2026-11-01_b"),
        counts: (0, 1),
        extra: "",
        events: &[
            ("2026-11-01T08:00:00Z", "ci@runner-7", CREATED),
            ("2026-11-22T08:00:00Z", "ana@laptop", CONTRADICTED),
        ],
    },
    Spec {
        slug: "quote-yaml-values",
        tags: "[yaml]",
        outcome: "failure",
        evidence: ("conversation", "c_77"),
        counts: (0, 0),
        extra: "metadata:\n  lesson:\n    origin:\n      source: mcp\n",
        events: &[("2026-11-21T15:00:00Z", "bob@desk", CREATED)],
    },
    Spec {
        slug: "pin-the-toolchain",
        tags: "[ci, retries, http]",
        outcome: "mixed",
        evidence: ("work-item", "pr-12"),
        counts: (0, 0),
        extra: "",
        events: &[("2026-10-01T12:00:00Z", "ana@laptop", CREATED)],
    },
    Spec {
        slug: "prefer-http2",
        tags: "[http]",
        outcome: "failure",
        evidence: ("wiki-page", "wiki/http"),
        counts: (0, 0),
        extra: "",
        // no ledger: no dates, no author
        events: &[],
    },
];

fn lesson_text(s: &Spec) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: Lesson {slug}.\ntrigger:\n  \
         description: When {slug} applies.\n  tags: {tags}\noutcome: {outcome}\nevidence:\n  \
         - kind: {kind}\n    ref: {reference}\nsuccess_count: {s_}\nfailure_count: {f_}\n{extra}---\n\n\
         # Lesson {slug}.\n\n## When this applies\n\nAlways.\n\n## What to do (or avoid)\n\nThis.\n\n## Counter-example\n\nThat.\n",
        slug = s.slug,
        tags = s.tags,
        outcome = s.outcome,
        kind = s.evidence.0,
        reference = s.evidence.1,
        s_ = s.counts.0,
        f_ = s.counts.1,
        extra = s.extra,
    )
}

/// A sandbox holding [`BANK`].
fn bank() -> Sandbox {
    let sb = Sandbox::new();
    let root = sb.bank();
    std::fs::create_dir_all(root.join("_log")).unwrap();
    std::fs::write(root.join("lesson.toml"), "").unwrap();
    for s in BANK {
        std::fs::write(root.join(format!("{}.md", s.slug)), lesson_text(s)).unwrap();
        if !s.events.is_empty() {
            let ledger: String = s
                .events
                .iter()
                .map(|(at, by, fields)| format!("{{\"at\":\"{at}\",{fields},\"by\":\"{by}\"}}\n"))
                .collect();
            std::fs::write(root.join(format!("_log/{}.jsonl", s.slug)), ledger).unwrap();
        }
    }
    assert_eq!(sb.run(&["index"]).code, 0);
    let lint = sb.run(&["lint"]);
    assert_eq!(lint.code, 0, "the test bank is clean: {lint}");
    sb
}

/// The slugs `lesson list ARGS --format json` prints, in order.
fn slugs(sb: &Sandbox, args: &[&str]) -> Vec<String> {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let run = sb.run(&all);
    assert_eq!(run.code, 0, "{run}");
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .map(|l| l["slug"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn each_filter_keeps_the_lessons_it_names() {
    let sb = bank();
    let cases: &[(&[&str], &[&str])] = &[
        // what did we learn this week (the clock is 2026-11-22T12:00:00Z)
        (
            &["--since", "7d"],
            &["quote-yaml-values", "retry-with-jitter"],
        ),
        (
            &["--since", "7d", "--date", "updated"],
            &[
                "cap-retry-attempts",
                "quote-yaml-values",
                "retry-with-jitter",
            ],
        ),
        (
            &["--since", "today", "--date", "updated"],
            &["cap-retry-attempts"],
        ),
        (&["--since", "yesterday"], &["quote-yaml-values"]),
        (&["--since", "36h"], &["quote-yaml-values"]),
        (&["--since", "2026-11-21T15:00:00Z"], &["quote-yaml-values"]),
        // --until includes its whole day, and a timestamp's own second
        (
            &["--until", "2026-11-01"],
            &["cap-retry-attempts", "pin-the-toolchain"],
        ),
        (&["--until", "2026-10-31"], &["pin-the-toolchain"]),
        (&["--until", "2026-10-01T12:00:00Z"], &["pin-the-toolchain"]),
        (
            &["--since", "2026-11-01", "--until", "2026-11-20"],
            &["cap-retry-attempts", "retry-with-jitter"],
        ),
        // tags: any of them, case-insensitive, repeated or comma-separated
        (
            &["--tag", "HTTP"],
            &["pin-the-toolchain", "prefer-http2", "retry-with-jitter"],
        ),
        (
            &["--tag", "yaml,ci"],
            &["pin-the-toolchain", "quote-yaml-values"],
        ),
        (
            &["--tag", "yaml", "--tag", "nothing"],
            &["quote-yaml-values"],
        ),
        // outcomes
        (
            &["--outcome", "failure"],
            &["cap-retry-attempts", "prefer-http2", "quote-yaml-values"],
        ),
        (
            &["--outcome", "success", "--outcome", "mixed"],
            &["pin-the-toolchain", "retry-with-jitter"],
        ),
        // origin: an evidence kind, KIND:REF, a ref (glob), metadata.lesson.origin.source
        (
            &["--origin", "run"],
            &["cap-retry-attempts", "retry-with-jitter"],
        ),
        (&["--origin", "conversation:c_77"], &["quote-yaml-values"]),
        (&["--origin", "run:c_77"], &[]),
        (
            &["--origin", "r_2026-11-*"],
            &["cap-retry-attempts", "retry-with-jitter"],
        ),
        (&["--origin", "pr-12"], &["pin-the-toolchain"]),
        (&["--origin", "mcp"], &["quote-yaml-values"]),
        (
            &["--origin", "wiki-page", "--origin", "mcp"],
            &["prefer-http2", "quote-yaml-values"],
        ),
        // by: who recorded the first ledger event (a later outcome's recorder does not count)
        (
            &["--by", "ana@laptop"],
            &["pin-the-toolchain", "retry-with-jitter"],
        ),
        (&["--by", "ci@*"], &["cap-retry-attempts"]),
        // filters combine
        (
            &["--outcome", "failure", "--since", "30d"],
            &["cap-retry-attempts", "quote-yaml-values"],
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(
            slugs(&sb, args),
            *expected,
            "lesson list {}",
            args.join(" ")
        );
    }
}

#[test]
fn each_sort_orders_and_limit_cuts() {
    let sb = bank();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--sort", "name"],
            &[
                "cap-retry-attempts",
                "pin-the-toolchain",
                "prefer-http2",
                "quote-yaml-values",
                "retry-with-jitter",
            ],
        ),
        // newest first, a lesson without dates last
        (
            &["--sort", "created"],
            &[
                "quote-yaml-values",
                "retry-with-jitter",
                "cap-retry-attempts",
                "pin-the-toolchain",
                "prefer-http2",
            ],
        ),
        (
            &["--sort", "updated"],
            &[
                "cap-retry-attempts",
                "quote-yaml-values",
                "retry-with-jitter",
                "pin-the-toolchain",
                "prefer-http2",
            ],
        ),
        // most overlapping first, then most recently updated
        (
            &["--tag", "retries,http", "--sort", "tags"],
            &[
                "retry-with-jitter",
                "pin-the-toolchain",
                "cap-retry-attempts",
                "prefer-http2",
            ],
        ),
        // recent failures
        (
            &["--outcome", "failure", "--sort", "updated", "--limit", "2"],
            &["cap-retry-attempts", "quote-yaml-values"],
        ),
        (
            &["--sort", "created", "--limit", "1"],
            &["quote-yaml-values"],
        ),
        (&["--limit", "0"], &[]),
    ];
    for (args, expected) in cases {
        assert_eq!(
            slugs(&sb, args),
            *expected,
            "lesson list {}",
            args.join(" ")
        );
    }
}

#[test]
fn list_text_and_json_with_dates_and_tags() {
    let sb = bank();
    let out = sb.transcript(&[
        &["list"],
        &["list", "--since", "7d", "--sort", "created"],
        &[
            "list", "--tag", "retries", "--tag", "http", "--sort", "tags",
        ],
        &[
            "list",
            "--outcome",
            "failure",
            "--sort",
            "updated",
            "--format",
            "json",
        ],
        &["list", "--since", "last week"],
        &["list", "--origin", "run:[r"],
        &["list", "--sort", "size"],
    ]);
    insta::assert_snapshot!(out);
}

#[test]
fn git_dates_come_first_and_the_ledger_fills_in() {
    let sb = bank();
    let top = sb.path().to_path_buf();
    git_at(&top, "2025-06-01T00:00:00Z", &["init", "-q"]);
    commit_all(&top, "2025-06-01T00:00:00Z", "add the bank");
    let text = std::fs::read_to_string(sb.bank().join("prefer-http2.md")).unwrap();
    std::fs::write(
        sb.bank().join("prefer-http2.md"),
        text.replace("Always.", "Always, over HTTP/1."),
    )
    .unwrap();
    commit_all(&top, "2025-07-01T00:00:00Z", "reword prefer-http2");
    // a lesson not committed yet keeps its ledger's dates
    let mut spec = lesson_text(&BANK[0]).replace("retry-with-jitter", "retry-once");
    spec = spec.replace("[retries, http]", "[retries]");
    std::fs::write(sb.bank().join("retry-once.md"), spec).unwrap();
    std::fs::write(
        sb.bank().join("_log/retry-once.jsonl"),
        format!("{{\"at\":\"2026-11-22T11:00:00Z\",{CREATED},\"by\":\"ana@laptop\"}}\n{{\"at\":\"2026-11-22T11:30:00Z\",{FOLLOWED},\"by\":\"ana@laptop\"}}\n"),
    )
    .unwrap();

    let run = sb.run(&["list", "--sort", "updated", "--format", "json"]);
    assert_eq!(run.code, 0, "{run}");
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    let rows: Vec<(&str, &str, &str, &str)> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["slug"].as_str().unwrap(),
                l["created_at"].as_str().unwrap(),
                l["updated_at"].as_str().unwrap(),
                l["dates_from"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows[..2],
        [
            (
                "retry-once",
                "2026-11-22T11:00:00Z",
                "2026-11-22T11:30:00Z",
                "ledger"
            ),
            (
                "prefer-http2",
                "2025-06-01T00:00:00Z",
                "2025-07-01T00:00:00Z",
                "git"
            ),
        ]
    );
    assert!(
        rows[2..]
            .iter()
            .all(|r| r.1 == "2025-06-01T00:00:00Z" && r.3 == "git"),
        "{rows:?}"
    );
    // git's dates are the ones filtered on; the author still comes from the ledger
    assert_eq!(slugs(&sb, &["--since", "30d"]), ["retry-once"]);
    assert_eq!(
        slugs(&sb, &["--since", "2025-06-15", "--date", "updated"]),
        ["prefer-http2", "retry-once"]
    );
    assert_eq!(
        slugs(&sb, &["--by", "ana@laptop"]),
        ["pin-the-toolchain", "retry-once", "retry-with-jitter"]
    );
    insta::assert_snapshot!(sb.run(&["list", "--sort", "created"]).stdout);
}

#[cfg(feature = "mcp")]
#[test]
fn the_mcp_list_takes_the_same_filters() {
    let sb = bank();
    let mut server = crate::mcp::Server::start(&sb.bank());
    let slugs_of = |v: &Value| -> Vec<String> {
        v["lessons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["slug"].as_str().unwrap().to_string())
            .collect()
    };
    let listed = server.ok(
        "list",
        json!({"tags": ["retries", "http"], "sort": "tags", "limit": 3}),
    );
    assert_eq!(
        slugs_of(&listed),
        [
            "retry-with-jitter",
            "pin-the-toolchain",
            "cap-retry-attempts"
        ]
    );
    let listed = server.ok(
        "list",
        json!({"since": "7d", "date": "updated", "outcomes": ["failure"], "origins": ["run", "mcp"], "by": ["ci@*", "bob@desk"]}),
    );
    assert_eq!(
        slugs_of(&listed),
        ["cap-retry-attempts", "quote-yaml-values"]
    );
    assert_eq!(listed["lessons"][0]["dates_from"], "ledger");
    assert_eq!(listed["lessons"][0]["added_by"], "ci@runner-7");
    // the same query on the command line
    let cli = sb.run(&[
        "list",
        "--since",
        "7d",
        "--date",
        "updated",
        "--outcome",
        "failure",
        "--origin",
        "run",
        "--origin",
        "mcp",
        "--by",
        "ci@*",
        "--by",
        "bob@desk",
        "--format",
        "json",
    ]);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    // the same rows (the server names files by absolute path, the CLI as given)
    let without_paths = |v: &Value| {
        let mut v = v.clone();
        for l in v.as_array_mut().unwrap() {
            l.as_object_mut().unwrap().remove("path");
        }
        v
    };
    assert_eq!(without_paths(&listed["lessons"]), without_paths(&cli));
    let (error, is_error) = server.call("list", json!({"since": "last week"}));
    assert!(is_error, "{error}");
    assert!(error.to_string().contains("invalid_request"), "{error}");
    // an unknown sort is refused by the tool's schema
    let answer = server.request(
        "tools/call",
        json!({"name": "list", "arguments": {"sort": "size"}}),
    );
    let refused = answer.get("error").is_some() || answer["result"]["isError"] == true;
    assert!(refused, "{answer}");
}
