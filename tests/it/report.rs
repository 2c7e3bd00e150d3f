//! Every output format over the same findings, linted from the bank in `tests/fixtures/report/`:
//! a BOM, a multi-line span over CRLF line endings, a span at the end of a file, tabs and wide
//! characters before a span, an unreadable file without a source, safe and unsafe fixes, and a
//! fix that creates a file. Plus the `lesson lint` command line: streams and exit codes.

use std::path::Path;

use lesson::bank::{Bank, Overlay};
use lesson::diagnostic::{Diagnostic, Edit, Fix, RuleId, Severity};
use lesson::lint::{self, Check, Rule, Selection, RULES};
use lesson::report::{self, Format, RenderOptions, Sources};
use lesson::source::Source;
use proptest::prelude::*;
use serde_json::Value;

use crate::sandbox;

const BANK: &str = "tests/fixtures/report";

/// The rules the fixture bank is about; other rules stay off so new rules do not move the
/// snapshots.
const SELECTED: &[&str] = &["P003", "P005", "P008", "P009", "P011", "X001"];

/// A rule of another branch's kind: a bank-level finding whose fix creates a file.
static MISSING_INDEX: Rule = Rule {
    id: RuleId {
        code: "T001",
        name: "missing-index",
        default_level: Severity::Warning,
    },
    docs: " The bank has no `_index.md`.\n",
    fixable: true,
    check: Check::Emitted,
};

fn bank() -> Bank {
    let now = "2026-11-22T12:00:00Z".parse().unwrap();
    Bank::load_with(Path::new(BANK), &Overlay::new(), now).unwrap()
}

/// The fixture bank's findings, with fixes attached, an unreadable file and a missing index.
fn diagnostics(bank: &Bank) -> Vec<Diagnostic> {
    let selection = Selection {
        paths: Vec::new(),
        rules: SELECTED.iter().map(|s| s.to_string()).collect(),
    };
    let mut out: Vec<Diagnostic> = lint::lint(bank, &selection)
        .into_iter()
        .map(|d| with_fix(bank, d))
        .collect();

    let gone = Path::new(BANK).join("gone.md");
    let (source, problem) = Source::read(&gone, gone.clone(), 1 << 20);
    let doc = lesson::document::Document::parse(source, problem);
    lint::rules::parse_diagnostics(&doc, &mut out);

    let index = Source::new(bank.index_path(), String::new());
    out.push(
        Diagnostic::new(&MISSING_INDEX, &index, 0..0, "the bank has no `_index.md`").with_fix(
            Fix::safe(
                "create `_index.md`",
                vec![Edit::insert(0, "# Lessons\n\n| slug | title |\n")],
            ),
        ),
    );
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    assert_eq!(out.len(), 8, "{out:#?}");
    out
}

/// A safe fix for the duplicate key (delete its line) and an unsafe one for the suppression.
fn with_fix(bank: &Bank, d: Diagnostic) -> Diagnostic {
    let text = &bank
        .sources()
        .collect::<Sources>()
        .get(&d.path)
        .unwrap()
        .text;
    let line_end = |from: usize| text[from..].find('\n').map_or(text.len(), |i| from + i + 1);
    match d.code {
        "P009" => {
            let range = d.range.start..line_end(d.range.start);
            d.with_fix(Fix::safe(
                "remove the second `title`",
                vec![Edit::delete(range)],
            ))
        }
        "X001" => {
            let start = text.find("<!--").unwrap();
            let range = start..line_end(start);
            d.with_fix(Fix::unsafe_(
                "remove the suppression comment",
                vec![Edit::delete(range)],
            ))
        }
        _ => d,
    }
}

fn render(format: Format) -> String {
    let bank = bank();
    let diagnostics = diagnostics(&bank);
    report::render(
        format,
        &diagnostics,
        &bank.sources().collect::<Sources>(),
        RenderOptions::default(),
    )
}

#[test]
fn full() {
    let out = render(Format::Full);
    assert!(!out.contains('\x1b'), "colour without asking");
    insta::assert_snapshot!(out);
}

#[test]
fn full_in_colour() {
    let bank = bank();
    let diagnostics = diagnostics(&bank);
    let options = RenderOptions { color: true };
    let out = report::render(
        Format::Full,
        &diagnostics,
        &bank.sources().collect::<Sources>(),
        options,
    );
    assert!(out.contains("\x1b["));
}

#[test]
fn concise() {
    insta::assert_snapshot!(render(Format::Concise));
}

