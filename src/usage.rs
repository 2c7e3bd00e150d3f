//! Retrieval accounting: which lessons the searches logged for a run showed, and what became of
//! them, so that the bank knows how often a lesson is shown and how often showing it helped.
//!
//! **The retrieval log**, `_log/_shown.jsonl` ([`crate::layout::SHOWN_LOG`]): `lesson search
//! --log RUN` (the library: [`log_shown`]; MCP: `search` with `run_id`) appends one line per
//! search, whatever K is, naming the run and the lessons shown, best first:
//!
//! ```text
//! {"at":"2026-11-26T10:00:00Z","event":"shown","by":"agent@host","run":"r_812","slugs":["a","b"]}
//! ```
//!
//! It is append-only and beside the ledgers, so the ledgers' `_log/*.jsonl merge=union`
//! attribute (written by `lesson init`) and `lesson sync`'s ledger rule merge two clones' logs
//! by keeping both sides' lines; its name starts with `_`, which no slug can, so it is no
//! lesson's ledger. No lesson file is rewritten for it, and the search path never reads it
//! (unless `[retrieve] usage-weight` asks for it).
//!
//! **The figures of a lesson** ([`Usage`]), each counted once per run, so that a line repeated
//! by a merge, or a run that searched twice, counts once:
//! - `shown`: the runs whose logged searches showed it; `last_shown`: the newest such line;
//! - `followed`: the runs among those for which an outcome with `applied: followed` is recorded
//!   in its ledger (`lesson record --run RUN`, or evidence citing the run; `lesson distill`'s
//!   verdicts cite the run); an outcome is linked to the run [`OutcomeEvent::linked_run`] names;
//! - `helped`: the followed runs that succeeded;
//! - `utility = helped / shown` (none while it was never shown).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::edit::EditError;
use crate::ledger::{Applied, Ledger, LedgerError, OutcomeEvent, RunOutcome};

pub use crate::layout::{shown_log_path, SHOWN_LOG};

/// The longest run id the log takes (as `lesson distill` takes a run's id).
pub const MAX_RUN_CHARS: usize = 256;

