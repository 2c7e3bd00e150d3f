//! Provenance from git history: each lesson's created and last-changed commits, following
//! renames and moves to `_archive/` (issue 15, acceptance 4), as `show` and `list` print them.

use std::path::Path;
use std::process::Command;

use lesson::git::provenance::Provenance;

use crate::sandbox::Sandbox;

/// `git ARGS` in `dir` with a fixed identity and date, and none of the machine's config.
pub fn git_at(dir: &Path, date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Ann", "-c", "user.email=ann@example.org"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Everything in the work tree committed at `date`; the new commit's hash.
pub fn commit_all(dir: &Path, date: &str, message: &str) -> String {
    git_at(dir, date, &["add", "-A"]);
    git_at(dir, date, &["commit", "-qm", message]);
    git_at(dir, date, &["rev-parse", "HEAD"])
}

/// The retrieve fixture in a repository: one commit adding it, one renaming a lesson (its
/// slug changed with it), one archiving another with `lesson archive`. Returns the sandbox and
/// the three commits.
fn history() -> (Sandbox, [String; 3]) {
    let sb = Sandbox::with_bank("tests/fixtures/banks/retrieve");
    let top = sb.path().to_path_buf();
    git_at(&top, "2025-01-01T00:00:00Z", &["init", "-q"]);
    let first = commit_all(&top, "2025-01-01T00:00:00Z", "add the bank");
    let bank = sb.bank();
    let old = std::fs::read_to_string(bank.join("pin-the-nightly-toolchain.md")).unwrap();
    std::fs::remove_file(bank.join("pin-the-nightly-toolchain.md")).unwrap();
    std::fs::write(
        bank.join("pin-the-toolchain.md"),
        old.replace("slug: pin-the-nightly-toolchain", "slug: pin-the-toolchain"),
    )
    .unwrap();
    assert_eq!(sb.run(&["index"]).code, 0);
    let second = commit_all(
        &top,
        "2025-02-01T00:00:00Z",
        "rename pin-the-nightly-toolchain",
    );
    let archived = sb.run(&["archive", "review-unsafe-blocks"]);
    assert_eq!(archived.code, 0, "{archived}");
    assert!(bank.join("_archive/review-unsafe-blocks.md").is_file());
    let third = commit_all(&top, "2025-03-01T00:00:00Z", "archive review-unsafe-blocks");
    (sb, [first, second, third])
}

fn json(sb: &Sandbox, args: &[&str]) -> serde_json::Value {
    let run = sb.run(args);
    assert_eq!(run.code, 0, "{run}");
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn provenance_follows_a_rename_and_an_archive_move() {
    let (sb, [first, second, third]) = history();
    let p = Provenance::of_bank(&sb.bank()).unwrap().unwrap();
    let renamed = p.get("pin-the-toolchain.md").unwrap();
    assert_eq!(renamed.created.commit, first, "created before the rename");
    assert_eq!(renamed.changed.commit, second, "changed by the rename");
    let moved = p.get("_archive/review-unsafe-blocks.md").unwrap();
    assert_eq!(moved.created.commit, first, "created before the move");
    assert_eq!(moved.changed.commit, third, "changed by the move");
    let untouched = p.get("review-unsafe-blocks.md");
    assert!(untouched.is_none(), "the old path is no lesson of HEAD");
    let other = p.get("cache-target-dir-in-ci.md").unwrap();
    assert_eq!(
        (&other.created.commit, &other.changed.commit),
        (&first, &first)
    );

    // `show` prints it, for a live lesson and for an archived one
    let shown = json(&sb, &["show", "pin-the-toolchain", "--format", "json"]);
    assert_eq!(shown["created"]["commit"], first.as_str());
    assert_eq!(shown["created"]["date"], "2025-01-01T00:00:00Z");
    assert_eq!(shown["changed"]["commit"], second.as_str());
    assert_eq!(shown["changed"]["author"], "Ann");
    assert_eq!(shown["changed"]["email"], "ann@example.org");
    let archived = json(&sb, &["show", "review-unsafe-blocks", "--format", "json"]);
    assert_eq!(archived["status"], "archived");
    assert_eq!(archived["created"]["date"], "2025-01-01T00:00:00Z");
    assert_eq!(archived["changed"]["commit"], third.as_str());
    let text = sb.run(&["show", "pin-the-toolchain"]);
    let line = text.stdout.lines().nth(1).unwrap();
    assert_eq!(
        line,
        format!(
            "created 2025-01-01 {} Ann, changed 2025-02-01 {} Ann",
            &first[..7],
            &second[..7]
        )
    );
}

#[test]
fn list_shows_each_lessons_commits_in_json_and_its_last_change_in_text() {
    let (sb, [first, second, _]) = history();
    let listed = json(&sb, &["list", "--format", "json"]);
    let lessons = listed.as_array().unwrap();
    assert_eq!(lessons.len(), 9);
    let renamed = lessons
        .iter()
        .find(|l| l["slug"] == "pin-the-toolchain")
        .unwrap();
    assert_eq!(renamed["created"]["commit"], first.as_str());
    assert_eq!(renamed["changed"]["commit"], second.as_str());
    assert!(lessons
        .iter()
        .all(|l| l["created"]["commit"] == first.as_str()));

    let text = sb.run(&["list"]);
    let mut lines = text.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["SLUG", "OUTCOME", "CONF", "S/F", "STATUS", "CHANGED", "TITLE"]
    );
    let row = lines.find(|l| l.starts_with("pin-the-toolchain ")).unwrap();
    assert!(row.contains(" 2025-02-01 "), "{row}");

    // a lesson not committed yet has none; the listing says `-`
    let model = std::fs::read_to_string(sb.bank().join("review-unsafe-blocks.md"));
    let model = model.unwrap_or_else(|_| {
        std::fs::read_to_string(sb.bank().join("cache-target-dir-in-ci.md")).unwrap()
    });
    let slug = model
        .lines()
        .find_map(|l| l.strip_prefix("slug: "))
        .unwrap()
        .to_string();
    std::fs::write(
        sb.bank().join("new-lesson.md"),
        model.replace(&format!("slug: {slug}"), "slug: new-lesson"),
    )
    .unwrap();
    let text = sb.run(&["list"]);
    let row = text
        .stdout
        .lines()
        .find(|l| l.starts_with("new-lesson "))
        .unwrap();
    assert!(row.contains(" - "), "{row}");
    let listed = json(&sb, &["list", "--format", "json"]);
    let new = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["slug"] == "new-lesson")
        .unwrap();
    assert!(new.get("created").is_none() && new.get("changed").is_none());
}

