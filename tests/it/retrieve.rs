//! Retrieval through the library: the score parts, the gates, and the persisted index, which
//! must answer every request exactly as an index built fresh from the files does, whatever
//! happened to the files (or to the index) behind its back.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use lesson::retrieve::{
    Explanation, Hit, InferredTags, Request, Retriever, TagGate, TargetGate, TargetGlobs,
};
use lesson::Bank;
use proptest::prelude::*;

use crate::sandbox::{copy_dir, NOW};

const RETRIEVE: &str = "tests/fixtures/banks/retrieve";

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

fn days_before_now(days: f64) -> SystemTime {
    let secs = now().as_second() as f64 - days * 86_400.0;
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs)
}

fn set_mtime(path: &Path, t: SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(t).unwrap();
}

/// Dates a lesson as its ledger does (recency's input outside git): a `created` event with its
/// counts at `t`.
fn date_by_ledger(root: &Path, slug: &str, counts: (u64, u64), t: SystemTime) {
    let at = jiff::Timestamp::try_from(t).unwrap();
    std::fs::create_dir_all(root.join("_log")).unwrap();
    std::fs::write(
        root.join(format!("_log/{slug}.jsonl")),
        format!(
            "{{\"at\":\"{at}\",\"event\":\"created\",\"by\":\"t\",\"success_count\":{},\"failure_count\":{}}}\n",
            counts.0, counts.1
        ),
    )
    .unwrap();
}

fn lesson(slug: &str, title: &str, extra: &str) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: When {title}\n{extra}outcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n\n## What to do (or avoid)\n\n- Do it: {title}\n"
    )
}

/// A temp bank holding `files` (name, text), each last modified 30 days before NOW.
fn bank(files: &[(&str, String)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("lesson.toml"), "").unwrap();
    for (name, text) in files {
        let path = tmp.path().join(name);
        std::fs::write(&path, text).unwrap();
        set_mtime(&path, days_before_now(30.0));
    }
    tmp
}

/// A copy of the retrieval fixture in `to`, each file last modified 30 days before NOW.
fn copy_fixture(to: &Path) {
    for file in copy_dir(Path::new(RETRIEVE), to) {
        set_mtime(&file, days_before_now(30.0));
    }
}

/// What a fresh, in-memory index of the files says.
fn fresh(root: &Path, request: &Request) -> Vec<Hit> {
    Bank::load_with(root, &Default::default(), now())
        .unwrap()
        .retrieve(request)
}

/// What the persisted index says (opened as a new process would).
fn persisted(root: &Path, request: &Request) -> Vec<Hit> {
    Retriever::open(root).unwrap().search(request).unwrap().hits
}

fn requests() -> Vec<Request> {
    let r = |text: &str| Request::new(text).now(now());
    vec![
        r("squash the feature branch").tag("git"),
        r("the network test is flaky on CI"),
        r("cache the cargo registry for a slow rust CI build").k(10),
        r("review the unsafe block").role("reviewer"),
        r("propose a rust patch")
            .operator("claude-code")
            .skill("rust"),
        r("nightly toolchain").include_expired(true),
        r("数据库连接"),
        r("lesson zero one two three four"),
        r("alpha beta gamma").k(3),
        r("alpha beta gamma delta").role("reviewer"),
        r("beta gamma delta").skill("rust"),
    ]
}

fn slugs(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.slug.as_str()).collect()
}

// --- score and gates ---------------------------------------------------------------------

#[test]
fn the_score_is_similarity_times_confidence_count_factor_and_recency() {
    let tmp = bank(&[
        ("plain.md", lesson("plain", "Rotate the signing keys", "")),
        (
            "failing.md",
            lesson("failing", "Rotate the signing keys weekly", "").replace(
                "outcome: success\n",
                "outcome: success\nconfidence: 0.9\nsuccess_count: 0\nfailure_count: 5\n",
            ),
        ),
    ]);
    date_by_ledger(tmp.path(), "plain", (0, 0), days_before_now(365.0));
    date_by_ledger(tmp.path(), "failing", (0, 5), days_before_now(30.0));
    let hits = fresh(tmp.path(), &Request::new("rotate signing keys").now(now()));
    assert_eq!(slugs(&hits), ["plain", "failing"]);
    let plain = &hits[0].score;
    assert_eq!(plain.confidence, 0.5, "the schema default");
    assert_eq!(plain.count_factor, 1.0);
    assert!(
        (plain.recency - 0.5).abs() < 1e-9,
        "one half-life: {}",
        plain.recency
    );
    let failing = &hits[1].score;
    assert_eq!(failing.confidence, 0.9);
    assert_eq!(
        failing.count_factor, 0.1,
        "(0 - 5 + 1) / 6 is floored at 0.1"
    );
    assert!((failing.recency - 0.5f64.powf(30.0 / 365.0)).abs() < 1e-9);
    assert!(hits[1].caution);
    for h in &hits {
        let s = &h.score;
        assert!(s.similarity > 0.0 && s.similarity < 1.0);
        assert_eq!(
            s.score,
            s.similarity * s.confidence * s.count_factor * s.recency
        );
    }

    // half-life 0: no decay
    std::fs::write(
        tmp.path().join("lesson.toml"),
        "[retrieve]\nhalf-life-days = 0\n",
    )
    .unwrap();
    let hits = fresh(tmp.path(), &Request::new("rotate signing keys").now(now()));
    assert!(hits.iter().all(|h| h.score.recency == 1.0));
}

