//! What each fuzz target checks, one function per target, taking the fuzzer's bytes. The same
//! file is compiled twice: here, where `fuzz::replay_*` runs every input saved under
//! `tests/fuzz/TARGET/` (the crashes fuzzing found, and a few seeds) on stable in `cargo test`,
//! and as the library of the cargo-fuzz crate (`fuzz/src/lib.rs`), whose targets in
//! `fuzz/fuzz_targets/` call these functions. A check panics when the library breaks a
//! guarantee; a panic of the library itself is a crash as well.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use lesson::bank::Bank;
use lesson::config::Config;
use lesson::curate::add::{prepare_all, read_candidates, Intake, Rejection};
use lesson::distill::{gate_answer, Run};
use lesson::document::{split, Body, Document, Split};
use lesson::layout::{state_path, INDEX_BASE_FILE, INDEX_DELTA_FILE};
use lesson::ledger::{Event, Ledger};
use lesson::retrieve::{Hit, Request, Retriever};
use lesson::source::Source;
use lesson::yaml::Yaml;

use crate::diagnostic_positions;

/// The instant every check judges expiry at.
const NOW: &str = "2026-11-22T12:00:00Z";

/// An empty bank, never on disk: the context of the file rules and the gates.
static BANK: LazyLock<Bank> = LazyLock::new(|| {
    let files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    Bank::from_files(
        Path::new("/fuzz-bank"),
        Config::default(),
        files,
        NOW.parse().unwrap(),
        None,
    )
});

/// Every finding points inside the source it names (`sources`: the texts they point into).
fn findings_inside(diagnostics: &[lesson::Diagnostic], sources: &[Source]) {
    for d in diagnostics {
        let source = sources
            .iter()
            .find(|s| s.path == d.path)
            .unwrap_or_else(|| panic!("{} {}: no source for {}", d.code, d.name, d.path.display()));
        if let Err(why) = diagnostic_positions::check(source, d) {
            panic!("{why}\n{}", source.text);
        }
    }
}

/// `parse`: a file split at its fences, its YAML (fast path and saphyr), its body (heading
/// scanner and pulldown-cmark), the typed lesson, and the file rules.
///
/// The full parse and the frontmatter-only parse agree on the lesson; a fast path that takes
/// the input gives what the full parser gives; every finding points inside the file.
pub fn parse(data: &[u8]) {
    let (source, problem) = Source::from_bytes(PathBuf::from("fuzz.md"), data.to_vec());
    let lossy = problem.is_some().then(|| {
        let text = String::from_utf8_lossy(data).replace('\0', " ");
        Source::new("fuzz.md", text)
    });
    parse_source(source, problem);
    if let Some(source) = lossy {
        parse_source(source, None);
    }
}

fn parse_source(source: Source, problem: Option<lesson::source::ReadProblem>) {
    let full = Document::parse(source.clone(), problem.clone());
    let slim = Document::parse_frontmatter(source, problem);
    assert_eq!(
        full.lesson, slim.lesson,
        "the two parses disagree on the lesson"
    );
    let text = &full.source.text;
    if let Split::Yaml(f) = split(text) {
        let content = &text[f.content.clone()];
        if let Some(fast) = Yaml::parse_fast(content, f.content.start) {
            let (reference, errors) = Yaml::parse_with_saphyr(content, f.content.start);
            assert!(
                errors.is_empty(),
                "the fast path took YAML saphyr rejects: {errors:?}"
            );
            assert_eq!(
                Some(fast),
                reference,
                "the YAML fast path built another tree"
            );
        }
    }
    if let Some(body) = &full.body {
        if let Some(fast) = Body::parse_fast(text, body.start) {
            assert_eq!(
                fast,
                Body::parse_with_pulldown(text, body.start),
                "the heading scanner found other headings"
            );
        }
    }
    let found = lesson::lint::lint_document(&full, &BANK);
    findings_inside(&found, std::slice::from_ref(&full.source));
}

/// `ledger`: a ledger's lines. Every event read writes back as one line that reads back as
/// the same event; every torn line's range lies inside the file; the tally never panics.
pub fn ledger(data: &[u8]) {
    let ledger = Ledger::parse(Path::new("_log/fuzz.jsonl"), data);
    for entry in &ledger.entries {
        let line = entry.event.to_line();
        let one = line
            .strip_suffix('\n')
            .expect("an event line ends with \\n");
        assert!(
            !one.contains(['\n', '\r']),
            "an event wrote two lines: {line:?}"
        );
        let back = Event::parse(one).unwrap_or_else(|e| panic!("{line:?} does not read back: {e}"));
        assert_eq!(back, entry.event, "{line:?} reads back as another event");
    }
    for p in &ledger.problems {
        assert!(p.range.start <= p.range.end && p.range.end <= data.len());
        assert!(p.line >= 1);
    }
    if let Some(tally) = ledger.tally() {
        let _ = tally.counts();
    }
}

