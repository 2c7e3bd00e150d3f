//! `lesson watch`: keep the bank's index, `_index.md` and lint findings current as files
//! change, until Ctrl-C (or SIGTERM).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use lesson::report::{self, Format, RenderOptions, Sources};
use lesson::watch::{Batch, Options, Stopper, Watch};

/// Flags of `lesson watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Scan the bank at an interval instead of using the file system's events (for network
    /// and virtual file systems that send none)
    #[arg(long)]
    poll: bool,
    /// Apply a batch of changes once none came for this long; a change is visible to searches
    /// after it (and the time to apply the batch)
    #[arg(long, value_name = "MS", default_value_t = 200)]
    debounce: u64,
    /// With --poll: how often to scan the bank
    #[arg(long, value_name = "MS", default_value_t = 1000, requires = "poll")]
    poll_interval: u64,
    /// Do not answer searches: `lesson search` then opens the vouched index itself
    #[arg(long)]
    no_serve: bool,
}

/// Run `lesson watch`.
pub fn run(root: &Path, args: WatchArgs) -> anyhow::Result<ExitCode> {
    // the handler goes in first, so that a Ctrl-C during the first check ends cleanly too
    let asked = Arc::new(AtomicBool::new(false));
    let stopper: Arc<Mutex<Option<Stopper>>> = Arc::new(Mutex::new(None));
    {
        let (asked, stopper) = (asked.clone(), stopper.clone());
        ctrlc::set_handler(move || {
            asked.store(true, Ordering::SeqCst);
            if let Some(s) = stopper.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                s.stop();
            }
        })
        .context("cannot handle Ctrl-C")?;
    }
    let options = Options {
        debounce: Duration::from_millis(args.debounce),
        poll: args
            .poll
            .then(|| Duration::from_millis(args.poll_interval.max(1))),
        clock: super::clock()?,
    };
    let (mut watch, first) = Watch::start(root, options)
        .with_context(|| format!("cannot watch the bank at {}", root.display()))?;
    *stopper.lock().unwrap_or_else(|e| e.into_inner()) = Some(watch.stopper());
    if asked.load(Ordering::SeqCst) {
        return Ok(ExitCode::SUCCESS);
    }
    let how = match options.poll {
        Some(every) => format!("polling every {} ms", every.as_millis()),
        None => "file-system events".to_string(),
    };
    note!(
        "watching {} ({how}, debounce {} ms); Ctrl-C to stop",
        root.display(),
        args.debounce
    );
    if !args.no_serve {
        if let Err(e) = watch.serve(lesson::report::hits::print) {
            eprintln!("warning: cannot answer searches ({e}); they open the index themselves");
        }
    }
    if let Some(problem) = watch.retriever().semantic_problem() {
        eprintln!("warning: [retrieve] model: {problem}; the index is kept without vectors");
    }
    show(&first);
    watch.run(show);
    Ok(ExitCode::SUCCESS)
}

/// Print a batch's findings (concise, to stdout) and warnings (stderr); nothing else.
fn show(batch: &Batch) {
    for warning in &batch.warnings {
        eprintln!("warning: {warning}");
    }
    if batch.diagnostics.is_empty() {
        return;
    }
    let text = report::render(
        Format::Concise,
        &batch.diagnostics,
        &Sources::default(),
        RenderOptions::default(),
    );
    let mut out = std::io::stdout().lock();
    // a closed pipe is no reason to stop keeping the index current
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}
