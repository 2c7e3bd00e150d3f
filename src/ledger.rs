//! A lesson's ledger, `_log/<slug>.jsonl`: what happened to the lesson, one JSON event a line,
//! append-only.
//!
//! The ledger is the authority for a lesson's counts (AIP-11 "confidence laundering": counts come
//! from observed outcomes, never from the author). `success_count` / `failure_count` in the
//! frontmatter are a cache of it: the counts of the first `created` or `imported` event plus the
//! `delta` of every distinct outcome. An outcome is identified by its lesson (the ledger) and its
//! evidence's `kind` and `ref` (the run): the same run recorded on two clones of a bank leaves two
//! lines that differ only in `at` and `by` after a git merge, and counts once (the first line in
//! file order). Two opposite verdicts for one run are reported by `lesson lint` (L005). A lesson without a ledger keeps the counts it was written
//! with as initial values; the first event appended to its ledger is preceded by an `imported`
//! event that records them.
//!
//! Each line is an object with `at` (RFC 3339, UTC), `event` and `by` (who recorded it), then the
//! event's fields:
//!
//! ```text
//! {"at":"2026-11-22T12:00:00Z","event":"created","by":"ci@runner-7","success_count":0,"failure_count":0}
//! {"at":"2026-11-22T12:00:00Z","event":"imported","by":"ana@laptop","success_count":3,"failure_count":1}
//! {"at":"2026-11-23T08:14:02Z","event":"outcome","by":"ana@laptop","applied":"followed","run":"success","delta":{"success":1,"failure":0},"evidence":{"kind":"run","ref":"r_812"}}
//! {"at":"2026-11-24T09:00:00Z","event":"evidence","by":"ana@laptop","evidence":{"kind":"work-item","ref":"pr-12"}}
//! {"at":"2026-11-25T10:30:00Z","event":"superseded","by":"ana@laptop","superseded_by":"newer-lesson"}
//! {"at":"2026-11-25T10:31:00Z","event":"merged","by":"ana@laptop","into":"other-lesson"}
//! {"at":"2026-11-25T10:32:00Z","event":"merged","by":"ana@laptop","from":"candidate-slug","evidence":[{"kind":"run","ref":"r_9"}]}
//! {"at":"2026-11-25T10:33:00Z","event":"conflict","by":"judge","with":"other-lesson","note":"opposite advice","run_id":"r_9"}
//! {"at":"2026-12-01T00:00:00Z","event":"archived","by":"ana@laptop","to":"_archive/old-lesson.md"}
//! ```
//!
//! Any event may carry `run_id`: the run `lesson distill` wrote it for (a run is distilled once).
//!
//! Reading is forgiving: a line that is not a whole JSON event (a crash cut it short, a merge
//! mangled it) is reported with its line number and ignored, never fatal; an event this version
//! does not know is kept and ignored, so that older and newer versions can share a bank.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::edit::EditError;
/// The counts events carry are the lesson model's.
pub use crate::lesson::Counts;

/// The ledger file of a slug (`_log/<slug>.jsonl`).
pub use crate::layout::log_path as path;
pub use crate::layout::LOG_DIR;

/// Whether the lesson's advice was followed in the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Applied {
    /// The run did what the lesson says.
    Followed,
    /// The run did the opposite.
    Contradicted,
}

impl Applied {
    /// The ledger's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Applied::Followed => "followed",
            Applied::Contradicted => "contradicted",
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOutcome {
    /// The run succeeded.
    Success,
    /// The run failed.
    Failure,
}

impl RunOutcome {
    /// The ledger's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Success => "success",
            RunOutcome::Failure => "failure",
        }
    }
}

/// What an outcome adds to the counts: 0 or 1 each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// Added to `success_count`.
    pub success: u64,
    /// Added to `failure_count`.
    pub failure: u64,
}

impl Delta {
    /// ADAPTER.md's replay-match rules: followed and succeeded counts a success; contradicted
    /// and succeeded counts a failure (the lesson's claim was contradicted); a failed run only
    /// adds evidence.
    pub fn of(applied: Applied, run: RunOutcome) -> Delta {
        match (applied, run) {
            (Applied::Followed, RunOutcome::Success) => Delta {
                success: 1,
                failure: 0,
            },
            (Applied::Contradicted, RunOutcome::Success) => Delta {
                success: 0,
                failure: 1,
            },
            (_, RunOutcome::Failure) => Delta::default(),
        }
    }
}

