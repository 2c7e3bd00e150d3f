//! Flags and dispatch. Each command lives in its own module and returns an exit code:
//! 0 clean, 1 findings at error level (or a stale check), 2 usage or internal failure.
//!
//! The output conventions (colour, `--quiet`, `--verbose`, progress bars) are decided once, in
//! [`ui`]; commands print through the macros below.

/// `println!` unless `--quiet`: what a command did, for people (a writer's confirmation, a
/// summary). Data a command is asked for goes through `println!` itself.
macro_rules! status {
    ($($arg:tt)*) => {
        if !$crate::cli::ui::ui().quiet {
            println!($($arg)*)
        }
    };
}

/// `eprintln!` unless `--quiet`: a note or a summary on stderr (errors and warnings use
/// `eprintln!` itself).
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::cli::ui::ui().quiet {
            eprintln!($($arg)*)
        }
    };
}

/// `eprintln!` under `--verbose` only, as `lesson: ...`: context (the bank, timings, files
/// skipped).
macro_rules! verbose {
    ($($arg:tt)*) => {
        if $crate::cli::ui::ui().verbose {
            eprintln!("lesson: {}", format_args!($($arg)*))
        }
    };
}

mod add;
mod archive;
mod completions;
mod config;
mod dedup;
mod diff;
mod distill;
mod git;
mod index;
mod init;
mod lint;
mod list;
mod log;
#[cfg(feature = "mcp")]
mod mcp;
mod merge_file;
#[cfg(feature = "semantic")]
mod model;
mod new;
mod progress;
mod promote;
mod record;
mod review;
mod rule;
mod schema;
mod search;
mod show;
mod supersede;
mod sync;
mod ui;
mod watch;
mod who;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

/// Manage a git-versioned bank of AIP-11 LESSON.md files.
#[derive(Debug, Parser)]
#[command(name = "lesson", version, about, max_term_width = 100)]
pub struct Args {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// The flags every command takes.
#[derive(Debug, clap::Args)]
struct Global {
    /// The bank directory (default: $LESSON_DIR, else the nearest ancestor with lesson.toml,
    /// else ./lessons)
    #[arg(long, global = true, value_name = "BANK")]
    dir: Option<PathBuf>,
    /// When to colour output: `auto` (when the stream is a terminal and NO_COLOR is unset or
    /// empty), `always`, `never`
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ui::ColorChoice::Auto)]
    color: ui::ColorChoice,
    /// Print only errors, warnings and the data asked for: no summaries, notes, confirmations
    /// or progress bars
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Print more on stderr: the bank used, timings, files left out
    #[arg(short, long, global = true)]
    verbose: bool,
}

impl Args {
    /// The command line's arguments. `lesson search`, which agents run once a request, is
    /// parsed first with its own flags alone: building the whole command (every subcommand's
    /// flags and help) was 1.6 of the 8.3 ms of a search a watcher answers. Anything that
    /// parser does not accept (help, a flag out of place, an error) is parsed again against
    /// the whole command, which prints what it always did.
    pub fn from_env() -> Args {
        Args::search_line(std::env::args_os()).unwrap_or_else(Args::parse)
    }

