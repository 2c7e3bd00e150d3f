//! Every rule against its fixture: the fixture triggers it, the rendered diagnostics and the fix
//! diff are snapshots, and fixing converges (a second fix run changes nothing).
//!
//! A fixture is a small bank in `tests/fixtures/rules/<CODE>/`. Only the rule under test runs.
//! Rules whose trigger cannot be committed to git (a symlink loop, an unreadable file) build
//! their fixture at run time in `generated_fixture`.

use std::path::{Path, PathBuf};

use lesson::bank::{Bank, Overlay};
use lesson::lint::{self, fix, Selection, RULES};
use lesson::report::{self, Format, RenderOptions, Sources};

const FIXTURES: &str = "tests/fixtures/rules";

fn now() -> jiff::Timestamp {
    "2026-11-22T12:00:00Z".parse().unwrap()
}

fn selection(code: &str) -> Selection {
    Selection {
        paths: Vec::new(),
        rules: vec![code.to_string()],
    }
}

/// Lint `root` with only `code`, render the findings, and append the fix diff (if any).
fn run_rule(code: &str, root: &Path) -> String {
    let bank = Bank::load_with(root, &Overlay::new(), now()).unwrap();
    let diagnostics = lint::lint(&bank, &selection(code));
    assert!(
        diagnostics.iter().any(|d| d.code == code),
        "fixture {} does not trigger {code}",
        root.display()
    );
    let mut out = report::render(
        Format::Full,
        &diagnostics,
        &bank.sources().collect::<Sources>(),
        RenderOptions::default(),
    );
    let rule = lint::find_rule(code).unwrap();
    let fixed = fix::fix(root, Overlay::new(), &selection(code), true, now()).unwrap();
    if rule.fixable {
        assert!(
            !fixed.changes.is_empty(),
            "{code} is fixable but its fixture got no fix"
        );
        out.push_str("\n----- fix -----\n");
        out.push_str(&fix::unified_diff(&fixed.changes));
        let after: Overlay = fixed
            .changes
            .iter()
            .map(|(p, (_, after))| (p.clone(), after.clone()))
            .collect();
        let again = fix::fix(root, after, &selection(code), true, now()).unwrap();
        assert!(
            again.changes.is_empty(),
            "{code}: a second fix run still changed {:?}",
            again.changes.keys().collect::<Vec<_>>()
        );
    } else {
        assert!(
            fixed.changes.is_empty(),
            "{code} is not declared fixable but fixed something"
        );
    }
    out
}

/// Fixtures that cannot live in git; returns the bank root (inside `tmp`).
fn generated_fixture(code: &str, tmp: &Path) -> Option<PathBuf> {
    match code {
        #[cfg(unix)]
        "P012" => {
            let root = tmp.join("bank");
            std::fs::create_dir_all(root.join("sub")).unwrap();
            std::os::unix::fs::symlink("..", root.join("sub/loop")).unwrap();
            Some(root)
        }
        #[cfg(unix)]
        "P013" => {
            // a lesson file and a directory linked from outside the bank
            let root = tmp.join("bank");
            let outside = tmp.join("outside");
            std::fs::create_dir_all(&root).unwrap();
            std::fs::create_dir_all(outside.join("dir")).unwrap();
            std::fs::write(outside.join("secret.md"), "SECRET-P013\n").unwrap();
            std::fs::write(outside.join("dir/x.md"), "SECRET-P013\n").unwrap();
            std::os::unix::fs::symlink(outside.join("secret.md"), root.join("leak.md")).unwrap();
            std::os::unix::fs::symlink(outside.join("dir"), root.join("shared")).unwrap();
            Some(root)
        }
        #[cfg(unix)]
        "P014" => {
            // a directory and a file of the bank, each linked a second time
            let root = tmp.join("bank");
            std::fs::create_dir_all(root.join("ci")).unwrap();
            std::fs::write(root.join("ci/one.md"), "# one\n").unwrap();
            std::os::unix::fs::symlink("ci", root.join("alias")).unwrap();
            std::os::unix::fs::symlink("ci/one.md", root.join("again.md")).unwrap();
            Some(root)
        }
        "L006" => {
            // a bank folder of a git repository whose root rule does not reach `lessons/_log/`
            let root = tmp.join("repo/lessons");
            std::fs::create_dir_all(root.join("_log")).unwrap();
            std::fs::write(
                tmp.join("repo/.gitattributes"),
                "_log/*.jsonl merge=union\n",
            )
            .unwrap();
            std::fs::write(root.join("_log/retry.jsonl"), "").unwrap();
            let git = std::process::Command::new("git")
                .args(["init", "-q"])
                .current_dir(tmp.join("repo"))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap();
            assert!(git.success());
            Some(root)
        }
        _ => None,
    }
}

