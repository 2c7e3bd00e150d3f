//! `missing-counter-example` (D003).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::Section;
use crate::lesson::Outcome;
use crate::lint::rules::missing_section::{self, Found, COUNTER_EXAMPLE};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A `failure` or `mixed` lesson has no counter-example.
    ///
    /// ## What it does
    /// Reports a lesson whose `outcome` is `failure` or `mixed` when its `## Counter-example`
    /// section is missing, or holds nothing but whitespace and HTML comments.
    ///
    /// ## Why is this bad?
    /// A failure-derived lesson is a counter-example: the run that went wrong is its evidence and
    /// its point. Without it a reader cannot tell what the advice guards against.
    ///
    /// ## Example
    /// ```text
    /// outcome: failure
    /// ---
    ///
    /// ## Counter-example
    ///
    /// <!-- TODO -->
    /// ```
    pub static RULE = {
        code: "D003",
        name: "missing-counter-example",
        level: Warning,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let doc = ctx.doc;
    let (Some(lesson), Some(body)) = (&doc.lesson, &doc.body) else {
        return;
    };
    let outcome = lesson.outcome.value;
    if !matches!(outcome, Outcome::Failure | Outcome::Mixed) {
        return;
    }
    let text = &doc.source.text;
    let (range, message, help) = match missing_section::find(body, COUNTER_EXAMPLE) {
        Found::Present(s) if is_empty(text, s) => (
            s.heading.range.clone(),
            format!("`## {COUNTER_EXAMPLE}` of a `{outcome}` lesson is empty"),
            "describe the run that went wrong: what the agent did and what it cost".to_string(),
        ),
        Found::Present(_) => return,
        Found::Misspelt(s) => (
            s.heading.range.clone(),
            format!("`{outcome}` lesson has no `## {COUNTER_EXAMPLE}` section"),
            missing_section::misspelt_help(s, COUNTER_EXAMPLE),
        ),
        Found::Missing => (
            missing_section::anchor(body),
            format!("`{outcome}` lesson has no `## {COUNTER_EXAMPLE}` section"),
            format!("add a `## {COUNTER_EXAMPLE}` section describing the run that went wrong"),
        ),
    };
    out.push(Diagnostic::new(&RULE, &doc.source, range, message).with_help(help));
}

/// Whether a section holds only whitespace and HTML comments (an unclosed comment runs to the
/// end of the section, as it does in markdown).
fn is_empty(text: &str, section: &Section) -> bool {
    let mut rest = &text[section.content.clone()];
    loop {
        let Some(open) = rest.find("<!--") else {
            return rest.trim().is_empty();
        };
        if !rest[..open].trim().is_empty() {
            return false;
        }
        match rest[open + 4..].find("-->") {
            Some(close) => rest = &rest[open + 4 + close + 3..],
            None => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::document::Body;

    fn empty(text: &str) -> bool {
        let body = Body::parse(text, 0);
        is_empty(text, body.section(COUNTER_EXAMPLE).unwrap())
    }

    #[test]
    fn empty_means_whitespace_and_comments_only() {
        assert!(empty("## Counter-example\n"));
        assert!(empty("## Counter-example\n\n  \n## Next\n\ntext\n"));
        assert!(empty("## Counter-example\n\n<!-- TODO -->\n\n<!-- b -->\n"));
        assert!(!empty("## Counter-example\n\n<!-- TODO --> x\n"));
        assert!(!empty("## Counter-example\n\nThe run failed.\n"));
        assert!(!empty("## Counter-example\n\n### Run r1\n"));
        assert!(empty("## Counter-example\n<!--\nnot yet\n\n-->\n"));
    }
}
