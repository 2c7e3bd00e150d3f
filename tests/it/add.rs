//! `lesson add`: candidates (JSON or LESSON.md, from a file or stdin) validated, deduplicated
//! and admitted, all or nothing. Runs the binary on a copy of `tests/fixtures/edits/` (comments,
//! unusual key order, flow lists, CRLF) and snapshots transcripts and byte diffs of the bank.

use crate::sandbox::{diff, Sandbox};

const FIXTURE: &str = "tests/fixtures/edits";

/// Write `text` as `name` beside the bank, run `lesson add name ARGS`; the transcript and the
/// bank's diff. The bank must lint clean (errors) afterwards.
fn add(s: &Sandbox, name: &str, text: &str, args: &[&str]) -> String {
    s.write(name, text);
    let before = s.tree();
    let mut all = vec!["add", name];
    all.extend(args);
    let run = s.run(&all);
    let after = s.tree();
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "{lint}");
    format!("{run}--- diff\n{}", diff(&before, &after))
}

#[test]
fn new_lessons_from_a_json_array() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    let out = add(
        &s,
        "candidates.json",
        r##"[
  {"slug": "pin-the-toolchain", "title": "Pin the Rust toolchain.",
   "trigger": {"description": "CI builds break when a new stable Rust ships.", "tags": ["ci", "rust"],
               "targets": [{"role": "ci-*"}]},
   "outcome": "failure",
   "evidence": [{"kind": "work-item", "ref": "wi-9", "note": "nightly broke the build: twice"}],
   "expires_at": "2027-06-01T00:00:00Z",
   "body": "# Pin the Rust toolchain.\n\n## When this applies\n\nCI.\n\n## What to do (or avoid)\n\nCommit a rust-toolchain.toml.\n\n## Counter-example\n\nA new stable release broke main.\n"},
  {"slug": "name-temp-files-uniquely", "title": "Name temp files uniquely.",
   "trigger": {"description": "Two writers share a directory.", "tags": ["files"]},
   "outcome": "success", "evidence": [{"kind": "run", "ref": "r_77"}]}
]
"##,
        &[],
    );
    insta::assert_snapshot!(out);
}

/// A near-duplicate of each fixture lesson (another slug, the same trigger) with one new
/// evidence item: only the evidence list grows, in the lesson's own style.
#[test]
fn a_duplicate_is_absorbed_with_a_minimal_diff() {
    let cases = [
        (
            "retry-with-jitter",
            r##"{"slug": "add-jitter-to-retries", "title": "Add jitter to retries.",
 "trigger": {"description": "Retrying calls to a shared service after a rate limit.", "tags": ["retries"]},
 "outcome": "success", "evidence": [{"kind": "run", "ref": "r_2026-11-22_x9", "note": "jitter again: it worked"}],
 "body": "# Add jitter to retries.\n\nA different body, which is not taken.\n"}"##,
        ),
        (
            "cache-embeddings",
            r##"{"slug": "cache-embeddings-by-hash", "title": "Cache embeddings by content hash.",
 "trigger": {"description": "Embedding the same documents on every run", "tags": ["embeddings"]},
 "outcome": "success", "evidence": [{"kind": "work-item", "ref": "wi-12"}, {"kind": "run", "ref": "r_2026-09-12_c"}]}"##,
        ),
        (
            "quote-yaml-values",
            r##"{"slug": "quote-yaml-indicator-values", "title": "Quote YAML values that start with an indicator.",
 "trigger": {"description": "Writing frontmatter by hand.", "tags": ["yaml"]},
 "outcome": "failure", "evidence": [{"kind": "conversation", "ref": "c_2026-11-22_q", "note": "an & started a value"}]}"##,
        ),
    ];
    for (slug, candidate) in cases {
        let s = Sandbox::with_indexed_bank(FIXTURE);
        let out = add(&s, "candidate.json", candidate, &[]);
        insta::assert_snapshot!(format!("add_duplicate-{slug}"), out);
    }
}

