//! Semantic retrieval (`[retrieve] model`) through the library, with a stand-in encoder so
//! that no model is needed: the lessons' vectors in `.lesson/`, embedded once and patched per
//! changed lesson, dropped for another model; the hybrid ranking; and lexical results, exactly
//! as without a model, when the model is absent, missing or damaged.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lesson::retrieve::{Hit, Request, Retriever};
use lesson::semantic::{Embedder, ModelError};

use crate::sandbox::NOW;

/// A stand-in encoder: each word (lowercased, alphanumeric runs; a few synonyms mapped to one
/// word first) adds 1 to one of 16 dimensions by a hash of it; the vector is normalised.
/// Texts sharing words (or synonyms) are near. It counts the texts it embedded, and fails on
/// a text holding `FAIL`.
#[derive(Debug)]
struct Words {
    identity: String,
    embedded: AtomicUsize,
}

const SYNONYMS: [(&str, &str); 3] = [("automobile", "car"), ("vehicle", "car"), ("defect", "bug")];

impl Words {
    fn new(identity: &str) -> Arc<Words> {
        Arc::new(Words {
            identity: identity.to_string(),
            embedded: AtomicUsize::new(0),
        })
    }

    fn embedded(&self) -> usize {
        self.embedded.load(Ordering::SeqCst)
    }
}

impl Embedder for Words {
    fn identity(&self) -> &str {
        &self.identity
    }
    fn dimension(&self) -> usize {
        16
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.iter().any(|t| t.contains("FAIL")) {
            return Err(ModelError::Run {
                dir: "words".into(),
                reason: "a text it cannot embed".into(),
            });
        }
        self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 16];
                for w in t
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                {
                    let w = w.to_lowercase();
                    let w = SYNONYMS
                        .iter()
                        .find(|(s, _)| *s == w)
                        .map_or(w.as_str(), |(_, to)| to);
                    let h = w
                        .bytes()
                        .fold(5381u32, |h, b| h.wrapping_mul(33) ^ u32::from(b));
                    v[(h % 16) as usize] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if n > 0.0 {
                    v.iter_mut().for_each(|x| *x /= n);
                }
                v
            })
            .collect())
    }
}

fn lesson(slug: &str, title: &str, body: &str) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: When {title}\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n\n{body}\n"
    )
}

/// A temp bank with three lessons and `config` as its `lesson.toml`.
fn bank(config: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("lesson.toml"), config).unwrap();
    for (slug, title, body) in [
        (
            "park-the-car",
            "Park the car in the shade",
            "A hot car cooks the groceries.",
        ),
        (
            "file-the-bug",
            "File the bug with a reproduction",
            "Attach the failing input.",
        ),
        (
            "cache-the-build",
            "Cache the build between runs",
            "Key the cache on the lock file.",
        ),
    ] {
        std::fs::write(
            tmp.path().join(format!("{slug}.md")),
            lesson(slug, title, body),
        )
        .unwrap();
    }
    tmp
}

fn request(text: &str) -> Request {
    Request::new(text).now(NOW.parse().unwrap()).k(5)
}

fn slugs(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.slug.as_str()).collect()
}

fn search(r: &mut Retriever, text: &str) -> Vec<Hit> {
    r.search(&request(text)).unwrap().hits
}

fn vectors_file(root: &Path) -> std::path::PathBuf {
    root.join(".lesson/retrieve.vectors")
}

#[test]
fn without_a_model_nothing_is_embedded_and_no_score_has_a_semantic_part() {
    let b = bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    assert!(!r.is_semantic());
    assert!(r.semantic_problem().is_none());
    assert_eq!(r.last_refresh().embedded, 0);
    let hits = search(&mut r, "cache the build");
    assert_eq!(slugs(&hits)[0], "cache-the-build");
    assert!(hits.iter().all(|h| h.score.semantic.is_none()));
    let json = serde_json::to_value(hits[0].score).unwrap();
    assert!(json.get("semantic").is_none(), "{json}");
    assert!(!vectors_file(b.path()).exists());
}

