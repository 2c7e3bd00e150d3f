//! Hostile input: paths that try to leave the bank, symlinks out and in loops, huge and
//! malformed files, many files. Whatever the input, every command ends (exit 0, 1 or 2, never
//! a panic or a signal), reports what is wrong at `file:line:col`, and writes nothing outside
//! the bank.
//!
//! The fast variants run in `cargo test`; the long ones (a 100 MB file, a 1,000,000-line
//! frontmatter, 100,000 empty files) are `#[ignore]`d here and run by `cargo xtask stress`,
//! which prints each command's wall time and peak RSS.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::sandbox::{Sandbox, Tree, BIN, NOW};

/// The commands that read a bank: each must end cleanly on anything.
const READERS: &[&[&str]] = &[
    &["lint", "--output-format", "concise"],
    &["list"],
    &["search", "cache builds"],
    &["index"],
];

/// Every file under `dir` with its bytes (symlinks not followed), keyed by path.
fn snapshot(dir: &Path) -> Tree {
    let mut tree = Tree::new();
    for entry in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_type().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            tree.insert(entry.path().to_path_buf(), bytes);
        } else if entry.file_type().is_dir() || entry.file_type().is_symlink() {
            tree.insert(entry.path().to_path_buf(), Vec::new());
        }
    }
    tree
}

/// What one command did, with its wall time and (under `/usr/bin/time`) peak RSS.
struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Run `lesson ARGS` on `bank` (`--dir` is not given: `LESSON_DIR` names it) and check that it
/// ended without a panic or a signal. With `measure`, print wall time and peak RSS.
fn run(bank: &Path, args: &[&str], measure: Option<&str>) -> Outcome {
    let time = Path::new("/usr/bin/time");
    let mut cmd = match measure {
        Some(_) if time.exists() => {
            let mut c = std::process::Command::new(time);
            c.args(["-f", "peak-rss-kb=%M"]).arg(BIN);
            c
        }
        _ => std::process::Command::new(BIN),
    };
    let start = Instant::now();
    let out = cmd
        .args(args)
        .env("LESSON_DIR", bank.file_name().unwrap())
        .env("LESSON_NOW", NOW)
        .env("LESSON_BY", "tester")
        .env("NO_COLOR", "1")
        .current_dir(bank.parent().unwrap())
        .output()
        .unwrap();
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    if let Some(case) = measure {
        let rss = stderr
            .lines()
            .find_map(|l| l.strip_prefix("peak-rss-kb="))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .map_or("?".to_string(), |kb| {
                format!("{:.1} MB", kb as f64 / 1024.0)
            });
        eprintln!(
            "stress {case}: lesson {}: exit {code}, {:.2} s, peak RSS {rss}",
            args.join(" "),
            wall.as_secs_f64()
        );
    }
    let what = format!("lesson {}: exit {code}\n{stdout}\n{stderr}", args.join(" "));
    assert!(matches!(code, 0..=2), "{what}");
    assert!(!stderr.contains("panicked"), "{what}");
    Outcome {
        code,
        stdout,
        stderr,
    }
}

/// Run every reader on `bank`; the lint must report `file` at a `line:col` with `code`.
fn readers_report(bank: &Path, file: &str, code: &str, measure: Option<&str>) {
    for args in READERS {
        let out = run(bank, args, measure);
        if args[0] == "lint" {
            let found = out.stdout.lines().any(|l| {
                l.starts_with(file)
                    && position_after(&l[file.len()..]).is_some()
                    && l.contains(code)
            });
            assert!(
                found,
                "lint did not report {code} at {file}:LINE:COL:\n{}{}",
                out.stdout, out.stderr
            );
        }
    }
}

/// `:LINE:COL:` at the start of `rest`: the position.
fn position_after(rest: &str) -> Option<(usize, usize)> {
    let mut parts = rest.strip_prefix(':')?.splitn(3, ':');
    let line = parts.next()?.parse().ok()?;
    let col = parts.next()?.parse().ok()?;
    Some((line, col))
}

/// A sandbox with a small bank (`tmp/lessons`) and a directory beside it (`tmp/outside`) that
/// links may point to; `snapshot` of that directory must not change.
fn bank_with_outside() -> (Sandbox, PathBuf, PathBuf) {
    let s = Sandbox::with_indexed_bank("tests/fixtures/banks/ledger");
    let outside = s.path().join("outside");
    std::fs::create_dir_all(outside.join("log")).unwrap();
    std::fs::create_dir_all(outside.join("archive")).unwrap();
    std::fs::create_dir_all(outside.join("state")).unwrap();
    std::fs::write(outside.join("escape.md"), "not the bank's\n").unwrap();
    let bank = s.bank();
    (s, bank, outside)
}

