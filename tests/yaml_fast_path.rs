//! The YAML fast path builds exactly the tree saphyr builds, on every frontmatter we can find:
//! the fixtures, the project's bank, the corpora and the spec examples under `../shared` (when
//! present), the bench banks (when generated), and generated frontmatter.

use std::path::{Path, PathBuf};

use lesson::document::{split, Split};
use lesson::yaml::Yaml;
use proptest::prelude::*;

/// Check one text; returns whether the fast path took it.
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

fn markdown_files(root: &Path, out: &mut Vec<PathBuf>, limit: usize) {
    for entry in walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
    {
        if out.len() >= limit {
            return;
        }
        let p = entry.path();
        if entry.file_type().is_file()
            && p.extension()
                .is_some_and(|e| e == "md" || e == "mdc" || e == "mdx")
        {
            out.push(p.to_path_buf());
        }
    }
}

#[test]
fn fast_path_equals_saphyr_on_every_frontmatter_we_have() {
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
    let (mut yaml, mut fast) = (0, 0);
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Split::Yaml(f) = split(&text) {
            yaml += 1;
            if check(&text[f.content.clone()], &path.display().to_string()) {
                fast += 1;
            }
        }
    }
    eprintln!(
        "{} files, {yaml} with YAML frontmatter, {fast} taken by the fast path",
        files.len()
    );
    assert!(fast > 0);
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
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn fast_path_equals_saphyr_on_generated_frontmatter(text in frontmatter()) {
        check(&text, "generated");
    }
}
