//! `lesson lint`: check the bank, print findings, optionally fix.

use std::io::{IsTerminal, Write};
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
    /// Run only these rules (codes or names, comma-separated or repeated)
    #[arg(long, value_delimiter = ',', value_name = "RULE")]
    select: Vec<String>,
    /// Exit 0 even when there are error-level findings
    #[arg(long)]
    exit_zero: bool,
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

/// Run `lesson lint`.
pub fn run(root: &Path, args: LintArgs) -> anyhow::Result<ExitCode> {
    let selection = Selection {
        paths: args.paths.clone(),
        rules: args.select.clone(),
    };
    for p in &selection.paths {
        if !p.exists() {
            anyhow::bail!("{}: no such file or directory", p.display());
        }
    }
    let now = lesson::bank::now_from_env()?;
    let format = Format::from(args.output_format);
    let human = matches!(format, Format::Full | Format::Concise);
    let stdout = std::io::stdout();
    let options = RenderOptions {
        color: stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let mut out = stdout.lock();

    let mut would_change = false;
    let (diagnostics, summary_line, checked) = if args.fix || args.diff {
        let run_fix = || -> anyhow::Result<fix::Fixed> {
            let fixed = fix::fix(root, Default::default(), &selection, args.unsafe_fixes, now)
                .with_context(|| format!("cannot load the bank at {}", root.display()))?;
            if !args.diff {
                fix::write(root, &fixed.changes).context("cannot write fixes")?;
            }
            Ok(fixed)
        };
        // fixing is a read-modify-write: it holds the lock like every other writer
        let fixed = if args.diff {
            run_fix()?
        } else {
            super::lock(root)?.with(run_fix)??
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
        let (bank, diagnostics) = lint::lint_report(root, now, &selection)
            .with_context(|| format!("cannot load the bank at {}", root.display()))?;
        write!(
            out,
            "{}",
            report::render(
                format,
                &diagnostics,
                &bank.sources_for(&diagnostics).collect::<Sources>(),
                options
            )
        )?;
        let checked = bank.documents.len();
        super::release(bank);
        (diagnostics, None, checked)
    };

    let summary = Summary::of(&diagnostics);
    let line = summary_line_for(&summary, checked, args.fix || args.diff, summary_line);
    if human && !args.diff {
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

fn summary_line_for(s: &Summary, checked: usize, fixing: bool, fix_note: Option<String>) -> String {
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
        if s.fixable > 0 && !fixing {
            line.push_str(&format!(
                " ({} fixable with `lesson lint --fix`)",
                s.fixable
            ));
        }
        parts.push(line);
    }
    parts.join("; ")
}
