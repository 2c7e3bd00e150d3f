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
