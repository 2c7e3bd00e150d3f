//! What retrieval reads of one file: its stat and hash (to notice changes), and for a lesson
//! the fields retrieval ranks, gates and renders with. A file is parsed into a record when it
//! is indexed, and parsed again only when it is a hit (for what the hit shows).

use std::path::Path;

use crate::config::Config;
use crate::document::Document;
use crate::lesson::{Lesson, Outcome};
use crate::lint::ErrorRules;
use crate::source::Source;

use super::text;

/// How a file looked when it was read: what `stat` says (as git's index keeps it: size,
/// mtime, ctime and inode, so that a file renamed over another of the same size and mtime, or
/// an mtime set back by hand, still shows) and a hash of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch (the recency of a lesson).
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the Unix epoch (0 where there is none).
    pub ctime_ns: i64,
    /// Inode number (0 where there is none).
    pub ino: u64,
    /// Hash of the bytes (the index's 64-bit checksum).
    pub hash: u64,
    /// Whether mtime and ctime were old enough, when the file was read, that a later change
    /// within the same clock tick is impossible. An unsettled record is re-hashed on the next
    /// check.
    pub settled: bool,
}

impl FileStat {
    /// What `stat` said, and whether it was settled: all of it but the hash.
    pub fn stamp(&self) -> FileStamp {
        FileStamp {
            size: self.size,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
            ino: self.ino,
            settled: self.settled,
        }
    }
}

/// A [`FileStat`] without the hash of the bytes: what the index's path table keeps of each
/// doc, so that checking a walked file against it reads that table alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the Unix epoch (0 where there is none).
    pub ctime_ns: i64,
    /// Inode number (0 where there is none).
    pub ino: u64,
    /// Whether the stat was settled when the file was read ([`FileStat::settled`]).
    pub settled: bool,
}

impl FileStamp {
    /// Whether `stat` says what this stamp says: the same size, times and inode (the hash and
    /// whether either was settled aside).
    pub fn same(&self, stat: &FileStat) -> bool {
        (self.size, self.mtime_ns, self.ctime_ns, self.ino)
            == (stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino)
    }
}

/// One target: every glob given must match.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct TargetGlobs {
    /// Operator glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Role glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Skill glob.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
}

/// The fields of a lesson that retrieval uses.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonFields {
    /// Slug.
    pub slug: String,
    /// Title.
    pub title: String,
    /// `trigger.description`.
    pub description: String,
    /// `trigger.tags`, as written.
    pub tags: Vec<String>,
    /// `trigger.targets`.
    pub targets: Vec<TargetGlobs>,
    /// Outcome.
    pub outcome: Outcome,
    /// Confidence, the schema default 0.5 filled in.
    pub confidence: f64,
    /// `success_count`, or 0.
    pub successes: u64,
    /// `failure_count`, or 0.
    pub failures: u64,
    /// `supersedes`.
    pub supersedes: Vec<String>,
    /// `expires_at`, nanoseconds since the epoch.
    pub expires_ns: Option<i64>,
    /// `metadata.lesson.conflicts_with`: the lessons it declares it contradicts.
    pub conflicts_with: Vec<String>,
    /// One line of advice for the prompt: the first item of "What to do (or avoid)", else the
    /// trigger description, shortened.
    pub gist: String,
    /// The markdown body.
    pub body: String,
    /// The codes of the error-level findings in its own file (lint's file rules, with the
    /// bank's levels and suppressions), sorted: a lesson with any is never served.
    pub errors: Vec<String>,
    /// The time of its ledger's newest event, seconds since the epoch: the recency input of a
    /// bank outside git (in git, the lesson's last commit replaces it at search time).
    pub ledger_at_s: Option<i64>,
    /// The lessons its ledger's `conflict` events name (read with the hit, not indexed).
    pub ledger_conflicts: Vec<String>,
}