#[test]
fn ties_rank_by_slug() {
    let text = lesson("x", "Pin the toolchain", "");
    let tmp = bank(&[
        ("b.md", text.replace("slug: x", "slug: bravo")),
        ("a.md", text.replace("slug: x", "slug: charlie")),
        ("c.md", text.replace("slug: x", "slug: alpha")),
    ]);
    let hits = fresh(tmp.path(), &Request::new("pin the toolchain").now(now()));
    assert_eq!(slugs(&hits), ["alpha", "bravo", "charlie"]);
    assert_eq!(hits[0].score, hits[2].score);
}

#[test]
fn hits_say_how_they_passed_the_gates() {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture(tmp.path());
    let request = Request::new("review the unsafe block")
        .role("reviewer")
        .now(now());
    let hits = fresh(tmp.path(), &request);
    assert_eq!(slugs(&hits), ["review-unsafe-blocks"]);
    assert_eq!(
        hits[0].gates.targets,
        TargetGate::Matched(TargetGlobs {
            role: Some("reviewer".into()),
            ..TargetGlobs::default()
        })
    );
    // "review" is a known tag among the request's words: by default it does not gate
    assert_eq!(hits[0].gates.tags, TagGate::RequestUntagged);
    assert_eq!(hits[0].score.tag_boost, 1.0);
    let boosted = fresh(
        tmp.path(),
        &request.clone().inferred_tags(InferredTags::Boost),
    );
    assert_eq!(boosted[0].gates.tags, TagGate::RequestUntagged);
    assert_eq!(boosted[0].score.tag_boost, 1.5);
    assert_eq!(boosted[0].score.score, hits[0].score.score * 1.5);
    let gated = fresh(
        tmp.path(),
        &request.clone().inferred_tags(InferredTags::Gate),
    );
    assert_eq!(gated[0].gates.tags, TagGate::Shared(vec!["review".into()]));
    assert_eq!(gated[0].score.tag_boost, 1.0);

    let hits = fresh(
        tmp.path(),
        &Request::new("squash the feature branch").now(now()),
    );
    assert_eq!(hits[0].gates.targets, TargetGate::Anyone);
    assert_eq!(hits[0].gates.tags, TagGate::RequestUntagged);

    // a request tag no lesson has: tagged lessons drop out, untagged ones stay
    let untagged = bank(&[
        ("u.md", lesson("untagged", "Squash the feature branch", "")),
        (
            "t.md",
            lesson("tagged", "Squash the feature branch", "  tags: [git]\n"),
        ),
    ]);
    let hits = fresh(
        untagged.path(),
        &Request::new("squash the feature branch")
            .tag("Release")
            .now(now()),
    );
    assert_eq!(slugs(&hits), ["untagged"]);
    assert_eq!(hits[0].gates.tags, TagGate::LessonUntagged);
    // tags compare in normal form
    let hits = fresh(
        untagged.path(),
        &Request::new("squash the feature branch")
            .tag("GIT")
            .now(now()),
    );
    assert_eq!(slugs(&hits), ["tagged", "untagged"]);
}

#[test]
fn superseded_lessons_never_come_back_and_expired_ones_only_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture(tmp.path());
    let all = |include_expired| {
        let r = Request::new("cache the target directory nightly toolchain in CI")
            .k(20)
            .include_expired(include_expired)
            .now(now());
        fresh(tmp.path(), &r)
    };
    let default = all(false);
    assert!(!slugs(&default).contains(&"cache-target-dir-in-ci"));
    assert!(!slugs(&default).contains(&"pin-the-nightly-toolchain"));
    let archival = all(true);
    assert!(!slugs(&archival).contains(&"cache-target-dir-in-ci"));
    let expired = archival
        .iter()
        .find(|h| h.slug == "pin-the-nightly-toolchain")
        .unwrap();
    assert_eq!(expired.gates.status, "expired");
}

// --- the retrieve contract ----------------------------------------------------------------

#[test]
fn an_explicit_tag_narrows_and_inferred_tags_do_not_widen_it() {
    let tmp = bank(&[
        (
            "digest.md",
            lesson(
                "email-digest",
                "Batch the email digest",
                "  tags: [email]\n",
            ),
        ),
        (
            "relay.md",
            lesson("smtp-relay", "Retry the email relay", "  tags: [smtp]\n"),
        ),
        (
            "any.md",
            lesson("untagged", "Retry the relay of the email digest", ""),
        ),
    ]);
    let text = "retry the smtp relay for the email digest";
    let r = |mode| Request::new(text).inferred_tags(mode).now(now());
    // without --tag, "smtp" and "email" are found among the words: both lessons apply
    for mode in [
        InferredTags::Boost,
        InferredTags::Gate,
        InferredTags::Ignore,
    ] {
        let all = fresh(tmp.path(), &r(mode));
        assert_eq!(all.len(), 3, "{mode:?}: {:?}", slugs(&all));
    }
    // --tag email: the tag given gates alone, whatever the words say and whatever the mode
    for mode in [
        InferredTags::Boost,
        InferredTags::Gate,
        InferredTags::Ignore,
    ] {
        let narrowed = fresh(tmp.path(), &r(mode).tag("email"));
        let mut got = slugs(&narrowed);
        got.sort();
        assert_eq!(got, ["email-digest", "untagged"], "{mode:?}");
        assert!(narrowed.iter().all(|h| h.score.tag_boost == 1.0));
    }
}

