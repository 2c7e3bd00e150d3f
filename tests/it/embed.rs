//! The embedding API as the README shows it: `examples/embed.rs` is the README's example,
//! verbatim, and it runs here against a bank made with `define_lesson`.

use std::path::Path;

use serde_json::json;

#[allow(dead_code)]
#[path = "../../examples/embed.rs"]
mod example;

fn stamp() -> lesson::curate::Stamp {
    lesson::curate::Stamp {
        at: "2026-11-22T12:00:00Z".parse().unwrap(),
        by: "test".into(),
    }
}

fn research_lesson() -> serde_json::Value {
    json!({
        "slug": "cite-the-source-url",
        "title": "Cite the source URL of every quoted figure.",
        "trigger": {"description": "Summarising a paper or a web page that quotes figures.", "tags": ["research", "paper"]},
        "outcome": "failure",
        "evidence": [{"kind": "run", "ref": "run-distilled"}],
        "body": "# Cite the source URL of every quoted figure.\n\n## When this applies\n\nSummaries.\n\n## What to do (or avoid)\n\nPut the URL next to the figure.\n\n## Counter-example\n\nA figure without a source was challenged.\n",
    })
}

/// The README's ```rust block under "Embedding the library" is `examples/embed.rs`, byte for
/// byte, so the code a reader copies is the code this module runs.
#[test]
fn readme_example_is_the_example_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("examples/embed.rs")).unwrap();
    let section = readme
        .split_once("## Embedding the library")
        .expect("README has the section")
        .1;
    let block = section
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .expect("the section has a rust block")
        .0;
    assert_eq!(block, example);
}

/// Open once, search before each turn, record after: the lesson shown is recorded as followed
/// in a successful run (ledger and counts), and a turn it does not apply to records nothing.
#[test]
fn the_readme_loop_searches_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path();
    lesson::curate::init::init(bank, stamp().at).unwrap();
    let admitted = lesson::define_lesson(bank, research_lesson(), &stamp()).unwrap();
    assert!(matches!(
        admitted,
        lesson::curate::add::Admitted::Created { .. }
    ));

    let prompts = std::cell::RefCell::new(Vec::new());
    example::serve(
        bank,
        &[
            "summarise the attached research paper",
            "bake a chocolate cake",
        ],
        |prompt| {
            prompts.borrow_mut().push(prompt.to_string());
            true
        },
    )
    .unwrap();
    let prompts = prompts.into_inner();
    assert!(prompts[0].contains("Cite the source URL"), "{}", prompts[0]);
    assert!(
        !prompts[1].contains("Cite the source URL"),
        "{}",
        prompts[1]
    );

    let bank = lesson::Bank::open(bank).unwrap();
    let (_, lesson) = bank.lessons().next().unwrap();
    assert_eq!(lesson.counts().success_count, 1);
    assert_eq!(lesson.evidence.len(), 2);
    assert_eq!(lesson.evidence[1].reference.value, "run-0");
    let ledger =
        std::fs::read_to_string(dir.path().join("_log/cite-the-source-url.jsonl")).unwrap();
    assert_eq!(ledger.lines().count(), 2, "{ledger}");
    assert!(ledger.contains("\"outcome\""), "{ledger}");
    // the turn that showed it was logged (the other showed nothing): shown 1, followed 1, helped 1
    let shown = std::fs::read_to_string(dir.path().join("_log/_shown.jsonl")).unwrap();
    assert_eq!(shown.lines().count(), 1, "{shown}");
    let log = lesson::usage::ShownLog::read(dir.path()).unwrap();
    let usage = log.usage_of(dir.path(), "cite-the-source-url").unwrap();
    assert_eq!((usage.shown, usage.followed, usage.helped), (1, 1, 1));
    assert_eq!(usage.utility(), Some(1.0));
}

/// `define_lesson` takes the gate a file takes: a lesson with an invalid slug and no evidence
/// is refused whole, and a lesson that duplicates one in the bank is merged into it.
#[test]
fn define_lesson_uses_the_add_gate() {
    let dir = tempfile::tempdir().unwrap();
    let bank = dir.path();
    lesson::curate::init::init(bank, stamp().at).unwrap();
    let before = std::fs::read_dir(bank).unwrap().count();
    let mut bad = research_lesson();
    bad["slug"] = json!("Cite_Source");
    bad["evidence"] = json!([]);
    match lesson::define_lesson(bank, bad, &stamp()) {
        Err(lesson::curate::add::AddError::Rejected(r)) => assert!(r.errors() >= 2, "{r}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_dir(bank).unwrap().count(), before);
    assert!(matches!(
        lesson::define_lesson(bank, json!([1]), &stamp()),
        Err(lesson::curate::add::AddError::Input { .. })
    ));

    lesson::define_lesson(bank, research_lesson(), &stamp()).unwrap();
    let mut again = research_lesson();
    again["evidence"] = json!([{"kind": "conversation", "ref": "c-7"}]);
    match lesson::define_lesson(bank, again, &stamp()).unwrap() {
        lesson::curate::add::Admitted::Merged { into, added, .. } => {
            assert_eq!(into, "cite-the-source-url");
            assert_eq!(added.len(), 1);
        }
        other => panic!("{other:?}"),
    }
}