#[test]
fn every_rule_has_a_fixture_and_snapshot() {
    let mut missing = Vec::new();
    for rule in RULES {
        if matches!(rule.check, lint::Check::Base) {
            // the pull-request rules compare two revisions: tests/it/pr.rs has their snapshots
            continue;
        }
        let dir = Path::new(FIXTURES).join(rule.code);
        let tmp = tempfile::tempdir().unwrap();
        let output = if dir.is_dir() {
            run_rule(rule.code, &dir)
        } else if let Some(root) = generated_fixture(rule.code, tmp.path()) {
            let out = run_rule(rule.code, &root);
            out.replace(&tmp.path().display().to_string(), "[TMP]")
        } else if rule.code == "P001" {
            unreadable_file_output()
        } else {
            missing.push(rule.code);
            continue;
        };
        insta::assert_snapshot!(format!("{}-{}", rule.code, rule.name), output);
    }
    assert!(missing.is_empty(), "rules without a fixture: {missing:?}");
}

/// P001 needs a file that vanishes between the walk and the read: drive the reader directly.
fn unreadable_file_output() -> String {
    let path = Path::new(FIXTURES).join("P001-does-not-exist.md");
    let (source, problem) = lesson::source::Source::read(&path, path.clone(), 1 << 20);
    let doc = lesson::document::Document::parse(source, problem);
    let mut out = Vec::new();
    lint::rules::parse_diagnostics(&doc, &mut out);
    assert_eq!(out[0].code, "P001");
    let mut text = String::new();
    for d in out {
        text.push_str(&format!(
            "{}:{}:{}: {} {}\n",
            d.path.display(),
            d.line,
            d.column,
            d.code,
            d.message
        ));
    }
    text
}

/// The findings as the `full` format renders them, with the bank's texts.
fn render_full(bank: &Bank, diagnostics: &[lesson::diagnostic::Diagnostic]) -> String {
    report::render(
        Format::Full,
        diagnostics,
        &bank.sources().collect::<Sources>(),
        RenderOptions::default(),
    )
}

/// `lint_report` keeps no text of clean files (and reads one again when a bank rule points into
/// it): on every fixture bank and with every rule on, it must find exactly what the whole-text
/// lint finds, positions, fixes and rendered snippets included.
#[test]
fn report_only_lint_finds_what_the_full_lint_finds() {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    roots.extend(
        ["tests/fixtures/banks", "lessons"]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir()),
    );
    roots.push(PathBuf::from("lessons"));
    let all = Selection::default();
    let (mut compared, mut trimmed) = (0, 0);
    for root in &roots {
        let (full_bank, full) = lint::lint_at(root, &Overlay::new(), now(), &all).unwrap();
        let (lean_bank, lean) = lint::lint_report(root, now(), &all).unwrap();
        assert_eq!(
            format!("{full:?}"),
            format!("{lean:?}"),
            "{}: the report-only lint differs",
            root.display()
        );
        assert_eq!(
            render_full(&full_bank, &full),
            render_full(&lean_bank, &lean)
        );
        compared += full.len();
        trimmed += lean_bank
            .documents
            .iter()
            .filter(|d| d.is_trimmed())
            .count();
    }
    assert!(compared > 50, "only {compared} diagnostics compared");
    assert!(trimmed > 20, "only {trimmed} documents trimmed");
}

