//! `vendor-redefines-standard-field` (S018).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::TOP_LEVEL_KEYS;
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};
use crate::yaml::NodeId;

/// The standard trigger fields `trigger.metadata` must not redefine.
const TRIGGER_FIELDS: [&str; 3] = ["description", "tags", "targets"];

declare_rule! {
    /// A vendor extension redefines a standard field.
    ///
    /// ## What it does
    /// Reports a standard top-level field name under `metadata` (`metadata.slug`) or under a
    /// vendor block (`metadata.acme.confidence`), and a standard trigger field under
    /// `trigger.metadata` or one of its vendor blocks (`trigger.metadata.acme.tags`).
    /// `metadata.lesson` is this tool's own block (`allow`, `origin`) and follows the same rule.
    ///
    /// ## Why is this bad?
    /// AIP-11: "Standard fields MUST NOT be redefined by vendors." A second `confidence` or
    /// `tags` means two runtimes can read two different lessons from one file.
    ///
    /// ## Example
    /// ```yaml
    /// metadata:
    ///   acme:
    ///     confidence: 0.99   # the standard field is the top-level `confidence`
    /// ```
    pub static RULE = {
        code: "S018",
        name: "vendor-redefines-standard-field",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    // a nested `metadata` key is a vendor's own namespace, not a redefinition
    let top: Vec<&str> = TOP_LEVEL_KEYS
        .iter()
        .copied()
        .filter(|&k| k != "metadata")
        .collect();
    if let Some((_, metadata)) = fm.get(fm.root, "metadata") {
        walk(&fm, out, metadata, "metadata", &top, "");
    }
    if let Some((_, trigger)) = fm.trigger() {
        if let Some((_, metadata)) = fm.get(trigger, "metadata") {
            walk(
                &fm,
                out,
                metadata,
                "trigger.metadata",
                &TRIGGER_FIELDS,
                "trigger.",
            );
        }
    }
}

/// Report standard names among the keys of `metadata` and of its vendor blocks.
fn walk(
    fm: &FrontmatterView<'_>,
    out: &mut Vec<Diagnostic>,
    metadata: NodeId,
    path: &str,
    standard: &[&str],
    standard_prefix: &str,
) {
    for &(key, value) in fm.yaml.map(metadata).unwrap_or_default() {
        let Some(name) = fm.yaml.str(key) else {
            continue;
        };
        if standard.contains(&name) {
            report(
                fm,
                out,
                key,
                &format!("{path}.{name}"),
                standard_prefix,
                name,
            );
            continue;
        }
        for &(inner_key, _) in fm.yaml.map(value).unwrap_or_default() {
            let Some(inner) = fm.yaml.str(inner_key) else {
                continue;
            };
            if standard.contains(&inner) {
                let field = format!("{path}.{name}.{inner}");
                report(fm, out, inner_key, &field, standard_prefix, inner);
            }
        }
    }
}

fn report(
    fm: &FrontmatterView<'_>,
    out: &mut Vec<Diagnostic>,
    key: NodeId,
    field: &str,
    standard_prefix: &str,
    name: &str,
) {
    out.push(
        Diagnostic::new(
            &RULE,
            fm.source(),
            fm.span(key),
            format!("`{field}` redefines the standard field `{standard_prefix}{name}`"),
        )
        .with_help(format!(
            "set `{standard_prefix}{name}` itself, or give the vendor field another name"
        )),
    );
}
