use std::path::Path;

use lesson::curate::{record, Stamp};
use lesson::ledger::{Applied, RunOutcome};
use lesson::retrieve::{Request, Retriever};

type Error = Box<dyn std::error::Error>;

/// Run `agent` on each turn with the lessons that apply, then record how each run ended.
pub fn serve(bank: &Path, turns: &[&str], agent: impl Fn(&str) -> bool) -> Result<(), Error> {
    let mut lessons = Retriever::open(bank)?; // once: the index stays open between turns
    for (i, turn) in turns.iter().enumerate() {
        let run_id = format!("run-{i}");
        let answer = lessons.answer(&Request::new(*turn).role("researcher"))?; // before the turn
        lessons.log_shown(&answer, &run_id, "my-runtime")?; // retrieval accounting: shown
        let ok = agent(&format!("{}\n{turn}", answer.prompt.text));
        let run = if ok {
            RunOutcome::Success
        } else {
            RunOutcome::Failure
        };
        for hit in &answer.hits {
            // after: each lesson shown was followed, in a run that succeeded or failed
            let outcome = record::Request::new(&hit.slug, Applied::Followed, run, &run_id);
            record::record(bank, &outcome, &Stamp::now("my-runtime"))?;
        }
    }
    Ok(())
}

fn main() -> Result<(), Error> {
    let bank = std::env::args()
        .nth(1)
        .ok_or("usage: cargo run --example embed -- BANK")?;
    serve(
        Path::new(&bank),
        &["summarise the attached paper"],
        |prompt| !prompt.is_empty(),
    )
}
