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
use lesson::diagnostic::{apply_edits, Edit};
use lesson::distill::{gate_answer, Run};
use lesson::document::{split, Body, Document, Split};
use lesson::edit::frontmatter::{Frontmatter, NewItem, Unedit};
use lesson::layout::{state_path, INDEX_BASE_FILE, INDEX_DELTA_FILE};
use lesson::ledger::{Event, Ledger};
use lesson::lesson::{Counts, EvidenceKind, Outcome};
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

/// The sample banks' lessons: slug, title, tags, outcome.
const SAMPLE: [(&str, &str, &str, &str); 4] = [
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

static INDEX: LazyLock<IndexSample> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    for (slug, title, tags, outcome) in SAMPLE {
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

/// The lesson as JSON without the given top-level fields (as the writers' read-back compares).
fn json_without(lesson: &lesson::lesson::Lesson, fields: &[&str]) -> serde_json::Value {
    let mut value = serde_json::to_value(lesson).expect("lessons serialize");
    if let Some(map) = value.as_object_mut() {
        for f in fields {
            map.remove(*f);
        }
    }
    value
}

/// What `Frontmatter::append_evidence` is asked to add: `KIND\tREF[\tNOTE]`, as a writer would
/// ask (a known kind, a ref and a note on one line each, an empty note left out).
fn new_item(args: &str) -> Option<(EvidenceKind, &str, Option<&str>)> {
    let mut parts = args.splitn(3, '\t');
    let kind = EvidenceKind::parse(parts.next()?)?;
    let reference = parts.next()?;
    let note = parts.next().filter(|n| !n.is_empty());
    let one_line = |s: &str| !s.contains(['\n', '\r']);
    (!reference.trim().is_empty() && one_line(reference) && note.is_none_or(one_line))
        .then_some((kind, reference, note))
}

/// `edit`: the span edits of the writers (`lesson record`, `supersede`, `review --approve`,
/// the count fixes of lint and merge) on any document. The first line of the input names the
/// edit and its arguments, the rest is the file:
///
/// - `counts S F`: `set_counts`; `outcome O`: `set_outcome`;
/// - `evidence KIND\tREF\tNOTE`: `append_evidence`;
/// - `record S F KIND\tREF\tNOTE`: both, as `lesson record` makes them (the evidence first);
/// - `supersedes A B ...`: `add_supersedes` (valid slugs);
/// - `quarantine`: `remove_quarantine`.
///
/// An edit that refuses is a clean error. One that applies leaves a file whose YAML has no
/// new error, that is still a lesson, whose edited field reads the new value and whose other
/// fields, text before the frontmatter and body are unchanged; every edit lies inside the
/// frontmatter, none overlaps another.
pub fn edit(data: &[u8]) {
    let Some(newline) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let Ok(op) = std::str::from_utf8(&data[..newline]) else {
        return;
    };
    let (source, problem) =
        Source::from_bytes(PathBuf::from("fuzz.md"), data[newline + 1..].to_vec());
    if problem.is_some() {
        return;
    }
    let doc = Document::parse(source, None);
    let (Some(old), Some(fences)) = (doc.lesson.as_deref(), doc.fences()) else {
        return;
    };
    let Ok(fm) = Frontmatter::of(&doc) else {
        return;
    };
    let (name, args) = op.split_once(' ').unwrap_or((op, ""));
    let counts = |args: &str| -> Option<Counts> {
        let mut n = args.split(' ').map(|s| s.parse::<u64>().ok());
        Some(Counts {
            success_count: n.next()??,
            failure_count: n.next()??,
        })
    };
    let refused = |e: Unedit| assert!(!e.0.is_empty(), "a refusal without a reason");
    // the edits, the fields they change, and the check of the new lesson
    type Want<'a> = Box<dyn Fn(&lesson::lesson::Lesson) + 'a>;
    let evidence_after =
        |item: (EvidenceKind, &str, Option<&str>)| -> Vec<(String, String, Option<String>)> {
            let mut list: Vec<_> = old.evidence.iter().map(evidence_key).collect();
            list.push((
                item.0.as_str().to_string(),
                item.1.to_string(),
                item.2.map(str::to_string),
            ));
            list
        };
    let (edits, fields, want): (Vec<Edit>, Vec<&str>, Want) = match name {
        "counts" => {
            let Some(c) = counts(args) else { return };
            match fm.set_counts(c) {
                Ok(edits) => (
                    edits,
                    vec!["success_count", "failure_count"],
                    Box::new(move |new| assert_eq!(new.counts(), c, "the counts")),
                ),
                Err(e) => return refused(e),
            }
        }
        "outcome" => {
            let Some(o) = Outcome::parse(args) else {
                return;
            };
            match fm.set_outcome(o) {
                Ok(edit) => (
                    edit.into_iter().collect(),
                    vec!["outcome"],
                    Box::new(move |new| assert_eq!(new.outcome.value, o, "the outcome")),
                ),
                Err(e) => return refused(e),
            }
        }
        "evidence" => {
            let Some(item) = new_item(args) else { return };
            let want = evidence_after(item);
            match fm.append_evidence(new_item_of(item)) {
                Ok(edit) => (
                    vec![edit],
                    vec!["evidence"],
                    Box::new(move |new| {
                        let got: Vec<_> = new.evidence.iter().map(evidence_key).collect();
                        assert_eq!(got, want, "the evidence list");
                    }),
                ),
                Err(e) => return refused(e),
            }
        }
        "record" => {
            let mut parts = args.splitn(3, ' ');
            let (Some(s), Some(f), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
                return;
            };
            let (Some(c), Some(item)) = (counts(&format!("{s} {f}")), new_item(rest)) else {
                return;
            };
            let want = evidence_after(item);
            let edits = fm
                .append_evidence(new_item_of(item))
                .and_then(|e| Ok(std::iter::once(e).chain(fm.set_counts(c)?).collect()));
            match edits {
                Ok(edits) => (
                    edits,
                    vec!["success_count", "failure_count", "evidence"],
                    Box::new(move |new| {
                        assert_eq!(new.counts(), c, "the counts");
                        let got: Vec<_> = new.evidence.iter().map(evidence_key).collect();
                        assert_eq!(got, want, "the evidence list");
                    }),
                ),
                Err(e) => return refused(e),
            }
        }
        "supersedes" => {
            let mut slugs: Vec<&str> = Vec::new();
            for s in args.split(' ').filter(|s| !s.is_empty()) {
                if lesson::lesson::slug_problem(s).is_some() {
                    return;
                }
                if !slugs.contains(&s) {
                    slugs.push(s);
                }
            }
            let mut want: Vec<String> = old.supersedes.iter().map(|s| s.value.clone()).collect();
            for s in &slugs {
                if !want.iter().any(|w| w == s) {
                    want.push(s.to_string());
                }
            }
            match fm.add_supersedes(&slugs) {
                Ok(edit) => (
                    edit.into_iter().collect(),
                    vec!["supersedes"],
                    Box::new(move |new| {
                        let got: Vec<String> =
                            new.supersedes.iter().map(|s| s.value.clone()).collect();
                        assert_eq!(got, want, "`supersedes`");
                    }),
                ),
                Err(e) => return refused(e),
            }
        }
        "quarantine" => match fm.remove_quarantine() {
            Ok(Some(edit)) => (
                vec![edit],
                vec!["quarantine"],
                Box::new(|new| assert_eq!(new.quarantine, None, "the quarantine")),
            ),
            Ok(None) => return,
            Err(e) => return refused(e),
        },
        _ => return,
    };
    let text = &doc.source.text;
    for e in &edits {
        assert!(
            fences.content.start <= e.range.start && e.range.end <= fences.content.end,
            "an edit outside the frontmatter: {e:?}"
        );
    }
    let (out, applied) = apply_edits(text, &edits);
    assert_eq!(applied, edits.len(), "edits overlap: {edits:?}");
    let new = Document::parse(Source::new("fuzz.md", out.clone()), None);
    assert!(
        new.yaml_errors.len() <= doc.yaml_errors.len(),
        "the edit broke the YAML: {:?}\n{out}",
        new.yaml_errors
    );
    let (Some(lesson), Some(new_fences)) = (new.lesson.as_deref(), new.fences()) else {
        panic!("no longer a lesson after {op:?}:\n{out}");
    };
    want(lesson);
    assert_eq!(
        json_without(old, &fields),
        json_without(lesson, &fields),
        "another field changed:\n{out}"
    );
    assert_eq!(
        &text[..fences.content.start],
        &out[..new_fences.content.start]
    );
    assert_eq!(
        &text[fences.close.start..],
        &out[new_fences.close.start..],
        "the body changed"
    );
}

/// An evidence item as the lesson reads it.
fn evidence_key(e: &lesson::lesson::Evidence) -> (String, String, Option<String>) {
    (
        e.kind.value.as_str().to_string(),
        e.reference.value.clone(),
        e.note.as_ref().map(|n| n.value.clone()),
    )
}

fn new_item_of<'a>(item: (EvidenceKind, &'a str, Option<&'a str>)) -> NewItem<'a> {
    NewItem {
        kind: item.0.as_str(),
        reference: item.1,
        note: item.2,
    }
}

/// The small bank the `mcp` target copies for each input: the sample lessons and a quarantined
/// one, as (file name, bytes).
#[cfg(feature = "mcp")]
static MCP_BANK: LazyLock<Vec<(String, Vec<u8>)>> = LazyLock::new(|| {
    let mut files: Vec<(String, Vec<u8>)> = SAMPLE
        .into_iter()
        .map(|(slug, title, tags, outcome)| {
            let text = sample_lesson(slug, title, tags, outcome);
            (format!("{slug}.md"), text.into_bytes())
        })
        .collect();
    let held = sample_lesson(
        "held-back",
        "Hold back a suspicious lesson",
        "ci",
        "success",
    )
    .replacen(
        "---\n\n",
        "metadata:\n  lesson:\n    quarantine: [D014]\n---\n\n",
        1,
    );
    files.push(("held-back.md".into(), held.into_bytes()));
    files
});

/// Every file under `root` but the state directory `.lesson/`, with its bytes.
#[cfg(feature = "mcp")]
fn bank_files(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with(".lesson") {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// `mcp`: the `lesson mcp` tools' arguments, from a JSON-RPC line to the library. rmcp decodes
/// the protocol itself; what is ours is each tool's argument type (`src/cli/mcp/params.rs`,
/// compiled here) and the library call the tool makes. Each line of the input that is a
/// `tools/call` request has its `arguments` decoded into the named tool's type as rmcp does
/// (`serde_json::from_value`), then goes to the library call the server makes (search, get,
/// list, review, record, propose, lint) on a fresh copy of a small bank, the lines in turn.
/// Nothing panics; a write tool (record, propose) that refuses, or a dry run, changes no file
/// of the bank; one that succeeds leaves every lesson file a lesson.
#[cfg(feature = "mcp")]
pub fn mcp(data: &[u8]) {
    use crate::mcp_params as params;
    use serde_json::Value;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (name, bytes) in MCP_BANK.iter() {
        std::fs::write(root.join(name), bytes).unwrap();
    }
    let now: jiff::Timestamp = NOW.parse().unwrap();
    for line in data.split(|&b| b == b'\n') {
        let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if request.get("method").and_then(Value::as_str) != Some("tools/call") {
            continue;
        }
        let Some(Value::Object(call)) = request.get("params") else {
            continue;
        };
        let Some(tool) = call.get("name").and_then(Value::as_str) else {
            continue;
        };
        // rmcp gives a missing `arguments` as an empty object
        let args = match call.get("arguments") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(a @ Value::Object(_)) => a.clone(),
            Some(_) => continue,
        };
        let before = bank_files(root);
        let wrote = |ok: bool, dry_run: bool| {
            let after = bank_files(root);
            if !ok || dry_run {
                assert!(before == after, "{tool}: a refused call or a dry run wrote");
                return;
            }
            for (path, bytes) in &after {
                if path.extension().is_some_and(|e| e == "md") && path != Path::new("_index.md") {
                    let (source, problem) = Source::from_bytes(path.clone(), bytes.clone());
                    let doc = Document::parse(source, problem);
                    assert!(
                        doc.lesson.is_some(),
                        "{tool}: {} is no lesson",
                        path.display()
                    );
                }
            }
        };
        match tool {
            "search" => {
                let Ok(p) = serde_json::from_value::<params::Search>(args) else {
                    continue;
                };
                // the server's translation; a run to log the search for is only checked
                let (request, run_id) = p.request(now);
                if run_id.is_some_and(|r| lesson::usage::check_run(&r).is_err()) {
                    continue;
                }
                let mut r = Retriever::open(root).expect("the sample bank opens");
                let answer = r.answer(&request).expect("a search of the sample bank");
                assert!(
                    answer.hits.iter().all(|h| h.slug != "held-back"),
                    "a quarantined lesson was served"
                );
            }
            "get" => {
                let Ok(p) = serde_json::from_value::<params::Get>(args) else {
                    continue;
                };
                if lesson::lesson::slug_problem(&p.slug).is_some() {
                    continue;
                }
                let r = Retriever::open(root).expect("the sample bank opens");
                let _ = lesson::curate::show::find_indexed(&r, &p.slug, now);
            }
            "list" => {
                let Ok(p) = serde_json::from_value::<params::List>(args) else {
                    continue;
                };
                let Ok(query) = p.query(now) else { continue };
                let bank = lesson::lint::load_lessons(root, now).expect("the sample bank loads");
                let (figures, _) = lesson::usage::figures(root).expect("the usage figures");
                let rows = lesson::listing::list(&bank, None, &figures, &query);
                let _ = lesson::report::lessons::json_list(&rows);
            }
            "review" => {
                if serde_json::from_value::<params::Nothing>(args).is_err() {
                    continue;
                }
                let bank = lesson::lint::load(root, now).expect("the sample bank loads");
                lesson::curate::review::review(&bank).expect("review");
            }
            "record" => {
                let Ok(p) = serde_json::from_value::<params::Record>(args) else {
                    continue;
                };
                // the server's checks and translation (`do_record`)
                if lesson::lesson::slug_problem(&p.slug).is_some() {
                    continue;
                }
                let Ok((req, by)) = p.request() else {
                    continue;
                };
                let Some(stamp) = stamp(by, now) else {
                    continue;
                };
                let done = lesson::curate::record::record(root, &req, &stamp);
                wrote(done.is_ok(), false);
            }
            "propose" => {
                let Ok(mut p) = serde_json::from_value::<params::Propose>(args) else {
                    continue;
                };
                let Ok((bytes, intake)) = p.input() else {
                    continue;
                };
                let Ok(candidates) = read_candidates("propose", bytes) else {
                    continue;
                };
                let Some(stamp) = stamp(p.by, now) else {
                    continue;
                };
                let added = lesson::curate::add::add(root, &candidates, &intake, &stamp, p.dry_run);
                if let Err(e) = &added {
                    assert!(!e.to_string().contains("please report"), "propose: {e}");
                }
                wrote(added.is_ok(), p.dry_run);
            }
            "lint" => {
                let Ok(p) = serde_json::from_value::<params::Lint>(args) else {
                    continue;
                };
                if p.select
                    .iter()
                    .any(|s| lesson::lint::check_selector(s).is_err())
                {
                    continue;
                }
                // the server takes only paths inside the bank (`inside_bank`)
                let bank = root.canonicalize().unwrap();
                let mut paths = Vec::new();
                for p in &p.paths {
                    match root.join(p).canonicalize() {
                        Ok(real) if real.starts_with(&bank) => paths.push(root.join(p)),
                        _ => continue,
                    }
                }
                if paths.len() != p.paths.len() {
                    continue;
                }
                let selection = lesson::lint::Selection {
                    paths,
                    rules: p.select,
                };
                lesson::lint::lint_report(root, now, &selection).expect("lint the sample bank");
            }
            _ => {}
        }
    }
}

/// Who and when, as the server's `stamp` takes `by` (an id on one line, else the default).
#[cfg(feature = "mcp")]
fn stamp(by: Option<String>, at: jiff::Timestamp) -> Option<lesson::curate::Stamp> {
    let by = by.unwrap_or_else(|| "fuzz@mcp".into());
    (!by.trim().is_empty() && !by.contains(['\n', '\r']))
        .then_some(lesson::curate::Stamp { at, by })
}
