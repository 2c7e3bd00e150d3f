//! The typed AIP-11 model (`schema: learning/v1`), read from a span-carrying YAML tree.
//!
//! Reading is lenient: a [`Lesson`] exists when the required fields are present with the right
//! types; constraint violations (lengths, patterns, ranges) are the lint rules' business and do
//! not stop the model from being built. Every field keeps the byte span of its value.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize, Serializer};

use crate::yaml::{NodeId, Scalar, Yaml};

/// The schema id this crate writes.
pub const SCHEMA: &str = "learning/v1";
/// Older schema ids read as aliases of [`SCHEMA`].
pub const LEGACY_SCHEMAS: [&str; 2] = ["agentlearning/v1", "agentlesson/v1"];

/// Top-level keys the schema allows, in the order `lesson new` writes them.
pub const TOP_LEVEL_KEYS: [&str; 12] = [
    "schema",
    "slug",
    "title",
    "trigger",
    "outcome",
    "evidence",
    "confidence",
    "success_count",
    "failure_count",
    "supersedes",
    "expires_at",
    "metadata",
];
/// Required top-level keys.
pub const REQUIRED_KEYS: [&str; 6] = ["schema", "slug", "title", "trigger", "outcome", "evidence"];
/// Keys allowed in `trigger`.
pub const TRIGGER_KEYS: [&str; 4] = ["description", "tags", "targets", "metadata"];
/// Keys allowed in a target.
pub const TARGET_KEYS: [&str; 3] = ["operator", "role", "skill"];
/// Keys allowed in an evidence item.
pub const EVIDENCE_KEYS: [&str; 3] = ["kind", "ref", "note"];

/// A length limit of a text field, in characters (Unicode scalar values, as JSON Schema's
/// `minLength` / `maxLength` count them), after YAML folds multi-line values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chars {
    /// Least length.
    pub min: usize,
    /// Greatest length.
    pub max: usize,
}

/// The pattern of a slug (`slug`, each `supersedes` item); its length is [`SLUG_CHARS`].
pub const SLUG_PATTERN: &str = "^[a-z][a-z0-9-]*[a-z0-9]$";
/// The length of `slug`.
pub const SLUG_CHARS: Chars = Chars { min: 2, max: 80 };
/// The length of `title`.
pub const TITLE_CHARS: Chars = Chars { min: 1, max: 200 };
/// The length of `trigger.description`.
pub const DESCRIPTION_CHARS: Chars = Chars { min: 1, max: 1000 };
/// The length of an evidence `ref`.
pub const REF_CHARS: Chars = Chars { min: 1, max: 256 };
/// The length of an evidence `note`.
pub const NOTE_CHARS: Chars = Chars { min: 0, max: 500 };
/// The pattern of a `trigger.tags` item.
pub const TAG_PATTERN: &str = "^[a-z][a-z0-9-]*$";
/// The most items `trigger.tags` may have.
pub const MAX_TAGS: usize = 12;
/// The range of `confidence`.
pub const CONFIDENCE_RANGE: std::ops::RangeInclusive<f64> = 0.0..=1.0;
/// `confidence` when a lesson does not give one.
pub const DEFAULT_CONFIDENCE: f64 = 0.5;

/// Why `s` is not a valid slug (`^[a-z][a-z0-9-]*[a-z0-9]$`, 2 to 80 characters), e.g.
/// "uppercase letter `A` at column 3", or `None` when it is one. Columns count characters from 1.
pub fn slug_problem(s: &str) -> Option<String> {
    let Some(first) = s.chars().next() else {
        return Some("it is empty".into());
    };
    for (i, c) in s.chars().enumerate() {
        let column = i + 1;
        let what = match c {
            'a'..='z' | '0'..='9' | '-' => continue,
            'A'..='Z' => format!("uppercase letter `{c}`"),
            '_' => "underscore".into(),
            ' ' => "space".into(),
            _ => format!("`{}`", c.escape_debug()),
        };
        return Some(format!("{what} at column {column}"));
    }
    if !first.is_ascii_lowercase() {
        let what = if first == '-' { "`-`" } else { "a digit" };
        return Some(format!("starts with {what}, not a letter"));
    }
    if s.ends_with('-') {
        return Some("ends with `-`".into());
    }
    match s.chars().count() {
        n if n < SLUG_CHARS.min => Some(format!(
            "too short: {n} character, at least {}",
            SLUG_CHARS.min
        )),
        n if n > SLUG_CHARS.max => Some(format!(
            "too long: {n} characters, at most {}",
            SLUG_CHARS.max
        )),
        _ => None,
    }
}

