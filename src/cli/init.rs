//! `lesson init [DIR]`: create a bank, or add what an existing one lacks.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lesson::curate::init::FileChange;

/// Flags of `lesson init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The bank directory to create or bring up to date (default: --dir, else ./lessons)
    dir: Option<PathBuf>,
}

/// Run `lesson init`.
pub fn run(global_dir: Option<PathBuf>, args: InitArgs) -> anyhow::Result<ExitCode> {
    let dir = args
        .dir
        .or(global_dir)
        .unwrap_or_else(|| PathBuf::from("lessons"));
    let done = lesson::curate::init::init(&dir, super::now()?)?;
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if !done.upgraded() {
        let names: Vec<String> = done.files.iter().map(|(p, _)| name(p)).collect();
        status!(
            "created a lesson bank in {} ({})",
            dir.display(),
            names.join(", ")
        );
    } else {
        let mut parts = Vec::new();
        for (path, change) in &done.files {
            match change {
                FileChange::Created => parts.push(format!("created {}", name(path))),
                FileChange::Appended(lines) => {
                    parts.push(format!("added to {}: {}", name(path), lines.join(", ")))
                }
                FileChange::Unchanged => {}
            }
        }
        if parts.is_empty() {
            status!("{} is up to date as a lesson bank", dir.display());
        } else {
            status!(
                "updated the lesson bank in {} ({})",
                dir.display(),
                parts.join("; ")
            );
        }
    }
    if let Some(installed) = &done.driver {
        super::git::report_install(installed);
    }
    Ok(ExitCode::SUCCESS)
}