/// Retrieval accounting could not be done.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    /// The run id is unusable.
    #[error("the run id {run:?} {why}")]
    InvalidRun {
        /// The id as given.
        run: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The log could not be written.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The log or a ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Check a run id: one line of at most [`MAX_RUN_CHARS`] characters, not empty, no control
/// characters.
pub fn check_run(run: &str) -> Result<(), UsageError> {
    let why = if run.trim().is_empty() {
        Some("is empty")
    } else if run.chars().count() > MAX_RUN_CHARS {
        Some("is longer than 256 characters")
    } else if run.chars().any(char::is_control) {
        Some("has a line break or another control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(UsageError::InvalidRun {
            run: run.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

/// The log line of one search: `at` (whole seconds, UTC), `by`, the run and the slugs shown.
pub fn shown_line(at: jiff::Timestamp, by: &str, run: &str, slugs: &[&str]) -> String {
    let at = jiff::Timestamp::from_second(at.as_second()).unwrap_or(at);
    format!(
        "{{\"at\":{},\"event\":\"shown\",\"by\":{},\"run\":{},\"slugs\":{}}}\n",
        Value::from(at.to_string()),
        Value::from(by),
        Value::from(run),
        serde_json::to_string(slugs).expect("strings serialize")
    )
}

/// Log that a search for run `run` showed `slugs` (best first): one line appended to
/// `_log/_shown.jsonl` under the bank's lock. Nothing is written when no lesson was shown
/// (returns `false`). The append is not fsynced: a line lost to a power cut costs one count,
/// and a search does not wait for the disk.
pub fn log_shown(
    root: &Path,
    run: &str,
    slugs: &[&str],
    at: jiff::Timestamp,
    by: &str,
) -> Result<bool, UsageError> {
    check_run(run)?;
    if slugs.is_empty() {
        return Ok(false);
    }
    let line = shown_line(at, by, run, slugs);
    let path = shown_log_path(root);
    let dir = root.join(crate::layout::LOG_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| EditError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    crate::edit::BankLock::open(root)?
        .with_unswept(|| crate::edit::append_with(root, &path, line.as_bytes(), false))??;
    Ok(true)
}

/// One lesson's retrieval figures (see the module's documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Runs whose logged searches showed it.
    pub shown: u64,
    /// When a logged search last showed it.
    pub last_shown: Option<jiff::Timestamp>,
    /// Runs among those that followed it (an outcome with `applied: followed`).
    pub followed: u64,
    /// Followed runs that succeeded.
    pub helped: u64,
}

impl Usage {
    /// `helped / shown`, none while it was never shown.
    pub fn utility(&self) -> Option<f64> {
        (self.shown > 0).then(|| self.helped as f64 / self.shown as f64)
    }

    /// The ranking factor of `[retrieve] usage-weight` `w` (0 to 1): `(1 − w) + w × (helped +
    /// 1) / (shown + 2)`, the utility smoothed so that a lesson never shown counts 0.5. With
    /// `w = 0`, 1.
    pub fn rank_factor(&self, w: f64) -> f64 {
        let smoothed = (self.helped as f64 + 1.0) / (self.shown as f64 + 2.0);
        (1.0 - w) + w * smoothed
    }
}

/// A listing order by retrieval figures (`lesson list --sort shown|utility`), most first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Most shown first, then most recently shown.
    Shown,
    /// Highest utility first; lessons never shown last; then most shown.
    Utility,
}

impl SortKey {
    /// Compare two lessons' figures, the one to list first being `Less`; equal figures are
    /// `Equal` (the caller's order, by slug, stays).
    pub fn compare(self, a: &Usage, b: &Usage) -> Ordering {
        let by_shown = || {
            b.shown
                .cmp(&a.shown)
                .then_with(|| b.last_shown.cmp(&a.last_shown))
        };
        match self {
            SortKey::Shown => by_shown(),
            SortKey::Utility => match (a.utility(), b.utility()) {
                (Some(x), Some(y)) => y.total_cmp(&x).then_with(by_shown),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            },
        }
    }
}

impl SortKey {
    /// Sort `items` (a listing, by slug) by this key, `slug` naming each item's lesson and
    /// `figures` holding the figures by slug (a lesson missing from it was never shown); equal
    /// figures keep their order (the sort is stable).
    pub fn sort<T>(
        self,
        items: &mut [T],
        figures: &HashMap<String, Usage>,
        slug: impl Fn(&T) -> &str,
    ) {
        let of = |t: &T| figures.get(slug(t)).copied().unwrap_or_default();
        items.sort_by(|a, b| self.compare(&of(a), &of(b)));
    }
}

/// The figures of every lesson a logged search showed in the bank at `root`, by slug, and
/// whether the bank has a retrieval log at all.
pub fn figures(root: &Path) -> Result<(HashMap<String, Usage>, bool), UsageError> {
    let log = ShownLog::read(root)?;
    Ok((log.figures(root)?, log.exists))
}

/// What one lesson's lines say: the runs that showed it, and the newest line.
#[derive(Debug, Clone, Default)]
struct Seen {
    runs: HashSet<u32>,
    last: Option<jiff::Timestamp>,
}

/// The retrieval log as read: per lesson, the runs that showed it.
#[derive(Debug, Clone, Default)]
pub struct ShownLog {
    /// Whether the bank has a retrieval log (a search was ever logged).
    pub exists: bool,
    /// Lines that are whole `shown` events.
    pub searches: u64,
    /// Lines that are not (a torn append; another event); ignored.
    pub skipped: u64,
    runs: HashMap<String, u32>,
    seen: HashMap<String, Seen>,
}

#[derive(Deserialize)]
struct Line {
    at: String,
    event: String,
    run: String,
    slugs: Vec<String>,
}

impl ShownLog {
    /// Read the bank's retrieval log; a missing one is empty.
    pub fn read(root: &Path) -> Result<ShownLog, UsageError> {
        let path = shown_log_path(root);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(ShownLog::parse(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ShownLog::default()),
            Err(source) => Err(LedgerError {
                path: path.display().to_string(),
                source,
            }
            .into()),
        }
    }

    /// Parse the log's bytes. A line that is not a whole `shown` event is skipped.
    pub fn parse(bytes: &[u8]) -> ShownLog {
        let mut log = ShownLog {
            exists: true,
            ..ShownLog::default()
        };
        for line in bytes.split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = serde_json::from_slice::<Line>(line)
                .ok()
                .filter(|l| l.event == "shown" && !l.run.is_empty())
                .and_then(|l| Some((l.at.parse::<jiff::Timestamp>().ok()?, l)));
            let Some((at, line)) = parsed else {
                log.skipped += 1;
                continue;
            };
            log.searches += 1;
            let next = log.runs.len() as u32;
            let run = *log.runs.entry(line.run).or_insert(next);
            for slug in line.slugs {
                let seen = log.seen.entry(slug).or_default();
                seen.runs.insert(run);
                seen.last = seen.last.max(Some(at));
            }
        }
        log
    }

    /// Whether no logged search showed any lesson.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Runs whose logged searches showed `slug`.
    pub fn shown(&self, slug: &str) -> u64 {
        self.seen.get(slug).map_or(0, |s| s.runs.len() as u64)
    }

    /// The figures of `slug`, whose ledger is `ledger`.
    pub fn usage(&self, slug: &str, ledger: &Ledger) -> Usage {
        let Some(seen) = self.seen.get(slug) else {
            return Usage::default();
        };
        let mut usage = Usage {
            shown: seen.runs.len() as u64,
            last_shown: seen.last,
            ..Usage::default()
        };
        let mut followed: HashSet<u32> = HashSet::new();
        for (_, o) in ledger.distinct_outcomes() {
            let Some(run) = self.shown_run(seen, o) else {
                continue;
            };
            if o.applied == Applied::Followed && followed.insert(run) {
                usage.followed += 1;
                usage.helped += u64::from(o.run == RunOutcome::Success);
            }
        }
        usage
    }

    /// The figures of `slug` in the bank at `root`: its ledger is read only when a logged
    /// search showed it.
    pub fn usage_of(&self, root: &Path, slug: &str) -> Result<Usage, UsageError> {
        if !self.seen.contains_key(slug) {
            return Ok(Usage::default());
        }
        Ok(self.usage(slug, &Ledger::read(root, slug)?))
    }

    /// The figures of each of `slugs` (in that order).
    pub fn usage_of_all<'a>(
        &self,
        root: &Path,
        slugs: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<Usage>, UsageError> {
        slugs
            .into_iter()
            .map(|slug| self.usage_of(root, slug))
            .collect()
    }

    /// The slugs a logged search showed, in no particular order.
    pub fn slugs(&self) -> impl Iterator<Item = &str> {
        self.seen.keys().map(String::as_str)
    }

    /// The figures of every lesson a logged search showed, by slug (what ranking reads with
    /// `[retrieve] usage-weight`).
    pub fn figures(&self, root: &Path) -> Result<HashMap<String, Usage>, UsageError> {
        self.slugs()
            .map(|slug| Ok((slug.to_string(), self.usage_of(root, slug)?)))
            .collect()
    }

    fn shown_run(&self, seen: &Seen, o: &OutcomeEvent) -> Option<u32> {
        let run = *self.runs.get(o.linked_run())?;
        seen.runs.contains(&run).then_some(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Delta, Event, EventKind, EvidenceRef};

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    fn outcome(applied: Applied, run: RunOutcome, r: &str, retrieval: Option<&str>) -> String {
        Event::new(
            at("2026-11-26T12:00:00Z"),
            "t",
            EventKind::Outcome(OutcomeEvent {
                applied,
                run,
                delta: Delta::of(applied, run),
                evidence: EvidenceRef {
                    kind: "run".into(),
                    reference: r.into(),
                    note: None,
                },
                retrieval: retrieval.map(str::to_string),
            }),
        )
        .to_line()
    }

    #[test]
    fn figures_count_runs_once() {
        let t = at("2026-11-26T10:00:00.5Z");
        let mut log = String::new();
        log.push_str(&shown_line(t, "a", "r1", &["x", "y"]));
        log.push_str(&shown_line(t, "a", "r1", &["x", "y"])); // a merge kept both sides
        log.push_str(&shown_line(at("2026-11-27T10:00:00Z"), "a", "r2", &["x"]));
        log.push_str(&shown_line(t, "a", "r3", &["x"]));
        log.push_str("{\"at\":\"2026-11-26T10:00:00Z\",\"event\":\"shown\",\"by\":\"a\",\"ru"); // torn
        let log = ShownLog::parse(log.as_bytes());
        assert_eq!((log.searches, log.skipped), (4, 1));
        let ledger = [
            outcome(Applied::Followed, RunOutcome::Success, "r1", None),
            outcome(Applied::Followed, RunOutcome::Success, "r1", None), // repeated: once
            outcome(Applied::Followed, RunOutcome::Failure, "pr-7", Some("r2")),
            outcome(Applied::Contradicted, RunOutcome::Success, "r3", None),
            outcome(Applied::Followed, RunOutcome::Success, "r9", None), // never shown
        ]
        .concat();
        let ledger = Ledger::parse(Path::new("x.jsonl"), ledger.as_bytes());
        let x = log.usage("x", &ledger);
        assert_eq!((x.shown, x.followed, x.helped), (3, 2, 1));
        assert_eq!(x.last_shown, Some(at("2026-11-27T10:00:00Z")));
        assert_eq!(x.utility(), Some(1.0 / 3.0));
        let y = log.usage("y", &Ledger::default());
        assert_eq!((y.shown, y.followed, y.utility()), (1, 0, Some(0.0)));
        assert_eq!(log.usage("z", &ledger), Usage::default());
        assert_eq!(Usage::default().utility(), None);
        assert_eq!(Usage::default().rank_factor(0.0), 1.0);
        assert_eq!(Usage::default().rank_factor(1.0), 0.5);
    }

    #[test]
    fn run_ids_are_checked() {
        assert!(check_run("r_1").is_ok());
        for bad in ["", " ", "a\nb", &"x".repeat(257)] {
            assert!(check_run(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sort_keys() {
        let u = |shown, helped| Usage {
            shown,
            helped,
            followed: helped,
            last_shown: None,
        };
        assert_eq!(SortKey::Shown.compare(&u(3, 0), &u(1, 1)), Ordering::Less);
        assert_eq!(
            SortKey::Utility.compare(&u(3, 0), &u(1, 1)),
            Ordering::Greater
        );
        assert_eq!(
            SortKey::Utility.compare(&u(0, 0), &u(1, 0)),
            Ordering::Greater
        );
        assert_eq!(
            SortKey::Utility.compare(&u(0, 0), &u(0, 0)),
            Ordering::Equal
        );
    }
}
