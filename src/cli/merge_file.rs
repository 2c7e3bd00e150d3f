//! `lesson merge-file BASE OURS THEIRS PATH` (hidden): git's merge driver for bank files,
//! registered by `lesson git install` as `lesson merge-file %O %A %B %P`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

/// Arguments of `lesson merge-file`, in the order git passes them.
#[derive(Debug, Args)]
pub struct MergeFileArgs {
    /// The common ancestor's version (git's `%O`)
    base: PathBuf,
    /// Our version; the result is written here (git's `%A`)
    ours: PathBuf,
    /// Their version (git's `%B`)
    theirs: PathBuf,
    /// The file's path in the repository, which picks the rule (git's `%P`)
    path: String,
}

/// Run `lesson merge-file`: exit 0 when merged, 1 when the result holds conflict markers.
pub fn run(args: MergeFileArgs) -> anyhow::Result<ExitCode> {
    let merged = lesson::merge::driver(&args.base, &args.ours, &args.theirs, &args.path)?;
    match merged.conflict {
        None => Ok(ExitCode::SUCCESS),
        Some(conflict) => {
            eprintln!(
                "lesson merge-file: {}: {conflict}; resolve the conflict markers by hand",
                args.path
            );
            Ok(ExitCode::from(1))
        }
    }
}