/// The reviewer's lesson carries none of the tags an ordinary word of the request names.
fn reviewer_bank() -> tempfile::TempDir {
    bank(&[
        (
            "read.md",
            lesson(
                "read-the-tests-of-a-pull-request-first",
                "A reviewer checks a pull request by reading its tests first",
                "  tags: [code-review]\n",
            ),
        ),
        (
            "fixes.md",
            lesson(
                "fixes-need-a-regression-test",
                "Every fix ships with a regression test",
                "  tags: [fixes]\n",
            ),
        ),
        (
            "bug.md",
            lesson(
                "reproduce-a-bug-before-fixing-it",
                "Reproduce a bug before fixing it",
                "  tags: [bug]\n",
            ),
        ),
    ])
}

#[test]
fn an_ordinary_word_that_is_a_tag_no_longer_drops_the_reviewers_lesson() {
    let tmp = reviewer_bank();
    let text = "a reviewer checks a pull request that fixes a bug";
    let request = Request::new(text).now(now());
    // the default: inferred tags are words of the request, no gate
    let hits = fresh(tmp.path(), &request);
    assert_eq!(hits[0].slug, "read-the-tests-of-a-pull-request-first");
    assert!(hits
        .iter()
        .all(|h| h.gates.tags == TagGate::RequestUntagged && h.score.tag_boost == 1.0));
    // as a boost, the lessons that carry "fixes" or "bug" gain, the reviewer's lesson stays
    let boosted = fresh(
        tmp.path(),
        &request.clone().inferred_tags(InferredTags::Boost),
    );
    assert!(slugs(&boosted).contains(&"read-the-tests-of-a-pull-request-first"));
    for h in &boosted {
        let carries = h.slug != "read-the-tests-of-a-pull-request-first";
        assert_eq!(
            h.score.tag_boost,
            if carries { 1.5 } else { 1.0 },
            "{}",
            h.slug
        );
    }
    // as a gate, "fixes" and "bug" drop the one lesson written for the caller
    let gated = fresh(
        tmp.path(),
        &request.clone().inferred_tags(InferredTags::Gate),
    );
    assert!(!slugs(&gated).contains(&"read-the-tests-of-a-pull-request-first"));
    // the persisted index agrees
    assert_eq!(persisted(tmp.path(), &request), hits);
}

#[test]
fn a_matching_caution_keeps_a_place_among_the_top_k() {
    let mut files = Vec::new();
    for i in 0..6 {
        files.push((
            format!("ok{i}.md"),
            lesson(
                &format!("deploy-step-{i}"),
                &format!("Deploy the service canary step {i}"),
                "",
            ),
        ));
    }
    files.push((
        "contradicted.md".into(),
        lesson("deploy-on-friday", "Deploy the service on a Friday", "").replace(
            "outcome: success\n",
            "outcome: success\nsuccess_count: 0\nfailure_count: 3\n",
        ),
    ));
    // lessons about other things, so that "deploy" and "service" tell lessons apart
    for i in 0..8 {
        files.push((
            format!("other{i}.md"),
            lesson(
                &format!("bake-bread-{i}"),
                &format!("Bake the bread batch {i}"),
                "",
            ),
        ));
    }
    let files: Vec<(&str, String)> = files.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let tmp = bank(&files);
    for i in 0..6 {
        date_by_ledger(
            tmp.path(),
            &format!("deploy-step-{i}"),
            (0, 0),
            days_before_now(30.0),
        );
    }
    date_by_ledger(
        tmp.path(),
        "deploy-on-friday",
        (0, 3),
        days_before_now(30.0),
    );
    let request = Request::new("deploy the service").k(5).now(now());
    let hits = fresh(tmp.path(), &request);
    assert_eq!(hits.len(), 5);
    let last = hits.last().unwrap();
    assert_eq!(last.slug, "deploy-on-friday", "{:?}", slugs(&hits));
    assert!(last.caution && last.kept_as_caution);
    assert!(hits[..4].iter().all(|h| !h.caution && !h.kept_as_caution));
    assert_eq!(persisted(tmp.path(), &request), hits);
    // the block says so
    let answer = Retriever::open(tmp.path())
        .unwrap()
        .answer(&request)
        .unwrap();
    insta::assert_snapshot!(answer.prompt.text);
    // max-cautions = 0: its score alone decides, and the count factor crushes it
    std::fs::write(
        tmp.path().join("lesson.toml"),
        "[retrieve]\nmax-cautions = 0\n",
    )
    .unwrap();
    let hits = fresh(tmp.path(), &request);
    assert!(!slugs(&hits).contains(&"deploy-on-friday"));
    // a caution that does not match the request is never brought in
    std::fs::write(tmp.path().join("lesson.toml"), "").unwrap();
    let hits = fresh(tmp.path(), &Request::new("canary step").now(now()));
    assert!(!slugs(&hits).contains(&"deploy-on-friday"));
}

