//! `cargo xtask stress`: the long variants of the hostile-input tests (`tests/it/hostile.rs`,
//! the `#[ignore]`d `stress_*` tests: a 100 MB file, a 1,000,000-line frontmatter, a 50 MB
//! line, 100,000 empty files), in a release build, one at a time; each command's wall time and
//! peak RSS (`/usr/bin/time`, when present) is printed as `stress CASE: ...`.

use std::process::Command;

use anyhow::bail;

use crate::bench::Paths;

/// Run the long variants.
pub fn run() -> anyhow::Result<()> {
    let paths = Paths::discover();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&paths.root)
        .args([
            "test",
            "--release",
            "--test",
            "it",
            "hostile::stress_",
            "--",
        ])
        .args(["--ignored", "--nocapture", "--test-threads", "1"])
        .status()?;
    if !status.success() {
        bail!("the stress tests failed ({status})");
    }
    Ok(())
}
