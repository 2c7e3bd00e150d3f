//! Writing a candidate's fields as a `LESSON.md`: block YAML in the schema's key order, read
//! back and compared with what was asked for (the writer is faithful or the candidate is not
//! written).

use serde_json::{Map, Value};

use crate::document::Document;
use crate::lesson::{EVIDENCE_KEYS, TARGET_KEYS, TOP_LEVEL_KEYS, TRIGGER_KEYS};
use crate::yaml::emit::{yaml_flow_scalar, yaml_scalar};

use super::NODE_BUDGET;

/// The `LESSON.md` text of `fields` and `body` (a body in the shape of `lesson new`'s when
/// none is given). `crlf` writes the frontmatter with CRLF line endings.
pub fn render(fields: &Map<String, Value>, body: Option<&str>, crlf: bool) -> String {
    let mut yaml = String::new();
    write_map(&mut yaml, 0, fields, &TOP_LEVEL_KEYS, Context::Top);
    let mut text = format!("---\n{yaml}---\n");
    if crlf {
        text = text.replace('\n', "\r\n");
    }
    match body {
        Some(body) if body.starts_with(['\n', '\r']) || body.is_empty() => text.push_str(body),
        Some(body) => {
            text.push('\n');
            text.push_str(body);
        }
        None => text.push_str(&default_body(fields)),
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn default_body(fields: &Map<String, Value>) -> String {
    let title = fields.get("title").and_then(Value::as_str).unwrap_or("");
    let when = fields
        .get("trigger")
        .and_then(|t| t.get("description"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!(
        "\n# {title}\n\n## When this applies\n\n{when}\n\n## What to do (or avoid)\n\n<!-- The distilled steps, imperative and concise. -->\n\n## Counter-example\n\n<!-- The run that taught this: what happened, and what it cost. -->\n"
    )
}

/// Where a mapping sits, for the order its keys are written in.
#[derive(Clone, Copy, PartialEq)]
enum Context {
    Top,
    Trigger,
    Evidence,
    Target,
    Other,
}

impl Context {
    fn of_child(self, key: &str) -> (Context, &'static [&'static str]) {
        match (self, key) {
            (Context::Top, "trigger") => (Context::Trigger, &TRIGGER_KEYS),
            (Context::Top, "evidence") => (Context::Evidence, &EVIDENCE_KEYS),
            (Context::Trigger, "targets") => (Context::Target, &TARGET_KEYS),
            _ => (Context::Other, &[]),
        }
    }
}

/// Keys in schema order (`known`), then the others in their own order.
fn ordered<'a>(map: &'a Map<String, Value>, known: &[&str]) -> Vec<(&'a String, &'a Value)> {
    let mut out: Vec<(&String, &Value)> = Vec::new();
    for k in known {
        if let Some((key, value)) = map.get_key_value(*k) {
            out.push((key, value));
        }
    }
    out.extend(map.iter().filter(|(k, _)| !known.contains(&k.as_str())));
    out
}

fn write_map(
    out: &mut String,
    indent: usize,
    map: &Map<String, Value>,
    known: &[&str],
    context: Context,
) {
    let pad = " ".repeat(indent);
    for (key, value) in ordered(map, known) {
        let key_text = yaml_scalar(key);
        let (child, child_known) = context.of_child(key);
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push_str(&format!("{pad}{key_text}:\n"));
                write_map(out, indent + 2, m, child_known, child);
            }
            Value::Array(items) if items.iter().any(is_collection) => {
                out.push_str(&format!("{pad}{key_text}:\n"));
                for item in items {
                    write_item(out, indent + 2, item, child_known, child);
                }
            }
            _ => out.push_str(&format!("{pad}{key_text}: {}\n", inline(value))),
        }
    }
}

/// One block list item (`- ...`) at `indent`.
fn write_item(out: &mut String, indent: usize, item: &Value, known: &[&str], context: Context) {
    let pad = " ".repeat(indent);
    match item {
        Value::Object(m) if !m.is_empty() => {
            let mut nested = String::new();
            write_map(&mut nested, indent + 2, m, known, context);
            // the first line's indentation becomes the dash
            let first = &nested[indent + 2..];
            out.push_str(&format!("{pad}- {first}"));
        }
        _ => out.push_str(&format!("{pad}- {}\n", inline(item))),
    }
}