#[test]
fn a_batch_is_all_or_nothing() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    std::fs::create_dir(s.bank().join("_archive")).unwrap();
    std::fs::write(
        s.bank().join("_archive/retired-advice.md"),
        "---\nslug: retired-advice\n---\n",
    )
    .unwrap();
    let before = s.tree();
    let valid = r##"{"slug": "pin-the-toolchain", "title": "Pin the Rust toolchain.",
  "trigger": {"description": "CI builds break when a new stable Rust ships.", "tags": ["ci"]},
  "outcome": "failure", "evidence": [{"kind": "work-item", "ref": "wi-9"}]}"##;
    let duplicate = r##"{"slug": "add-jitter-to-retries", "title": "Add jitter to retries.",
  "trigger": {"description": "Retrying calls to a shared service after a rate limit.", "tags": ["retries"]},
  "outcome": "success", "evidence": [{"kind": "run", "ref": "r_new"}]}"##;
    let invalid = r##"{"slug": "log-it", "title": "Log it.", "trigger": {"description": "Always."},
  "outcome": "success", "evidence": []}"##;
    let archived = r##"{"slug": "retired-advice", "title": "Deploy with the retired tool.",
  "trigger": {"description": "Deploying a service by hand.", "tags": ["deploy"]},
  "outcome": "success", "evidence": [{"kind": "run", "ref": "r_1"}]}"##;
    let mut out = String::new();
    // a candidate that fails validation: exit 1
    s.write("batch.json", &format!("[{valid}, {duplicate}, {invalid}]"));
    let run = s.run(&["add", "batch.json"]);
    assert_eq!(run.code, 1, "{run}");
    out.push_str(&run.to_string());
    // a candidate refused while planning (its slug belongs to an archived lesson): exit 2
    s.write("batch.json", &format!("[{valid}, {duplicate}, {archived}]"));
    let run = s.run(&["add", "batch.json"]);
    assert_eq!(run.code, 2, "{run}");
    out.push_str(&run.to_string());
    assert!(s.tree() == before, "{}", diff(&before, &s.tree()));
    insta::assert_snapshot!(out);
}

#[test]
fn invalid_candidates_are_reported_with_positions() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    let before = s.tree();
    // JSON: positions in the LESSON.md the candidate would become (shown under each finding)
    s.write("bad.json", r##"[{}, "not a lesson"]"##);
    let mut out = s.run(&["add", "bad.json"]).to_string();
    s.write(
        "bad.json",
        r##"[{"slug": "Log_Every_Retry", "title": "Log every retry.",
   "trigger": {"description": "Retrying.", "tags": ["Retries"]},
   "outcome": "sometimes", "evidence": [{"kind": "log", "ref": "r1"}], "priority": 2, "body": 7},
  {"slug": "old-way", "title": "Use the new way.", "trigger": {"description": "Choosing a way."},
   "outcome": "success", "evidence": [{"kind": "run", "ref": "r2"}], "supersedes": ["retry-immediately"]}]"##,
    );
    out.push_str(&s.run(&["add", "bad.json"]).to_string());
    // LESSON.md: positions in the file as given (the confidence it claims is not checked: it
    // is not taken)
    s.write(
        "bad.md",
        "---\nschema: learning/v1\nslug: log-every-retry\ntitle: Log every retry.\ntrigger:\n  description: Retrying.\n  tags: [retries]\noutcome: success\nevidence: []\nconfidence: 2\n---\n\n# Log every retry\n",
    );
    out.push_str(&s.run(&["add", "bad.md"]).to_string());
    s.write("broken.md", "---\nslug: [unclosed\n---\n");
    out.push_str(&s.run(&["add", "broken.md"]).to_string());
    s.write("broken.json", "[{\"slug\": \"a\"},\n {\"slug\": }]");
    out.push_str(&s.run(&["add", "broken.json"]).to_string());
    assert!(s.tree() == before, "{}", diff(&before, &s.tree()));
    insta::assert_snapshot!(out);
}

#[test]
fn a_lesson_md_from_stdin() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    let before = s.tree();
    let candidate = "---\n# from another bank\nslug: stream-large-uploads\nschema: learning/v1\ntitle: Stream large uploads.\ntrigger:\n  description: Uploading files larger than memory.\n  tags: [uploads]\noutcome: success\nevidence:\n  - {kind: run, ref: r_up_1}\nsuccess_count: 9\n---\n\n# Stream large uploads.\n\n## When this applies\n\nFiles of several GB.\n\n## What to do (or avoid)\n\nStream them in chunks.\n\n## Counter-example\n\nThe worker ran out of memory.\n";
    let run = s.run_with_stdin(&["add", "-"], candidate.as_bytes());
    assert_eq!(run.code, 0, "{run}");
    insta::assert_snapshot!(format!("{run}--- diff\n{}", diff(&before, &s.tree())));
}

#[test]
fn foreign_counts_are_ignored_and_the_origin_kept() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    let out = add(
        &s,
        "import.json",
        r##"{"schema": "agentlearning/v1", "slug": "prefer-batch-calls", "title": "Prefer batch calls when rate-limited.",
  "trigger": {"description": "Many small calls against a rate-limited API.", "tags": ["batching"]},
  "outcome": "success", "evidence": [{"kind": "run", "ref": "r_team_x_4"}],
  "confidence": 0.95, "success_count": 40, "failure_count": 0,
  "metadata": {"lesson": {"origin": {"bank": "team-x"}}, "acme": {"reviewed": true}}}"##,
        &["--origin", "git@example.test:team-x/lessons"],
    );
    insta::assert_snapshot!(out);
}

