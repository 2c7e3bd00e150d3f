//! Near-duplicate lessons: the library's pairs on a fixture bank (Latin and CJK near-duplicates,
//! look-alikes that are not duplicates, tags, targets, a superseded lesson and `_archive/`),
//! `duplicate_of` for a new candidate, thresholds from `lesson.toml`, the candidate cap, the CLI
//! transcripts of `lesson dedup` and `lesson review`, and properties against an all-pairs
//! reference.

use std::collections::BTreeSet;
use std::path::Path;

use lesson::dedup::{self, Pair};
use lesson::document::Document;
use lesson::source::Source;
use lesson::{Bank, Lesson};
use proptest::prelude::*;

use crate::sandbox::{copy_dir, Sandbox, NOW};

pub(crate) const BANK: &str = "tests/fixtures/banks/dedup";

fn load(root: &Path) -> Bank {
    Bank::load_with(root, &Default::default(), NOW.parse().unwrap()).unwrap()
}

fn slugs(pairs: &[Pair]) -> BTreeSet<(String, String)> {
    pairs.iter().map(|p| (p.a.clone(), p.b.clone())).collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

/// A lesson file's text.
pub(crate) fn lesson_text(slug: &str, title: &str, description: &str, tags: &[&str]) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: \"{title}\"\ntrigger:\n  description: \"{description}\"\n  tags: [{}]\noutcome: success\nevidence:\n  - kind: run\n    ref: r_{slug}\n---\n\n# {title}\n",
        tags.join(", ")
    )
}

fn parse(text: &str) -> Lesson {
    *Document::parse(Source::new("candidate.md", text.to_string()), None)
        .lesson
        .expect("the candidate parses")
}

#[test]
fn fixture_pairs_are_the_near_duplicates_and_only_them() {
    let found = dedup::pairs(&load(Path::new(BANK))).unwrap();
    let got = slugs(&found);
    for expected in [
        // reworded, singular and plural, a tag spelt differently
        pair("retry-flaky-network-test", "retry-flaky-network-tests"),
        // slug words reordered, title reworded
        pair("pin-the-rust-toolchain", "rust-toolchain-pinning"),
        // Chinese, reworded
        pair("reuse-database-connection-pool", "reuse-db-connection-pool"),
        // same trigger, one for anyone and one for reviewers
        pair("review-unsafe-blocks", "unsafe-blocks-need-two-reviewers"),
        pair("review-unsafe-code", "unsafe-blocks-need-two-reviewers"),
        pair("quote-yaml-scalars", "quote-yaml-values"),
    ] {
        assert!(got.contains(&expected), "missing {expected:?} in {got:#?}");
    }
    // the same words are not the same lesson
    assert!(!got.contains(&pair(
        "cache-cargo-registry-in-ci",
        "cache-docker-layers-in-ci"
    )));
    // identical text, disjoint audiences (role reviewer vs writer)
    assert!(!got.contains(&pair("review-unsafe-blocks", "review-unsafe-code")));
    // superseded and archived lessons are not candidates
    for p in &found {
        assert!(p.a < p.b, "{p:?}");
        for slug in [&p.a, &p.b] {
            assert_ne!(slug, "quote-yaml-strings-old");
            assert_ne!(slug, "retry-flaky-network-tests-old");
            assert_ne!(slug, "log-errors-with-context");
        }
    }
    let json = serde_json::to_string_pretty(&found).unwrap();
    insta::assert_snapshot!(json);
}

#[test]
fn tags_and_targets_are_reported() {
    let found = dedup::pairs(&load(Path::new(BANK))).unwrap();
    let retry = found
        .iter()
        .find(|p| p.a == "retry-flaky-network-test")
        .unwrap();
    // tags are reported normalised (`flaky-tests` → `flaky tests`)
    assert_eq!(retry.shared_tags, vec!["ci", "flaky tests"]);
    assert!(retry.targets_overlap);
    assert!(retry.score >= retry.text_similarity.min(retry.slug_similarity));
}

