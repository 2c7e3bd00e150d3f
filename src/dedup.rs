//! Near-duplicate lessons: pairs whose triggers say the same thing under similar slugs.
//!
//! A pair is a near-duplicate when all of these hold (thresholds in `[dedup]` of
//! `lesson.toml`, see [`DedupConfig`]):
//! 1. **text**: the trigram similarity of title + trigger description is at least
//!    `min-text-similarity`. Trigrams are the padded per-word trigrams of
//!    [`crate::retrieve::text`] (CJK runs included), as a set; similarity is Dice's coefficient
//!    `2|A∩B| / (|A| + |B|)`.
//! 2. **targets overlap**: one of the two has no targets (it applies to anyone), or a target of
//!    one can match the same caller as a target of the other (see [`targets_overlap`]). Lessons
//!    for different audiences are not duplicates, however alike their words.
//! 3. **score**: the weighted mean of slug similarity ([`slug_similarity`]), text similarity and
//!    tag overlap (Jaccard of the normalised tags; left out of the mean when neither lesson has
//!    tags) is at least `min-score`.
//!
//! Candidates come from an in-memory inverted index over the trigrams, never from comparing all
//! pairs. Terms are ordered rarest first (document frequency in the bank); by the prefix-filter
//! principle, two sets whose Dice similarity reaches `t` share a term among the first
//! `|A| − ⌈t·|A|/(2−t)⌉ + 1` rarest terms of each, so only those prefixes are indexed and probed,
//! and no pair above the text threshold is missed. `max-candidates` caps the lessons compared
//! with each lesson (those sharing the most prefix terms first), which bounds the work even in a
//! bank of look-alikes.
//!
//! Only live lessons are candidates: superseded lessons (named in another lesson's
//! `supersedes`) and lessons under `_archive/` (which a bank never loads) are left out. Expired
//! lessons are still candidates: they are in the bank until archived. When two files share a
//! slug, the first (by path) stands for it.

use std::collections::{BTreeSet, HashMap};

use rayon::prelude::*;
use serde::Serialize;

use crate::bank::{Bank, Status};
use crate::config::DedupConfig;
use crate::lesson::{Lesson, Target};
use crate::retrieve::text::{self, Kind, Term};

/// Two lessons that look like near-duplicates, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// A slug; in [`pairs`] the byte-smaller slug, in [`duplicate_of`] the existing lesson.
    pub a: String,
    /// The other slug (in [`duplicate_of`], the candidate's slug).
    pub b: String,
    /// Similarity of the slugs, 0 to 1 ([`slug_similarity`]).
    pub slug_similarity: f64,
    /// Trigram similarity (Dice) of title + trigger description, 0 to 1.
    pub text_similarity: f64,
    /// Tags both lessons carry, normalised (`Code_Review` → `code review`), sorted.
    pub shared_tags: Vec<String>,
    /// Whether the targets can match the same caller (true when either has none).
    pub targets_overlap: bool,
    /// The weighted score the thresholds apply to, 0 to 1.
    pub score: f64,
}

/// Dedup could not run.
#[derive(Debug, thiserror::Error)]
pub enum DedupError {
    /// A `[dedup]` threshold or weight is out of range.
    #[error("lesson.toml: [dedup] {key} = {value} is out of range ({expected})")]
    Config {
        /// The key.
        key: &'static str,
        /// Its value, as written.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
}

/// Every near-duplicate pair in the bank, deterministic order (score desc, then slugs).
pub fn pairs(bank: &Bank) -> Result<Vec<Pair>, DedupError> {
    let config = &bank.config.dedup;
    check(config)?;
    let lessons = live_lessons(bank);
    let features: Vec<Features> = lessons.par_iter().map(|l| Features::of(l)).collect();
    let index = Index::build(&features, config);
    let mut found: Vec<Pair> = (0..features.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let features = &features;
            index
                .candidates(&features[i], config)
                .into_iter()
                // each unordered pair once: from its smaller index
                .filter(move |&j| j > i)
                .filter_map(move |j| compare(&features[i], &features[j], config))
        })
        .collect();
    sort(&mut found);
    Ok(found)
}

/// The existing lesson `candidate` duplicates best, if any is above the bank's thresholds.
///
/// `candidate` is compared with the bank's live lessons (an existing lesson with the same slug
/// included); in the pair, `a` is the existing lesson and `b` the candidate.
pub fn duplicate_of(bank: &Bank, candidate: &Lesson) -> Result<Option<Pair>, DedupError> {
    let config = &bank.config.dedup;
    check(config)?;
    let lessons = live_lessons(bank);
    let mut features: Vec<Features> = lessons.par_iter().map(|l| Features::of(l)).collect();
    let query = features.len();
    features.push(Features::of(candidate));
    let index = Index::build(&features, config);
    let best = index
        .candidates(&features[query], config)
        .into_iter()
        .filter(|&j| j != query)
        .filter_map(|j| compare(&features[j], &features[query], config))
        .min_by(order);
    Ok(best)
}