    /// Command line `argv` (the program's name first) parsed by [`SearchLine`], when it is a
    /// `lesson search` that parser accepts.
    fn search_line(argv: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Args> {
        let mut argv = argv.into_iter();
        let first = argv.next()?;
        let mut rest = argv.peekable();
        rest.next_if(|a| a == "search")?;
        let only = SearchLine::try_parse_from(std::iter::once(first).chain(rest)).ok()?;
        Some(Args {
            global: only.global,
            command: Command::Search(only.search),
        })
    }
}

/// `lesson search`'s command line alone: the global flags and the subcommand's.
#[derive(Debug, Parser)]
#[command(name = "lesson search")]
struct SearchLine {
    #[command(flatten)]
    global: Global,
    #[command(flatten)]
    search: search::SearchArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check every lesson against AIP-11 and the bank's rules
    Lint(lint::LintArgs),
    /// Print the documentation of a rule, or of all rules
    Rule(rule::RuleArgs),
    /// Print the bank's resolved configuration (lesson.toml with defaults)
    Config,
    /// Write `_index.md` (or check it, or print it)
    Index(index::IndexArgs),
    /// Scaffold a new lesson from the bank's template and update `_index.md`
    New(new::NewArgs),
    /// Create a bank (lesson.toml, _index.md, .gitignore, .gitattributes), or add what an
    /// existing one lacks; registers the merge driver when in a git repository
    Init(init::InitArgs),
    /// List the bank's lessons
    List(list::ListArgs),
    /// Print one lesson
    Show(show::ShowArgs),
    /// A lesson's story: its commits (following renames), ledger events and supersession chain
    Log(log::LogArgs),
    /// Record an observed outcome in a lesson's ledger and update its counts and evidence
    Record(record::RecordArgs),
    /// List the lessons that need a human (quarantined, failure-dominant, expired, mixed, never
    /// applied); --approve releases one from quarantine
    Review(review::ReviewArgs),
    /// Mark lessons as replaced by a newer one (NEW's `supersedes`, OLD's ledger)
    Supersede(supersede::SupersedeArgs),
    /// Move lessons to `_archive/` (never deleted)
    Archive(archive::ArchiveArgs),
    /// Move a lesson into another bank (an included one, say) through that bank's `add` gate;
    /// this bank keeps it in `_archive/`
    Promote(promote::PromoteArgs),
    /// The lessons that apply to a request, for an agent's prompt
    Search(search::SearchArgs),
    /// List pairs of lessons that look like near-duplicates (advisory: exits 0)
    Dedup(dedup::DedupArgs),
    /// Admit candidate lessons (a LESSON.md or JSON): validate, deduplicate, write; all or
    /// nothing
    Add(add::AddArgs),
    /// Distill a completed run with an external judge: update matched lessons' counts, admit
    /// the lessons it proposes through the write gate
    Distill(distill::DistillArgs),
    /// Keep the index, `_index.md` and lint findings current as files change (until Ctrl-C)
    Watch(watch::WatchArgs),
    /// git's merge driver for bank files (`lesson merge-file %O %A %B %P`)
    #[command(hide = true)]
    MergeFile(merge_file::MergeFileArgs),
    /// Plain git: register the bank's merge driver in this clone (`lesson git install`)
    Git(git::GitArgs),
    /// Commit the bank's pending files, fetch, merge by the bank's rules (ledgers by union,
    /// counts and `_index.md` re-derived), push; never forced
    Sync(sync::SyncArgs),
    /// What a change does to the bank (lessons added, outcomes recorded, supersessions,
    /// archives, rewrites, `lint --base` findings), for a reviewer or a pull-request comment
    Diff(diff::DiffArgs),
    /// Sentence-embedding models for semantic retrieval: `lesson model fetch NAME` downloads
    /// one from the Hugging Face hub
    #[cfg(feature = "semantic")]
    Model(model::ModelArgs),
    /// Serve the bank to agents over the Model Context Protocol (stdio): tools, resources,
    /// the `lessons_for` prompt
    #[cfg(feature = "mcp")]
    Mcp(mcp::McpArgs),
    /// Print the JSON Schema of a lesson's frontmatter (for editors: `lesson schema >
    /// lesson.schema.json`)
    Schema,
    /// Print a shell's completion script (`lesson completions bash > /etc/bash_completion.d/lesson`)
    Completions(completions::CompletionsArgs),
    /// The man pages, for `cargo xtask man`: their names, or one page in roff
    #[command(name = "__man", hide = true)]
    Man(completions::ManArgs),
}

/// The output of a command that writes: text for people, or one JSON object for programs
/// (`lesson::report::writes::report`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
enum WriteFormat {
    /// Lines for people
    #[default]
    Text,
    /// One JSON object: what changed (files, ledger events) and the command's result
    Json,
}

/// Run a command, with this run's output conventions.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    ui::set(ui::Ui {
        color: args.global.color,
        quiet: args.global.quiet,
        verbose: args.global.verbose,
    });
    let started = std::time::Instant::now();
    let code = dispatch(args)?;
    verbose!("done in {:.1?}", started.elapsed());
    Ok(code)
}

