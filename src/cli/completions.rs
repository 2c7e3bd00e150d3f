//! `lesson completions SHELL` (clap_complete) and the hidden `lesson __man [PAGE]`
//! (clap_mangen), which `cargo xtask man` reads to write `man/`.

use std::process::ExitCode;

use clap::{Args, CommandFactory};

/// Flags of `lesson completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Print the completion script for a shell.
pub fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = super::Args::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "lesson", &mut script);
    print!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// Flags of `lesson __man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// A page's name (`lesson`, `lesson-lint`, ...); without it, the names of every page
    page: Option<String>,
}

/// Print the names of the man pages (one per line), or one page in roff.
pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let pages = pages();
    match args.page {
        None => {
            for (name, _) in &pages {
                println!("{name}");
            }
        }
        Some(page) => {
            let Some((_, cmd)) = pages.into_iter().find(|(name, _)| *name == page) else {
                anyhow::bail!("no man page `{page}`");
            };
            let mut roff = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut roff)?;
            print!("{}", String::from_utf8_lossy(&roff));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `lesson` and one page per visible command, named as `man` looks them up (`lesson-lint`).
fn pages() -> Vec<(String, clap::Command)> {
    let mut root = super::Args::command();
    root.build();
    let mut pages = vec![("lesson".to_string(), root.clone())];
    let visible = root
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help");
    for sub in visible {
        let name = format!("lesson-{}", sub.get_name());
        // clap takes a command's name as `&'static str`; this process prints one page and exits
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        let page = sub
            .clone()
            .name(static_name)
            .display_name(name.clone())
            .bin_name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
        pages.push((name, page));
    }
    pages
}