/// Whether a pair of already computed features is a near-duplicate under `config`.
fn compare(a: &Features, b: &Features, config: &DedupConfig) -> Option<Pair> {
    let text = dice(&a.trigrams, &b.trigrams);
    if text < config.min_text_similarity {
        return None;
    }
    let targets_overlap = targets_overlap_globs(&a.targets, &b.targets);
    if !targets_overlap {
        return None;
    }
    let slug = slug_similarity(&a.slug, &b.slug);
    let shared_tags: Vec<String> = a.tags.intersection(&b.tags).cloned().collect();
    let mut weighted = config.slug_weight * slug + config.text_weight * text;
    let mut weights = config.slug_weight + config.text_weight;
    if !a.tags.is_empty() || !b.tags.is_empty() {
        let union = a.tags.union(&b.tags).count();
        weighted += config.tag_weight * shared_tags.len() as f64 / union as f64;
        weights += config.tag_weight;
    }
    let score = if weights > 0.0 {
        weighted / weights
    } else {
        text
    };
    let score = round(score);
    if score < config.min_score {
        return None;
    }
    Some(Pair {
        a: a.slug.clone(),
        b: b.slug.clone(),
        slug_similarity: round(slug),
        text_similarity: round(text),
        shared_tags,
        targets_overlap,
        score,
    })
}

/// Four decimals: enough to rank, and stable in JSON and snapshots.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Score descending, then `a`, then `b`.
fn order(x: &Pair, y: &Pair) -> std::cmp::Ordering {
    y.score
        .total_cmp(&x.score)
        .then_with(|| x.a.cmp(&y.a))
        .then_with(|| x.b.cmp(&y.b))
}

fn sort(found: &mut [Pair]) {
    for p in found.iter_mut() {
        if p.b < p.a {
            std::mem::swap(&mut p.a, &mut p.b);
        }
    }
    found.sort_by(order);
}

fn check(config: &DedupConfig) -> Result<(), DedupError> {
    let unit = |key, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(DedupError::Config {
                key,
                value: v.to_string(),
                expected: "0 to 1",
            })
        }
    };
    let weight = |key, v: f64| {
        if v >= 0.0 && v.is_finite() {
            Ok(())
        } else {
            Err(DedupError::Config {
                key,
                value: v.to_string(),
                expected: "a finite number, 0 or more",
            })
        }
    };
    unit("min-text-similarity", config.min_text_similarity)?;
    unit("min-score", config.min_score)?;
    weight("slug-weight", config.slug_weight)?;
    weight("text-weight", config.text_weight)?;
    weight("tag-weight", config.tag_weight)?;
    if config.max_candidates == 0 {
        return Err(DedupError::Config {
            key: "max-candidates",
            value: "0".into(),
            expected: "1 or more",
        });
    }
    Ok(())
}

/// The bank's live lessons, one per slug (the first file by path), in slug order.
fn live_lessons(bank: &Bank) -> Vec<&Lesson> {
    bank.by_slug()
        .into_values()
        .map(|(_, lesson)| lesson)
        .filter(|lesson| !matches!(bank.status(lesson), Status::Superseded(_)))
        .collect()
}

/// Similarity of two slugs, 0 to 1: Sørensen–Dice of their character bigrams (strsim), which
/// forgives reordered words (`retry-flaky-tests` / `flaky-tests-retry`) better than an edit
/// distance does.
pub fn slug_similarity(a: &str, b: &str) -> f64 {
    strsim::sorensen_dice(a, b)
}

/// Whether two target lists can match the same caller: true when either is empty (anyone), else
/// when some target of `a` and some target of `b` agree on every key both give (the globs are
/// equal, one is `*`, or one glob matches the other as text).
pub fn targets_overlap(a: &[Target], b: &[Target]) -> bool {
    let norm = |t: &Target| -> [Option<String>; 3] {
        [&t.operator, &t.role, &t.skill].map(|g| g.as_ref().map(|g| g.value.clone()))
    };
    let a: Vec<_> = a.iter().map(norm).collect();
    let b: Vec<_> = b.iter().map(norm).collect();
    targets_overlap_globs(&a, &b)
}

fn targets_overlap_globs(a: &[[Option<String>; 3]], b: &[[Option<String>; 3]]) -> bool {
    if a.is_empty() || b.is_empty() {
        return true;
    }
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.iter().zip(y).all(|(g, h)| match (g, h) {
                (Some(g), Some(h)) => globs_meet(g, h),
                _ => true,
            })
        })
    })
}

/// Whether two globs can match one string, approximately: equal, either `*`, or either
/// matching the other's text.
fn globs_meet(g: &str, h: &str) -> bool {
    let matches = |glob: &str, text: &str| {
        globset::Glob::new(glob)
            .map(|g| g.compile_matcher().is_match(text))
            .unwrap_or(false)
    };
    g == h || g == "*" || h == "*" || matches(g, h) || matches(h, g)
}

