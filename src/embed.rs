//! The embedding API's conveniences: [`Bank::open`] (a bank loaded and judged as `lesson lint`
//! loads it, at the system clock) and [`define_lesson`] (a lesson defined in code, admitted
//! through `lesson add`'s gate).
//!
//! A runtime that embeds the library opens a [`crate::retrieve::Retriever`] once, asks it
//! before each turn ([`crate::retrieve::Retriever::answer`]) and records what happened after
//! ([`crate::curate::record::record`]); the README shows the loop.

use std::path::Path;

use serde_json::Value;

use crate::bank::{Bank, BankError, Clock};
use crate::curate::add::{self, AddError, Admitted, Candidate, Intake};
use crate::curate::new::NewEvidence;
use crate::curate::{record, Stamp};
use crate::ledger::{Applied, RunOutcome};
use crate::lesson::EvidenceKind;

/// `metadata.lesson.origin.source` of a lesson admitted by [`define_lesson`].
pub const DEFINED_IN_CODE: &str = "define_lesson";

impl Bank {
    /// Open the bank at `root`: load every lesson with its body, judge each file for errors of
    /// its own (as `lesson lint`, `lesson list` and retrieval do) and judge expiry now.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let root = dir.path();
    /// # lesson::curate::init::init(root, jiff::Timestamp::now())?;
    /// let bank = lesson::Bank::open(root)?;
    /// assert_eq!(bank.lessons().count(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(root: &Path) -> Result<Bank, BankError> {
        crate::lint::load(root, Clock::System.now())
    }
}

impl Stamp {
    /// `by`, now (the system clock).
    pub fn now(by: impl Into<String>) -> Stamp {
        Stamp {
            at: Clock::System.now(),
            by: by.into(),
        }
    }
}

impl record::Request {
    /// An outcome observed in run `run_ref`: the lesson `slug` was followed or contradicted,
    /// and the run succeeded or failed. The evidence item is `{kind: run, ref: run_ref}`, with
    /// the default note of a failed run.
    ///
    /// ```
    /// use lesson::curate::record::Request;
    /// use lesson::ledger::{Applied, RunOutcome};
    ///
    /// let r = Request::new("cite-the-source-url", Applied::Followed, RunOutcome::Success, "run-7");
    /// assert_eq!(r.evidence.reference, "run-7");
    /// ```
    pub fn new(
        slug: impl Into<String>,
        applied: Applied,
        run: RunOutcome,
        run_ref: impl Into<String>,
    ) -> record::Request {
        record::Request {
            slug: slug.into(),
            applied,
            run,
            evidence: NewEvidence {
                kind: EvidenceKind::Run,
                reference: run_ref.into(),
                note: None,
            },
            retrieval: None,
        }
    }
}

/// Admit a lesson defined in code (AIP-11 ADAPTER.md's `define_lesson`) into the bank at
/// `root`, through the gate a file takes with `lesson add`: `lesson` is a JSON object with the
/// frontmatter's fields (`schema` may be left out) and an optional markdown `body`; it is
/// validated with the lint's file rules and the secret scan, deduplicated against the bank
/// (a near-duplicate is merged into the existing lesson as new evidence), and written with a
/// ledger event under the bank's lock, or refused whole ([`AddError::Rejected`]). Counts and
/// confidence it brings are not trusted. Its origin is [`DEFINED_IN_CODE`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use lesson::curate::{add::Admitted, Stamp};
/// use serde_json::json;
///
/// let dir = tempfile::tempdir()?;
/// let bank = dir.path();
/// lesson::curate::init::init(bank, jiff::Timestamp::now())?;
/// let stamp = Stamp::now("my-runtime");
/// let admitted = lesson::define_lesson(bank, json!({
///     "slug": "cite-the-source-url",
///     "title": "Cite the source URL of every quoted figure.",
///     "trigger": {"description": "A summary quotes figures from web pages.", "tags": ["research"]},
///     "outcome": "failure",
///     "evidence": [{"kind": "run", "ref": "run-42"}],
///     "body": "# Cite the source URL of every quoted figure.\n\n## What to do (or avoid)\n\nPut the URL next to the figure.\n",
/// }), &stamp)?;
/// assert!(matches!(admitted, Admitted::Created { .. }));
/// assert!(bank.join("cite-the-source-url.md").is_file());
///
/// // the same gate as a file: an invalid lesson is refused and nothing is written
/// let refused = lesson::define_lesson(bank, json!({"slug": "Bad Slug"}), &stamp);
/// assert!(matches!(refused, Err(lesson::curate::add::AddError::Rejected(_))));
/// # Ok(())
/// # }
/// ```
pub fn define_lesson(root: &Path, lesson: Value, stamp: &Stamp) -> Result<Admitted, AddError> {
    let Value::Object(object) = lesson else {
        return Err(AddError::Input {
            label: DEFINED_IN_CODE.into(),
            message: format!(
                "a lesson is a JSON object with the frontmatter's fields, not {}",
                add::json_type(&lesson)
            ),
        });
    };
    let candidate = Candidate::from_json(DEFINED_IN_CODE, object);
    let mut intake = Intake::default();
    intake
        .origin
        .insert("source".into(), Value::from(DEFINED_IN_CODE));
    let added = add::add(root, &[candidate], &intake, stamp, false)?;
    added
        .admitted
        .into_iter()
        .next()
        .ok_or_else(|| AddError::Input {
            label: DEFINED_IN_CODE.into(),
            message: "internal: the lesson was neither created nor merged".into(),
        })
}