#[test]
fn json() {
    let out = render(Format::Json);
    assert!(out.ends_with("]\n"));
    let value: Value = serde_json::from_str(&out).unwrap();
    let keys = [
        "code",
        "name",
        "severity",
        "message",
        "help",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "fix",
    ];
    for item in value.as_array().unwrap() {
        let got: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        let mut want = keys.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "serde_json sorts keys when parsing");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn json_of_nothing_is_an_empty_array() {
    let out = report::render(
        Format::Json,
        &[],
        &Sources::default(),
        RenderOptions::default(),
    );
    assert_eq!(out, "[]\n");
}

#[test]
fn github() {
    insta::assert_snapshot!(render(Format::Github));
}

#[test]
fn github_escapes_properties_and_message() {
    let source = Source::new("lessons/a,b:c.md", "title: 100%\n".to_string());
    let rule = lint::find_rule("P008").unwrap();
    let d = Diagnostic::new(rule, &source, 7..11, "50% done, see: this\nand that\r");
    let sources: Sources = [&source].into_iter().collect();
    let out = report::render(Format::Github, &[d], &sources, RenderOptions::default());
    assert_eq!(
        out,
        "::error title=lesson (P008),file=lessons/a%2Cb%3Ac.md,line=1,col=8,endLine=1,endColumn=12\
         ::P008 50%25 done, see: this%0Aand that%0D\n"
    );
}

#[test]
fn github_drops_columns_of_a_multi_line_span() {
    let out = render(Format::Github);
    let line = out.lines().find(|l| l.contains("P011")).unwrap();
    assert!(line.contains(",line=2,endLine=3::"), "{line}");
}

#[test]
fn sarif() {
    let out = render(Format::Sarif);
    let log: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        log["$schema"],
        "https://json.schemastore.org/sarif-2.1.0.json"
    );
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(log["runs"].as_array().unwrap().len(), 1);
    let run = &log["runs"][0];
    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "lesson");
    assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));

    let rules = driver["rules"].as_array().unwrap();
    let ids: Vec<String> = rules
        .iter()
        .map(|r| r["id"].as_str().unwrap().into())
        .collect();
    let codes: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    assert_eq!(ids, codes, "every rule, in registry order");
    for (rule, descriptor) in RULES.iter().zip(rules) {
        assert_eq!(descriptor["name"], rule.name);
        assert_eq!(descriptor["shortDescription"]["text"], rule.summary());
        assert!(descriptor["fullDescription"]["markdown"]
            .as_str()
            .unwrap()
            .contains("## What it does"));
        let level = descriptor["defaultConfiguration"]["level"]
            .as_str()
            .unwrap();
        assert!(["error", "warning", "note"].contains(&level));
    }
    let p009 = rules[ids.iter().position(|id| id == "P009").unwrap()].clone();

    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    for result in results {
        let id = result["ruleId"].as_str().unwrap();
        match result.get("ruleIndex").and_then(Value::as_u64) {
            Some(i) => assert_eq!(ids[i as usize], id),
            None => assert!(!codes.contains(&id), "{id} has no ruleIndex"),
        }
    }
    insta::assert_snapshot!(redact_sarif(&out));
    insta::assert_snapshot!(
        "sarif_rule_descriptor",
        serde_json::to_string_pretty(&p009).unwrap()
    );
}

/// The SARIF text with what other rules change left out: the rule list (checked above), rule
/// indices (they move when a rule is added) and the version.
fn redact_sarif(out: &str) -> String {
    let version = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
    let mut lines = Vec::new();
    let mut rules_indent = None;
    for line in out.lines() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let comma = if body.ends_with(',') { "," } else { "" };
        if let Some(rules) = rules_indent {
            if rules == indent && body.starts_with(']') {
                lines.push(format!("{indent}\"rules\": \"[RULES]\"{comma}"));
                rules_indent = None;
            }
        } else if body == "\"rules\": [" {
            rules_indent = Some(indent);
        } else if body.starts_with("\"ruleIndex\": ") {
            lines.push(format!("{indent}\"ruleIndex\": \"[INDEX]\"{comma}"));
        } else {
            lines.push(line.replace(&version, "\"version\": \"[VERSION]\""));
        }
    }
    lines.join("\n")
}

fn arbitrary_source() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\u{feff}".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("\r".to_string()),
        Just("\t".to_string()),
        Just("\0".to_string()),
        Just("\x1b[31m".to_string()),
        Just("é☕".to_string()),
        Just("\u{202e}".to_string()),
        "[a-z: -]{0,6}",
    ];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn no_input_makes_a_renderer_panic(
        text in arbitrary_source(),
        start in 0usize..64,
        len in 0usize..64,
        backwards in any::<bool>(),
        with_source in any::<bool>(),
    ) {
        let source = Source::new("x.md", text);
        let rule = lint::find_rule("P008").unwrap();
        let range = if backwards { start..start.saturating_sub(len) } else { start..start + len };
        let words = source.text.clone();
        let mut d = Diagnostic::new(rule, &source, range.clone(), words.clone())
            .with_help(words.clone())
            .with_fix(Fix::unsafe_(words, vec![Edit::replace(range, "r")]));
        d.range = start..start + len; // possibly past the end, possibly mid-character
        let sources: Sources = if with_source { [&source].into_iter().collect() } else { Sources::default() };
        for format in [Format::Full, Format::Concise, Format::Json, Format::Github, Format::Sarif] {
            for color in [false, true] {
                let out = report::render(format, std::slice::from_ref(&d), &sources, RenderOptions { color });
                prop_assert!(!out.is_empty());
                // Concise and github print messages as they are; the others must not.
                if !color && !matches!(format, Format::Concise | Format::Github) {
                    prop_assert!(!out.contains('\x1b'), "{format:?} passed an escape through: {out}");
                }
            }
        }
    }
}

/// `lesson` with a fixed clock and no colour, from the package root.
fn lesson(args: &[&str]) -> std::process::Output {
    sandbox::lesson().args(args).output().unwrap()
}

#[test]
fn cli_json_is_alone_on_stdout_and_fails_on_errors() {
    let out = lesson(&["lint", "--output-format", "json", "--dir", BANK]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let value: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON only");
    assert!(value
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["severity"] == "error"));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("files checked"),
        "summary on stderr: {stderr}"
    );
}

#[test]
fn cli_exit_zero_and_usage_errors() {
    let out = lesson(&[
        "lint",
        "--output-format",
        "json",
        "--exit-zero",
        "--dir",
        BANK,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice::<Value>(&out.stdout).unwrap();

    let out = lesson(&["lint", "--no-such-flag", "--dir", BANK]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
}

#[test]
fn cli_full_has_no_colour_when_piped() {
    let out = lesson(&["lint", "--dir", BANK]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(" --> tests/fixtures/report/twice.md:5:1\n"));
    assert!(!stdout.contains('\x1b'));
}
