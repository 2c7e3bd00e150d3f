//! Writers change only the lines that must change. Each case runs `record` or `supersede` on a
//! copy of `tests/fixtures/edits/` and snapshots the unified diff of the lesson (CR shown as
//! `␍`) and the ledger lines appended. The fixtures cover comments, unusual key order, flow and
//! block lists, missing count keys and CRLF line endings.

use std::path::{Path, PathBuf};

use lesson::curate::new::parse_evidence;
use lesson::curate::record::{record, Request};
use lesson::curate::supersede::supersede;
use lesson::curate::Stamp;
use lesson::ledger::{Applied, RunOutcome};

const FIXTURE: &str = "tests/fixtures/edits";

fn stamp() -> Stamp {
    Stamp {
        at: "2026-11-22T12:00:00Z".parse().unwrap(),
        by: "tester".into(),
    }
}

/// A copy of the fixture bank.
fn bank() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lessons");
    std::fs::create_dir(&root).unwrap();
    for entry in std::fs::read_dir(FIXTURE).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, root.join(path.file_name().unwrap())).unwrap();
    }
    (tmp, root)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The diff of `slug`'s lesson and the lines its ledger gained, after `change`.
fn changes(slug: &str, ledgers: &[&str], change: impl FnOnce(&Path)) -> String {
    let (_tmp, root) = bank();
    let file = root.join(format!("{slug}.md"));
    let before = read(&file);
    change(&root);
    let after = read(&file);
    if before.contains("\r\n") {
        assert!(
            after.split_inclusive('\n').all(|l| l.ends_with("\r\n")),
            "every line keeps its CRLF"
        );
    }
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(1)
        .header(&format!("a/{slug}.md"), &format!("b/{slug}.md"))
        .to_string()
        .replace('\r', "␍");
    let mut out = diff;
    for l in ledgers {
        out.push_str(&format!(
            "--- _log/{l}.jsonl\n{}",
            read(&lesson::ledger::path(&root, l))
        ));
    }
    out
}

fn record_case(slug: &str, applied: Applied, run: RunOutcome, evidence: &str) -> String {
    changes(slug, &[slug], |root| {
        let req = Request {
            slug: slug.into(),
            applied,
            run,
            evidence: parse_evidence(evidence).unwrap(),
            retrieval: None,
        };
        record(root, &req, &stamp()).unwrap();
    })
}

const LESSONS: [&str; 3] = ["retry-with-jitter", "cache-embeddings", "quote-yaml-values"];

#[test]
fn record_followed_success() {
    for slug in LESSONS {
        let out = record_case(
            slug,
            Applied::Followed,
            RunOutcome::Success,
            "run:r_2026-11-22_x1",
        );
        insta::assert_snapshot!(format!("record_followed_success-{slug}"), out);
    }
}

#[test]
fn record_contradicted_success() {
    for slug in LESSONS {
        let out = record_case(
            slug,
            Applied::Contradicted,
            RunOutcome::Success,
            "run:r_2026-11-22_x2:skipped the jitter: worked anyway",
        );
        insta::assert_snapshot!(format!("record_contradicted_success-{slug}"), out);
    }
}

#[test]
fn record_followed_failure() {
    for slug in LESSONS {
        let out = record_case(
            slug,
            Applied::Followed,
            RunOutcome::Failure,
            "work-item:wi-77",
        );
        insta::assert_snapshot!(format!("record_followed_failure-{slug}"), out);
    }
}

#[test]
fn supersede_two_old_lessons() {
    for slug in LESSONS {
        let out = changes(slug, &["old-advice", "older-advice"], |root| {
            let old = ["old-advice".to_string(), "older-advice".to_string()];
            supersede(root, &old, slug, &stamp()).unwrap();
        });
        insta::assert_snapshot!(format!("supersede-{slug}"), out);
    }
}

#[test]
fn running_a_writer_twice_changes_nothing_the_second_time() {
    let (_tmp, root) = bank();
    let tree = |root: &Path| -> Vec<(PathBuf, String)> {
        let mut files: Vec<_> = walkdir::WalkDir::new(root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".lesson")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| (e.path().to_path_buf(), read(e.path())))
            .collect();
        files.sort();
        files
    };
    let old = ["old-advice".to_string()];
    let req = Request {
        slug: "retry-with-jitter".into(),
        applied: Applied::Followed,
        run: RunOutcome::Success,
        evidence: parse_evidence("run:r_once").unwrap(),
        retrieval: None,
    };
    let first = supersede(&root, &old, "retry-with-jitter", &stamp()).unwrap();
    assert!(first.changed());
    let recorded = record(&root, &req, &stamp()).unwrap();
    assert!(recorded.appended && recorded.changed);
    let before = tree(&root);
    let again = supersede(&root, &old, "retry-with-jitter", &stamp()).unwrap();
    assert!(!again.changed());
    let retried = record(&root, &req, &stamp()).unwrap();
    assert!(!retried.appended && !retried.changed);
    assert_eq!(tree(&root), before);
}
