//! Scaffolding: a new lesson from `templates/lesson.md.j2` (`lesson new`) and a new bank
//! (`lesson init`), plus the YAML quoting both rely on.
//!
//! A new lesson is rendered, parsed back and linted before anything is written: what the
//! template produced must read back as exactly the lesson that was asked for.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bank::{Bank, BankError, INDEX_FILE};
use crate::config::CONFIG_FILE;
use crate::diagnostic::{Diagnostic, Severity};
use crate::document::Document;
use crate::edit::{EditError, STATE_DIR, TEMP_PREFIX};
use crate::index_md::IndexError;
use crate::lesson::{EvidenceKind, Lesson, Outcome, SCHEMA, TARGET_KEYS};
use crate::lint::{self, Selection};
use crate::source::Source;
use crate::template::{Template, TemplateError};
use crate::yaml::{resolve_plain, Scalar};

/// The lesson template's file name (built in, or in the bank's `templates/`).
pub const TEMPLATE: &str = "lesson.md.j2";
/// The built-in lesson template.
pub const BUILTIN_TEMPLATE: &str = include_str!("../templates/lesson.md.j2");
/// The `.gitignore` of a new bank.
pub const GITIGNORE: &str = ".gitignore";
/// The `.gitattributes` of a new bank.
pub const GITATTRIBUTES: &str = ".gitattributes";
/// Ledgers are append-only: git merges them by keeping the lines of both sides.
pub const INIT_GITATTRIBUTES: &str = "_log/*.jsonl merge=union\n";

/// `lesson.toml` of a new bank: every setting commented out at its default.
pub const INIT_CONFIG: &str = r#"# lesson.toml: the configuration of this lesson bank.
# Every setting is optional; a commented line shows the default.

[lint]
# Files larger than this many bytes are reported, not read.
# size-limit = 1048576
# Globs (relative to the bank) of markdown files that are not lessons.
# exclude = ["README.md"]

[lint.rules]
# Rule levels by code or name: "error", "warning", "info" or "off"; `lesson rule` lists the rules.
# index-stale = "error"

[review]
# The mixed band (`lesson review`, rule L003): both counts at least mixed-min, and the smaller
# at least mixed-ratio of the larger.
# mixed-min = 3
# mixed-ratio = 0.5
# A lesson with no recorded outcome this many days after it was created is listed for review.
# unapplied-days = 90
"#;

