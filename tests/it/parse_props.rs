//! Properties of parsing any input: `Document::parse` never panics, and every diagnostic of
//! reading, parsing and the file rules points inside the file.
//!
//! Two generators: arbitrary bytes, and "frontmatter-like" text assembled from the fragments
//! that trip YAML and fence parsers (fences, CRLF, anchors and aliases, unclosed flow
//! collections, a BOM, NUL, multibyte characters, HTML comments).

use std::path::PathBuf;
use std::sync::LazyLock;

use lesson::bank::{Bank, Overlay};
use lesson::document::Document;
use lesson::lint::{self, rules};
use lesson::source::Source;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use crate::diagnostic_positions;

/// A bank with no lessons, for the file rules' context.
static BANK: LazyLock<Bank> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let now = "2026-11-22T12:00:00Z".parse().unwrap();
    Bank::load_with(dir.path(), &Overlay::new(), now).unwrap()
});

const FRAGMENTS: &[&str] = &[
    "---",
    "---",
    "...",
    "+++",
    "---yaml",
    "\n",
    "\n",
    "\n",
    "\r\n",
    "\r\n",
    "\r",
    "key: value",
    "slug: a-b",
    "title: T",
    "- item",
    "  ",
    "    ",
    "\t",
    ": ",
    "-",
    "&a ",
    "*a",
    "&a [1, 2]",
    "<<: *a",
    "[",
    "]",
    "{",
    "}",
    ",",
    "? ",
    "!!str ",
    "!tag ",
    "|",
    ">-",
    "'",
    "\"",
    "#",
    " # c",
    "\u{feff}",
    "\0",
    "é",
    "日本語",
    "🦀",
    "\u{200b}",
    "\\",
    "%YAML 1.2",
    "<!--",
    "-->",
    "<!-- lesson-allow P008: why -->",
    "# Title",
    "## When this applies",
    "```",
    "evidence:",
    "  - kind: run",
    "    ref: r_1",
];

/// Text made of fragments, most often opened by a fence so that the YAML path runs.
fn frontmatter_like() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop::sample::select(FRAGMENTS);
    (
        prop::sample::select(&["", "---\n", "---\n", "---\r\n", "\u{feff}---\n"][..]),
        prop::collection::vec(fragment, 0..48),
    )
        .prop_map(|(open, parts)| {
            let mut text = String::from(open);
            parts.into_iter().for_each(|p| text.push_str(p));
            text.into_bytes()
        })
}

/// Arbitrary bytes, sometimes behind an opening fence.
fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    (any::<bool>(), prop::collection::vec(any::<u8>(), 0..512)).prop_map(|(fenced, bytes)| {
        let mut out = if fenced {
            b"---\n".to_vec()
        } else {
            Vec::new()
        };
        out.extend(bytes);
        out
    })
}

/// Parse `bytes` and check every diagnostic's position.
fn parse_and_check(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let (source, problem) = Source::from_bytes(PathBuf::from("prop.md"), bytes);
    let doc = Document::parse(source, problem);
    let mut diagnostics = Vec::new();
    rules::parse_diagnostics(&doc, &mut diagnostics);
    diagnostics.extend(lint::lint_document(&doc, &BANK));
    for d in &diagnostics {
        if let Err(e) = diagnostic_positions::check(&doc.source, d) {
            return Err(TestCaseError::fail(format!(
                "{e}\ntext: {:?}",
                doc.source.text
            )));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::cases(1024),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_parse_with_positions_inside(bytes in arbitrary_bytes()) {
        parse_and_check(bytes)?;
    }

    #[test]
    fn frontmatter_like_text_parses_with_positions_inside(bytes in frontmatter_like()) {
        parse_and_check(bytes)?;
    }
}

#[test]
fn the_position_check_rejects_a_diagnostic_outside_the_file() {
    let source = Source::new("x.md", "ab\ncd\n".to_string());
    let rule = &lint::rules::missing_frontmatter::RULE;
    let ok = lesson::Diagnostic::new(rule, &source, 3..5, "m");
    assert_eq!(diagnostic_positions::check(&source, &ok), Ok(()));
    let mut past_line = ok.clone();
    past_line.column = 4;
    assert!(diagnostic_positions::check(&source, &past_line).is_err());
    let mut past_end = ok.clone();
    past_end.range = 3..9;
    assert!(diagnostic_positions::check(&source, &past_end).is_err());
    let mut past_last_line = ok;
    past_last_line.end_line = 4;
    assert!(diagnostic_positions::check(&source, &past_last_line).is_err());
}