/// An evidence pointer as the ledger stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRef {
    /// `run`, `conversation`, `work-item`, `audit` or `wiki-page`.
    pub kind: String,
    /// The id.
    #[serde(rename = "ref")]
    pub reference: String,
    /// A one-line note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// An `outcome` event: the lesson's trigger matched a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeEvent {
    /// Whether the advice was followed.
    pub applied: Applied,
    /// How the run ended.
    pub run: RunOutcome,
    /// What it adds to the counts.
    pub delta: Delta,
    /// The run (or other record) it was observed in.
    pub evidence: EvidenceRef,
    /// The run whose logged search showed the lesson (`lesson record --run RUN`), when it is
    /// not the evidence's `ref`; see [`OutcomeEvent::linked_run`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<String>,
}

impl OutcomeEvent {
    /// The run this outcome answers, for retrieval accounting ([`crate::usage`]): its
    /// `retrieval` when it has one, else its evidence's `ref` (`lesson record --evidence
    /// run:R` and `lesson distill`'s verdicts cite the run itself).
    pub fn linked_run(&self) -> &str {
        self.retrieval
            .as_deref()
            .unwrap_or(&self.evidence.reference)
    }
}

/// A `merged` event. In the ledger of a lesson that absorbed a duplicate candidate (`lesson
/// add`, `lesson distill`): `from`, the candidate's slug, and the `evidence` it brought. In the
/// ledger of a lesson folded into another: `into`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merge {
    /// The lesson this one was merged into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub into: Option<String>,
    /// The duplicate this lesson absorbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The evidence items the duplicate brought (appended to this lesson's `evidence`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceRef>,
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The lesson was written, with these initial counts.
    Created(Counts),
    /// The lesson existed before its ledger, with these counts (taken as initial values).
    Imported(Counts),
    /// An observed outcome.
    Outcome(OutcomeEvent),
    /// Evidence added without an outcome.
    Evidence(EvidenceRef),
    /// Another lesson supersedes this one.
    Superseded {
        /// The superseding lesson's slug.
        superseded_by: String,
    },
    /// Lessons were merged (see [`Merge`]).
    Merged(Merge),
    /// The lesson's advice conflicts with another lesson's (both are kept).
    Conflict {
        /// The other lesson's slug.
        with: String,
        /// Why, in a line.
        note: Option<String>,
    },
    /// The lesson was moved to `_archive/`.
    Archived {
        /// Where it went, relative to the bank.
        to: String,
        /// The `[retention]` rule that archived it (`lesson archive --policy`).
        rule: Option<String>,
    },
    /// The lesson was promoted into another bank (`lesson promote`), whose ledger of it starts
    /// with an `imported` event citing this one ([`Event::promoted_from`]).
    Promoted {
        /// The other bank, relative to this one.
        bank: String,
    },
    /// The lesson was admitted in quarantine (`lesson add`, `lesson distill`, the MCP
    /// `propose`): it tripped these injection-carrier rules.
    Quarantined {
        /// The rules' codes, sorted.
        rules: Vec<String>,
    },
    /// A human released the lesson from quarantine (`lesson review --approve`); `by` names
    /// them.
    Approved {
        /// The rules it had been quarantined for.
        rules: Vec<String>,
    },
    /// An event this version does not know (kept, ignored).
    Other(String),
}

impl EventKind {
    /// The `event` field.
    pub fn name(&self) -> &str {
        match self {
            EventKind::Created(_) => "created",
            EventKind::Imported(_) => "imported",
            EventKind::Outcome(_) => "outcome",
            EventKind::Evidence(_) => "evidence",
            EventKind::Superseded { .. } => "superseded",
            EventKind::Merged(_) => "merged",
            EventKind::Conflict { .. } => "conflict",
            EventKind::Archived { .. } => "archived",
            EventKind::Promoted { .. } => "promoted",
            EventKind::Quarantined { .. } => "quarantined",
            EventKind::Approved { .. } => "approved",
            EventKind::Other(name) => name,
        }
    }

