//! `wrong-type` (S003).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::{FrontmatterView, ObjectKind};
use crate::lint::{Check, FileContext};
use crate::yaml::{NodeId, Scalar};

declare_rule! {
    /// A field's value has the wrong YAML type.
    ///
    /// ## What it does
    /// Reports a known field whose value is not of the type the schema gives it: a number where
    /// a string is expected (`slug: 123`), a string where a list is expected (`tags: research`),
    /// a quoted number (`confidence: "0.7"`), a scalar where a mapping is expected
    /// (`trigger: text`, `metadata: [x]`), or a list item of the wrong type (a target that is not
    /// a mapping).
    ///
    /// ## Why is this bad?
    /// The schema rejects the lesson, and a lenient runtime may read the field as absent.
    ///
    /// ## Example
    /// ```yaml
    /// confidence: "high"     # expected a number
    /// trigger:
    ///   description: Paginated list views.
    ///   tags: pagination     # expected a sequence: [pagination]
    /// ```
    pub static RULE = {
        code: "S003",
        name: "wrong-type",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

/// The types the schema gives field values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    String,
    Integer,
    Number,
    Mapping,
    /// A sequence of strings.
    Strings,
    /// A sequence of mappings.
    Mappings,
}

impl Want {
    fn describe(self) -> &'static str {
        match self {
            Want::String => "a string",
            Want::Integer => "an integer",
            Want::Number => "a number",
            Want::Mapping => "a mapping",
            Want::Strings => "a sequence of strings",
            Want::Mappings => "a sequence of mappings",
        }
    }
}

fn want(kind: ObjectKind, key: &str) -> Option<Want> {
    Some(match (kind, key) {
        (ObjectKind::Top, "trigger" | "metadata") => Want::Mapping,
        (ObjectKind::Top, "evidence") => Want::Mappings,
        (ObjectKind::Top, "confidence") => Want::Number,
        // S003 accepts any number here; invalid-count (S014) judges fractions and signs
        (ObjectKind::Top, "success_count" | "failure_count") => Want::Integer,
        (ObjectKind::Top, "supersedes") => Want::Strings,
        (ObjectKind::Top, "schema" | "slug" | "title" | "outcome" | "expires_at") => Want::String,
        (ObjectKind::Trigger, "description") => Want::String,
        (ObjectKind::Trigger, "tags") => Want::Strings,
        (ObjectKind::Trigger, "targets") => Want::Mappings,
        (ObjectKind::Trigger, "metadata") => Want::Mapping,
        (ObjectKind::Target, "operator" | "role" | "skill") => Want::String,
        (ObjectKind::Evidence, "kind" | "ref" | "note") => Want::String,
        _ => return None,
    })
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for object in fm.objects() {
        for &(key, value) in fm.yaml.map(object.map).unwrap_or_default() {
            let Some(name) = fm.yaml.str(key) else {
                continue;
            };
            let Some(want) = want(object.kind, name) else {
                continue;
            };
            // the field's path is built only for a finding: this loop runs on every key
            match want {
                Want::Strings | Want::Mappings => {
                    let Some(items) = fm.yaml.seq(value) else {
                        report(&fm, out, &object.field(name), want, key, value);
                        continue;
                    };
                    let item_want = if want == Want::Strings {
                        Want::String
                    } else {
                        Want::Mapping
                    };
                    for (i, &item) in items.iter().enumerate() {
                        if !is(&fm, item, item_want) {
                            let field = format!("{}[{i}]", object.field(name));
                            report(&fm, out, &field, item_want, item, item);
                        }
                    }
                }
                _ if !is(&fm, value, want) => {
                    report(&fm, out, &object.field(name), want, key, value)
                }
                _ => {}
            }
        }
    }
}

fn is(fm: &FrontmatterView<'_>, id: NodeId, want: Want) -> bool {
    match want {
        Want::String => matches!(fm.yaml.scalar(id), Some(Scalar::Str(_))),
        Want::Integer | Want::Number => {
            matches!(fm.yaml.scalar(id), Some(Scalar::Int(_) | Scalar::Float(_)))
        }
        Want::Mapping => fm.yaml.map(id).is_some(),
        Want::Strings | Want::Mappings => fm.yaml.seq(id).is_some(),
    }
}

fn report(
    fm: &FrontmatterView<'_>,
    out: &mut Vec<Diagnostic>,
    field: &str,
    want: Want,
    key: NodeId,
    value: NodeId,
) {
    let message = format!(
        "`{field}` must be {}, found {}",
        want.describe(),
        fm.found(value)
    );
    let mut d = Diagnostic::new(&RULE, fm.source(), fm.value_span(key, value), message);
    if let Some(help) = help(fm, want, value) {
        d = d.with_help(help);
    }
    out.push(d);
}

fn help(fm: &FrontmatterView<'_>, want: Want, value: NodeId) -> Option<String> {
    let scalar = fm.yaml.scalar(value);
    match (want, scalar) {
        (_, Some(Scalar::Null)) => Some("give it a value, or remove the field".into()),
        (Want::String, Some(_)) => Some("quote the value to make it a string".into()),
        (Want::Integer | Want::Number, Some(Scalar::Str(s))) if s.trim().parse::<f64>().is_ok() => {
            Some("remove the quotes: it is a number, not a string".into())
        }
        (Want::Strings, Some(Scalar::Str(s))) => Some(format!(
            "write a sequence, even for one item: `[{}]`",
            crate::lint::schema_walk::excerpt(s)
        )),
        _ => None,
    }
}
