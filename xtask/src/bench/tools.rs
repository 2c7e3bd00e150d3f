//! The programs a bench runs: the release `lesson` binary and ripgrep (installed when missing).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use super::machine::command_line;
use super::Paths;

/// Build `lesson` in release mode and return the binary's path.
pub fn build_lesson(paths: &Paths) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("building lesson: cargo build --release -p lesson");
    let status = Command::new(cargo)
        .current_dir(&paths.root)
        .args(["build", "--release", "-p", "lesson"])
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo build --release -p lesson` failed ({status})");
    }
    let bin = paths
        .target
        .join("release")
        .join(format!("lesson{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!("built lesson, but {} does not exist", bin.display());
    }
    Ok(bin)
}

/// Whether `lesson` has a subcommand (its `--help` exits 0).
pub fn has_subcommand(lesson: &Path, name: &str) -> bool {
    Command::new(lesson)
        .args([name, "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// ripgrep's path and version; installs it (apt-get as root, else `cargo install`) when missing,
/// saying what it did.
pub fn ripgrep() -> anyhow::Result<(PathBuf, String)> {
    if let Some(found) = find_rg() {
        return Ok(found);
    }
    eprintln!("ripgrep (rg) is not installed; the rg floor needs it");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root && on_path("apt-get").is_some() {
        eprintln!("installing it: apt-get update && apt-get install -y ripgrep (running as root)");
        let ok = run_quiet(Command::new("apt-get").args(["update", "-qq"]))
            && run_quiet(
                Command::new("apt-get")
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .args(["install", "-y", "-qq", "ripgrep"]),
            );
        match find_rg() {
            Some(found) if ok => {
                eprintln!(
                    "installed {} at {} with apt-get",
                    found.1,
                    found.0.display()
                );
                return Ok(found);
            }
            _ => eprintln!("apt-get did not install ripgrep; trying cargo install"),
        }
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("installing it: cargo install --locked ripgrep");
    let status = Command::new(cargo)
        .args(["install", "--locked", "ripgrep"])
        .status()
        .context("cannot run cargo install")?;
    match find_rg() {
        Some(found) if status.success() => {
            eprintln!("installed {} at {} with cargo install", found.1, found.0.display());
            Ok(found)
        }
        _ => bail!("cannot install ripgrep; install it (`apt-get install ripgrep` or `cargo install ripgrep`) and rerun"),
    }
}

fn run_quiet(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null()).status().is_ok_and(|s| s.success())
}

fn find_rg() -> Option<(PathBuf, String)> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let candidates = on_path("rg")
        .into_iter()
        .chain(cargo_home.map(|h| h.join("bin").join("rg")));
    for path in candidates {
        let version = command_line(Command::new(&path).arg("--version"));
        if version != "unknown" {
            return Some((path, version));
        }
    }
    None
}

/// The first executable file called `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}
