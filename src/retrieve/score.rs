//! The score: `similarity × confidence × count factor × recency`.
//!
//! **Similarity** is BM25F (BM25 over weighted fields) on two kinds of terms at once, word
//! terms and trigram terms ([`super::text`]), normalised to `[0, 1]`:
//!
//! ```text
//! tf~(t, d)  = Σ_fields w_f · tf_f(t, d) / (1 − b + b · len_f(d) / avglen_f)
//! sim(q, d)  = Σ_{t ∈ q} λ_t · idf(t) · tf~/(k1 + tf~)  /  Σ_{t ∈ q} λ_t · idf(t)
//! idf(t)     = ln(1 + (N − df + 0.5) / (df + 0.5))
//! ```
//!
//! over the request's distinct terms that occur in the bank (`df > 0`); lengths count terms of
//! the same kind; `λ` is the word weight for word terms and 1 for trigrams; `N` and `df` count
//! every lesson of the bank, whatever its status (so that expiry does not move scores) and
//! whatever the gates (so that a request's tags or caller do not either).

use super::text::{self, Kind, Term};

/// Fields, in the order of [`FIELDS`] and of the length slots of a document.
pub const FIELDS: [&str; 4] = ["title", "description", "tags", "body"];
/// Length slots per document: each field × {word, trigram}.
pub const LEN_SLOTS: usize = 8;

/// The length slot of field `f` for terms of `kind`.
pub fn slot(field: usize, kind: Kind) -> usize {
    field * 2 + usize::from(kind == Kind::Trigram)
}

/// Tunable parts of ranking (from `[retrieve]` in `lesson.toml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Field weights in [`FIELDS`] order.
    pub field_weights: [f64; 4],
    /// Weight of a word term relative to a trigram term.
    pub word_weight: f64,
    /// BM25 term-frequency saturation.
    pub k1: f64,
    /// BM25 length normalisation.
    pub b: f64,
    /// Recency half-life in days; `None` (or 0) for no decay.
    pub half_life_days: Option<f64>,
    /// Hits below this similarity are dropped.
    pub min_similarity: f64,
    /// Hits returned when the request does not say.
    pub k: usize,
    /// What tags found among the request's words do, when the request does not say.
    pub inferred_tags: crate::config::InferredTags,
    /// The score factor of a lesson carrying an inferred tag (with [`InferredTags::Boost`]).
    ///
    /// [`InferredTags::Boost`]: crate::config::InferredTags::Boost
    pub tag_boost: f64,
    /// Matching cautions kept among the top K, at most.
    pub max_cautions: usize,
    /// `[retrieve] usage-weight`, 0 to 1: how much the lessons' retrieval figures weigh (0,
    /// the default: not at all).
    pub usage_weight: f64,
    /// The retrieval figures of the lessons a logged search showed, by slug, when the weight
    /// is above 0 ([`crate::retrieve::Retriever`] reads them for each search).
    pub usage: Option<std::sync::Arc<std::collections::HashMap<String, crate::usage::Usage>>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_config(&crate::config::RetrieveConfig::default())
    }
}

impl Settings {
    /// Settings from a bank's `[retrieve]` table.
    pub fn from_config(c: &crate::config::RetrieveConfig) -> Settings {
        let w = &c.weights;
        Settings {
            field_weights: [w.title, w.description, w.tags, w.body],
            word_weight: w.words,
            k1: c.k1,
            b: c.b,
            half_life_days: Some(c.half_life_days).filter(|&h| h > 0.0),
            min_similarity: c.min_similarity,
            k: c.k,
            inferred_tags: c.inferred_tags,
            tag_boost: if c.tag_boost.is_finite() && c.tag_boost > 0.0 {
                c.tag_boost
            } else {
                1.0
            },
            max_cautions: c.max_cautions,
            usage_weight: if c.usage_weight.is_finite() {
                c.usage_weight.clamp(0.0, 1.0)
            } else {
                0.0
            },
            usage: None,
        }
    }
}

/// The count factor `(s − f + 1) / (s + f + 1)`, at least 0.1.
pub fn count_factor(successes: u64, failures: u64) -> f64 {
    let (s, f) = (successes as f64, failures as f64);
    ((s - f + 1.0) / (s + f + 1.0)).max(0.1)
}

/// Recency `0.5^(days / half_life)`: a lesson `half_life` days old counts half. Days are
/// counted from when the lesson last changed (its last commit when the bank is in git, else its
/// ledger's newest event; never a file time, which a checkout or a `touch` moves) to `now`
/// (never negative).
pub fn recency(changed_ns: i64, now_ns: i64, half_life_days: Option<f64>) -> f64 {
    let Some(h) = half_life_days.filter(|&h| h > 0.0) else {
        return 1.0;
    };
    let days = (now_ns.saturating_sub(changed_ns)).max(0) as f64 / 86_400e9;
    (-std::f64::consts::LN_2 * days / h).exp()
}

/// `confidence`, clamped to `[0, 1]` (lint reports values outside).
pub fn confidence(c: f64) -> f64 {
    if c.is_nan() {
        0.0
    } else {
        c.clamp(0.0, 1.0)
    }
}

