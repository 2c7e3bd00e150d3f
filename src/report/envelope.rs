//! AIP-11's error envelope (ADAPTER.md, "Error envelope"): `{ok: false, error: {code, message,
//! retryable?, cause?}}`, with `code` from AIP-11's vocabulary. Front ends that answer programs
//! (`lesson mcp`) give every failure in this shape; which code a library error carries is
//! decided here, once.

use serde::Serialize;

use crate::curate::add::{AddError, Rejection};
use crate::curate::CurateError;
use crate::diagnostic::{Diagnostic, Severity};
use crate::retrieve::RetrieveError;

/// An AIP-11 error code, plus the few a host needs beside them (`not_found`,
/// `invalid_request`, `bank_unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Frontmatter failed schema validation (or the candidate is not a lesson at all).
    LessonInvalid,
    /// Two lessons share a slug; admitting refused.
    SlugCollision,
    /// An evidence ref does not resolve.
    EvidenceUnresolvable,
    /// `supersedes` cites a slug that does not exist.
    SupersedesMissing,
    /// `confidence` outside `[0, 1]`.
    ConfidenceOutOfRange,
    /// The host's guard rejected an excessively broad trigger.
    TriggerOverbroad,
    /// An expired lesson was asked for outside archival mode.
    Expired,
    /// No lesson has the slug (or it is archived).
    NotFound,
    /// The request itself is malformed: a missing or invalid argument, a path outside the bank.
    InvalidRequest,
    /// The bank is locked by a crash's leftovers, missing, or not writable.
    BankUnavailable,
    /// A host-side bug; not the lesson's fault.
    Internal,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::LessonInvalid => "lesson_invalid",
            ErrorCode::SlugCollision => "slug_collision",
            ErrorCode::EvidenceUnresolvable => "evidence_unresolvable",
            ErrorCode::SupersedesMissing => "supersedes_missing",
            ErrorCode::ConfidenceOutOfRange => "confidence_out_of_range",
            ErrorCode::TriggerOverbroad => "trigger_overbroad",
            ErrorCode::Expired => "expired",
            ErrorCode::NotFound => "not_found",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::BankUnavailable => "bank_unavailable",
            ErrorCode::Internal => "internal",
        }
    }

    /// The code a lint finding stands for, when AIP-11 names one (`None`: the generic
    /// `lesson_invalid`).
    pub fn of_rule(code: &str) -> Option<ErrorCode> {
        Some(match code {
            // duplicate-slug
            "B002" => ErrorCode::SlugCollision,
            // supersedes-missing
            "B003" => ErrorCode::SupersedesMissing,
            // confidence-out-of-range
            "S013" => ErrorCode::ConfidenceOutOfRange,
            // overbroad-trigger
            "T001" => ErrorCode::TriggerOverbroad,
            // expired
            "B007" => ErrorCode::Expired,
            _ => return None,
        })
    }

    /// The code of refused candidates: the AIP-11 code of the first error-level finding that
    /// has one, else `lesson_invalid`.
    pub fn of_rejection(rejection: &Rejection) -> ErrorCode {
        rejection
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .find_map(|d| ErrorCode::of_rule(d.code))
            .unwrap_or(ErrorCode::LessonInvalid)
    }

    /// The code of a curation error.
    pub fn of_curate(e: &CurateError) -> ErrorCode {
        match e {
            CurateError::NotFound { .. } | CurateError::Archived { .. } => ErrorCode::NotFound,
            CurateError::Duplicate { .. } => ErrorCode::SlugCollision,
            CurateError::NotALesson { .. } | CurateError::InvalidSlug { .. } => {
                ErrorCode::LessonInvalid
            }
            CurateError::Refused(_) | CurateError::Included { .. } => ErrorCode::InvalidRequest,
            CurateError::Uneditable { .. } => ErrorCode::LessonInvalid,
            CurateError::Bank(crate::bank::BankError::NotFound(_)) => ErrorCode::BankUnavailable,
            CurateError::Edit(_) | CurateError::AfterLedger { .. } | CurateError::Lock { .. } => {
                ErrorCode::BankUnavailable
            }
            CurateError::ReadBack { .. }
            | CurateError::Bank(_)
            | CurateError::Ledger(_)
            | CurateError::Index(_) => ErrorCode::Internal,
        }
    }

    /// The code of an admission error.
    pub fn of_add(e: &AddError) -> ErrorCode {
        match e {
            AddError::Input { .. } => ErrorCode::LessonInvalid,
            AddError::Rejected(r) => ErrorCode::of_rejection(r),
            AddError::Curate(c) => ErrorCode::of_curate(c),
            AddError::Dedup(_) | AddError::PartlyWritten(_) => ErrorCode::Internal,
        }
    }

    /// The code of a retrieval error.
    pub fn of_retrieve(e: &RetrieveError) -> ErrorCode {
        match e {
            RetrieveError::Bank(crate::bank::BankError::NotFound(_)) => ErrorCode::BankUnavailable,
            RetrieveError::Template(_) => ErrorCode::Internal,
            RetrieveError::Bank(_) | RetrieveError::Corrupt(_) => ErrorCode::Internal,
            RetrieveError::Usage(crate::usage::UsageError::InvalidRun { .. }) => {
                ErrorCode::InvalidRequest
            }
            RetrieveError::Usage(_) => ErrorCode::BankUnavailable,
        }
    }
}

