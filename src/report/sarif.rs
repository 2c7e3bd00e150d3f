//! `--output-format sarif`: SARIF 2.1.0 for code-scanning services (GitHub code scanning and
//! others).
//!
//! One run; `tool.driver.rules` lists every rule (not only those that fired), so `ruleIndex`
//! is the rule's position in [`RULES`]. Columns count Unicode scalar values
//! (`columnKind: unicodeCodePoints`), end columns are exclusive. Relative paths become URIs
//! relative to `%SRCROOT%` (where `lesson` ran); absolute paths become `file://` URIs.

use std::path::{Component, Path};

use serde::Serialize;

use super::{edit_positions, slash_path, Sources};
use crate::diagnostic::{Applicability, Diagnostic, Fix, Severity};
use crate::lint::{Rule, RULES};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const SRCROOT: &str = "%SRCROOT%";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool,
    column_kind: &'static str,
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    information_uri: Option<&'static str>,
    version: &'static str,
    rules: Vec<ReportingDescriptor>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Text,
    full_description: Markdown,
    help: Markdown,
    default_configuration: Configuration,
    properties: RuleProperties,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

#[derive(Serialize)]
struct Markdown {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    fixable: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Text,
    locations: [ResultLocation; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<SarifFix<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultLocation {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize, Clone)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
}

impl Region {
    fn new(
        (start_line, start_column): (usize, usize),
        (end_line, end_column): (usize, usize),
    ) -> Self {
        Region {
            start_line,
            start_column,
            end_line,
            end_column,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix<'a> {
    description: Text,
    artifact_changes: [ArtifactChange<'a>; 1],
    properties: FixProperties,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange<'a> {
    artifact_location: ArtifactLocation,
    replacements: Vec<Replacement<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement<'a> {
    deleted_region: Region,
    inserted_content: InsertedContent<'a>,
}

#[derive(Serialize)]
struct InsertedContent<'a> {
    text: &'a str,
}

#[derive(Serialize)]
struct FixProperties {
    applicability: Applicability,
}

/// Render a SARIF log with one run.
pub fn render(diagnostics: &[Diagnostic], sources: &Sources<'_>) -> String {
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "lesson",
                    information_uri: information_uri(),
                    version: env!("CARGO_PKG_VERSION"),
                    rules: RULES.iter().map(|r| descriptor(r)).collect(),
                },
            },
            column_kind: "unicodeCodePoints",
            results: diagnostics.iter().map(|d| result(d, sources)).collect(),
        }],
    };
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_default();
    out.push('\n');
    out
}

/// The project's home, from `repository` or `homepage` in Cargo.toml; omitted when neither is set.
fn information_uri() -> Option<&'static str> {
    [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
        .into_iter()
        .find(|uri| !uri.is_empty())
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn descriptor(rule: &Rule) -> ReportingDescriptor {
    let docs = rule.markdown();
    ReportingDescriptor {
        id: rule.code,
        name: rule.name,
        short_description: Text {
            text: rule.summary().to_string(),
        },
        full_description: Markdown {
            text: docs.clone(),
            markdown: docs.clone(),
        },
        help: Markdown {
            text: docs.clone(),
            markdown: docs,
        },
        default_configuration: Configuration {
            level: level(rule.default_level),
        },
        properties: RuleProperties {
            fixable: rule.fixable,
        },
    }
}

/// Rule docs come from `///` comments: drop the space each line starts with.
fn result<'a>(d: &'a Diagnostic, sources: &Sources<'_>) -> SarifResult<'a> {
    let artifact = artifact_location(&d.path);
    SarifResult {
        rule_id: d.code,
        rule_index: RULES.iter().position(|r| r.code == d.code),
        level: level(d.severity),
        message: Text {
            text: d.message.clone(),
        },
        locations: [ResultLocation {
            physical_location: PhysicalLocation {
                artifact_location: artifact.clone(),
                region: Region::new((d.line, d.column), (d.end_line, d.end_column)),
            },
        }],
        fixes: d
            .fix
            .iter()
            .map(|fix| sarif_fix(fix, artifact.clone(), sources.get(&d.path)))
            .collect(),
    }
}

fn sarif_fix<'a>(
    fix: &'a Fix,
    artifact_location: ArtifactLocation,
    source: Option<&crate::source::Source>,
) -> SarifFix<'a> {
    SarifFix {
        description: Text {
            text: fix.message.clone(),
        },
        artifact_changes: [ArtifactChange {
            artifact_location,
            replacements: fix
                .edits
                .iter()
                .map(|edit| {
                    let (start, end) = edit_positions(source, &edit.range);
                    Replacement {
                        deleted_region: Region::new(start, end),
                        inserted_content: InsertedContent {
                            text: &edit.content,
                        },
                    }
                })
                .collect(),
        }],
        properties: FixProperties {
            applicability: fix.applicability,
        },
    }
}

/// A relative path becomes a URI reference below `%SRCROOT%`; an absolute one a `file://` URI.
/// The URI encodes the path's bytes, so a name that is not valid UTF-8 names the real file.
fn artifact_location(path: &Path) -> ArtifactLocation {
    if path.is_absolute() {
        let shown = path_bytes(path);
        let rooted = if shown.starts_with(b"/") {
            shown
        } else {
            [&b"/"[..], &shown].concat() // a Windows drive: file:///C:/...
        };
        return ArtifactLocation {
            uri: format!("file://{}", percent_encode(&rooted)),
            uri_base_id: None,
        };
    }
    let parts: Vec<Vec<u8>> = path
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| c.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    ArtifactLocation {
        uri: percent_encode(&parts.join(&b'/')),
        uri_base_id: Some(SRCROOT),
    }
}

/// The bytes of a path, `/`-separated on every platform (on Windows, the WTF-8 bytes).
fn path_bytes(path: &Path) -> Vec<u8> {
    match path.to_str() {
        Some(_) => slash_path(path).into_bytes(),
        None => path.as_os_str().as_encoded_bytes().to_vec(),
    }
}

/// Percent-encode everything but RFC 3986 unreserved characters and `/`.
fn percent_encode(path: &[u8]) -> String {
    let mut out = String::with_capacity(path.len());
    for &byte in path {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_encoded_uris_below_srcroot() {
        let loc = artifact_location(Path::new("./lessons/a b:ü.md"));
        assert_eq!(loc.uri, "lessons/a%20b%3A%C3%BC.md");
        assert_eq!(loc.uri_base_id, Some(SRCROOT));
    }

    #[cfg(unix)]
    #[test]
    fn absolute_paths_are_file_uris() {
        let loc = artifact_location(Path::new("/tmp/bank/x.md"));
        assert_eq!(loc.uri, "file:///tmp/bank/x.md");
        assert_eq!(loc.uri_base_id, None);
    }
}