/// One indexed file.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The path relative to the bank root, with `/` separators.
    pub path: String,
    /// Size, mtime and hash when read.
    pub stat: FileStat,
    /// The lesson, when the file is one.
    pub lesson: Option<LessonFields>,
}

/// The longest gist, in characters (an ellipsis marks a cut).
pub const GIST_CHARS: usize = 200;

impl Record {
    /// The record of a parsed file, judged by `config`'s lint levels.
    pub fn new(path: String, stat: FileStat, doc: &Document, config: &Config) -> Record {
        Record::with_ledgers(path, stat, doc, config, Ledgers::Look)
    }

    /// [`Record::new`], the lesson's ledger found as `ledgers` says.
    pub(crate) fn with_ledgers(
        path: String,
        stat: FileStat,
        doc: &Document,
        config: &Config,
        ledgers: Ledgers,
    ) -> Record {
        let lesson = doc.lesson.as_ref().map(|l| {
            let mut fields = LessonFields::new(doc, l);
            fields.errors = error_codes(doc, config);
            if let Some(rules) = &l.quarantine {
                fields.errors.extend(quarantine_marks(rules));
            }
            let ledger = bank_root(&doc.source.path, &path)
                .map(|root| ledgers.facts(root, &l.slug.value))
                .unwrap_or_default();
            fields.ledger_at_s = ledger.newest_s;
            fields.ledger_conflicts = ledger.conflicts;
            fields
        });
        Record { path, stat, lesson }
    }
}

impl LessonFields {
    fn new(doc: &Document, l: &Lesson) -> LessonFields {
        let text = &doc.source.text;
        let body = doc
            .body
            .as_ref()
            .and_then(|b| text.get(b.start..))
            .unwrap_or_default()
            .to_string();
        let advice = doc.body.as_ref().and_then(|b| {
            let s = b.section("What to do (or avoid)")?;
            text.get(s.content.clone())
        });
        let gist = advice
            .and_then(first_block)
            .or_else(|| first_block(&l.trigger.description.value))
            .map(|s| shorten(&s, GIST_CHARS))
            .unwrap_or_default();
        LessonFields {
            slug: l.slug.value.clone(),
            title: l.title.value.clone(),
            description: l.trigger.description.value.clone(),
            tags: l.trigger.tags.iter().map(|t| t.value.clone()).collect(),
            targets: l
                .trigger
                .targets
                .iter()
                .map(|t| TargetGlobs {
                    operator: t.operator.as_ref().map(|v| v.value.clone()),
                    role: t.role.as_ref().map(|v| v.value.clone()),
                    skill: t.skill.as_ref().map(|v| v.value.clone()),
                })
                .collect(),
            outcome: l.outcome.value,
            confidence: l.confidence(),
            successes: l.successes(),
            failures: l.failures(),
            supersedes: l.supersedes.iter().map(|s| s.value.clone()).collect(),
            expires_ns: l
                .expires_at
                .as_ref()
                .map(|e| clamp_ns(e.value.at.as_nanosecond())),
            conflicts_with: l.conflicts_with.iter().map(|s| s.value.clone()).collect(),
            gist,
            body,
            errors: Vec::new(),
            ledger_at_s: None,
            ledger_conflicts: Vec::new(),
        }
    }

    /// The tags in normal form ([`text::tag_key`]), sorted and without repeats or empties.
    pub fn tag_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .tags
            .iter()
            .map(|t| text::tag_key(t))
            .filter(|k| !k.is_empty())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Nanoseconds as an i64, saturating (jiff's range is wider than i64 nanoseconds).
pub fn clamp_ns(ns: i128) -> i64 {
    ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The first paragraph or list item of markdown text, on one line, without its list marker.
fn first_block(markdown: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("<!--") {
            if out.is_empty() {
                continue;
            }
            break;
        }
        let item = list_item(trimmed);
        if item.is_some() && !out.is_empty() {
            break;
        }
        out.push(item.unwrap_or(trimmed));
    }
    let joined = out.join(" ");
    (!joined.is_empty()).then_some(joined)
}

/// The text of a list item line (`- x`, `* x`, `+ x`, `1. x`, `1) x`), or `None`.
fn list_item(line: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(rest.trim_start());
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && digits < 10 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(rest.trim_start());
        }
    }
    None
}