/// What dedup needs of a lesson.
struct Features {
    slug: String,
    /// Sorted, distinct trigram terms of title + trigger description.
    trigrams: Vec<Term>,
    /// Normalised tags.
    tags: BTreeSet<String>,
    /// Targets as (operator, role, skill) globs.
    targets: Vec<[Option<String>; 3]>,
}

impl Features {
    fn of(lesson: &Lesson) -> Features {
        let mut trigrams = Vec::new();
        let mut collect = |t: Term| {
            if text::kind(t) == Kind::Trigram {
                trigrams.push(t);
            }
        };
        text::for_each_term(&lesson.title.value, &mut collect);
        text::for_each_term(&lesson.trigger.description.value, &mut collect);
        trigrams.sort_unstable();
        trigrams.dedup();
        Features {
            slug: lesson.slug.value.clone(),
            trigrams,
            tags: lesson
                .trigger
                .tags
                .iter()
                .map(|t| text::tag_key(&t.value))
                .filter(|t| !t.is_empty())
                .collect(),
            targets: lesson
                .trigger
                .targets
                .iter()
                .map(|t| {
                    [&t.operator, &t.role, &t.skill].map(|g| g.as_ref().map(|g| g.value.clone()))
                })
                .collect(),
        }
    }
}

/// Dice's coefficient of two sorted, distinct term lists; 0 when both are empty.
fn dice(a: &[Term], b: &[Term]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

/// Inverted index over each lesson's prefix: its rarest terms.
struct Index {
    /// Document frequency of each term.
    df: HashMap<Term, u32>,
    /// term -> lessons whose prefix holds it, ascending.
    postings: HashMap<Term, Vec<u32>>,
}

impl Index {
    fn build(features: &[Features], config: &DedupConfig) -> Index {
        let mut df: HashMap<Term, u32> = HashMap::new();
        for f in features {
            for &t in &f.trigrams {
                *df.entry(t).or_default() += 1;
            }
        }
        let mut index = Index {
            df,
            postings: HashMap::new(),
        };
        for (i, f) in features.iter().enumerate() {
            for t in index.prefix(&f.trigrams, config.min_text_similarity) {
                index.postings.entry(t).or_default().push(i as u32);
            }
        }
        index
    }

    /// The rarest terms of a set that any set with Dice similarity ≥ `t` must share one of.
    fn prefix(&self, trigrams: &[Term], t: f64) -> Vec<Term> {
        let mut terms = trigrams.to_vec();
        terms.sort_unstable_by_key(|&x| (self.df.get(&x).copied().unwrap_or(0), x));
        let n = terms.len();
        // Dice(A, B) ≥ t implies |A ∩ B| ≥ t·|A| / (2 − t)
        let overlap = ((t * n as f64) / (2.0 - t) - 1e-9).ceil().max(1.0) as usize;
        let keep = (n + 1).saturating_sub(overlap).min(n);
        terms.truncate(keep);
        terms
    }

    /// Lessons that may reach the text threshold with `f`: those sharing a prefix term, the
    /// `max-candidates` sharing the most first (ties by index).
    fn candidates(&self, f: &Features, config: &DedupConfig) -> Vec<usize> {
        let mut shared: HashMap<u32, u32> = HashMap::new();
        for t in self.prefix(&f.trigrams, config.min_text_similarity) {
            if let Some(list) = self.postings.get(&t) {
                for &j in list {
                    *shared.entry(j).or_default() += 1;
                }
            }
        }
        let mut ranked: Vec<(u32, u32)> = shared.into_iter().collect();
        ranked.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
        ranked.truncate(config.max_candidates.saturating_add(1));
        ranked.into_iter().map(|(j, _)| j as usize).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_of_sets() {
        assert_eq!(dice(&[1, 2, 3], &[1, 2, 3]), 1.0);
        assert_eq!(dice(&[1, 2], &[3, 4]), 0.0);
        assert_eq!(dice(&[1, 2, 3, 4], &[3, 4]), 2.0 * 2.0 / 6.0);
        assert_eq!(dice(&[], &[]), 0.0);
    }

    #[test]
    fn globs_meet_when_one_can_match_the_other() {
        assert!(globs_meet("reviewer", "reviewer"));
        assert!(globs_meet("review*", "reviewer"));
        assert!(globs_meet("*", "x"));
        assert!(!globs_meet("reviewer", "writer"));
        let t = |r: &str| [None, Some(r.to_string()), None];
        assert!(targets_overlap_globs(&[], &[t("x")]));
        assert!(!targets_overlap_globs(&[t("a")], &[t("b")]));
        assert!(targets_overlap_globs(&[t("a"), t("b")], &[t("b")]));
        // different keys do not exclude each other
        let s = [None, None, Some("rust".to_string())];
        assert!(targets_overlap_globs(&[t("a")], &[s]));
    }
}