#[test]
fn adding_the_same_candidates_again_changes_nothing() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    let candidates = r##"[{"slug": "pin-the-toolchain", "title": "Pin the Rust toolchain.",
  "trigger": {"description": "CI builds break when a new stable Rust ships.", "tags": ["ci"]},
  "outcome": "failure", "evidence": [{"kind": "work-item", "ref": "wi-9"}]},
 {"slug": "add-jitter-to-retries", "title": "Add jitter to retries.",
  "trigger": {"description": "Retrying calls to a shared service after a rate limit.", "tags": ["retries"]},
  "outcome": "success", "evidence": [{"kind": "run", "ref": "r_new"}]}]"##;
    s.write("c.json", candidates);
    let before = s.tree();
    let dry = s.run(&["add", "c.json", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry}");
    assert!(s.tree() == before, "a dry run writes nothing");
    let first = s.run(&["add", "c.json"]);
    assert_eq!(first.code, 0, "{first}");
    let after = s.tree();
    assert!(after != before);
    let again = s.run(&["add", "c.json"]);
    assert_eq!(again.code, 0, "{again}");
    assert!(s.tree() == after, "{}", diff(&after, &s.tree()));
    insta::assert_snapshot!(format!("{dry}{first}{again}"));
}

#[test]
fn a_candidate_that_is_no_lesson_is_refused_even_with_its_rules_off() {
    let s = Sandbox::with_indexed_bank(FIXTURE);
    std::fs::write(
        s.bank().join("lesson.toml"),
        "[lint.rules]\ninvalid-outcome = \"off\"\nmissing-required-field = \"off\"\n",
    )
    .unwrap();
    let before = s.tree();
    s.write(
        "c.json",
        r##"[{"slug": "log-it", "title": "Log it.", "trigger": {"description": "Always.", "tags": ["logs"]},
  "outcome": "sometimes", "evidence": [{"kind": "run", "ref": "r1"}]},
 {"slug": "log-more", "title": "Log more.", "trigger": {"description": "Always.", "tags": ["logs"]},
  "evidence": [{"kind": "run", "ref": "r1"}]}]"##,
    );
    let run = s.run(&["add", "c.json"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(s.tree() == before);
    insta::assert_snapshot!(run.to_string());
}

mod batches {
    //! Any batch: with one invalid candidate nothing changes; without, every candidate is
    //! created or merged and the bank lints without errors (counts agree with the ledgers).

    use std::path::Path;

    use lesson::curate::add::{add, read_candidates, AddError, Admitted, Intake};
    use lesson::curate::Stamp;
    use lesson::diagnostic::Severity;
    use proptest::prelude::*;

    const WORDS: [&str; 6] = ["retry", "cache", "jitter", "batch", "upload", "yaml"];

    fn candidate() -> impl Strategy<Value = serde_json::Value> {
        (
            prop::sample::subsequence(WORDS.to_vec(), 2),
            prop::sample::select(WORDS.to_vec()),
            0u8..3,
            prop::sample::select(vec!["success", "failure", "mixed"]),
        )
            .prop_map(|(words, tag, run, outcome)| {
                let title = format!("Prefer {} over {}.", words[0], words[1]);
                serde_json::json!({
                    "slug": format!("{}-{}", words[0], words[1]),
                    "title": title,
                    "trigger": {"description": format!("When {} meets {}.", words[0], words[1]), "tags": [tag]},
                    "outcome": outcome,
                    "evidence": [{"kind": "run", "ref": format!("r_{run}")}],
                    "confidence": 0.9, "success_count": 7,
                    "body": format!("# {title}\n\n## When this applies\n\nx\n\n## What to do (or avoid)\n\ny\n\n## Counter-example\n\nz\n"),
                })
            })
    }

    fn tree(root: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = walkdir::WalkDir::new(root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".lesson")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::cases(24)))]

        #[test]
        fn all_or_nothing(mut batch in prop::collection::vec(candidate(), 1..5), broken in prop::option::of(0usize..5)) {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("lessons");
            std::fs::create_dir(&root).unwrap();
            for entry in std::fs::read_dir(super::FIXTURE).unwrap() {
                let path = entry.unwrap().path();
                std::fs::copy(&path, root.join(path.file_name().unwrap())).unwrap();
            }
            let broken = broken.filter(|&i| i < batch.len());
            if let Some(i) = broken {
                batch[i]["evidence"] = serde_json::json!([]);
            }
            let bytes = serde_json::to_vec(&batch).unwrap();
            let candidates = read_candidates("batch.json", bytes).unwrap();
            let stamp = Stamp { at: "2026-11-22T12:00:00Z".parse().unwrap(), by: "tester".into() };
            let before = tree(&root);
            let result = add(&root, &candidates, &Intake::default(), &stamp, false);
            if broken.is_some() {
                prop_assert!(matches!(result, Err(AddError::Rejected(_))));
                prop_assert!(tree(&root) == before);
                return Ok(());
            }
            let added = result.unwrap();
            prop_assert_eq!(added.admitted.len(), batch.len());
            let bank = lesson::Bank::load(&root, crate::sandbox::NOW.parse().unwrap()).unwrap();
            let errors: Vec<_> = lesson::lint::lint(&bank, &Default::default())
                .into_iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| format!("{}:{} {} {}", d.path.display(), d.line, d.code, d.message))
                .collect();
            prop_assert!(errors.is_empty(), "{:?}", errors);
            for a in &added.admitted {
                if let Admitted::Created { slug, .. } = a {
                    let (_, lesson) = bank.by_slug()[slug.as_str()];
                    prop_assert_eq!(lesson.confidence(), 0.5);
                    prop_assert_eq!((lesson.successes(), lesson.failures()), (0, 0));
                }
            }
        }
    }
}

