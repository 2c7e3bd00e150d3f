//! `lesson index [--check|--stdout]`: write, check or print `_index.md`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lesson::index_md::{self, Rendered};
use lesson::lint::fix;
use lesson::template::Template;

/// Flags of `lesson index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Write nothing; exit 1 and print a diff when `_index.md` is out of date
    #[arg(long, conflicts_with = "stdout")]
    check: bool,
    /// Print the index instead of writing it
    #[arg(long)]
    stdout: bool,
}

/// Run `lesson index`.
pub fn run(root: &Path, args: IndexArgs) -> anyhow::Result<ExitCode> {
    if args.check || args.stdout {
        // printing needs no `_index.md`: it is read to check it only
        let (bank, rendered) = render(root, args.check)?;
        if args.stdout {
            let mut out = std::io::stdout().lock();
            match rendered.write_to(&mut out).and_then(|()| out.flush()) {
                // a reader that stops early (`| head`) is not a failure
                Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(err).context("cannot write the index to standard output");
                }
                _ => {}
            }
            super::release(bank);
            return Ok(ExitCode::SUCCESS);
        }
        if is_current(&bank, &rendered) {
            super::release(bank);
            return Ok(ExitCode::SUCCESS);
        }
        let path = bank.index_path();
        let before = bank.index.as_ref().map_or("", |s| s.text.as_str());
        let changes =
            BTreeMap::from([(path.clone(), (before.to_string(), rendered.into_string()))]);
        print!("{}", fix::unified_diff(&changes));
        let what = if bank.index.is_some() {
            "is out of date"
        } else {
            "is missing"
        };
        eprintln!(
            "{} {what}; run `lesson index` to regenerate it",
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    let done = index_md::write_with(
        root,
        super::now()?,
        &lesson::lint::FileErrors::default(),
        &super::progress::Bar::new(),
    )?;
    if let Some(note) = index_md::left_out_note(&done.left_out) {
        note!("{note}");
    }
    if done.written {
        status!(
            "wrote {} ({} lesson{})",
            done.path.display(),
            done.lessons,
            if done.lessons == 1 { "" } else { "s" }
        );
    } else {
        status!("{} is up to date", done.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn is_current(bank: &lesson::Bank, rendered: &Rendered) -> bool {
    bank.index
        .as_ref()
        .is_some_and(|s| rendered.matches(&s.text))
}

/// The bank at `root` (without its documents: see [`index_md::scan`]) and its `_index.md` as it
/// should read.
fn render(root: &Path, with_index: bool) -> anyhow::Result<(lesson::Bank, Rendered)> {
    let now = super::now()?;
    let progress = super::progress::Bar::new();
    let (bank, scanned) = index_md::scan_with(
        root,
        now,
        with_index,
        &lesson::lint::FileErrors::default(),
        &progress,
    )
    .with_context(|| format!("cannot load the bank at {}", root.display()))?;
    let template = Template::load(&bank.root, index_md::TEMPLATE, index_md::BUILTIN_TEMPLATE)?;
    let rendered = scanned.render(&template)?;
    if let Some(note) = index_md::left_out_note(scanned.left_out()) {
        note!("{note}");
    }
    super::release(scanned);
    Ok((bank, rendered))
}
