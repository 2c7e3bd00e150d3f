//! `unknown-field` (S002).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::{EVIDENCE_KEYS, TRIGGER_KEYS};
use crate::lint::schema_walk::{list, FrontmatterView, Object, ObjectKind};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A field the schema does not define.
    ///
    /// ## What it does
    /// Reports keys that are not allowed at the top level, in `trigger`, in a target or in an
    /// evidence item (the schema sets `additionalProperties: false` on each). A key that looks
    /// like a misspelling of an allowed one is reported by `misspelled-field` (S019) instead.
    ///
    /// ## Why is this bad?
    /// Strict validators reject the lesson; lenient ones silently drop the field. Vendor data
    /// belongs under `metadata.<vendor>` (or `trigger.metadata.<vendor>`).
    ///
    /// ## Example
    /// ```yaml
    /// author: alice          # move it under `metadata.<vendor>`
    /// ```
    pub static RULE = {
        code: "S002",
        name: "unknown-field",
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
        for unknown in fm.unknown_keys(object) {
            if unknown.correction.is_some() {
                continue;
            }
            let span = fm.span(unknown.key);
            let (message, help) = match &unknown.name {
                None => (
                    format!(
                        "a {} is not a field name{}",
                        fm.yaml.type_name(unknown.key),
                        location(object)
                    ),
                    "field names are plain strings".to_string(),
                ),
                Some(name) => (
                    format!("unknown field `{}`", object.field(name)),
                    match unknown.resembles {
                        Some(twin) => format!(
                            "it looks like `{}`, which is already set; remove one of them",
                            object.field(twin)
                        ),
                        None => help(object, name),
                    },
                ),
            };
            out.push(Diagnostic::new(&RULE, fm.source(), span, message).with_help(help));
        }
    }
}

fn location(object: &Object) -> String {
    if object.kind == ObjectKind::Top {
        String::new()
    } else {
        format!(" in `{}`", object.path())
    }
}

fn help(object: &Object, name: &str) -> String {
    match object.kind {
        ObjectKind::Top if TRIGGER_KEYS.contains(&name) => {
            format!("`{name}` belongs under `trigger`")
        }
        ObjectKind::Top if EVIDENCE_KEYS.contains(&name) => {
            format!("`{name}` belongs in an item of `evidence`")
        }
        ObjectKind::Top => "move it under `metadata.<vendor>`".into(),
        ObjectKind::Trigger => format!(
            "`trigger` allows {}; move vendor predicates under `trigger.metadata.<vendor>`",
            list(&TRIGGER_KEYS)
        ),
        ObjectKind::Target | ObjectKind::Evidence => {
            format!("`{}` allows {}", object.path(), list(object.kind.keys()))
        }
    }
}