/// Terms whose idf is below this are left out: in a bank of any size, that is a term more
/// than about nine lessons in ten hold.
pub const MIN_IDF: f64 = 0.1;

/// BM25's idf.
pub fn idf(n: u64, df: u64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The distinct terms of a request, sorted.
pub struct QueryTerms;

impl QueryTerms {
    /// The distinct terms of `text`, sorted.
    pub fn distinct(text: &str) -> Vec<Term> {
        let mut terms = Vec::new();
        text::push_terms(text, &mut terms);
        terms.sort_unstable();
        terms.dedup();
        terms
    }
}

/// A term's share of the request: `λ · idf`, λ the word weight for words and 1 for trigrams.
pub fn share(term: Term, df: u64, n: u64, settings: &Settings) -> f64 {
    let lambda = match text::kind(term) {
        Kind::Word => settings.word_weight,
        Kind::Trigram => 1.0,
    };
    lambda * idf(n, df)
}

/// A multiply-shift hasher for `u64` keys (terms are already well spread or packed code points).
#[derive(Default)]
pub struct TermHasher(u64);

impl std::hash::Hasher for TermHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        let x = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

/// Average field lengths over the bank's lessons.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldStats {
    /// Average length per slot (1 where a field is empty everywhere).
    pub avg: [f64; LEN_SLOTS],
}

impl FieldStats {
    /// From length totals over `n` documents.
    pub fn new(totals: &[u64; LEN_SLOTS], n: u64) -> FieldStats {
        let mut avg = [1.0; LEN_SLOTS];
        for (a, &t) in avg.iter_mut().zip(totals) {
            if n > 0 && t > 0 {
                *a = t as f64 / n as f64;
            }
        }
        FieldStats { avg }
    }
}

/// A document's inverse length norms `1 / (1 − b + b · len_f / avglen_f)` per field, for terms
/// of `kind`.
pub fn inverse_norms(lens: &[u32; LEN_SLOTS], kind: Kind, stats: &FieldStats, b: f64) -> [f32; 4] {
    let mut out = [0f32; 4];
    for (f, o) in out.iter_mut().enumerate() {
        let sl = slot(f, kind);
        *o = inverse_norm(lens[sl], stats.avg[sl], b);
    }
    out
}

/// One field's inverse length norm `1 / (1 − b + b · len / avglen)`, as an `f32`.
#[inline]
pub fn inverse_norm(len: u32, avg: f64, b: f64) -> f32 {
    (1.0 / (1.0 - b + b * f64::from(len) / avg)) as f32
}

/// A term's saturated frequency in a document, `tf~ / (k1 + tf~)` in `[0, 1)`, from its counts
/// per field and the document's inverse length norms for the term's kind.
#[inline]
pub fn saturation(tf: &[u32; 4], inverse_norms: &[f32; 4], s: &Settings) -> f64 {
    let mut x = 0.0;
    for f in 0..4 {
        x += s.field_weights[f] * f64::from(tf[f]) * f64::from(inverse_norms[f]);
    }
    x / (s.k1 + x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_factor_has_a_floor() {
        assert_eq!(count_factor(0, 0), 1.0);
        assert_eq!(count_factor(3, 0), 1.0);
        assert_eq!(count_factor(1, 1), 1.0 / 3.0);
        assert_eq!(count_factor(0, 5), 0.1);
    }

    #[test]
    fn recency_halves_per_half_life() {
        let day = 86_400_000_000_000i64;
        assert_eq!(recency(0, 0, Some(365.0)), 1.0);
        assert!((recency(0, 365 * day, Some(365.0)) - 0.5).abs() < 1e-12);
        assert!((recency(0, 730 * day, Some(365.0)) - 0.25).abs() < 1e-12);
        assert_eq!(
            recency(10 * day, 0, Some(365.0)),
            1.0,
            "future mtimes count as now"
        );
        assert_eq!(recency(0, 730 * day, None), 1.0);
        assert_eq!(recency(0, 730 * day, Some(0.0)), 1.0);
    }

    #[test]
    fn saturation_grows_with_counts_and_shrinks_with_length() {
        let s = Settings::default();
        let lens = [10, 30, 2, 6, 4, 12, 40, 120];
        let stats = FieldStats::new(&lens.map(u64::from), 1);
        let norms = inverse_norms(&lens, Kind::Trigram, &stats, s.b);
        assert_eq!(norms, [1.0; 4], "average lengths");
        let once = saturation(&[0, 1, 0, 0], &norms, &s);
        let twice = saturation(&[0, 2, 0, 0], &norms, &s);
        let title = saturation(&[1, 0, 0, 0], &norms, &s);
        let long = [10, 30, 2, 60, 4, 12, 40, 120];
        let diluted = saturation(
            &[0, 1, 0, 0],
            &inverse_norms(&long, Kind::Trigram, &stats, s.b),
            &s,
        );
        assert!(0.0 < once && once < twice && twice < 1.0);
        assert!(title > once, "the title weighs more than the description");
        assert!(diluted < once);
        assert_eq!(saturation(&[0; 4], &norms, &s), 0.0);
    }
}
