//! What `lesson distill` reads and speaks: the run (`RUN.json`), the request it writes to the
//! judge's stdin and the answer it reads from the judge's stdout. The README documents all
//! three for judge authors.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ledger::{Applied, RunOutcome};
use crate::lesson::EvidenceKind;

/// The protocol's name and version, the request's `protocol` field.
pub const PROTOCOL: &str = "lesson-distill/1";
/// A run id is an evidence `ref`: at most this many characters (the schema's limit).
pub const MAX_RUN_ID: usize = 256;

/// A completed run, from `RUN.json`: an object with `id` and `outcome`, optionally the request
/// and its caller (for matching lessons) and anything else (the trajectory), which is passed to
/// the judge as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// `id`: the run's id, cited as evidence (`KIND:ID`).
    pub id: String,
    /// `kind`: what the id points to (default `run`).
    pub kind: EvidenceKind,
    /// `outcome`: `success` or `failure`.
    pub outcome: RunOutcome,
    /// `request`: the request the run served; lessons are matched against it.
    pub request: Option<String>,
    /// `tags`: the request's tags.
    pub tags: Vec<String>,
    /// `operator`, for the targets gate.
    pub operator: Option<String>,
    /// `role`, for the targets gate.
    pub role: Option<String>,
    /// `skill`, for the targets gate.
    pub skill: Option<String>,
    /// The whole object as given.
    pub raw: Map<String, Value>,
}

impl Run {
    /// Read `RUN.json`; the error says which field is wrong and how.
    pub fn parse(bytes: &[u8]) -> Result<Run, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "not valid JSON at line {} column {}: {}",
                e.line(),
                e.column(),
                crate::curate::add::json_message(&e)
            )
        })?;
        let Value::Object(raw) = value else {
            return Err(format!(
                "expected an object with the run's `id` and `outcome`, found {}",
                crate::curate::add::json_type(&value)
            ));
        };
        let string = |key: &str| -> Result<Option<String>, String> {
            match raw.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "`{key}` is {}, not a string",
                    crate::curate::add::json_type(other)
                )),
            }
        };
        let id = string("id")?.ok_or("`id` is missing: the run's id, which lessons cite")?;
        if let Some(problem) = run_id_problem(&id) {
            return Err(format!("`id` {problem}"));
        }
        let outcome = match string("outcome")?.as_deref() {
            Some("success") => RunOutcome::Success,
            Some("failure") => RunOutcome::Failure,
            Some(other) => {
                return Err(format!(
                    "`outcome` is `{}`; use `success` or `failure`",
                    other.escape_debug()
                ))
            }
            None => return Err("`outcome` is missing: `success` or `failure`".into()),
        };
        let kind = match string("kind")? {
            None => EvidenceKind::Run,
            Some(k) => EvidenceKind::parse(&k).ok_or_else(|| {
                format!(
                    "`kind` is `{}`; use run, conversation, work-item, audit or wiki-page",
                    k.escape_debug()
                )
            })?,
        };
        let tags = match raw.get("tags") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| t.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or("`tags` holds something other than strings")?,
            Some(_) => return Err("`tags` is not a list of strings".into()),
        };
        Ok(Run {
            id,
            kind,
            outcome,
            request: string("request")?,
            tags,
            operator: string("operator")?,
            role: string("role")?,
            skill: string("skill")?,
            raw,
        })
    }

    /// The steps of the run's trajectory: the length of `trajectory` when it is a list, or of
    /// its `steps` when it is an object with a `steps` list; 0 without one.
    pub fn steps(&self) -> usize {
        match self.raw.get("trajectory") {
            Some(Value::Array(steps)) => steps.len(),
            Some(Value::Object(t)) => t.get("steps").and_then(Value::as_array).map_or(0, Vec::len),
            _ => 0,
        }
    }

    /// `KIND:ID`, as lessons cite the run.
    pub fn cited(&self) -> String {
        format!("{}:{}", self.kind.as_str(), self.id)
    }
}

/// Why a string cannot be a run id, or `None`.
pub fn run_id_problem(id: &str) -> Option<String> {
    if id.trim().is_empty() {
        return Some("is empty".into());
    }
    if id.chars().count() > MAX_RUN_ID {
        return Some(format!("is longer than {MAX_RUN_ID} characters"));
    }
    if id.chars().any(char::is_control) {
        return Some("holds a control character (a line break?)".into());
    }
    None
}

/// What the judge reads on stdin.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeRequest<'a> {
    /// [`PROTOCOL`].
    pub protocol: &'static str,
    /// `RUN.json` as given.
    pub run: &'a Map<String, Value>,
    /// The lessons whose triggers match the run, best first: the judge says for each whether
    /// the run followed or contradicted it.
    pub lessons: Vec<ShownLesson>,
    /// Candidates the judge may propose at most.
    pub max_candidates: usize,
    /// What every candidate's evidence must cite: `{kind, ref}` of the run.
    pub cite: Cite,
}