/// A value and the byte span of the YAML node it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Byte range of the value's node in the file.
    pub span: Range<usize>,
}

impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

/// Whether the lesson came from a success, a failure, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The source run succeeded.
    Success,
    /// The source run failed.
    Failure,
    /// The lesson is conditional across runs.
    Mixed,
}

impl Outcome {
    /// Every outcome, in schema order.
    pub const ALL: [Outcome; 3] = [Outcome::Success, Outcome::Failure, Outcome::Mixed];

    /// The schema's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Mixed => "mixed",
        }
    }

    /// Parse the schema's spelling.
    pub fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an evidence reference points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvidenceKind {
    /// A completed run.
    Run,
    /// A conversation.
    Conversation,
    /// A work item.
    WorkItem,
    /// An AIP-7 governance record (in the JSON schema, not in the spec text).
    Audit,
    /// A wiki page.
    WikiPage,
}

impl EvidenceKind {
    /// Every kind, in schema order.
    pub const ALL: [EvidenceKind; 5] = [
        EvidenceKind::Run,
        EvidenceKind::Conversation,
        EvidenceKind::WorkItem,
        EvidenceKind::Audit,
        EvidenceKind::WikiPage,
    ];

    /// The schema's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceKind::Run => "run",
            EvidenceKind::Conversation => "conversation",
            EvidenceKind::WorkItem => "work-item",
            EvidenceKind::Audit => "audit",
            EvidenceKind::WikiPage => "wiki-page",
        }
    }

    /// Parse the schema's spelling.
    pub fn parse(s: &str) -> Option<EvidenceKind> {
        EvidenceKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// When a lesson applies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trigger {
    /// Plain-text description.
    pub description: Spanned<String>,
    /// Retrieval keywords.
    pub tags: Vec<Spanned<String>>,
    /// Operator / role / skill globs; empty means anyone.
    pub targets: Vec<Target>,
}

/// One target: every glob given must match (a target with several keys is an AND).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// Operator glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<Spanned<String>>,
    /// Role glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Spanned<String>>,
    /// Skill glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<Spanned<String>>,
    /// Byte range of the target's mapping.
    #[serde(skip)]
    pub span: Range<usize>,
}

impl Target {
    /// The globs given, as (role name, glob).
    pub fn globs(&self) -> impl Iterator<Item = (&'static str, &Spanned<String>)> {
        [
            ("operator", self.operator.as_ref()),
            ("role", self.role.as_ref()),
            ("skill", self.skill.as_ref()),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
    }
}

/// A provenance pointer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// What `ref` points to.
    pub kind: Spanned<EvidenceKind>,
    /// Opaque id or path.
    #[serde(rename = "ref")]
    pub reference: Spanned<String>,
    /// One-line factual note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<Spanned<String>>,
    /// Byte range of the item's mapping.
    #[serde(skip)]
    pub span: Range<usize>,
}

/// A soft TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// The instant.
    pub at: jiff::Timestamp,
    /// Written as a date without time or offset (read as midnight UTC).
    pub date_only: bool,
}

impl Serialize for Expiry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.at)
    }
}