/// A valid lesson with `extra` appended to its body.
fn lesson_text(slug: &str, extra: &str) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: Cache builds in CI.\ntrigger:\n  description: Cache builds in CI.\n  tags: [ci]\noutcome: success\nevidence:\n  - kind: run\n    ref: r_1\n---\n\n# Cache builds in CI.\n\n## When this applies\n\nCI.\n\n## What to do (or avoid)\n\nCache.\n\n## Counter-example\n\nNone.\n{extra}"
    )
}

#[test]
fn slugs_and_paths_that_leave_the_bank_are_refused() {
    let (s, bank, outside) = bank_with_outside();
    let before = snapshot(&outside);
    let bank_before = s.tree();
    let absolute = outside.join("abs").display().to_string();
    let candidate = outside.join("candidate.json");
    std::fs::write(
        &candidate,
        r#"{"slug": "../outside/added", "title": "Escape.", "trigger": {"description": "x"}, "outcome": "success", "evidence": [{"kind": "run", "ref": "r_9"}]}"#,
    )
    .unwrap();
    let before = {
        let mut b = before;
        b.insert(candidate.clone(), std::fs::read(&candidate).unwrap());
        b
    };
    let candidate = candidate.display().to_string();
    for slug in [
        "../outside/escape",
        "..",
        absolute.as_str(),
        "a/../../outside/x",
        "./x",
    ] {
        for args in [
            &[
                "new",
                slug,
                "--title",
                "Escape the bank.",
                "--description",
                "x",
            ][..],
            &[
                "record",
                slug,
                "--followed",
                "--run-outcome",
                "success",
                "--evidence",
                "run:r_9",
            ],
            &["show", slug],
            &["archive", slug],
            &["supersede", slug, "--by", "keep-ci-green"],
            &["supersede", "keep-ci-green", "--by", slug],
        ] {
            let out = run(&bank, args, None);
            assert_ne!(
                out.code,
                0,
                "lesson {}: accepted\n{}{}",
                args.join(" "),
                out.stdout,
                out.stderr
            );
        }
    }
    let out = run(&bank, &["add", &candidate], None);
    assert_ne!(
        out.code, 0,
        "add accepted a slug out of the bank\n{}{}",
        out.stdout, out.stderr
    );
    assert!(
        snapshot(&outside) == before,
        "a command wrote outside the bank"
    );
    let after = s.tree();
    assert!(
        after == bank_before,
        "a refused command wrote:\n{}",
        crate::sandbox::diff(&bank_before, &after)
    );
}

#[cfg(unix)]
#[test]
fn linked_state_directories_out_of_the_bank_are_never_written() {
    use std::os::unix::fs::symlink;
    let (_s, bank, outside) = bank_with_outside();
    for (dir, target) in [
        ("_log", "log"),
        ("_archive", "archive"),
        (".lesson", "state"),
    ] {
        let path = bank.join(dir);
        if path.is_dir() {
            // the bank's own directory moves out and a link takes its place
            let moved = outside.join(target);
            std::fs::remove_dir_all(&moved).unwrap();
            std::fs::rename(&path, &moved).unwrap();
        }
        symlink(outside.join(target), &path).unwrap();
    }
    let before = snapshot(&outside);
    for args in [
        &[
            "record",
            "keep-ci-green",
            "--followed",
            "--run-outcome",
            "success",
            "--evidence",
            "run:r_77",
        ][..],
        &["archive", "run-clippy-in-ci"],
        &["search", "ci"],
        &["index"],
        &["lint", "--fix"],
        &[
            "new",
            "fresh-lesson",
            "--title",
            "Fresh.",
            "--description",
            "x",
        ],
    ] {
        run(&bank, args, None);
        let after = snapshot(&outside);
        assert!(
            after == before,
            "lesson {} wrote outside the bank:\n{}",
            args.join(" "),
            crate::sandbox::diff(&before, &after)
        );
    }
}