/// The evidence item every candidate must carry.
#[derive(Debug, Clone, Serialize)]
pub struct Cite {
    /// The run's evidence kind.
    pub kind: &'static str,
    /// The run's id.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// A lesson as the judge sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownLesson {
    /// Slug: a verdict names it.
    pub slug: String,
    /// Title.
    pub title: String,
    /// `trigger.description`.
    pub description: String,
    /// `trigger.tags`.
    pub tags: Vec<String>,
    /// `outcome`.
    pub outcome: &'static str,
    /// `confidence` (0.5 when absent).
    pub confidence: f64,
    /// `success_count`.
    pub success_count: u64,
    /// `failure_count`.
    pub failure_count: u64,
    /// The markdown body.
    pub body: String,
}

/// What the judge prints on stdout: one object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// One verdict per lesson the run followed or contradicted (lessons it did not apply are
    /// left out).
    #[serde(default)]
    pub verdicts: Vec<Verdict>,
    /// Proposed lessons: the frontmatter's fields plus `body` and, optionally,
    /// `conflicts_with`. Checked by the write gate, not by this type.
    #[serde(default)]
    pub candidates: Vec<Value>,
}

/// The judge's verdict on one lesson.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The lesson (one of the request's `lessons`).
    pub slug: String,
    /// `followed` or `contradicted`.
    pub applied: Applied,
    /// A one-line factual note for the evidence item.
    #[serde(default)]
    pub note: Option<String>,
}

/// A `conflicts_with` entry: a slug, or `{slug, note}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ConflictRef {
    /// Just the slug.
    Slug(String),
    /// The slug and why.
    WithNote {
        /// The existing lesson.
        slug: String,
        /// Why the advice conflicts.
        #[serde(default)]
        note: Option<String>,
    },
}

impl ConflictRef {
    /// (slug, note).
    pub fn parts(self) -> (String, Option<String>) {
        match self {
            ConflictRef::Slug(s) => (s, None),
            ConflictRef::WithNote { slug, note } => (slug, note),
        }
    }
}

/// Parse the judge's stdout; the error says what is wrong with it.
pub fn parse_answer(stdout: &[u8]) -> Result<Answer, String> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err("it printed nothing; expected one JSON object".into());
    }
    serde_json::from_slice(stdout).map_err(|e| {
        let shown: String = String::from_utf8_lossy(stdout)
            .chars()
            .take(60)
            .collect::<String>()
            .escape_debug()
            .to_string();
        format!(
            "its output is not an answer ({} at line {} column {}); it begins `{shown}`",
            crate::curate::add::json_message(&e),
            e.line(),
            e.column()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_files_are_checked_field_by_field() {
        let run =
            Run::parse(br#"{"id": "r1", "outcome": "failure", "request": "x", "trajectory": [1]}"#)
                .unwrap();
        assert_eq!((run.id.as_str(), run.outcome), ("r1", RunOutcome::Failure));
        assert_eq!(run.cited(), "run:r1");
        assert_eq!(run.raw["trajectory"], serde_json::json!([1]));
        for (text, says) in [
            (&br#"[]"#[..], "found an array"),
            (br#"{"outcome": "success"}"#, "`id` is missing"),
            (
                br#"{"id": "a\nb", "outcome": "success"}"#,
                "control character",
            ),
            (
                br#"{"id": "r", "outcome": "ok"}"#,
                "use `success` or `failure`",
            ),
            (
                br#"{"id": "r", "outcome": "success", "kind": "log"}"#,
                "`kind` is `log`",
            ),
            (
                br#"{"id": "r", "outcome": "success", "tags": [1]}"#,
                "other than strings",
            ),
            (br#"{"id": 3}"#, "`id` is a number"),
        ] {
            let err = Run::parse(text).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn answers_are_strict() {
        let a = parse_answer(br#"{"verdicts": [{"slug": "a", "applied": "followed"}]}"#).unwrap();
        assert_eq!(a.verdicts[0].applied, Applied::Followed);
        assert!(parse_answer(b"  \n")
            .unwrap_err()
            .contains("printed nothing"));
        let err = parse_answer(br#"{"verdict": []}"#).unwrap_err();
        assert!(err.contains("unknown field `verdict`"), "{err}");
        let err =
            parse_answer(br#"{"verdicts": [{"slug": "a", "applied": "maybe"}]}"#).unwrap_err();
        assert!(err.contains("unknown variant `maybe`"), "{err}");
        let err = parse_answer(b"Sure! Here are the lessons:").unwrap_err();
        assert!(err.contains("it begins `Sure! Here"), "{err}");
        let c: Vec<ConflictRef> =
            serde_json::from_str(r#"["a", {"slug": "b", "note": "n"}]"#).unwrap();
        assert_eq!(
            c[1].clone().parts(),
            ("b".to_string(), Some("n".to_string()))
        );
    }
}
