//! `cargo xtask bench git`: lesson's git work on a bank with a long history, each row a ratio
//! against a floor measured in the same run.
//!
//! The repository (`target/bench/git/<n>/repo`, the bank in its `lessons/` folder) is built once
//! per size and generator version with `git fast-import`: a first commit with half the lessons
//! and their ledgers, then commits that add the other half in batches, record outcomes (a lesson
//! and its ledger changed), rename lessons (slug changed with the file) and move lessons to
//! `_archive/`, at least 1,000 commits in all; last, the commit of what `lesson init` adds to
//! an existing bank (`_index.md`, the `.gitattributes` lines of the merge driver), as a user
//! upgrading a bank commits it.
//!
//! Rows:
//! - **provenance**: `lesson list --format json` with `.lesson/provenance` removed (cold) minus
//!   the same with the cache current (warm) is the cost of reading history for the whole bank;
//!   against `git log --name-status -M` over the bank's folder (every commit, its changed files).
//! - **lint --base**: the pull-request checks, `lesson lint --base HEAD~100 --select G`, against
//!   `git diff --name-status HEAD~100`, the diff they read; then the whole `lesson lint --base
//!   HEAD~100` (the bank's lint besides) against `lesson lint` alone, which is what `--base`
//!   adds (skipped while the binary has no `--base`).
//! - **sync**: one `lesson sync` round trip of two recorded outcomes (three clones of a bare
//!   remote on disk, two of them synced first) against `git add -A && git commit && git pull
//!   --no-rebase && git push` of the same records in three other clones (skipped while the binary
//!   has no `sync`).
//! - **contention**: 16 clones, each 20 rounds of `lesson record` + `lesson sync --format json`
//!   at the same time against one bare remote: syncs per second, retries per sync (median, max),
//!   and whether every one of the 320 outcomes is in the final ledgers exactly once and counted
//!   once in the lessons' counts.
//! - **fleet**: the same 16 × 20 rounds with each clone on a branch of its own (`lesson sync
//!   --branch lesson/cI --from main`) and a 17th clone running `lesson sync --merge-branches` in
//!   a loop meanwhile and once at the end; the same figures, the merger's runs, and the
//!   outcomes counted in the merger's bank. `--contention one-branch,fleet|none` picks the rows.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::measure::{self, Output, Sample};
use super::prng::SplitMix64;
use super::table::{self, Align, Table};
use super::{synthetic_bank, tools, Options, Paths};

/// Bump when the generated history changes.
const GENERATOR: u32 = 2;
/// Commits at least, whatever the size.
const MIN_COMMITS: usize = 1_000;
/// The bank's folder in the repository.
const BANK: &str = "lessons";
const NOW: &str = "2026-11-22T12:00:00Z";
const CLONES: usize = 16;
const ROUNDS: usize = 20;
/// Lessons the contention rounds record on (shared by all clones).
const HOT: usize = 8;

/// A `git` command with no machine or user config, a fixed identity.
fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.org")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.org")
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ]);
    cmd
}

fn git_ok(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = git(dir).args(args).output().context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn lesson_cmd(lesson: &Path, bank: &Path) -> Command {
    let mut cmd = Command::new(lesson);
    cmd.arg("--dir")
        .arg(bank)
        .env("LESSON_NOW", NOW)
        .env("LESSON_BY", "bench")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.org")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.org");
    cmd
}

/// One lesson of the generated history.
struct Gen {
    slug: String,
    text: String,
    ledger: String,
    archived: bool,
}

fn ledger_line(at: i64, event: &str, rest: &str) -> String {
    let at = jiff::Timestamp::from_second(at).expect("time in range");
    format!("{{\"at\":\"{at}\",\"event\":\"{event}\",\"by\":\"gen\"{rest}}}\n")
}

/// `M` a file inline in a fast-import stream.
fn put(out: &mut Vec<u8>, path: &str, bytes: &[u8]) {
    out.extend_from_slice(format!("M 100644 inline {path}\ndata {}\n", bytes.len()).as_bytes());
    out.extend_from_slice(bytes);
    out.push(b'\n');
}

