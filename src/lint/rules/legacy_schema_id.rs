//! `legacy-schema-id` (S005).

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::lesson::{LEGACY_SCHEMAS, SCHEMA};
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `schema` uses a legacy id.
    ///
    /// ## What it does
    /// Reports `schema: agentlearning/v1` and `schema: agentlesson/v1`, earlier names of
    /// `learning/v1`. The fix rewrites the id and keeps its quoting.
    ///
    /// ## Why is this bad?
    /// LESSON.schema.json requires the literal `learning/v1`; validators that do not know the
    /// aliases reject the lesson.
    ///
    /// ## Example
    /// ```yaml
    /// schema: agentlearning/v1   # use learning/v1
    /// ```
    pub static RULE = {
        code: "S005",
        name: "legacy-schema-id",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value)) = FrontmatterView::field(ctx, "schema") else {
        return;
    };
    let Some(id) = fm.string(value).filter(|id| LEGACY_SCHEMAS.contains(id)) else {
        return;
    };
    let mut d = Diagnostic::new(
        &RULE,
        fm.source(),
        fm.value_span(key, value),
        format!("legacy schema id `{id}`, the current id is `{SCHEMA}`"),
    );
    if let Some(range) = fm.literal_range(value, id) {
        d = d.with_fix(Fix::safe(
            format!("replace `{id}` with `{SCHEMA}`"),
            vec![Edit::replace(range, SCHEMA)],
        ));
    }
    out.push(d);
}
