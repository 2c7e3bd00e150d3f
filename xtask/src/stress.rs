//! `cargo xtask stress`: the long variants of the hardening tests, in a release build:
//!
//! 1. the library's and the integration suite's tests with `LESSON_STRESS=10` (every property
//!    test runs ten times its cases: parse, fast paths, writers, `_index.md`, retrieval, the
//!    pruned query against the exhaustive one, fixes) and `PROPTEST_CASES` to match, so the
//!    fault tests (every kill point of every writer, disk full, read-only bank) and the fast
//!    hostile-input tests run beside them;
//! 2. the `#[ignore]`d `stress_*` tests of `tests/it/hostile.rs` (a 100 MB file, a
//!    1,000,000-line frontmatter, a 50 MB line, 100,000 empty files), one at a time; each
//!    command's wall time and peak RSS (`/usr/bin/time`, when present) is printed as
//!    `stress CASE: ...`.
//!
//! The fuzz targets' long runs are `cargo xtask fuzz`.

use std::process::Command;

use anyhow::bail;

use crate::bench::Paths;

/// How many times its cases each property test runs.
const FACTOR: u32 = 10;
/// proptest's own default, for the tests that keep it.
const PROPTEST_DEFAULT_CASES: u32 = 256;

/// Run the long variants.
pub fn run() -> anyhow::Result<()> {
    let paths = Paths::discover();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let stages: [(&str, &[&str]); 3] = [
        ("library tests", &["--lib"]),
        ("integration tests", &["--test", "it"]),
        (
            "hostile input, long",
            &[
                "--test",
                "it",
                "hostile::stress_",
                "--",
                "--ignored",
                "--nocapture",
                "--test-threads",
                "1",
            ],
        ),
    ];
    for (name, args) in stages {
        println!("stress: {name}");
        let started = std::time::Instant::now();
        let status = Command::new(&cargo)
            .current_dir(&paths.root)
            .args(["test", "--release"])
            .args(args)
            .env("LESSON_STRESS", FACTOR.to_string())
            .env(
                "PROPTEST_CASES",
                (FACTOR * PROPTEST_DEFAULT_CASES).to_string(),
            )
            .status()?;
        if !status.success() {
            bail!("stress: {name} failed ({status})");
        }
        println!(
            "stress: {name} passed in {:.1} s (build included)",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