/// B005 follows `Bank::by_slug`: when two files share a slug the first one is the lesson, so a
/// later copy's `supersedes` entries draw no edges.
#[test]
fn supersession_cycle_takes_the_first_file_of_a_slug() {
    let lesson = |slug: &str, supersedes: &str| {
        let fixture = std::fs::read_to_string(format!("{FIXTURES}/B005/cite-urls.md")).unwrap();
        fixture
            .replace("slug: cite-urls", &format!("slug: {slug}"))
            .replace("supersedes: [cite-sources]", supersedes)
    };
    let cycle_codes = |files: &[(&str, String)]| {
        let tmp = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(tmp.path().join(name), text).unwrap();
        }
        let bank = Bank::load_with(tmp.path(), &Overlay::new(), now()).unwrap();
        lint::lint(&bank, &selection("B005"))
            .into_iter()
            .map(|d| {
                format!(
                    "{}: {}",
                    d.path.file_name().unwrap().to_string_lossy(),
                    d.message
                )
            })
            .collect::<Vec<_>>()
    };
    let a = ("a.md", lesson("a", "supersedes: [b]"));
    let b = ("b.md", lesson("b", "supersedes: [a]"));
    assert_eq!(
        cycle_codes(&[a.clone(), b.clone()]),
        ["a.md: supersession cycle: a -> b -> a"]
    );
    // `0-b.md` comes first and supersedes nothing: `b` draws no edge, there is no cycle
    let first_b = ("0-b.md", lesson("b", "supersedes: []"));
    assert!(cycle_codes(&[a.clone(), b.clone(), first_b]).is_empty());
    // the first `b` is the one on the cycle
    let first_b = ("0-b.md", lesson("b", "supersedes: [a]"));
    let c = ("b.md", lesson("b", "supersedes: []"));
    assert_eq!(
        cycle_codes(&[a, c, first_b]),
        ["a.md: supersession cycle: a -> b -> a"]
    );
}

/// A clean file keeps no text in a report-only lint: a file two bank rules point into is read
/// again, and its findings are placed and ordered as the whole-text lint places and orders them
/// (here the later line has the smaller code).
#[test]
fn report_only_lint_places_bank_findings_in_a_clean_file() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string("lessons/write-files-atomically.md").unwrap();
    let text = original
        .replacen("---\n", "---\nsupersedes: [no-such-lesson]\n", 1)
        .replacen(
            "slug: write-files-atomically\n",
            "slug: write-files-atomically-now\n",
            1,
        );
    assert_ne!(text, original);
    let path = dir.path().join("write-files-atomically.md");
    std::fs::write(&path, text).unwrap();
    let all = Selection::default();
    let (full_bank, full) = lint::lint_at(dir.path(), &Overlay::new(), now(), &all).unwrap();
    let (lean_bank, lean) = lint::lint_report(dir.path(), now(), &all).unwrap();
    let in_file: Vec<(&str, usize)> = lean
        .iter()
        .filter(|d| d.path == path)
        .map(|d| (d.code, d.line))
        .collect();
    assert_eq!(in_file, [("B003", 2), ("B001", 4)]);
    assert_eq!(format!("{full:?}"), format!("{lean:?}"));
    assert_eq!(
        render_full(&full_bank, &full),
        render_full(&lean_bank, &lean)
    );
}

