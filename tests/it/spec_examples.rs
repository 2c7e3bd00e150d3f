//! The seven official examples of AIP-11 (read from `../shared/spec/aip-11/EXAMPLES.md`, never
//! copied into the repo) lint without errors, and the official package's rejection cases error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn examples_md() -> Option<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/spec/aip-11/EXAMPLES.md");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(_) => {
            eprintln!("skipped: {} not found", path.display());
            None
        }
    }
}

/// The fenced ```md blocks of EXAMPLES.md.
fn examples(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```md") => current = Some(String::new()),
            (Some(_), "```") => out.push(current.take().unwrap()),
            (Some(block), l) => {
                block.push_str(l);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

fn slug_of(lesson: &str) -> String {
    lesson
        .lines()
        .find_map(|l| l.strip_prefix("slug: "))
        .expect("example has a slug")
        .trim()
        .to_string()
}

fn lesson(args: &[&str], dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lesson"))
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("LESSON_NOW", "2026-11-22T12:00:00Z")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// The lesson example 5 supersedes: the spec requires every cited slug to exist.
const SUPERSEDED: &str = "---
schema: learning/v1
slug: retry-aggressively-on-embedding-rate-limit
title: Retry embedding calls with exponential backoff on 429.
trigger:
  description: The embedding driver returns 429 responses for sequential calls.
  tags: [embeddings, rate-limit]
  targets:
    - role: indexer
outcome: success
evidence:
  - kind: run
    ref: r_2026-03-02_77aa01
confidence: 0.6
success_count: 2
failure_count: 0
---

# Retry embedding calls with exponential backoff on 429.

## When this applies

The indexer hits 429 responses from the embedding endpoint.

## What to do (or avoid)

Retry with exponential backoff and jitter.

## Counter-example

Immediate retries made the rate limiting worse.
";

fn write_bank(dir: &Path, lessons: &[String]) -> PathBuf {
    let bank = dir.join("bank");
    std::fs::create_dir_all(&bank).unwrap();
    for l in lessons {
        std::fs::write(bank.join(format!("{}.md", slug_of(l))), l).unwrap();
    }
    let (code, out) = lesson(&["index"], &bank);
    assert_eq!(code, 0, "lesson index failed: {out}");
    bank
}

#[test]
fn official_examples_lint_without_errors() {
    let Some(text) = examples_md() else { return };
    let mut lessons = examples(&text);
    assert_eq!(lessons.len(), 7, "EXAMPLES.md should hold seven examples");
    lessons.push(SUPERSEDED.to_string());
    let tmp = tempfile::tempdir().unwrap();
    let bank = write_bank(tmp.path(), &lessons);
    // the examples carry counts that no ledger backs (L004): a bank of such lessons lowers it
    std::fs::write(
        bank.join("lesson.toml"),
        "[lint.rules]\nunledgered-counts = \"warning\"\n",
    )
    .unwrap();
    let (code, out) = lesson(&["lint", "--output-format", "concise"], &bank);
    assert_eq!(
        code, 0,
        "official examples must lint without errors:\n{out}"
    );
    assert!(!out.contains(": error"), "{out}");
    // the two deviating examples are warned about, not failed
    assert!(
        out.contains("prefer-batch-embed-over-loop-when-rate-limited.md"),
        "{out}"
    );
    assert!(
        out.contains("paginate-large-list-tools-by-default.md"),
        "{out}"
    );
}

#[test]
fn official_rejection_cases_error() {
    let Some(text) = examples_md() else { return };
    let base = examples(&text).remove(0);
    let long_title = format!("title: {}", "x".repeat(201));
    let cases: [(&str, String, &str); 5] = [
        (
            "missing schema",
            base.replace("schema: learning/v1\n", ""),
            "S001",
        ),
        (
            "uppercase slug",
            base.replace(
                "slug: cite-source-url-in-research-summaries",
                "slug: Cite-Source-Url-In-Research-Summaries",
            ),
            "S006",
        ),
        (
            "unknown outcome",
            base.replace("outcome: success", "outcome: partial"),
            "S009",
        ),
        (
            "empty evidence",
            {
                let start = base.find("evidence:").unwrap();
                let end = base.find("confidence:").unwrap();
                format!("{}evidence: []\n{}", &base[..start], &base[end..])
            },
            "S011",
        ),
        (
            "title over 200 characters",
            base.replace(
                "title: Always cite the source URL inline when summarising third-party research.",
                &long_title,
            ),
            "S007",
        ),
    ];
    for (what, content, code) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let bank = tmp.path().join("bank");
        std::fs::create_dir_all(&bank).unwrap();
        std::fs::write(
            bank.join("cite-source-url-in-research-summaries.md"),
            content,
        )
        .unwrap();
        let (exit, out) = lesson(
            &["lint", "--output-format", "concise", "--select", code],
            &bank,
        );
        assert_eq!(exit, 1, "{what}: expected an error-level finding\n{out}");
        assert!(
            out.contains(&format!(" {code} ")),
            "{what}: expected {code}\n{out}"
        );
    }
}
