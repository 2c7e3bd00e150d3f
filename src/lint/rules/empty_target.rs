//! `empty-target` (S012).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::{FrontmatterView, ObjectKind};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A trigger target has no keys.
    ///
    /// ## What it does
    /// Reports an item of `trigger.targets` that is an empty mapping (`- {}`); the schema
    /// requires at least one of `operator`, `role` and `skill`.
    ///
    /// ## Why is this bad?
    /// An empty target scopes nothing. Runtimes disagree on whether it matches everyone or no
    /// one, so the same lesson is injected everywhere by one host and nowhere by another.
    ///
    /// ## Example
    /// ```yaml
    /// trigger:
    ///   description: Drafting an outbound email subject.
    ///   targets:
    ///     - {}
    /// ```
    pub static RULE = {
        code: "S012",
        name: "empty-target",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for object in fm.objects() {
        if object.kind != ObjectKind::Target
            || !fm.yaml.map(object.map).is_some_and(<[_]>::is_empty)
        {
            continue;
        }
        out.push(
            Diagnostic::new(
                &RULE,
                fm.source(),
                object.at.clone(),
                format!(
                    "`{}` is empty, expected `operator`, `role` or `skill`",
                    object.path()
                ),
            )
            .with_help("give the target a glob, or remove it (no targets means anyone)"),
        );
    }
}