impl Expiry {
    /// Parse RFC 3339 (`2026-10-01T00:00:00Z`), or a bare date read as midnight UTC.
    /// A date-time without an offset is refused: its instant is ambiguous.
    pub fn parse(s: &str) -> Option<Expiry> {
        if let Ok(at) = s.parse::<jiff::Timestamp>() {
            return Some(Expiry {
                at,
                date_only: false,
            });
        }
        let date: jiff::civil::Date = s.parse().ok()?;
        if s.len() != 10 {
            return None;
        }
        let at = date.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
        Some(Expiry {
            at,
            date_only: true,
        })
    }
}

/// `success_count` and `failure_count`: in a lesson, a cache of its ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Times the lesson worked when applied.
    pub success_count: u64,
    /// Times its claim was contradicted.
    pub failure_count: u64,
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.success_count, self.failure_count)
    }
}

/// One AIP-11 lesson.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lesson {
    /// `learning/v1` or a legacy alias.
    pub schema: Spanned<String>,
    /// Machine id, also the file name.
    pub slug: Spanned<String>,
    /// One-sentence imperative title.
    pub title: Spanned<String>,
    /// When the lesson applies.
    pub trigger: Trigger,
    /// Source outcome.
    pub outcome: Spanned<Outcome>,
    /// Provenance.
    pub evidence: Vec<Evidence>,
    /// Confidence in [0, 1]; the schema default is 0.5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Spanned<f64>>,
    /// Times the lesson worked when applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_count: Option<Spanned<u64>>,
    /// Times its claim was contradicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_count: Option<Spanned<u64>>,
    /// Slugs this lesson replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<Spanned<String>>,
    /// Soft TTL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Spanned<Expiry>>,
    /// Slugs of lessons whose advice this one contradicts, as `lesson distill` records them in
    /// `metadata.lesson.conflicts_with`: retrieval marks the pair when both are returned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<Spanned<String>>,
    /// `metadata.lesson.pinned: true`: the retention policy (`lesson archive --policy`) never
    /// archives it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// `metadata.lesson.quarantine: [CODE, ...]`: admitted by a writer (`lesson add`, `lesson
    /// distill`, the MCP `propose`) although it tripped the injection-carrier rules named;
    /// never served until `lesson review --approve` removes the key. `Some` whenever the key
    /// is there, whatever its value (the codes a list of strings gives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Vec<String>>,
}

impl Lesson {
    /// Let go of what only the file rules read (the trigger's description, tags and targets,
    /// the evidence, the schema id, `conflicts_with`), keeping what the bank rules and the
    /// index read: slug, title, outcome, confidence, counts, `supersedes`, `expires_at`. For a
    /// clean file in a lint report, so that a large bank is not held whole.
    pub fn keep_bank_fields(&mut self) {
        self.schema.value = String::new();
        self.trigger.description.value = String::new();
        self.trigger.tags = Vec::new();
        self.trigger.targets = Vec::new();
        self.evidence = Vec::new();
        self.conflicts_with = Vec::new();
    }