#[cfg(unix)]
#[test]
fn symlink_loops_are_reported_not_followed() {
    use std::os::unix::fs::symlink;
    let (_s, bank, _outside) = bank_with_outside();
    symlink("loop-b.md", bank.join("loop-a.md")).unwrap();
    symlink("loop-a.md", bank.join("loop-b.md")).unwrap();
    symlink("self.md", bank.join("self.md")).unwrap();
    std::fs::create_dir_all(bank.join("sub")).unwrap();
    symlink("..", bank.join("sub/up")).unwrap();
    symlink(".", bank.join("sub/here")).unwrap();
    let lint = run(&bank, &["lint", "--output-format", "concise"], None);
    for file in ["loop-a.md", "loop-b.md", "self.md"] {
        let reported = lint.stdout.lines().any(|l| {
            l.strip_prefix(&format!("lessons/{file}"))
                .or_else(|| l.strip_prefix(file))
                .and_then(position_after)
                .is_some()
        });
        assert!(
            reported,
            "{file} not reported at a position:\n{}{}",
            lint.stdout, lint.stderr
        );
    }
    for args in READERS {
        run(&bank, args, None);
    }
}

/// A bank (in a fresh sandbox) of the fixture plus the files `files` writes, and `lesson.toml`
/// with `toml`.
fn bank_with(toml: &str, files: impl FnOnce(&Path)) -> (Sandbox, PathBuf) {
    let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
    let bank = s.bank();
    std::fs::write(bank.join("lesson.toml"), toml).unwrap();
    files(&bank);
    (s, bank)
}

/// A file of `size` bytes (sparse: its bytes are NUL) is over the size limit: a finding at
/// 1:1, and it is never read whole.
#[test]
fn a_100_mb_file_is_over_the_size_limit() {
    let (_s, bank) = bank_with("", |bank| {
        let f = std::fs::File::create(bank.join("huge.md")).unwrap();
        f.set_len(100 << 20).unwrap();
    });
    readers_report(&bank, "lessons/huge.md", "P002", None);
}

/// A frontmatter of `lines` lines (a long `tags` list), in a bank whose size limit lets it in.
fn long_frontmatter(lines: usize, measure: Option<&str>) {
    let (_s, bank) = bank_with("[lint]\nsize-limit = 200_000_000\n", |bank| {
        let mut text = String::from("---\nschema: learning/v1\nslug: long-frontmatter\ntitle: Long.\ntrigger:\n  description: Long.\n  tags:\n");
        for i in 0..lines {
            text.push_str(&format!("    - tag-{i}\n"));
        }
        text.push_str("outcome: success\nevidence: []\n---\n\n# Long.\n");
        std::fs::write(bank.join("long-frontmatter.md"), text).unwrap();
    });
    readers_report(&bank, "lessons/long-frontmatter.md", "S011", measure);
}

#[test]
fn a_long_frontmatter_is_parsed() {
    long_frontmatter(20_000, None);
}

#[test]
#[ignore = "long: cargo xtask stress"]
fn stress_a_1_000_000_line_frontmatter() {
    long_frontmatter(1_000_000, Some("1,000,000-line frontmatter"));
}

#[test]
#[ignore = "long: cargo xtask stress"]
fn stress_a_100_mb_file() {
    let (_s, bank) = bank_with("[lint]\nsize-limit = 200_000_000\n", |bank| {
        let line = "Cache builds in CI and keep the cache warm between runs. ".repeat(20) + "\n";
        let body = line.repeat((100 << 20) / line.len());
        std::fs::write(bank.join("huge.md"), lesson_text("huge", &body)).unwrap();
        let f = std::fs::File::create(bank.join("sparse.md")).unwrap();
        f.set_len(100 << 20).unwrap();
    });
    // within the raised limit, both are read: the sparse one is 100 MB of NUL bytes
    readers_report(&bank, "lessons/sparse.md", "P004", Some("100 MB file"));
}

