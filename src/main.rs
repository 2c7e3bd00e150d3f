//! The `lesson` command line: parse flags, run a command, map the result to an exit code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

// Loading a bank allocates many small strings; mimalloc is markedly faster at that than the
// system allocator (the same choice as ruff and uv).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
