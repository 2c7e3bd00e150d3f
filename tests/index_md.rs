//! `_index.md` rendered for a small fixture bank: sub-directories, supersession by two
//! lessons, expiry, a title with `|` and a line break, files that are not lessons.

use std::path::Path;

use lesson::bank::{Bank, Overlay};

fn now() -> jiff::Timestamp {
    "2026-11-22T12:00:00Z".parse().unwrap()
}

#[test]
fn small_bank() {
    let bank = Bank::load_with(
        Path::new("tests/fixtures/banks/small"),
        &Overlay::new(),
        now(),
    )
    .unwrap();
    let rendered = lesson::index_md::render(&bank).unwrap();
    insta::assert_snapshot!(rendered);
    // deterministic: a second load renders the same bytes
    let again = Bank::load_with(
        Path::new("tests/fixtures/banks/small"),
        &Overlay::new(),
        now(),
    )
    .unwrap();
    assert_eq!(lesson::index_md::render(&again).unwrap(), rendered);
}

#[test]
fn bank_override_is_used_and_its_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("templates")).unwrap();
    let template = dir.path().join("templates/_index.md.j2");
    std::fs::write(&template, "{{ counts.total }} lessons\n").unwrap();
    let bank = Bank::load_with(dir.path(), &Overlay::new(), now()).unwrap();
    assert_eq!(lesson::index_md::render(&bank).unwrap(), "0 lessons\n");

    std::fs::write(&template, "ok\n{% if %}\n").unwrap();
    let err = lesson::index_md::render(&bank).unwrap_err().to_string();
    let expected = format!("{}:2: syntax error", template.display());
    assert!(err.starts_with(&expected), "{err}");
}
