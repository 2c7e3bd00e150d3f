//! `overbroad-trigger` (T001).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::TARGET_KEYS;
use crate::lint::schema_walk::{excerpt, matches_everything, FrontmatterView, ObjectKind};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// The trigger matches every request.
    ///
    /// ## What it does
    /// Reports a `trigger` with neither `tags` nor `targets`, and a target glob that matches
    /// every name (`*`, `**`, `**/*`, `*/**`).
    ///
    /// ## Why is this bad?
    /// Such a lesson is a candidate for every turn of every agent and competes for the prompt
    /// budget everywhere: the "trigger over-broadening" threat of AIP-11. A catch-all glob
    /// scopes nothing; no target at all says the same thing honestly.
    ///
    /// ## Example
    /// ```yaml
    /// trigger:
    ///   description: Any time the agent calls a tool.
    ///   targets:
    ///     - role: "*"
    /// ```
    pub static RULE = {
        code: "T001",
        name: "overbroad-trigger",
        level: Warning,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    let Some((trigger_key, trigger)) = fm.trigger() else {
        return;
    };
    // absent or `[]`; a value of the wrong type is wrong-type's finding, not this one
    let unset = |key| match fm.get(trigger, key) {
        None => true,
        Some((_, value)) => fm.yaml.seq(value).is_some_and(<[_]>::is_empty),
    };
    if unset("tags") && unset("targets") {
        out.push(
            Diagnostic::new(
                &RULE,
                fm.source(),
                fm.span(trigger_key),
                "`trigger` has no tags and no targets, so the lesson matches every request",
            )
            .with_help("add a few narrow `tags`, or `targets` naming an operator, role or skill"),
        );
    }
    for object in fm.objects() {
        if object.kind != ObjectKind::Target {
            continue;
        }
        for key in TARGET_KEYS {
            let Some((_, value)) = fm.get(object.map, key) else {
                continue;
            };
            let Some(glob) = fm.string(value).filter(|g| matches_everything(g)) else {
                continue;
            };
            out.push(
                Diagnostic::new(
                    &RULE,
                    fm.source(),
                    fm.span(value),
                    format!(
                        "`{}` is `{}`, which matches every {key}",
                        object.field(key),
                        excerpt(glob)
                    ),
                )
                .with_help(format!(
                    "narrow the glob, or remove it if the lesson really applies to every {key}"
                )),
            );
        }
    }
}
