//! Near-duplicate lessons: pairs whose triggers say the same thing under similar slugs.
//!
//! A pair is a near-duplicate when all of these hold (thresholds in `[dedup]` of
//! `lesson.toml`, see [`DedupConfig`]):
//! 1. **text**: the trigram similarity of title + trigger description is at least
//!    `min-text-similarity`. A lesson's terms are the padded per-word trigrams of
//!    [`crate::retrieve::text`]'s words, and for CJK runs (written without spaces) their
//!    character bigrams, as a set. Similarity is Dice's coefficient weighted by rarity:
//!    `2·W(A∩B) / (W(A) + W(B))`, a term weighing `ln(1 + N/df)` among the `N` lessons
//!    compared, so that what every lesson says ("the implementation is incorrect because",
//!    a template's placeholder) counts for little and what only two lessons say counts most.
//!    (Unweighted Dice was measured too: `cargo xtask eval-dedup` found it less precise at
//!    every recall on the shared corpora.)
//! 2. **targets overlap**: one of the two has no targets (it applies to anyone), or a target of
//!    one can match the same caller as a target of the other (see [`targets_overlap`]). Lessons
//!    for different audiences are not duplicates, however alike their words.
//! 3. **score**: the weighted mean of slug similarity ([`slug_similarity`]), text similarity and
//!    tag overlap (Jaccard of the normalised tags; left out of the mean when neither lesson has
//!    tags) is at least `min-score`. With the default weights (slug 1, text 2), a lesson copied
//!    word for word under an unrelated slug still scores 2/3, above the default `min-score`.
//!
//! Candidates come from an in-memory inverted index over those terms, never from comparing all
//! pairs. Each lesson's terms are ordered rarest first (document frequency among the lessons
//! compared, ties by term). By the prefix-filter principle only a prefix of each lesson's
//! rarest terms needs indexing and probing (see `prefix_len`), and the first term two lessons are
//! found to share bounds what they can share at all (the positional filter). Two caps bound the
//! work per lesson whatever the bank looks like: a probe reads at most `max-postings` index
//! entries (rarest terms first, so what is cut is the commonest terms' lists), and at most
//! `max-candidates` lessons (those sharing the most prefix terms) are compared with it. While
//! neither cap is reached, no pair above the thresholds is missed: [`pairs_exhaustive`]
//! compares all pairs, and a property test checks that both agree. In a crowd of look-alikes
//! (a templated bank, or one lesson saved a hundred times) the caps are reached and some pairs
//! of the crowd go unreported; each of its lessons is still paired with its closest ones.
//!
//! **With a model** (`[retrieve] model`), [`pairs_with`] and [`duplicates_of_with`] take the
//! lessons' [`Embeddings`] too: a pair whose cosine reaches `min-semantic-similarity` is a
//! pair whatever its words (its score counts the cosine in place of the text similarity when
//! higher), found by comparing every two vectors; below that threshold nothing changes, so a
//! model only adds pairs.
//!
//! Only live lessons are candidates: superseded lessons (named in another lesson's
//! `supersedes`) and lessons under `_archive/` (which a bank never loads) are left out. Expired
//! lessons are still candidates: they are in the bank until archived. When two files share a
//! slug, the first (by path) stands for it.

use std::collections::BTreeSet;

use rayon::prelude::*;
use serde::Serialize;

use crate::bank::{Bank, Status};
use crate::config::DedupConfig;
use crate::document::Document;
use crate::lesson::{Lesson, Target};
use crate::retrieve::segment::TermMap;
use crate::retrieve::text::{self, Term};
use crate::retrieve::vectors::{self, Request, Vectors};
pub use crate::retrieve::Embeddings;

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
    /// The cosine of the two lessons' embeddings (clamped at 0), when a model is configured
    /// ([`Embeddings`]) and both have a vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_similarity: Option<f64>,
    /// Tags both lessons carry, normalised (`Code_Review` → `code review`), sorted.
    pub shared_tags: Vec<String>,
    /// Whether the targets can match the same caller (true when either has none).
    pub targets_overlap: bool,
    /// The weighted score the thresholds apply to, 0 to 1.
    pub score: f64,
    /// In [`pairs_across`]: the bank of `a` (`.` for the bank in front).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_bank: Option<String>,
    /// In [`pairs_across`]: the bank of `b`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_bank: Option<String>,
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
    pairs_with(bank, None)
}

/// [`pairs`], with the lessons' embeddings when a model is configured: a pair whose cosine
/// is at least the threshold (`[dedup] min-semantic-similarity`, else the model's own) is
/// compared even when its words differ, and its score counts the cosine in place of the text
/// similarity when the cosine is higher (as if its words were as alike as its meaning). A
/// model only adds pairs: one whose cosine is below the threshold is judged by words alone.
///
/// The pairs by meaning come from comparing every two lessons' vectors (integer dot products
/// of the int8 codes, tile by tile, in parallel): quadratic, about `n² / 2 · dimension`
/// operations.
pub fn pairs_with(bank: &Bank, embeddings: Option<&Embeddings>) -> Result<Vec<Pair>, DedupError> {
    pairs_among(bank, embeddings, None)
}

