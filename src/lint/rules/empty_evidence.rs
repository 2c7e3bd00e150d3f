//! `empty-evidence` (S011).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `evidence` is an empty list.
    ///
    /// ## What it does
    /// Reports `evidence: []`: the schema requires at least one evidence item.
    ///
    /// ## Why is this bad?
    /// A lesson without provenance is a prompt edit, not a lesson: nothing ties it to a run,
    /// conversation, work item, audit or wiki page a host can check.
    ///
    /// ## Example
    /// ```yaml
    /// evidence: []
    /// ```
    pub static RULE = {
        code: "S011",
        name: "empty-evidence",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value)) = FrontmatterView::field(ctx, "evidence") else {
        return;
    };
    if fm.yaml.seq(value).is_some_and(<[_]>::is_empty) {
        out.push(
            Diagnostic::new(
                &RULE,
                fm.source(),
                fm.value_span(key, value),
                "`evidence` is empty, expected at least one item",
            )
            .with_help("cite the run, conversation, work item, audit or wiki page the lesson comes from: `- kind: run` and `ref: <id>`"),
        );
    }
}
