//! `lesson review`: the lessons that need a human. Failure-dominant lessons (AIP-11: "SHOULD
//! trigger lesson review", never auto-retirement), expired ones, ones whose counts fall in the
//! mixed band but whose outcome is not `mixed`, ones whose ledger took non-zero counts from the
//! file (an `imported` event: counts no recorded outcome backs), ones no outcome was ever
//! recorded for since they were created, and near-duplicate pairs ([`crate::dedup`]). Superseded lessons are out of
//! retrieval and are left alone.

use serde::Serialize;

use crate::bank::{Bank, Status};
use crate::dedup::{self, DedupError};
use crate::ledger::{Counts, EventKind, Ledger, LedgerError, LOG_DIR};
use crate::lesson::{slug_problem, Outcome};

use super::retention;

/// Why a lesson needs a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Admitted in quarantine: it tripped injection-carrier rules, and is never served until
    /// `lesson review --approve` clears it.
    Quarantined,
    /// More failures than successes.
    FailureDominant,
    /// Past its `expires_at`.
    Expired,
    /// Successes and failures roughly equal, outcome not `mixed`.
    MixedBand,
    /// The ledger's initial counts are an `imported` event with non-zero counts: they came
    /// from the file when the ledger began, not from recorded outcomes.
    ImportedCounts,
    /// No outcome recorded since it was created, for `[review] unapplied-days`.
    NeverApplied,
    /// It and another lesson look like near-duplicates (`[dedup]`).
    NearDuplicate,
    /// Shown to at least `[review] shown-never-followed` runs, none of which followed it.
    ShownNeverFollowed,
    /// No logged search showed it for `[review] unshown-days`.
    Unshown,
    /// The retention policy (`[retention]`) archives it at the next `lesson archive --policy`,
    /// or flags it for review (`review-contradicted-at`): `rule` says which.
    Retention,
}

impl Reason {
    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Quarantined => "quarantined",
            Reason::FailureDominant => "failure-dominant",
            Reason::Expired => "expired",
            Reason::MixedBand => "mixed-band",
            Reason::ImportedCounts => "imported-counts",
            Reason::NeverApplied => "never-applied",
            Reason::NearDuplicate => "near-duplicate",
            Reason::ShownNeverFollowed => "shown-never-followed",
            Reason::Unshown => "unshown",
            Reason::Retention => "retention",
        }
    }
}

/// One lesson and one reason to review it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Why.
    pub reason: Reason,
    /// The lesson.
    pub slug: String,
    /// Its file.
    pub path: String,
    /// What was found, in one line.
    pub message: String,
    /// `outcome`.
    pub outcome: Outcome,
    /// `success_count`.
    pub success_count: u64,
    /// `failure_count`.
    pub failure_count: u64,
    /// For `expired`: when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// For `never-applied`: since when the lesson has waited for an outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// For `imported-counts`: the `imported` event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// For `near-duplicate`: the other lesson of the pair (the finding is on the byte-smaller
    /// slug, once per pair).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// For `shown-never-followed` and `unshown`: the runs logged searches showed it to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<u64>,
    /// For `unshown`: when a logged search last showed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_shown: Option<String>,
    /// For `retention`: the `[retention]` rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// For `retention`: whether `lesson archive --policy` archives it (else it is flagged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archive: Option<bool>,
    /// For `quarantined`: the injection-carrier rules it tripped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Vec<String>>,
}

/// The `imported` event an `imported-counts` finding is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Imported {
    /// The ledger file, relative to the bank.
    pub ledger: String,
    /// Its 1-based line.
    pub line: usize,
    /// When it was written.
    pub at: String,
    /// Who wrote it.
    pub by: String,
    /// The counts it took from the file.
    pub success_count: u64,
    /// The counts it took from the file.
    pub failure_count: u64,
}