    /// Build the model from a frontmatter tree. `None` when a required field is missing or of
    /// the wrong type, or an enum value is unknown (the lint rules say which).
    pub fn from_yaml(yaml: &Yaml) -> Option<Lesson> {
        let root = yaml.root?;
        yaml.map(root)?;
        let trigger_node = yaml.get(root, "trigger")?.1;
        yaml.map(trigger_node)?;
        let outcome = string(yaml, root, "outcome")?;
        let outcome = Spanned {
            value: Outcome::parse(&outcome.value)?,
            span: outcome.span,
        };
        let evidence_node = yaml.get(root, "evidence")?.1;
        let evidence = yaml
            .seq(evidence_node)?
            .iter()
            .map(|&item| evidence(yaml, item))
            .collect::<Option<Vec<_>>>()?;
        Some(Lesson {
            schema: string(yaml, root, "schema")?,
            slug: string(yaml, root, "slug")?,
            title: string(yaml, root, "title")?,
            trigger: Trigger {
                description: string(yaml, trigger_node, "description")?,
                tags: strings(yaml, trigger_node, "tags"),
                targets: targets(yaml, trigger_node),
            },
            outcome,
            evidence,
            confidence: number(yaml, root, "confidence"),
            success_count: count(yaml, root, "success_count"),
            failure_count: count(yaml, root, "failure_count"),
            supersedes: strings(yaml, root, "supersedes"),
            expires_at: string(yaml, root, "expires_at").and_then(|s| {
                Some(Spanned {
                    value: Expiry::parse(&s.value)?,
                    span: s.span,
                })
            }),
            conflicts_with: ours(yaml, root)
                .map(|ours| strings(yaml, ours, "conflicts_with"))
                .unwrap_or_default(),
            pinned: ours(yaml, root)
                .and_then(|ours| yaml.get(ours, "pinned"))
                .is_some_and(|(_, v)| matches!(yaml.scalar(v), Some(Scalar::Bool(true)))),
            quarantine: ours(yaml, root)
                .filter(|&ours| yaml.get(ours, QUARANTINE_KEY).is_some())
                .map(|ours| {
                    strings(yaml, ours, QUARANTINE_KEY)
                        .into_iter()
                        .map(|s| s.value)
                        .collect()
                }),
        })
    }

    /// Confidence, or the schema default 0.5.
    pub fn confidence(&self) -> f64 {
        self.confidence
            .as_ref()
            .map_or(DEFAULT_CONFIDENCE, |c| c.value)
    }

    /// `success_count`, or 0.
    pub fn successes(&self) -> u64 {
        self.success_count.as_ref().map_or(0, |c| c.value)
    }

    /// `failure_count`, or 0.
    pub fn failures(&self) -> u64 {
        self.failure_count.as_ref().map_or(0, |c| c.value)
    }

    /// Its counts as written (0 when absent).
    pub fn counts(&self) -> Counts {
        Counts {
            success_count: self.successes(),
            failure_count: self.failures(),
        }
    }

    /// Whether `expires_at` is at or before `now`.
    pub fn is_expired(&self, now: jiff::Timestamp) -> bool {
        self.expires_at.as_ref().is_some_and(|e| e.value.at <= now)
    }
}

/// A string-typed scalar value (quoted, or plain that resolves to a string).
pub fn string(yaml: &Yaml, map: NodeId, key: &str) -> Option<Spanned<String>> {
    let (_, value) = yaml.get(map, key)?;
    match yaml.scalar(value)? {
        Scalar::Str(s) => Some(Spanned {
            value: s.to_string(),
            span: yaml.node(value).span.clone(),
        }),
        _ => None,
    }
}

/// The key under `metadata.lesson` that holds a lesson in quarantine.
pub const QUARANTINE_KEY: &str = "quarantine";

/// `metadata.lesson`, the bank's own keys.
fn ours(yaml: &Yaml, root: NodeId) -> Option<NodeId> {
    let (_, metadata) = yaml.get(root, "metadata")?;
    yaml.get(metadata, "lesson").map(|(_, ours)| ours)
}

fn strings(yaml: &Yaml, map: NodeId, key: &str) -> Vec<Spanned<String>> {
    let Some((_, node)) = yaml.get(map, key) else {
        return Vec::new();
    };
    yaml.seq(node)
        .unwrap_or_default()
        .iter()
        .filter_map(|&item| match yaml.scalar(item)? {
            Scalar::Str(s) => Some(Spanned {
                value: s.to_string(),
                span: yaml.node(item).span.clone(),
            }),
            _ => None,
        })
        .collect()
}

fn number(yaml: &Yaml, map: NodeId, key: &str) -> Option<Spanned<f64>> {
    let (_, node) = yaml.get(map, key)?;
    let value = match yaml.scalar(node)? {
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
        _ => return None,
    };
    Some(Spanned {
        value,
        span: yaml.node(node).span.clone(),
    })
}