    /// The event's own fields as JSON text, in the order they are written.
    fn fields(&self) -> Vec<(&'static str, String)> {
        fn json<T: Serialize + ?Sized>(v: &T) -> String {
            serde_json::to_string(v).expect("ledger types serialize")
        }
        match self {
            EventKind::Created(c) | EventKind::Imported(c) => vec![
                ("success_count", json(&c.success_count)),
                ("failure_count", json(&c.failure_count)),
            ],
            EventKind::Outcome(o) => {
                let mut fields = vec![
                    ("applied", json(&o.applied)),
                    ("run", json(&o.run)),
                    ("delta", json(&o.delta)),
                    ("evidence", json(&o.evidence)),
                ];
                if let Some(retrieval) = &o.retrieval {
                    fields.push(("retrieval", json(retrieval)));
                }
                fields
            }
            EventKind::Evidence(e) => vec![("evidence", json(e))],
            EventKind::Superseded { superseded_by } => vec![("superseded_by", json(superseded_by))],
            EventKind::Merged(m) => {
                let mut fields = Vec::new();
                if let Some(into) = &m.into {
                    fields.push(("into", json(into)));
                }
                if let Some(from) = &m.from {
                    fields.push(("from", json(from)));
                }
                if !m.evidence.is_empty() {
                    fields.push(("evidence", json(&m.evidence)));
                }
                fields
            }
            EventKind::Conflict { with, note } => {
                let mut fields = vec![("with", json(with))];
                if let Some(note) = note {
                    fields.push(("note", json(note)));
                }
                fields
            }
            EventKind::Archived { to, rule } => {
                let mut fields = vec![("to", json(to))];
                if let Some(rule) = rule {
                    fields.push(("rule", json(rule)));
                }
                fields
            }
            EventKind::Promoted { bank } => vec![("bank", json(bank))],
            EventKind::Quarantined { rules } | EventKind::Approved { rules } => {
                vec![("rules", json(rules))]
            }
            EventKind::Other(_) => Vec::new(),
        }
    }

    fn parse(name: &str, object: Value) -> Result<EventKind, String> {
        fn field<T: serde::de::DeserializeOwned>(object: Value) -> Result<T, String> {
            serde_json::from_value(object).map_err(|e| e.to_string())
        }
        #[derive(Deserialize)]
        struct WithEvidence {
            evidence: EvidenceRef,
        }
        #[derive(Deserialize)]
        struct Superseded {
            superseded_by: String,
        }
        #[derive(Deserialize)]
        struct Conflict {
            with: String,
            #[serde(default)]
            note: Option<String>,
        }
        #[derive(Deserialize)]
        struct Archived {
            to: String,
            #[serde(default)]
            rule: Option<String>,
        }
        #[derive(Deserialize)]
        struct Promoted {
            bank: String,
        }
        #[derive(Deserialize)]
        struct Rules {
            rules: Vec<String>,
        }
        Ok(match name {
            "created" => EventKind::Created(field(object)?),
            "imported" => EventKind::Imported(field(object)?),
            "outcome" => {
                let o: OutcomeEvent = field(object)?;
                if o.delta.success > 1 || o.delta.failure > 1 {
                    return Err("an outcome adds 0 or 1 to each count".into());
                }
                EventKind::Outcome(o)
            }
            "evidence" => EventKind::Evidence(field::<WithEvidence>(object)?.evidence),
            "superseded" => EventKind::Superseded {
                superseded_by: field::<Superseded>(object)?.superseded_by,
            },
            "merged" => {
                let m: Merge = field(object)?;
                if m.into.is_none() && m.from.is_none() {
                    return Err("a merge names `into` or `from`".into());
                }
                EventKind::Merged(m)
            }
            "conflict" => {
                let c: Conflict = field(object)?;
                EventKind::Conflict {
                    with: c.with,
                    note: c.note,
                }
            }
            "archived" => {
                let a: Archived = field(object)?;
                EventKind::Archived {
                    to: a.to,
                    rule: a.rule,
                }
            }
            "promoted" => EventKind::Promoted {
                bank: field::<Promoted>(object)?.bank,
            },
            "quarantined" => EventKind::Quarantined {
                rules: field::<Rules>(object)?.rules,
            },
            "approved" => EventKind::Approved {
                rules: field::<Rules>(object)?.rules,
            },
            other => EventKind::Other(other.to_string()),
        })
    }
}

/// One event of a ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When it was recorded (whole seconds, UTC).
    pub at: jiff::Timestamp,
    /// Who recorded it.
    pub by: String,
    /// What happened.
    pub kind: EventKind,
    /// The run `lesson distill` recorded it for, if any.
    pub run_id: Option<String>,
    /// On the `imported` event that starts the ledger of a promoted lesson (`lesson
    /// promote`): the bank and lesson it came from.
    pub promoted_from: Option<PromotedFrom>,
}

/// Where a promoted lesson came from: the source bank (relative to the bank it was promoted
/// into) and its slug there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromotedFrom {
    /// The source bank, relative to this one.
    pub bank: String,
    /// The lesson's slug there.
    pub slug: String,
}

impl Event {
    /// An event at `at` (truncated to whole seconds) recorded by `by`.
    pub fn new(at: jiff::Timestamp, by: &str, kind: EventKind) -> Event {
        let at = jiff::Timestamp::from_second(at.as_second()).unwrap_or(at);
        Event {
            at,
            by: by.to_string(),
            kind,
            run_id: None,
            promoted_from: None,
        }
    }

