//! `lesson sync [--remote NAME] [--branch NAME] [--from BRANCH | --merge-branches [PATTERN]]
//! [--message TEXT] [--dry-run]`: commit the bank's pending files, fetch, merge by the bank's
//! rules, push.

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
    /// The remote branch to push to (default: the branch's upstream branch, else the current
    /// branch's name)
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// A runtime on a branch of its own (`--branch lesson/RUNTIME`): also receive BRANCH (the
    /// main branch), merged after the own branch; its version of a lesson added on both sides
    /// stays
    #[arg(long, value_name = "BRANCH", conflicts_with = "merge_branches")]
    from: Option<String>,
    /// A merger: merge every remote branch matching PATTERN (a glob, `*` also matching `/`)
    /// that the branch does not contain yet, one after another, by the same rules, then push
    /// the branch; its version of a lesson added on both sides stays
    #[arg(
        long,
        value_name = "PATTERN",
        num_args = 0..=1,
        default_missing_value = "lesson/*"
    )]
    merge_branches: Option<String>,
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
        from: args.from,
        merge_branches: args.merge_branches,
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
        // the conflicts are all of one merge: the first that conflicted
        let branch = r.conflicts.first().map_or(r.branch.as_str(), |c| &c.branch);
        eprintln!(
            "lesson sync: the merge with {} {branch} conflicts; nothing was changed:",
            r.remote
        );
        for c in &r.conflicts {
            eprintln!("  {}: {}", c.path, c.what);
        }
        eprintln!(
            "your local changes are kept. To resolve: `git pull {} {branch}`, edit each file above (keep what both sides meant, remove the conflict markers), `git commit`, then `lesson sync` again",
            r.remote
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
    for b in &r.merged_branches {
        status!(
            "{would}merge {} {} at {} ({} commit{})",
            r.remote,
            b.branch,
            short(&b.commit),
            b.fetched,
            if b.fetched == 1 { "" } else { "s" }
        );
    }
    if !r.contained_branches.is_empty() {
        let n = r.contained_branches.len();
        let names: Vec<&str> = r
            .contained_branches
            .iter()
            .take(5)
            .map(|b| b.branch.as_str())
            .collect();
        let more = if n > 5 {
            format!(" and {} more", n - 5)
        } else {
            String::new()
        };
        status!(
            "{n} branch{} merged already: {}{more}",
            if n == 1 { "" } else { "es" },
            names.join(", ")
        );
    } else if r.pattern.is_some() && r.merged_branches.is_empty() {
        status!(
            "no branch of {} matches `{}`",
            r.remote,
            r.pattern.as_deref().unwrap_or_default()
        );
    }
    let (kept, other) = if r.pattern.is_some() {
        (format!("the version on {at} stays"), "the merged branch's")
    } else {
        ("the remote's version stays".to_string(), "the local one")
    };
    for slug in &r.add_add {
        status!("`{slug}` was added on both sides: {kept}, {other} was admitted as its duplicate");
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

/// A commit's hash, abbreviated as git shows it.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
