//! `invalid-evidence-kind` (S010).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::EvidenceKind;
use crate::lint::schema_walk::{closest, excerpt, one_of, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// An evidence `kind` is not one the schema defines.
    ///
    /// ## What it does
    /// Reports an evidence item whose `kind` is not `run`, `conversation`, `work-item`, `audit`
    /// or `wiki-page`, with the closest one when the value looks like a misspelling.
    ///
    /// ## Why is this bad?
    /// The kind tells the host which index resolves the `ref`; with an unknown kind the
    /// evidence cannot be checked and the lesson is rejected.
    ///
    /// ## Example
    /// ```yaml
    /// evidence:
    ///   - kind: work_item   # work-item
    ///     ref: wi_q2-newsletter-09
    /// ```
    pub static RULE = {
        code: "S010",
        name: "invalid-evidence-kind",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    let choices = EvidenceKind::ALL.map(EvidenceKind::as_str);
    for (i, item) in fm.items(fm.root, "evidence") {
        let Some((key, value)) = fm.get(item, "kind") else {
            continue;
        };
        let Some(kind) = fm.string(value) else {
            continue;
        };
        if EvidenceKind::parse(kind).is_some() {
            continue;
        }
        let mut d = Diagnostic::new(
            &RULE,
            fm.source(),
            fm.value_span(key, value),
            format!(
                "invalid kind `{}` in `evidence[{i}]`, expected one of {}",
                excerpt(kind),
                one_of(&choices)
            ),
        );
        if let Some(best) = closest(kind, &choices) {
            d = d.with_help(format!("did you mean `{best}`?"));
        }
        out.push(d);
    }
}