/// The fast-import stream of the whole history; returns it and the number of commits.
fn history(n: usize) -> (Vec<u8>, usize) {
    let commits = MIN_COMMITS.max(n / 100);
    let mut rng = SplitMix64::new(0x6769_7468_6973);
    let mut source = synthetic_bank::lessons_iter();
    let mut lessons: Vec<Gen> = Vec::with_capacity(n);
    let mut out = Vec::with_capacity(n * 1500);
    let t0 = 1_704_067_200i64; // 2024-01-01
    let first = n / 2;
    let adds = commits * 4 / 10;
    let mut added = 0usize;
    for c in 0..commits {
        let at = t0 + c as i64 * 3_600;
        let mut body = Vec::new();
        let kind = if c == 0 { usize::MAX } else { c % 10 };
        let message;
        match kind {
            usize::MAX => {
                put(&mut body, &format!("{BANK}/lesson.toml"), b"");
                put(
                    &mut body,
                    &format!("{BANK}/.gitattributes"),
                    b"_log/*.jsonl merge=union\n",
                );
                put(&mut body, &format!("{BANK}/.gitignore"), b".lesson/\n");
                for _ in 0..first {
                    let (slug, text) = source.next().expect("endless");
                    let ledger = ledger_line(at, "created", &counts(&text));
                    put(&mut body, &format!("{BANK}/{slug}.md"), text.as_bytes());
                    put(
                        &mut body,
                        &format!("{BANK}/_log/{slug}.jsonl"),
                        ledger.as_bytes(),
                    );
                    lessons.push(Gen {
                        slug,
                        text,
                        ledger,
                        archived: false,
                    });
                }
                added = first;
                message = format!("add {first} lessons");
            }
            0..=3 => {
                let left = n - added;
                let add_commits_left = adds.saturating_sub(lessons_adds_done(c)).max(1);
                let k = left.div_ceil(add_commits_left).min(left);
                for _ in 0..k {
                    let (slug, text) = source.next().expect("endless");
                    let ledger = ledger_line(at, "created", &counts(&text));
                    put(&mut body, &format!("{BANK}/{slug}.md"), text.as_bytes());
                    put(
                        &mut body,
                        &format!("{BANK}/_log/{slug}.jsonl"),
                        ledger.as_bytes(),
                    );
                    lessons.push(Gen {
                        slug,
                        text,
                        ledger,
                        archived: false,
                    });
                }
                added += k;
                message = format!("add {k} lessons");
            }
            4..=7 => {
                let mut slugs = Vec::new();
                for r in 0..5 {
                    let i = rng.below(lessons.len());
                    let l = &mut lessons[i];
                    if l.archived {
                        continue;
                    }
                    l.text
                        .push_str(&format!("\n- recorded in run gen-{c}-{r}\n"));
                    l.ledger.push_str(&ledger_line(
                        at,
                        "evidence",
                        &format!(",\"evidence\":{{\"kind\":\"run\",\"ref\":\"gen-{c}-{r}\"}}"),
                    ));
                    put(
                        &mut body,
                        &format!("{BANK}/{}.md", l.slug),
                        l.text.as_bytes(),
                    );
                    put(
                        &mut body,
                        &format!("{BANK}/_log/{}.jsonl", l.slug),
                        l.ledger.as_bytes(),
                    );
                    slugs.push(l.slug.clone());
                }
                message = format!("record {}: {}", slugs.len(), slugs.join(", "));
            }
            8 => {
                let mut names = Vec::new();
                for _ in 0..2 {
                    let i = rng.below(lessons.len());
                    let l = &mut lessons[i];
                    if l.archived {
                        continue;
                    }
                    let old = l.slug.clone();
                    let new = format!("{old}-r{c}");
                    l.text = l
                        .text
                        .replacen(&format!("slug: {old}"), &format!("slug: {new}"), 1);
                    body.extend_from_slice(format!("D {BANK}/{old}.md\n").as_bytes());
                    body.extend_from_slice(format!("D {BANK}/_log/{old}.jsonl\n").as_bytes());
                    put(&mut body, &format!("{BANK}/{new}.md"), l.text.as_bytes());
                    put(
                        &mut body,
                        &format!("{BANK}/_log/{new}.jsonl"),
                        l.ledger.as_bytes(),
                    );
                    l.slug = new.clone();
                    names.push(format!("{old} -> {new}"));
                }
                message = format!("rename {}", names.join(", "));
            }
            _ => {
                let mut slugs = Vec::new();
                for _ in 0..2 {
                    let i = rng.below(lessons.len());
                    let l = &mut lessons[i];
                    if l.archived {
                        continue;
                    }
                    l.archived = true;
                    l.ledger.push_str(&ledger_line(
                        at,
                        "archived",
                        &format!(",\"to\":\"_archive/{}.md\"", l.slug),
                    ));
                    body.extend_from_slice(format!("D {BANK}/{}.md\n", l.slug).as_bytes());
                    put(
                        &mut body,
                        &format!("{BANK}/_archive/{}.md", l.slug),
                        l.text.as_bytes(),
                    );
                    put(
                        &mut body,
                        &format!("{BANK}/_log/{}.jsonl", l.slug),
                        l.ledger.as_bytes(),
                    );
                    slugs.push(l.slug.clone());
                }
                message = format!("archive {}", slugs.join(", "));
            }
        }
        out.extend_from_slice(
            format!(
                "commit refs/heads/main\nmark :{}\nauthor gen <gen@example.org> {at} +0000\ncommitter gen <gen@example.org> {at} +0000\ndata {}\n{message}\n",
                c + 1,
                message.len()
            )
            .as_bytes(),
        );
        if c > 0 {
            out.extend_from_slice(format!("from :{c}\n").as_bytes());
        }
        out.extend_from_slice(&body);
        out.push(b'\n');
    }
    (out, commits)
}