#[test]
fn a_conflict_is_declared_not_guessed() {
    let squash = lesson(
        "squash-feature-branches",
        "Squash-merge feature branches",
        "  tags: [git]\n",
    );
    let never = lesson(
        "never-squash-releases",
        "Never squash-merge a release branch",
        "  tags: [git]\n",
    )
    .replace("outcome: success\n", "outcome: failure\n");
    let tmp = bank(&[("a.md", squash.clone()), ("b.md", never.clone())]);
    let request = Request::new("squash merge a branch").now(now());
    // a shared tag and opposite outcomes: no conflict
    let hits = fresh(tmp.path(), &request);
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.conflicts_with.is_empty()), "{hits:?}");
    // declared in metadata.lesson.conflicts_with: both are marked
    std::fs::write(
        tmp.path().join("b.md"),
        never.replace(
            "outcome: failure\n",
            "outcome: failure\nmetadata:\n  lesson:\n    conflicts_with: [squash-feature-branches]\n",
        ),
    )
    .unwrap();
    let hits = fresh(tmp.path(), &request);
    for h in &hits {
        let other = if h.slug == "squash-feature-branches" {
            "never-squash-releases"
        } else {
            "squash-feature-branches"
        };
        assert_eq!(h.conflicts_with, [other]);
    }
    assert_eq!(persisted(tmp.path(), &request), hits);
}

#[test]
fn a_request_without_text_ranks_the_eligible_lessons_by_their_prior() {
    let tmp = bank(&[
        (
            "strong.md",
            lesson("strong", "Pin the toolchain", "  tags: [rust]\n").replace(
                "outcome: success\n",
                "outcome: success\nconfidence: 0.9\nsuccess_count: 4\n",
            ),
        ),
        (
            "weak.md",
            lesson("weak", "Cache the registry", "  tags: [ci]\n"),
        ),
        (
            "old.md",
            lesson("old", "Retry flaky tests", "").replace(
                "outcome: success\n",
                "outcome: success\nconfidence: 0.9\nsuccess_count: 4\n",
            ),
        ),
        (
            "targeted.md",
            lesson(
                "targeted",
                "Review unsafe blocks",
                "  targets:\n    - role: reviewer\n",
            )
            .replace("outcome: success\n", "outcome: success\nconfidence: 1.0\n"),
        ),
    ]);
    date_by_ledger(tmp.path(), "strong", (4, 0), days_before_now(30.0));
    date_by_ledger(tmp.path(), "weak", (0, 0), days_before_now(30.0));
    date_by_ledger(tmp.path(), "old", (4, 0), days_before_now(730.0));
    date_by_ledger(tmp.path(), "targeted", (0, 0), days_before_now(30.0));
    let hits = fresh(tmp.path(), &Request::new("").now(now()));
    assert_eq!(slugs(&hits), ["strong", "weak", "old"]);
    assert!(hits.iter().all(|h| h.score.similarity == 1.0));
    assert_eq!(persisted(tmp.path(), &Request::new("").now(now())), hits);
    // the gates apply: the caller's role, the tags given
    let reviewer = fresh(
        tmp.path(),
        &Request::new("  ").role("reviewer").k(1).now(now()),
    );
    assert_eq!(slugs(&reviewer), ["targeted"]);
    // tags given only gate a request without text: it still ranks by the prior
    let ci = fresh(tmp.path(), &Request::new("").tag("ci").now(now()));
    assert_eq!(slugs(&ci), ["weak", "old"], "tagged ci, or untagged");
    assert!(ci.iter().all(|h| h.score.similarity == 1.0));
}

#[test]
fn explain_names_the_gate_or_threshold_or_the_rank() {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture(tmp.path());
    let mut r = Retriever::open(tmp.path()).unwrap();
    let ask = |r: &mut Retriever, req: &Request, slug: &str| r.explain(req, slug).unwrap();
    let req = Request::new("squash the feature branch").now(now());
    assert!(matches!(
        ask(&mut r, &req, "squash-merge-feature-branches"),
        Explanation::Shown { rank: 1, .. }
    ));
    assert_eq!(ask(&mut r, &req, "no-such-lesson"), Explanation::Unknown);
    assert!(matches!(
        ask(&mut r, &req, "cache-target-dir-in-ci"),
        Explanation::Superseded { .. }
    ));
    assert!(matches!(
        ask(&mut r, &req, "pin-the-nightly-toolchain"),
        Explanation::Expired { .. }
    ));
    assert!(matches!(
        ask(&mut r, &req, "review-unsafe-blocks"),
        Explanation::Targets { .. }
    ));
    assert_eq!(
        ask(&mut r, &req, "reuse-database-connection-pool"),
        Explanation::NoMatch
    );
    let tagged = req.clone().tag("release");
    assert!(matches!(
        ask(&mut r, &tagged, "squash-merge-feature-branches"),
        Explanation::Tags { .. }
    ));
    let one = req.clone().k(1);
    assert!(matches!(
        ask(&mut r, &one, "never-squash-release-branches"),
        Explanation::BelowTopK { k: 1, .. } | Explanation::Shown { .. }
    ));
    let tiny = req.clone().budget(1);
    assert!(matches!(
        ask(&mut r, &tiny, "squash-merge-feature-branches"),
        Explanation::OverBudget { rank: 1, .. }
    ));
}