/// The pairs of [`pairs_with`] that have a lesson in `slugs` (`lesson add`'s check of the
/// lessons it created): the cosines are taken of those lessons' rows alone, so the pass by
/// meaning costs `slugs.len() · n` dot products, not `n² / 2`.
pub fn pairs_involving(
    bank: &Bank,
    embeddings: Option<&Embeddings>,
    slugs: &BTreeSet<&str>,
) -> Result<Vec<Pair>, DedupError> {
    pairs_among(bank, embeddings, Some(slugs))
}

/// [`pairs_with`], or with `involved`, [`pairs_involving`].
fn pairs_among(
    bank: &Bank,
    embeddings: Option<&Embeddings>,
    involved: Option<&BTreeSet<&str>>,
) -> Result<Vec<Pair>, DedupError> {
    let config = &bank.config.dedup;
    check(config)?;
    let live = live_documents(bank);
    let lessons: Vec<&Lesson> = live.iter().map(|(_, l)| *l).collect();
    let (features, index) = Index::build(&lessons, config);
    let meaning = embeddings.map(|e| Meaning::new(e, bank, &live, config));
    // every lesson's neighbours by meaning after it, all at once (tiled), unless only a few
    // lessons' pairs are asked for: then each of their rows against all
    let after = match (&meaning, involved) {
        (Some(m), None) => m.all_neighbours(features.len(), config.max_candidates),
        _ => Vec::new(),
    };
    let all: Vec<usize> = (0..features.len()).collect();
    // every lesson's candidates first, by index, so that a pair both lessons found is compared
    // once (in a crowd of look-alikes, most are)
    let candidates: Vec<Vec<u32>> = all
        // chunks, not single lessons, so that each scratch space (a counter per lesson) is
        // allocated rarely
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            let mut scratch = index.scratch();
            let meaning = meaning.as_ref();
            chunk
                .iter()
                .map(|&i| {
                    let mut c: Vec<u32> = index
                        .candidates(i, &features[i], config, &mut scratch)
                        .into_iter()
                        .map(|j| j as u32)
                        .collect();
                    let n = features.len();
                    match (meaning, involved) {
                        (Some(_), None) => c.extend(&after[i]),
                        (Some(m), Some(slugs)) if slugs.contains(features[i].slug.as_str()) => {
                            c.extend(m.neighbours(i, 0..n, config.max_candidates))
                        }
                        _ => {}
                    }
                    c.sort_unstable();
                    c.dedup();
                    c
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut found: Vec<Pair> = (0..features.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let (features, index, candidates) = (&features, &index, &candidates);
            let meaning = meaning.as_ref();
            candidates[i]
                .iter()
                .map(|&j| j as usize)
                // from the smaller index, or from the larger when the smaller did not find it
                .filter(move |&j| i < j || candidates[j].binary_search(&(i as u32)).is_err())
                .filter_map(move |j| {
                    let (x, y) = (i.min(j), i.max(j));
                    let semantic = meaning.and_then(|m| m.judge(x, y));
                    compare_features(&features[x], &features[y], &index.weights, config, semantic)
                })
        })
        .collect();
    if let Some(slugs) = involved {
        found.retain(|p| slugs.contains(p.a.as_str()) || slugs.contains(p.b.as_str()));
    }
    sort(&mut found);
    Ok(found)
}

/// The near-duplicate pairs whose two lessons are in different banks of a layered stack
/// (`[banks] include`): `banks` in the stack's order, with their names, each bank's live
/// lessons (statuses as the stack links them), under the front bank's `[dedup]`; `a_bank` and
/// `b_bank` name the banks of `a` and `b`. Pairs
/// inside one bank are [`pairs`]'s.
pub fn pairs_across(banks: &[(&str, &Bank)]) -> Result<Vec<Pair>, DedupError> {
    let Some((_, front)) = banks.first() else {
        return Ok(Vec::new());
    };
    let config = &front.config.dedup;
    check(config)?;
    let mut lessons = Vec::new();
    let mut owner = Vec::new();
    for (i, (_, bank)) in banks.iter().enumerate() {
        for lesson in live_lessons(bank) {
            lessons.push(lesson);
            owner.push(i);
        }
    }
    let (features, index) = Index::build(&lessons, config);
    let mut scratch = index.scratch();
    let mut across = BTreeSet::new();
    for (i, f) in features.iter().enumerate() {
        for j in index.candidates(i, f, config, &mut scratch) {
            if owner[i] != owner[j] {
                across.insert((i.min(j), i.max(j)));
            }
        }
    }
    let mut found: Vec<Pair> = across
        .into_iter()
        .filter_map(|(x, y)| {
            let pair = compare_features(&features[x], &features[y], &index.weights, config, None)?;
            let (a, b) = match pair.a == lessons[x].slug.value {
                true => (owner[x], owner[y]),
                false => (owner[y], owner[x]),
            };
            Some(Pair {
                a_bank: Some(banks[a].0.to_string()),
                b_bank: Some(banks[b].0.to_string()),
                ..pair
            })
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
    Ok(duplicates_of(bank, candidate)?.into_iter().next())
}

/// Every existing lesson `candidate` duplicates above the bank's thresholds, best first (score
/// descending, then slug); in each pair, `a` is the existing lesson and `b` the candidate.
pub fn duplicates_of(bank: &Bank, candidate: &Lesson) -> Result<Vec<Pair>, DedupError> {
    duplicates_of_with(bank, candidate, None)
}

/// [`duplicates_of`], with the bank's embeddings and the candidate's vector (`vector`, of
/// the same model; see [`Embeddings::embed`]) when a model is configured: an existing
/// lesson whose cosine with it reaches the threshold is compared too (see [`pairs_with`]).
pub fn duplicates_of_with(
    bank: &Bank,
    candidate: &Lesson,
    semantic: Option<(&Embeddings, &[f32])>,
) -> Result<Vec<Pair>, DedupError> {
    let config = &bank.config.dedup;
    check(config)?;
    let live = live_documents(bank);
    let mut lessons: Vec<&Lesson> = live.iter().map(|(_, l)| *l).collect();
    let query = lessons.len();
    lessons.push(candidate);
    let (features, index) = Index::build(&lessons, config);
    let meaning = semantic.map(|(e, vector)| {
        let mut m = Meaning::new(e, bank, &live, config);
        m.query = Some((query, Request::new(vector)));
        m
    });
    let mut near = index.candidates(query, &features[query], config, &mut index.scratch());
    if let Some(m) = &meaning {
        near.extend(
            m.neighbours(query, 0..query, config.max_candidates)
                .map(|j| j as usize),
        );
        near.sort_unstable();
        near.dedup();
    }
    let mut found: Vec<Pair> = near
        .into_iter()
        .filter_map(|j| {
            let semantic = meaning.as_ref().and_then(|m| m.judge(j, query));
            compare_features(
                &features[j],
                &features[query],
                &index.weights,
                config,
                semantic,
            )
        })
        .collect();
    found.sort_by(order);
    Ok(found)
}

/// Every near-duplicate pair, found by comparing every two live lessons: quadratic, for small
/// banks and as the reference [`pairs`] is tested against (they agree while neither cap,
/// `max-postings` nor `max-candidates`, is reached).
pub fn pairs_exhaustive(bank: &Bank) -> Result<Vec<Pair>, DedupError> {
    pairs_exhaustive_with(bank, None)
}

/// [`pairs_exhaustive`] with embeddings: the reference [`pairs_with`] is tested against.
pub fn pairs_exhaustive_with(
    bank: &Bank,
    embeddings: Option<&Embeddings>,
) -> Result<Vec<Pair>, DedupError> {
    let config = &bank.config.dedup;
    check(config)?;
    let live = live_documents(bank);
    let lessons: Vec<&Lesson> = live.iter().map(|(_, l)| *l).collect();
    let (features, index) = Index::build(&lessons, config);
    let meaning = embeddings.map(|e| Meaning::new(e, bank, &live, config));
    let mut found: Vec<Pair> = (0..features.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let (features, index, meaning) = (&features, &index, meaning.as_ref());
            (i + 1..features.len()).filter_map(move |j| {
                let semantic = meaning.and_then(|m| m.judge(i, j));
                compare_features(&features[i], &features[j], &index.weights, config, semantic)
            })
        })
        .collect();
    sort(&mut found);
    Ok(found)
}

/// A pair's cosine and the threshold it is held to.
#[derive(Debug, Clone, Copy)]
struct Semantic {
    cosine: f64,
    min: f64,
}

/// Whether a pair of already computed features is a near-duplicate under `config`.
fn compare_features(
    a: &Features,
    b: &Features,
    weights: &[f64],
    config: &DedupConfig,
    semantic: Option<Semantic>,
) -> Option<Pair> {
    let alike = semantic.is_some_and(|s| s.cosine >= s.min);
    // Dice is at most 2·min / (W(A) + W(B)): skip the merge when that is too low
    let total = a.weight + b.weight;
    if !alike
        && total > 0.0
        && 2.0 * a.weight.min(b.weight) / total + 1e-9 < config.min_text_similarity
    {
        return None;
    }
    let text = dice(a, b, weights);
    if !alike && text < config.min_text_similarity {
        return None;
    }
    let targets_overlap = targets_overlap_globs(&a.targets, &b.targets);
    if !targets_overlap {
        return None;
    }
    let shared = a.tags.intersection(&b.tags).count();
    let tags = (!a.tags.is_empty() || !b.tags.is_empty())
        .then(|| shared as f64 / (a.tags.len() + b.tags.len() - shared) as f64);
    let cosine = semantic.map(|s| round(s.cosine.max(0.0)));
    // a pair alike in meaning counts as if its words were as alike as its meaning
    let content = match cosine {
        Some(cosine) if alike => text.max(cosine),
        _ => text,
    };
    // the best score a slug could give first: strsim allocates, most pairs stop here
    if round(weighted_score(config, 1.0, content, tags)) < config.min_score {
        return None;
    }
    let slug = slug_similarity(&a.slug, &b.slug);
    let score = round(weighted_score(config, slug, content, tags));
    if score < config.min_score {
        return None;
    }
    Some(Pair {
        a: a.slug.clone(),
        b: b.slug.clone(),
        slug_similarity: round(slug),
        text_similarity: round(text),
        semantic_similarity: cosine,
        shared_tags: a.tags.intersection(&b.tags).cloned().collect(),
        targets_overlap,
        score,
        a_bank: None,
        b_bank: None,
    })
}

/// The weighted mean of slug similarity, text similarity and tag overlap (none: left out).
fn weighted_score(config: &DedupConfig, slug: f64, text: f64, tags: Option<f64>) -> f64 {
    let mut weighted = config.slug_weight * slug + config.text_weight * text;
    let mut weights = config.slug_weight + config.text_weight;
    if let Some(tags) = tags {
        weighted += config.tag_weight * tags;
        weights += config.tag_weight;
    }
    if weights > 0.0 {
        weighted / weights
    } else {
        text
    }
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

/// Each pair once, the byte-smaller slug first, in [`order`].
fn sort(found: &mut [Pair]) {
    for p in found.iter_mut() {
        if p.b < p.a {
            std::mem::swap(&mut p.a, &mut p.b);
            std::mem::swap(&mut p.a_bank, &mut p.b_bank);
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
    if let Some(min) = config.min_semantic_similarity {
        unit("min-semantic-similarity", min)?;
    }
    unit("min-score", config.min_score)?;
    weight("slug-weight", config.slug_weight)?;
    weight("text-weight", config.text_weight)?;
    weight("tag-weight", config.tag_weight)?;
    for (key, value) in [
        ("max-candidates", config.max_candidates),
        ("max-postings", config.max_postings),
    ] {
        if value == 0 {
            return Err(DedupError::Config {
                key,
                value: "0".into(),
                expected: "1 or more",
            });
        }
    }
    Ok(())
}

/// The bank's live lessons, one per slug (the first file by path), in slug order: neither
/// superseded nor quarantined.
fn live_lessons(bank: &Bank) -> Vec<&Lesson> {
    live_documents(bank).into_iter().map(|(_, l)| l).collect()
}

/// [`live_lessons`] with their documents.
fn live_documents(bank: &Bank) -> Vec<(&Document, &Lesson)> {
    bank.by_slug()
        .into_values()
        .filter(|(_, lesson)| {
            !matches!(
                bank.status(lesson),
                Status::Superseded(_) | Status::Quarantined(_)
            )
        })
        .collect()
}

/// The embeddings of the bank at `root` when its `[retrieve] model` names a model, from the
/// retrieval index (which embeds the lessons it has no vector for, and keeps them in
/// `.lesson/`). `Ok(None)` without a model; `Err` says why the model (or the index) cannot be
/// used, and dedup compares words alone then.
pub fn embeddings_of(
    root: &std::path::Path,
    config: &crate::config::Config,
) -> Result<Option<Embeddings>, String> {
    if config.retrieve.model.is_none() {
        return Ok(None);
    }
    // what the index writes to `.lesson/` is its cache, not a change of the bank: a writer's
    // journal (`lesson add --format json`) does not list it
    let (found, _cache) = crate::edit::journal::recording(|| {
        let mut retriever = crate::retrieve::Retriever::open(root).map_err(|e| e.to_string())?;
        let embeddings = retriever.embeddings().map_err(|e| e.to_string())?;
        match retriever.semantic_problem() {
            Some(problem) => Err(problem.to_string()),
            None => Ok(embeddings),
        }
    });
    found
}

/// The cosine `[dedup] min-semantic-similarity` sets, else the model's own.
fn threshold(embeddings: &Embeddings, config: &DedupConfig) -> f64 {
    config
        .min_semantic_similarity
        .unwrap_or_else(|| embeddings.embedder().default_dedup_similarity())
}

/// The semantic side of one dedup run: each compared lesson's slot among the vectors.
struct Meaning<'a> {
    vectors: &'a Vectors,
    /// By lesson index: its slot (none: the lesson has no vector).
    slots: Vec<Option<u32>>,
    /// The threshold of the cosine.
    min: f64,
    /// The lesson that is no file of the bank ([`duplicates_of_with`]), and its vector.
    query: Option<(usize, Request)>,
}

impl<'a> Meaning<'a> {
    fn new(
        embeddings: &'a Embeddings,
        bank: &Bank,
        live: &[(&Document, &Lesson)],
        config: &DedupConfig,
    ) -> Meaning<'a> {
        let slots = live
            .iter()
            .map(|(doc, _)| {
                let path = crate::retrieve::store::relative(&bank.root, &doc.source.path);
                embeddings.slot(&path)
            })
            .collect();
        Meaning {
            vectors: embeddings.vectors(),
            slots,
            min: threshold(embeddings, config),
            query: None,
        }
    }

    /// The cosine of lessons `i` and `j`, if both have a vector.
    fn cosine(&self, i: usize, j: usize) -> Option<f64> {
        let slot = |k: usize| self.slots.get(k).copied().flatten();
        let cosine = match &self.query {
            Some((q, request)) if *q == i => self.vectors.cosine(slot(j)?, request),
            Some((q, request)) if *q == j => self.vectors.cosine(slot(i)?, request),
            _ => self.vectors.cosine_between(slot(i)?, slot(j)?),
        };
        Some(f64::from(cosine))
    }

    /// The cosine of lessons `i` and `j` with its threshold, for [`compare_features`].
    fn judge(&self, i: usize, j: usize) -> Option<Semantic> {
        Some(Semantic {
            cosine: self.cosine(i, j)?,
            min: self.min,
        })
    }

    /// The lessons of `among` whose cosine with lesson `i` reaches the threshold: the `max`
    /// nearest (ties by index), in index order.
    fn neighbours(
        &self,
        i: usize,
        among: std::ops::Range<usize>,
        max: usize,
    ) -> impl Iterator<Item = u32> {
        let near: Vec<(f64, u32)> = among
            .filter(|&j| j != i)
            .filter_map(|j| Some((self.cosine(i, j)?, j as u32)))
            .filter(|&(c, _)| c >= self.min)
            .collect();
        nearest(near, max).into_iter()
    }

    /// [`Meaning::neighbours`] of every one of the `n` lessons among those after it
    /// (`i + 1..n`), all at once: the cosines are taken tile by tile (64 lessons by 64, so
    /// that both tiles' vectors stay in cache) on 16-bit copies of the codes (widened once,
    /// not once per pair), in parallel by row tile. The same cosines, to the bit, as
    /// [`Vectors::cosine_between`]: exact integer dot products times the same two scales.
    fn all_neighbours(&self, n: usize, max: usize) -> Vec<Vec<u32>> {
        const TILE: usize = 64;
        let d = self.vectors.dimension();
        // the lessons with a vector (in index order), their widened codes and their scales
        let with: Vec<(u32, u32)> = (0..n)
            .filter_map(|i| Some((i as u32, self.slots.get(i).copied().flatten()?)))
            .collect();
        let codes: Vec<i16> = with
            .iter()
            .flat_map(|&(_, slot)| self.vectors.codes(slot).iter().map(|&c| i16::from(c)))
            .collect();
        let scales: Vec<f32> = with
            .iter()
            .map(|&(_, slot)| self.vectors.scale(slot))
            .collect();
        let row = |k: usize| &codes[k * d..(k + 1) * d];
        let m = with.len();
        let tiles = m.div_ceil(TILE);
        let found: Vec<Vec<(f64, u32)>> = (0..tiles)
            .into_par_iter()
            .flat_map_iter(|t| {
                let rows = t * TILE..((t + 1) * TILE).min(m);
                let mut found = vec![Vec::new(); rows.len()];
                for u in t..tiles {
                    let cols = u * TILE..((u + 1) * TILE).min(m);
                    for a in rows.clone() {
                        for b in cols.clone().filter(|&b| b > a) {
                            let dot = vectors::dot(row(a), row(b)) as f32;
                            let cosine = f64::from(dot * scales[a] * scales[b]);
                            if cosine >= self.min {
                                found[a - rows.start].push((cosine, with[b].0));
                            }
                        }
                    }
                }
                found
            })
            .collect();
        let mut out = vec![Vec::new(); n];
        for ((i, _), near) in with.iter().zip(found) {
            out[*i as usize] = nearest(near, max);
        }
        out
    }
}

/// The lessons of `near` (cosine, lesson) with the `max` highest cosines (ties by index), in
/// index order.
fn nearest(mut near: Vec<(f64, u32)>, max: usize) -> Vec<u32> {
    let nearest_first = |x: &(f64, u32), y: &(f64, u32)| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1));
    if near.len() > max {
        near.select_nth_unstable_by(max, nearest_first);
        near.truncate(max);
    }
    let mut near: Vec<u32> = near.into_iter().map(|(_, j)| j).collect();
    near.sort_unstable();
    near
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
    let a: Vec<_> = a.iter().map(target_globs).collect();
    let b: Vec<_> = b.iter().map(target_globs).collect();
    targets_overlap_globs(&a, &b)
}

/// A target's (operator, role, skill) globs.
type TargetGlobs = [Option<TargetGlob>; 3];

fn target_globs(t: &Target) -> TargetGlobs {
    [&t.operator, &t.role, &t.skill].map(|g| g.as_ref().map(|g| TargetGlob::new(&g.value)))
}

/// One glob of a target, compiled once when it has wildcards.
struct TargetGlob {
    text: String,
    matcher: Option<globset::GlobMatcher>,
}

impl TargetGlob {
    fn new(text: &str) -> TargetGlob {
        let wild = text.contains(['*', '?', '[', '{']);
        TargetGlob {
            text: text.to_string(),
            matcher: wild
                .then(|| globset::Glob::new(text).ok().map(|g| g.compile_matcher()))
                .flatten(),
        }
    }

    /// Whether this glob and `other` can match one string, approximately: equal, either `*`,
    /// or either matching the other's text.
    fn meets(&self, other: &TargetGlob) -> bool {
        self.text == other.text
            || self.text == "*"
            || other.text == "*"
            || self
                .matcher
                .as_ref()
                .is_some_and(|m| m.is_match(&other.text))
            || other
                .matcher
                .as_ref()
                .is_some_and(|m| m.is_match(&self.text))
    }
}

fn targets_overlap_globs(a: &[TargetGlobs], b: &[TargetGlobs]) -> bool {
    if a.is_empty() || b.is_empty() {
        return true;
    }
    a.iter().any(|x| {
        b.iter().any(|y| {
            x.iter().zip(y).all(|(g, h)| match (g, h) {
                (Some(g), Some(h)) => g.meets(h),
                _ => true,
            })
        })
    })
}

/// What dedup needs of a lesson.
struct Features {
    slug: String,
    /// Distinct terms of title + trigger description ([`piece_terms`]) as ranks in the
    /// index's rarity order, ascending: rarest first.
    terms: Vec<u32>,
    /// The sum of the terms' weights.
    weight: f64,
    /// `rest[k]`: the weight of `terms[k..]` (f32: it only bounds, and there are many).
    rest: Vec<f32>,
    /// Normalised tags.
    tags: BTreeSet<String>,
    /// Targets as (operator, role, skill) globs.
    targets: Vec<TargetGlobs>,
}

/// The distinct terms of a lesson's title and trigger description, sorted.
fn lesson_terms(lesson: &Lesson) -> Vec<Term> {
    let mut terms = Vec::new();
    for text in [&lesson.title.value, &lesson.trigger.description.value] {
        text::for_each_identifier(text, |pieces| {
            for piece in pieces {
                piece_terms(piece, &mut terms);
            }
        });
    }
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// The terms of one piece: its padded trigrams, or for a CJK run (written without spaces) its
/// character bigrams, the word unit of [`crate::retrieve::text`] (a one-character run: itself).
fn piece_terms(piece: &text::Piece, out: &mut Vec<Term>) {
    let chars = &piece.chars;
    if piece.cjk {
        if chars.len() == 1 {
            out.push(text::word_term(&piece.text()));
        }
        for pair in chars.windows(2) {
            out.push(text::word_term(&pair.iter().collect::<String>()));
        }
        return;
    }
    let n = chars.len();
    let at = |i: usize| {
        if i == 0 || i == n + 1 {
            ' '
        } else {
            chars[i - 1]
        }
    };
    for i in 0..n {
        out.push(text::trigram_term(at(i), at(i + 1), at(i + 2)));
    }
}

/// The weighted Dice coefficient of two lessons' terms: twice the weight they share over the
/// sum of their weights; 0 when both are empty.
fn dice(a: &Features, b: &Features, weights: &[f64]) -> f64 {
    let total = a.weight + b.weight;
    if total <= 0.0 {
        return 0.0;
    }
    let (a, b) = (&a.terms, &b.terms);
    let (mut i, mut j, mut shared) = (0, 0, 0.0);
    // branch-free merge: this loop is most of the time `lesson dedup` takes
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        if x == y {
            shared += weights[x as usize];
        }
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    (2.0 * shared / total).min(1.0)
}

/// How many of a lesson's rarest terms (`terms`, rarest first) any lesson with weighted Dice
/// similarity ≥ `t` shares one of. Dice(A, B) ≥ t implies W(A ∩ B) ≥ t·W(A) / (2 − t) =: α
/// (as W(A ∩ B) ≤ W(B)); if the first term the two share (in the common rarity order) lay
/// past A's prefix, all they share would weigh at most the rest of A, which weighs less than α.
fn prefix_len(terms: &[u32], total: f64, weights: &[f64], t: f64) -> usize {
    // a hair under α, so that rounding never drops a term that is needed
    let alpha = t * total / (2.0 - t) * (1.0 - 1e-9);
    let mut rest = 0.0;
    let mut keep = terms.len();
    while keep > 1 {
        let w = weights[terms[keep - 1] as usize];
        if rest + w >= alpha {
            break;
        }
        rest += w;
        keep -= 1;
    }
    keep.min(terms.len())
}

/// Inverted index over each lesson's prefix: its rarest terms.
struct Index {
    /// rank -> (lesson, the weight of the lesson's terms from this one on) for the lessons
    /// whose prefix holds the term, by lesson.
    postings: Vec<Vec<(u32, f32)>>,
    /// lesson -> the weight of all its terms (dense, for the positional filter).
    totals: Vec<f32>,
    /// rank -> the term's weight: `ln(1 + N / df)` over the N lessons indexed, so that words
    /// every lesson uses ("the implementation is incorrect because") count for little.
    weights: Vec<f64>,
    /// Lessons indexed.
    len: usize,
}

/// Scratch space of one probing thread: a counter per lesson and the lessons touched.
struct Scratch {
    shared: Vec<u32>,
    touched: Vec<u32>,
}

impl Index {
    /// The lessons' features, terms ranked rarest first among them, and the index of their
    /// prefixes.
    fn build(lessons: &[&Lesson], config: &DedupConfig) -> (Vec<Features>, Index) {
        let raw: Vec<Vec<Term>> = lessons.par_iter().map(|l| lesson_terms(l)).collect();
        let mut df: TermMap<u32> = TermMap::default();
        for terms in &raw {
            for &t in terms {
                *df.entry(t).or_default() += 1;
            }
        }
        let mut order: Vec<(u32, Term)> = df.iter().map(|(&t, &n)| (n, t)).collect();
        order.par_sort_unstable();
        let rank: TermMap<u32> = order
            .iter()
            .enumerate()
            .map(|(r, &(_, t))| (t, r as u32))
            .collect();
        let n = lessons.len() as f64;
        let weights: Vec<f64> = order
            .iter()
            .map(|&(df, _)| (1.0 + n / f64::from(df)).ln())
            .collect();
        let features: Vec<Features> = lessons
            .par_iter()
            .zip(raw)
            .map(|(lesson, raw)| {
                let mut terms: Vec<u32> = raw.iter().map(|t| rank[t]).collect();
                terms.sort_unstable();
                let mut rest = vec![0.0f32; terms.len()];
                let mut sum = 0.0f64;
                for (k, &r) in terms.iter().enumerate().rev() {
                    sum += weights[r as usize];
                    rest[k] = sum as f32;
                }
                Features {
                    slug: lesson.slug.value.clone(),
                    weight: terms.iter().map(|&r| weights[r as usize]).sum(),
                    rest,
                    terms,
                    tags: lesson
                        .trigger
                        .tags
                        .iter()
                        .map(|t| text::tag_key(&t.value))
                        .filter(|t| !t.is_empty())
                        .collect(),
                    targets: lesson.trigger.targets.iter().map(target_globs).collect(),
                }
            })
            .collect();
        let mut postings = vec![Vec::new(); order.len()];
        for (i, f) in features.iter().enumerate() {
            let keep = prefix_len(&f.terms, f.weight, &weights, config.min_text_similarity);
            for (at, &r) in f.terms[..keep].iter().enumerate() {
                postings[r as usize].push((i as u32, f.rest[at]));
            }
        }
        let index = Index {
            postings,
            totals: features.iter().map(|f| f.weight as f32).collect(),
            weights,
            len: features.len(),
        };
        (features, index)
    }

    fn scratch(&self) -> Scratch {
        Scratch {
            shared: vec![0; self.len],
            touched: Vec::new(),
        }
    }

    /// The lessons to compare with lesson `me` (whose features are `f`): those sharing a prefix term, reading rarest
    /// terms first and at most `max-postings` index entries in all; of those, the ones that can
    /// still reach the text threshold, the `max-candidates` sharing the most first (ties by
    /// index).
    ///
    /// The first term two lessons are found to share is the first they share at all (both
    /// prefixes hold it), so what they can share is at most the lighter of the two rests from
    /// there on: a lesson whose rest is too light is dropped without a comparison (PPJoin's
    /// positional filter). A posting list cut short is read from `me`'s position on, wrapping
    /// around, so that in a crowd of look-alikes each lesson meets its neighbours rather than
    /// everyone meeting the first few.
    fn candidates(
        &self,
        me: usize,
        f: &Features,
        config: &DedupConfig,
        scratch: &mut Scratch,
    ) -> Vec<usize> {
        const DROPPED: u32 = u32::MAX;
        let t = config.min_text_similarity;
        let mut budget = config.max_postings;
        let keep = prefix_len(&f.terms, f.weight, &self.weights, t);
        for (at, &r) in f.terms[..keep].iter().enumerate() {
            if budget == 0 {
                break;
            }
            let list = &self.postings[r as usize];
            let start = if list.len() > budget {
                list.partition_point(|&(j, _)| (j as usize) < me)
            } else {
                0
            };
            let (before, after) = list.split_at(start);
            for &(j, their_rest) in after.iter().chain(before).take(budget) {
                let count = &mut scratch.shared[j as usize];
                match *count {
                    DROPPED => {}
                    0 => {
                        scratch.touched.push(j);
                        let rest = f64::from(f.rest[at].min(their_rest));
                        let total = f.weight + f64::from(self.totals[j as usize]);
                        // f32 sums: a margin so that rounding never drops a lesson that is needed
                        let best = 2.0 * rest * (1.0 + 1e-4) / total;
                        *count = if best < t { DROPPED } else { 1 };
                    }
                    _ => *count += 1,
                }
            }
            budget = budget.saturating_sub(list.len());
        }
        let mut ranked: Vec<(u32, u32)> = Vec::with_capacity(scratch.touched.len());
        for j in scratch.touched.drain(..) {
            let count = std::mem::take(&mut scratch.shared[j as usize]);
            if j as usize != me && count != DROPPED {
                ranked.push((j, count));
            }
        }
        let most_shared_first = |x: &(u32, u32), y: &(u32, u32)| y.1.cmp(&x.1).then(x.0.cmp(&y.0));
        if ranked.len() > config.max_candidates {
            ranked.select_nth_unstable_by(config.max_candidates, most_shared_first);
            ranked.truncate(config.max_candidates);
        }
        ranked.sort_unstable_by(most_shared_first);
        ranked.into_iter().map(|(j, _)| j as usize).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_of_sets() {
        let weights = [4.0, 1.0, 1.0, 1.0, 1.0];
        let f = |terms: &[u32]| Features {
            slug: String::new(),
            terms: terms.to_vec(),
            weight: terms.iter().map(|&t| weights[t as usize]).sum(),
            rest: Vec::new(),
            tags: BTreeSet::new(),
            targets: Vec::new(),
        };
        let dice = |a: &[u32], b: &[u32]| dice(&f(a), &f(b), &weights);
        assert_eq!(dice(&[1, 2, 3], &[1, 2, 3]), 1.0);
        assert_eq!(dice(&[1, 2], &[3, 4]), 0.0);
        assert_eq!(dice(&[1, 2, 3, 4], &[3, 4]), 2.0 * 2.0 / 6.0);
        // the rare term weighs four times as much
        assert_eq!(dice(&[0, 1], &[0, 2]), 2.0 * 4.0 / 10.0);
        assert_eq!(dice(&[], &[]), 0.0);
    }

    #[test]
    fn prefixes_keep_what_a_match_needs() {
        let weights = [1.0; 10];
        // unweighted: Dice ≥ 0.5 needs |A ∩ B| ≥ |A| / 3, so 10 − 4 + 1 = 7 terms stay
        let terms: Vec<u32> = (0..10).collect();
        assert_eq!(prefix_len(&terms, 10.0, &weights, 0.5), 7);
        assert_eq!(prefix_len(&terms, 10.0, &weights, 1.0), 1);
        assert_eq!(prefix_len(&terms, 10.0, &weights, 0.0), 10);
        assert_eq!(prefix_len(&[], 0.0, &weights, 0.5), 0);
    }

    #[test]
    fn globs_meet_when_one_can_match_the_other() {
        let meet = |g: &str, h: &str| TargetGlob::new(g).meets(&TargetGlob::new(h));
        assert!(meet("reviewer", "reviewer"));
        assert!(meet("review*", "reviewer"));
        assert!(meet("reviewer", "review*"));
        assert!(meet("*", "x"));
        assert!(!meet("reviewer", "writer"));
        let t = |r: &str| [None, Some(TargetGlob::new(r)), None];
        assert!(targets_overlap_globs(&[], &[t("x")]));
        assert!(!targets_overlap_globs(&[t("a")], &[t("b")]));
        assert!(targets_overlap_globs(&[t("a"), t("b")], &[t("b")]));
        // different keys do not exclude each other
        let s = [None, None, Some(TargetGlob::new("rust"))];
        assert!(targets_overlap_globs(&[t("a")], &[s]));
    }
}