/// `s` with whitespace collapsed, cut at a word boundary to at most `max` characters
/// (an ellipsis included).
pub fn shorten(s: &str, max: usize) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let cut: String = collapsed.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > cut.len() / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// The codes of the error-level findings of `doc`'s own file, sorted, without repeats: what
/// [`crate::lint::ErrorRules`] finds, so that retrieval holds back exactly the lessons `lesson
/// list` and `_index.md` leave out, and only the rules at error level run. Rules that depend on
/// the instant (expiry) are not error-level, so the index needs no `now`.
fn error_codes(doc: &Document, config: &Config) -> Vec<String> {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::rc::Rc;
    type Levels = BTreeMap<String, crate::config::Level>;
    thread_local! {
        // the rules of the last configuration seen on this thread: a bank's files share one
        static RULES: RefCell<Option<(Levels, Rc<ErrorRules>)>> = const { RefCell::new(None) };
    }
    let rules = RULES.with_borrow_mut(|cached| match cached {
        Some((levels, rules)) if *levels == config.lint.rules => rules.clone(),
        _ => {
            let rules = Rc::new(ErrorRules::new(config));
            *cached = Some((config.lint.rules.clone(), rules.clone()));
            rules
        }
    });
    rules
        .codes(doc, config, jiff::Timestamp::now())
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// How the index marks a quarantined lesson among the codes that hold a lesson back (so that a
/// quarantined lesson is held back as one with errors is, with no change to the index's
/// format): `quarantine`, and `quarantine:CODE` for each rule it tripped.
pub const QUARANTINE_MARK: &str = "quarantine";

/// The marks of a lesson quarantined for `rules`.
pub fn quarantine_marks(rules: &[String]) -> Vec<String> {
    std::iter::once(QUARANTINE_MARK.to_string())
        .chain(rules.iter().map(|r| format!("{QUARANTINE_MARK}:{r}")))
        .collect()
}

/// Held-back codes split into the error codes and, for a quarantined lesson, its rules.
pub fn split_marks<'a>(
    codes: impl IntoIterator<Item = &'a str>,
) -> (Vec<String>, Option<Vec<String>>) {
    let (mut errors, mut quarantined, mut rules) = (Vec::new(), false, Vec::new());
    for code in codes {
        if code == QUARANTINE_MARK {
            quarantined = true;
        } else if let Some(rule) = code
            .strip_prefix(QUARANTINE_MARK)
            .and_then(|r| r.strip_prefix(':'))
        {
            rules.push(rule.to_string());
        } else {
            errors.push(code.to_string());
        }
    }
    (errors, quarantined.then_some(rules))
}

/// The bank's root, from a file's path and its path relative to the root.
fn bank_root<'a>(path: &'a Path, rel: &str) -> Option<&'a Path> {
    path.ancestors().nth(rel.split('/').count())
}

/// What retrieval reads of a lesson's ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerFacts {
    /// The time of its newest event, seconds since the epoch; `None` when it has no ledger or
    /// no whole event. File times are never read: they change with a checkout.
    pub newest_s: Option<i64>,
    /// The lessons its `conflict` events name, sorted, without repeats.
    pub conflicts: Vec<String>,
}

/// How a record finds its lesson's ledger.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ledgers<'a> {
    /// Try to read the file.
    Look,
    /// Read only the files of these names in the ledger directory, which a whole rebuild lists
    /// once instead of looking for one file per lesson (most lessons have none). A ledger
    /// first written during the rebuild is missed, as it is by a lesson read before the write.
    Listed(&'a std::collections::HashSet<std::ffi::OsString>),
}