/// Nesting and aliases past the YAML limits: a finding where the limit is passed.
#[test]
fn deep_nesting_and_alias_bombs_are_refused_at_their_position() {
    let flow = format!(
        "---\nslug: deep\nx: {}{}\n---\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let mut block = String::from("---\nslug: block\n");
    for depth in 0..500 {
        block.push_str(&format!("{}k{depth}:\n", "  ".repeat(depth)));
    }
    block.push_str("---\n");
    let mut bomb = String::from("---\nslug: bomb\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb.push_str("---\n");
    let mut many = String::from("---\nslug: many\nbase: &b x\nlist:\n");
    for _ in 0..5000 {
        many.push_str("  - *b\n");
    }
    many.push_str("---\n");
    let (_s, bank) = bank_with("", |bank| {
        for (name, text) in [
            ("deep.md", &flow),
            ("block.md", &block),
            ("bomb.md", &bomb),
            ("many.md", &many),
        ] {
            std::fs::write(bank.join(name), text).unwrap();
        }
    });
    let lint = run(&bank, &["lint", "--output-format", "concise"], None);
    // saphyr's own limit stops the flow nesting (P008), ours the rest (P010); the bomb's 90
    // aliases are within the limit (it is reported as what it is: no lesson), and a JSON view
    // expands them within a node budget
    for (file, code) in [
        ("deep.md", "P008"),
        ("block.md", "P010"),
        ("many.md", "P010"),
        ("bomb.md", "S"),
    ] {
        let found = lint.stdout.lines().any(|l| {
            l.strip_prefix(&format!("lessons/{file}"))
                .and_then(position_after)
                .is_some()
                && l.contains(code)
        });
        assert!(found, "{file}: no {code} at a position\n{}", lint.stdout);
    }
    for args in READERS
        .iter()
        .copied()
        .chain([&["show", "bomb", "--format", "json"][..]])
    {
        run(&bank, args, None);
    }
}

#[test]
fn nul_bytes_and_invalid_utf8_are_reported_at_their_position() {
    let (_s, bank) = bank_with("", |bank| {
        let mut nul = lesson_text("nul", "ab\0cd\n").into_bytes();
        std::fs::write(bank.join("nul.md"), &nul).unwrap();
        nul.truncate(0);
        let mut latin = lesson_text("latin", "caf").into_bytes();
        latin.extend_from_slice(b"\xe9 cr\xe8me\n");
        std::fs::write(bank.join("latin.md"), &latin).unwrap();
    });
    let lint = run(&bank, &["lint", "--output-format", "concise"], None);
    for (file, code, line) in [("nul.md", "P004", 27), ("latin.md", "P003", 27)] {
        let at = lint.stdout.lines().find_map(|l| {
            let rest = l.strip_prefix(&format!("lessons/{file}"))?;
            l.contains(code).then(|| position_after(rest)).flatten()
        });
        assert_eq!(
            at.map(|(l, _)| l),
            Some(line),
            "{file} {code}:\n{}",
            lint.stdout
        );
    }
    for args in READERS {
        run(&bank, args, None);
    }
}

#[cfg(unix)]
#[test]
fn invalid_utf8_in_a_file_name_is_no_crash() {
    use std::os::unix::ffi::OsStrExt;
    let (_s, bank) = bank_with("", |bank| {
        let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name.md");
        std::fs::write(bank.join(name), lesson_text("bad-name", "")).unwrap();
    });
    let lint = run(&bank, &["lint", "--output-format", "concise"], None);
    assert!(
        lint.stdout.contains("bad-\u{fffd}-name.md:"),
        "{}{}",
        lint.stdout,
        lint.stderr
    );
    for args in READERS {
        run(&bank, args, None);
    }
}

/// One line of `len` bytes in the body.
fn long_line(len: usize, measure: Option<&str>) {
    let (_s, bank) = bank_with("[lint]\nsize-limit = 200_000_000\n", |bank| {
        let line = "cache ".repeat(len / 6);
        std::fs::write(
            bank.join("long-line.md"),
            lesson_text("long-line", &format!("{line}\u{200b}\n")),
        )
        .unwrap();
    });
    readers_report(&bank, "lessons/long-line.md", "D004", measure);
}

#[test]
fn a_very_long_line_is_reported_at_its_column() {
    long_line(900_000, None);
}

#[test]
#[ignore = "long: cargo xtask stress"]
fn stress_a_50_mb_line() {
    long_line(50 << 20, Some("50 MB line"));
}

/// `n` empty files: each a finding at 1:1.
fn empty_files(n: usize, measure: Option<&str>) {
    let (_s, bank) = bank_with("", |bank| {
        for i in 0..n {
            std::fs::write(bank.join(format!("empty-{i:06}.md")), "").unwrap();
        }
    });
    readers_report(&bank, "lessons/empty-000000.md", "P005", measure);
}

#[test]
fn a_bank_of_empty_files() {
    empty_files(2_000, None);
}

#[test]
#[ignore = "long: cargo xtask stress"]
fn stress_100_000_empty_files() {
    empty_files(100_000, Some("100,000 empty files"));
}
