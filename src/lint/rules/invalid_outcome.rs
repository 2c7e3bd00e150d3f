//! `invalid-outcome` (S009).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::Outcome;
use crate::lint::schema_walk::{closest, excerpt, one_of, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `outcome` is not `success`, `failure` or `mixed`.
    ///
    /// ## What it does
    /// Reports an `outcome` outside the schema's three values, with the closest one when the
    /// value looks like a misspelling.
    ///
    /// ## Why is this bad?
    /// Retrieval presents a lesson as guidance or as a caution depending on its outcome; a
    /// runtime cannot read any other value.
    ///
    /// ## Example
    /// ```yaml
    /// outcome: failed   # failure
    /// ```
    pub static RULE = {
        code: "S009",
        name: "invalid-outcome",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value, outcome)) = FrontmatterView::string_field(ctx, "outcome") else {
        return;
    };
    if Outcome::parse(outcome).is_some() {
        return;
    }
    let choices = Outcome::ALL.map(Outcome::as_str);
    let mut d = Diagnostic::new(
        &RULE,
        fm.source(),
        fm.value_span(key, value),
        format!(
            "invalid outcome `{}`, expected {}",
            excerpt(outcome),
            one_of(&choices)
        ),
    );
    if let Some(best) = closest(outcome, &choices) {
        d = d.with_help(format!("did you mean `{best}`?"));
    }
    out.push(d);
}
