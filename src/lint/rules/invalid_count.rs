//! `invalid-count` (S014).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};
use crate::yaml::Scalar;

declare_rule! {
    /// `success_count` or `failure_count` is negative or not an integer.
    ///
    /// ## What it does
    /// Reports a numeric `success_count` or `failure_count` that is negative, has a fraction, or
    /// is written as a float (`3.0`, `1e3`).
    ///
    /// ## Why is this bad?
    /// The counts are tallies of runs; retrieval weighs a lesson by
    /// `(success - failure + 1) / (success + failure + 1)`, which a negative or fractional count
    /// distorts. Readers that expect an integer treat a float as absent.
    ///
    /// ## Example
    /// ```yaml
    /// success_count: -1
    /// failure_count: 1.5
    /// ```
    pub static RULE = {
        code: "S014",
        name: "invalid-count",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for field in ["success_count", "failure_count"] {
        let Some((key, value)) = fm.get(fm.root, field) else {
            continue;
        };
        let Some(problem) = count_problem(fm.yaml.scalar(value)) else {
            continue;
        };
        out.push(Diagnostic::new(
            &RULE,
            fm.source(),
            fm.value_span(key, value),
            format!("`{field}` is {}, {problem}", fm.written(value)),
        ));
    }
}

/// What is wrong with a count, `None` for a non-negative integer or a value that is not a number.
fn count_problem(value: Option<Scalar<'_>>) -> Option<String> {
    match value? {
        Scalar::Int(i) if i < 0 => Some("expected an integer 0 or more".into()),
        Scalar::Float(f) if f.is_finite() && f.fract() == 0.0 && f >= 0.0 => {
            if f < 9.2e18 {
                // `abs` turns -0.0 into 0
                Some(format!(
                    "expected an integer: write `{:.0}`, without a decimal point",
                    f.abs()
                ))
            } else {
                Some("too large for a count".into())
            }
        }
        Scalar::Float(_) => Some("expected an integer 0 or more".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::resolve_plain;

    #[test]
    fn counts() {
        assert_eq!(count_problem(Some(resolve_plain("0"))), None);
        assert_eq!(count_problem(Some(resolve_plain("17"))), None);
        assert_eq!(count_problem(Some(resolve_plain("three"))), None);
        assert!(count_problem(Some(resolve_plain("-1"))).is_some());
        assert!(count_problem(Some(resolve_plain("1.5"))).is_some());
        assert!(count_problem(Some(resolve_plain(".nan"))).is_some());
        assert_eq!(
            count_problem(Some(resolve_plain("3.0"))).as_deref(),
            Some("expected an integer: write `3`, without a decimal point")
        );
        assert_eq!(
            count_problem(Some(resolve_plain("99999999999999999999"))).as_deref(),
            Some("too large for a count")
        );
    }
}
