//! `cargo xtask pre-commit-check`: the hooks of `.pre-commit-hooks.yaml` run by the real
//! `pre-commit` (from PyPI, in a temporary virtualenv) against a temporary git repository
//! holding a sample bank. `pre-commit try-repo <this repository> lesson-lint --all-files` must
//! pass on the clean bank and fail on a broken lesson; `lesson-index-check` must pass on the
//! clean bank and fail once `_index.md` is stale. Any other result exits non-zero.
//!
//! pre-commit's `language: rust` runs `cargo install --path` on this repository (working tree
//! included: `try-repo` snapshots uncommitted changes). The build uses `CARGO_TARGET_DIR`
//! (default: this repository's `target/`), so a second run reuses the first one's build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The sample lesson, admitted with `lesson::define_lesson`.
fn sample() -> serde_json::Value {
    serde_json::json!({
        "slug": "pin-the-toolchain",
        "title": "Pin the Rust toolchain.",
        "trigger": {"description": "CI builds break when a new stable Rust ships.", "tags": ["ci", "rust"]},
        "outcome": "failure",
        "evidence": [{"kind": "work-item", "ref": "wi-9", "note": "nightly broke the build twice"}],
        "body": "# Pin the Rust toolchain.\n\n## When this applies\n\nCI builds with `stable`.\n\n## What to do (or avoid)\n\nCommit a rust-toolchain.toml.\n\n## Counter-example\n\nA new stable release broke main.\n",
    })
}

/// Run the check; an error when any hook did not behave.
pub fn run() -> anyhow::Result<()> {
    let repo_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask lives in the repository")?
        .to_path_buf();
    let tmp = tempfile::tempdir()?;
    let venv = tmp.path().join("venv");
    step(
        "python3 -m venv",
        run_ok(Command::new("python3").args(["-m", "venv"]).arg(&venv)),
    )?;
    let pip = venv.join("bin/pip");
    step(
        "pip install pre-commit",
        run_ok(Command::new(&pip).args(["install", "--quiet", "pre-commit"])),
    )?;
    let pre_commit = venv.join("bin/pre-commit");
    let version = output(Command::new(&pre_commit).arg("--version"))?;
    println!("{}", version.stdout.trim());

    // a git repository with a sample bank in `lessons/`
    let work = tmp.path().join("project");
    let bank = work.join("lessons");
    std::fs::create_dir_all(&work)?;
    git(&work, &["init", "--quiet"])?;
    let now = jiff::Timestamp::now();
    lesson::curate::init::init(&bank, now).context("lesson init")?;
    let stamp = lesson::curate::Stamp {
        at: now,
        by: "xtask".into(),
    };
    lesson::define_lesson(&bank, sample(), &stamp).context("define_lesson")?;
    git(&work, &["add", "-A"])?;
    git(&work, &["commit", "--quiet", "-m", "a sample bank"])?;

    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root.join("target"));
    let try_repo = |hook: &str| -> anyhow::Result<Outcome> {
        let mut cmd = Command::new(&pre_commit);
        cmd.args(["try-repo"])
            .arg(&repo_root)
            .args([hook, "--all-files", "--color", "never"])
            .current_dir(&work)
            .env("PRE_COMMIT_HOME", tmp.path().join("cache"))
            .env("CARGO_TARGET_DIR", &target);
        output(&mut cmd)
    };

    let mut failures = Vec::new();
    let mut expect = |what: &str, outcome: &Outcome, pass: bool, needle: &str| {
        let ok = outcome.success == pass && outcome.stdout.contains(needle);
        println!(
            "{} {what}: exit {}, expected {}",
            if ok { "ok  " } else { "FAIL" },
            outcome.code,
            if pass { "success" } else { "failure" },
        );
        if !ok {
            println!("{}", indent(&outcome.all()));
            failures.push(what.to_string());
        }
    };

    let clean_lint = try_repo("lesson-lint")?;
    expect(
        "lesson-lint on a clean bank",
        &clean_lint,
        true,
        "lesson lint",
    );
    let clean_index = try_repo("lesson-index-check")?;
    expect(
        "lesson-index-check on a clean bank",
        &clean_index,
        true,
        "lesson index --check",
    );

    // a broken lesson: an outcome the schema does not know (S009 invalid-outcome)
    let file = bank.join("pin-the-toolchain.md");
    let text = std::fs::read_to_string(&file)?;
    std::fs::write(
        &file,
        text.replace("outcome: failure", "outcome: sometimes"),
    )?;
    git(&work, &["add", "-A"])?;
    let broken_lint = try_repo("lesson-lint")?;
    expect(
        "lesson-lint on a broken lesson",
        &broken_lint,
        false,
        "invalid outcome `sometimes`",
    );
    std::fs::write(&file, &text)?;

    // a stale index: a second lesson written by hand, `_index.md` left as it was
    let second = text
        .replace("pin-the-toolchain", "pin-the-node-version")
        .replace("Pin the Rust toolchain.", "Pin the Node version.")
        .replace("wi-9", "wi-10");
    std::fs::write(bank.join("pin-the-node-version.md"), second)?;
    git(&work, &["add", "-A"])?;
    let stale_index = try_repo("lesson-index-check")?;
    expect(
        "lesson-index-check on a stale _index.md",
        &stale_index,
        false,
        "lesson index --check",
    );

    println!(
        "\n--- pre-commit output, broken lesson\n{}",
        broken_lint.all()
    );
    if failures.is_empty() {
        println!("pre-commit-check: 4 passed, 0 failed");
        Ok(())
    } else {
        println!(
            "pre-commit-check: {} passed, {} failed",
            4 - failures.len(),
            failures.len()
        );
        bail!("hooks that did not behave: {}", failures.join("; "))
    }
}

/// What a command did.
struct Outcome {
    success: bool,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

fn output(cmd: &mut Command) -> anyhow::Result<Outcome> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    Ok(Outcome {
        success: out.status.success(),
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

fn run_ok(cmd: &mut Command) -> anyhow::Result<Outcome> {
    let out = output(cmd)?;
    if !out.success {
        bail!("{cmd:?} failed ({}):\n{}", out.code, out.all());
    }
    Ok(out)
}

fn step(what: &str, result: anyhow::Result<Outcome>) -> anyhow::Result<()> {
    result.with_context(|| what.to_string())?;
    println!("ok   {what}");
    Ok(())
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<Outcome> {
    run_ok(
        Command::new("git")
            .args([
                "-c",
                "user.name=xtask",
                "-c",
                "user.email=xtask@localhost",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir),
    )
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
