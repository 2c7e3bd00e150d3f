//! `lesson git install`: register the bank's merge driver in the clone's git configuration.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use lesson::git::driver::{Installed, Setting, DRIVER_COMMAND};
use lesson::git::repo::BankRepo;

/// Flags of `lesson git`.
#[derive(Debug, Args)]
pub struct GitArgs {
    #[command(subcommand)]
    command: GitCommand,
}

#[derive(Debug, Subcommand)]
enum GitCommand {
    /// Register the merge driver for lesson files and `_index.md` in this clone's `.git/config`
    /// (`merge.lesson.driver = lesson merge-file %O %A %B %P`; `lesson` must be on PATH).
    /// Idempotent.
    Install,
}

/// Run `lesson git …`.
pub fn run(root: &Path, args: GitArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GitCommand::Install => {
            let repo = BankRepo::open(root)?;
            let installed = lesson::git::driver::install(&repo).with_context(|| {
                format!("cannot register the merge driver for {}", root.display())
            })?;
            report_install(&installed);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Print what the driver's registration did, and a note when `lesson` is not on PATH.
pub fn report_install(installed: &Installed) {
    let config = installed.config.display();
    match &installed.driver {
        Setting::Set => status!("registered the merge driver in {config}: {DRIVER_COMMAND}"),
        Setting::Unchanged => status!("the merge driver is registered in {config}"),
        Setting::Kept(v) => status!("kept the merge driver {config} already has: {v}"),
    }
    if matches!(installed.driver, Setting::Set | Setting::Unchanged) && !on_path("lesson") {
        note!(
            "note: git runs the driver as `lesson`, which is not on PATH; put the lesson binary on PATH (as git-lfs needs `git-lfs`)"
        );
    }
}

/// Whether an executable `name` is in a directory of PATH.
fn on_path(name: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let file = dir.join(name);
        file.is_file() || (cfg!(windows) && dir.join(format!("{name}.exe")).is_file())
    })
}
