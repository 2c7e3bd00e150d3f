//! `cargo xtask man [--check]`: one man page per command (clap_mangen), in `man/` at the
//! repository root: `lesson.1`, `lesson-lint.1`, ... The pages come from the binary's own clap
//! definition through its hidden `lesson __man [PAGE]` command, so they cannot describe flags
//! the binary does not have. `--check` writes nothing and fails when a page is missing, differs
//! or is left over. (`tests/it/man.rs` makes the same check under `cargo test`.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// Write (or check) `man/`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => bail!("usage: cargo xtask man [--check]"),
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask lives in the repository")?;
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--bin", "lesson"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("cargo build --bin lesson failed");
    }
    let bin = target_dir(root).join("debug/lesson");
    let pages = pages(&bin)?;
    let dir = root.join("man");
    let on_disk = on_disk(&dir)?;
    let mut stale = Vec::new();
    for (file, text) in &pages {
        if on_disk.get(file) != Some(text) {
            stale.push(format!("{file} is missing or differs"));
        }
    }
    for file in on_disk.keys().filter(|f| !pages.contains_key(*f)) {
        stale.push(format!("{file} is no page of the binary"));
    }
    if check {
        if stale.is_empty() {
            println!("man/: {} pages, up to date", pages.len());
            return Ok(());
        }
        bail!(
            "man/ is stale (run `cargo xtask man`):\n  {}",
            stale.join("\n  ")
        );
    }
    std::fs::create_dir_all(&dir)?;
    for (file, text) in &pages {
        if on_disk.get(file) != Some(text) {
            std::fs::write(dir.join(file), text)?;
            println!("wrote man/{file}");
        }
    }
    for file in on_disk.keys().filter(|f| !pages.contains_key(*f)) {
        println!("note: man/{file} is no page of the binary; remove it by hand");
    }
    println!("man/: {} pages", pages.len());
    Ok(())
}

/// `CARGO_TARGET_DIR`, else `target/` at the repository root.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// Every page the binary has: file name (`lesson-lint.1`) -> roff.
fn pages(bin: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let lesson = |args: &[&str]| -> anyhow::Result<String> {
        let out = Command::new(bin)
            .args(args)
            .output()
            .with_context(|| format!("cannot run {}", bin.display()))?;
        if !out.status.success() {
            bail!(
                "lesson {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8(out.stdout)?)
    };
    let mut pages = BTreeMap::new();
    for name in lesson(&["__man"])?.lines() {
        pages.insert(format!("{name}.1"), lesson(&["__man", name])?);
    }
    Ok(pages)
}

/// The pages in `man/` now.
fn on_disk(dir: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut pages = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(pages);
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".1") {
            pages.insert(name, std::fs::read_to_string(entry.path())?);
        }
    }
    Ok(pages)
}
