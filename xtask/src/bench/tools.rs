//! The programs a bench runs: the release `lesson` binary and ripgrep (installed when missing).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use super::machine::command_line;
use super::Paths;

/// The environment variable naming a prebuilt `lesson` binary to measure instead of building
/// this workspace's (for instance a colleague's branch: `LESSON_BIN=../wt/x/target/release/lesson`).
pub const LESSON_BIN_ENV: &str = "LESSON_BIN";

/// The environment variable naming a prebuilt `lesson` binary built with the `semantic`
/// feature, for the systems that configure a model.
pub const LESSON_SEMANTIC_BIN_ENV: &str = "LESSON_SEMANTIC_BIN";

/// Build `lesson` in release mode and return the binary's path, or the binary `LESSON_BIN` names.
pub fn build_lesson(paths: &Paths) -> anyhow::Result<PathBuf> {
    build(paths, LESSON_BIN_ENV, &[], "lesson")
}

/// Build `lesson` in release mode with the `semantic` feature (its crates reused from xtask's
/// own build, which has it) and keep the binary as `target/release/lesson-semantic`, or the binary
/// `LESSON_SEMANTIC_BIN` names. The plain `target/release/lesson` is built again by the next
/// [`build_lesson`].
pub fn build_lesson_semantic(paths: &Paths) -> anyhow::Result<PathBuf> {
    build(
        paths,
        LESSON_SEMANTIC_BIN_ENV,
        &["--features", "semantic"],
        "lesson-semantic",
    )
}

fn build(paths: &Paths, env: &str, flags: &[&str], keep_as: &str) -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os(env) {
        let bin = PathBuf::from(bin);
        if !bin.is_file() {
            bail!("{env}={} is not a file", bin.display());
        }
        eprintln!("using lesson from {env}: {}", bin.display());
        return Ok(bin.canonicalize().unwrap_or(bin));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args = vec!["build", "--release", "-p", "lesson"];
    args.extend(flags);
    eprintln!("building lesson: cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .current_dir(&paths.root)
        .args(&args)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    let exe = std::env::consts::EXE_SUFFIX;
    let release = paths.target.join("release");
    let bin = release.join(format!("lesson{exe}"));
    if !bin.is_file() {
        bail!("built lesson, but {} does not exist", bin.display());
    }
    if keep_as == "lesson" {
        return Ok(bin);
    }
    let kept = release.join(format!("{keep_as}{exe}"));
    std::fs::copy(&bin, &kept)
        .with_context(|| format!("cannot copy {} to {}", bin.display(), kept.display()))?;
    Ok(kept)
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

/// One hit of `lesson search --format json`.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The lesson's slug.
    pub slug: String,
    /// Its score.
    pub score: f64,
    /// lesson's similarity part of the score (its lexical similarity), when the output has
    /// score parts.
    pub similarity: Option<f64>,
    /// Its file, when the output says.
    pub path: Option<String>,
}

/// `lesson search <query> --dir <bank> -k <k> --format json`, with the query after `--` so that
/// a query starting with `-` is not read as a flag.
pub fn search_command(lesson: &Path, bank: &Path, query: &str, k: usize) -> Command {
    let mut cmd = Command::new(lesson);
    cmd.arg("search")
        .arg("--dir")
        .arg(bank)
        // the token budget is the prompt's concern: a ranking comparison wants all k hits
        .args([
            "-k",
            &k.to_string(),
            "--budget",
            "1000000",
            "--format",
            "json",
            "--",
            query,
        ])
        .env_remove("LESSON_DIR");
    cmd
}

/// The hits in the output of `lesson search --format json`: an array of objects with `slug`
/// and `score`, best first (an object wrapping the array in `hits` or `results` is accepted too).
pub fn parse_search_hits(stdout: &str) -> anyhow::Result<Vec<SearchHit>> {
    let value: serde_json::Value = serde_json::from_str(stdout.trim())
        .with_context(|| format!("`lesson search` printed no JSON: {:.200}", stdout.trim()))?;
    let array = match &value {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => o
            .get("hits")
            .or_else(|| o.get("results"))
            .and_then(serde_json::Value::as_array)
            .context("`lesson search` printed a JSON object without a `hits` array")?,
        _ => bail!("`lesson search` printed JSON that is not an array of hits"),
    };
    array
        .iter()
        .map(|hit| {
            let slug = hit
                .get("slug")
                .and_then(serde_json::Value::as_str)
                .with_context(|| format!("a hit without a `slug`: {hit}"))?;
            Ok(SearchHit {
                slug: slug.to_string(),
                // a number, or lesson's score parts (an object with the product in `score`)
                score: hit
                    .get("score")
                    .and_then(|s| s.as_f64().or_else(|| s.get("score")?.as_f64()))
                    .unwrap_or(f64::NAN),
                similarity: hit.get("score").and_then(|s| s.get("similarity")?.as_f64()),
                path: hit
                    .get("path")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_search_output() {
        let hits = parse_search_hits(
            r#"[{"slug": "a-b", "score": 0.5, "path": "a-b.md", "title": "T"}, {"slug": "c", "score": 1}]"#,
        )
        .unwrap();
        assert_eq!(hits[0].slug, "a-b");
        assert_eq!(hits[0].path.as_deref(), Some("a-b.md"));
        assert_eq!(hits[1].score, 1.0);
        let parts = parse_search_hits(
            r#"{"hits": [{"slug": "a", "score": {"similarity": 0.4, "confidence": 0.5, "score": 0.2}}]}"#,
        )
        .unwrap();
        assert_eq!(parts[0].score, 0.2, "the product of lesson's score parts");
        assert_eq!(parts[0].similarity, Some(0.4));
        assert_eq!(hits[1].similarity, None);
        assert_eq!(parse_search_hits("[]\n").unwrap(), vec![]);
        assert_eq!(
            parse_search_hits(r#"{"hits": [{"slug": "x"}]}"#).unwrap()[0].slug,
            "x"
        );
        assert!(parse_search_hits("Lessons from past experience:").is_err());
        assert!(parse_search_hits(r#"[{"score": 1}]"#).is_err());
    }
}