/// The lines of a ledger's text as the merge keys them: without the line ending.
fn line_keys(text: &str) -> HashMap<&str, usize> {
    let mut keys = HashMap::new();
    for line in text.split_inclusive('\n') {
        let key = line.trim_end_matches(['\n', '\r']);
        if !key.trim().is_empty() {
            *keys.entry(key).or_default() += 1;
        }
    }
    keys
}

/// `merge`: two ledgers (ours, a NUL byte, theirs) merged as `lesson merge-file` and `lesson
/// sync` merge them. Each event line is kept as often as the side that has it most often;
/// every line ends with a line ending; merging the result with either side again changes
/// nothing; no event of either side is lost.
pub fn merge(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (ours, theirs) = text.split_once('\0').unwrap_or((&text, ""));
    let merged = lesson::merge::ledger("", ours, theirs);
    assert!(merged.is_empty() || merged.ends_with('\n'));
    let (o, t, m) = (line_keys(ours), line_keys(theirs), line_keys(&merged));
    for (key, n) in &m {
        let want = o
            .get(key)
            .copied()
            .unwrap_or(0)
            .max(t.get(key).copied().unwrap_or(0));
        assert_eq!(*n, want, "{key:?} is {n} times in the merge");
    }
    assert!(
        o.keys().chain(t.keys()).all(|k| m.contains_key(k)),
        "a line was lost"
    );
    assert_eq!(lesson::merge::ledger("", &merged, theirs), merged);
    assert_eq!(lesson::merge::ledger("", &merged, ours), merged);
    let events = |s: &str| {
        Ledger::parse(Path::new("x.jsonl"), s.as_bytes())
            .entries
            .len()
    };
    let n = events(&merged);
    assert!(
        n >= events(ours) && n >= events(theirs),
        "an event was lost"
    );
}

/// Problems the library asks users to report: a bug whatever the input.
fn no_internal_problem(rejection: &Rejection) {
    for p in &rejection.problems {
        assert!(
            !p.message.contains("please report"),
            "{}: {}",
            p.label,
            p.message
        );
    }
    findings_inside(&rejection.diagnostics, &rejection.sources);
}

/// `add`: `lesson add`'s input (JSON candidates or a `LESSON.md`), through its whole gate
/// against an empty bank. Nothing the gate says is an internal error; every finding points
/// into its text; an admitted candidate is a complete lesson whose file lints without errors.
pub fn add(data: &[u8]) {
    let Ok(candidates) = read_candidates("fuzz", data.to_vec()) else {
        return;
    };
    let (prepared, rejection) = prepare_all(&BANK, &candidates, &Intake::default());
    no_internal_problem(&rejection);
    for p in &prepared {
        assert_eq!(p.doc.lesson.as_deref(), Some(&p.lesson));
        let errors: Vec<_> = lesson::lint::lint_document(&p.doc, &BANK)
            .into_iter()
            .filter(|d| d.severity == lesson::Severity::Error)
            .collect();
        assert!(
            errors.is_empty(),
            "admitted with errors: {errors:?}\n{}",
            p.doc.source.text
        );
    }
}

/// The run the judge answers about.
static RUN: LazyLock<Run> = LazyLock::new(|| {
    Run::parse(br#"{"id": "r_fuzz", "outcome": "failure", "request": "deploy"}"#).unwrap()
});

/// `judge`: a distill judge's stdout, through the write gate. Whatever it prints, a verdict
/// that passes names a lesson the judge was shown, and a candidate that passes cites the run
/// and is a complete lesson.
pub fn judge(data: &[u8]) {
    let matched = ["shown-lesson".to_string()];
    let Ok((verdicts, prepared, rejection)) = gate_answer(&BANK, &RUN, &matched, data) else {
        return;
    };
    no_internal_problem(&rejection);
    if rejection.refused() {
        return;
    }
    for v in &verdicts {
        assert!(matched.contains(&v.slug), "a verdict on {}", v.slug);
        assert!(v.note.as_deref().is_none_or(|n| !n.contains('\n')));
    }
    for p in &prepared {
        let cites = p
            .lesson
            .evidence
            .iter()
            .any(|e| e.reference.value == RUN.id);
        assert!(cites, "a candidate that does not cite the run passed");
        assert_eq!(p.doc.lesson.as_deref(), Some(&p.lesson));
    }
}

/// A small bank on disk with its retrieval index (a base and a delta) and the answers a fresh
/// index gives.
struct IndexSample {
    root: PathBuf,
    base: Vec<u8>,
    delta: Option<Vec<u8>>,
    requests: Vec<Request>,
    answers: Vec<Vec<Hit>>,
    busy: std::sync::Mutex<()>,
    _dir: tempfile::TempDir,
}

fn sample_lesson(slug: &str, title: &str, tags: &str, outcome: &str) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: {title}\n  tags: [{tags}]\noutcome: {outcome}\nevidence:\n  - kind: run\n    ref: r_{slug}\nsuccess_count: 2\nfailure_count: 1\n---\n\n# {title}\n\n## When this applies\n\n{title}\n\n## What to do (or avoid)\n\nDo it.\n\n## Counter-example\n\nNone.\n"
    )
}