// --- the persisted index -------------------------------------------------------------------

#[test]
fn the_persisted_index_answers_as_a_fresh_one() {
    let tmp = tempfile::tempdir().unwrap();
    copy_fixture(tmp.path());
    for r in requests() {
        assert_eq!(persisted(tmp.path(), &r), fresh(tmp.path(), &r), "{r:?}");
    }
    let again = Retriever::open(tmp.path()).unwrap();
    let refresh = again.last_refresh();
    // (files this young, their ctime within two seconds, are hashed until they settle)
    assert_eq!(
        (refresh.rebuilt.as_deref(), refresh.parsed, refresh.removed),
        (None, 0, 0),
        "unchanged files are not parsed again"
    );
}

#[test]
fn the_index_heals_edits_deletes_and_renames_behind_its_back() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_fixture(root);
    let mut retriever = Retriever::open(root).unwrap();
    assert_eq!(
        retriever.last_refresh().rebuilt.as_deref(),
        Some("no index yet")
    );

    // edit (the same size: only the hash can tell), delete, rename, add, and touch
    let squash = root.join("squash-merge-feature-branches.md");
    let text = std::fs::read_to_string(&squash).unwrap();
    let edited = text.replace("a finished feature branch", "a finished topical branch");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&squash, edited).unwrap();
    set_mtime(&squash, days_before_now(29.0));
    std::fs::remove_file(root.join("retry-flaky-network-tests.md")).unwrap();
    std::fs::create_dir(root.join("moved")).unwrap();
    std::fs::rename(
        root.join("parse-config-with-serde.md"),
        root.join("moved/parse-config-with-serde.md"),
    )
    .unwrap();
    std::fs::write(
        root.join("new-lesson.md"),
        lesson(
            "new-lesson",
            "Squash fixup commits before review",
            "  tags: [git]\n",
        ),
    )
    .unwrap();
    set_mtime(&root.join("review-unsafe-blocks.md"), days_before_now(1.0));

    let refresh = retriever.refresh().unwrap().clone();
    assert_eq!(refresh.rebuilt, None);
    assert_eq!(refresh.removed, 2, "the deleted file and the old name");
    assert_eq!(refresh.parsed, 3, "the edit, the new name and the new file");
    assert!(refresh.hashed >= 2, "the edit and the touched file");
    for r in requests() {
        let patched = retriever.search(&r).unwrap().hits;
        assert_eq!(patched, fresh(root, &r), "{r:?}");
        assert_eq!(persisted(root, &r), patched, "{r:?} from the files on disk");
    }
    let hits = retriever
        .search(&Request::new("topical branch").tag("git").now(now()))
        .unwrap()
        .hits;
    assert_eq!(hits[0].slug, "squash-merge-feature-branches");
    retriever.compact().unwrap();
    for r in requests() {
        assert_eq!(retriever.search(&r).unwrap().hits, fresh(root, &r), "{r:?}");
    }
}

fn state(root: &Path, file: &str) -> PathBuf {
    root.join(".lesson").join(file)
}

#[test]
fn a_damaged_index_is_rebuilt_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_fixture(root);
    let request = Request::new("cache the cargo registry for a slow rust CI build").now(now());
    let expected = fresh(root, &request);
    assert!(!expected.is_empty());
    persisted(root, &request);
    let base = state(root, "retrieve.idx");
    let good = std::fs::read(&base).unwrap();

    let damages: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("garbage", b"not an index at all".repeat(20)),
        ("a flipped header byte", {
            let mut b = good.clone();
            b[60] ^= 0xff;
            b
        }),
        ("a flipped doc table byte", {
            let mut b = good.clone();
            b[200] ^= 0x01;
            b
        }),
        ("a flipped posting byte", {
            let mut b = good.clone();
            let last = b.len() - 3;
            b[last] ^= 0x01;
            b
        }),
    ];
    for (what, bytes) in damages {
        std::fs::write(&base, &bytes).unwrap();
        let mut retriever = Retriever::open(root).unwrap();
        let hits = retriever.search(&request).unwrap().hits;
        assert_eq!(hits, expected, "{what}");
        assert_eq!(persisted(root, &request), expected, "{what}, then reopened");
    }

    // a damaged delta is dropped: the files are checked all the same
    std::fs::write(
        root.join("new.md"),
        lesson("new", "Cache the cargo registry", ""),
    )
    .unwrap();
    let with_new = fresh(root, &request);
    assert_eq!(persisted(root, &request), with_new);
    assert!(state(root, "retrieve.delta").exists());
    std::fs::write(state(root, "retrieve.delta"), b"junk").unwrap();
    assert_eq!(persisted(root, &request), with_new);

    // a bank that cannot be written is searched all the same
    std::fs::remove_dir_all(root.join(".lesson")).unwrap();
    std::fs::write(root.join(".lesson"), "a file where the directory should be").unwrap();
    let mut retriever = Retriever::open(root).unwrap();
    assert!(!retriever.last_refresh().persisted);
    assert_eq!(retriever.search(&request).unwrap().hits, with_new);
}

