//! `missing-section` (D002), and how the body rules find the AIP-11 sections.

use std::ops::Range;

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::{fold_eq, Body, Section};
use crate::lesson::Outcome;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A lesson body lacks one of the AIP-11 sections.
    ///
    /// ## What it does
    /// Reports each of `## When this applies`, `## What to do (or avoid)` and `## Counter-example`
    /// that the body does not have (headings compare case-insensitively). A heading that looks
    /// like a misspelling of a missing section is pointed out. For a `failure` or `mixed` lesson a
    /// missing counter-example is `missing-counter-example` (D003) instead.
    ///
    /// ## Why is this bad?
    /// Readers and tools look for these sections by name: the trigger in prose, the advice, and the
    /// run that taught it. A lesson without them is harder to judge and to apply.
    ///
    /// ## Example
    /// ```text
    /// # Paginate list tools by default.
    ///
    /// ## When this applies
    ///
    /// Any tool that returns an unbounded list.
    ///
    /// ## What to do (or avoke)
    ///
    /// Pass an explicit `limit` of 50.
    /// ```
    pub static RULE = {
        code: "D002",
        name: "missing-section",
        level: Warning,
        fixable: false,
        check: Check::File(check),
    }
}

/// The sections AIP-11 puts in every lesson body, in order.
pub const SECTIONS: [&str; 3] = [
    "When this applies",
    "What to do (or avoid)",
    "Counter-example",
];

/// The counter-example section's heading text.
pub const COUNTER_EXAMPLE: &str = SECTIONS[2];

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let doc = ctx.doc;
    let (Some(lesson), Some(body)) = (&doc.lesson, &doc.body) else {
        return;
    };
    let counter_example_is_d003 = matches!(lesson.outcome.value, Outcome::Failure | Outcome::Mixed);
    for name in SECTIONS {
        if name == COUNTER_EXAMPLE && counter_example_is_d003 {
            continue;
        }
        let (range, help) = match find(body, name) {
            Found::Present(_) => continue,
            Found::Misspelt(s) => (s.heading.range.clone(), misspelt_help(s, name)),
            Found::Missing => (anchor(body), format!("add a `## {name}` section")),
        };
        out.push(
            Diagnostic::new(
                &RULE,
                &doc.source,
                range,
                format!("missing section `## {name}`"),
            )
            .with_help(help),
        );
    }
}

/// How a body holds an expected section.
#[derive(Debug)]
pub enum Found<'a> {
    /// Under its exact heading (case and whitespace aside).
    Present(&'a Section),
    /// Under a heading that looks like a misspelling of it.
    Misspelt(&'a Section),
    /// Not at all.
    Missing,
}

/// Find section `name`, or a `##` heading that looks like a misspelling of it (one that is not
/// itself an expected section).
pub fn find<'a>(body: &'a Body, name: &str) -> Found<'a> {
    if let Some(s) = body.section(name) {
        return Found::Present(s);
    }
    let want = key(name);
    body.sections
        .iter()
        .filter(|s| !SECTIONS.iter().any(|e| fold_eq(e, &s.heading.text)))
        .map(|s| (similarity(&key(&s.heading.text), &want), s))
        .filter(|(score, _)| *score >= 0.75)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(Found::Missing, |(_, s)| Found::Misspelt(s))
}

/// The help for a heading that looks like a misspelling of `name`.
pub fn misspelt_help(section: &Section, name: &str) -> String {
    format!(
        "`## {}` looks like a misspelling: rename it to `## {name}`",
        section.heading.text
    )
}

/// Where a finding about a missing section points: the H1, else the start of the body.
pub fn anchor(body: &Body) -> Range<usize> {
    body.h1()
        .map_or(body.start..body.start, |h| h.range.clone())
}

/// Letters and digits only, lowercased: `Counter example` and `Counterexample` are one key.
fn key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// 1.0 for the same key or one a prefix of the other (6+ letters), else edit-distance similarity.
fn similarity(a: &str, b: &str) -> f64 {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.chars().count() >= 6 && long.starts_with(short) {
        return 1.0;
    }
    strsim::normalized_damerau_levenshtein(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Body {
        Body::parse(text, 0)
    }

    fn found(text: &str, name: &str) -> &'static str {
        match find(&body(text), name) {
            Found::Present(_) => "present",
            Found::Misspelt(_) => "misspelt",
            Found::Missing => "missing",
        }
    }

    #[test]
    fn finds_exact_misspelt_and_missing_sections() {
        assert_eq!(
            found("## what TO do  (or avoid)\n", "What to do (or avoid)"),
            "present"
        );
        assert_eq!(
            found("## What to do (or avoke)\n", "What to do (or avoid)"),
            "misspelt"
        );
        assert_eq!(
            found("## What to do\n", "What to do (or avoid)"),
            "misspelt"
        );
        assert_eq!(found("## Counterexample\n", "Counter-example"), "misspelt");
        assert_eq!(
            found("## When it applies\n", "When this applies"),
            "misspelt"
        );
        assert_eq!(found("## Note on TTL\n", "Counter-example"), "missing");
        assert_eq!(
            found("## Why this supersedes `x`\n", "Counter-example"),
            "missing"
        );
        assert_eq!(found("## Example\n", "Counter-example"), "missing");
        // an expected section is never taken for a misspelling of another one
        assert_eq!(
            found("## When this applies\n", "What to do (or avoid)"),
            "missing"
        );
    }
}
