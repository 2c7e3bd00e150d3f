//! `lesson model fetch NAME [--out DIR]`: download a sentence-transformers model directory
//! from the Hugging Face hub (feature `semantic`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

/// Flags of `lesson model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Download a model's config.json, tokenizer.json and model.safetensors from the Hugging
    /// Face hub over https (through `curl`) and check that it loads. NAME is a hub repository
    /// (`sentence-transformers/all-MiniLM-L6-v2`; a bare name is looked up under
    /// `sentence-transformers/`). Prints the directory.
    Fetch {
        /// The model's name on the hub.
        name: String,
        /// Where to put it (default: `.lesson/models/NAME` in the bank, git-ignored).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// Run `lesson model …`; `bank` gives the bank directory when `--out` is not given.
pub fn run(
    bank: impl FnOnce() -> anyhow::Result<PathBuf>,
    args: ModelArgs,
) -> anyhow::Result<ExitCode> {
    match args.command {
        ModelCommand::Fetch { name, out } => {
            if !lesson::semantic::valid_name(&name) {
                anyhow::bail!(
                    "not a model name: {name:?} (one or two `/`-separated parts of letters, \
                     digits, `-`, `_` and `.`, such as sentence-transformers/all-MiniLM-L6-v2)"
                );
            }
            let dir = match out {
                Some(dir) => dir,
                None => default_dir(&bank()?, &name),
            };
            let model = lesson::semantic::fetch(&name, &dir)
                .with_context(|| format!("cannot fetch the model {name}"))?;
            status!(
                "fetched {} ({} dimensions, identity {})",
                lesson::semantic::hub_repository(&name),
                model.dimension(),
                model.identity()
            );
            println!("{}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `.lesson/models/<last part of NAME>` in the bank.
fn default_dir(bank: &Path, name: &str) -> PathBuf {
    let last = name.rsplit('/').next().unwrap_or(name);
    bank.join(lesson::layout::STATE_DIR)
        .join("models")
        .join(last)
}