/// `lesson review` could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// A ledger could not be read.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Near-duplicates could not be looked for.
    #[error(transparent)]
    Dedup(#[from] DedupError),
    /// The retrieval log could not be read.
    #[error(transparent)]
    Usage(#[from] crate::usage::UsageError),
}

const DAY: i64 = 86_400;

/// Every finding, by reason, then slug.
pub fn review(bank: &Bank) -> Result<Vec<Finding>, ReviewError> {
    review_with(bank, None)
}

/// [`review`], its near-duplicates found with the lessons' embeddings when a model is
/// configured ([`dedup::pairs_with`]): the pairs `lesson dedup` reports.
pub fn review_with(
    bank: &Bank,
    embeddings: Option<&dedup::Embeddings>,
) -> Result<Vec<Finding>, ReviewError> {
    let config = &bank.config.review;
    let retention_on = retention::is_set(&bank.config.retention);
    let log = crate::usage::ShownLog::read(&bank.root)?;
    let mut out = Vec::new();
    let lessons = bank.by_slug();
    for pair in dedup::pairs_with(bank, embeddings)? {
        let Some((doc, lesson)) = lessons.get(pair.a.as_str()) else {
            continue;
        };
        let tags = if pair.shared_tags.is_empty() {
            String::new()
        } else {
            format!(", shared tags: {}", pair.shared_tags.join(", "))
        };
        out.push(Finding {
            reason: Reason::NearDuplicate,
            slug: pair.a.clone(),
            path: doc.source.path.display().to_string(),
            message: format!(
                "reads like `{}` (score {:.2}: slug {:.2}, text {:.2}{tags}): merge them (`lesson supersede OLD --by NEW`) or make their triggers distinct",
                pair.b, pair.score, pair.slug_similarity, pair.text_similarity
            ),
            outcome: lesson.outcome.value,
            success_count: lesson.successes(),
            failure_count: lesson.failures(),
            expires_at: None,
            since: None,
            imported: None,
            duplicate_of: Some(pair.b),
            shown: None,
            last_shown: None,
            rule: None,
            archive: None,
            quarantine: None,
        });
    }
    for (slug, (doc, lesson)) in lessons {
        let status = bank.status(lesson);
        if matches!(status, Status::Superseded(_)) {
            continue;
        }
        let (s, f) = (lesson.successes(), lesson.failures());
        let finding = |reason, message: String| Finding {
            reason,
            slug: slug.to_string(),
            path: doc.source.path.display().to_string(),
            message,
            outcome: lesson.outcome.value,
            success_count: s,
            failure_count: f,
            expires_at: None,
            since: None,
            imported: None,
            duplicate_of: None,
            shown: None,
            last_shown: None,
            rule: None,
            archive: None,
            quarantine: None,
        };
        if let Status::Quarantined(rules) = &status {
            // not served yet: what else there is to say waits for the approval
            out.push(Finding {
                quarantine: Some(rules.clone()),
                ..finding(Reason::Quarantined, quarantine_message(slug, rules))
            });
            continue;
        }
        if f > s {
            out.push(finding(
                Reason::FailureDominant,
                format!(
                    "{f} failure{} against {s} success{}: retrieval shows it as a caution; rewrite, supersede or archive it",
                    plural(f, "", "s"),
                    plural(s, "", "es")
                ),
            ));
        }
        if let (Status::Expired, Some(expiry)) = (&status, &lesson.expires_at) {
            let date = expiry.value.at.to_zoned(jiff::tz::TimeZone::UTC).date();
            out.push(Finding {
                expires_at: Some(expiry.value.at.to_string()),
                ..finding(
                    Reason::Expired,
                    format!("expired on {date}: re-validate it and move `expires_at`, or `lesson archive {slug}`"),
                )
            });
        }
        if lesson.outcome.value != Outcome::Mixed && config.in_mixed_band(s, f) {
            out.push(finding(
                Reason::MixedBand,
                format!(
                    "{s} successes and {f} failures, but `outcome: {}`: it holds only under some conditions; set `outcome: mixed` and say which",
                    lesson.outcome.value
                ),
            ));
        }
        if slug_problem(slug).is_some() {
            continue;
        }
        let ledger = Ledger::read(&bank.root, slug)?;
        let usage = log.usage(slug, &ledger);
        if let Some(v) = retention_on
            .then(|| retention::verdict(&bank.config.retention, lesson, &ledger, &usage, bank.now))
            .flatten()
        {
            let what = if v.rule.archives() {
                "`lesson archive --policy` archives it"
            } else {
                "flagged for review"
            };
            out.push(Finding {
                rule: Some(v.rule.key()),
                archive: Some(v.rule.archives()),
                ..finding(
                    Reason::Retention,
                    format!("{what} ({}): {}", v.rule.key(), v.why),
                )
            });
        }
        if log.exists {
            let n = config.shown_never_followed;
            if n > 0 && usage.shown >= n && usage.followed == 0 {
                out.push(Finding {
                    shown: Some(usage.shown),
                    ..finding(
                        Reason::ShownNeverFollowed,
                        format!(
                            "shown to {}, followed in none: is it useful where it is shown? sharpen its trigger, or archive it",
                            retention::runs(usage.shown)
                        ),
                    )
                });
            }
            let since = usage.last_shown.or_else(|| ledger.since());
            if let Some(since) = since.filter(|_| config.unshown_days > 0) {
                let days = (bank.now.as_second() - since.as_second()).div_euclid(DAY);
                if days >= 0 && days as u64 >= config.unshown_days {
                    let date = since.to_zoned(jiff::tz::TimeZone::UTC).date();
                    let what = match usage.last_shown {
                        Some(_) => format!("last shown {date}"),
                        None => format!("never shown; entered the ledger {date}"),
                    };
                    out.push(Finding {
                        shown: Some(usage.shown),
                        last_shown: usage.last_shown.map(|t| t.to_string()),
                        ..finding(
                            Reason::Unshown,
                            format!("no logged search showed it in {days} days ({what}): does any request still meet its trigger?"),
                        )
                    });
                }
            }
        }
        if let Some((imported, date)) = imported_counts(&ledger, slug) {
            out.push(Finding {
                message: format!(
                    "counts {}/{} entered its ledger from the file (`imported`, {} line {}, {date} by {}), not from recorded outcomes: check them against real runs",
                    imported.success_count,
                    imported.failure_count,
                    imported.ledger,
                    imported.line,
                    imported.by
                ),
                imported: Some(imported),
                ..finding(Reason::ImportedCounts, String::new())
            });
        }
        if ledger.outcomes().next().is_some() {
            continue;
        }
        let (since, what) = match ledger.since() {
            Some(at) => (Some(at), "entered the ledger"),
            None => (modified(&doc.source.path), "file last modified"),
        };
        let Some(since) = since else { continue };
        let days = (bank.now.as_second() - since.as_second()).div_euclid(DAY);
        if days >= 0 && days as u64 >= config.unapplied_days {
            let date = since.to_zoned(jiff::tz::TimeZone::UTC).date();
            out.push(Finding {
                since: Some(since.to_string()),
                ..finding(
                    Reason::NeverApplied,
                    format!("no outcome recorded in {days} days ({what} {date}): is its trigger ever met?"),
                )
            });
        }
    }
    out.sort_by(|a, b| {
        (a.reason, &a.slug, &a.duplicate_of).cmp(&(b.reason, &b.slug, &b.duplicate_of))
    });
    Ok(out)
}

/// The ledger's initial event when it is an `imported` one with non-zero counts (the first
/// `created` or `imported` event is the one the counts start from).
fn imported_counts(ledger: &Ledger, slug: &str) -> Option<(Imported, jiff::civil::Date)> {
    let entry = ledger
        .entries
        .iter()
        .find(|e| matches!(e.event.kind, EventKind::Created(_) | EventKind::Imported(_)))?;
    let EventKind::Imported(counts) = entry.event.kind else {
        return None;
    };
    let at = entry.event.at;
    (counts != Counts::default()).then(|| {
        let imported = Imported {
            ledger: format!("{LOG_DIR}/{slug}.jsonl"),
            line: entry.line,
            at: at.to_string(),
            by: entry.event.by.clone(),
            success_count: counts.success_count,
            failure_count: counts.failure_count,
        };
        (imported, at.to_zoned(jiff::tz::TimeZone::UTC).date())
    })
}

/// What a `quarantined` finding says: the rules, by code and name, and what to do.
fn quarantine_message(slug: &str, rules: &[String]) -> String {
    let named: Vec<String> = rules
        .iter()
        .map(|code| match crate::lint::find_rule(code) {
            Some(rule) => format!("{code} {}", rule.name),
            None => code.clone(),
        })
        .collect();
    let tripped = if named.is_empty() {
        "admitted in quarantine".to_string()
    } else {
        format!("admitted in quarantine for {}", named.join(", "))
    };
    format!("{tripped}: never served until approved; read it (`lesson lint` shows where), then `lesson review --approve {slug}`")
}

fn modified(path: &std::path::Path) -> Option<jiff::Timestamp> {
    let time = std::fs::metadata(path).ok()?.modified().ok()?;
    jiff::Timestamp::try_from(time).ok()
}

fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}