fn count(yaml: &Yaml, map: NodeId, key: &str) -> Option<Spanned<u64>> {
    let (_, node) = yaml.get(map, key)?;
    match yaml.scalar(node)? {
        Scalar::Int(i) if i >= 0 => Some(Spanned {
            value: i as u64,
            span: yaml.node(node).span.clone(),
        }),
        _ => None,
    }
}

fn targets(yaml: &Yaml, trigger: NodeId) -> Vec<Target> {
    let Some((_, node)) = yaml.get(trigger, "targets") else {
        return Vec::new();
    };
    yaml.seq(node)
        .unwrap_or_default()
        .iter()
        .filter(|&&item| yaml.map(item).is_some())
        .map(|&item| Target {
            operator: string(yaml, item, "operator"),
            role: string(yaml, item, "role"),
            skill: string(yaml, item, "skill"),
            span: yaml.node(item).span.clone(),
        })
        .collect()
}

fn evidence(yaml: &Yaml, item: NodeId) -> Option<Evidence> {
    yaml.map(item)?;
    let kind = string(yaml, item, "kind")?;
    Some(Evidence {
        kind: Spanned {
            value: EvidenceKind::parse(&kind.value)?,
            span: kind.span,
        },
        reference: string(yaml, item, "ref")?,
        note: string(yaml, item, "note"),
        span: yaml.node(item).span.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_problems() {
        assert_eq!(slug_problem("cite-source-url"), None);
        assert_eq!(slug_problem("a1"), None);
        assert_eq!(
            slug_problem("cite-Source").as_deref(),
            Some("uppercase letter `S` at column 6")
        );
        assert_eq!(slug_problem("../x").as_deref(), Some("`.` at column 1"));
        assert_eq!(
            slug_problem("a_b").as_deref(),
            Some("underscore at column 2")
        );
        assert_eq!(
            slug_problem("1ab").as_deref(),
            Some("starts with a digit, not a letter")
        );
        assert_eq!(slug_problem("ab-").as_deref(), Some("ends with `-`"));
        assert_eq!(
            slug_problem("a").as_deref(),
            Some("too short: 1 character, at least 2")
        );
        assert_eq!(slug_problem("").as_deref(), Some("it is empty"));
        assert_eq!(slug_problem(&"a".repeat(80)), None);
        assert_eq!(
            slug_problem(&"a".repeat(81)).as_deref(),
            Some("too long: 81 characters, at most 80")
        );
        assert_eq!(
            slug_problem("caf\u{e9}").as_deref(),
            Some("`é` at column 4")
        );
    }

    #[test]
    fn expiry_forms() {
        assert!(!Expiry::parse("2026-10-01T00:00:00Z").unwrap().date_only);
        assert!(
            !Expiry::parse("2026-10-01T02:00:00+02:00")
                .unwrap()
                .date_only
        );
        let d = Expiry::parse("2026-10-01").unwrap();
        assert!(d.date_only);
        assert_eq!(d.at, "2026-10-01T00:00:00Z".parse().unwrap());
        assert_eq!(Expiry::parse("2026-10-01T00:00:00"), None);
        assert_eq!(Expiry::parse("next tuesday"), None);
    }

    #[test]
    fn lesson_from_minimal_yaml() {
        let text = "schema: learning/v1\nslug: ab\ntitle: T\ntrigger:\n  description: d\n  tags: [x]\n  targets:\n    - role: r*\noutcome: failure\nevidence:\n  - kind: audit\n    ref: a1\nsuccess_count: 0\nfailure_count: 1\n";
        let (y, errs) = Yaml::parse(text, 0);
        assert!(errs.is_empty());
        let l = Lesson::from_yaml(&y.unwrap()).unwrap();
        assert_eq!(l.outcome.value, Outcome::Failure);
        assert_eq!(l.evidence[0].kind.value, EvidenceKind::Audit);
        assert_eq!(l.trigger.targets[0].role.as_ref().unwrap().value, "r*");
        assert_eq!(l.failures(), 1);
        assert_eq!(l.confidence(), 0.5);
    }
}