impl Ledgers<'_> {
    fn facts(self, root: &Path, slug: &str) -> LedgerFacts {
        match self {
            Ledgers::Listed(names)
                if !names.contains(std::ffi::OsStr::new(&format!("{slug}.jsonl"))) =>
            {
                LedgerFacts::default()
            }
            _ => ledger_facts(root, slug),
        }
    }
}

/// The names in the ledger directory of the bank at `root` (none when it does not exist), or
/// `None` when it cannot be read.
pub(crate) fn list_ledgers(root: &Path) -> Option<std::collections::HashSet<std::ffi::OsString>> {
    match std::fs::read_dir(root.join(crate::layout::LOG_DIR)) {
        Ok(entries) => entries.map(|e| e.ok().map(|e| e.file_name())).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Default::default()),
        Err(_) => None,
    }
}

/// What retrieval reads of the ledger of `slug` in the bank at `root` (nothing when it has
/// none, or the slug could not name a file).
pub fn ledger_facts(root: &Path, slug: &str) -> LedgerFacts {
    ledger_facts_with(slug, |rel| std::fs::read(root.join(rel)))
}

/// [`ledger_facts`] for a bank held open (`dir`, the bank at `root`).
pub(crate) fn ledger_facts_in(dir: &crate::walk::RootDir, root: &Path, slug: &str) -> LedgerFacts {
    ledger_facts_with(slug, |rel| dir.read(&root.join(rel), rel, 0))
}

/// [`ledger_facts`], the ledger (its path relative to the bank) read by `read`.
fn ledger_facts_with(
    slug: &str,
    read: impl FnOnce(&Path) -> std::io::Result<Vec<u8>>,
) -> LedgerFacts {
    if crate::lesson::slug_problem(slug).is_some() {
        return LedgerFacts::default();
    }
    let Ok(bytes) = read(&crate::layout::log_path(Path::new(""), slug)) else {
        return LedgerFacts::default();
    };
    let ledger = crate::ledger::Ledger::parse(Path::new(""), &bytes);
    let mut conflicts: Vec<String> = ledger
        .entries
        .iter()
        .filter_map(|e| match &e.event.kind {
            crate::ledger::EventKind::Conflict { with, .. } => Some(with.clone()),
            _ => None,
        })
        .collect();
    conflicts.sort();
    conflicts.dedup();
    LedgerFacts {
        newest_s: ledger.entries.iter().map(|e| e.event.at.as_second()).max(),
        conflicts,
    }
}

/// The lesson in a file's bytes, parsed as a record's lesson is (`None` when it is no lesson).
pub fn lesson_of_file(path: &Path, bytes: Vec<u8>) -> Option<LessonFields> {
    let (source, problem) = Source::from_bytes(path.to_path_buf(), bytes);
    let doc = Document::parse(source, problem);
    doc.lesson.as_ref().map(|l| LessonFields::new(&doc, l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gists_take_the_first_item_or_paragraph() {
        assert_eq!(
            first_block("\n- Put speed in a benchmark\n  and compare.\n- Second.\n").as_deref(),
            Some("Put speed in a benchmark and compare.")
        );
        assert_eq!(
            first_block("\nOne paragraph\nwrapped.\n\nAnother.\n").as_deref(),
            Some("One paragraph wrapped.")
        );
        assert_eq!(
            first_block("1. First step.\n2. Second.").as_deref(),
            Some("First step.")
        );
        assert_eq!(first_block("\n\n"), None);
    }

    #[test]
    fn shorten_cuts_at_a_word() {
        assert_eq!(shorten("a  b\nc", 10), "a b c");
        assert_eq!(shorten("alpha beta gamma delta", 12), "alpha beta…");
        assert_eq!(shorten("数据库连接池配置", 5), "数据库连…");
    }
}