/// The error of the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody {
    /// AIP-11's code.
    pub code: ErrorCode,
    /// What went wrong and what to do, for people.
    pub message: String,
    /// Whether the same call may succeed later unchanged (a lock held, a file busy).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retryable: bool,
    /// Details for programs: findings as `lesson lint --output-format json` gives them,
    /// problems without a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<serde_json::Value>,
}

/// `{ok: false, error}`.
#[derive(Debug, Clone, Serialize)]
pub struct Envelope {
    /// Always `false`.
    pub ok: bool,
    /// The error.
    pub error: ErrorBody,
}

impl Envelope {
    /// An envelope with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Envelope {
        Envelope {
            ok: false,
            error: ErrorBody {
                code,
                message: message.into(),
                retryable: false,
                cause: None,
            },
        }
    }

    /// With details for programs.
    pub fn with_cause(mut self, cause: serde_json::Value) -> Envelope {
        self.error.cause = Some(cause);
        self
    }

    /// Marked retryable.
    pub fn retryable(mut self) -> Envelope {
        self.error.retryable = true;
        self
    }

    /// The envelope of a curation error.
    pub fn of_curate(e: &CurateError) -> Envelope {
        let env = Envelope::new(ErrorCode::of_curate(e), e.to_string());
        if matches!(e, CurateError::Edit(_)) {
            env.retryable()
        } else {
            env
        }
    }

    /// The envelope of an admission error: for refused candidates, their findings (as
    /// `lesson lint --output-format json` objects) and problems are the cause.
    pub fn of_add(e: &AddError) -> Envelope {
        let env = Envelope::new(ErrorCode::of_add(e), e.to_string());
        match e {
            AddError::Rejected(r) => env.with_cause(rejection_json(r)),
            AddError::Curate(CurateError::Edit(_)) => env.retryable(),
            _ => env,
        }
    }

    /// The envelope of a retrieval error.
    pub fn of_retrieve(e: &RetrieveError) -> Envelope {
        Envelope::new(ErrorCode::of_retrieve(e), e.to_string())
    }

    /// As JSON.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_else(|_| serde_json::json!({"ok": false}))
    }
}

/// Refused candidates as JSON: `{diagnostics: [...], problems: [{label, message}]}`.
pub fn rejection_json(r: &Rejection) -> serde_json::Value {
    let sources: super::Sources = r.sources.iter().collect();
    serde_json::json!({
        "diagnostics": diagnostics_json(&r.diagnostics, &sources),
        "problems": r
            .problems
            .iter()
            .map(|p| serde_json::json!({"label": p.label, "message": p.message}))
            .collect::<Vec<_>>(),
    })
}

/// Findings as the objects of `lesson lint --output-format json`.
pub fn diagnostics_json(
    diagnostics: &[Diagnostic],
    sources: &super::Sources<'_>,
) -> serde_json::Value {
    let text = super::json::render(diagnostics, sources);
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Array(Vec::new()))
}