#[test]
fn the_hybrid_ranking_finds_what_shares_no_word_and_scores_its_cosine() {
    let b = bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    // lexically, "automobile" shares nothing with the lesson about the car
    let lexical = search(&mut r, "automobile");
    assert!(
        !slugs(&lexical).contains(&"park-the-car"),
        "{:?}",
        slugs(&lexical)
    );
    let words = Words::new("words-1");
    r.set_embedder(Some(words.clone())).unwrap();
    assert!(r.is_semantic());
    let hybrid = search(&mut r, "automobile");
    assert_eq!(slugs(&hybrid)[0], "park-the-car");
    let top = &hybrid[0].score;
    let cosine = top.semantic.expect("a semantic part");
    assert!(cosine > 0.2, "{cosine}");
    // the fused similarity, then the contract's factors as for a lexical hit
    assert!((top.similarity - 0.5 * cosine).abs() < 1e-9, "{top:?}");
    let product = top.similarity * top.confidence * top.count_factor * top.recency * top.tag_boost;
    assert!((top.score - product).abs() < 1e-12);
    // a request without text: the prior alone, no semantic part
    let all = search(&mut r, "");
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|h| h.score.semantic.is_none()));
}

#[test]
fn at_weight_zero_the_hybrid_ranking_is_the_lexical_one() {
    let b = bank("[retrieve]\nsemantic-weight = 0\n");
    let mut r = Retriever::open(b.path()).unwrap();
    let requests = [
        "cache the build",
        "file a bug",
        "park",
        "groceries lock file",
    ];
    let lexical: Vec<Vec<Hit>> = requests.iter().map(|q| search(&mut r, q)).collect();
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    for (q, lexical) in requests.iter().zip(lexical) {
        let hybrid = search(&mut r, q);
        assert_eq!(slugs(&hybrid), slugs(&lexical), "{q}");
        for (h, l) in hybrid.iter().zip(&lexical) {
            assert_eq!(h.score.score, l.score.score, "{q}: {}", h.slug);
            assert!(h.score.semantic.is_some());
        }
    }
}

#[test]
fn vectors_are_kept_and_only_a_changed_lesson_is_embedded_again() {
    let b = bank("");
    let words = Words::new("words-1");
    let mut r = Retriever::open(b.path()).unwrap();
    r.set_embedder(Some(words.clone())).unwrap();
    assert_eq!((words.embedded(), r.last_refresh().embedded), (3, 3));
    assert_eq!(r.embedded_lessons(), 3);
    let kept = std::fs::read(vectors_file(b.path())).unwrap();

    // a new process with the same model embeds nothing
    let again = Words::new("words-1");
    let mut r2 = Retriever::open(b.path()).unwrap();
    r2.set_embedder(Some(again.clone())).unwrap();
    assert_eq!(again.embedded(), 0);
    assert_eq!(slugs(&search(&mut r2, "automobile"))[0], "park-the-car");
    assert_eq!(again.embedded(), 1, "the request alone");

    // one lesson changes: a refresh embeds it alone, and drops its old vector
    std::fs::write(
        b.path().join("file-the-bug.md"),
        lesson(
            "file-the-bug",
            "File the defect with a reproduction",
            "Attach the input.",
        ),
    )
    .unwrap();
    r.refresh_paths(&["file-the-bug.md".to_string()]).unwrap();
    assert_eq!((words.embedded(), r.last_refresh().embedded), (4, 1));
    assert_eq!(r.embedded_lessons(), 3);
    assert_ne!(std::fs::read(vectors_file(b.path())).unwrap(), kept);
    // a new lesson: the watcher's path and a full refresh embed it once
    std::fs::write(
        b.path().join("new-one.md"),
        lesson("new-one", "Check the vehicle tyres", "Before a long drive."),
    )
    .unwrap();
    r.refresh().unwrap();
    assert_eq!((words.embedded(), r.last_refresh().embedded), (5, 1));
    r.refresh().unwrap();
    assert_eq!(r.last_refresh().embedded, 0, "nothing changed");
    // and the other process, at its next search, embeds the two new bytes only
    r2.refresh().unwrap();
    assert_eq!(again.embedded(), 1 + 2);
}

#[test]
fn another_model_embeds_every_lesson_again() {
    let b = bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    let other = Words::new("words-2");
    let mut r2 = Retriever::open(b.path()).unwrap();
    r2.set_embedder(Some(other.clone())).unwrap();
    assert_eq!(
        other.embedded(),
        3,
        "vectors of another model are never used"
    );
    // and back: the file now holds words-2's vectors, so words-1 embeds again too
    let first = Words::new("words-1");
    let mut r3 = Retriever::open(b.path()).unwrap();
    r3.set_embedder(Some(first.clone())).unwrap();
    assert_eq!(first.embedded(), 3);
}

