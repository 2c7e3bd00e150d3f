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

/// The project's bank and every fixture bank.
fn fixture_banks() -> Vec<std::path::PathBuf> {
    let mut roots = vec![std::path::PathBuf::from("lessons")];
    for dir in ["tests/fixtures/banks", "tests/fixtures/rules"] {
        roots.extend(
            std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir()),
        );
    }
    roots
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
    let roots = fixture_banks();
    let mut rows = 0;
    for root in &roots {
        let bank = Bank::load_with(root, &Overlay::new(), now()).unwrap();
        let entries = lesson::index_md::entries(&bank);
        rows += entries.len();
        let engine = lesson::index_md::render_entries(&builtin(), entries.clone(), false).unwrap();
        let direct = lesson::index_md::render_entries(&builtin(), entries, true).unwrap();
        assert_eq!(direct, engine, "{}", root.display());
        // and written from the lessons, without entries
        let from_bank = lesson::index_md::render_with(&bank, &builtin()).unwrap();
        assert_eq!(from_bank, engine, "{}", root.display());
    }
    assert!(rows > 40, "only {rows} rows compared");
}

/// `lesson index` reads the bank into rows ([`lesson::index_md::scan`]) rather than loading it:
/// the entries must be the loaded bank's, status for status, on every fixture bank (the rule
/// fixtures hold supersession cycles, self-supersession, lessons superseded twice, duplicate
/// slugs, expired lessons and files that are not lessons).
#[test]
fn scanned_entries_equal_the_loaded_banks_on_fixture_banks() {
    let roots = fixture_banks();
    let mut superseded = 0;
    for root in &roots {
        let bank = lesson::lint::load_with(root, &Overlay::new(), now()).unwrap();
        let (scanned, rows) =
            lesson::index_md::scan(root, now(), true, &lesson::lint::FileErrors::default())
                .unwrap();
        let rendered = rows.render(&builtin()).unwrap().into_string();
        let entries = rows.into_entries();
        assert_eq!(
            entries,
            lesson::index_md::entries(&bank),
            "{}",
            root.display()
        );
        assert_eq!(scanned.index.map(|s| s.text), bank.index.map(|s| s.text));
        // written from the rows, as from the entries through the template engine
        let engine = lesson::index_md::render_entries(&builtin(), entries.clone(), false).unwrap();
        assert_eq!(rendered, engine, "{}", root.display());
        superseded += entries.iter().filter(|e| e.state == "superseded").count();
    }
    assert!(
        superseded > 5,
        "only {superseded} superseded entries compared"
    );
}

/// A large bank's index is rendered in chunks of rows, compared with the file piece by piece:
/// equal to the template engine's text across chunk boundaries, and a change of one byte
/// anywhere (or of the length) is a mismatch.
#[test]
fn rendered_pieces_match_the_engine_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..2500 {
        let text = format!(
            "---\nschema: learning/v1\nslug: l{i:04}\ntitle: Lesson {i} | piped\ntrigger:\n  description: when {i}\noutcome: mixed\nevidence:\n  - kind: run\n    ref: r{i}\nconfidence: 0.{i}\nsuccess_count: {i}\n---\n\n# Lesson {i} | piped\n"
        );
        std::fs::write(dir.path().join(format!("l{i:04}.md")), text).unwrap();
    }
    let (_, rows) = lesson::index_md::scan(
        dir.path(),
        now(),
        false,
        &lesson::lint::FileErrors::default(),
    )
    .unwrap();
    let parts = rows.render(&builtin()).unwrap();
    let engine = lesson::index_md::render_entries(&builtin(), rows.into_entries(), false).unwrap();
    assert!(parts.matches(&engine));
    let mut probes = 0;
    for at in (0..engine.len()).step_by(499) {
        let mut other = engine.clone().into_bytes();
        other[at] = if other[at] == b'x' { b'y' } else { b'x' };
        let other = String::from_utf8_lossy(&other);
        assert!(!parts.matches(&other), "a change at byte {at} went unseen");
        probes += 1;
    }
    assert!(probes > 300, "{probes}");
    assert!(!parts.matches(&engine[..engine.len() - 1]));
    assert!(!parts.matches(&format!("{engine}\n")));
    assert_eq!(parts.into_string(), engine);
}

mod props {
    use lesson::index_md::{render_entries, IndexEntry};
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        // table-cell hazards: pipes, every line break, non-ASCII, leading/trailing spaces
        proptest::string::string_regex("[a-zé| \\n\\r\u{85}\u{2028}\u{2029}\\[\\]\\\\]{0,24}")
            .unwrap()
    }

    fn entry() -> impl Strategy<Value = IndexEntry> {
        (
            text(),
            text(),
            0u64..1000,
            0u64..1000,
            prop_oneof![Just("active"), Just("superseded"), Just("expired")],
            text(),
        )
            .prop_map(|(slug, title, s, f, state, status)| IndexEntry {
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
                ..IndexEntry::default()
            })
    }

    /// A bank of `n` lessons drawn from a few slugs (so some collide), each superseding a few
    /// of them (itself included, now and then), some expired.
    fn bank() -> impl Strategy<Value = Vec<(usize, Vec<usize>, bool)>> {
        proptest::collection::vec(
            (
                0usize..6,
                proptest::collection::vec(0usize..6, 0..3),
                any::<bool>(),
            ),
            0..12,
        )
    }

    proptest! {
        #[test]
        fn scanned_entries_equal_the_loaded_banks(lessons in bank()) {
            let dir = tempfile::tempdir().unwrap();
            for (i, (slug, supersedes, expired)) in lessons.iter().enumerate() {
                let supersedes: Vec<String> = supersedes.iter().map(|s| format!("s{s}")).collect();
                let expires = if *expired { "2020-01-01T00:00:00Z" } else { "2099-01-01T00:00:00Z" };
                let text = format!(
                    "---\nschema: learning/v1\nslug: s{slug}\ntitle: Lesson {i}.\ntrigger:\n  description: when {i}\noutcome: success\nevidence:\n  - kind: run\n    ref: r{i}\nsupersedes: [{}]\nexpires_at: {expires}\nsuccess_count: {i}\n---\n\n# Lesson {i}.\n",
                    supersedes.join(", ")
                );
                // two files may carry one slug: the second is named after its position
                let name = if i % 3 == 0 { format!("s{slug}.md") } else { format!("f{i}.md") };
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            let now = super::now();
            let bank = lesson::lint::load_with(dir.path(), &Default::default(), now).unwrap();
            let (_, rows) = lesson::index_md::scan(dir.path(), now, false, &lesson::lint::FileErrors::default()).unwrap();
            let parts = rows.render(&super::builtin()).unwrap();
            let scanned = rows.into_entries();
            let engine = render_entries(&super::builtin(), scanned.clone(), false).unwrap();
            prop_assert!(parts.matches(&engine));
            prop_assert_eq!(&parts.into_string(), &engine);
            prop_assert_eq!(&scanned, &lesson::index_md::entries(&bank));
            // and written from the loaded bank's lessons
            prop_assert_eq!(lesson::index_md::render_with(&bank, &super::builtin()).unwrap(), engine);
        }

        #[test]
        fn direct_rendering_equals_the_template_engine(entries in proptest::collection::vec(entry(), 0..40)) {
            let engine = render_entries(&super::builtin(), entries.clone(), false).unwrap();
            let direct = render_entries(&super::builtin(), entries, true).unwrap();
            prop_assert_eq!(direct, engine);
        }
    }
}
