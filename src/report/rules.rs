//! The lint rules' documentation as JSON (`lesson rule --format json`).

use serde_json::{json, Value};

use crate::lint::Rule;

/// One rule: `code`, `name`, `severity` (its default level: `error|warning|info`), `fixable`,
/// `summary` (the first line of its docs) and `docs` (the whole documentation, markdown).
pub fn json(rule: &Rule) -> Value {
    json!({
        "code": rule.code,
        "name": rule.name,
        "severity": rule.default_level.as_str(),
        "fixable": rule.fixable,
        "summary": rule.summary(),
        "docs": rule.markdown(),
    })
}

/// Rules, in the order given, as an array of [`json()`] objects.
pub fn json_all<'a>(rules: impl IntoIterator<Item = &'a Rule>) -> Value {
    Value::Array(rules.into_iter().map(json).collect())
}