fn dispatch(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Lint(a) => lint::run(&bank_dir(args.global.dir)?, a),
        Command::Rule(a) => rule::run(a),
        Command::Config => config::run(&bank_dir(args.global.dir)?),
        Command::Index(a) => index::run(&bank_dir(args.global.dir)?, a),
        Command::New(a) => new::run(&bank_dir(args.global.dir)?, a),
        Command::Init(a) => init::run(args.global.dir, a),
        Command::List(a) => list::run(&bank_dir(args.global.dir)?, a),
        Command::Show(a) => show::run(&bank_dir(args.global.dir)?, a),
        Command::Log(a) => log::run(&bank_dir(args.global.dir)?, a),
        Command::Record(a) => record::run(&bank_dir(args.global.dir)?, a),
        Command::Review(a) => review::run(&bank_dir(args.global.dir)?, a),
        Command::Supersede(a) => supersede::run(&bank_dir(args.global.dir)?, a),
        Command::Archive(a) => archive::run(&bank_dir(args.global.dir)?, a),
        Command::Promote(a) => promote::run(&bank_dir(args.global.dir)?, a),
        Command::Search(a) => search::run(&bank_dir(args.global.dir)?, a),
        Command::Dedup(a) => dedup::run(&bank_dir(args.global.dir)?, a),
        Command::Add(a) => add::run(&bank_dir(args.global.dir)?, a),
        Command::Distill(a) => distill::run(&bank_dir(args.global.dir)?, a),
        Command::Watch(a) => watch::run(&bank_dir(args.global.dir)?, a),
        Command::MergeFile(a) => merge_file::run(a),
        Command::Git(a) => git::run(&bank_dir(args.global.dir)?, a),
        Command::Sync(a) => sync::run(&bank_dir(args.global.dir)?, a),
        Command::Diff(a) => diff::run(&bank_dir(args.global.dir)?, a),
        #[cfg(feature = "semantic")]
        Command::Model(a) => model::run(|| bank_dir(args.global.dir), a),
        #[cfg(feature = "mcp")]
        Command::Mcp(a) => mcp::run(&bank_dir(args.global.dir)?, a),
        Command::Schema => schema::run(),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => completions::man(a),
    }
}

/// The bank directory: `--dir`, `LESSON_DIR`, the nearest ancestor with `lesson.toml`, `./lessons`.
fn bank_dir(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let env = std::env::var_os(lesson::bank::DIR_ENV).map(PathBuf::from);
    let root = lesson::bank::discover(dir.as_deref(), env.as_deref(), &cwd);
    // a rule `lesson.toml` names that does not exist is an error for every command (a
    // configuration that does not parse is reported by the command's own load)
    if let Ok(config) = lesson::config::Config::load(&root) {
        lesson::lint::check_config(&root, &config)
            .with_context(|| format!("cannot load the bank at {}", root.display()))?;
    }
    verbose!("bank {}", root.display());
    Ok(root)
}

/// Print a JSON value (pretty) on stdout.
fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// A writer's `--format json` report of what `journal` (the write door's) changed, on stdout.
fn print_write(
    command: &str,
    dry_run: bool,
    root: &Path,
    journal: &[lesson::edit::journal::Change],
    result: serde_json::Value,
) -> anyhow::Result<()> {
    print_json(&lesson::report::writes::report(
        command, dry_run, root, journal, result,
    ))
}

/// The environment variable that fixes "now" (tests, reproducible runs).
const NOW_ENV: &str = "LESSON_NOW";

/// The clock of this run: `LESSON_NOW` when set, else the system clock.
fn clock() -> anyhow::Result<lesson::bank::Clock> {
    match std::env::var(NOW_ENV) {
        Ok(v) => match v.parse() {
            Ok(at) => Ok(lesson::bank::Clock::Fixed(at)),
            Err(_) => anyhow::bail!("{NOW_ENV}={v} is not an RFC 3339 timestamp"),
        },
        Err(_) => Ok(lesson::bank::Clock::System),
    }
}

