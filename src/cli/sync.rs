//! `lesson sync [--remote NAME] [--branch NAME] [--message TEXT] [--dry-run]`: commit the
//! bank's pending files, fetch, merge by the bank's rules, push.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lesson::sync::{self, SyncOptions, SyncReport};

/// Flags of `lesson sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The remote to sync with (default: the branch's upstream, else `origin`, else the only one)
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,
    /// The remote branch (default: the branch's upstream branch, else the current branch's name)
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// The message of the commit of pending bank files (default: what changed, as
    /// `record 3, add 1: SLUGS`)
    #[arg(long, short, value_name = "TEXT")]
    message: Option<String>,
    /// Say what would be committed, fetched and merged, and whether it would conflict; change
    /// nothing (the fetch updates `FETCH_HEAD`, as `git fetch` does)
    #[arg(long)]
    dry_run: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// Run `lesson sync`: exit 0 when synced, 1 on a real conflict (nothing changed).
pub fn run(root: &Path, args: SyncArgs) -> anyhow::Result<ExitCode> {
    let options = SyncOptions {
        remote: args.remote,
        branch: args.branch,
        message: args.message,
        dry_run: args.dry_run,
        stamp: super::stamp(root, None)?,
    };
    let report = sync::sync_with(root, &options, &super::progress::Bar::new())?;
    if args.format == Format::Json {
        println!("{}", report.to_json());
    } else {
        print_text(&report);
    }
    Ok(if report.conflicts.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_text(r: &SyncReport) {
    let would = if r.dry_run { "would " } else { "" };
    let at = format!("{} {}", r.remote, r.branch);
    if r.resumed {
        status!("finished an interrupted sync");
    }
    if !r.conflicts.is_empty() {
        eprintln!("lesson sync: the merge with {at} conflicts; nothing was changed:");
        for c in &r.conflicts {
            eprintln!("  {}: {}", c.path, c.what);
        }
        eprintln!(
            "your local changes are kept. To resolve: `git pull {} {}`, edit each file above (keep what both sides meant, remove the conflict markers), `git commit`, then `lesson sync` again",
            r.remote, r.branch
        );
        return;
    }
    match (&r.message, r.files.len()) {
        (Some(m), n) => status!(
            "{would}commit {n} bank file{}: {}",
            if n == 1 { "" } else { "s" },
            m.trim_end()
        ),
        (None, _) => status!("nothing to commit"),
    }
    if r.new_branch {
        status!("{at} does not exist yet: {would}create it");
    } else if r.fetched > 0 {
        status!(
            "fetched {} commit{} from {at}; {would}merge{}",
            r.fetched,
            if r.fetched == 1 { "" } else { "s" },
            if r.dry_run { " cleanly" } else { "d" }
        );
    } else {
        status!("{at} has nothing new");
    }
    for slug in &r.add_add {
        status!("`{slug}` was added on both sides: the remote's version stays, the local one was admitted as its duplicate");
    }
    if r.retries > 0 {
        status!(
            "the remote moved {} time{} while syncing; fetched and merged again",
            r.retries,
            if r.retries == 1 { "" } else { "s" }
        );
    }
    if r.pushed {
        status!("{would}push to {at}");
    } else {
        status!("nothing to push");
    }
}
