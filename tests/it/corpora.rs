//! Robustness on real-world markdown: every `.md`, `.mdc` and `.mdx` file under
//! `../shared/corpora` is read, parsed and linted in-process, as is a CRLF copy of the
//! frontmatter fixtures and of a fixed sample of the rest. Nothing may panic, every file yields a
//! lesson or a diagnostic, and every diagnostic points inside its file.
//!
//! The corpora live outside the repository (see `../shared/corpora/MANIFEST.md`); without them
//! the test says so and passes. `LESSON_CORPORA_DIR` points elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

use lesson::bank::{Bank, Overlay};
use lesson::document::Document;
use lesson::lint;
use lesson::source::{ReadProblem, Source};

use crate::diagnostic_positions;

const EXTENSIONS: [&str; 3] = ["md", "mdc", "mdx"];
/// Every file here also gets a CRLF copy.
const FIXTURES_DIR: &str = "frontmatter-fixtures";
/// About this many files from the other corpora get a CRLF copy.
const CRLF_SAMPLE: usize = 200;
/// Above the default size limit, so that no corpus file is refused unread.
const SIZE_LIMIT: u64 = 64 << 20;

/// `../shared/corpora` next to the checkout, or `$LESSON_CORPORA_DIR` (for a git worktree that
/// sits elsewhere).
pub(crate) fn corpora_dir() -> PathBuf {
    match std::env::var_os("LESSON_CORPORA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora"),
    }
}

/// A bank with no lessons, for the rules' `FileContext`.
fn empty_bank() -> Bank {
    let dir = tempfile::tempdir().unwrap();
    let now = "2026-11-22T12:00:00Z".parse().unwrap();
    Bank::load_with(dir.path(), &Overlay::new(), now).unwrap()
}

/// Every markdown file below `root`, sorted.
pub(crate) fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| EXTENSIONS.contains(&x))
        })
        .collect();
    files.sort();
    files
}

/// The files that also get a CRLF copy: all fixtures, and every k-th other file.
fn crlf_selection(root: &Path, files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let fixtures = root.join(FIXTURES_DIR);
    let (chosen, others): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|p| p.starts_with(&fixtures));
    let step = (others.len() / CRLF_SAMPLE).max(1);
    chosen
        .into_iter()
        .chain(others.into_iter().step_by(step))
        .cloned()
        .collect()
}

/// `\n` to `\r\n`, leaving existing `\r\n` alone.
fn to_crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 16);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// What linting one variant of one file gave.
struct Linted {
    codes: BTreeSet<&'static str>,
    histogram: BTreeMap<&'static str, usize>,
}

/// Parse and lint one source, checking the invariants; `Err` names what went wrong.
fn lint_source(
    source: Source,
    problem: Option<ReadProblem>,
    bank: &Bank,
    require_finding: bool,
) -> Result<Linted, String> {
    let run = catch_unwind(AssertUnwindSafe(|| {
        let doc = Document::parse(source, problem);
        let diagnostics = lint::lint_document(&doc, bank);
        (doc, diagnostics)
    }));
    let (doc, diagnostics) = run.map_err(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        format!("panicked: {message}")
    })?;
    if require_finding && doc.lesson.is_none() && diagnostics.is_empty() {
        return Err("neither a lesson nor a diagnostic".into());
    }
    let mut problems = Vec::new();
    for d in &diagnostics {
        if let Err(e) = diagnostic_positions::check(&doc.source, d) {
            problems.push(format!("{e} (at {}:{})", d.line, d.column));
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("; "));
    }
    let mut histogram = BTreeMap::new();
    for d in &diagnostics {
        *histogram.entry(d.code).or_insert(0) += 1;
    }
    Ok(Linted {
        codes: histogram.keys().copied().collect(),
        histogram,
    })
}

/// The LF original and, when asked, the CRLF copy of one file.
fn check_file(
    path: &Path,
    bank: &Bank,
    with_crlf: bool,
    require_finding: bool,
) -> Result<Linted, String> {
    let (source, problem) = Source::read(path, path.to_path_buf(), SIZE_LIMIT);
    let original = lint_source(source, problem, bank, require_finding)?;
    if with_crlf {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
        let (source, problem) = Source::from_bytes(path.to_path_buf(), to_crlf(&bytes));
        let crlf = lint_source(source, problem, bank, require_finding)
            .map_err(|e| format!("CRLF copy: {e}"))?;
        if crlf.codes != original.codes {
            return Err(format!(
                "CRLF copy fires {:?}, the original {:?}",
                crlf.codes, original.codes
            ));
        }
    }
    Ok(original)
}

#[test]
fn every_corpus_file_lints_with_positions_inside_the_file() {
    use rayon::prelude::*;

    let root = corpora_dir();
    if !root.is_dir() {
        eprintln!(
            "skipped: ../shared/corpora not found (looked for {})",
            root.display()
        );
        return;
    }
    let started = Instant::now();
    let files = markdown_files(&root);
    assert!(
        !files.is_empty(),
        "no markdown files under {}",
        root.display()
    );
    let crlf = crlf_selection(&root, &files);
    let bank = empty_bank();
    // A YAML mapping that is not a lesson gets a diagnostic only from the schema rules.
    let require_finding = lint::find_rule("missing-required-field").is_some();

    let results: Vec<(&PathBuf, Result<Linted, String>)> = files
        .par_iter()
        .map(|path| {
            let with_crlf = crlf.contains(path);
            (path, check_file(path, &bank, with_crlf, require_finding))
        })
        .collect();

    let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (path, result) in &results {
        match result {
            Ok(linted) => {
                for (code, n) in &linted.histogram {
                    *histogram.entry(code).or_insert(0) += n;
                }
            }
            Err(e) => failures.push(format!(
                "{}: {e}",
                path.strip_prefix(&root).unwrap_or(path).display()
            )),
        }
    }
    eprintln!(
        "corpora: {} markdown files linted ({} also as CRLF) in {:.1?}",
        files.len(),
        crlf.len(),
        started.elapsed()
    );
    if !require_finding {
        eprintln!("note: no `missing-required-field` rule yet; files that are neither lessons nor findings are not checked");
    }
    eprintln!("diagnostics by rule:");
    for (code, n) in &histogram {
        let name = lint::find_rule(code).map_or("?", |r| r.name);
        eprintln!("  {code} {name:<28} {n:>6}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn crlf_conversion_keeps_existing_crlf() {
    assert_eq!(to_crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n");
    assert_eq!(to_crlf(b"\n"), b"\r\n");
}