    /// The same event, citing the lesson it was promoted from.
    pub fn with_promoted_from(mut self, from: PromotedFrom) -> Event {
        self.promoted_from = Some(from);
        self
    }

    /// The same event, marked as recorded for the run `run_id`.
    pub fn with_run_id(mut self, run_id: &str) -> Event {
        self.run_id = Some(run_id.to_string());
        self
    }

    /// The event as one ledger line, with its `\n`.
    pub fn to_line(&self) -> String {
        let mut line = format!(
            "{{\"at\":{},\"event\":{},\"by\":{}",
            Value::from(self.at.to_string()),
            Value::from(self.kind.name()),
            Value::from(self.by.as_str())
        );
        for (name, value) in self.kind.fields() {
            line.push_str(&format!(",\"{name}\":{value}"));
        }
        if let Some(from) = &self.promoted_from {
            let from = serde_json::to_string(from).expect("ledger types serialize");
            line.push_str(&format!(",\"promoted_from\":{from}"));
        }
        if let Some(run_id) = &self.run_id {
            line.push_str(&format!(",\"run_id\":{}", Value::from(run_id.as_str())));
        }
        line.push_str("}\n");
        line
    }

    /// Parse one line (without its line ending).
    pub fn parse(line: &str) -> Result<Event, String> {
        // one typed pass for the lines this version writes; anything else takes the slow path,
        // which says precisely what is wrong (or keeps an event kind it does not know)
        if let Ok(known) = serde_json::from_str::<Known>(line) {
            if let Some(event) = known.into_event() {
                return Ok(event);
            }
        }
        Event::parse_value(line)
    }

    fn parse_value(line: &str) -> Result<Event, String> {
        let value: Value = serde_json::from_str(line).map_err(|e| {
            // serde_json says "at line 1 column N": within the line, only the column means much
            let what = e.to_string();
            let what = what
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_string();
            format!("not JSON: {what} at column {}", e.column())
        })?;
        let Value::Object(map) = &value else {
            return Err("not a JSON object".into());
        };
        let Some(name) = map.get("event").and_then(Value::as_str) else {
            return Err("no `event` field".into());
        };
        let name = name.to_string();
        let at = map
            .get("at")
            .and_then(Value::as_str)
            .ok_or("no `at` field")?
            .parse::<jiff::Timestamp>()
            .map_err(|_| "`at` is not an RFC 3339 timestamp")?;
        let by = map
            .get("by")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let run_id = match map.get("run_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("`run_id` is not a string".into()),
        };
        let promoted_from = match map.get("promoted_from") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value(v.clone()).map_err(|e| format!("`promoted_from`: {e}"))?,
            ),
        };
        let kind = EventKind::parse(&name, value)
            .map_err(|e| format!("not a valid `{name}` event: {e}"))?;
        Ok(Event {
            at,
            by,
            kind,
            run_id,
            promoted_from,
        })
    }
}

/// Every field of the events this version writes, for the fast path of [`Event::parse`].
#[derive(Deserialize)]
struct Known {
    at: String,
    event: String,
    #[serde(default)]
    by: String,
    success_count: Option<u64>,
    failure_count: Option<u64>,
    applied: Option<Applied>,
    run: Option<RunOutcome>,
    delta: Option<Delta>,
    evidence: Option<EvidenceRef>,
    superseded_by: Option<String>,
    into: Option<String>,
    to: Option<String>,
    rule: Option<String>,
    retrieval: Option<String>,
    run_id: Option<String>,
    promoted_from: Option<PromotedFrom>,
}

impl Known {
    /// The event, when it is complete and of a known kind.
    fn into_event(self) -> Option<Event> {
        let counts = || {
            Some(Counts {
                success_count: self.success_count?,
                failure_count: self.failure_count?,
            })
        };
        let kind = match self.event.as_str() {
            "created" => EventKind::Created(counts()?),
            "imported" => EventKind::Imported(counts()?),
            "outcome" => {
                let delta = self.delta?;
                if delta.success > 1 || delta.failure > 1 {
                    return None;
                }
                EventKind::Outcome(OutcomeEvent {
                    applied: self.applied?,
                    run: self.run?,
                    delta,
                    evidence: self.evidence?,
                    retrieval: self.retrieval,
                })
            }
            "evidence" => EventKind::Evidence(self.evidence?),
            "superseded" => EventKind::Superseded {
                superseded_by: self.superseded_by?,
            },
            "merged" => EventKind::Merged(Merge {
                into: Some(self.into?),
                ..Merge::default()
            }),
            "archived" => EventKind::Archived {
                to: self.to?,
                rule: self.rule,
            },
            _ => return None,
        };
        Some(Event {
            at: self.at.parse().ok()?,
            by: self.by,
            kind,
            run_id: self.run_id,
            promoted_from: self.promoted_from,
        })
    }
}

