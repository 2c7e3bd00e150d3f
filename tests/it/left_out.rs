//! Files left out of `lesson list` and `_index.md` (issue 14, item 11): a file that does not
//! parse into a lesson, or that has an error-level finding of its own, is left out of both, the
//! command names it on stderr, and lint's `index-stale` agrees with what `lesson index` wrote.

use crate::sandbox::Sandbox;

/// Two clean lessons of the bundled bank, a file whose YAML does not parse and a lesson whose
/// only error is `confidence: 7`.
fn bank() -> Sandbox {
    let s = Sandbox::new();
    let bank = s.bank();
    std::fs::create_dir(&bank).unwrap();
    for slug in ["use-exit-codes-0-1-2", "write-files-atomically"] {
        let name = format!("{slug}.md");
        std::fs::copy(
            std::path::Path::new("lessons").join(&name),
            bank.join(&name),
        )
        .unwrap();
    }
    std::fs::write(
        bank.join("broken.md"),
        "---\nslug: [broken\ntitle: Unclosed.\n---\n\n# Unclosed.\n",
    )
    .unwrap();
    let valid = std::fs::read_to_string(bank.join("write-files-atomically.md")).unwrap();
    let overconfident = valid
        .replace("slug: write-files-atomically", "slug: trust-the-model")
        .lines()
        .map(|l| {
            if l.starts_with("confidence:") {
                "confidence: 7"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert!(overconfident.contains("\nconfidence: 7\n"));
    std::fs::write(bank.join("trust-the-model.md"), overconfident).unwrap();
    s
}

#[test]
fn list_and_index_leave_out_files_with_errors_and_say_so() {
    let s = bank();
    let out = s.transcript(&[
        &["list"],
        &["list", "--format", "json"],
        &["index"],
        &["index", "--check"],
        &["lint", "--output-format", "concise"],
    ]);
    let index = std::fs::read_to_string(s.bank().join("_index.md")).unwrap();
    assert!(!index.contains("broken") && !index.contains("trust-the-model"));
    assert!(!out.contains("B008"), "{out}");
    insta::assert_snapshot!(format!("{out}{}", s.files(&["_index.md"])));
}

#[test]
fn a_writer_keeps_the_index_without_the_files_left_out() {
    let s = bank();
    let record = s.run(&[
        "record",
        "use-exit-codes-0-1-2",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_1",
    ]);
    assert_eq!(record.code, 0, "{record}");
    let index = std::fs::read_to_string(s.bank().join("_index.md")).unwrap();
    assert!(index.contains("[use-exit-codes-0-1-2]"), "{index}");
    assert!(!index.contains("trust-the-model"), "{index}");
    let lint = s.run(&["lint", "--output-format", "concise"]);
    assert!(!lint.stdout.contains("B008"), "{lint}");
    // the file rules not selected: index-stale still knows which files have errors
    let only = s.run(&["lint", "--select", "B008"]);
    assert_eq!(only.code, 0, "{only}");
}
