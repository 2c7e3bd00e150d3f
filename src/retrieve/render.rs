//! Hits as text: the prompt block (a template, bank-overridable), within a token budget, and a
//! table for people.
//!
//! The budget is counted on the rendered block with a simple estimator, [`tokens`]: characters
//! divided by four, rounded up (close to what BPE tokenizers give for English prose, and an
//! overestimate for code). The block holds the largest number of best hits that fits; the cut
//! always falls between whole lessons.

use std::path::Path;

use serde::Serialize;

use crate::template::{Template, TemplateError};

use super::{mark_conflicts, Hit};

/// The built-in prompt template.
pub const PROMPT_TEMPLATE: &str = include_str!("../../templates/prompt.md.j2");
/// Its name, and the name of a bank's override in `templates/`.
pub const PROMPT_TEMPLATE_NAME: &str = "prompt.md.j2";
/// The normative AIP-11 label of the block.
pub const LABEL: &str = "Lessons from past experience:";

/// Estimated tokens of `text`: characters / 4, rounded up.
pub fn tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// The bank's prompt template (`templates/prompt.md.j2`), else the built-in one.
pub fn prompt_template(bank: &Path) -> Result<Template, TemplateError> {
    Template::load(bank, PROMPT_TEMPLATE_NAME, PROMPT_TEMPLATE)
}

/// A rendered prompt block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The block (empty when no lesson fits).
    pub text: String,
    /// How many of the hits it shows (the best ones).
    pub shown: usize,
    /// Its estimated tokens.
    pub tokens: usize,
}

/// Render the most hits (best first) whose block fits `budget` tokens. Conflicts are marked
/// among the hits shown.
///
/// Every hit is tried first, in one rendering: most requests fit (`k` 5 in 400 tokens, or a
/// budget set high to rank), and rendering each shorter list first cost a new search process
/// a tenth of its time. When they do not all fit, the list grows from the best hit until it
/// no longer fits.
pub fn prompt(template: &Template, hits: &[Hit], budget: usize) -> Result<Prompt, TemplateError> {
    let mut best = Prompt {
        text: String::new(),
        shown: 0,
        tokens: 0,
    };
    if hits.is_empty() {
        return Ok(best);
    }
    // compiled once for all the renderings below (compiling for each was a seventh of a
    // warm answer's time: 6.1 of 45.2 ms for the bench's 20 queries)
    let template = template.compile()?;
    let render = |n: usize| -> Result<Prompt, TemplateError> {
        let mut shown = hits[..n].to_vec();
        mark_conflicts(&mut shown);
        let text = template.render(Context::new(&shown))?;
        let tokens = tokens(&text);
        Ok(Prompt {
            text,
            shown: n,
            tokens,
        })
    };
    let all = render(hits.len())?;
    if all.tokens <= budget {
        return Ok(all);
    }
    for n in 1..hits.len() {
        let p = render(n)?;
        if p.tokens > budget {
            break;
        }
        best = p;
    }
    Ok(best)
}

/// The context the prompt template sees.
#[derive(Debug, Serialize)]
pub struct Context<'a> {
    /// [`LABEL`].
    pub label: &'static str,
    /// The hits, best first.
    pub lessons: Vec<PromptLesson<'a>>,
}

/// One hit, as the prompt template sees it.
#[derive(Debug, Serialize)]
pub struct PromptLesson<'a> {
    /// Slug.
    pub slug: &'a str,
    /// The title without a final period (the gist follows it).
    pub title: &'a str,
    /// One line of advice.
    pub gist: &'a str,
    /// `success`, `failure` or `mixed`.
    pub outcome: &'static str,
    /// Confidence for display: at most two decimals, no trailing zeros (`0.8`, `0.75`, `1`).
    pub c: String,
    /// Confidence.
    pub confidence: f64,
    /// `success_count`.
    pub success_count: u64,
    /// `failure_count`.
    pub failure_count: u64,
    /// Failed more often than it worked.
    pub caution: bool,
    /// Shown only as a caution (`[retrieve] max-cautions`), not on its score.
    pub kept_as_caution: bool,
    /// The hits shown that it conflicts with.
    pub conflicts: Vec<Peer<'a>>,
    /// Those of them ranked above it (so that each pair is explained once).
    pub conflicts_above: Vec<Peer<'a>>,
    /// Tags as written.
    pub tags: &'a [String],
    /// Path relative to the bank.
    pub path: &'a str,
    /// The bank it comes from when the bank in front includes others (`[banks] include`):
    /// `.` for the front bank; none otherwise. The built-in template does not show it.
    pub bank: Option<&'a str>,
    /// The score.
    pub score: f64,
}

/// A conflicting hit.
#[derive(Debug, Serialize)]
pub struct Peer<'a> {
    /// Slug.
    pub slug: &'a str,
    /// Title, without a final period.
    pub title: &'a str,
}

impl<'a> Context<'a> {
    /// The context of `hits` (conflicts as marked on them).
    pub fn new(hits: &'a [Hit]) -> Context<'a> {
        let peers = |h: &'a Hit, above: Option<usize>| -> Vec<Peer<'a>> {
            h.conflicts_with
                .iter()
                .filter_map(|slug| hits.iter().position(|o| &o.slug == slug))
                .filter(|&j| above.is_none_or(|i| j < i))
                .map(|j| Peer {
                    slug: &hits[j].slug,
                    title: headline(&hits[j].title),
                })
                .collect()
        };
        let lessons = hits
            .iter()
            .enumerate()
            .map(|(i, h)| PromptLesson {
                slug: &h.slug,
                title: headline(&h.title),
                gist: &h.gist,
                outcome: h.outcome.as_str(),
                c: decimal(h.confidence),
                confidence: h.confidence,
                success_count: h.success_count,
                failure_count: h.failure_count,
                caution: h.caution,
                kept_as_caution: h.kept_as_caution,
                conflicts: peers(h, None),
                conflicts_above: peers(h, Some(i)),
                tags: &h.tags,
                path: &h.path,
                bank: h.bank.as_deref(),
                score: h.score.score,
            })
            .collect();
        Context {
            label: LABEL,
            lessons,
        }
    }
}

/// A title on one line, without its final period.
fn headline(title: &str) -> &str {
    let t = title.trim();
    t.strip_suffix('.').unwrap_or(t)
}

/// At most two decimals, without trailing zeros.
pub fn decimal(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_up() {
        assert_eq!(tokens(""), 0);
        assert_eq!(tokens("abcd"), 1);
        assert_eq!(tokens("abcde"), 2);
        assert_eq!(tokens("数据库"), 1);
    }

    #[test]
    fn decimals_drop_trailing_zeros() {
        assert_eq!(decimal(0.8), "0.8");
        assert_eq!(decimal(0.75), "0.75");
        assert_eq!(decimal(1.0), "1");
        assert_eq!(decimal(0.0), "0");
        assert_eq!(decimal(0.333), "0.33");
    }

    #[test]
    fn headlines_drop_the_final_period() {
        assert_eq!(headline("Run clippy in CI."), "Run clippy in CI");
        assert_eq!(headline("Why?"), "Why?");
    }
}
