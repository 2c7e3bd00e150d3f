//! The project's own bank (`lessons/`), which `cargo run -- lint` checks from the repository
//! root: it lints clean and its `_index.md` is current.

use std::path::Path;

use lesson::bank::{Bank, Overlay};
use lesson::lint::{self, Selection};

#[test]
fn project_bank_lints_clean_and_its_index_is_current() {
    let now = "2026-11-22T12:00:00Z".parse().unwrap();
    let bank = Bank::load_with(Path::new("lessons"), &Overlay::new(), now).unwrap();
    assert!(bank.lessons().count() >= 12);
    let diagnostics = lint::lint(&bank, &Selection::default());
    // the bank keeps one lesson past its expiry on purpose: its B007 info is the only finding
    let (expected, findings): (Vec<_>, Vec<_>) = diagnostics.iter().partition(|d| d.code == "B007");
    let findings: Vec<String> = findings
        .iter()
        .map(|d| format!("{}:{}: {} {}", d.path.display(), d.line, d.code, d.message))
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
    assert_eq!(
        expected.len(),
        1,
        "exactly one lesson of the bank is expired"
    );
    let rendered = lesson::index_md::render(&bank).unwrap();
    assert!(
        lesson::index_md::is_current(&bank, &rendered),
        "lessons/_index.md is stale: run `cargo run -- index`"
    );
}
