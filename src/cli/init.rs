//! `lesson init [DIR]`: create a bank.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Flags of `lesson init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The bank directory to create (default: --dir, else ./lessons)
    dir: Option<PathBuf>,
}

/// Run `lesson init`.
pub fn run(global_dir: Option<PathBuf>, args: InitArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .dir
        .or(global_dir)
        .unwrap_or_else(|| PathBuf::from("lessons"));
    let files = lesson::curate::init::init(&dir, lesson::bank::now_from_env()?)?;
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    println!(
        "created a lesson bank in {} ({})",
        dir.display(),
        names.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}