#[test]
fn readers_never_see_a_torn_index_while_a_writer_patches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    copy_fixture(&root);
    Retriever::open(&root).unwrap();
    let request = Request::new("squash the feature branch")
        .tag("git")
        .now(now());
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut retriever = Retriever::open(&root).unwrap();
            for i in 0..12 {
                let title = format!("Squash variant {i} of the feature branch");
                std::fs::write(
                    root.join(format!("variant-{}.md", i % 4)),
                    lesson(&format!("variant-{}", i % 4), &title, "  tags: [git]\n"),
                )
                .unwrap();
                retriever.refresh().unwrap();
                if i % 5 == 4 {
                    retriever.compact().unwrap();
                }
            }
        });
        let readers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    for _ in 0..12 {
                        let mut r = Retriever::open(&root).expect("open never fails");
                        let hits = r.search(&request).expect("search never fails").hits;
                        assert!(slugs(&hits).contains(&"squash-merge-feature-branches"));
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
    });
    for r in requests() {
        assert_eq!(persisted(&root, &r), fresh(&root, &r), "{r:?}");
    }
}

#[test]
fn a_hit_is_never_dropped_while_locked_writers_keep_rewriting_its_file() {
    use lesson::edit::{write_atomic, BankLock};
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = bank(&[(
        "hammer-nails-flush.md",
        lesson("hammer-nails-flush", "Hammer the nails flush", ""),
    )]);
    let root = tmp.path().to_path_buf();
    let path = root.join("hammer-nails-flush.md");
    let request = Request::new("hammer the nails").now(now());
    let mut retriever = Retriever::open(&root).unwrap();
    let stop = AtomicBool::new(false);
    // as `lesson record` writes: under the bank lock, atomically, as fast as it can
    let outcomes: Vec<Result<Vec<String>, String>> = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let extra = format!("confidence: 0.{}\n", 1 + i % 9);
                let text = lesson("hammer-nails-flush", "Hammer the nails flush", &extra);
                let mut lock = BankLock::open(&root).unwrap();
                lock.with(|| write_atomic(&root, &path, text.as_bytes()))
                    .unwrap()
                    .unwrap();
            }
            i
        });
        let outcomes = (0..150)
            .map(|_| {
                retriever
                    .search(&request)
                    .map(|s| s.hits.into_iter().map(|h| h.slug).collect())
                    .map_err(|e| e.to_string())
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
        outcomes
    });
    for found in outcomes {
        assert_eq!(found, Ok(vec!["hammer-nails-flush".to_string()]));
    }
}

#[test]
fn the_top_k_stays_whole_while_locked_writers_reorder_it() {
    use lesson::edit::{write_atomic, BankLock};
    use std::sync::atomic::{AtomicBool, Ordering};
    // two lessons the request matches, k = 1: each write swaps which ranks first, so the
    // files checked again under the lock bring the other, also rewritten, into the top K
    let slugs = ["hammer-nails-flush", "hammer-nails-straight"];
    let tmp = bank(&[
        (
            "hammer-nails-flush.md",
            lesson(slugs[0], "Hammer the nails flush", ""),
        ),
        (
            "hammer-nails-straight.md",
            lesson(slugs[1], "Hammer the nails straight", ""),
        ),
    ]);
    let root = tmp.path().to_path_buf();
    let request = Request::new("hammer the nails").now(now()).k(1);
    let mut retriever = Retriever::open(&root).unwrap();
    let stop = AtomicBool::new(false);
    let outcomes: Vec<Result<usize, String>> = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                let mut lock = BankLock::open(&root).unwrap();
                lock.with(|| {
                    for (n, slug) in slugs.iter().enumerate() {
                        let high = (i + n as u64).is_multiple_of(2);
                        let extra = format!("confidence: {}\n", if high { "0.9" } else { "0.2" });
                        let title = ["Hammer the nails flush", "Hammer the nails straight"][n];
                        let text = lesson(slug, title, &extra);
                        write_atomic(&root, &root.join(format!("{slug}.md")), text.as_bytes())
                            .unwrap();
                    }
                })
                .unwrap();
            }
            i
        });
        let outcomes = (0..400)
            .map(|_| {
                retriever
                    .search(&request)
                    .map(|s| s.hits.len())
                    .map_err(|e| e.to_string())
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        assert!(writer.join().unwrap() > 0);
        outcomes
    });
    for found in outcomes {
        assert_eq!(found, Ok(1));
    }
}

// --- the property ----------------------------------------------------------------------------