/// An event and the line it stands on.
#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    /// 1-based line number.
    pub line: usize,
    /// The event.
    pub event: Event,
}

/// A line that is not a whole event; it is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    /// 1-based line number.
    pub line: usize,
    /// Byte range of the line (without its line ending).
    pub range: Range<usize>,
    /// Why it is not an event.
    pub message: String,
    /// Whether it is the last line and has no line ending (an append cut short).
    pub unterminated: bool,
}

/// A ledger could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {path}: {source}")]
pub struct LedgerError {
    /// The file.
    pub path: String,
    /// The cause.
    pub source: std::io::Error,
}

/// The initial counts plus what the distinct outcomes added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// The counts of the first `created` / `imported` event (0/0 when there is none).
    pub initial: Counts,
    /// The sum of the distinct outcomes' deltas.
    pub added: Counts,
    /// How many distinct outcomes (runs).
    pub outcomes: usize,
    /// How many outcome events repeat the run of an earlier one (counted once).
    pub repeated: usize,
}

impl Tally {
    /// What `success_count` / `failure_count` must be.
    pub fn counts(&self) -> Counts {
        Counts {
            success_count: self.initial.success_count + self.added.success_count,
            failure_count: self.initial.failure_count + self.added.failure_count,
        }
    }
}

/// A lesson's ledger as read from disk (empty when the file does not exist).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// The file.
    pub path: PathBuf,
    /// The file's text (invalid UTF-8 replaced).
    pub text: String,
    /// Whether the file exists.
    pub exists: bool,
    /// Every whole event, in file order.
    pub entries: Vec<LedgerEntry>,
    /// Lines that are not whole events.
    pub problems: Vec<LineProblem>,
    lines: usize,
}

impl Ledger {
    /// Read the ledger of `slug` in the bank at `root`.
    pub fn read(root: &Path, slug: &str) -> Result<Ledger, LedgerError> {
        Ledger::read_file(&path(root, slug))
    }

