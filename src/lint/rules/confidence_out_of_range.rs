//! `confidence-out-of-range` (S013).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};
use crate::yaml::Scalar;

declare_rule! {
    /// `confidence` is outside 0 to 1.
    ///
    /// ## What it does
    /// Reports a numeric `confidence` below 0, above 1, or not a number at all (`.nan`).
    ///
    /// ## Why is this bad?
    /// Retrieval multiplies a lesson's score by its confidence; a value above 1 inflates the
    /// lesson over better-evidenced ones (confidence laundering), a negative one inverts it.
    ///
    /// ## Example
    /// ```yaml
    /// confidence: 85   # 0.85
    /// ```
    pub static RULE = {
        code: "S013",
        name: "confidence-out-of-range",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value)) = FrontmatterView::field(ctx, "confidence") else {
        return;
    };
    let number = match fm.yaml.scalar(value) {
        Some(Scalar::Int(i)) => i as f64,
        Some(Scalar::Float(f)) => f,
        _ => return,
    };
    if crate::lesson::CONFIDENCE_RANGE.contains(&number) {
        return;
    }
    let mut d = Diagnostic::new(
        &RULE,
        fm.source(),
        fm.value_span(key, value),
        format!(
            "`confidence` is {}, expected a number from 0 to 1",
            fm.written(value)
        ),
    );
    if let Some(Scalar::Int(percent @ 2..=100)) = fm.yaml.scalar(value) {
        d = d.with_help(format!(
            "confidence is a fraction, not a percentage: {percent} would be {}",
            percent as f64 / 100.0
        ));
    }
    out.push(d);
}