mod corpus {
    //! `lesson add` on a slice of real material (160 candidates made as `cargo xtask eval-dedup`
    //! makes lessons from `../shared/corpora`: 80 Reflexion self-reflections of 14 tasks, 80
    //! Dynamic Cheatsheet item versions of 31 items, so many are near-duplicates): the decision
    //! is deterministic and order-independent, adding again changes nothing, and `lesson dedup`
    //! reports no pair that `add` made.

    use std::collections::{BTreeSet, HashSet};
    use std::path::{Path, PathBuf};

    use lesson::curate::add::{add, read_candidates, Admitted, Intake};
    use lesson::curate::Stamp;
    use lesson::Bank;

    use crate::sandbox::NOW;

    /// `../shared/corpora`, if it is there.
    fn corpora() -> Option<PathBuf> {
        let dir = match std::env::var_os("LESSON_CORPORA_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora"),
        };
        let needed = [
            "reflexion-reflections/reflections.jsonl",
            "dynamic-cheatsheet/memory_item_versions.jsonl",
        ];
        needed.iter().all(|f| dir.join(f).is_file()).then_some(dir)
    }

    fn rows(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Whitespace runs made one space, control characters dropped, at most `max` characters
    /// (cut after a whole word).
    fn one_line(s: &str, max: usize) -> String {
        let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat: String = flat.chars().filter(|c| !c.is_control()).collect();
        if flat.chars().count() <= max {
            return flat;
        }
        let cut: String = flat.chars().take(max).collect();
        match cut.rfind(' ') {
            Some(i) if i > 0 => cut[..i].to_string(),
            _ => cut,
        }
    }

    /// Lowercase ASCII words of `title` joined by `-`, at most 60 characters, unique.
    fn slug_for(title: &str, taken: &mut HashSet<String>) -> String {
        let mut base = String::new();
        for word in title
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            if base.len() + word.len() + 1 > 60 {
                break;
            }
            if !base.is_empty() {
                base.push('-');
            }
            base += &word.to_ascii_lowercase();
        }
        let base = base.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
        let base = if base.len() < 2 {
            format!("lesson-{base}").trim_end_matches('-').to_string()
        } else {
            base.to_string()
        };
        let mut slug = base.clone();
        let mut n = 2;
        while !taken.insert(slug.clone()) {
            slug = format!("{base}-{n}");
            n += 1;
        }
        slug
    }

    /// The 160 candidates, as the objects of a JSON batch.
    fn candidates(corpora: &Path) -> Vec<serde_json::Value> {
        let mut records: Vec<(String, String, String)> = Vec::new();
        let reflections = rows(&corpora.join("reflexion-reflections/reflections.jsonl"));
        for row in reflections
            .iter()
            .filter(|r| r["task_id"].is_string())
            .take(80)
        {
            let flat = one_line(row["text"].as_str().unwrap(), usize::MAX);
            let sentence = flat.find(". ").map_or(flat.as_str(), |end| &flat[..=end]);
            records.push((one_line(sentence, 120), one_line(&flat, 1000), flat.clone()));
        }
        let items = rows(&corpora.join("dynamic-cheatsheet/memory_item_versions.jsonl"));
        for row in items.iter().take(80) {
            let header = row["header"].as_str().unwrap().trim();
            let title = match header.rfind("(Reference") {
                Some(i) => header[..i].trim_end(),
                None => header,
            };
            let description = row["description"].as_str().unwrap();
            let rest = match description.split_once('\n') {
                Some((first, rest)) if first.trim() == header => rest,
                _ => description,
            };
            let rest = if rest.trim().is_empty() { title } else { rest };
            let example = row["example"].as_str().unwrap_or_default();
            records.push((
                one_line(title, 120),
                one_line(rest, 1000),
                one_line(example, 2000),
            ));
        }
        let mut taken = HashSet::new();
        records
            .into_iter()
            .enumerate()
            .map(|(i, (title, description, body))| {
                serde_json::json!({
                    "slug": slug_for(&title, &mut taken),
                    "title": title,
                    "trigger": {"description": description},
                    "outcome": "failure",
                    "evidence": [{"kind": "run", "ref": format!("record-{i}")}],
                    "body": format!("# {title}\n\n## What to do (or avoid)\n\n{body}\n"),
                })
            })
            .collect()
    }

    /// Every file of the bank but `.lesson/`, with its bytes, by path relative to the bank.
    fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = walkdir::WalkDir::new(root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".lesson")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                (rel, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    }

    /// A fresh bank (an empty `lesson.toml`) in `dir`.
    fn fresh(dir: &Path) -> PathBuf {
        let root = dir.join("lessons");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("lesson.toml"), "").unwrap();
        root
    }

    /// `lesson add` of `batch`: the slugs of the lessons it created.
    fn add_batch(root: &Path, batch: &[serde_json::Value]) -> BTreeSet<String> {
        let bytes = serde_json::to_vec(batch).unwrap();
        let candidates = read_candidates("corpus.json", bytes).unwrap();
        let stamp = Stamp {
            at: NOW.parse().unwrap(),
            by: "tester".into(),
        };
        let added = add(root, &candidates, &Intake::default(), &stamp, false)
            .unwrap_or_else(|e| panic!("{e}"));
        added
            .admitted
            .iter()
            .filter_map(|a| match a {
                Admitted::Created { slug, .. } => Some(slug.clone()),
                Admitted::Merged { .. } => None,
            })
            .collect()
    }

    #[test]
    fn adding_a_corpus_slice_twice_or_shuffled_gives_one_bank_that_dedup_finds_clean() {
        let Some(corpora) = corpora() else {
            eprintln!(
                "skipped: ../shared/corpora (reflexion-reflections, dynamic-cheatsheet) not found"
            );
            return;
        };
        let batch = candidates(&corpora);
        assert_eq!(batch.len(), 160);

        let tmp = tempfile::tempdir().unwrap();
        let root = fresh(tmp.path());
        let created = add_batch(&root, &batch);
        assert!(
            created.len() > 20 && created.len() < 140,
            "the slice holds near-duplicates: {} lessons from 160 candidates",
            created.len()
        );
        let first = tree(&root);

        // `lesson dedup` reports no pair that `add` made
        let bank = Bank::load_with(&root, &Default::default(), NOW.parse().unwrap()).unwrap();
        let pairs: Vec<_> = lesson::dedup::pairs(&bank)
            .unwrap()
            .into_iter()
            .filter(|p| created.contains(&p.a) || created.contains(&p.b))
            .map(|p| format!("{} ~ {} ({})", p.a, p.b, p.score))
            .collect();
        assert!(pairs.is_empty(), "dedup after add: {pairs:#?}");

        // the same candidates again: not a byte changes
        let again = add_batch(&root, &batch);
        assert!(again.is_empty(), "the second run created {again:?}");
        assert!(tree(&root) == first, "the second run changed the bank");

        // another order, on a fresh bank: the same bank
        let mut shuffled = batch.clone();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for i in (1..shuffled.len()).rev() {
            // xorshift: a fixed shuffle
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        assert!(shuffled != batch);
        let tmp2 = tempfile::tempdir().unwrap();
        let root2 = fresh(tmp2.path());
        add_batch(&root2, &shuffled);
        let second = tree(&root2);
        let names =
            |t: &[(PathBuf, Vec<u8>)]| t.iter().map(|(p, _)| p.clone()).collect::<BTreeSet<_>>();
        let (one, other) = (names(&first), names(&second));
        let only: Vec<_> = one.symmetric_difference(&other).collect();
        assert!(only.is_empty(), "another order, other files: {only:?}");
        for ((path, a), (_, b)) in first.iter().zip(&second) {
            assert!(a == b, "another order, other bytes in {}", path.display());
        }
    }
}