/// What happens to the bank, or to the process searching it.
#[derive(Debug, Clone)]
enum Op {
    /// Write file `slot` with variant `variant`; `settled`: an mtime in the past (trusted by
    /// stat next time), else now (re-hashed until it is two seconds old).
    Write {
        slot: usize,
        variant: usize,
        settled: bool,
    },
    Delete(usize),
    Rename(usize, usize),
    /// A new mtime, the same content.
    Touch(usize),
    /// Check the files again in the same process.
    Refresh,
    /// A new process: open the persisted index.
    Reopen,
    /// Fold the delta into a new base.
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..6usize, 0..9usize, any::<bool>())
            .prop_map(|(slot, variant, settled)| Op::Write { slot, variant, settled }),
        1 => (0..6usize).prop_map(Op::Delete),
        1 => (0..6usize, 0..6usize).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (0..6usize).prop_map(Op::Touch),
        2 => Just(Op::Refresh),
        1 => Just(Op::Reopen),
        1 => Just(Op::Compact),
    ]
}

fn slot_path(root: &Path, slot: usize) -> PathBuf {
    if slot % 3 == 2 {
        root.join("sub").join(format!("lesson-{slot}.md"))
    } else {
        root.join(format!("lesson-{slot}.md"))
    }
}

/// Lesson texts that move every part of the index: words, tags, targets, supersession,
/// expiry, counts, and a file that is no lesson at all.
fn variant(slot: usize, variant: usize) -> String {
    let slug = format!("lesson-{slot}");
    let title = ["alpha beta", "beta gamma", "gamma delta", "lesson zero"][variant % 4];
    let title = format!("{title} {}", ["one", "two", "three", "four"][slot % 4]);
    match variant {
        0 | 1 => lesson(&slug, &title, ""),
        2 => lesson(&slug, &title, "  tags: [alpha, ci]\n"),
        3 => lesson(&slug, &title, "  targets:\n    - role: reviewer\n"),
        4 => lesson(&slug, &title, "").replace(
            "outcome: success\n",
            "outcome: failure\nsupersedes: [lesson-0, lesson-1]\nsuccess_count: 1\nfailure_count: 4\n",
        ),
        5 => lesson(&slug, &title, "").replace(
            "outcome: success\n",
            "outcome: success\nexpires_at: 2026-01-01T00:00:00Z\nconfidence: 0.9\n",
        ),
        6 => format!("# {title}\n\nNo frontmatter: not a lesson.\n"),
        // another target list: a delta's lists are numbered after its base's
        8 => lesson(&slug, &title, "  targets:\n    - skill: rust\n"),
        _ => lesson(&slug, &format!("{title} {title}"), "  tags: [beta]\n"),
    }
}

fn apply(root: &Path, op: &Op, tick: u64, retriever: &mut Retriever) {
    let past = |t: u64| days_before_now(10.0) + Duration::from_secs(t);
    match *op {
        Op::Write {
            slot,
            variant: v,
            settled,
        } => {
            let path = slot_path(root, slot);
            std::fs::write(&path, variant(slot, v)).unwrap();
            if settled {
                set_mtime(&path, past(tick));
            }
        }
        Op::Delete(slot) => {
            let _ = std::fs::remove_file(slot_path(root, slot));
        }
        Op::Rename(a, b) => {
            let _ = std::fs::rename(slot_path(root, a), slot_path(root, b));
        }
        Op::Touch(slot) => {
            let path = slot_path(root, slot);
            if path.exists() {
                set_mtime(&path, past(tick));
            }
        }
        Op::Refresh => {
            retriever.refresh().unwrap();
        }
        Op::Reopen => *retriever = Retriever::open(root).unwrap(),
        Op::Compact => {
            retriever.compact().unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(24)))]

    #[test]
    fn patched_index_answers_as_a_fresh_build(ops in proptest::collection::vec(op(), 1..14)) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("lesson.toml"), "").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        for slot in 0..4 {
            std::fs::write(slot_path(root, slot), variant(slot, slot)).unwrap();
            set_mtime(&slot_path(root, slot), days_before_now(20.0));
        }
        let mut retriever = Retriever::open(root).unwrap();
        for (tick, op) in ops.iter().enumerate() {
            apply(root, op, tick as u64 + 1, &mut retriever);
            if matches!(op, Op::Refresh | Op::Reopen | Op::Compact) {
                for r in requests() {
                    let patched = retriever.search(&r).unwrap().hits;
                    prop_assert_eq!(&patched, &fresh(root, &r), "after {:?}: {:?}", op, r);
                }
            }
        }
        retriever.refresh().unwrap();
        for r in requests() {
            prop_assert_eq!(retriever.search(&r).unwrap().hits, fresh(root, &r), "{:?}", r);
            prop_assert_eq!(persisted(root, &r), fresh(root, &r), "reopened: {:?}", r);
        }
    }
}