#[test]
fn a_bank_outside_git_lists_without_provenance() {
    let sb = Sandbox::with_bank("tests/fixtures/banks/retrieve");
    let text = sb.run(&["list"]);
    assert_eq!(text.code, 0);
    assert!(!text.stdout.contains("CHANGED"));
    assert!(!sb.bank().join(".lesson/provenance").exists());
}

/// Two searches (`a slow build`, `merging a branch into main`) in the bank at `dir`, as
/// (slug, recency, score) per hit.
fn ranking(dir: &Path) -> Vec<(String, f64, f64)> {
    let mut hits = Vec::new();
    for query in ["a slow build", "merging a branch into main"] {
        let run = crate::sandbox::run_in(dir, &["search", "--format", "json", "-k", "9", query]);
        assert_eq!(run.code, 0, "{run}");
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        for h in v["hits"].as_array().unwrap() {
            hits.push((
                h["slug"].as_str().unwrap().to_string(),
                h["score"]["recency"].as_f64().unwrap(),
                h["score"]["score"].as_f64().unwrap(),
            ));
        }
    }
    hits
}

/// Sets a file's modification time, as `touch -d` would.
fn set_mtime(path: &Path, secs: u64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// `0.5^(days from `at` to the sandbox's clock / 365)`, as a search shows it (six decimals).
fn decay(at: &str) -> f64 {
    let at: jiff::Timestamp = at.parse().unwrap();
    let now: jiff::Timestamp = crate::sandbox::NOW.parse().unwrap();
    let days = (now.as_second() - at.as_second()) as f64 / 86_400.0;
    let r = 0.5f64.powf(days / 365.0);
    (r * 1e6).round() / 1e6
}

#[test]
fn in_git_recency_is_the_last_commit_and_no_file_time_moves_the_ranking() {
    let (sb, _) = history();
    let bank = sb.bank();
    let before = ranking(&bank);
    assert_eq!(before.len(), 4, "{before:?}");
    for (slug, recency, _) in &before {
        assert_eq!(*recency, decay("2025-01-01T00:00:00Z"), "{slug}");
    }

    // touching files (far in the past, and now) changes nothing
    set_mtime(&bank.join("retry-flaky-network-tests.md"), 1_000_000_000);
    set_mtime(
        &bank.join("squash-merge-feature-branches.md"),
        1_000_000_000,
    );
    set_mtime(&bank.join("cache-cargo-registry-in-ci.md"), 1_900_000_000);
    assert_eq!(ranking(&bank), before);

    // a fresh clone, and a second checkout of the same commit, rank identically
    let clone = sb.path().join("clone");
    git_at(
        sb.path(),
        "2025-03-01T00:00:00Z",
        &["clone", "-q", ".", clone.to_str().unwrap()],
    );
    assert_eq!(ranking(&clone.join("lessons")), before);
    let other = sb.path().join("other");
    git_at(
        &clone,
        "2025-03-01T00:00:00Z",
        &["worktree", "add", "-q", "--detach", other.to_str().unwrap()],
    );
    set_mtime(
        &other.join("lessons/retry-flaky-network-tests.md"),
        1_000_000_000,
    );
    assert_eq!(ranking(&other.join("lessons")), before);

    // a new commit moves the lesson it changes, and only it (the cache walks the new commit)
    let path = bank.join("retry-flaky-network-tests.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\nOne more line.\n")).unwrap();
    commit_all(sb.path(), "2026-11-01T00:00:00Z", "edit");
    let after = ranking(&bank);
    let recency =
        |r: &[(String, f64, f64)], slug: &str| r.iter().find(|h| h.0 == slug).map(|h| h.1).unwrap();
    assert_eq!(
        recency(&after, "retry-flaky-network-tests"),
        decay("2026-11-01T00:00:00Z")
    );
    assert_eq!(
        recency(&after, "cache-cargo-registry-in-ci"),
        recency(&before, "cache-cargo-registry-in-ci")
    );
}

