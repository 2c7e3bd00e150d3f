//! `lesson lint`: check the bank, print findings, optionally fix.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lesson::diagnostic::Severity;
use lesson::lint::{self, fix, Selection, Summary};
use lesson::report::{self, Format, RenderOptions, Sources};

/// Flags of `lesson lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// Files or directories to report on (default: the whole bank); bank-wide rules still see
    /// every lesson
    paths: Vec<PathBuf>,
    /// How to print findings
    #[arg(long, value_enum, default_value_t = OutputFormat::Full)]
    output_format: OutputFormat,
    /// Apply safe fixes (span edits; files are replaced atomically)
    #[arg(long)]
    fix: bool,
    /// Also apply unsafe fixes (with --fix or --diff)
    #[arg(long)]
    unsafe_fixes: bool,
    /// Print the fixes as a unified diff instead of writing them; exit 1 if there are any
    #[arg(long)]
    diff: bool,
    /// Run only these rules: codes, code prefixes (`S`, `S01`), names or `ALL`, comma-separated
    /// or repeated
    #[arg(long, value_delimiter = ',', value_name = "RULE", value_parser = parse_selector)]
    select: Vec<String>,
    /// Exit 0 even when there are error-level findings
    #[arg(long)]
    exit_zero: bool,
    /// Also check the change from this revision to the working tree (or `--head`) as a pull
    /// request: ledgers only grow, counts move with outcomes, nothing deleted (rules G001..G006)
    #[arg(long, value_name = "REV", conflicts_with_all = ["fix", "diff"])]
    base: Option<String>,
    /// With --base: compare with this revision instead of the working tree (the G rules only:
    /// the other rules read the working tree)
    #[arg(long, value_name = "REV", requires = "base")]
    head: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputFormat {
    Full,
    Concise,
    Json,
    Github,
    Sarif,
}

impl From<OutputFormat> for Format {
    fn from(f: OutputFormat) -> Self {
        match f {
            OutputFormat::Full => Format::Full,
            OutputFormat::Concise => Format::Concise,
            OutputFormat::Json => Format::Json,
            OutputFormat::Github => Format::Github,
            OutputFormat::Sarif => Format::Sarif,
        }
    }
}

/// Every path to report on must exist and lie in the bank (after symlinks are resolved): a
/// path outside it would be reported on by no rule, and "all clean" would be a false pass.
fn check_paths(root: &Path, paths: &[PathBuf]) -> anyhow::Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    // a bank that does not exist is reported by the load, with its own message
    let Ok(bank) = root.canonicalize() else {
        return Ok(());
    };
    for p in paths {
        let real = p.canonicalize().map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                "no such file or directory".to_string()
            } else {
                e.to_string()
            };
            anyhow::anyhow!("{}: {why} (the bank is {})", p.display(), bank.display())
        })?;
        if !real.starts_with(&bank) {
            anyhow::bail!(
                "{} is outside the bank at {}: `lesson lint` checks the bank's files only \
                 (pass `--dir` to lint another bank)",
                p.display(),
                bank.display()
            );
        }
    }
    Ok(())
}

/// A `--select` entry that names at least one rule; anything else is a usage error (exit 2).
fn parse_selector(value: &str) -> Result<String, lint::UnknownRule> {
    lint::check_selector(value).map(|()| value.to_string())
}