fn is_collection(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

/// A value on one line: a scalar, `[a, b]` for a list of scalars, `{}` / `[]`, and JSON (a
/// subset of YAML's flow style) for anything nested deeper.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => yaml_scalar(s),
        Value::Array(items) if items.iter().all(|v| !is_collection(v)) => {
            let parts: Vec<String> = items.iter().map(flow_item).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) if m.is_empty() => "{}".into(),
        other => serde_json::to_string(other).expect("JSON values serialize"),
    }
}

fn flow_item(v: &Value) -> String {
    match v {
        Value::String(s) => yaml_flow_scalar(s),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => inline(other),
    }
}

/// Whether the rendered document's frontmatter reads back as exactly `intended`.
pub(super) fn reads_back(doc: &Document, intended: &Map<String, Value>) -> Result<(), String> {
    if !doc.yaml_errors.is_empty() {
        return Err("the YAML does not parse cleanly".into());
    }
    let (Some(yaml), Some(root)) = (&doc.yaml, doc.root_map()) else {
        return Err("no frontmatter mapping".into());
    };
    let Some(Value::Object(got)) = yaml.to_json(root, &mut NODE_BUDGET.clone()) else {
        return Err("the frontmatter does not convert".into());
    };
    for (key, want) in intended {
        if !same_json(got.get(key), Some(want)) {
            return Err(format!("`{key}` differs"));
        }
    }
    if let Some(extra) = got.keys().find(|k| !intended.contains_key(*k)) {
        return Err(format!("`{extra}` appeared"));
    }
    Ok(())
}

/// JSON equality with numbers compared by value (an integer written `1.0` reads back as 1).
fn same_json(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(x)), Some(Value::Number(y))) => x == y || x.as_f64() == y.as_f64(),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(Some(a), Some(b)))
        }
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.len() == y.len() && x.iter().all(|(k, v)| same_json(Some(v), y.get(k)))
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use proptest::prelude::*;

    fn parse_back(text: &str) -> Map<String, Value> {
        let doc = Document::parse(Source::new("x.md", text.to_string()), None);
        assert!(doc.yaml_errors.is_empty(), "{text}");
        let (yaml, root) = (doc.yaml.as_ref().unwrap(), doc.root_map().unwrap());
        match yaml.to_json(root, &mut 10_000).unwrap() {
            Value::Object(m) => m,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn writes_block_yaml_in_schema_order() {
        let fields: Map<String, Value> = serde_json::from_str(
            r#"{"title": "Use a: colon", "slug": "a-b", "evidence": [{"ref": "r1", "kind": "run"}],
                "trigger": {"tags": ["x", "y z"], "description": "when", "targets": [{"skill": "s*", "role": "r"}]},
                "metadata": {"v": {"deep": [[1, {"a": null}]], "e": {}}}, "outcome": "success"}"#,
        )
        .unwrap();
        let text = render(&fields, Some("# Use a: colon\n"), false);
        assert_eq!(
            text,
            "---\nslug: a-b\ntitle: 'Use a: colon'\ntrigger:\n  description: when\n  tags: [x, y z]\n  targets:\n    - role: r\n      skill: s*\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\nmetadata:\n  v:\n    deep:\n      - [1,{\"a\":null}]\n    e: {}\n---\n\n# Use a: colon\n"
        );
        assert!(same_json(
            Some(&Value::Object(parse_back(&text))),
            Some(&Value::Object(fields))
        ));
    }

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[ a-z:#'\"\\-\\[\\]{},&*!|>%@`]{0,8}".prop_map(Value::from),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z:# ]{0,5}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases(500)))]

        /// The writer is faithful: whatever the fields, the frontmatter reads back as them.
        #[test]
        fn any_fields_read_back(fields in prop::collection::btree_map("[a-z_ ]{1,6}", json_value(), 1..5)) {
            let fields: Map<String, Value> = fields.into_iter().collect();
            let text = render(&fields, Some("body\n"), false);
            let doc = Document::parse(Source::new("x.md", text.clone()), None);
            prop_assert_eq!(reads_back(&doc, &fields), Ok(()), "{}", text);
        }
    }
}
