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

fn builtin() -> lesson::template::Template {
    lesson::template::Template::builtin(
        lesson::index_md::TEMPLATE,
        lesson::index_md::BUILTIN_TEMPLATE,
    )
}

/// The built-in template is written without the template engine; the engine's output is the
/// reference. Every fixture bank and the project's bank, through both.
#[test]
fn direct_rendering_equals_the_template_engine_on_fixture_banks() {
    let mut roots = vec![std::path::PathBuf::from("lessons")];
    for dir in ["tests/fixtures/banks", "tests/fixtures/rules"] {
        roots.extend(
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir()),
        );
    }
    let mut rows = 0;
    for root in &roots {
        let bank = Bank::load_with(root, &Overlay::new(), now()).unwrap();
        let entries = lesson::index_md::entries(&bank);
        rows += entries.len();
        let engine = lesson::index_md::render_entries(&builtin(), entries.clone(), false).unwrap();
        let direct = lesson::index_md::render_entries(&builtin(), entries, true).unwrap();
        assert_eq!(direct, engine, "{}", root.display());
    }
    assert!(rows > 40, "only {rows} rows compared");
}

mod props {
    use lesson::index_md::{render_entries, Entry};
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        // table-cell hazards: pipes, every line break, non-ASCII, leading/trailing spaces
        proptest::string::string_regex("[a-zé| \\n\\r\u{85}\u{2028}\u{2029}\\[\\]\\\\]{0,24}")
            .unwrap()
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (
            text(),
            text(),
            0u64..1000,
            0u64..1000,
            prop_oneof![Just("active"), Just("superseded"), Just("expired")],
            text(),
        )
            .prop_map(|(slug, title, s, f, state, status)| Entry {
                link: lesson::template::table_cell(&format!("[{slug}]({slug}.md)")),
                path: format!("{slug}.md"),
                slug,
                title,
                outcome: "mixed".into(),
                confidence: "0.50".into(),
                success_count: s,
                failure_count: f,
                status,
                state,
                superseded_by: Vec::new(),
            })
    }

    proptest! {
        #[test]
        fn direct_rendering_equals_the_template_engine(entries in proptest::collection::vec(entry(), 0..40)) {
            let engine = render_entries(&super::builtin(), entries.clone(), false).unwrap();
            let direct = render_entries(&super::builtin(), entries, true).unwrap();
            prop_assert_eq!(direct, engine);
        }
    }
}