    /// Read a ledger file; a missing file is an empty ledger.
    pub fn read_file(path: &Path) -> Result<Ledger, LedgerError> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Ledger::parse(path, &bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ledger {
                path: path.to_path_buf(),
                ..Ledger::default()
            }),
            Err(source) => Err(LedgerError {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Parse a ledger's bytes.
    pub fn parse(path: &Path, bytes: &[u8]) -> Ledger {
        let mut ledger = Ledger {
            path: path.to_path_buf(),
            text: String::from_utf8_lossy(bytes).into_owned(),
            exists: true,
            ..Ledger::default()
        };
        let mut start = 0;
        let mut number = 0;
        while start < bytes.len() {
            number += 1;
            let (end, next, terminated) = match bytes[start..].iter().position(|&b| b == b'\n') {
                Some(i) => (start + i, start + i + 1, true),
                None => (bytes.len(), bytes.len(), false),
            };
            let mut content = &bytes[start..end];
            if content.last() == Some(&b'\r') {
                content = &content[..content.len() - 1];
            }
            if !content.iter().all(u8::is_ascii_whitespace) {
                let parsed = std::str::from_utf8(content)
                    .map_err(|_| "not UTF-8".to_string())
                    .and_then(Event::parse);
                match parsed {
                    Ok(event) => ledger.entries.push(LedgerEntry {
                        line: number,
                        event,
                    }),
                    Err(message) => {
                        // byte offsets of the lossy text equal the file's only for valid UTF-8
                        let range = if ledger.text.len() == bytes.len() {
                            start..start + content.len()
                        } else {
                            0..0
                        };
                        ledger.problems.push(LineProblem {
                            line: number,
                            range,
                            message,
                            unterminated: !terminated,
                        });
                    }
                }
            }
            start = next;
        }
        ledger.lines = number;
        ledger
    }

    /// The first `created` or `imported` event's counts.
    pub fn initial(&self) -> Option<Counts> {
        self.entries.iter().find_map(|e| match &e.event.kind {
            EventKind::Created(c) | EventKind::Imported(c) => Some(*c),
            _ => None,
        })
    }

    /// The outcome events, in order.
    pub fn outcomes(&self) -> impl Iterator<Item = (&LedgerEntry, &OutcomeEvent)> {
        self.entries.iter().filter_map(|e| match &e.event.kind {
            EventKind::Outcome(o) => Some((e, o)),
            _ => None,
        })
    }

    /// The outcomes that count, in order: the first outcome event of each run (its evidence's
    /// `kind` and `ref`). One run recorded on two machines leaves two events that differ only in
    /// `at` and `by` once their ledgers merge; it is one observation.
    pub fn distinct_outcomes(&self) -> impl Iterator<Item = (&LedgerEntry, &OutcomeEvent)> {
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        self.outcomes()
            .filter(move |(_, o)| seen.insert(run_key(&o.evidence)))
    }

    /// Runs recorded with opposite verdicts: each outcome event whose `applied` or `run`
    /// differs from the first outcome event of its run, with that first event (the one that
    /// counts).
    pub fn opposite_verdicts(&self) -> Vec<(&LedgerEntry, &LedgerEntry)> {
        let mut first: HashMap<(&str, &str), (&LedgerEntry, &OutcomeEvent)> = HashMap::new();
        let mut out = Vec::new();
        for (entry, o) in self.outcomes() {
            match first.get(&run_key(&o.evidence)) {
                None => {
                    first.insert(run_key(&o.evidence), (entry, o));
                }
                Some((e, f)) if f.applied != o.applied || f.run != o.run => out.push((*e, entry)),
                Some(_) => {}
            }
        }
        out
    }

    /// What the counts must be, or `None` when the ledger says nothing about them (no initial
    /// event and no outcome: the lesson's own counts are its initial values). Each run counts
    /// once ([`Ledger::distinct_outcomes`]).
    pub fn tally(&self) -> Option<Tally> {
        let initial = self.initial();
        let mut tally = Tally {
            initial: initial.unwrap_or_default(),
            ..Tally::default()
        };
        for (_, o) in self.distinct_outcomes() {
            tally.added.success_count += o.delta.success;
            tally.added.failure_count += o.delta.failure;
            tally.outcomes += 1;
        }
        tally.repeated = self.outcomes().count() - tally.outcomes;
        (initial.is_some() || tally.outcomes > 0).then_some(tally)
    }

    /// Whether the next append must start with an `imported` event recording the lesson's
    /// current counts.
    pub fn needs_import(&self) -> bool {
        self.tally().is_none()
    }

    /// When the lesson entered the ledger: its first `created` or `imported` event.
    pub fn since(&self) -> Option<jiff::Timestamp> {
        self.entries.iter().find_map(|e| match e.event.kind {
            EventKind::Created(_) | EventKind::Imported(_) => Some(e.event.at),
            _ => None,
        })
    }

    /// Append events: whole lines, in one write, under the bank's lock (the caller holds it).
    /// Creates `_log/` and the file when needed. The events join `entries`.
    pub fn append(&mut self, root: &Path, events: &[Event]) -> Result<(), EditError> {
        if events.is_empty() {
            return Ok(());
        }
        let lines: String = events.iter().map(Event::to_line).collect();
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| EditError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let repaired = crate::edit::append(root, &self.path, lines.as_bytes())?;
        if repaired {
            self.text.push('\n');
        }
        self.text.push_str(&lines);
        self.exists = true;
        for event in events {
            self.lines += 1;
            self.entries.push(LedgerEntry {
                line: self.lines,
                event: event.clone(),
            });
        }
        Ok(())
    }
}

/// What identifies a run among a lesson's outcomes: its evidence's `kind` and `ref`.
fn run_key(e: &EvidenceRef) -> (&str, &str) {
    (&e.kind, &e.reference)
}

/// Every ledger file of the bank: `_log/*.jsonl`, sorted; not the retrieval log
/// (`_log/_shown.jsonl`, [`crate::layout::SHOWN_LOG`]), whose name no slug can have.
pub fn ledger_files(root: &Path) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(root.join(LOG_DIR)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = dir
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('_'))
        })
        .collect();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> jiff::Timestamp {
        "2026-11-22T12:00:00.75Z".parse().unwrap()
    }

    #[test]
    fn lines_round_trip() {
        let events = [
            EventKind::Created(Counts::default()),
            EventKind::Quarantined {
                rules: vec!["D007".into(), "D010".into()],
            },
            EventKind::Approved {
                rules: vec!["D007".into()],
            },
            EventKind::Imported(Counts {
                success_count: 3,
                failure_count: 1,
            }),
            EventKind::Outcome(OutcomeEvent {
                applied: Applied::Contradicted,
                run: RunOutcome::Success,
                delta: Delta::of(Applied::Contradicted, RunOutcome::Success),
                evidence: EvidenceRef {
                    kind: "run".into(),
                    reference: "r\"1".into(),
                    note: Some("a note: with \u{e9}".into()),
                },
                retrieval: None,
            }),
            EventKind::Evidence(EvidenceRef {
                kind: "work-item".into(),
                reference: "pr-1".into(),
                note: None,
            }),
            EventKind::Superseded {
                superseded_by: "newer".into(),
            },
            EventKind::Merged(Merge {
                into: Some("other".into()),
                ..Merge::default()
            }),
            EventKind::Merged(Merge {
                into: None,
                from: Some("candidate".into()),
                evidence: vec![EvidenceRef {
                    kind: "run".into(),
                    reference: "r9".into(),
                    note: None,
                }],
            }),
            EventKind::Conflict {
                with: "other".into(),
                note: Some("opposite advice".into()),
            },
            EventKind::Conflict {
                with: "other".into(),
                note: None,
            },
            EventKind::Archived {
                to: "_archive/x.md".into(),
                rule: None,
            },
            EventKind::Archived {
                to: "_archive/y.md".into(),
                rule: Some("archive-contradicted-at".into()),
            },
            EventKind::Outcome(OutcomeEvent {
                applied: Applied::Followed,
                run: RunOutcome::Failure,
                delta: Delta::default(),
                evidence: EvidenceRef {
                    kind: "work-item".into(),
                    reference: "pr-1".into(),
                    note: None,
                },
                retrieval: Some("r_9".into()),
            }),
        ];
        for kind in events {
            let event = Event::new(at(), "ana@host", kind);
            let line = event.to_line();
            assert!(line.ends_with("}\n") && line.matches('\n').count() == 1);
            assert!(line.starts_with("{\"at\":\"2026-11-22T12:00:00Z\",\"event\":"));
            assert_eq!(Event::parse(line.trim_end()), Ok(event.clone()));
            let marked = event.with_run_id("r \"9\"");
            let line = marked.to_line();
            assert!(line.ends_with(",\"run_id\":\"r \\\"9\\\"\"}\n"), "{line}");
            assert_eq!(Event::parse(line.trim_end()), Ok(marked));
        }
    }

    #[test]
    fn a_merge_names_where_it_went_or_what_it_absorbed() {
        let line = r#"{"at":"2026-11-22T12:00:00Z","event":"merged","by":"x"}"#;
        assert!(Event::parse(line).unwrap_err().contains("`into` or `from`"));
        let line =
            r#"{"at":"2026-11-22T12:00:00Z","event":"conflict","by":"x","run_id":3,"with":"y"}"#;
        assert!(Event::parse(line).unwrap_err().contains("run_id"));
    }

    #[test]
    fn outcome_line_is_exact() {
        let event = Event::new(
            at(),
            "ci",
            EventKind::Outcome(OutcomeEvent {
                applied: Applied::Followed,
                run: RunOutcome::Success,
                delta: Delta::of(Applied::Followed, RunOutcome::Success),
                evidence: EvidenceRef {
                    kind: "run".into(),
                    reference: "r1".into(),
                    note: None,
                },
                retrieval: None,
            }),
        );
        assert_eq!(
            event.to_line(),
            "{\"at\":\"2026-11-22T12:00:00Z\",\"event\":\"outcome\",\"by\":\"ci\",\"applied\":\"followed\",\"run\":\"success\",\"delta\":{\"success\":1,\"failure\":0},\"evidence\":{\"kind\":\"run\",\"ref\":\"r1\"}}\n"
        );
    }

    #[test]
    fn replay_match_rules() {
        use Applied::*;
        use RunOutcome::*;
        assert_eq!(
            Delta::of(Followed, Success),
            Delta {
                success: 1,
                failure: 0
            }
        );
        assert_eq!(
            Delta::of(Contradicted, Success),
            Delta {
                success: 0,
                failure: 1
            }
        );
        assert_eq!(Delta::of(Followed, Failure), Delta::default());
        assert_eq!(Delta::of(Contradicted, Failure), Delta::default());
    }

    #[test]
    fn torn_and_foreign_lines_are_reported_and_ignored() {
        let good = |kind| Event::new(at(), "x", kind).to_line();
        let imported = good(EventKind::Imported(Counts {
            success_count: 2,
            failure_count: 0,
        }));
        let outcome = good(EventKind::Outcome(OutcomeEvent {
            applied: Applied::Followed,
            run: RunOutcome::Success,
            delta: Delta::of(Applied::Followed, RunOutcome::Success),
            evidence: EvidenceRef {
                kind: "run".into(),
                reference: "r".into(),
                note: None,
            },
            retrieval: None,
        }));
        let text = format!(
            "{imported}{}\n\r\n{outcome}{{\"at\":\"2026-11-22T12:00:00Z\",\"event\":\"future\",\"by\":\"x\"}}\n{{\"event\":\"outcome\",\"at\":\"2026-11-22T12:00:00Z\",\"delta\":{{\"success\":5,\"failure\":0}}}}\n{}",
            &outcome[..20],
            &outcome[..30]
        );
        let ledger = Ledger::parse(Path::new("l.jsonl"), text.as_bytes());
        assert_eq!(ledger.entries.len(), 3);
        let lines: Vec<(usize, bool)> = ledger
            .problems
            .iter()
            .map(|p| (p.line, p.unterminated))
            .collect();
        assert_eq!(lines, [(2, false), (6, false), (7, true)]);
        assert!(ledger.problems[0].message.starts_with("not JSON"));
        assert!(ledger.problems[1]
            .message
            .contains("not a valid `outcome` event"));
        let tally = ledger.tally().unwrap();
        assert_eq!(
            tally.counts(),
            Counts {
                success_count: 3,
                failure_count: 0
            }
        );
        assert_eq!(tally.outcomes, 1);
        assert!(!ledger.needs_import());
    }

    fn outcome_line(at: &str, by: &str, applied: Applied, run: RunOutcome, r: &str) -> String {
        Event::new(
            at.parse().unwrap(),
            by,
            EventKind::Outcome(OutcomeEvent {
                applied,
                run,
                delta: Delta::of(applied, run),
                evidence: EvidenceRef {
                    kind: "run".into(),
                    reference: r.into(),
                    note: None,
                },
                retrieval: None,
            }),
        )
        .to_line()
    }

    #[test]
    fn one_run_recorded_on_two_machines_counts_once() {
        use Applied::*;
        use RunOutcome::*;
        let created = Event::new(at(), "x", EventKind::Created(Counts::default())).to_line();
        let text = [
            created,
            outcome_line("2026-11-23T08:00:00Z", "ana@a", Followed, Success, "r1"),
            outcome_line("2026-11-23T08:00:05Z", "bo@b", Followed, Success, "r1"),
            outcome_line("2026-11-23T09:00:00Z", "bo@b", Contradicted, Success, "r2"),
        ]
        .concat();
        let ledger = Ledger::parse(Path::new("x"), text.as_bytes());
        let tally = ledger.tally().unwrap();
        assert_eq!(
            tally.counts(),
            Counts {
                success_count: 1,
                failure_count: 1
            }
        );
        assert_eq!((tally.outcomes, tally.repeated), (2, 1));
        assert!(ledger.opposite_verdicts().is_empty());
        let lines: Vec<usize> = ledger.distinct_outcomes().map(|(e, _)| e.line).collect();
        assert_eq!(lines, [2, 4]);
    }

    #[test]
    fn opposite_verdicts_for_one_run_are_named_and_the_first_counts() {
        use Applied::*;
        use RunOutcome::*;
        let text = [
            outcome_line("2026-11-23T08:00:00Z", "ana@a", Followed, Success, "r1"),
            outcome_line("2026-11-23T08:00:00Z", "ana@a", Followed, Success, "r2"),
            outcome_line("2026-11-23T08:00:05Z", "bo@b", Contradicted, Success, "r1"),
            outcome_line("2026-11-23T08:00:09Z", "cy@c", Followed, Failure, "r1"),
        ]
        .concat();
        let ledger = Ledger::parse(Path::new("x"), text.as_bytes());
        let pairs: Vec<(usize, usize)> = ledger
            .opposite_verdicts()
            .iter()
            .map(|(a, b)| (a.line, b.line))
            .collect();
        assert_eq!(pairs, [(1, 3), (1, 4)]);
        assert_eq!(
            ledger.tally().unwrap().counts(),
            Counts {
                success_count: 2,
                failure_count: 0
            }
        );
    }

    #[test]
    fn an_empty_or_broken_ledger_says_nothing_about_counts() {
        assert!(Ledger::parse(Path::new("x"), b"").needs_import());
        assert!(Ledger::parse(Path::new("x"), b"{\"at\":").needs_import());
        let superseded = Event::new(
            at(),
            "x",
            EventKind::Superseded {
                superseded_by: "y".into(),
            },
        )
        .to_line();
        assert!(Ledger::parse(Path::new("x"), superseded.as_bytes()).needs_import());
    }
}
