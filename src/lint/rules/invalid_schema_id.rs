//! `invalid-schema-id` (S004).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::{LEGACY_SCHEMAS, SCHEMA};
use crate::lint::schema_walk::{excerpt, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `schema` is not `learning/v1`.
    ///
    /// ## What it does
    /// Reports a `schema` string that is neither `learning/v1` nor one of its legacy aliases
    /// (`agentlearning/v1`, `agentlesson/v1`, reported by `legacy-schema-id`).
    ///
    /// ## Why is this bad?
    /// The schema id says which format the file follows; a runtime skips files whose id it does
    /// not know, so the lesson is never retrieved.
    ///
    /// ## Example
    /// ```yaml
    /// schema: learning/v2
    /// ```
    pub static RULE = {
        code: "S004",
        name: "invalid-schema-id",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value, id)) = FrontmatterView::string_field(ctx, "schema") else {
        return;
    };
    if id == SCHEMA || LEGACY_SCHEMAS.contains(&id) {
        return;
    }
    out.push(
        Diagnostic::new(
            &RULE,
            fm.source(),
            fm.value_span(key, value),
            format!("unknown schema id `{}`, expected `{SCHEMA}`", excerpt(id)),
        )
        .with_help(format!(
            "a lesson starts with `schema: {SCHEMA}` (legacy {} are read too)",
            LEGACY_SCHEMAS.map(|s| format!("`{s}`")).join(" and ")
        )),
    );
}