#[test]
fn duplicate_of_names_the_existing_lesson() {
    let bank = load(Path::new(BANK));
    let candidate = parse(&lesson_text(
        "retry-network-tests-thrice",
        "Retry flaky network tests three times before failing the build.",
        "A CI job fails on a network test that passes on rerun.",
        &["ci"],
    ));
    let found = dedup::duplicate_of(&bank, &candidate).unwrap().unwrap();
    assert_eq!(found.b, "retry-network-tests-thrice");
    assert!(
        found.a == "retry-flaky-network-tests" || found.a == "retry-flaky-network-test",
        "{found:?}"
    );
    let distinct = parse(&lesson_text(
        "rotate-api-keys",
        "Rotate API keys every ninety days.",
        "An API key has been in use for months.",
        &["security"],
    ));
    assert_eq!(dedup::duplicate_of(&bank, &distinct).unwrap(), None);
    // a superseded lesson is never what a candidate duplicates
    let old = bank.by_slug()["quote-yaml-strings-old"].1.clone();
    let mut copy = old.clone();
    copy.slug.value = "quote-yaml-strings-again".into();
    let found = dedup::duplicate_of(&bank, &copy).unwrap().unwrap();
    assert_ne!(found.a, "quote-yaml-strings-old");
}

#[test]
fn thresholds_come_from_lesson_toml() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bank");
    copy_dir(Path::new(BANK), &root);
    let all = dedup::pairs(&load(&root)).unwrap();
    std::fs::write(root.join("lesson.toml"), "[dedup]\nmin-score = 0.9\n").unwrap();
    let strict = dedup::pairs(&load(&root)).unwrap();
    assert!(!strict.is_empty() && strict.len() < all.len());
    assert!(strict.iter().all(|p| p.score >= 0.9));
    std::fs::write(
        root.join("lesson.toml"),
        "[dedup]\nmin-text-similarity = 1.5\n",
    )
    .unwrap();
    let err = dedup::pairs(&load(&root)).unwrap_err().to_string();
    assert_eq!(
        err,
        "lesson.toml: [dedup] min-text-similarity = 1.5 is out of range (0 to 1)"
    );
}

#[test]
fn the_candidate_cap_bounds_the_comparisons() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let n = 30;
    for i in 0..n {
        let slug = format!("same-lesson-{i:02}");
        let text = lesson_text(
            &slug,
            "Run the formatter before every commit.",
            "Committing code by hand.",
            &[],
        );
        std::fs::write(root.join(format!("{slug}.md")), text).unwrap();
    }
    let all = dedup::pairs(&load(root)).unwrap();
    assert_eq!(all.len(), n * (n - 1) / 2);
    std::fs::write(root.join("lesson.toml"), "[dedup]\nmax-candidates = 4\n").unwrap();
    let capped = dedup::pairs(&load(root)).unwrap();
    // each lesson is compared with at most 4 others
    assert!(
        !capped.is_empty() && capped.len() <= n * 4,
        "{}",
        capped.len()
    );
}

// --- the CLI ---------------------------------------------------------------------------------

#[test]
fn cli_dedup_text_and_json() {
    let s = Sandbox::with_bank(BANK);
    let out = [
        s.shown(&["dedup", "--dir", "lessons"]),
        s.shown(&["dedup", "--dir", "lessons", "--format", "json"]),
    ]
    .join("\n");
    insta::assert_snapshot!(out);
}

#[test]
fn cli_dedup_is_quiet_on_a_clean_bank_and_exits_2_on_bad_thresholds() {
    let s = Sandbox::with_bank(BANK);
    let root = s.bank();
    std::fs::write(root.join("lesson.toml"), "[dedup]\nmin-score = 0.99\n").unwrap();
    let clean = s.shown(&["dedup", "--dir", "lessons"]);
    std::fs::write(root.join("lesson.toml"), "[dedup]\nmax-candidates = 0\n").unwrap();
    let bad = s.shown(&["dedup", "--dir", "lessons"]);
    std::fs::write(root.join("lesson.toml"), "[dedup]\nmin-scor = 0.5\n").unwrap();
    let unknown = s.shown(&["dedup", "--dir", "lessons"]);
    insta::assert_snapshot!([clean, bad, unknown].join("\n"));
}

#[test]
fn cli_review_lists_near_duplicates() {
    let s = Sandbox::with_bank(BANK);
    let out = [
        s.shown(&["review", "--dir", "lessons"]),
        s.shown(&["review", "--dir", "lessons", "--format", "json"]),
    ]
    .join("\n");
    insta::assert_snapshot!(out);
}

// --- properties ------------------------------------------------------------------------------

pub(crate) const WORDS: &[&str] = &[
    "retry",
    "cache",
    "pin",
    "toolchain",
    "network",
    "tests",
    "build",
    "review",
    "unsafe",
    "config",
    "yaml",
    "quote",
    "values",
    "database",
    "pool",
    "reuse",
    "ci",
    "format",
    "commit",
    "release",
    "数据库",
    "连接",
    "缓存",
];
const TAGS: &[&str] = &["ci", "rust", "yaml", "db"];