#[test]
fn a_damaged_vectors_file_is_rebuilt_not_trusted() {
    let b = bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    let path = vectors_file(b.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let words = Words::new("words-1");
    let mut r2 = Retriever::open(b.path()).unwrap();
    r2.set_embedder(Some(words.clone())).unwrap();
    assert_eq!(words.embedded(), 3);
    assert_eq!(slugs(&search(&mut r2, "automobile"))[0], "park-the-car");
}

#[test]
fn a_missing_model_gives_its_reason_and_lexical_results() {
    let plain = bank("");
    let b = bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let mut lexical = Retriever::open(plain.path()).unwrap();
    let mut r = Retriever::open(b.path()).unwrap();
    assert!(!r.is_semantic());
    let problem = r.semantic_problem().expect("a reason").to_string();
    assert!(problem.contains("models/nowhere"), "{problem}");
    for q in ["cache the build", "automobile", "file a bug"] {
        let (a, b) = (search(&mut lexical, q), search(&mut r, q));
        assert_eq!(slugs(&a), slugs(&b), "{q}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.score, y.score, "{q}");
        }
    }
    assert!(!vectors_file(b.path()).exists());
}

#[test]
fn a_model_that_fails_on_a_text_turns_semantic_retrieval_off_with_the_reason() {
    let b = bank("");
    std::fs::write(
        b.path().join("odd-one.md"),
        lesson("odd-one", "An odd lesson", "It says FAIL to the encoder."),
    )
    .unwrap();
    let mut r = Retriever::open(b.path()).unwrap();
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    assert!(!r.is_semantic());
    let problem = r.semantic_problem().expect("a reason").to_string();
    assert!(problem.contains("cannot embed"), "{problem}");
    assert_eq!(
        slugs(&search(&mut r, "cache the build"))[0],
        "cache-the-build"
    );
    // a request the model fails on: lexical results for it too
    let b2 = bank("");
    let mut r2 = Retriever::open(b2.path()).unwrap();
    r2.set_embedder(Some(Words::new("words-1"))).unwrap();
    let hits = search(&mut r2, "cache the build FAIL");
    assert_eq!(slugs(&hits)[0], "cache-the-build");
    assert!(hits[0].score.semantic.is_none());
    assert!(r2.semantic_problem().is_some());
}

#[test]
fn lesson_search_with_a_missing_model_warns_and_answers_lexically() {
    let plain = bank("");
    let b = bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let args = ["search", "cache the build", "--format", "json"];
    let lexical = crate::sandbox::run_in(plain.path(), &args);
    let run = crate::sandbox::run_in(b.path(), &args);
    assert_eq!(run.code, 0, "{run}");
    // the same hits and scores (the JSON names the bank's path: compare the hits alone)
    let hits = |out: &str| serde_json::from_str::<serde_json::Value>(out).unwrap()["hits"].clone();
    assert_eq!(hits(&run.stdout), hits(&lexical.stdout));
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("warning: [retrieve] model: "));
    let warning = warning.unwrap_or_else(|| panic!("{run}"));
    assert!(warning.contains("models/nowhere") && warning.ends_with("the search is lexical"));
    assert!(!lexical.stderr.contains("warning"), "{lexical}");
}

