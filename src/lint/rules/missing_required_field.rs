//! `missing-required-field` (S001).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::{list, FrontmatterView, ObjectKind};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A required field is missing.
    ///
    /// ## What it does
    /// Reports a mapping that lacks a field the schema requires: `schema`, `slug`, `title`,
    /// `trigger`, `outcome` and `evidence` at the top level, `description` in `trigger`, `kind` and
    /// `ref` in each evidence item. One finding per mapping names every missing field.
    ///
    /// ## Why is this bad?
    /// A runtime validating against LESSON.schema.json rejects the whole lesson, so it is never
    /// retrieved.
    ///
    /// ## Example
    /// ```yaml
    /// trigger:
    ///   tags: [pagination]   # no `description`
    /// evidence:
    ///   - kind: run          # no `ref`
    /// ```
    pub static RULE = {
        code: "S001",
        name: "missing-required-field",
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
        let missing: Vec<&str> = object
            .kind
            .required()
            .iter()
            .copied()
            .filter(|key| fm.get(object.map, key).is_none())
            .collect();
        if missing.is_empty() {
            continue;
        }
        let fields = if missing.len() == 1 {
            "field"
        } else {
            "fields"
        };
        let message = match object.kind {
            ObjectKind::Top => format!("missing required {fields} {}", list(&missing)),
            _ => format!(
                "`{}` is missing required {fields} {}",
                object.path(),
                list(&missing)
            ),
        };
        let help = match object.kind {
            ObjectKind::Top => "a lesson needs `schema`, `slug`, `title`, `trigger`, `outcome` and `evidence`",
            ObjectKind::Trigger => "`trigger.description` says in plain text when the lesson applies",
            _ => "each evidence item needs a `kind` (run, conversation, work-item, audit, wiki-page) and a `ref`",
        };
        out.push(Diagnostic::new(&RULE, fm.source(), object.at.clone(), message).with_help(help));
    }
}
