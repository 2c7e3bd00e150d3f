//! `outcome-mixed-band` (L003).

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Fix};
use crate::edit::frontmatter::Frontmatter;
use crate::lesson::Outcome;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// Successes and failures are about equal, but the outcome is not `mixed`.
    ///
    /// ## What it does
    /// Reports a lesson whose `success_count` and `failure_count` are both at least
    /// `[review] mixed-min` (default 3) and whose smaller count is at least `[review]
    /// mixed-ratio` (default 0.5) of the larger, while its `outcome` is `success` or `failure`.
    /// The unsafe fix sets `outcome: mixed`.
    ///
    /// ## Why is this bad?
    /// A lesson that works about as often as it fails is conditional, not directive. ADAPTER.md
    /// ("Promote to mixed") asks hosts to mark it `mixed` so that retrieval presents it that
    /// way; its body should then say when it holds.
    ///
    /// ## Example
    /// ```yaml
    /// outcome: success
    /// success_count: 5
    /// failure_count: 4
    /// ```
    pub static RULE = {
        code: "L003",
        name: "outcome-mixed-band",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(lesson) = &ctx.doc.lesson else {
        return;
    };
    let (s, f) = (lesson.successes(), lesson.failures());
    let review = &ctx.config.review;
    if lesson.outcome.value == Outcome::Mixed || !review.in_mixed_band(s, f) {
        return;
    }
    let Ok(fm) = Frontmatter::of(ctx.doc) else {
        return;
    };
    let range = fm
        .value_range("outcome")
        .unwrap_or_else(|| lesson.outcome.span.clone());
    let mut d = Diagnostic::new(
        &RULE,
        &ctx.doc.source,
        range,
        format!(
            "{s} successes and {f} failures are in the mixed band, but the outcome is `{}`",
            lesson.outcome.value
        ),
    )
    .with_help(format!(
        "a lesson that holds only sometimes is `mixed`; say in its body when it holds (the band: both counts at least {}, the smaller at least {} of the larger, `[review]` in lesson.toml)",
        review.mixed_min, review.mixed_ratio
    ));
    if let Ok(Some(edit)) = fm.set_outcome(Outcome::Mixed) {
        d = d.with_fix(Fix::unsafe_("set `outcome: mixed`", vec![edit]));
    }
    out.push(d);
}