static INDEX: LazyLock<IndexSample> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let lessons = [
        (
            "cache-cargo-in-ci",
            "Cache the cargo registry in CI",
            "ci, cache",
            "success",
        ),
        (
            "pin-nightly",
            "Pin the nightly toolchain for fuzzing",
            "rust, ci",
            "success",
        ),
        (
            "retry-flaky-tests",
            "Retry flaky network tests once",
            "tests",
            "failure",
        ),
        (
            "review-unsafe",
            "Review unsafe blocks twice",
            "rust, review",
            "mixed",
        ),
    ];
    for (slug, title, tags, outcome) in lessons {
        std::fs::write(
            root.join(format!("{slug}.md")),
            sample_lesson(slug, title, tags, outcome),
        )
        .unwrap();
    }
    let mut retriever = Retriever::open(&root).unwrap();
    // a changed file and a new one: the index patches the base with a delta
    let (slug, title) = (
        "pin-nightly",
        "Pin the nightly toolchain for cargo fuzz runs",
    );
    std::fs::write(
        root.join(format!("{slug}.md")),
        sample_lesson(slug, title, "rust", "success"),
    )
    .unwrap();
    let (slug, title) = ("fuzz-the-parsers", "Fuzz the parsers before a release");
    std::fs::write(
        root.join(format!("{slug}.md")),
        sample_lesson(slug, title, "rust, tests", "success"),
    )
    .unwrap();
    retriever.refresh().unwrap();
    drop(retriever);
    let base = std::fs::read(state_path(&root, INDEX_BASE_FILE)).unwrap();
    let delta = std::fs::read(state_path(&root, INDEX_DELTA_FILE)).ok();
    let now = NOW.parse().unwrap();
    let requests: Vec<Request> = ["cache cargo in ci", "fuzz nightly rust", "flaky tests", ""]
        .into_iter()
        .map(|text| Request {
            now,
            include_expired: true,
            ..Request::new(text)
        })
        .collect();
    let mut fresh = Retriever::open(&root).unwrap();
    let answers = requests
        .iter()
        .map(|r| fresh.search(r).unwrap().hits)
        .collect();
    IndexSample {
        root,
        base,
        delta,
        requests,
        answers,
        busy: std::sync::Mutex::new(()),
        _dir: dir,
    }
});

/// The sizes of the `index` sample's base and delta files.
#[allow(dead_code)] // the fuzz crate does not call it
pub fn index_sizes() -> (usize, usize) {
    (INDEX.base.len(), INDEX.delta.as_ref().map_or(0, Vec::len))
}

/// `index`: damaged `.lesson/` index files. The input replaces or edits the base or the delta
/// of a small bank's index: byte 0 chooses which and how (0: base = the rest, 1: delta = the
/// rest, 2 and 3: the base or the delta with edits), then each 5 bytes are an edit (offset
/// u32 LE, high bit set: truncate there; else XOR the byte there with the fifth). Opening the
/// bank and searching it then never fails and answers exactly as a fresh index does.
pub fn index(data: &[u8]) {
    let sample = &*INDEX;
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut base = sample.base.clone();
    let mut delta = sample.delta.clone();
    match mode % 4 {
        0 => base = rest.to_vec(),
        1 => delta = Some(rest.to_vec()),
        m => {
            let file = if m == 2 {
                Some(&mut base)
            } else {
                delta.as_mut()
            };
            if let Some(file) = file {
                for edit in rest.chunks_exact(5) {
                    let at = u32::from_le_bytes([edit[0], edit[1], edit[2], edit[3]]);
                    if file.is_empty() {
                        break;
                    }
                    let offset = (at & 0x7fff_ffff) as usize % file.len();
                    if at & 0x8000_0000 != 0 {
                        file.truncate(offset);
                    } else {
                        file[offset] ^= edit[4];
                    }
                }
            }
        }
    }
    let root = &sample.root;
    // one check at a time on the sample (tests run in parallel); files are replaced, never
    // truncated in place under a mapping
    let _one = sample.busy.lock().unwrap_or_else(|e| e.into_inner());
    let replace = |name: &str, bytes: &[u8]| {
        let tmp = state_path(root, &format!("{name}.fuzz"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, state_path(root, name)).unwrap();
    };
    replace(INDEX_BASE_FILE, &base);
    match &delta {
        Some(d) => replace(INDEX_DELTA_FILE, d),
        None => {
            let _ = std::fs::remove_file(state_path(root, INDEX_DELTA_FILE));
        }
    }
    let mut retriever = Retriever::open(root).expect("a damaged index is rebuilt, not an error");
    for (request, want) in sample.requests.iter().zip(&sample.answers) {
        let got = retriever
            .search(request)
            .expect("a search of a damaged index");
        assert_eq!(
            &got.hits, want,
            "a damaged index answered {:?} otherwise",
            request.text
        );
    }
}