/// Scaffolding failed or was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The slug cannot name a lesson file.
    #[error("{0}")]
    Slug(String),
    /// A title must fit on one line (it is also the body's `# heading`).
    #[error("the title has a line break; a title is one sentence on one line")]
    MultilineTitle,
    /// A lesson with that slug, or a file at that path, exists.
    #[error("lesson `{slug}` already exists: {path}")]
    Exists {
        /// The slug asked for.
        slug: String,
        /// The file in the way.
        path: String,
    },
    /// `lesson init` would overwrite files.
    #[error("refusing to overwrite {}: {dir} is already set up as a bank", .files.join(", "))]
    InitExists {
        /// The bank directory.
        dir: String,
        /// The existing files.
        files: Vec<String>,
    },
    /// The lesson template produced text that does not read back as the lesson asked for.
    #[error("{origin} does not write back the lesson it was given: {problem}; fix the template, or delete it to use the built-in one")]
    TemplateMismatch {
        /// The template file.
        origin: String,
        /// What differs.
        problem: String,
    },
    /// A template could not be read or rendered.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// `_index.md` could not be rendered.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The bank could not be loaded.
    #[error(transparent)]
    Bank(#[from] BankError),
    /// A write failed.
    #[error(transparent)]
    Edit(#[from] EditError),
}

// ---------------------------------------------------------------------------------------------
// YAML scalars

/// A string as a YAML scalar in block context: plain when that is unambiguous for YAML 1.2 and
/// 1.1 readers alike, else single-quoted, else double-quoted with escapes.
pub fn yaml_scalar(s: &str) -> String {
    if plain_is_safe(s, false) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// A string as a YAML scalar inside a flow collection (`[a, b]`).
pub fn yaml_flow_scalar(s: &str) -> String {
    if plain_is_safe(s, true) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// Words YAML 1.1 readers (PyYAML and friends) take as booleans or null.
const YAML11_WORDS: [&str; 11] = [
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nil", "none",
];

fn plain_is_safe(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let last = s.chars().next_back().unwrap_or(first);
    // a letter first rules out every indicator (`-?:,[]{}#&*!|>'"%@` and the backtick)
    first.is_alphabetic()
        && !last.is_whitespace()
        && last != ':'
        && !s.contains(": ")
        && !s.contains(" #")
        && s.chars().all(is_plain_char)
        && !(flow && s.contains([',', '[', ']', '{', '}', ':', '#']))
        // saphyr refuses `[a -]`: a plain scalar ending in ` -` before a flow indicator
        && !(flow && s.ends_with(" -"))
        && matches!(resolve_plain(s), Scalar::Str(_))
        && !YAML11_WORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// Printable, not a line break or tab, not a BOM.
fn is_plain_char(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn quoted(s: &str) -> String {
    if s.chars().all(is_plain_char) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        double_quoted(s)
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if is_plain_char(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Slugs

/// Why `s` cannot be a new lesson's slug, phrased for `lesson new`. The rule itself is the
/// schema's ([`crate::lesson::slug_problem`]).
fn slug_problem(s: &str) -> Option<String> {
    let problem = crate::lesson::slug_problem(s)?;
    let shown = s.escape_debug();
    if s.contains(['/', '\\']) || s.starts_with('.') {
        return Some(format!(
            "slug `{shown}` is not a file name: a slug names one file in the bank, so it has no `/`, `\\` or leading `.`"
        ));
    }
    let lower = s.to_lowercase();
    let hint = if lower != s && crate::lesson::slug_problem(&lower).is_none() {
        format!(" (try `{lower}`)")
    } else {
        String::new()
    };
    Some(format!("invalid slug `{shown}`: {problem}{hint}"))
}

// ---------------------------------------------------------------------------------------------
// lesson new

/// What `lesson new` was asked to write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewLesson {
    /// The slug, also the file name.
    pub slug: String,
    /// One-sentence imperative title.
    pub title: String,
    /// `trigger.description`.
    pub trigger: String,
    /// `trigger.tags`.
    pub tags: Vec<String>,
    /// `trigger.targets`, one key each.
    pub targets: Vec<NewTarget>,
    /// `outcome`.
    pub outcome: Outcome,
    /// `evidence`.
    pub evidence: Vec<NewEvidence>,
    /// `confidence`.
    pub confidence: f64,
}

/// `--target role=GLOB`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewTarget {
    /// `operator`, `role` or `skill`.
    pub key: &'static str,
    /// The glob.
    pub glob: String,
}

/// `--evidence KIND:REF[:NOTE]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewEvidence {
    /// What `ref` points to.
    pub kind: EvidenceKind,
    /// The opaque id.
    #[serde(rename = "ref")]
    pub reference: String,
    /// A one-line note.
    pub note: Option<String>,
}

/// Parse `operator=GLOB`, `role=GLOB` or `skill=GLOB`.
pub fn parse_target(s: &str) -> Result<NewTarget, String> {
    let Some((key, glob)) = s.split_once('=') else {
        return Err("expected operator=GLOB, role=GLOB or skill=GLOB".into());
    };
    let Some(key) = TARGET_KEYS.into_iter().find(|k| *k == key) else {
        return Err(format!(
            "`{key}` is not a target key; use operator, role or skill"
        ));
    };
    if glob.is_empty() {
        return Err(format!("{key}= needs a glob, e.g. {key}=reviewer"));
    }
    globset::Glob::new(glob).map_err(|e| format!("invalid glob `{glob}`: {}", e.kind()))?;
    Ok(NewTarget {
        key,
        glob: glob.to_string(),
    })
}

/// Parse `KIND:REF[:NOTE]`. A `://` after the kind belongs to the ref (`wiki-page:https://…`).
pub fn parse_evidence(s: &str) -> Result<NewEvidence, String> {
    let kinds = || {
        EvidenceKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((kind, rest)) = s.split_once(':') else {
        return Err(format!("expected KIND:REF[:NOTE], KIND one of {}", kinds()));
    };
    let Some(kind) = EvidenceKind::parse(kind) else {
        return Err(format!(
            "`{kind}` is not an evidence kind; use one of {}",
            kinds()
        ));
    };
    let mut split = None;
    let mut from = 0;
    while let Some(i) = rest[from..].find(':') {
        let at = from + i;
        if rest[at + 1..].starts_with("//") {
            from = at + 3;
            continue;
        }
        split = Some(at);
        break;
    }
    let (reference, note) = match split {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    if reference.trim().is_empty() {
        return Err(
            "the evidence ref is empty; give the id of the run, conversation or work item".into(),
        );
    }
    Ok(NewEvidence {
        kind,
        reference: reference.to_string(),
        note: note.filter(|n| !n.is_empty()).map(str::to_string),
    })
}

#[derive(Serialize)]
struct LessonContext<'a> {
    schema: &'static str,
    #[serde(flatten)]
    lesson: &'a NewLesson,
    success_count: u64,
    failure_count: u64,
}

/// A new lesson, rendered and checked against the bank, not yet written.
#[derive(Debug)]
pub struct Draft {
    /// Where it goes.
    pub path: PathBuf,
    /// The file's text.
    pub text: String,
    /// The bank with the draft added (for rendering findings and the index).
    pub bank: Bank,
    /// Findings on the draft, minus `index-stale` and sub-error findings in the placeholder body.
    pub findings: Vec<Diagnostic>,
}

impl Draft {
    /// Whether a finding blocks writing.
    pub fn refused(&self) -> bool {
        self.findings.iter().any(|d| d.severity == Severity::Error)
    }
}

/// The file a slug is written to.
pub fn lesson_path(root: &Path, slug: &str) -> PathBuf {
    root.join(format!("{slug}.md"))
}

/// A file of the bank that already uses `slug`: a lesson with that slug, a file with that
/// name anywhere in the bank, or one in `_archive/`.
pub fn existing(bank: &Bank, slug: &str) -> Option<PathBuf> {
    if let Some((doc, _)) = bank.by_slug().get(slug) {
        return Some(doc.source.path.clone());
    }
    if let Some(doc) = bank.documents.iter().find(|d| d.stem() == Some(slug)) {
        return Some(doc.source.path.clone());
    }
    [
        lesson_path(&bank.root, slug),
        lesson_path(&bank.root.join("_archive"), slug),
        // a slug with a ledger was used before: its history is not a new lesson's
        crate::ledger::path(&bank.root, slug),
    ]
    .into_iter()
    .find(|p| p.symlink_metadata().is_ok())
}

/// Render a new lesson with the bank's template and check it: the slug, that nothing uses it
/// yet, that the text reads back as the lesson asked for, and the lint rules.
pub fn draft(mut bank: Bank, new: &NewLesson) -> Result<Draft, ScaffoldError> {
    if let Some(problem) = slug_problem(&new.slug) {
        return Err(ScaffoldError::Slug(problem));
    }
    if new.title.contains(['\n', '\r']) {
        return Err(ScaffoldError::MultilineTitle);
    }
    if let Some(path) = existing(&bank, &new.slug) {
        return Err(ScaffoldError::Exists {
            slug: new.slug.clone(),
            path: path.display().to_string(),
        });
    }
    let template = Template::load(&bank.root, TEMPLATE, BUILTIN_TEMPLATE)?;
    let text = template.render(LessonContext {
        schema: SCHEMA,
        lesson: new,
        success_count: 0,
        failure_count: 0,
    })?;
    let path = lesson_path(&bank.root, &new.slug);
    let doc = Document::parse(Source::new(path.clone(), text.clone()), None);
    let body_start = doc.body.as_ref().map_or(usize::MAX, |b| b.start);
    let read_back = doc.lesson.clone();
    let at = bank.documents.partition_point(|d| d.source.path < path);
    bank.documents.insert(at, doc);

    let selection = Selection {
        paths: vec![path.clone()],
        rules: Vec::new(),
    };
    let mut findings = lint::lint(&bank, &selection);
    findings.retain(|d| {
        d.code != crate::lint::rules::index_stale::RULE.code
            && !(d.range.start >= body_start && d.severity < Severity::Error)
    });
    let draft = Draft {
        path,
        text,
        bank,
        findings,
    };
    if draft.refused() {
        return Ok(draft);
    }
    let origin = template.path.as_ref().map_or_else(
        || format!("built-in {TEMPLATE}"),
        |p| p.display().to_string(),
    );
    match read_back {
        None => Err(ScaffoldError::TemplateMismatch {
            origin,
            problem: "the frontmatter is not a complete lesson".into(),
        }),
        Some(lesson) => match mismatch(&lesson, new) {
            Some(problem) => Err(ScaffoldError::TemplateMismatch { origin, problem }),
            None => Ok(draft),
        },
    }
}

/// The first field that did not survive the round trip through the template and the parser.
fn mismatch(lesson: &Lesson, new: &NewLesson) -> Option<String> {
    let differs = |field: &str| Some(format!("`{field}` differs"));
    if lesson.slug.value != new.slug {
        return differs("slug");
    }
    if lesson.title.value != new.title {
        return differs("title");
    }
    if lesson.trigger.description.value != new.trigger {
        return differs("trigger.description");
    }
    let tags: Vec<&str> = lesson
        .trigger
        .tags
        .iter()
        .map(|t| t.value.as_str())
        .collect();
    if tags != new.tags {
        return differs("trigger.tags");
    }
    let targets: Vec<(&str, &str)> = lesson
        .trigger
        .targets
        .iter()
        .flat_map(|t| t.globs().map(|(k, v)| (k, v.value.as_str())))
        .collect();
    let wanted: Vec<(&str, &str)> = new
        .targets
        .iter()
        .map(|t| (t.key, t.glob.as_str()))
        .collect();
    if targets != wanted {
        return differs("trigger.targets");
    }
    if lesson.outcome.value != new.outcome {
        return differs("outcome");
    }
    let evidence: Vec<(EvidenceKind, &str, Option<&str>)> = lesson
        .evidence
        .iter()
        .map(|e| {
            (
                e.kind.value,
                e.reference.value.as_str(),
                e.note.as_ref().map(|n| n.value.as_str()),
            )
        })
        .collect();
    let wanted: Vec<(EvidenceKind, &str, Option<&str>)> = new
        .evidence
        .iter()
        .map(|e| (e.kind, e.reference.as_str(), e.note.as_deref()))
        .collect();
    if evidence != wanted {
        return differs("evidence");
    }
    if (lesson.confidence() - new.confidence).abs() > 1e-9 {
        return differs("confidence");
    }
    None
}

// ---------------------------------------------------------------------------------------------
// lesson init

/// The files `lesson init` creates, in the order it writes them.
pub fn init_files(dir: &Path) -> [PathBuf; 4] {
    [
        dir.join(CONFIG_FILE),
        dir.join(GITIGNORE),
        dir.join(GITATTRIBUTES),
        dir.join(INDEX_FILE),
    ]
}

/// Create a bank at `dir`: `lesson.toml`, `.gitignore`, `.gitattributes`, `_index.md`. Refuses
/// (writing nothing) when any of them exists. Returns the files written.
pub fn init(dir: &Path) -> Result<Vec<PathBuf>, ScaffoldError> {
    let files = init_files(dir);
    let refuse = |files: &[PathBuf]| {
        let existing: Vec<String> = files
            .iter()
            .filter(|p| p.symlink_metadata().is_ok())
            .map(|p| p.display().to_string())
            .collect();
        if existing.is_empty() {
            Ok(())
        } else {
            Err(ScaffoldError::InitExists {
                dir: dir.display().to_string(),
                files: existing,
            })
        }
    };
    refuse(&files)?;
    std::fs::create_dir_all(dir).map_err(|source| EditError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    crate::edit::BankLock::open(dir)?.with(|| {
        // again under the lock: another `lesson init` may have won the race
        refuse(&files)?;
        let [config, gitignore, gitattributes, index] = &files;
        crate::edit::write_atomic(dir, config, INIT_CONFIG.as_bytes())?;
        // a writer killed before its rename leaves a temp file until the next writer's lock
        let ignored = format!("{STATE_DIR}/\n{TEMP_PREFIX}*\n");
        crate::edit::write_atomic(dir, gitignore, ignored.as_bytes())?;
        crate::edit::write_atomic(dir, gitattributes, INIT_GITATTRIBUTES.as_bytes())?;
        let bank = Bank::load(dir)?;
        let text = crate::index_md::render(&bank)?;
        crate::edit::write_atomic(dir, index, text.as_bytes())?;
        Ok(files.to_vec())
    })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Yaml;
    use proptest::prelude::*;

    fn read_back(scalar: &str) -> Option<String> {
        let text = format!("k: {scalar}\n");
        let (yaml, errors) = Yaml::parse(&text, 0);
        let yaml = yaml?;
        if !errors.is_empty() {
            return None;
        }
        crate::lesson::string(&yaml, yaml.root?, "k").map(|s| s.value)
    }

    fn read_back_flow(scalar: &str) -> Option<String> {
        let text = format!("k: [{scalar}, x]\n");
        let (yaml, _) = Yaml::parse(&text, 0);
        let yaml = yaml?;
        let (_, seq) = yaml.get(yaml.root?, "k")?;
        let items = yaml.seq(seq)?;
        if items.len() != 2 {
            return None;
        }
        match yaml.scalar(items[0])? {
            Scalar::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }

    #[test]
    fn scalars_are_plain_when_unambiguous() {
        assert_eq!(
            yaml_scalar("Write files atomically"),
            "Write files atomically"
        );
        assert_eq!(yaml_scalar("Use a, b and c"), "Use a, b and c");
        assert_eq!(yaml_scalar("Note: this"), "'Note: this'");
        assert_eq!(yaml_scalar("*bold* start"), "'*bold* start'");
        assert_eq!(yaml_scalar("it's"), "it's");
        assert_eq!(yaml_scalar("'quoted'"), "'''quoted'''");
        assert_eq!(yaml_scalar("yes"), "'yes'");
        assert_eq!(yaml_scalar("0.5"), "'0.5'");
        assert_eq!(yaml_scalar("a #b"), "'a #b'");
        assert_eq!(yaml_scalar("two\nlines"), "\"two\\nlines\"");
        assert_eq!(yaml_scalar(""), "''");
        assert_eq!(yaml_flow_scalar("a,b"), "'a,b'");
        assert_eq!(yaml_flow_scalar("rust"), "rust");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_string_round_trips(s in any::<String>()) {
            prop_assert_eq!(read_back(&yaml_scalar(&s)), Some(s.clone()));
            prop_assert_eq!(read_back_flow(&yaml_flow_scalar(&s)), Some(s));
        }

        #[test]
        fn yaml_ish_strings_round_trip(s in r#"[ a-zA-Z0-9:#'"\-?,\[\]{}&*!|>%@`\\.\t\n]{0,12}"#) {
            prop_assert_eq!(read_back(&yaml_scalar(&s)), Some(s.clone()));
            prop_assert_eq!(read_back_flow(&yaml_flow_scalar(&s)), Some(s));
        }
    }

    #[test]
    fn hostile_slugs_are_refused_with_a_reason() {
        for (slug, says) in [
            ("../x", "not a file name"),
            ("x/y", "not a file name"),
            (".hidden", "not a file name"),
            ("A", "uppercase"),
            ("Fix-It", "try `fix-it`"),
            ("a", "too short"),
            ("a_b", "underscore at column 2"),
            ("1a", "starts with a digit"),
            ("ab-", "ends with `-`"),
            ("", "empty"),
        ] {
            let problem = slug_problem(slug).unwrap_or_default();
            assert!(problem.contains(says), "{slug}: {problem}");
            assert!(!problem.ends_with('.'), "{problem}");
        }
        assert_eq!(slug_problem("verify-page-id"), None);
        assert!(slug_problem(&"a".repeat(81)).is_some());
    }

    #[test]
    fn evidence_and_targets_parse() {
        let e = parse_evidence("run:r_1:it broke: badly").unwrap();
        assert_eq!(
            (e.kind, e.reference.as_str(), e.note.as_deref()),
            (EvidenceKind::Run, "r_1", Some("it broke: badly"))
        );
        let e = parse_evidence("wiki-page:https://x.test/a:b").unwrap();
        assert_eq!(
            (e.reference.as_str(), e.note.as_deref()),
            ("https://x.test/a", Some("b"))
        );
        assert!(parse_evidence("log:r_1")
            .unwrap_err()
            .contains("not an evidence kind"));
        assert!(parse_evidence("run:").is_err());
        let t = parse_target("skill=rust-*").unwrap();
        assert_eq!((t.key, t.glob.as_str()), ("skill", "rust-*"));
        assert!(parse_target("team=x")
            .unwrap_err()
            .contains("not a target key"));
        assert!(parse_target("role=[").is_err());
    }

    #[test]
    fn init_config_shows_the_defaults() {
        let parsed = crate::config::Config::parse(INIT_CONFIG, "lesson.toml").unwrap();
        assert_eq!(parsed, crate::config::Config::default());
        let uncommented: String = INIT_CONFIG
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if rest.contains(" = ") => rest,
                _ => l,
            })
            .map(|l| format!("{l}\n"))
            .collect();
        let parsed = crate::config::Config::parse(&uncommented, "lesson.toml").unwrap();
        let mut expected = crate::config::Config::default();
        expected
            .lint
            .rules
            .insert("index-stale".into(), crate::config::Level::Error);
        assert_eq!(parsed, expected);
    }
}