/// "Now" for this run (see [`clock`]).
fn now() -> anyhow::Result<jiff::Timestamp> {
    Ok(clock()?.now())
}

/// Load a bank with context for the error message.
fn load(root: &Path) -> anyhow::Result<lesson::Bank> {
    lesson::lint::load(root, now()?)
        .with_context(|| format!("cannot load the bank at {}", root.display()))
}

/// Let go of a bank (or its rows) the process is done with without freeing it: the process
/// exits next, and freeing 100,000 parsed lessons piece by piece (from threads other than the
/// ones that allocated them) costs more than the OS reclaiming the memory at once.
fn release<T>(bank: T) {
    std::mem::forget(bank);
}

/// Load a bank's frontmatter only (no bodies), for commands that do not lint.
/// The lessons' embeddings for dedup when `[retrieve] model` names a model; none without one.
/// A model that cannot be used is a warning, and `command` compares words alone.
fn dedup_embeddings(
    root: &Path,
    bank: &lesson::Bank,
    command: &str,
) -> Option<lesson::dedup::Embeddings> {
    match lesson::dedup::embeddings_of(root, &bank.config) {
        Ok(embeddings) => embeddings,
        Err(problem) => {
            eprintln!("warning: [retrieve] model: {problem}; {command} compares words alone");
            None
        }
    }
}

fn load_lessons(root: &Path) -> anyhow::Result<lesson::Bank> {
    lesson::lint::load_lessons(root, now()?)
        .with_context(|| format!("cannot load the bank at {}", root.display()))
}

/// Who and when for ledger events in the bank at `root`: `--by` (else [`who::recorder`]),
/// `LESSON_NOW`.
fn stamp(root: &Path, by: Option<String>) -> anyhow::Result<lesson::curate::Stamp> {
    let by = by.unwrap_or_else(|| who::recorder(root));
    if by.trim().is_empty() || by.contains(['\n', '\r']) {
        anyhow::bail!("--by needs an id on one line, such as ana@laptop");
    }
    Ok(lesson::curate::Stamp { at: now()?, by })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("lesson")
            .chain(words.iter().copied())
            .map(Into::into)
            .collect()
    }

    #[test]
    fn the_search_line_parses_a_search_as_the_whole_command_does() {
        let lines: &[&[&str]] = &[
            &["search", "tool call"],
            &[
                "search", "--dir", "/bank", "-k", "10", "--budget", "1000000", "--format", "json",
                "--", "-x y",
            ],
            &[
                "search",
                "a",
                "b",
                "--tag",
                "ci",
                "--tag",
                "git",
                "--inferred-tags",
                "gate",
            ],
            &[
                "search",
                "q",
                "--operator",
                "op",
                "--role",
                "r",
                "--skill",
                "s",
                "--include-expired",
            ],
            &[
                "search",
                "q",
                "--explain",
                "some-slug",
                "--color",
                "never",
                "-v",
            ],
            &[
                "search", "q", "--log", "run-1", "--by", "me", "-q", "--format", "text",
            ],
            &["search"],
            &["search", "-"],
        ];
        for words in lines {
            let whole = Args::try_parse_from(line(words)).expect("the whole command parses it");
            let only = Args::search_line(line(words)).expect("the search line parses it");
            assert_eq!(format!("{only:?}"), format!("{whole:?}"), "{words:?}");
        }
    }

    #[test]
    fn what_the_search_line_does_not_parse_is_left_to_the_whole_command() {
        let lines: &[&[&str]] = &[
            // help and version print what the whole command prints
            &["search", "--help"],
            &["search", "-h"],
            &["search", "--version"],
            // errors too
            &["search", "q", "--nope"],
            &["search", "q", "-q", "-v"],
            &["search", "q", "--by", "me"],
            &["search", "q", "--log", "r", "--explain", "s"],
            &["search", "-k", "many"],
            // not a search, or a global flag before it
            &["list"],
            &["--dir", "/bank", "search", "q"],
            &[],
        ];
        for words in lines {
            assert!(Args::search_line(line(words)).is_none(), "{words:?}");
        }
    }
}
