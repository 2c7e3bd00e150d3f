//! `lesson sync`: a bare repository on disk and clones of it ("runtimes"), each with its own
//! identity; `HOME` and `GIT_CONFIG_NOSYSTEM` keep the machine's git configuration out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::sandbox::{lesson, Run};

/// A bare remote and its clones in one temp directory.
struct Net {
    tmp: tempfile::TempDir,
}

fn env(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", home.join(".gitconfig"))
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("LESSON_BY");
}

fn done(out: Output) -> Run {
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Net {
    fn new() -> Net {
        let net = Net {
            tmp: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(net.home()).unwrap();
        net.git_ok(
            net.root(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        net
    }

    fn root(&self) -> &Path {
        self.tmp.path()
    }

    fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    fn remote(&self) -> PathBuf {
        self.root().join("remote.git")
    }

    fn git(&self, dir: &Path, args: &[&str]) -> Run {
        let mut cmd = Command::new("git");
        cmd.args(args).current_dir(dir).stdin(Stdio::null());
        env(&mut cmd, &self.home());
        done(cmd.output().unwrap())
    }

    fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let run = self.git(dir, args);
        assert_eq!(run.code, 0, "git {args:?} in {}: {run}", dir.display());
        run.stdout
    }

    /// A clone named `name` with its own identity.
    fn clone(&self, name: &str) -> PathBuf {
        let remote = self.remote();
        self.git_ok(
            self.root(),
            &["clone", "-q", remote.to_str().unwrap(), name],
        );
        let dir = self.root().join(name);
        self.identity(&dir, name);
        dir
    }

    fn identity(&self, dir: &Path, name: &str) {
        self.git_ok(dir, &["config", "user.name", name]);
        self.git_ok(
            dir,
            &["config", "user.email", &format!("{name}@example.com")],
        );
    }

    fn command(&self, bank: &Path, args: &[&str]) -> Command {
        let mut cmd = lesson();
        cmd.arg("--dir").arg(bank).args(args).current_dir(bank);
        env(&mut cmd, &self.home());
        let by = bank.file_name().unwrap().to_string_lossy().into_owned();
        cmd.env("LESSON_BY", format!("{by}@test"));
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    fn lesson(&self, bank: &Path, args: &[&str]) -> Run {
        done(self.command(bank, args).output().unwrap())
    }

    fn lesson_ok(&self, bank: &Path, args: &[&str]) -> Run {
        let run = self.lesson(bank, args);
        assert_eq!(run.code, 0, "lesson {args:?} in {}: {run}", bank.display());
        run
    }

    fn spawn(&self, bank: &Path, args: &[&str]) -> Child {
        self.command(bank, args).spawn().unwrap()
    }

    /// `lesson add` of a candidate (JSON) written beside the bank.
    fn add(&self, bank: &Path, slug: &str, trigger: &str, evidence: &str) -> Run {
        let dir = self.root().join("candidates");
        std::fs::create_dir_all(&dir).unwrap();
        let who = bank.file_name().unwrap().to_string_lossy().into_owned();
        let file = dir.join(format!("{who}-{slug}.json"));
        std::fs::write(&file, candidate(slug, trigger, evidence)).unwrap();
        self.lesson_ok(bank, &["add", file.to_str().unwrap()])
    }

    fn record(&self, bank: &Path, slug: &str, run: &str) {
        self.lesson_ok(
            bank,
            &[
                "record",
                slug,
                "--followed",
                "--run-outcome",
                "success",
                "--evidence",
                &format!("run:{run}"),
            ],
        );
    }
}

fn candidate(slug: &str, trigger: &str, evidence: &str) -> String {
    let title = format!("{}.", slug.replace('-', " "));
    serde_json::json!({
        "slug": slug,
        "title": title,
        "trigger": {"description": trigger, "tags": ["sync"]},
        "outcome": "success",
        "evidence": [{"kind": "run", "ref": evidence}],
        "body": format!("# {title}\n\n## When this applies\n\n{trigger}\n\n## What to do (or avoid)\n\nDo the thing about {slug}.\n\n## Counter-example\n\nNot doing it broke run {evidence}.\n"),
    })
    .to_string()
}

/// The lesson `slug` added on two runtimes (an add/add), with near-identical triggers.
fn add_on_both(net: &Net, dirs: [&Path; 2], slug: &str, evidence: [&str; 2]) {
    let triggers = [
        "Two runtimes learn the same thing at once.",
        "Two runtimes learn the same thing at the same time.",
    ];
    for ((dir, trigger), evidence) in dirs.into_iter().zip(triggers).zip(evidence) {
        net.add(dir, slug, trigger, evidence);
    }
}

/// Every file of a work tree but `.git/` and `.lesson/`, with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git" && e.file_name() != ".lesson")
    {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir).unwrap();
            out.insert(
                rel.to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            );
        }
    }
    out
}

/// The state a failed sync must leave as it found: HEAD, the index's staged view, the work
/// tree's bytes.
fn state(net: &Net, dir: &Path) -> (String, String, BTreeMap<String, Vec<u8>>) {
    (
        net.git_ok(dir, &["rev-parse", "HEAD"]),
        net.git_ok(dir, &["status", "--porcelain", "--untracked-files=all"]),
        tree(dir),
    )
}

fn assert_clean(net: &Net, dir: &Path) {
    let status = net.git_ok(dir, &["status", "--porcelain"]);
    assert_eq!(status, "", "{} is not clean", dir.display());
    let lint = net.lesson(dir, &["lint"]);
    assert_eq!(lint.code, 0, "lint in {}: {lint}", dir.display());
    let index = net.lesson(dir, &["index", "--check"]);
    assert_eq!(index.code, 0, "index --check in {}: {index}", dir.display());
    for (path, bytes) in tree(dir) {
        assert!(
            !lesson::sync::has_conflict_marker(&bytes),
            "{path} holds a conflict marker"
        );
    }
}

/// Three runtimes seeded from one that initialised the bank and pushed it to the empty remote.
fn three() -> (Net, Vec<PathBuf>) {
    let net = Net::new();
    let seed = net.clone("r0");
    net.lesson_ok(&seed, &["init", seed.to_str().unwrap()]);
    net.add(
        &seed,
        "shared-lesson",
        "Every runtime meets this shared situation.",
        "seed-1",
    );
    let first = net.lesson_ok(&seed, &["sync"]);
    assert!(first.stdout.contains("create it"), "{first}");
    let clones = vec![seed, net.clone("r1"), net.clone("r2")];
    (net, clones)
}

#[test]
fn three_runtimes_converge_and_count_each_outcome_once() {
    let (net, c) = three();
    let mut recorded: BTreeMap<String, usize> = BTreeMap::new();
    let mut record = |net: &Net, dir: &Path, slug: &str, run: &str| {
        net.record(dir, slug, run);
        *recorded.entry(slug.to_string()).or_default() += 1;
    };
    // round 1: each records on the shared lesson and adds its own; two sync at once
    for (i, dir) in c.iter().enumerate() {
        record(&net, dir, "shared-lesson", &format!("r{i}-a"));
        net.add(
            dir,
            &format!("own-lesson-{i}"),
            &format!("Runtime number {i} has a distinct concern number {i}."),
            &format!("own-{i}"),
        );
    }
    net.lesson_ok(&c[0], &["sync"]);
    let (a, b) = (net.spawn(&c[1], &["sync"]), net.spawn(&c[2], &["sync"]));
    for child in [a, b] {
        let out = done(child.wait_with_output().unwrap());
        assert_eq!(out.code, 0, "{out}");
    }
    // round 2: the same slug added on two runtimes (add/add), near-identical lessons, records
    // on each other's lessons
    for dir in &c {
        net.lesson_ok(dir, &["sync"]);
    }
    add_on_both(&net, [&c[0], &c[1]], "same-slug", ["same-0", "same-1"]);
    net.add(
        &c[2],
        "near-twin-a",
        "Retry a flaky network call with exponential backoff.",
        "twin-2",
    );
    net.add(
        &c[1],
        "near-twin-b",
        "Retry a flaky network call with exponential backoff and jitter.",
        "twin-1",
    );
    record(&net, &c[0], "own-lesson-1", "x0");
    record(&net, &c[1], "own-lesson-2", "x1");
    record(&net, &c[2], "shared-lesson", "x2");
    record(&net, &c[2], "own-lesson-0", "x2");
    let (a, b) = (net.spawn(&c[0], &["sync"]), net.spawn(&c[1], &["sync"]));
    for child in [a, b] {
        let out = done(child.wait_with_output().unwrap());
        assert_eq!(out.code, 0, "{out}");
    }
    net.lesson_ok(&c[2], &["sync"]);
    // round 3: supersede and archive on one runtime while the others record
    net.lesson_ok(&c[0], &["sync"]);
    net.add(
        &c[0],
        "better-shared",
        "A better version of the shared situation, for everyone.",
        "better-0",
    );
    net.lesson_ok(
        &c[0],
        &["supersede", "own-lesson-0", "--by", "better-shared"],
    );
    net.lesson_ok(&c[0], &["archive", "own-lesson-0"]);
    record(&net, &c[1], "shared-lesson", "y1");
    // a record on the lesson another runtime archives at the same time
    record(&net, &c[1], "own-lesson-0", "y1");
    record(&net, &c[2], "own-lesson-1", "y2");
    let (a, b, d) = (
        net.spawn(&c[0], &["sync"]),
        net.spawn(&c[1], &["sync"]),
        net.spawn(&c[2], &["sync"]),
    );
    for child in [a, b, d] {
        let out = done(child.wait_with_output().unwrap());
        assert_eq!(out.code, 0, "{out}");
    }
    // the final round: everyone receives everything
    for dir in c.iter().chain(c.iter()) {
        net.lesson_ok(dir, &["sync"]);
    }
    let first = tree(&c[0]);
    for dir in &c[1..] {
        assert_eq!(tree(dir), first, "{} differs from r0", dir.display());
    }
    for dir in &c {
        assert_clean(&net, dir);
    }
    // every outcome counted once: the ledgers hold each recorded run once, and lint (L001)
    // holds the counts to the ledgers
    for (slug, n) in &recorded {
        let log = ["_log", "_archive"]
            .iter()
            .find_map(|_| first.get(&format!("_log/{slug}.jsonl")))
            .unwrap_or_else(|| panic!("no ledger for {slug}"));
        let outcomes = String::from_utf8_lossy(log)
            .lines()
            .filter(|l| l.contains("\"event\":\"outcome\""))
            .count();
        assert_eq!(outcomes, *n, "{slug}");
    }
    // the add/add: one `same-slug` lesson, holding both runtimes' evidence
    let same = String::from_utf8_lossy(&first["same-slug.md"]).into_owned();
    assert!(same.contains("same-0") && same.contains("same-1"), "{same}");
    assert!(first.contains_key("_archive/own-lesson-0.md"));
    assert!(!first.contains_key("own-lesson-0.md"));
}

#[test]
fn a_body_rewritten_on_both_sides_stops_the_sync_with_nothing_changed() {
    let (net, c) = three();
    let (a, b) = (&c[1], &c[2]);
    net.lesson_ok(a, &["sync"]);
    net.lesson_ok(b, &["sync"]);
    let rewrite = |dir: &Path, what: &str| {
        let path = dir.join("shared-lesson.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text.replace("Do the thing about shared-lesson.", what);
        std::fs::write(&path, text).unwrap();
    };
    rewrite(a, "Do it the way runtime one says.");
    rewrite(b, "Do it the way runtime two says.");
    net.record(b, "shared-lesson", "b-run");
    net.lesson_ok(a, &["sync"]);
    let before = state(&net, b);
    let run = net.lesson(b, &["sync"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(run.stderr.contains("shared-lesson.md"), "{run}");
    assert!(run.stderr.contains("git pull"), "{run}");
    assert_eq!(state(&net, b), before, "the failed sync changed something");
    // neither side's work is lost: the remote has one's, the working tree the other's
    let remote = net.git_ok(a, &["show", "HEAD:shared-lesson.md"]);
    assert!(remote.contains("runtime one"));
    let local = std::fs::read_to_string(b.join("shared-lesson.md")).unwrap();
    assert!(local.contains("runtime two"));
    // the user resolves: commit, pull, keep both sentences, commit, sync
    net.git_ok(b, &["add", "-A"]);
    net.git_ok(b, &["commit", "-qm", "runtime two's rewrite"]);
    let pull = net.git(
        b,
        &["pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
    );
    assert_ne!(pull.code, 0, "the pull was expected to conflict: {pull}");
    let status = net.git_ok(b, &["diff", "--name-only", "--diff-filter=U"]);
    for path in status.lines() {
        let file = b.join(path);
        let text = std::fs::read_to_string(&file).unwrap();
        let resolved: String = text
            .lines()
            .filter(|l| {
                !(l.starts_with("<<<<<<<") || l.starts_with("=======") || l.starts_with(">>>>>>>"))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&file, resolved).unwrap();
    }
    // counts and the index come back from the ledgers
    net.lesson(b, &["lint", "--fix", "--unsafe-fixes"]);
    net.lesson_ok(b, &["index"]);
    net.git_ok(b, &["add", "-A"]);
    net.git_ok(b, &["commit", "-qm", "keep both"]);
    net.lesson_ok(b, &["sync"]);
    net.lesson_ok(a, &["sync"]);
    assert_eq!(tree(a), tree(b));
    let both = std::fs::read_to_string(a.join("shared-lesson.md")).unwrap();
    assert!(
        both.contains("runtime one") && both.contains("runtime two"),
        "{both}"
    );
    assert_clean(&net, a);
    assert_clean(&net, b);
}

#[test]
fn a_dry_run_says_what_would_happen_and_changes_nothing() {
    let (net, c) = three();
    net.record(&c[1], "shared-lesson", "dry-1");
    net.lesson_ok(&c[1], &["sync"]);
    net.record(&c[2], "shared-lesson", "dry-2");
    // what a fetch brings is not the dry run's doing
    net.git_ok(&c[2], &["fetch", "-q", "origin"]);
    let before = state(&net, &c[2]);
    let objects = tree(&c[2].join(".git/objects")).len();
    let run = net.lesson_ok(&c[2], &["sync", "--dry-run", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["fetched"], 1, "{run}");
    assert_eq!(report["merged"], true, "{run}");
    assert_eq!(report["pushed"], true, "{run}");
    assert!(report["conflicts"].as_array().unwrap().is_empty());
    assert!(
        report["message"].as_str().unwrap().starts_with("record 1"),
        "{run}"
    );
    assert_eq!(state(&net, &c[2]), before);
    assert_eq!(
        tree(&c[2].join(".git/objects")).len(),
        objects,
        "objects were written"
    );
    net.lesson_ok(&c[2], &["sync"]);
    assert_clean(&net, &c[2]);
}

#[test]
fn each_impossible_sync_gets_a_clear_message_and_exit_2() {
    let net = Net::new();
    // outside any repository
    let alone = net.root().join("alone");
    net.lesson_ok(net.root(), &["init", alone.to_str().unwrap()]);
    let run = net.lesson(&alone, &["sync"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("not inside a git repository"), "{run}");
    // no remote
    let local = net.root().join("local");
    net.git_ok(net.root(), &["init", "-q", "-b", "main", "local"]);
    net.identity(&local, "local");
    net.lesson_ok(&local, &["init", local.to_str().unwrap()]);
    let run = net.lesson(&local, &["sync"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("no remote is configured"), "{run}");
    let run = net.lesson(&local, &["sync", "--remote", "upstream"]);
    assert!(run.stderr.contains("no remote named `upstream`"), "{run}");
    // no identity: the first commit needs one
    let (_, c) = three();
    let anon = net.clone("anon");
    net.git_ok(&anon, &["config", "--unset", "user.name"]);
    net.git_ok(&anon, &["config", "--unset", "user.email"]);
    net.git_ok(&anon, &["config", "user.useConfigOnly", "true"]);
    let _ = c;
    net.lesson_ok(&anon, &["init", anon.to_str().unwrap()]);
    let run = net.lesson(&anon, &["sync"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("git config user.name"), "{run}");
    // a detached HEAD
    let det = net.root().join("det");
    net.git_ok(net.root(), &["init", "-q", "-b", "main", "det"]);
    net.identity(&det, "det");
    net.lesson_ok(&det, &["init", det.to_str().unwrap()]);
    net.git_ok(&det, &["add", "-A"]);
    net.git_ok(&det, &["commit", "-qm", "one"]);
    net.git_ok(&det, &["checkout", "-q", "--detach"]);
    let run = net.lesson(&det, &["sync"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("detached"), "{run}");
    // a shallow clone
    let seeded = Net::new();
    let s0 = seeded.clone("s0");
    seeded.lesson_ok(&s0, &["init", s0.to_str().unwrap()]);
    seeded.lesson_ok(&s0, &["sync"]);
    let url = format!("file://{}", seeded.remote().display());
    seeded.git_ok(
        seeded.root(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );
    let run = seeded.lesson(&seeded.root().join("shallow"), &["sync"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("shallow"), "{run}");
    // an unborn branch with nothing to commit, on a remote that has commits
    let empty = seeded.clone("empty");
    seeded.git_ok(&empty, &["checkout", "-q", "--orphan", "fresh"]);
    seeded.git_ok(&empty, &["rm", "-rqf", "."]);
    std::fs::write(empty.join("lesson.toml"), "").unwrap();
    let run = seeded.lesson(&empty, &["sync", "--branch", "main"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("no commit yet"), "{run}");
    // git missing
    let mut cmd = seeded.command(&s0, &["sync"]);
    cmd.env("PATH", seeded.root().join("no-bin"));
    let run = done(cmd.output().unwrap());
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("`git` was not found"), "{run}");
}

#[test]
fn a_bank_in_a_bigger_repository_commits_its_own_files_only() {
    let net = Net::new();
    let work = net.clone("work");
    std::fs::write(work.join("app.rs"), "fn main() {}\n").unwrap();
    std::fs::write(work.join("notes.txt"), "one\n").unwrap();
    net.git_ok(&work, &["add", "-A"]);
    net.git_ok(&work, &["commit", "-qm", "the app"]);
    net.git_ok(&work, &["push", "-q", "origin", "main"]);
    let bank = work.join("docs/lessons");
    net.lesson_ok(&work, &["init", bank.to_str().unwrap()]);
    net.add(
        &bank,
        "bank-lesson",
        "A lesson in a folder of a bigger repository.",
        "b-1",
    );
    // unrelated work in progress: one file staged, one modified
    std::fs::write(work.join("app.rs"), "fn main() { println!(); }\n").unwrap();
    net.git_ok(&work, &["add", "app.rs"]);
    std::fs::write(work.join("notes.txt"), "two\n").unwrap();
    let run = net.lesson_ok(&bank, &["sync"]);
    assert!(run.stdout.contains("push"), "{run}");
    let status = net.git_ok(&work, &["status", "--porcelain"]);
    assert_eq!(status, "M  app.rs\n M notes.txt\n");
    let committed = net.git_ok(&work, &["show", "--name-only", "--format=%s", "HEAD"]);
    assert!(
        committed.starts_with("add 1, edit 3: bank-lesson"),
        "{committed}"
    );
    assert!(!committed.contains("app.rs") && !committed.contains("notes.txt"));
    assert!(committed.contains("docs/lessons/bank-lesson.md"));
    let pushed = net.git_ok(&net.remote(), &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!pushed.contains(".lesson/"), "{pushed}");
    assert!(
        pushed.contains("docs/lessons/_log/bank-lesson.jsonl"),
        "{pushed}"
    );
}

/// A sync killed after it wrote part of the working tree, before it moved HEAD: `git status`
/// shows the files written so far, and the next `lesson sync` finishes the job.
#[test]
fn the_next_sync_finishes_a_killed_one() {
    let (net, c) = three();
    net.lesson_ok(&c[1], &["sync"]);
    net.record(&c[2], "shared-lesson", "k-2");
    net.lesson_ok(&c[2], &["sync"]);
    // c[1], killed mid-way through receiving c[2]'s commit: the ledger written, the note
    // there, HEAD and the index not moved
    let head = net.git_ok(&c[1], &["rev-parse", "HEAD"]);
    net.git_ok(&c[1], &["fetch", "-q", "origin", "main"]);
    let target = net.git_ok(&c[1], &["rev-parse", "FETCH_HEAD"]);
    let ledger = net.git_ok(&c[1], &["show", "FETCH_HEAD:_log/shared-lesson.jsonl"]);
    std::fs::write(c[1].join("_log/shared-lesson.jsonl"), ledger).unwrap();
    std::fs::create_dir_all(c[1].join(".lesson")).unwrap();
    std::fs::write(
        c[1].join(".lesson/sync-merge"),
        format!("{} {}\n", head.trim(), target.trim()),
    )
    .unwrap();
    assert_ne!(net.git_ok(&c[1], &["status", "--porcelain"]), "");
    let run = net.lesson_ok(&c[1], &["sync"]);
    assert!(run.stdout.contains("finished an interrupted sync"), "{run}");
    assert_eq!(net.git_ok(&c[1], &["rev-parse", "HEAD"]), target);
    assert!(!c[1].join(".lesson/sync-merge").exists());
    assert_eq!(tree(&c[1]), tree(&c[2]));
    assert_clean(&net, &c[1]);
}

/// One runtime archives a lesson while another records an outcome on it: `first` syncs its
/// change before `second`. The lesson ends in `_archive/` holding the record (its evidence
/// item, its counts), the ledger holds both events, and no live file is left.
fn archive_against_record(archive_first: bool) {
    let (net, c) = three();
    net.add(
        &c[0],
        "fading-lesson",
        "A lesson one runtime retires while another still uses it.",
        "fade-0",
    );
    net.lesson_ok(&c[0], &["sync"]);
    net.lesson_ok(&c[1], &["sync"]);
    // the archiving runtime recorded on the lesson since the other last synced: its side
    // both changes and moves the file
    net.record(&c[0], "fading-lesson", "last-run");
    net.lesson_ok(&c[0], &["archive", "fading-lesson"]);
    // the other records the same run (it counts once) and one of its own
    net.record(&c[1], "fading-lesson", "last-run");
    net.record(&c[1], "fading-lesson", "late-run");
    let (first, second) = if archive_first {
        (&c[0], &c[1])
    } else {
        (&c[1], &c[0])
    };
    net.lesson_ok(first, &["sync"]);
    net.lesson_ok(second, &["sync"]);
    net.lesson_ok(first, &["sync"]);
    assert_eq!(tree(first), tree(second));
    let files = tree(second);
    assert!(
        !files.contains_key("fading-lesson.md"),
        "a live copy is left"
    );
    let archived = String::from_utf8_lossy(&files["_archive/fading-lesson.md"]).into_owned();
    assert!(archived.contains("late-run"), "{archived}");
    // the add's evidence is no outcome: the two distinct recorded runs are the counts,
    // re-derived from the merged ledger (the file merge alone would add 1 + 2)
    assert_eq!(archived.matches("ref: last-run").count(), 1, "{archived}");
    assert!(archived.contains("success_count: 2\n"), "{archived}");
    let log = String::from_utf8_lossy(&files["_log/fading-lesson.jsonl"]).into_owned();
    assert!(log.contains("\"event\":\"archived\""), "{log}");
    let outcomes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"event\":\"outcome\""))
        .collect();
    assert_eq!(outcomes.len(), 3, "{log}");
    assert!(outcomes.iter().any(|l| l.contains("late-run")), "{log}");
    assert_eq!(
        outcomes.iter().filter(|l| l.contains("last-run")).count(),
        2,
        "{log}"
    );
    assert_clean(&net, first);
    assert_clean(&net, second);
}

#[test]
fn we_archived_they_recorded_the_archive_keeps_the_record() {
    // the recording runtime syncs first: the archiving one merges the record into its move
    archive_against_record(false);
}

#[test]
fn we_recorded_they_archived_the_archive_keeps_the_record() {
    // the archiving runtime syncs first: the recording one merges its record into the move
    archive_against_record(true);
}

/// One runtime supersedes a lesson while another records on it: both survive the merge.
#[test]
fn a_record_on_a_lesson_superseded_elsewhere_merges() {
    let (net, c) = three();
    net.lesson_ok(&c[1], &["sync"]);
    net.add(
        &c[0],
        "better-shared",
        "A better version of the shared situation, for everyone.",
        "better-0",
    );
    net.lesson_ok(
        &c[0],
        &["supersede", "shared-lesson", "--by", "better-shared"],
    );
    net.record(&c[1], "shared-lesson", "still-used");
    net.lesson_ok(&c[0], &["sync"]);
    net.lesson_ok(&c[1], &["sync"]);
    net.lesson_ok(&c[0], &["sync"]);
    assert_eq!(tree(&c[0]), tree(&c[1]));
    let files = tree(&c[1]);
    let lesson = String::from_utf8_lossy(&files["shared-lesson.md"]).into_owned();
    assert!(lesson.contains("still-used"), "{lesson}");
    let log = String::from_utf8_lossy(&files["_log/shared-lesson.jsonl"]).into_owned();
    assert!(log.contains("\"event\":\"superseded\""), "{log}");
    assert!(log.contains("still-used"), "{log}");
    assert_clean(&net, &c[0]);
    assert_clean(&net, &c[1]);
}

/// Three runtimes record on one lesson in every round and sync in turn. Each merge puts its own
/// new evidence first, so after a few rounds the histories hold the same items in different
/// orders (the contention bench found it: "both sides changed `confidence`, `success_count`");
/// every sync still merges, and every outcome counts once.
#[test]
fn many_rounds_on_one_lesson_in_rotating_order_never_conflict() {
    let (net, c) = three();
    for dir in &c[1..] {
        net.lesson_ok(dir, &["sync"]);
    }
    let mut runs = 0;
    for round in 0..5 {
        for (i, dir) in c.iter().enumerate() {
            net.record(dir, "shared-lesson", &format!("rot-{round}-{i}"));
            runs += 1;
        }
        for i in [1, 0, 2] {
            net.lesson_ok(&c[(i + round) % 3], &["sync"]);
        }
    }
    for dir in c.iter().chain(&c[..2]) {
        net.lesson_ok(dir, &["sync"]);
    }
    let trees: Vec<_> = c.iter().map(|d| tree(d)).collect();
    assert!(trees.windows(2).all(|w| w[0] == w[1]), "the clones differ");
    let text = std::fs::read_to_string(c[0].join("shared-lesson.md")).unwrap();
    assert!(text.contains(&format!("success_count: {runs}\n")), "{text}");
    for dir in &c {
        assert_clean(&net, dir);
    }
}

/// A runtime on a branch of its own: publish to `lesson/NAME`, receive `main`.
fn runtime_sync(net: &Net, dir: &Path) -> Run {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    net.lesson_ok(
        dir,
        &[
            "sync",
            "--branch",
            &format!("lesson/{name}"),
            "--from",
            "main",
        ],
    )
}

/// The `success_count` of the lesson `slug` in a tree (live or archived).
fn success_count(files: &BTreeMap<String, Vec<u8>>, slug: &str) -> usize {
    let text = [format!("{slug}.md"), format!("_archive/{slug}.md")]
        .iter()
        .find_map(|p| files.get(p))
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_else(|| panic!("no lesson {slug}"));
    text.lines()
        .find_map(|l| l.strip_prefix("success_count: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no success_count in {slug}: {text}"))
}

/// No ledger holds a line twice and no lesson an evidence item (`ref`) twice: what criss-cross
/// merges would double if a merge took a text merge's word for it.
fn assert_no_duplicates(files: &BTreeMap<String, Vec<u8>>) {
    for (path, bytes) in files {
        let text = String::from_utf8_lossy(bytes);
        let lines: Vec<&str> = if path.starts_with("_log/") {
            text.lines().collect()
        } else if path.ends_with(".md") && path != "_index.md" {
            text.lines()
                .filter(|l| l.trim_start().starts_with("ref: "))
                .collect()
        } else {
            continue;
        };
        let distinct: std::collections::BTreeSet<&str> = lines.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            lines.len(),
            "{path} repeats a line:\n{text}"
        );
    }
}

/// Every runtime on its own branch, a fourth clone merging them: the trees converge, each
/// distinct run counts once, also over criss-cross merges (a runtime receiving a main branch
/// that does not hold its newest commit while the merger merges that commit), and again in a
/// second cycle of work.
#[test]
fn runtimes_on_their_own_branches_converge_through_merge_branches() {
    let (net, c) = three();
    let merger = net.clone("merger");
    // each distinct run recorded, by lesson (the same run on two runtimes counts once)
    let mut runs: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let record = |runs: &mut BTreeMap<String, std::collections::BTreeSet<String>>,
                  net: &Net,
                  dir: &Path,
                  slug: &str,
                  run: &str| {
        net.record(dir, slug, run);
        runs.entry(slug.to_string())
            .or_default()
            .insert(run.to_string());
    };
    let all = |net: &Net| {
        let children: Vec<_> = c
            .iter()
            .map(|dir| {
                let name = dir.file_name().unwrap().to_string_lossy().into_owned();
                let branch = format!("lesson/{name}");
                net.spawn(dir, &["sync", "--branch", &branch, "--from", "main"])
            })
            .collect();
        for child in children {
            let out = done(child.wait_with_output().unwrap());
            assert_eq!(out.code, 0, "{out}");
        }
    };
    let merge = |net: &Net| net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    for cycle in 0..2 {
        // round 1: each records on the shared lesson, adds its own; r0 and r2 add one slug;
        // r0 and r1 record the same run; the runtimes sync at once (no race: one branch each)
        for (i, dir) in c.iter().enumerate() {
            record(
                &mut runs,
                &net,
                dir,
                "shared-lesson",
                &format!("c{cycle}-r{i}-a"),
            );
            if cycle == 0 {
                net.add(
                    dir,
                    &format!("own-lesson-{i}"),
                    &format!("Runtime number {i} has a distinct concern number {i}."),
                    &format!("own-{i}"),
                );
            }
        }
        let same = format!("same-slug-{cycle}");
        let (one, two) = [
            (
                "Two runtimes learn the same thing at once.",
                "Two runtimes learn the same thing at the same time.",
            ),
            (
                "A cache key that omits the locale serves pages in the wrong language.",
                "A cache key without the locale serves pages in the wrong language.",
            ),
        ][cycle];
        net.add(&c[0], &same, one, &format!("same-{cycle}-0"));
        net.add(&c[2], &same, two, &format!("same-{cycle}-2"));
        record(
            &mut runs,
            &net,
            &c[0],
            "shared-lesson",
            &format!("both-{cycle}"),
        );
        record(
            &mut runs,
            &net,
            &c[1],
            "shared-lesson",
            &format!("both-{cycle}"),
        );
        all(&net);
        let report = merge(&net);
        assert!(report.stdout.contains("merge origin lesson/r1"), "{report}");
        assert!(
            report.stdout.contains(&format!(
                "`{same}` was added on both sides: the version on origin main stays"
            )),
            "{report}"
        );
        // round 2: records on each other's lessons after receiving them
        all(&net);
        record(
            &mut runs,
            &net,
            &c[0],
            "own-lesson-1",
            &format!("c{cycle}-x0"),
        );
        record(
            &mut runs,
            &net,
            &c[1],
            "own-lesson-2",
            &format!("c{cycle}-x1"),
        );
        record(
            &mut runs,
            &net,
            &c[2],
            "shared-lesson",
            &format!("c{cycle}-x2"),
        );
        record(&mut runs, &net, &c[2], &same, &format!("c{cycle}-x2"));
        all(&net);
        // a criss-cross: r1 receives a main branch that lacks its newest commit (the main
        // branch as it was, kept under `snap`) while the merger merges that commit
        record(
            &mut runs,
            &net,
            &c[1],
            "shared-lesson",
            &format!("c{cycle}-y1"),
        );
        record(
            &mut runs,
            &net,
            &c[1],
            "own-lesson-0",
            &format!("c{cycle}-y1"),
        );
        runtime_sync(&net, &c[1]);
        record(
            &mut runs,
            &net,
            &c[0],
            "shared-lesson",
            &format!("c{cycle}-y0"),
        );
        runtime_sync(&net, &c[0]);
        net.lesson_ok(&merger, &["sync", "--merge-branches", "lesson/r0"]);
        net.git_ok(&net.remote(), &["update-ref", "refs/heads/snap", "main"]);
        record(
            &mut runs,
            &net,
            &c[0],
            "shared-lesson",
            &format!("c{cycle}-z0"),
        );
        runtime_sync(&net, &c[0]);
        merge(&net);
        record(
            &mut runs,
            &net,
            &c[1],
            "shared-lesson",
            &format!("c{cycle}-z1"),
        );
        net.lesson_ok(&c[1], &["sync", "--branch", "lesson/r1", "--from", "snap"]);
        let bases = net.git_ok(&net.remote(), &["merge-base", "--all", "main", "lesson/r1"]);
        assert_eq!(bases.lines().count(), 2, "not a criss-cross: {bases}");
        // the merger merges the criss-cross, then everyone receives everything
        merge(&net);
        all(&net);
        merge(&net);
        all(&net);
        let first = tree(&merger);
        net.lesson_ok(&merger, &["sync"]);
        for dir in &c {
            assert_eq!(
                tree(dir),
                first,
                "{} differs from the merger",
                dir.display()
            );
        }
        for dir in c.iter().chain([&merger]) {
            assert_clean(&net, dir);
        }
        assert_no_duplicates(&first);
        for (slug, distinct) in &runs {
            assert_eq!(success_count(&first, slug), distinct.len(), "{slug}");
        }
        // the add/add: one lesson holding both runtimes' evidence
        let text = String::from_utf8_lossy(&first[&format!("{same}.md")]).into_owned();
        assert!(
            text.contains(&format!("same-{cycle}-0")) && text.contains(&format!("same-{cycle}-2")),
            "{text}"
        );
        // the runtime branches and main hold one commit
        let main = net.git_ok(&net.remote(), &["rev-parse", "main"]);
        for name in ["r0", "r1", "r2"] {
            let tip = net.git_ok(&net.remote(), &["rev-parse", &format!("lesson/{name}")]);
            assert_eq!(tip, main, "lesson/{name}");
        }
    }
}

/// One lesson added on two runtimes, and a criss-cross: the merger admits one runtime's
/// version into the main branch while that runtime admits the main branch's into its own
/// branch. Both keep the main branch's version and admit the other alike, so the next merge
/// is clean and the lesson holds each evidence item once.
#[test]
fn a_lesson_added_on_two_runtimes_settles_alike_in_a_criss_cross() {
    let (net, c) = three();
    let merger = net.clone("merger");
    add_on_both(&net, [&c[0], &c[2]], "same-slug", ["same-0", "same-2"]);
    runtime_sync(&net, &c[0]);
    runtime_sync(&net, &c[2]);
    net.lesson_ok(&merger, &["sync", "--merge-branches", "lesson/r0"]);
    net.git_ok(&net.remote(), &["update-ref", "refs/heads/snap", "main"]);
    let merged = net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    assert!(
        merged
            .stdout
            .contains("`same-slug` was added on both sides"),
        "{merged}"
    );
    // r2 receives the main branch as it was before the merger took its branch in
    let received = net.lesson_ok(&c[2], &["sync", "--branch", "lesson/r2", "--from", "snap"]);
    assert!(
        received
            .stdout
            .contains("`same-slug` was added on both sides"),
        "{received}"
    );
    let main = net.git_ok(&net.remote(), &["show", "main:same-slug.md"]);
    let r2 = net.git_ok(&net.remote(), &["show", "lesson/r2:same-slug.md"]);
    assert_eq!(main, r2, "the two admissions differ");
    net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    for dir in &c {
        runtime_sync(&net, dir);
    }
    let files = tree(&merger);
    for dir in &c {
        assert_eq!(tree(dir), files, "{}", dir.display());
        assert_clean(&net, dir);
    }
    assert_no_duplicates(&files);
    let text = String::from_utf8_lossy(&files["same-slug.md"]).into_owned();
    assert!(
        text.contains("Two runtimes learn the same thing at once."),
        "{text}"
    );
    assert!(text.contains("ref: same-2"), "{text}");
}

/// A criss-cross where no count line tells the sides apart: the merger merges r0's and then
/// r1's record on one lesson into the main branch while r1, with nothing new, receives the
/// main branch holding only r0's. Both sides hold the same evidence items in different orders
/// and the same counts; a line merge from either base keeps r1's item twice, the bank's rule
/// once.
#[test]
fn a_criss_cross_of_the_same_records_in_two_orders_keeps_each_item_once() {
    let (net, c) = three();
    let merger = net.clone("merger");
    net.record(&c[0], "shared-lesson", "x-run");
    runtime_sync(&net, &c[0]);
    net.record(&c[1], "shared-lesson", "y-run");
    runtime_sync(&net, &c[1]);
    net.lesson_ok(&merger, &["sync", "--merge-branches", "lesson/r0"]);
    net.git_ok(&net.remote(), &["update-ref", "refs/heads/snap", "main"]);
    net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    net.lesson_ok(&c[1], &["sync", "--branch", "lesson/r1", "--from", "snap"]);
    let bases = net.git_ok(&net.remote(), &["merge-base", "--all", "main", "lesson/r1"]);
    assert_eq!(bases.lines().count(), 2, "not a criss-cross: {bases}");
    net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    let files = tree(&merger);
    assert_no_duplicates(&files);
    assert_eq!(success_count(&files, "shared-lesson"), 2);
    assert_clean(&net, &merger);
}

/// One merge base, and one ledger line both sides hold at different places (as a line that
/// reached one side through another branch does): the bank's union rule keeps it once, where
/// libgit2's `merge=union` keeps it twice. Only the ledgers' folder is diffed for this outside
/// a criss-cross.
#[test]
fn a_ledger_line_both_sides_hold_at_different_places_is_kept_once() {
    let (net, c) = three();
    let ledger = "_log/shared-lesson.jsonl";
    // theirs appends z, x; ours x, y: no common first or last line to take out of the hunk
    net.record(&c[0], "shared-lesson", "z-run");
    net.record(&c[0], "shared-lesson", "x-run");
    net.lesson_ok(&c[0], &["sync"]);
    let theirs = std::fs::read_to_string(c[0].join(ledger)).unwrap();
    let x = theirs.lines().last().unwrap().to_string();
    assert!(x.contains("x-run"), "{theirs}");
    let path = c[1].join(ledger);
    let ours = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{ours}{x}\n")).unwrap();
    net.record(&c[1], "shared-lesson", "y-run");
    net.lesson_ok(&c[1], &["sync"]);
    let bases = net.git_ok(&c[1], &["merge-base", "--all", "HEAD^1", "HEAD^2"]);
    assert_eq!(bases.lines().count(), 1, "a criss-cross: {bases}");
    let files = tree(&c[1]);
    assert_no_duplicates(&files);
    assert_eq!(success_count(&files, "shared-lesson"), 3);
    assert_clean(&net, &c[1]);
}

/// Two runtime branches rewrite one lesson's body: the merger stops, names the branch and the
/// file, and changes nothing (HEAD, index, working tree, the remote's main branch).
#[test]
fn merge_branches_stops_on_a_real_conflict_with_nothing_changed() {
    let (net, c) = three();
    let merger = net.clone("merger");
    for dir in &c[1..] {
        runtime_sync(&net, dir);
    }
    let rewrite = |dir: &Path, what: &str| {
        let path = dir.join("shared-lesson.md");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("Do the thing about shared-lesson.", what),
        )
        .unwrap();
    };
    rewrite(&c[1], "Do it the way runtime one says.");
    rewrite(&c[2], "Do it the way runtime two says.");
    runtime_sync(&net, &c[1]);
    runtime_sync(&net, &c[2]);
    net.record(&merger, "shared-lesson", "merger-run");
    let before = state(&net, &merger);
    let main = net.git_ok(&net.remote(), &["rev-parse", "main"]);
    let run = net.lesson(&merger, &["sync", "--merge-branches"]);
    assert_eq!(run.code, 1, "{run}");
    assert!(
        run.stderr
            .contains("the merge with origin lesson/r2 conflicts; nothing was changed"),
        "{run}"
    );
    assert!(run.stderr.contains("shared-lesson.md"), "{run}");
    assert!(run.stderr.contains("git pull origin lesson/r2"), "{run}");
    assert_eq!(
        state(&net, &merger),
        before,
        "the failed merge changed something"
    );
    assert_eq!(net.git_ok(&net.remote(), &["rev-parse", "main"]), main);
    let json = net.lesson(&merger, &["sync", "--merge-branches", "--format", "json"]);
    assert_eq!(json.code, 1, "{json}");
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["conflicts"][0]["branch"], "lesson/r2", "{json}");
    assert_eq!(report["conflicts"][0]["path"], "shared-lesson.md", "{json}");
    assert_eq!(
        report["merged_branches"][0]["branch"], "lesson/r1",
        "{json}"
    );
    assert_eq!(state(&net, &merger), before);
}

/// Hashes (40 or 12 hex digits) as `[hash]`.
fn redact_hashes(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let hex = word
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
        if hex && (word.len() == 40 || word.len() == 12) {
            out.push_str("[hash]");
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Two runtimes that recorded on the shared lesson and synced to their own branches, and a
/// merger, a clone of the main branch.
fn two_branches() -> (Net, PathBuf) {
    let (net, c) = three();
    let merger = net.clone("merger");
    for dir in &c[1..] {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        net.record(dir, "shared-lesson", &format!("{name}-run"));
        runtime_sync(&net, dir);
    }
    // a branch the pattern does not name stays out
    net.git_ok(
        &net.remote(),
        &["update-ref", "refs/heads/other", "lesson/r1"],
    );
    (net, merger)
}

/// The reports of a merge of two runtime branches, text and JSON, and of the next merge (both
/// merged already); a dry run, which says the same and changes nothing.
#[test]
fn merge_branches_reports_each_branch() {
    let (net, merger) = two_branches();
    // what a fetch brings is not the dry run's doing
    net.git_ok(&merger, &["fetch", "-q", "origin"]);
    let before = state(&net, &merger);
    let objects = tree(&merger.join(".git/objects")).len();
    let main = net.git_ok(&net.remote(), &["rev-parse", "main"]);
    let dry = net.lesson_ok(&merger, &["sync", "--merge-branches", "--dry-run"]);
    assert_eq!(state(&net, &merger), before);
    assert_eq!(
        tree(&merger.join(".git/objects")).len(),
        objects,
        "objects were written"
    );
    assert_eq!(net.git_ok(&net.remote(), &["rev-parse", "main"]), main);
    let text = net.lesson_ok(&merger, &["sync", "--merge-branches"]);
    let again = net.lesson_ok(&merger, &["sync", "--merge-branches", "lesson/*"]);
    assert_clean(&net, &merger);
    assert_eq!(success_count(&tree(&merger), "shared-lesson"), 2);
    // the same merge, reported as JSON
    let (net2, merger2) = two_branches();
    let json = net2.lesson_ok(&merger2, &["sync", "--merge-branches", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["merged_branches"].as_array().unwrap().len(), 2);
    assert_eq!(
        net2.git_ok(&net2.remote(), &["rev-parse", "main"]).trim(),
        report["commits"][0].as_str().unwrap()
    );
    insta::assert_snapshot!(redact_hashes(&format!(
        "--- dry run\n{dry}--- merge\n{text}--- again\n{again}--- json\n{json}"
    )));
    // a branch to receive that the remote lacks, a pattern that is no glob: exit 2
    let run = net.lesson(&merger, &["sync", "--branch", "lesson/m", "--from", "mian"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("origin has no branch `mian`"), "{run}");
    let run = net.lesson(&merger, &["sync", "--merge-branches", "lesson/[a"]);
    assert_eq!(run.code, 2, "{run}");
    assert!(run.stderr.contains("--merge-branches `lesson/[a`"), "{run}");
    let run = net.lesson(&merger, &["sync", "--merge-branches", "--from", "main"]);
    assert_eq!(run.code, 2, "{run}");
}