/// A lesson file and a directory linked from outside the bank are never read: the secret they
/// hold appears in no output of any reading command (nor in `_index.md`); a directory of the
/// bank linked a second time is not walked twice, so its lesson comes back once.
#[cfg(unix)]
#[test]
fn symlinks_out_of_the_bank_are_not_read_and_no_lesson_comes_back_twice() {
    use std::os::unix::fs::symlink;
    use std::process::Command;
    const SECRET: &str = "zqxsecretmarker";
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("bank");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("ci")).unwrap();
    std::fs::create_dir_all(outside.join("dir")).unwrap();
    std::fs::write(root.join("lesson.toml"), "").unwrap();
    let inside = lesson("cache-builds", "Cache builds in ci", "");
    std::fs::write(root.join("ci/cache-builds.md"), inside).unwrap();
    let leak = lesson("leak", &format!("Cache builds {SECRET}"), "");
    std::fs::write(outside.join("leak.md"), &leak).unwrap();
    let inner = lesson("inner", &format!("Cache builds {SECRET}"), "");
    std::fs::write(outside.join("dir/inner.md"), &inner).unwrap();
    symlink(outside.join("leak.md"), root.join("leak.md")).unwrap();
    symlink(outside.join("dir"), root.join("shared")).unwrap();
    symlink("ci", root.join("alias")).unwrap();

    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lesson"))
            .args(args)
            .env("LESSON_DIR", &root)
            .env("LESSON_NOW", NOW)
            .env("LESSON_BY", "tester")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !text.contains(SECRET),
            "{args:?} printed the secret:\n{text}"
        );
        text
    };
    for format in ["full", "concise", "json", "github", "sarif"] {
        let out = run(&["lint", "--output-format", format]);
        assert!(out.contains("P013"), "lint {format}: {out}");
    }
    let full = run(&["lint"]);
    assert!(
        full.contains("leak.md") && full.contains("shared"),
        "{full}"
    );
    assert!(full.contains("P014") && full.contains("alias"), "{full}");
    for format in ["text", "json", "prompt"] {
        run(&["search", "cache builds", "--format", format]);
    }
    let json = run(&["search", "cache builds", "--format", "json"]);
    assert_eq!(json.matches("cache-builds.md").count(), 1, "{json}");
    assert!(!json.contains("alias/"), "{json}");
    run(&["list"]);
    let listed = run(&["list", "--format", "json"]);
    assert_eq!(listed.matches("cache-builds.md").count(), 1, "{listed}");
    run(&["show", "leak"]);
    run(&["show", "inner"]);
    run(&["index", "--stdout"]);
    run(&["index"]);
    let index_md = std::fs::read_to_string(root.join("_index.md")).unwrap();
    assert!(!index_md.contains(SECRET), "{index_md}");

    // the library's retriever neither
    let mut retriever = Retriever::open(&root).unwrap();
    let hits = retriever
        .search(&Request::new("cache builds").now(now()))
        .unwrap()
        .hits;
    let paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths, ["ci/cache-builds.md"]);
}

/// A lesson with an error-level finding in its own file (`confidence: 7`, `confidence: "0.99"`)
/// is never served, by the library (fresh and persisted index) or by `lesson search`, which
/// says how many were held back and why.
#[test]
fn lessons_with_errors_are_held_back() {
    let tmp = bank(&[
        ("good.md", lesson("good", "Cache builds in ci", "")),
        (
            "seven.md",
            lesson("seven", "Cache builds in ci twice", "confidence: 7\n"),
        ),
        (
            "quoted.md",
            lesson(
                "quoted",
                "Cache builds in ci thrice",
                "confidence: \"0.99\"\n",
            ),
        ),
    ]);
    let root = tmp.path();
    let request = Request::new("cache builds in ci").now(now());
    let slugs = |hits: &[Hit]| hits.iter().map(|h| h.slug.clone()).collect::<Vec<_>>();

    let loaded = Bank::load(root, now()).unwrap();
    assert_eq!(slugs(&loaded.retrieve(&request)), ["good"]);
    let mut retriever = Retriever::open(root).unwrap();
    let found = retriever.search(&request).unwrap();
    assert_eq!(slugs(&found.hits), ["good"]);
    let held: Vec<(&str, &str, Vec<String>)> = found
        .held_back
        .iter()
        .map(|h| (h.slug.as_str(), h.path.as_str(), h.codes.clone()))
        .collect();
    assert_eq!(held.len(), 2, "{held:?}");
    assert_eq!((held[0].0, held[0].1), ("quoted", "quoted.md"));
    assert_eq!((held[1].0, held[1].1), ("seven", "seven.md"));
    assert!(held.iter().all(|h| !h.2.is_empty()));
    // the persisted index, opened again, holds them back without parsing anything
    let mut again = Retriever::open(root).unwrap();
    assert_eq!(slugs(&again.search(&request).unwrap().hits), ["good"]);

    let run = |format: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lesson"))
            .args(["search", "cache builds in ci", "--format", format])
            .env("LESSON_DIR", root)
            .env("LESSON_NOW", NOW)
            .output()
            .unwrap()
    };
    let json = run("json");
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let served: Vec<&str> = report["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["slug"].as_str().unwrap())
        .collect();
    assert_eq!(served, ["good"]);
    let held = report["held_back"].as_array().unwrap();
    assert_eq!(held.len(), 2);
    assert_eq!(held[1]["slug"], "seven");
    assert!(held[1]["codes"].as_array().is_some_and(|c| !c.is_empty()));
    for format in ["text", "prompt"] {
        let out = run(format);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr, "note: 2 lessons with errors were not served (lesson lint lists them)\n",
            "{format}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("twice") && !stdout.contains("thrice"),
            "{stdout}"
        );
    }
}