#[test]
fn explain_follows_the_hybrid_ranking() {
    use lesson::retrieve::Explanation;
    let b = bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    let why = r.explain(&request("automobile"), "park-the-car").unwrap();
    assert!(matches!(why, Explanation::NoMatch), "{why:?}");
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    match r.explain(&request("automobile"), "park-the-car").unwrap() {
        Explanation::Shown { rank, score, .. } => {
            assert_eq!(rank, 1);
            assert!(score.semantic.is_some());
        }
        other => panic!("{other:?}"),
    }
    // a lesson sharing no word with the request: lexically no match, in the hybrid a fused
    // similarity above 0 (its cosine's share) but below the threshold
    let why = r
        .explain(&request("automobile"), "cache-the-build")
        .unwrap();
    match why {
        Explanation::BelowMinSimilarity { similarity, .. } => {
            assert!(similarity > 0.0 && similarity < 0.1, "{similarity}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn lesson_watch_with_a_missing_model_warns_and_keeps_a_lexical_index() {
    use std::io::Read;
    let b = bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let root = b.path();
    let mut child = crate::sandbox::lesson()
        .args(["watch", "--debounce", "50", "--dir"])
        .arg(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let stderr = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    // the watcher warns once it has built the index and vouched for it
    let start = std::time::Instant::now();
    let warning = loop {
        let text = stderr.lock().unwrap().clone();
        if let Some(l) = text
            .lines()
            .find(|l| l.starts_with("warning: [retrieve] model: "))
        {
            break l.to_string();
        }
        assert!(start.elapsed().as_secs() < 60, "no warning: {text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(lesson::retrieve::marker::vouched(root).is_some());
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        warning.contains("models/nowhere")
            && warning.ends_with("the index is kept without vectors"),
        "{warning}"
    );
    assert!(!root.join(".lesson/retrieve.vectors").exists());
}

#[test]
fn lesson_mcp_with_a_missing_model_warns_once_and_answers_lexically() {
    let b = bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let search = |request: &str| ("search", serde_json::json!({"request": request}));
    let (answers, stderr) = mcp_session(
        b.path(),
        &[search("cache the build"), search("park the car")],
    );
    let first = answers[0]["result"]["structuredContent"]["hits"][0]["slug"].clone();
    assert_eq!(first, "cache-the-build", "{answers:?}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("lesson mcp: warning: [retrieve] model: "))
        .collect();
    assert_eq!(warnings.len(), 1, "once per opened index: {stderr}");
    assert!(
        warnings[0].contains("models/nowhere") && warnings[0].ends_with("searches are lexical"),
        "{stderr}"
    );
}

#[test]
fn lesson_mcp_review_and_propose_with_a_missing_model_warn_and_compare_words() {
    let b = bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let candidate = lesson(
        "cache-builds",
        "Cache the builds between runs",
        "Key it on the lock.",
    );
    let (answers, stderr) = mcp_session(
        b.path(),
        &[
            ("review", serde_json::json!({})),
            (
                "propose",
                serde_json::json!({"markdown": candidate, "dry_run": true}),
            ),
        ],
    );
    for answer in &answers {
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    for ending in [
        "review compares words alone",
        "candidates were compared by words alone",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("lesson mcp: warning: [retrieve] model: ")
                    && l.contains("models/nowhere")
                    && l.ends_with(ending)),
            "{ending}: {stderr}"
        );
    }
}

/// `lesson mcp` on the bank at `root`: initialize, then one `tools/call` per `(tool,
/// arguments)`; the answers to the calls, in order, and what the server wrote to stderr.
fn mcp_session(
    root: &Path,
    calls: &[(&str, serde_json::Value)],
) -> (Vec<serde_json::Value>, String) {
    use std::io::Write;
    let mut child = crate::sandbox::lesson()
        .args(["mcp", "--dir"])
        .arg(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut messages = vec![
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "tests/it/semantic.rs", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    for (id, (name, arguments)) in calls.iter().enumerate() {
        messages.push(
            serde_json::json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}),
        );
    }
    let mut stdin = child.stdin.take().unwrap();
    for m in messages {
        writeln!(stdin, "{m}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let mut answers: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|m: &serde_json::Value| m["id"].as_u64().is_some_and(|id| id >= 1))
        .collect();
    answers.sort_by_key(|m| m["id"].as_u64());
    assert_eq!(answers.len(), calls.len(), "{stdout}\n{stderr}");
    (answers, stderr)
}

// --- dedup with a model ----------------------------------------------------------------------

/// A bank of three lessons for dedup: two that say the same in other words (the stand-in's
/// synonyms), one about something else; `config` is its `lesson.toml`.
fn dedup_bank(config: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("lesson.toml"), config).unwrap();
    for (slug, title, description) in [
        (
            "automobile-defect",
            "Automobile defect",
            "a defect of the automobile",
        ),
        ("car-bug", "Car bug", "a bug of the car"),
        (
            "cache-the-build",
            "Cache the build between runs",
            "builds run again",
        ),
    ] {
        std::fs::write(
            tmp.path().join(format!("{slug}.md")),
            crate::dedup::lesson_text(slug, title, description, &[]),
        )
        .unwrap();
    }
    tmp
}

fn load_bank(root: &Path) -> lesson::Bank {
    lesson::Bank::load_with(root, &Default::default(), NOW.parse().unwrap()).unwrap()
}

/// The embeddings of the bank at `root` under the stand-in encoder.
fn dedup_embeddings(root: &Path) -> lesson::dedup::Embeddings {
    let mut r = Retriever::open(root).unwrap();
    r.set_embedder(Some(Words::new("words-1"))).unwrap();
    r.embeddings().unwrap().expect("a model")
}

#[test]
fn dedup_with_a_model_pairs_lessons_alike_in_meaning_whatever_their_words() {
    use lesson::dedup;
    let b = dedup_bank("[dedup]\nmin-semantic-similarity = 0.9\n");
    let bank = load_bank(b.path());
    let by_words = dedup::pairs(&bank).unwrap();
    assert!(by_words.is_empty(), "{by_words:?}");
    let embeddings = dedup_embeddings(b.path());
    assert_eq!(embeddings.len(), 3);
    let found = dedup::pairs_with(&bank, Some(&embeddings)).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let p = &found[0];
    assert_eq!(
        (p.a.as_str(), p.b.as_str()),
        ("automobile-defect", "car-bug")
    );
    assert!(p.text_similarity < 0.6, "{p:?}");
    let cosine = p.semantic_similarity.expect("a cosine");
    assert!(cosine > 0.99, "{p:?}");
    // the score counts the cosine in place of the text similarity (slug weight 1, text 2)
    let expected = (p.slug_similarity + 2.0 * cosine) / 3.0;
    assert!((p.score - expected).abs() < 2e-4, "{p:?}");
    assert_eq!(
        found,
        dedup::pairs_exhaustive_with(&bank, Some(&embeddings)).unwrap()
    );
    // `lesson review` lists the same pair
    let near = |embeddings| {
        lesson::curate::review::review_with(&bank, embeddings)
            .unwrap()
            .into_iter()
            .filter_map(|f| Some((f.slug, f.duplicate_of?)))
            .collect::<Vec<_>>()
    };
    assert!(near(None).is_empty());
    assert_eq!(
        near(Some(&embeddings)),
        [("automobile-defect".to_string(), "car-bug".to_string())]
    );
    // above the cosine of any pair: words alone again, the cosine still reported
    std::fs::write(
        b.path().join("lesson.toml"),
        "[dedup]\nmin-semantic-similarity = 1.0\n",
    )
    .unwrap();
    let strict = load_bank(b.path());
    let found = dedup::pairs_with(&strict, Some(&embeddings)).unwrap();
    assert!(found.is_empty() || cosine >= 1.0, "{found:?}");
}

#[test]
fn a_new_lesson_is_held_against_the_bank_by_its_meaning() {
    use lesson::dedup;
    let b = dedup_bank("[dedup]\nmin-semantic-similarity = 0.9\n");
    std::fs::remove_file(b.path().join("car-bug.md")).unwrap();
    let bank = load_bank(b.path());
    let embeddings = dedup_embeddings(b.path());
    let text = crate::dedup::lesson_text("vehicle-bug", "Vehicle bug", "a bug of the vehicle", &[]);
    let doc = lesson::document::Document::parse(
        lesson::source::Source::new("vehicle-bug.md", text),
        None,
    );
    let candidate = doc.lesson.as_deref().expect("a lesson");
    assert!(dedup::duplicates_of(&bank, candidate).unwrap().is_empty());
    let vector = embeddings.embed(&doc, candidate).unwrap();
    let found = dedup::duplicates_of_with(&bank, candidate, Some((&embeddings, vector.as_slice())))
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].a.as_str(), found[0].b.as_str()),
        ("automobile-defect", "vehicle-bug")
    );
    assert!(found[0].semantic_similarity.unwrap() > 0.99);
}

#[test]
fn without_a_model_dedup_has_no_embeddings_and_its_pairs_carry_no_cosine() {
    let b = dedup_bank("");
    let mut r = Retriever::open(b.path()).unwrap();
    assert!(r.embeddings().unwrap().is_none());
    let missing = dedup_bank("[retrieve]\nmodel = \"models/nowhere\"\n");
    let mut r = Retriever::open(missing.path()).unwrap();
    assert!(r.embeddings().unwrap().is_none());
    assert!(r.semantic_problem().is_some());
}

#[test]
fn lesson_dedup_with_a_missing_model_warns_and_compares_words() {
    let plain = crate::dedup::BANK;
    let s = crate::sandbox::Sandbox::with_bank(plain);
    let lexical = s.run(&["dedup", "--dir", "lessons", "--format", "json"]);
    std::fs::write(
        s.bank().join("lesson.toml"),
        "[retrieve]\nmodel = \"models/nowhere\"\n",
    )
    .unwrap();
    let run = s.run(&["dedup", "--dir", "lessons", "--format", "json"]);
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(run.stdout, lexical.stdout);
    assert!(!lexical.stderr.contains("warning"), "{lexical}");
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("warning: [retrieve] model: "))
        .unwrap_or_else(|| panic!("{run}"));
    assert!(
        warning.contains("models/nowhere") && warning.ends_with("dedup compares words alone"),
        "{run}"
    );
}

#[test]
fn dedup_by_meaning_over_many_tiles_is_the_all_pairs_reference() {
    // 150 lessons: the pass by meaning takes its cosines 64 lessons by 64, three tiles a side
    let words = crate::dedup::WORDS.len();
    let specs: Vec<crate::dedup::Spec> = (0..150usize)
        .map(|i| {
            (
                vec![i % 16, (i / 16) % 16],
                vec![i % words, (i * 7 + 3) % words],
                vec![(i * 3) % words, (i * 5 + 1) % words, (i / 3) % words],
                vec![],
            )
        })
        .collect();
    for min_semantic in [0.5, 0.8, 0.95] {
        let tmp = tempfile::tempdir().unwrap();
        crate::dedup::write_bank(tmp.path(), &specs);
        std::fs::write(
            tmp.path().join("lesson.toml"),
            format!("[dedup]\nmin-score = 0.3\nmin-semantic-similarity = {min_semantic}\n"),
        )
        .unwrap();
        let bank = load_bank(tmp.path());
        let embeddings = dedup_embeddings(tmp.path());
        let found = lesson::dedup::pairs_with(&bank, Some(&embeddings)).unwrap();
        let by_meaning = found
            .iter()
            .filter(|p| p.text_similarity < 0.6 && p.semantic_similarity >= Some(min_semantic))
            .count();
        assert!(by_meaning > 0, "{min_semantic}: no pair by meaning alone");
        assert_eq!(
            found,
            lesson::dedup::pairs_exhaustive_with(&bank, Some(&embeddings)).unwrap(),
            "{min_semantic}"
        );
    }
}

#[test]
fn review_add_and_their_json_with_a_missing_model_warn_and_compare_words() {
    let s = crate::sandbox::Sandbox::with_bank(crate::dedup::BANK);
    let candidate = crate::dedup::lesson_text(
        "retry-flaky-network-checks",
        "Retry flaky network tests",
        "A network test fails now and then in CI",
        &[],
    );
    s.write("candidate.md", &candidate);
    let review = ["review", "--dir", "lessons", "--format", "json"];
    let add = [
        "add",
        "candidate.md",
        "--dir",
        "lessons",
        "--dry-run",
        "--format",
        "json",
    ];
    let lexical = [s.run(&review), s.run(&add)];
    std::fs::write(
        s.bank().join("lesson.toml"),
        "[retrieve]\nmodel = \"models/nowhere\"\n",
    )
    .unwrap();
    let with_model = [s.run(&review), s.run(&add)];
    for ((before, after), what) in lexical
        .iter()
        .zip(&with_model)
        .zip(["review", "candidates were"])
    {
        assert_eq!(after.code, 0, "{after}");
        assert_eq!(after.stdout, before.stdout, "{what}");
        assert!(!before.stderr.contains("warning"), "{before}");
        let warning = after
            .stderr
            .lines()
            .find(|l| l.starts_with("warning: [retrieve] model: "))
            .unwrap_or_else(|| panic!("{after}"));
        assert!(
            warning.contains("models/nowhere") && warning.contains(what),
            "{after}"
        );
    }
    assert!(
        !s.bank().join("retry-flaky-network-checks.md").exists(),
        "a dry run"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: crate::cases(24), ..proptest::prelude::ProptestConfig::default()
    })]

    /// With embeddings too, the candidate search finds exactly the pairs an all-pairs
    /// comparison accepts, and every pair it reports passed the words' or the meaning's
    /// threshold.
    #[test]
    fn dedup_with_embeddings_is_the_all_pairs_reference(
        specs in proptest::collection::vec(crate::dedup::spec(), 2..12),
        min_text in 0.3f64..0.95,
        min_semantic in 0.3f64..1.0,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        crate::dedup::write_bank(tmp.path(), &specs);
        std::fs::write(
            tmp.path().join("lesson.toml"),
            format!(
                "[dedup]\nmin-text-similarity = {min_text}\nmin-score = 0.3\n\
                 min-semantic-similarity = {min_semantic}\n"
            ),
        )
        .unwrap();
        let bank = load_bank(tmp.path());
        let embeddings = dedup_embeddings(tmp.path());
        let found = lesson::dedup::pairs_with(&bank, Some(&embeddings)).unwrap();
        proptest::prop_assert_eq!(
            &found,
            &lesson::dedup::pairs_exhaustive_with(&bank, Some(&embeddings)).unwrap()
        );
        for p in &found {
            let cosine = p.semantic_similarity.expect("every lesson has a vector");
            proptest::prop_assert!(
                p.text_similarity >= min_text - 1e-4 || cosine >= min_semantic - 1e-4,
                "{:?}", p
            );
        }
        // the pairs of a few lessons, as `lesson add` asks for its new ones
        let some: std::collections::BTreeSet<&str> = found
            .iter()
            .take(2)
            .map(|p| p.b.as_str())
            .collect();
        let theirs: Vec<_> = found
            .iter()
            .filter(|p| some.contains(p.a.as_str()) || some.contains(p.b.as_str()))
            .cloned()
            .collect();
        proptest::prop_assert_eq!(
            &lesson::dedup::pairs_involving(&bank, Some(&embeddings), &some).unwrap(),
            &theirs
        );
        // a model only adds pairs: every pair by words alone is still there
        for p in lesson::dedup::pairs(&bank).unwrap() {
            proptest::prop_assert!(
                found.iter().any(|q| (&q.a, &q.b) == (&p.a, &p.b) && q.score >= p.score),
                "{:?} lost", p
            );
        }
    }
}

