//! `expired` (B007).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::Check;

declare_rule! {
    /// A lesson is past its `expires_at`.
    ///
    /// ## What it does
    /// Reports a lesson whose `expires_at` is at or before now (`LESSON_NOW` when set).
    ///
    /// ## Why is this bad?
    /// It is not wrong: `expires_at` is a soft TTL and retrieval already skips the lesson. The
    /// finding says so, so that someone re-validates the lesson (and moves `expires_at`) or
    /// archives it.
    ///
    /// ## Example
    /// ```text
    /// expires_at: 2026-10-01T00:00:00Z
    /// ```
    pub static RULE = {
        code: "B007",
        name: "expired",
        level: Info,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for (doc, lesson) in bank.lessons() {
        let Some(expiry) = lesson
            .expires_at
            .as_ref()
            .filter(|_| lesson.is_expired(bank.now))
        else {
            continue;
        };
        let date = expiry.value.at.to_zoned(jiff::tz::TimeZone::UTC).date();
        out.push(
            Diagnostic::new(
                &RULE,
                &doc.source,
                expiry.span.clone(),
                format!("expired on {date}; retrieval skips it"),
            )
            .with_help(
                "move it to `_archive/` with `lesson archive --expired`, or re-validate it and move `expires_at` forward",
            ),
        );
    }
}