/// Add commits before commit `c` (those with `c % 10` in 0..=3, the first commit aside).
fn lessons_adds_done(c: usize) -> usize {
    (1..c).filter(|i| i % 10 <= 3).count()
}

/// `,"success_count":S,"failure_count":F` from a lesson's text.
fn counts(text: &str) -> String {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("0".to_string(), |v| v.trim().to_string())
    };
    format!(
        ",\"success_count\":{},\"failure_count\":{}",
        field("success_count:"),
        field("failure_count:")
    )
}

/// The repository of `n` lessons with its history, built unless its stamp matches.
fn ensure_repo(lesson: &Path, dir: &Path, n: usize) -> anyhow::Result<(PathBuf, usize)> {
    let repo = dir.join("repo");
    let stamp = dir.join("stamp");
    let expected = format!("generator {GENERATOR} lessons {n}\n");
    if let Ok(text) = std::fs::read_to_string(&stamp) {
        if let Some(commits) = text
            .strip_prefix(&expected)
            .and_then(|r| r.trim().strip_prefix("commits "))
            .and_then(|c| c.parse().ok())
        {
            if repo.is_dir() {
                return Ok((repo, commits));
            }
        }
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(&repo)?;
    eprintln!("generating a {n}-lesson history in {}", repo.display());
    let started = Instant::now();
    git_ok(&repo, &["init", "-q"])?;
    let (stream, commits) = history(n);
    let mut child = git(&repo)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .context("cannot run git fast-import")?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(&stream)
        .context("fast-import's stdin")?;
    if !child.wait()?.success() {
        bail!("git fast-import failed");
    }
    git_ok(&repo, &["checkout", "-q", "-f", "main"])?;
    // the upgrade a user of an existing bank makes once: `lesson init` adds `_index.md` and the
    // merge driver's attributes, committed
    let o = lesson_cmd(lesson, &repo.join(BANK)).arg("init").output()?;
    if !o.status.success() {
        bail!("lesson init: {}", String::from_utf8_lossy(&o.stderr));
    }
    git_ok(&repo, &["add", "-A", BANK])?;
    git_ok(
        &repo,
        &[
            "commit",
            "-qm",
            "lesson init: _index.md, merge driver attributes",
        ],
    )?;
    let commits = commits + 1;
    eprintln!("generated {commits} commits in {:.1?}", started.elapsed());
    std::fs::write(&stamp, format!("{expected}commits {commits}\n"))?;
    Ok((repo, commits))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn timed(cmd: &mut Command, out: &Output, ok: &[i32]) -> anyhow::Result<Sample> {
    measure::run_allowing(cmd, out, ok)
}

/// Run the git bench.
pub fn run(paths: &Paths, options: &Options) -> anyhow::Result<()> {
    let lesson = tools::build_lesson(paths)?;
    let base = lesson_has_flag(&lesson, "lint", "--base");
    let sync = tools::has_subcommand(&lesson, "sync");
    for &n in &options.sizes {
        let dir = paths.bench().join("git").join(n.to_string());
        let (repo, commits) = ensure_repo(&lesson, &dir, n)?;
        let bank = repo.join(BANK);
        let work = dir.join("work");
        if work.exists() {
            std::fs::remove_dir_all(&work)?;
        }
        std::fs::create_dir_all(&work)?;
        let out = Output {
            stdout: work.join("stdout"),
            stderr: work.join("stderr"),
        };
        println!("\n## git: {n} lessons, {commits} commits\n");
        let mut t = Table::new(vec![
            ("row", Align::Left),
            ("lesson", Align::Right),
            ("floor", Align::Right),
            ("ratio", Align::Right),
            ("floor is", Align::Left),
        ]);

        // provenance: cold minus warm `lesson list --format json`, against `git log`
        let cache = bank.join(".lesson").join("provenance");
        let (mut cold, mut warm, mut floor) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..options.runs {
            let _ = std::fs::remove_file(&cache);
            cold.push(
                timed(
                    lesson_cmd(&lesson, &bank).args(["list", "--format", "json"]),
                    &out,
                    &[0],
                )?
                .wall,
            );
            if !cache.is_file() {
                bail!("`lesson list` left no {}", cache.display());
            }
            warm.push(
                timed(
                    lesson_cmd(&lesson, &bank).args(["list", "--format", "json"]),
                    &out,
                    &[0],
                )?
                .wall,
            );
            floor.push(
                timed(
                    git(&repo).args([
                        "log",
                        "--name-status",
                        "-M",
                        "--format=%H %an %at",
                        "HEAD",
                        "--",
                        BANK,
                    ]),
                    &out,
                    &[0],
                )?
                .wall,
            );
        }
        let (cold, warm, floor) = (median(cold), median(warm), median(floor));
        let provenance = cold.saturating_sub(warm);
        t.row(vec![
            "provenance (list cold − warm)".into(),
            table::secs(provenance),
            table::secs(floor),
            table::ratio(provenance.as_secs_f64() / floor.as_secs_f64()),
            "git log --name-status -M -- lessons".into(),
        ]);
        t.row(vec![
            "  list --format json, cold".into(),
            table::secs(cold),
            table::secs(floor),
            table::ratio(cold.as_secs_f64() / floor.as_secs_f64()),
            "(the whole command)".into(),
        ]);
        t.row(vec![
            "  list --format json, warm".into(),
            table::secs(warm),
            String::new(),
            String::new(),
            "(cache current)".into(),
        ]);

        // lint --base: the pull-request checks (the G rules) against the diff they read, then
        // the whole command (the bank's lint as well) against `lesson lint` alone
        if base {
            let rev = "HEAD~100";
            let (mut g, mut f, mut all, mut plain) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let lint = |extra: &[&str]| {
                let mut cmd = lesson_cmd(&lesson, &bank);
                cmd.args(["lint", "--output-format", "concise"]).args(extra);
                cmd
            };
            for _ in 0..options.runs {
                g.push(timed(&mut lint(&["--base", rev, "--select", "G"]), &out, &[0, 1])?.wall);
                f.push(
                    timed(
                        git(&repo).args(["diff", "--name-status", rev, "--", BANK]),
                        &out,
                        &[0],
                    )?
                    .wall,
                );
                all.push(timed(&mut lint(&["--base", rev]), &out, &[0, 1])?.wall);
                plain.push(timed(&mut lint(&[]), &out, &[0, 1])?.wall);
            }
            let (g, f, all, plain) = (median(g), median(f), median(all), median(plain));
            t.row(vec![
                format!("lint --base {rev} --select G"),
                table::secs(g),
                table::secs(f),
                table::ratio(g.as_secs_f64() / f.as_secs_f64()),
                format!("git diff --name-status {rev}"),
            ]);
            t.row(vec![
                format!("  lint --base {rev}"),
                table::secs(all),
                table::secs(plain),
                table::ratio(all.as_secs_f64() / plain.as_secs_f64()),
                "lesson lint (the same bank, no --base)".into(),
            ]);
        } else {
            t.row(vec![
                "lint --base".into(),
                "skipped: lesson lint --base not available".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }

        if sync {
            match sync_round_trip(&lesson, &repo, &work, &out) {
                Ok((l, f)) => t.row(vec![
                    "sync round trip".into(),
                    table::secs(l),
                    table::secs(f),
                    table::ratio(l.as_secs_f64() / f.as_secs_f64()),
                    "git commit && git pull --no-rebase && git push".into(),
                ]),
                Err(e) => t.row(vec![
                    "sync round trip".into(),
                    format!("failed: {e:#}"),
                    String::new(),
                    String::new(),
                    String::new(),
                ]),
            }
        } else {
            t.row(vec![
                "sync round trip".into(),
                "skipped: lesson sync not available".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        print!("{}", t.render());
        // each row's clones go once measured: at 100,000 lessons a clone's working tree alone
        // is near 1 GB, and the contention row needs 16 more
        for done in ["sync-lesson", "sync-git"] {
            let _ = std::fs::remove_dir_all(work.join(done));
        }

        let rows = [(options.one_branch, false), (options.fleet, true)];
        for fleet in rows.iter().filter(|(on, _)| *on).map(|&(_, fleet)| fleet) {
            let name = if fleet { "fleet" } else { "contention" };
            if !sync || (fleet && !lesson_has_flag(&lesson, "sync", "--merge-branches")) {
                println!(
                    "\n{name}: skipped: lesson sync{} not available",
                    if fleet { " --merge-branches" } else { "" }
                );
                continue;
            }
            let contended = contention(&lesson, &repo, &work, fleet);
            // kept when an outcome went missing or counted twice, to see why
            if contended
                .as_ref()
                .is_ok_and(|c| c.once == CLONES * ROUNDS && c.counts_ok)
            {
                let _ = std::fs::remove_dir_all(work.join(name));
            }
            match contended {
                Ok(c) => {
                    let how = if fleet {
                        "on a branch each (sync --branch lesson/cI --from main)"
                    } else {
                        "on one branch"
                    };
                    println!(
                        "\n{name}: {CLONES} clones {how} × {ROUNDS} rounds of record + sync: {} syncs in {:.1} s = {:.2} syncs/s; retries per sync: median {}, max {}; failed commands {}; outcomes in the ledgers exactly once: {}/{} (missing {}, repeated {}); counted once in the lessons' counts: {}",
                        c.syncs, c.elapsed.as_secs_f64(), c.syncs as f64 / c.elapsed.as_secs_f64(), c.retries_median, c.retries_max, c.failed, c.once, CLONES * ROUNDS, c.missing, c.repeated, c.counts_ok
                    );
                    if fleet {
                        println!(
                            "  merger: {} runs of sync --merge-branches while the runtimes ran, median {:.1} s each",
                            c.merges,
                            c.merge_median.as_secs_f64()
                        );
                    }
                    for (class, n) in &c.failures {
                        println!("  failed {n}×: {class}");
                    }
                }
                Err(e) => println!("\n{name}: failed: {e:#}"),
            }
        }
    }
    Ok(())
}

/// Whether `lesson SUB --help` mentions `flag`.
fn lesson_has_flag(lesson: &Path, sub: &str, flag: &str) -> bool {
    Command::new(lesson)
        .args([sub, "--help"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(flag))
}

/// A bare remote of `repo` in `dir`, and `k` clones of it.
fn remote_and_clones(repo: &Path, dir: &Path, k: usize) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    std::fs::create_dir_all(dir)?;
    let remote = dir.join("remote.git");
    git_ok(
        dir,
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            remote.to_str().unwrap(),
        ],
    )?;
    let mut clones = Vec::new();
    for i in 0..k {
        let c = dir.join(format!("clone{i}"));
        git_ok(
            dir,
            &["clone", "-q", remote.to_str().unwrap(), c.to_str().unwrap()],
        )?;
        clones.push(c);
    }
    Ok((remote, clones))
}

/// Active lesson slugs of a clone's bank, in path order.
fn slugs(bank: &Path) -> anyhow::Result<Vec<String>> {
    let mut out: Vec<String> = std::fs::read_dir(bank)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".md"))
                .map(String::from)
        })
        .filter(|s| !s.starts_with('_'))
        .collect();
    out.sort();
    Ok(out)
}

fn record(lesson: &Path, bank: &Path, slug: &str, run: &str) -> anyhow::Result<()> {
    let o = lesson_cmd(lesson, bank)
        .args([
            "record",
            slug,
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            &format!("run:{run}"),
        ])
        .output()?;
    if !o.status.success() {
        bail!(
            "lesson record {slug}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(())
}

/// `git` in a clone where the bank's merge driver runs: `lesson` first on PATH.
fn git_with_driver(dir: &Path, lesson: &Path) -> Command {
    let mut cmd = git(dir);
    let bin = lesson.parent().unwrap_or(Path::new("."));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap_or(path));
    cmd
}

fn git_driver_ok(dir: &Path, lesson: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = git_with_driver(dir, lesson)
        .args(args)
        .output()
        .context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}{}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// One `lesson sync` after two other clones synced a record each, against plain git doing the
/// same in three other clones, each set up as the README tells a plain-git user (`lesson git
/// install` registers the merge driver the bank's `.gitattributes` names).
fn sync_round_trip(
    lesson: &Path,
    repo: &Path,
    work: &Path,
    out: &Output,
) -> anyhow::Result<(Duration, Duration)> {
    let (_, a) = remote_and_clones(repo, &work.join("sync-lesson"), 3)?;
    let (_, b) = remote_and_clones(repo, &work.join("sync-git"), 3)?;
    for clone in &b {
        let o = lesson_cmd(lesson, &clone.join(BANK))
            .args(["git", "install"])
            .output()?;
        if !o.status.success() {
            bail!("lesson git install: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
    let all = slugs(&a[0].join(BANK))?;
    // far apart in slug order, as records on a big bank are
    let picks = [
        &all[all.len() / 5],
        &all[all.len() * 2 / 5],
        &all[all.len() * 3 / 5],
    ];
    for (i, clone) in a.iter().enumerate().take(2) {
        record(lesson, &clone.join(BANK), picks[i], &format!("rt-{i}"))?;
        let o = lesson_cmd(lesson, &clone.join(BANK)).arg("sync").output()?;
        if !o.status.success() {
            bail!("lesson sync: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
    for (i, clone) in b.iter().enumerate().take(2) {
        record(lesson, &clone.join(BANK), picks[i], &format!("rt-{i}"))?;
        git_driver_ok(clone, lesson, &["add", "-A"])?;
        git_driver_ok(clone, lesson, &["commit", "-qm", "record"])?;
        git_driver_ok(clone, lesson, &["pull", "-q", "--no-rebase"])?;
        git_driver_ok(clone, lesson, &["push", "-q"])?;
    }
    record(lesson, &a[2].join(BANK), picks[2], "rt-2")?;
    record(lesson, &b[2].join(BANK), picks[2], "rt-2")?;
    let l = timed(lesson_cmd(lesson, &a[2].join(BANK)).arg("sync"), out, &[0])?.wall;
    let f = timed(
        git_with_driver(&b[2], lesson)
            .args(["-c", "core.hooksPath=/dev/null"])
            .args([
                "-c",
                "alias.round=!git add -A && git commit -qm record && git pull -q --no-rebase && git push -q",
                "round",
            ]),
        out,
        &[0],
    )?
    .wall;
    Ok((l, f))
}

struct Contention {
    /// Outcomes in no ledger of the final bank, and in more than one line.
    missing: usize,
    repeated: usize,
    /// The merger's completed runs (a fleet only), and their median wall time.
    merges: usize,
    merge_median: Duration,
    syncs: usize,
    failed: usize,
    /// Failed commands by class (what their stderr says), with a count.
    failures: BTreeMap<String, usize>,
    elapsed: Duration,
    retries_median: u64,
    retries_max: u64,
    once: usize,
    counts_ok: bool,
}

/// 16 clones × 20 rounds of record + sync at the same time. With `fleet`, each clone syncs
/// with a branch of its own (`lesson sync --branch lesson/cI --from main`) and a 17th clone
/// runs `lesson sync --merge-branches` in a loop until they are done, then once more.
fn contention(lesson: &Path, repo: &Path, work: &Path, fleet: bool) -> anyhow::Result<Contention> {
    let dir = work.join(if fleet { "fleet" } else { "contention" });
    let (_, clones) = remote_and_clones(repo, &dir, CLONES + usize::from(fleet))?;
    let all = slugs(&clones[0].join(BANK))?;
    let hot: Vec<String> = (0..HOT).map(|i| all[i * all.len() / HOT].clone()).collect();
    let before: BTreeMap<String, u64> = hot
        .iter()
        .map(|s| (s.clone(), success_count(&clones[0].join(BANK), s)))
        .collect();
    let sync_args = move |i: usize| -> Vec<String> {
        let mut args = vec!["sync".to_string()];
        if fleet {
            args.extend([
                "--branch".into(),
                format!("lesson/c{i}"),
                "--from".into(),
                "main".into(),
            ]);
        }
        args.extend(["--format".into(), "json".into()]);
        args
    };
    let started = Instant::now();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let merger = fleet.then(|| {
        let (lesson, bank, done) = (
            lesson.to_path_buf(),
            clones[CLONES].join(BANK),
            done.clone(),
        );
        std::thread::spawn(move || -> (Vec<Duration>, Vec<String>) {
            let (mut runs, mut failed) = (Vec::new(), Vec::new());
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                match lesson_cmd(&lesson, &bank)
                    .args(["sync", "--merge-branches"])
                    .output()
                {
                    Ok(o) if o.status.success() => runs.push(t.elapsed()),
                    Ok(o) => failed.push(format!(
                        "lesson sync --merge-branches: exit {}: {}",
                        o.status.code().unwrap_or(-1),
                        String::from_utf8_lossy(&o.stderr)
                    )),
                    Err(e) => failed.push(format!("lesson sync --merge-branches: {e}")),
                }
            }
            (runs, failed)
        })
    });
    let handles: Vec<_> = clones
        .iter()
        .take(CLONES)
        .enumerate()
        .map(|(i, clone)| {
            let (lesson, bank, hot) = (lesson.to_path_buf(), clone.join(BANK), hot.clone());
            let args = sync_args(i);
            std::thread::spawn(move || -> (Vec<u64>, Vec<String>) {
                let mut retries = Vec::new();
                let mut failed = Vec::new();
                for r in 0..ROUNDS {
                    let slug = &hot[(i + r) % HOT];
                    if let Err(e) = record(&lesson, &bank, slug, &format!("c{i}-r{r}")) {
                        failed.push(format!("{e:#}"));
                        continue;
                    }
                    match lesson_cmd(&lesson, &bank).args(&args).output() {
                        Ok(o) if o.status.success() => {
                            let v: serde_json::Value =
                                serde_json::from_slice(&o.stdout).unwrap_or_default();
                            retries.push(v["retries"].as_u64().unwrap_or(0));
                        }
                        Ok(o) => failed.push(format!(
                            "lesson sync: exit {}: {}",
                            o.status.code().unwrap_or(-1),
                            String::from_utf8_lossy(&o.stderr)
                        )),
                        Err(e) => failed.push(format!("lesson sync: {e}")),
                    }
                }
                (retries, failed)
            })
        })
        .collect();
    let mut retries = Vec::new();
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for h in handles {
        let (r, f) = h
            .join()
            .map_err(|_| anyhow::anyhow!("a clone's thread panicked"))?;
        retries.extend(r);
        for message in f {
            *failures.entry(failure_class(&message)).or_default() += 1;
        }
    }
    let elapsed = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut merges = Vec::new();
    if let Some(m) = merger {
        let (runs, f) = m
            .join()
            .map_err(|_| anyhow::anyhow!("the merger's thread panicked"))?;
        merges = runs;
        for message in f {
            *failures.entry(failure_class(&message)).or_default() += 1;
        }
    }
    let failed = failures.values().sum();
    // everyone syncs once more (failed rounds left local commits), then one more pass to
    // receive; in a fleet the merger folds the branches in between
    let mut settle = |bank: PathBuf, args: Vec<String>| {
        if let Ok(o) = lesson_cmd(lesson, &bank).args(&args).output() {
            if !o.status.success() {
                let message = format!(
                    "settling: lesson {}: exit {}: {}",
                    args.join(" "),
                    o.status.code().unwrap_or(-1),
                    String::from_utf8_lossy(&o.stderr)
                );
                *failures.entry(failure_class(&message)).or_default() += 1;
            }
        }
    };
    for pass in 0..2 {
        for (i, clone) in clones.iter().take(CLONES).enumerate() {
            settle(clone.join(BANK), sync_args(i));
        }
        if fleet && pass == 0 {
            settle(
                clones[CLONES].join(BANK),
                vec!["sync".into(), "--merge-branches".into()],
            );
        }
    }
    let bank = clones[if fleet { CLONES } else { 0 }].join(BANK);
    let mut once = 0;
    let mut ledgers = String::new();
    for s in &hot {
        ledgers.push_str(
            &std::fs::read_to_string(bank.join("_log").join(format!("{s}.jsonl")))
                .unwrap_or_default(),
        );
    }
    let (mut missing, mut repeated) = (0, 0);
    for i in 0..CLONES {
        for r in 0..ROUNDS {
            let needle = format!("\"ref\":\"c{i}-r{r}\"");
            match ledgers.matches(&needle).count() {
                0 => missing += 1,
                1 => once += 1,
                _ => repeated += 1,
            }
        }
    }
    let added: u64 = hot
        .iter()
        .map(|s| success_count(&bank, s).saturating_sub(before[s]))
        .sum();
    retries.sort();
    merges.sort();
    Ok(Contention {
        missing,
        repeated,
        merges: merges.len(),
        merge_median: merges.get(merges.len() / 2).copied().unwrap_or_default(),
        syncs: retries.len(),
        failed,
        failures,
        elapsed,
        retries_median: retries.get(retries.len() / 2).copied().unwrap_or(0),
        retries_max: retries.last().copied().unwrap_or(0),
        once,
        counts_ok: added == (CLONES * ROUNDS) as u64,
    })
}

/// A failed command's message with what varies from one failure to the next (hashes, numbers,
/// paths of one clone) taken out, its first line only: failures of one cause share a class.
fn failure_class(message: &str) -> String {
    let first = message
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)");
    let mut out = String::new();
    let mut last_digit = false;
    for c in first.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('N');
            }
            last_digit = true;
        } else {
            out.push(c);
            last_digit = false;
        }
    }
    out.chars().take(200).collect()
}

fn success_count(bank: &Path, slug: &str) -> u64 {
    std::fs::read_to_string(bank.join(format!("{slug}.md")))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("success_count:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}