#[test]
fn the_add_gate_merges_a_candidate_that_says_the_same_in_other_words() {
    use lesson::curate::add::{prepare_all, read_candidates, Admitted, Batch, Intake, Why};
    let b = dedup_bank("[dedup]\nmin-semantic-similarity = 0.9\n");
    std::fs::remove_file(b.path().join("car-bug.md")).unwrap();
    let stamp = lesson::curate::Stamp {
        at: NOW.parse().unwrap(),
        by: "tester".into(),
    };
    let text = crate::dedup::lesson_text("vehicle-bug", "Vehicle bug", "a bug of the vehicle", &[]);
    let other = crate::dedup::lesson_text(
        "pin-the-toolchain",
        "Pin the toolchain",
        "a toolchain update breaks CI",
        &[],
    );
    let candidates: Vec<_> = [("vehicle-bug.md", text), ("pin.md", other)]
        .into_iter()
        .flat_map(|(label, text)| read_candidates(label, text.into_bytes()).unwrap())
        .collect();
    let admit = |embeddings: Option<lesson::dedup::Embeddings>| {
        let bank = load_bank(b.path());
        let (prepared, rejection) = prepare_all(&bank, &candidates, &Intake::default());
        assert!(!rejection.refused(), "{rejection}");
        let mut batch = Batch::new(bank, stamp.clone(), None);
        batch.set_embeddings(embeddings);
        let admitted: Vec<Admitted> = prepared.iter().map(|p| batch.admit(p).unwrap()).collect();
        (admitted, batch)
    };
    // by words alone, both are new lessons
    let (admitted, _) = admit(None);
    assert!(
        admitted
            .iter()
            .all(|a| matches!(a, Admitted::Created { .. })),
        "{admitted:?}"
    );
    // by meaning, the first goes into the lesson it says the same as
    let (admitted, batch) = admit(Some(dedup_embeddings(b.path())));
    match &admitted[0] {
        Admitted::Merged {
            into,
            why: Why::Similar(pair),
            ..
        } => {
            assert_eq!(into, "automobile-defect");
            assert!(pair.semantic_similarity.unwrap() > 0.99, "{pair:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(&admitted[1], Admitted::Created { slug, .. } if slug == "pin-the-toolchain"));
    // the new lesson's vector joined the embeddings, for the candidates after it
    let embeddings = batch.embeddings().unwrap();
    assert_eq!(
        embeddings.len(),
        3,
        "two lessons of the bank and the new one"
    );
}
