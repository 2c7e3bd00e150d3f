//! The JSON Schema of a lesson's frontmatter, built from the model in [`crate::lesson`]: its
//! keys, required keys, enums, patterns and limits are the constants the parser and the lint
//! rules use, so the schema an editor validates against and the linter cannot drift apart.
//!
//! `lesson schema` prints it; editors load it through a `yaml-language-server` modeline.
//!
//! ```
//! let schema = lesson::schema::json_schema();
//! assert_eq!(schema["properties"]["schema"]["const"], "learning/v1");
//! assert_eq!(schema["required"].as_array().unwrap().len(), 6);
//! ```

use serde_json::{json, Map, Value};

use crate::lesson::{
    Chars, EvidenceKind, Outcome, CONFIDENCE_RANGE, DEFAULT_CONFIDENCE, DESCRIPTION_CHARS,
    EVIDENCE_KEYS, MAX_TAGS, NOTE_CHARS, REF_CHARS, REQUIRED_KEYS, SCHEMA, SLUG_CHARS,
    SLUG_PATTERN, TAG_PATTERN, TARGET_KEYS, TITLE_CHARS, TOP_LEVEL_KEYS, TRIGGER_KEYS,
};

/// The JSON Schema dialect the schema is written in.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The JSON Schema (draft 2020-12) of an AIP-11 frontmatter (`schema: learning/v1`).
pub fn json_schema() -> Value {
    let outcomes: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
    let kinds: Vec<&str> = EvidenceKind::ALL.iter().map(|k| k.as_str()).collect();
    let target = json!({
        "type": "object",
        "description": "Every glob given must match (several keys are an AND).",
        "minProperties": 1,
        "additionalProperties": false,
        "properties": properties(&TARGET_KEYS, |key| match key {
            "operator" => json!({"type": "string", "description": "Operator glob."}),
            "role" => json!({"type": "string", "description": "Role glob."}),
            _ => json!({"type": "string", "description": "Skill glob."}),
        }),
    });
    let trigger = json!({
        "type": "object",
        "description": "When the lesson applies.",
        "required": ["description"],
        "additionalProperties": false,
        "properties": properties(&TRIGGER_KEYS, |key| match key {
            "description" => text(DESCRIPTION_CHARS, "Plain-text description of when the lesson applies."),
            "tags" => json!({
                "type": "array",
                "description": "Retrieval keywords; three are usually enough.",
                "maxItems": MAX_TAGS,
                "items": {"type": "string", "pattern": TAG_PATTERN},
                "default": [],
            }),
            "targets" => json!({
                "type": "array",
                "description": "Operator / role / skill globs that scope retrieval; empty means anyone.",
                "items": target.clone(),
                "default": [],
            }),
            _ => metadata("Vendor-specific trigger predicates."),
        }),
    });
    let evidence = json!({
        "type": "object",
        "required": ["kind", "ref"],
        "additionalProperties": false,
        "properties": properties(&EVIDENCE_KEYS, |key| match key {
            "kind" => json!({"enum": kinds, "description": "What `ref` points to."}),
            "ref" => text(REF_CHARS, "Opaque id or path the host can resolve."),
            _ => text(NOTE_CHARS, "One-line factual note about the event."),
        }),
    });
    let top = properties(&TOP_LEVEL_KEYS, |key| match key {
        "schema" => json!({"const": SCHEMA, "description": "The spec id."}),
        "slug" => json!({
            "type": "string",
            "description": "Machine id, also the file name (`<slug>.md`).",
            "minLength": SLUG_CHARS.min,
            "maxLength": SLUG_CHARS.max,
            "pattern": SLUG_PATTERN,
        }),
        "title" => text(TITLE_CHARS, "One-sentence imperative title."),
        "trigger" => trigger.clone(),
        "outcome" => {
            json!({"enum": outcomes, "description": "Whether the source run succeeded, failed, or both."})
        }
        "evidence" => json!({
            "type": "array",
            "description": "Provenance: runs, conversations, work items, audits or wiki pages.",
            "minItems": 1,
            "items": evidence.clone(),
        }),
        "confidence" => json!({
            "type": "number",
            "description": "The author's confidence.",
            "minimum": CONFIDENCE_RANGE.start(),
            "maximum": CONFIDENCE_RANGE.end(),
            "default": DEFAULT_CONFIDENCE,
        }),
        "success_count" => count("Times the lesson worked when applied (a cache of its ledger)."),
        "failure_count" => count("Times its claim was contradicted (a cache of its ledger)."),
        "supersedes" => json!({
            "type": "array",
            "description": "Slugs of the lessons this one replaces.",
            "items": {"type": "string", "pattern": SLUG_PATTERN},
            "default": [],
        }),
        "expires_at" => json!({
            "type": "string",
            "format": "date-time",
            "description": "Soft TTL (RFC 3339); past it, retrieval leaves the lesson out.",
        }),
        _ => metadata("Vendor extensions under namespaced keys (metadata.<vendor>.<field>)."),
    });
    json!({
        "$schema": DIALECT,
        "title": format!("LESSON.md frontmatter ({SCHEMA})"),
        "description": "The YAML frontmatter of an AIP-11 lesson file, as `lesson` reads it.",
        "type": "object",
        "required": REQUIRED_KEYS,
        "additionalProperties": false,
        "properties": top,
    })
}

/// [`json_schema`] as pretty-printed JSON with a final newline, as `lesson schema` prints it.
pub fn render() -> String {
    let mut out = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
    out.push('\n');
    out
}

/// The `properties` object of a closed mapping: one entry per allowed key, none missing.
fn properties(keys: &[&str], schema: impl Fn(&str) -> Value) -> Value {
    let map: Map<String, Value> = keys.iter().map(|&k| (k.to_string(), schema(k))).collect();
    Value::Object(map)
}

/// A length-limited string.
fn text(chars: Chars, description: &str) -> Value {
    let mut schema = json!({"type": "string", "description": description, "maxLength": chars.max});
    if chars.min > 0 {
        schema["minLength"] = json!(chars.min);
    }
    schema
}

/// A non-negative integer count.
fn count(description: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "default": 0, "description": description})
}

/// An open mapping.
fn metadata(description: &str) -> Value {
    json!({"type": "object", "additionalProperties": true, "default": {}, "description": description})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slug pattern and limits say what [`crate::lesson::slug_problem`] says.
    #[test]
    fn slug_pattern_agrees_with_slug_problem() {
        let pattern = regex::Regex::new(SLUG_PATTERN).unwrap();
        let long = "a".repeat(80);
        let too_long = "a".repeat(81);
        for s in [
            "ab",
            "a1",
            "a",
            "",
            "1a",
            "-a",
            "a-",
            "a--b",
            "aB",
            "a_b",
            "caf\u{e9}",
            "a b",
            &long,
            &too_long,
        ] {
            let n = s.chars().count();
            let by_schema = pattern.is_match(s) && (SLUG_CHARS.min..=SLUG_CHARS.max).contains(&n);
            assert_eq!(by_schema, crate::lesson::slug_problem(s).is_none(), "{s:?}");
        }
    }

    #[test]
    fn every_key_has_a_property() {
        let schema = json_schema();
        let props = schema["properties"].as_object().unwrap();
        assert_eq!(props.len(), TOP_LEVEL_KEYS.len());
        let targets = &props["trigger"]["properties"]["targets"]["items"]["properties"];
        assert_eq!(targets.as_object().unwrap().len(), TARGET_KEYS.len());
        assert!(render().ends_with("}\n"));
    }
}