/// Run `lesson lint`.
pub fn run(root: &Path, args: LintArgs) -> anyhow::Result<ExitCode> {
    let selection = Selection {
        paths: args.paths.clone(),
        rules: args.select.clone(),
    };
    check_paths(root, &selection.paths)?;
    let now = super::now()?;
    let format = Format::from(args.output_format);
    let human = matches!(format, Format::Full | Format::Concise);
    let options = RenderOptions {
        color: super::ui::ui().color_stdout(),
    };
    let mut out = std::io::stdout().lock();

    let mut would_change = false;
    let (diagnostics, summary_line, checked) = if args.fix || args.diff {
        let fixed = if args.diff {
            fix::fix(root, Default::default(), &selection, args.unsafe_fixes, now)
                .with_context(|| format!("cannot load the bank at {}", root.display()))?
        } else {
            fix::fix_and_write(root, &selection, args.unsafe_fixes, now)?
        };
        if args.diff {
            would_change = !fixed.changes.is_empty();
            write!(out, "{}", fix::unified_diff(&fixed.changes))?;
        }
        let verb = if args.diff { "would fix" } else { "fixed" };
        let files = fixed.changes.len();
        let note = format!(
            "{verb} {} finding{} in {files} file{}",
            fixed.applied,
            plural(fixed.applied),
            plural(files)
        );
        let checked = fixed.bank.documents.len();
        let text = if args.diff {
            String::new()
        } else {
            report::render(
                format,
                &fixed.remaining,
                &fixed
                    .bank
                    .sources_for(&fixed.remaining)
                    .collect::<Sources>(),
                options,
            )
        };
        write!(out, "{text}")?;
        (fixed.remaining, Some(note), checked)
    } else {
        let base = match &args.base {
            Some(base) => Some(
                lesson::pr::check(root, base, args.head.as_deref(), &selection)
                    .with_context(|| format!("cannot compare the bank with `{base}`"))?,
            ),
            None => None,
        };
        let plain = base.is_none() || lesson::pr::runs_plain_lint(&selection, args.head.is_some());
        let (bank, mut diagnostics) = if plain {
            let progress = super::progress::Bar::new();
            let (bank, found) = lint::lint_report_with(root, now, &selection, &progress)
                .with_context(|| format!("cannot load the bank at {}", root.display()))?;
            (Some(bank), found)
        } else {
            (None, Vec::new())
        };
        let mut checked = bank.as_ref().map_or(0, |b| b.documents.len());
        if let Some(base) = &base {
            diagnostics.extend(base.diagnostics.iter().cloned());
            diagnostics.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            if !plain {
                checked = base.changed;
            }
        }
        let sources: Sources = bank
            .iter()
            .flat_map(|b| b.sources_for(&diagnostics))
            .chain(base.iter().flat_map(|b| &b.sources))
            .collect();
        write!(
            out,
            "{}",
            report::render(format, &diagnostics, &sources, options)
        )?;
        drop(sources);
        super::release(bank);
        (diagnostics, None, checked)
    };

    let summary = Summary::of(&diagnostics);
    let line = summary_line_for(
        &summary,
        checked,
        args.fix || args.diff,
        args.unsafe_fixes,
        summary_line,
    );
    if super::ui::ui().quiet {
        // the findings are the data asked for; the summary is not
    } else if human && !args.diff {
        writeln!(out, "{line}")?;
    } else {
        eprintln!("{line}");
    }
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    // `--diff` is a check: it fails when fixes would change a file, whatever else remains
    let failing = if args.diff { would_change } else { failed };
    Ok(if failing && !args.exit_zero {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The last line: what was fixed, files checked, counts by severity, and (as ruff says it)
/// how many findings `--fix` would fix and how many unsafe fixes it leaves out.
fn summary_line_for(
    s: &Summary,
    checked: usize,
    fixing: bool,
    unsafe_fixes: bool,
    fix_note: Option<String>,
) -> String {
    let mut parts = Vec::new();
    if let Some(note) = fix_note {
        parts.push(note);
    }
    let files = format!("{checked} file{}", plural(checked));
    if s.errors + s.warnings + s.infos == 0 {
        parts.push(format!("{files} checked: all clean"));
    } else {
        let mut counts = Vec::new();
        for (n, what) in [
            (s.errors, "error"),
            (s.warnings, "warning"),
            (s.infos, "info"),
        ] {
            if n > 0 {
                counts.push(format!(
                    "{n} {what}{}",
                    if what == "info" { "" } else { plural(n) }
                ));
            }
        }
        let mut line = format!("{files} checked: {}", counts.join(", "));
        // only the fixes `--fix` applies count as fixable; unsafe ones are hidden behind
        // `--unsafe-fixes` unless it was given
        let (fixable, hidden) = if unsafe_fixes {
            (s.fixable + s.unsafe_fixable, 0)
        } else {
            (s.fixable, s.unsafe_fixable)
        };
        let command = if unsafe_fixes {
            "lesson lint --fix --unsafe-fixes"
        } else {
            "lesson lint --fix"
        };
        let mut notes = Vec::new();
        if fixable > 0 && !fixing {
            notes.push(format!("{fixable} fixable with `{command}`"));
        } else if hidden > 0 {
            notes.push("no fixes available".to_string());
        }
        if hidden > 0 {
            notes.push(format!(
                "{hidden} hidden fix{} can be enabled with the `--unsafe-fixes` option",
                if hidden == 1 { "" } else { "es" }
            ));
        }
        if !notes.is_empty() {
            line.push_str(&format!(" ({})", notes.join("; ")));
        }
        parts.push(line);
    }
    parts.join("; ")
}
