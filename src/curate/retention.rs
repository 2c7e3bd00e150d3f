//! The retention policy, `[retention]` in `lesson.toml`: which lessons leave the live set
//! (`lesson archive --policy` moves them to `_archive/`, an `archived` event naming the rule;
//! nothing is deleted) and which are flagged for review instead, and why. Every rule is off
//! unless set. A lesson marked `metadata.lesson.pinned: true` is never archived by policy, and
//! superseded lessons are left to their supersession.
//!
//! The rules, in the order they are tried (the first that applies names the event):
//! - `archive-expired-after-days = N`: expired for at least N days;
//! - `archive-failure-dominant-after-days = N`: `failure_count > success_count` for at least N
//!   days, since the outcome (or the `created`/`imported` event) that made it so, by its ledger;
//! - `archive-contradicted-at = N`: contradicted in at least N runs (distinct `contradicted`
//!   outcomes of its ledger), unless `review-contradicted-at` holds it for review;
//! - `archive-below-utility = X` with `min-shown = M`: utility ([`crate::usage`]) under X after
//!   being shown to at least M runs;
//! - `review-contradicted-at = N`: contradicted in at least N runs while it still succeeds more
//!   than it fails: flagged for review, not archived.

use crate::config::RetentionConfig;
use crate::ledger::{Applied, Counts, EventKind, Ledger};
use crate::lesson::Lesson;
use crate::usage::Usage;

const DAY: i64 = 86_400;

/// A `[retention]` rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// `archive-expired-after-days`.
    ExpiredAfterDays,
    /// `archive-failure-dominant-after-days`.
    FailureDominantAfterDays,
    /// `archive-contradicted-at`.
    ContradictedAt,
    /// `archive-below-utility` (with `min-shown`).
    BelowUtility,
    /// `review-contradicted-at`.
    ReviewContradictedAt,
}

impl Rule {
    /// The key in `[retention]`, which the `archived` event and the review name.
    pub fn key(self) -> &'static str {
        match self {
            Rule::ExpiredAfterDays => "archive-expired-after-days",
            Rule::FailureDominantAfterDays => "archive-failure-dominant-after-days",
            Rule::ContradictedAt => "archive-contradicted-at",
            Rule::BelowUtility => "archive-below-utility",
            Rule::ReviewContradictedAt => "review-contradicted-at",
        }
    }

    /// Whether the rule archives (else it flags for review).
    pub fn archives(self) -> bool {
        self != Rule::ReviewContradictedAt
    }
}

/// What the policy does to one lesson, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The rule that applies.
    pub rule: Rule,
    /// Why, in one line (the figures the rule compared).
    pub why: String,
}

/// Whether the policy has any rule set.
pub fn is_set(c: &RetentionConfig) -> bool {
    c.archive_expired_after_days.is_some()
        || c.archive_failure_dominant_after_days.is_some()
        || c.archive_contradicted_at.is_some()
        || c.archive_below_utility.is_some()
        || c.review_contradicted_at.is_some()
}

/// The policy's verdict on a live, unsuperseded lesson whose ledger is `ledger` and whose
/// retrieval figures are `usage`, at `now`: the first rule that applies, or `None`. A pinned
/// lesson gets none that archives.
pub fn verdict(
    c: &RetentionConfig,
    lesson: &Lesson,
    ledger: &Ledger,
    usage: &Usage,
    now: jiff::Timestamp,
) -> Option<Verdict> {
    let days_since = |at: jiff::Timestamp| (now.as_second() - at.as_second()).div_euclid(DAY);
    let (s, f) = (lesson.successes(), lesson.failures());
    let contradictions = ledger
        .distinct_outcomes()
        .filter(|(_, o)| o.applied == Applied::Contradicted)
        .count() as u64;
    let held_for_review = c
        .review_contradicted_at
        .is_some_and(|n| contradictions >= n.max(1) && s > f);
    let mut found: Vec<Verdict> = Vec::new();
    if let (Some(n), Some(expiry)) = (c.archive_expired_after_days, &lesson.expires_at) {
        let days = days_since(expiry.value.at);
        if expiry.value.at <= now && days >= n as i64 {
            let date = expiry.value.at.to_zoned(jiff::tz::TimeZone::UTC).date();
            found.push(Verdict {
                rule: Rule::ExpiredAfterDays,
                why: format!("expired on {date}, {days} days ago (at least {n})"),
            });
        }
    }
    if let Some(n) = c.archive_failure_dominant_after_days {
        if f > s {
            if let Some(since) = failure_dominant_since(ledger) {
                let days = days_since(since);
                if days >= n as i64 {
                    let date = since.to_zoned(jiff::tz::TimeZone::UTC).date();
                    found.push(Verdict {
                        rule: Rule::FailureDominantAfterDays,
                        why: format!(
                            "{f} failures against {s} successes since {date}, {days} days (at least {n})"
                        ),
                    });
                }
            }
        }
    }
    if let Some(n) = c.archive_contradicted_at {
        if contradictions >= n.max(1) && !held_for_review {
            found.push(Verdict {
                rule: Rule::ContradictedAt,
                why: format!(
                    "contradicted in {} (at least {n}); {s} successes, {f} failures",
                    runs(contradictions)
                ),
            });
        }
    }
    if let (Some(x), Some(utility)) = (c.archive_below_utility, usage.utility()) {
        if usage.shown >= c.min_shown.max(1) && utility < x {
            found.push(Verdict {
                rule: Rule::BelowUtility,
                why: format!(
                    "utility {utility:.2} under {x} after being shown to {} ({} followed, {} helped; min-shown {})",
                    runs(usage.shown), usage.followed, usage.helped, c.min_shown
                ),
            });
        }
    }
    if held_for_review {
        found.push(Verdict {
            rule: Rule::ReviewContradictedAt,
            why: format!(
                "contradicted in {} (at least {}) but it still succeeds more than it fails ({s} successes, {f} failures): decide whether it holds",
                runs(contradictions),
                c.review_contradicted_at.unwrap_or_default()
            ),
        });
    }
    found
        .into_iter()
        .find(|v| !(lesson.pinned && v.rule.archives()))
}

/// `1 run`, `2 runs`.
pub fn runs(n: u64) -> String {
    format!("{n} run{}", if n == 1 { "" } else { "s" })
}

/// Since when the ledger's tally has been failure-dominant without a break: the event that
/// last made `failure > success` (the initial `created`/`imported` event when it started so).
/// `None` when the ledger does not say (no initial event and no outcome) or it is not.
pub fn failure_dominant_since(ledger: &Ledger) -> Option<jiff::Timestamp> {
    let mut counts = Counts::default();
    let mut since = None;
    let dominant = |c: &Counts| c.failure_count > c.success_count;
    if let Some(entry) = ledger
        .entries
        .iter()
        .find(|e| matches!(e.event.kind, EventKind::Created(_) | EventKind::Imported(_)))
    {
        if let EventKind::Created(c) | EventKind::Imported(c) = entry.event.kind {
            counts = c;
            since = dominant(&counts).then_some(entry.event.at);
        }
    }
    for (entry, o) in ledger.distinct_outcomes() {
        let was = dominant(&counts);
        counts.success_count += o.delta.success;
        counts.failure_count += o.delta.failure;
        match (was, dominant(&counts)) {
            (false, true) => since = Some(entry.event.at),
            (true, false) => since = None,
            _ => {}
        }
    }
    since
}
