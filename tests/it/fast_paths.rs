//! The fast paths give exactly what the full parsers give: the YAML fast path the tree saphyr
//! builds, the heading scanner the headings pulldown-cmark finds. Checked on every file we can
//! find (the fixtures, the project's bank, the corpora under `../shared` when present, the bench
//! bank when generated) and on generated input.

use std::path::{Path, PathBuf};

use lesson::document::{split, Body, Split};
use lesson::yaml::Yaml;
use proptest::prelude::*;

/// Check one frontmatter; returns whether the YAML fast path took it.
fn check(text: &str, origin: &str) -> bool {
    let Some(fast) = Yaml::parse_fast(text, 7) else {
        return false;
    };
    let (full, errors) = Yaml::parse_with_saphyr(text, 7);
    assert!(
        errors.is_empty(),
        "{origin}: fast path accepted what saphyr rejects: {errors:?}\n{text}"
    );
    assert_eq!(Some(&fast), full.as_ref(), "{origin}: trees differ\n{text}");
    true
}

/// Check one body; returns whether the heading scanner took it.
fn check_body(text: &str, start: usize, origin: &str) -> bool {
    let Some(fast) = Body::parse_fast(text, start) else {
        return false;
    };
    let full = Body::parse_with_pulldown(text, start);
    assert_eq!(fast, full, "{origin}: bodies differ\n{}", &text[start..]);
    true
}

fn markdown_files(root: &Path, out: &mut Vec<PathBuf>, limit: usize) {
    for entry in walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
    {
        if out.len() >= limit {
            return;
        }
        let p = entry.path();
        let markdown = p
            .extension()
            .is_some_and(|e| e == "md" || e == "mdc" || e == "mdx");
        if entry.file_type().is_file() && markdown {
            out.push(p.to_path_buf());
        }
    }
}

#[test]
fn fast_paths_equal_the_full_parsers_on_every_file_we_have() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for (dir, limit) in [
        (manifest.join("tests/fixtures"), usize::MAX),
        (manifest.join("lessons"), usize::MAX),
        (manifest.join("../shared/corpora"), usize::MAX),
        (manifest.join("target/bench/banks/10000"), 3000),
    ] {
        if dir.is_dir() {
            let before = files.len();
            markdown_files(&dir, &mut files, before.saturating_add(limit));
        } else {
            eprintln!("skipped: {} not found", dir.display());
        }
    }
    let (mut yaml, mut fast, mut scanned) = (0, 0, 0);
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let origin = path.display().to_string();
        let body_start = match split(&text) {
            Split::Yaml(f) => {
                yaml += 1;
                if check(&text[f.content.clone()], &origin) {
                    fast += 1;
                }
                f.body_start
            }
            _ => 0,
        };
        if check_body(&text, body_start, &origin) {
            scanned += 1;
        }
    }
    eprintln!(
        "{} files: {yaml} with YAML frontmatter, {fast} taken by the YAML fast path; \
         {scanned} bodies taken by the heading scanner",
        files.len()
    );
    assert!(fast > 0 && scanned > 0);
}

/// Markdown bodies from fragments that stress the heading scanner's edges.
fn body() -> impl Strategy<Value = String> {
    let line = prop::sample::select(vec![
        "# Title",
        "## When this applies",
        "##  Spaced  ",
        "### Deep",
        "####### seven",
        "#nospace",
        "   # indented three",
        "    # indented four",
        "# Title #",
        "# `code` title",
        "# *em*",
        "text",
        "more text",
        "",
        "```",
        "```rust",
        "~~~",
        "````",
        "- item",
        "- # in list",
        "1. # numbered",
        "> # quoted",
        "---",
        "===",
        "Title",
        "***",
        "<!-- c -->",
        "a < b",
        "\\# escaped",
        "# Ünïcödé",
        "# a & b",
        "  ```",
        "    ```",
        "* star",
    ]);
    (prop::collection::vec(line, 0..14), prop::bool::ANY).prop_map(|(lines, crlf)| {
        let eol = if crlf { "\r\n" } else { "\n" };
        lines.iter().map(|l| format!("{l}{eol}")).collect()
    })
}

/// Lines of frontmatter-like YAML, from fragments that stress the subset's edges.
fn frontmatter() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec!["title", "slug", "a", "b-c", "d_e", "x.y"]);
    let scalar = prop::sample::select(vec![
        "plain",
        "two words",
        "Note: this",
        "ends:",
        "C# x",
        "x #c",
        "'q'",
        "\"dq\"",
        "'it''s'",
        "\"a\\\"b\"",
        "[a, b]",
        "[]",
        "[ a ,b ]",
        "[a,]",
        "[a, [b]]",
        "-3",
        "0.7",
        "é ü",
        "*x",
        "&a v",
        "!t v",
        "|",
        ">",
        "a:b",
        "https://x.y/z",
        "  spaced  ",
        "",
    ]);
    let line = (0usize..6, key, scalar, 0usize..4).prop_map(|(indent, k, v, form)| {
        let pad = " ".repeat(indent);
        match form {
            0 => format!("{pad}{k}: {v}"),
            1 => format!("{pad}{k}:"),
            2 => format!("{pad}- {v}"),
            _ => format!("{pad}- {k}: {v}"),
        }
    });
    (
        prop::collection::vec(line, 1..12),
        prop::bool::ANY,
        prop::bool::ANY,
    )
        .prop_map(|(lines, crlf, blank)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut out = String::new();
            for (i, l) in lines.iter().enumerate() {
                out.push_str(l);
                out.push_str(eol);
                if blank && i % 3 == 1 {
                    out.push_str(eol);
                }
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn heading_scanner_equals_pulldown_on_generated_bodies(text in body()) {
        check_body(&text, 0, "generated");
    }

    #[test]
    fn fast_path_equals_saphyr_on_generated_frontmatter(text in frontmatter()) {
        check(&text, "generated");
    }
}
