//! `lesson distill --run RUN.json --judge CMD [--timeout SECS]`: the distill contract with an
//! external judge.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use lesson::curate::add::AddError;
use lesson::distill::{self, DistillError, Distilled, Options, Run};
use lesson::ledger::{Counts, Delta};

use super::add::{admitted_line, print_rejection};

/// Flags of `lesson distill`.
#[derive(Debug, Args)]
pub struct DistillArgs {
    /// The completed run, as JSON: `id`, `outcome` (success|failure), optionally `request`,
    /// `tags`, `operator`, `role`, `skill`, `kind`, and anything else for the judge (`-` reads
    /// standard input)
    #[arg(long = "run", value_name = "RUN.json")]
    run: PathBuf,
    /// The judge: a shell command that reads the request (JSON) on stdin and prints its answer
    /// (JSON) on stdout; see the README for the protocol
    #[arg(long, value_name = "CMD")]
    judge: String,
    /// Seconds the judge may take; then it is killed and nothing is written
    #[arg(long, value_name = "SECS", default_value_t = 300.0, value_parser = seconds)]
    timeout: f64,
    /// Who records the ledger events (default: $LESSON_BY, else $USER@hostname)
    #[arg(long, value_name = "ID")]
    by: Option<String>,
    /// Output format: text, or JSON (what changed: files, ledger events, counts)
    #[arg(long, value_enum, default_value_t = super::WriteFormat::Text)]
    format: super::WriteFormat,
}

fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err("expected a number of seconds above 0, at most 86400, such as 120".into()),
    }
}

/// Run `lesson distill`.
pub fn run(root: &Path, args: DistillArgs) -> anyhow::Result<ExitCode> {
    let shown = args.run.display().to_string();
    let bytes = if shown == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
            .context("cannot read the run from standard input")?;
        buf
    } else {
        std::fs::read(&args.run).with_context(|| format!("cannot read {shown}"))?
    };
    let run = Run::parse(&bytes).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
    let stamp = super::stamp(root, args.by)?;
    let options = Options {
        judge: args.judge,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let json = args.format == super::WriteFormat::Json;
    let (distilled, journal) =
        lesson::edit::journal::recording(|| distill::distill(root, &run, &options, &stamp));
    let report = match distilled {
        Ok(done) if json => {
            let result = lesson::report::writes::distilled(root, &run, &done);
            super::print_write("distill", false, root, &journal, result)?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(DistillError::Gate(rejection)) if json => {
            let envelope =
                lesson::report::envelope::Envelope::of_add(&AddError::Rejected(rejection));
            super::print_json(&envelope.to_value())?;
            eprintln!(
                "error: the write gate refused the judge's answer for run {}; nothing was written",
                run.id
            );
            return Ok(ExitCode::from(1));
        }
        Ok(Distilled::Already { ledger, line, .. }) => {
            status!(
                "run {} is distilled already ({}:{line} names it); nothing to do",
                run.id,
                ledger.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        Ok(Distilled::TooShort { steps, min_steps }) => {
            status!(
                "run {} has {steps} step{} in its trajectory, fewer than `[distill] min-steps` = {min_steps}; skipped, nothing written",
                run.id,
                if steps == 1 { "" } else { "s" }
            );
            return Ok(ExitCode::SUCCESS);
        }
        Ok(Distilled::Done(report)) => report,
        Err(DistillError::Gate(rejection)) => {
            print_rejection(&rejection);
            let n = rejection.errors();
            eprintln!(
                "error: the write gate refused the judge's answer for run {} ({n} error{}); nothing was written",
                run.id,
                if n == 1 { "" } else { "s" }
            );
            return Ok(ExitCode::from(1));
        }
        Err(e @ (DistillError::Judge(_) | DistillError::Garbage { .. })) => return Err(e.into()),
        Err(e @ DistillError::Add(AddError::PartlyWritten(_))) => return Err(e.into()),
        Err(e) => return Err(anyhow::Error::new(e).context("nothing was written")),
    };
    if let Some(problem) = &report.semantic_problem {
        eprintln!("warning: [retrieve] model: {problem}; candidates were compared by words alone");
    }
    print_rejection(&report.warnings);
    let matched = if report.matched.is_empty() {
        "no lesson matched".to_string()
    } else {
        format!("matched {}", report.matched.join(", "))
    };
    status!("run {} ({}): {matched}", run.id, run.outcome.as_str());
    for (verdict, r) in &report.recorded {
        let what = format!("{}, run {}", verdict.applied.as_str(), run.outcome.as_str());
        let path = r.path.display();
        if !r.appended {
            status!(
                "{path}: {what} is recorded for this run already; counts {}",
                r.after
            );
        } else if r.delta == Delta::default() {
            status!("{path}: {what}: evidence added; counts stay {}", r.after);
        } else {
            let before = Counts {
                success_count: r.after.success_count - r.delta.success,
                failure_count: r.after.failure_count - r.delta.failure,
            };
            status!("{path}: {what}: counts {before} -> {}", r.after);
        }
    }
    for (slug, why) in &report.skipped {
        eprintln!("warning: verdict on `{slug}` not recorded: {why}");
    }
    for (label, why) in &report.dropped {
        note!("{label}: dropped: {why}");
    }
    for (label, kind) in &report.redacted {
        note!("{label}: a possible {kind} was redacted (`[distill] secrets = \"redact\"`)");
    }
    for a in &report.admitted {
        status!("{}", admitted_line(a, ""));
    }
    if !report.changed {
        status!("nothing changed");
    }
    Ok(ExitCode::SUCCESS)
}
