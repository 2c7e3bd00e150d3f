//! `lesson config`: the resolved configuration.

use std::path::Path;
use std::process::ExitCode;

/// Print the bank's configuration with every default spelled out.
pub fn run(root: &Path) -> anyhow::Result<ExitCode> {
    let bank = super::load_lessons(root)?;
    let origin = if bank.has_config {
        format!("{}/lesson.toml", root.display())
    } else {
        "defaults (no lesson.toml)".to_string()
    };
    println!("# bank: {}\n# from: {origin}", root.display());
    print!("{}", bank.config.to_toml());
    Ok(ExitCode::SUCCESS)
}
