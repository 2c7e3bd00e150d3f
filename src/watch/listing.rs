//! `_index.md` from the watcher's index rather than from a loaded bank: the index holds every
//! field the listing shows (slug, title, outcome, confidence, counts, supersedes, expiry), so a
//! watcher keeps `_index.md` current without keeping a 100,000-lesson bank in memory. The
//! result is byte for byte what `lesson index` writes (the tests compare the two).

use std::collections::HashMap;

use crate::bank::Status;
use crate::index_md::{self, IndexEntry};
use crate::retrieve::index::Index;
use crate::retrieve::record::clamp_ns;
use crate::retrieve::Corrupt;

/// Every live lesson of `index` as an `_index.md` entry, with status judged at `now`, sorted
/// by slug, then path (as [`index_md::entries`] sorts a bank's).
pub fn entries(index: &Index, now: jiff::Timestamp) -> Result<Vec<IndexEntry>, Corrupt> {
    let listed = index.listed()?;
    // slug -> the slugs of lessons that supersede it (a lesson naming itself does not count)
    let mut superseded_by: HashMap<&str, Vec<&str>> = HashMap::new();
    for l in &listed {
        for old in &l.supersedes {
            if *old != l.slug {
                superseded_by.entry(old).or_default().push(&l.slug);
            }
        }
    }
    for by in superseded_by.values_mut() {
        by.sort_unstable();
        by.dedup();
    }
    let now_ns = clamp_ns(now.as_nanosecond());
    // a lesson with errors of its own is left out, as `lesson index` leaves it out; what it
    // supersedes stays superseded (above); a quarantined one is listed as quarantined
    let held: HashMap<&str, &crate::retrieve::HeldBack> = index
        .held_back()
        .iter()
        .map(|h| (h.path.as_str(), h))
        .collect();
    let mut entries: Vec<IndexEntry> = listed
        .iter()
        .filter(|l| held.get(l.path.as_str()).is_none_or(|h| h.codes.is_empty()))
        .map(|l| {
            let quarantine = held.get(l.path.as_str()).and_then(|h| h.quarantine.clone());
            let status = match (superseded_by.get(l.slug.as_str()), quarantine) {
                (Some(by), _) => Status::Superseded(by.iter().map(|s| s.to_string()).collect()),
                (None, Some(rules)) => Status::Quarantined(rules),
                (None, None) if l.expires_ns.is_some_and(|at| at <= now_ns) => Status::Expired,
                (None, None) => Status::Active,
            };
            let superseded_by = match &status {
                Status::Superseded(by) => by.clone(),
                _ => Vec::new(),
            };
            IndexEntry {
                link: index_md::link(&l.slug, &l.path),
                slug: l.slug.clone(),
                path: l.path.clone(),
                title: l.title.clone(),
                outcome: l.outcome.as_str().to_string(),
                confidence: format!("{:.2}", l.confidence),
                success_count: l.successes,
                failure_count: l.failures,
                status: index_md::status_text(&status),
                state: status.label(),
                superseded_by,
                shown: 0,
                last_shown: None,
                followed: 0,
                helped: 0,
                utility: None,
            }
        })
        .collect();
    entries.sort_by(|a, b| (&a.slug, &a.path).cmp(&(&b.slug, &b.path)));
    Ok(entries)
}

/// What `_index.md` shows of one file (`None`: no live lesson there): when no changed file's
/// key changed, the listing cannot have changed, and a body-only edit costs no rendering.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    slug: String,
    title: String,
    supersedes: Vec<String>,
    outcome: &'static str,
    confidence: u64,
    counts: (u64, u64),
    expires: Option<i64>,
    /// Held back for errors of its own (left out of `_index.md`) or quarantined.
    held: Option<crate::retrieve::HeldBack>,
}

/// The [`Key`] of the live lesson at `path` (relative to the bank), if any.
pub fn key(index: &Index, path: &str) -> Result<Option<Key>, Corrupt> {
    let Some(entry) = index.find(path)? else {
        return Ok(None);
    };
    Ok(index.listed_at(entry.id)?.map(|l| Key {
        slug: l.slug,
        title: l.title,
        supersedes: l.supersedes,
        outcome: l.outcome.as_str(),
        confidence: l.confidence.to_bits(),
        counts: (l.successes, l.failures),
        expires: l.expires_ns,
        held: index.held_back().iter().find(|h| h.path == path).cloned(),
    }))
}