/// A generated lesson: slug words, title words, description words, tags.
pub(crate) type Spec = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

pub(crate) fn spec() -> impl Strategy<Value = Spec> {
    let words = |n| proptest::collection::vec(0..WORDS.len(), 1..n);
    (
        proptest::collection::vec(0..16usize, 1..4),
        words(7),
        words(9),
        proptest::collection::vec(0..TAGS.len(), 0..3),
    )
}

fn sentence(words: &[usize]) -> String {
    words
        .iter()
        .map(|&w| WORDS[w])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Write one lesson per spec (slugs made unique by their position) into `root`.
pub(crate) fn write_bank(root: &Path, specs: &[Spec]) -> Vec<String> {
    let mut slugs = Vec::new();
    for (i, (slug_words, title, description, tags)) in specs.iter().enumerate() {
        let names = [
            "retry", "cache", "pin", "review", "quote", "reuse", "build", "test",
        ];
        let slug = slug_words
            .iter()
            .map(|&w| names[w % names.len()])
            .collect::<Vec<_>>()
            .join("-")
            + &format!("-x{i}");
        let tags: Vec<&str> = tags.iter().map(|&t| TAGS[t]).collect();
        let text = lesson_text(&slug, &sentence(title), &sentence(description), &tags);
        std::fs::write(root.join(format!("{slug}.md")), text).unwrap();
        slugs.push(slug);
    }
    slugs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::cases(48), ..ProptestConfig::default() })]

    /// The index finds exactly the pairs an all-pairs comparison accepts, in a deterministic
    /// order, each pair once with the smaller slug first, whatever order the files are in.
    #[test]
    fn pairs_are_the_all_pairs_reference(
        specs in proptest::collection::vec(spec(), 2..14),
        min_text in 0.2f64..0.9,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write_bank(tmp.path(), &specs);
        std::fs::write(
            tmp.path().join("lesson.toml"),
            format!("[dedup]\nmin-text-similarity = {min_text}\nmin-score = 0.3\n"),
        )
        .unwrap();
        let bank = load(tmp.path());
        let found = dedup::pairs(&bank).unwrap();
        prop_assert_eq!(&found, &dedup::pairs_exhaustive(&bank).unwrap());
        prop_assert_eq!(&found, &dedup::pairs(&bank).unwrap());
        let mut seen = BTreeSet::new();
        for p in &found {
            prop_assert!(p.a < p.b, "{:?}", p);
            prop_assert!(seen.insert((p.a.clone(), p.b.clone())));
            prop_assert!(p.text_similarity >= min_text - 1e-4 && p.score >= 0.3);
        }
        // the same lessons under other file names: the same pairs
        let renamed = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(tmp.path()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            std::fs::copy(entry.path(), renamed.path().join(format!("z{}", name.len()) + &name)).unwrap();
        }
        std::fs::rename(
            renamed.path().join(format!("z{}lesson.toml", "lesson.toml".len())),
            renamed.path().join("lesson.toml"),
        )
        .unwrap();
        prop_assert_eq!(&found, &dedup::pairs(&load(renamed.path())).unwrap());
    }

    /// A lesson copied under a new slug is a near-duplicate of the original, both for
    /// `duplicate_of` (before it is written) and for `pairs` (after).
    #[test]
    fn a_copy_under_a_new_slug_is_found(
        specs in proptest::collection::vec(spec(), 1..10),
        pick in any::<proptest::sample::Index>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let slugs = write_bank(tmp.path(), &specs);
        let original = &slugs[pick.index(slugs.len())];
        let text = std::fs::read_to_string(tmp.path().join(format!("{original}.md"))).unwrap();
        let copy_slug = "copied-lesson";
        let copy = text.replacen(&format!("slug: {original}"), &format!("slug: {copy_slug}"), 1);
        let bank = load(tmp.path());
        let found = dedup::duplicate_of(&bank, &parse(&copy)).unwrap().unwrap();
        prop_assert_eq!(found.b.as_str(), copy_slug);
        prop_assert_eq!(found.text_similarity, 1.0);
        std::fs::write(tmp.path().join(format!("{copy_slug}.md")), &copy).unwrap();
        let bank = load(tmp.path());
        let pairs = dedup::pairs(&bank).unwrap();
        prop_assert_eq!(&pairs, &dedup::pairs_exhaustive(&bank).unwrap());
        prop_assert!(
            pairs.iter().any(|p| p.a == *original && p.b == copy_slug
                || p.b == *original && p.a == copy_slug),
            "no pair ({original}, {copy_slug}) in {pairs:?}"
        );
    }
}