/// The bank rules that name lessons (B001 slug-mismatch, B002 duplicate-slug, B003
/// supersedes-missing) find exactly what a plain reading of their definitions finds, on
/// generated banks where slugs repeat, differ from file names, and `supersedes` names slugs,
/// the stems of files that do not parse, and nothing at all. (The rules read hashes the parse
/// keeps; this checks them against the slugs themselves.)
mod bank_rules_by_definition {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashSet};

    const NAMES: [&str; 6] = ["alpha", "beta", "gamma", "delta", "eps-ilon", "zeta"];

    /// One file: its name (index into NAMES, plus a variant), and its lesson (slug index,
    /// supersedes indices), or `None` for a file without frontmatter.
    type File = (usize, u8, Option<(usize, Vec<usize>)>);

    /// A written file: its path below the root, and its slug and `supersedes` entries.
    type Written = (String, Option<(String, Vec<String>)>);

    fn write(root: &Path, files: &[File]) -> Vec<Written> {
        let mut written = Vec::new();
        let mut taken = HashSet::new();
        for (name, variant, lesson) in files {
            let stem = format!("{}{}", NAMES[*name], "-x".repeat(*variant as usize % 2));
            let dir = if variant / 2 % 2 == 0 { "" } else { "sub/" };
            let rel = format!("{dir}{stem}.md");
            if !taken.insert(rel.clone()) {
                continue;
            }
            let lesson = lesson.as_ref().map(|(slug, supersedes)| {
                let supersedes: Vec<String> = supersedes
                    .iter()
                    .map(|&i| NAMES.get(i).map_or("missing", |n| n).to_string())
                    .collect();
                (NAMES[*slug].to_string(), supersedes)
            });
            let text = match &lesson {
                None => "no frontmatter\n".to_string(),
                Some((slug, supersedes)) => format!(
                    "---\nschema: learning/v1\nslug: {slug}\ntitle: T.\ntrigger:\n  description: d\n  tags: [t]\noutcome: success\nevidence:\n  - kind: run\n    ref: r\nsupersedes: [{}]\n---\n# T.\n",
                    supersedes.join(", ")
                ),
            };
            std::fs::create_dir_all(root.join(dir)).unwrap();
            std::fs::write(root.join(&rel), text).unwrap();
            written.push((rel, lesson));
        }
        written.sort();
        written
    }

    fn file() -> impl Strategy<Value = File> {
        let lesson = (
            0..NAMES.len(),
            proptest::collection::vec(0..NAMES.len() + 1, 0..3),
        );
        (
            0..NAMES.len(),
            0u8..4,
            proptest::option::weighted(0.85, lesson),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::cases(48)))]
        #[test]
        fn agree(files in proptest::collection::vec(file(), 1..16)) {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path();
            let written = write(root, &files);
            let bank = Bank::load_with(root, &Overlay::new(), now()).unwrap();
            let found = |code: &str| -> BTreeSet<(String, String)> {
                lint::lint(&bank, &selection(code))
                    .into_iter()
                    .filter(|d| d.code == code)
                    .map(|d| {
                        let rel = d.path.strip_prefix(root).unwrap().display().to_string();
                        (rel, d.message)
                    })
                    .collect()
            };
            let stem = |rel: &str| Path::new(rel).file_stem().unwrap().to_str().unwrap().to_string();
            let mut mismatch = BTreeSet::new();
            let mut duplicate = BTreeSet::new();
            let mut missing = BTreeSet::new();
            let known: HashSet<String> = written
                .iter()
                .flat_map(|(rel, lesson)| {
                    [Some(stem(rel)), lesson.as_ref().map(|(slug, _)| slug.clone())]
                })
                .flatten()
                .collect();
            for (rel, lesson) in &written {
                let Some((slug, supersedes)) = lesson else { continue };
                if *slug != stem(rel) {
                    mismatch.insert((
                        rel.clone(),
                        format!("slug `{slug}` differs from the file name `{}.md`", stem(rel)),
                    ));
                }
                // the file named after the slug holds it when exactly one is, else the first
                let holders: Vec<&String> = written
                    .iter()
                    .filter(|(_, l)| l.as_ref().is_some_and(|(s, _)| s == slug))
                    .map(|(r, _)| r)
                    .collect();
                let named: Vec<&&String> = holders.iter().filter(|r| stem(r) == *slug).collect();
                let owner = if named.len() == 1 { *named[0] } else { holders[0] };
                if owner != rel {
                    duplicate.insert((rel.clone(), format!("slug `{slug}` is already used")));
                }
                for entry in supersedes {
                    if entry != slug && !known.contains(entry) {
                        missing.insert((
                            rel.clone(),
                            format!("supersedes `{entry}`, which is not in the bank"),
                        ));
                    }
                }
            }
            prop_assert_eq!(found("B001"), mismatch);
            prop_assert_eq!(found("B002"), duplicate);
            prop_assert_eq!(found("B003"), missing);
        }
    }
}
