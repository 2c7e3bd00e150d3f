//! `cargo xtask bench`: reproducible benchmarks of the release binary on synthetic banks.
//!
//! Each bench measures child processes (wall clock, CPU time, peak RSS via `wait4`) against
//! floors that any implementation must pay (`cat` of every file, `rg` over the bank), prints a
//! table and writes `target/bench/<bench>.json`. Banks are generated once per generator version
//! under `target/bench/banks/` and reused.

mod git;
pub mod json;
mod lint;
pub mod machine;
pub mod measure;
mod prng;
mod search;
mod synthetic_bank;
pub mod table;
pub mod tools;

use std::path::{Path, PathBuf};

/// A benchmark `cargo xtask bench` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `lesson lint` and `lesson index` against the `cat` and `rg` floors.
    Lint,
    /// `lesson search` against `rg`, SQLite FTS5 (trigram) and tantivy (BM25).
    Search,
    /// Provenance, `lint --base`, `sync` and sync contention on a bank with a long history,
    /// against `git` floors.
    Git,
}

impl Target {
    /// Every bench, in the order `cargo xtask bench` runs them.
    pub const ALL: [Target; 3] = [Target::Lint, Target::Search, Target::Git];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Lint => "lint",
            Target::Search => "search",
            Target::Git => "git",
        }
    }

    /// The bench named `name`.
    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What to run and how often.
#[derive(Debug, Clone)]
pub struct Options {
    /// The benches to run.
    pub targets: Vec<Target>,
    /// Bank sizes, in lessons.
    pub sizes: Vec<usize>,
    /// Timed runs per tool and size.
    pub runs: usize,
    /// The git bench's contention rows: 16 runtimes on one branch, and on a branch each with
    /// a merger (`--contention one-branch,fleet`, the default; `none` for neither).
    pub one_branch: bool,
    /// See `one_branch`.
    pub fleet: bool,
    /// search: a sentence-embedding model directory (`--model DIR`): rows for `lesson search`
    /// with `[retrieve] model` set (the first search embedding every lesson, a new process per
    /// query, the warm in-process query).
    pub model: Option<std::path::PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            targets: Target::ALL.to_vec(),
            sizes: vec![10_000, 100_000],
            runs: 3,
            one_branch: true,
            fleet: true,
            model: None,
        }
    }
}

/// Where things live: the workspace root and `target/bench`.
pub struct Paths {
    /// The workspace root (where `Cargo.toml` with `[workspace]` is).
    pub root: PathBuf,
    /// Cargo's target directory.
    pub target: PathBuf,
}

impl Paths {
    pub fn discover() -> Paths {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives in the workspace root")
            .to_path_buf();
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => root.join(dir),
            None => root.join("target"),
        };
        Paths { root, target }
    }

    /// `target/bench`.
    pub fn bench(&self) -> PathBuf {
        self.target.join("bench")
    }
}

/// Run the selected benches.
pub fn run(options: &Options) -> anyhow::Result<()> {
    let paths = Paths::discover();
    for target in &options.targets {
        match target {
            Target::Lint => lint::run(&paths, options)?,
            Target::Search => search::run(&paths, options)?,
            Target::Git => git::run(&paths, options)?,
        }
    }
    Ok(())
}