#[test]
fn outside_git_recency_is_the_ledgers_newest_event_and_touch_changes_nothing() {
    let sb = Sandbox::with_bank("tests/fixtures/banks/retrieve");
    let bank = sb.bank();
    let before = ranking(&bank);
    assert!(
        before.iter().all(|h| h.1 == 1.0),
        "no ledger, no date: no decay {before:?}"
    );
    set_mtime(&bank.join("retry-flaky-network-tests.md"), 1_000_000_000);
    assert_eq!(ranking(&bank), before);

    // a recorded outcome dates the lesson by its ledger event (the sandbox's clock)
    let run = sb.run(&[
        "record",
        "retry-flaky-network-tests",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r1",
    ]);
    assert_eq!(run.code, 0, "{run}");
    let after = ranking(&bank);
    let hit = after
        .iter()
        .find(|h| h.0 == "retry-flaky-network-tests")
        .unwrap();
    assert_eq!(hit.1, 1.0, "recorded at the clock of the search");
    set_mtime(&bank.join("retry-flaky-network-tests.md"), 1_000_000_000);
    assert_eq!(ranking(&bank), after);
    // the ledger's time, not the clock: judged a year later, it counts half
    let later = crate::sandbox::lesson()
        .args(["search", "--format", "json", "a slow build"])
        .env("LESSON_NOW", "2027-11-22T12:00:00Z")
        .current_dir(&bank)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&later.stdout).unwrap();
    let hit = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["slug"] == "retry-flaky-network-tests")
        .unwrap();
    assert_eq!(hit["score"]["recency"].as_f64().unwrap(), 0.5);
    let other = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["slug"] != "retry-flaky-network-tests")
        .unwrap();
    assert_eq!(other["score"]["recency"].as_f64().unwrap(), 1.0);
}

#[test]
fn log_tells_a_lessons_story_commits_ledger_and_supersession() {
    let (sb, [first, second, third]) = history();
    let run = sb.run(&[
        "record",
        "pin-the-toolchain",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r7",
    ]);
    assert_eq!(run.code, 0, "{run}");
    let fourth = commit_all(
        sb.path(),
        "2025-04-01T00:00:00Z",
        "record pin-the-toolchain",
    );
    let redact = |s: String| {
        [&first, &second, &third, &fourth]
            .iter()
            .enumerate()
            .fold(s, |s, (i, c)| {
                s.replace(c.as_str(), &format!("<commit {}>", i + 1))
                    .replace(&c[..7], &format!("<c{}>", i + 1))
            })
    };
    insta::assert_snapshot!(redact(sb.transcript(&[
        &["log", "pin-the-toolchain"],
        &["log", "pin-the-toolchain", "--format", "json"],
        &["log", "cache-target-dir-in-ci"],
        &["log", "review-unsafe-blocks"],
    ])));
}
