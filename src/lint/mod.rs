//! `lesson lint`: rules (one per file under `rules/`), the runner, suppressions and levels.

pub mod fix;
pub mod rules;
pub mod schema_walk;
mod suppression;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::bank::{Bank, BankError, Keep, Overlay};
use crate::config::{Config, ConfigError, Level, CONFIG_FILE};
use crate::diagnostic::{Applicability, Diagnostic, RuleId, Severity};
use crate::document::Document;
use crate::progress::{Progress, Silent};

pub use rules::RULES;

/// How a rule runs.
#[derive(Clone, Copy)]
pub enum Check {
    /// Emitted by the reader, the parser or the runner itself; the rule exists for its code,
    /// its docs and its level.
    Emitted,
    /// Runs on one file.
    File(fn(&FileContext<'_>, &mut Vec<Diagnostic>)),
    /// Runs once on the whole bank.
    Bank(fn(&Bank, &mut Vec<Diagnostic>)),
    /// Emitted by `lesson lint --base REV` (`crate::pr`), which compares two versions of the
    /// bank; a plain lint never reports it (and a suppression of it is never unused).
    Base,
}

/// A lint rule: its id (a stable code, a kebab-case name, a default level), docs and a check.
/// It derefs to its [`RuleId`], so `rule.code` reads the id's code.
pub struct Rule {
    /// Code, name and default level.
    pub id: RuleId,
    /// Markdown docs: a one-line summary, then "What it does", "Why is this bad?", "Example".
    pub docs: &'static str,
    /// Whether the rule offers a fix (safe or unsafe).
    pub fixable: bool,
    /// How it runs.
    pub check: Check,
}

impl Rule {
    /// The docs as markdown: doc-comment lines without their leading space, trimmed.
    pub fn markdown(&self) -> String {
        let lines: Vec<&str> = self
            .docs
            .lines()
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect();
        lines.join("\n").trim().to_string()
    }

    /// The first line of the docs.
    pub fn summary(&self) -> &'static str {
        self.docs
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
    }
}

impl std::ops::Deref for Rule {
    type Target = RuleId;

    fn deref(&self) -> &RuleId {
        &self.id
    }
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code, self.name)
    }
}

/// Declare a rule whose doc comment is its user documentation.
#[macro_export]
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        pub static $id:ident = {
            code: $code:literal,
            name: $name:literal,
            level: $level:ident,
            fixable: $fixable:literal,
            check: $check:expr $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        pub static $id: $crate::lint::Rule = $crate::lint::Rule {
            id: $crate::diagnostic::RuleId {
                code: $code,
                name: $name,
                default_level: $crate::diagnostic::Severity::$level,
            },
            docs: concat!($($doc, "\n"),*),
            fixable: $fixable,
            check: $check,
        };
    };
}

/// What a file rule sees: the file and the settings, never the rest of the bank (rules that
/// need every lesson are `Check::Bank`), so file rules can run while the bank is loading.
pub struct FileContext<'a> {
    /// The file.
    pub doc: &'a Document,
    /// The bank's configuration.
    pub config: &'a Config,
    /// The instant expiry is judged at.
    pub now: jiff::Timestamp,
    /// The schema's closed mappings in this file, computed on first use by any rule.
    pub(crate) objects: std::cell::OnceCell<Vec<schema_walk::Object>>,
}

impl<'a> FileContext<'a> {
    /// The context for one file.
    pub fn new(doc: &'a Document, config: &'a Config, now: jiff::Timestamp) -> Self {
        FileContext {
            doc,
            config,
            now,
            objects: std::cell::OnceCell::new(),
        }
    }
}

/// Find a rule by code or name (case-insensitive code).
pub fn find_rule(code_or_name: &str) -> Option<&'static Rule> {
    RULES
        .iter()
        .copied()
        .find(|r| r.code.eq_ignore_ascii_case(code_or_name) || r.name == code_or_name)
}

/// Whether a selector names `rule`: `ALL`, the rule's name, its code or a prefix of its code
/// (`S`, `S01`), codes compared without regard to case (as ruff's `--select`).
pub fn selector_matches(selector: &str, rule: &Rule) -> bool {
    if selector.eq_ignore_ascii_case("ALL") || selector == rule.name {
        return true;
    }
    !selector.is_empty()
        && rule
            .code
            .get(..selector.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(selector))
}

/// A rule selector or a configured rule that names no rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule `{given}`{}", match suggestion {
    Some(s) => format!("; did you mean `{s}`?"),
    None => "; `lesson rule` lists the rules".to_string(),
})]
pub struct UnknownRule {
    /// What was given.
    pub given: String,
    /// The closest rule code or name, when one is close.
    pub suggestion: Option<&'static str>,
}

/// Check a selector (`--select`): `Ok` when it names at least one rule ([`selector_matches`]).
pub fn check_selector(selector: &str) -> Result<(), UnknownRule> {
    if RULES.iter().any(|r| selector_matches(selector, r)) {
        return Ok(());
    }
    Err(UnknownRule {
        given: selector.to_string(),
        suggestion: closest_rule(selector),
    })
}

/// Check a rule key of `lesson.toml` `[lint.rules]`: a rule's code or name, exactly.
pub fn check_rule_key(key: &str) -> Result<(), UnknownRule> {
    match find_rule(key) {
        Some(_) => Ok(()),
        None => Err(UnknownRule {
            given: key.to_string(),
            suggestion: closest_rule(key),
        }),
    }
}

/// The keys of `[lint.rules]` name rules by code or name: a key that names none is an error at
/// its position in `lesson.toml`, with the closest rule, as an unknown key is (ruff does the
/// same). `config` is the bank's at `root`, whose `lesson.toml` is read again only on error.
pub fn check_config(root: &Path, config: &Config) -> Result<(), ConfigError> {
    let Some(unknown) = unknown_rule_key(config) else {
        return Ok(());
    };
    let path = root.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let path = path.display().to_string();
    Err(Config::rule_key_error(
        &text,
        &path,
        &unknown.given,
        unknown.to_string(),
    ))
}

/// The first key of `[lint.rules]` that names no rule.
fn unknown_rule_key(config: &Config) -> Option<UnknownRule> {
    config
        .lint
        .rules
        .keys()
        .find_map(|key| check_rule_key(key).err())
}

/// Parse configuration text (`path` is for messages) and check its rule keys like
/// [`check_config`].
pub fn parse_config(text: &str, path: &str) -> Result<Config, ConfigError> {
    let config = Config::parse(text, path)?;
    match unknown_rule_key(&config) {
        None => Ok(config),
        Some(unknown) => Err(Config::rule_key_error(
            text,
            path,
            &unknown.given,
            unknown.to_string(),
        )),
    }
}

/// The rule code or name closest to `given` (a typo, a code without its leading zero), if
/// one is close enough to suggest.
fn closest_rule(given: &str) -> Option<&'static str> {
    let given = given.to_ascii_lowercase();
    RULES
        .iter()
        .flat_map(|r| [r.code, r.name])
        .map(|candidate| {
            let score =
                strsim::normalized_damerau_levenshtein(&given, &candidate.to_ascii_lowercase());
            (candidate, score)
        })
        .filter(|(_, score)| *score >= 0.6)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(candidate, _)| candidate)
}

/// Which files and rules to report on.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Report only on files at or below these paths; empty means the whole bank.
    pub paths: Vec<PathBuf>,
    /// Run only these rules (codes, code prefixes, names or `ALL`, see [`selector_matches`]);
    /// empty means every enabled rule.
    pub rules: Vec<String>,
}

impl Selection {
    /// Whether `rule` is selected.
    pub fn selects(&self, rule: &Rule) -> bool {
        self.rules.is_empty() || self.rules.iter().any(|r| selector_matches(r, rule))
    }

    fn includes(&self, path: &Path) -> bool {
        self.paths.is_empty()
            || self
                .paths
                .iter()
                .any(|p| path == p || path.starts_with(p) || same_file(path, p))
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b || a.starts_with(&b),
        _ => false,
    }
}

/// The configured level of each rule (`None` = off), with the rules a selection leaves out off.
fn levels(config: &Config, selection: &Selection) -> HashMap<&'static str, Option<Severity>> {
    RULES
        .iter()
        .map(|rule| {
            let configured = config
                .lint
                .rules
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(rule.code) || k.as_str() == rule.name)
                .map(|(_, level)| *level);
            let level = match configured {
                _ if !selection.selects(rule) => None,
                None => Some(rule.default_level),
                Some(Level::Off) => None,
                Some(Level::Error) => Some(Severity::Error),
                Some(Level::Warning) => Some(Severity::Warning),
                Some(Level::Info) => Some(Severity::Info),
            };
            (rule.code, level)
        })
        .collect()
}

/// What the first pass keeps of one file: its findings and its suppressions.
struct FilePass {
    diagnostics: Vec<Diagnostic>,
    allows: Vec<suppression::Allow>,
}

/// The file rules on one document, and its suppressions.
fn file_pass(
    doc: &Document,
    config: &Config,
    now: jiff::Timestamp,
    checks: &[FileCheck],
    selection: &Selection,
) -> FilePass {
    if !selection.includes(&doc.source.path) {
        return FilePass {
            diagnostics: Vec::new(),
            allows: Vec::new(),
        };
    }
    FilePass {
        diagnostics: file_diagnostics(doc, &FileContext::new(doc, config, now), checks),
        allows: suppression::allows(doc),
    }
}

/// Lint a loaded bank: every rule, suppressions applied, levels applied, sorted by path and
/// position.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let bank = dir.path();
/// # lesson::curate::init::init(bank, jiff::Timestamp::now())?;
/// # lesson::define_lesson(bank, serde_json::json!({
/// #     "slug": "cite-the-source-url", "title": "Cite the source URL of every quoted figure.",
/// #     "trigger": {"description": "A summary quotes figures from web pages.", "tags": ["research"]},
/// #     "outcome": "success", "evidence": [{"kind": "run", "ref": "run-1"}],
/// # }), &lesson::curate::Stamp::now("doc"))?;
/// let loaded = lesson::Bank::open(bank)?;
/// let findings = lesson::lint::lint(&loaded, &lesson::lint::Selection::default());
/// assert!(findings.iter().all(|d| d.severity != lesson::Severity::Error), "{findings:?}");
/// # Ok(())
/// # }
/// ```
pub fn lint(bank: &Bank, selection: &Selection) -> Vec<Diagnostic> {
    let levels = levels(&bank.config, selection);
    let checks = file_checks(|r| levels.get(r.code).copied().flatten().is_some());
    let passes: Vec<FilePass> = bank
        .documents
        .par_iter()
        .map(|doc| file_pass(doc, &bank.config, bank.now, &checks, selection))
        .collect();
    finish(bank, passes, &levels, selection)
}

/// Load the bank at `root` and lint it in one pass: each file's rules run as it is parsed, and
/// its YAML tree and body are dropped right after, so a large bank never holds them all. The
/// returned bank keeps every file's text and lesson (enough for reports, fixes and the bank
/// rules).
pub fn lint_at(
    root: &Path,
    overlay: &Overlay,
    now: jiff::Timestamp,
    selection: &Selection,
) -> Result<(Bank, Vec<Diagnostic>), BankError> {
    lint_pass(root, overlay, now, selection, false, &Silent)
}

/// Like [`lint_at`] for a report only: a file its rules found nothing in (and that suppresses
/// nothing) keeps no text, and of its lesson what the bank rules read
/// ([`crate::Lesson::keep_bank_fields`]), so a large clean bank is never held in memory whole.
/// The rare such file a bank rule then finds something in is read again, and the finding placed
/// in that text. The returned bank's trimmed documents ([`Document::is_trimmed`]) are not the
/// parsed text: never fix or edit from them.
pub fn lint_report(
    root: &Path,
    now: jiff::Timestamp,
    selection: &Selection,
) -> Result<(Bank, Vec<Diagnostic>), BankError> {
    lint_report_with(root, now, selection, &Silent)
}

/// [`lint_report`], telling `progress` how it goes: the phase `checking` (one step per file,
/// its total unknown: files are parsed while the walk is still finding them), then `bank
/// rules`.
pub fn lint_report_with(
    root: &Path,
    now: jiff::Timestamp,
    selection: &Selection,
    progress: &dyn Progress,
) -> Result<(Bank, Vec<Diagnostic>), BankError> {
    lint_pass(root, &Overlay::new(), now, selection, true, progress)
}

fn lint_pass(
    root: &Path,
    overlay: &Overlay,
    now: jiff::Timestamp,
    selection: &Selection,
    trim: bool,
    progress: &dyn Progress,
) -> Result<(Bank, Vec<Diagnostic>), BankError> {
    // the levels depend on lesson.toml, which the loader reads again: it is small
    let config = Config::load(root)?;
    check_config(root, &config)?;
    let levels = levels(&config, selection);
    let checks = file_checks(|r| levels.get(r.code).copied().flatten().is_some());
    let errors = ErrorRules::new(&config);
    // every file's findings are at hand when every rule runs on every file: whether it has
    // errors is read from them, not worked out again
    let whole = selection.rules.is_empty() && selection.paths.is_empty();
    progress.begin("checking", None);
    let (mut bank, passes) = Bank::load_visiting(root, overlay, now, |config, doc| {
        progress.advance(1);
        let pass = file_pass(doc, config, now, &checks, selection);
        let has_errors = if whole {
            errors.any_error(&pass.allows, &pass.diagnostics)
        } else {
            errors.has_errors(doc, config, now)
        };
        doc.set_file_errors(has_errors);
        if trim && pass.diagnostics.is_empty() && pass.allows.is_empty() {
            // a bank rule seldom points into a clean file: that file is read again then
            doc.forget_text();
            if let Some(lesson) = doc.lesson.as_deref_mut() {
                lesson.keep_bank_fields();
            }
        } else {
            doc.slim();
        }
        pass
    })?;
    progress.end();
    progress.begin("bank rules", None);
    let mut diagnostics = finish(&bank, passes, &levels, selection);
    if trim {
        reread_pointed_into(&mut bank, &mut diagnostics);
    }
    progress.end();
    Ok((bank, diagnostics))
}

/// Read again the files whose text [`lint_report`] let go and that a bank rule found something
/// in, and place those findings in their text (made on no text, they point at its start), then
/// sort them by position again.
fn reread_pointed_into(bank: &mut Bank, diagnostics: &mut [Diagnostic]) {
    // the findings are sorted by path: one file's stand side by side
    for found in diagnostics.chunk_by_mut(|a, b| a.path == b.path) {
        let key = found[0].path.as_os_str().as_encoded_bytes();
        let Ok(i) = bank
            .documents
            .binary_search_by(|doc| doc.source.path.as_os_str().as_encoded_bytes().cmp(key))
        else {
            continue;
        };
        let doc = &mut bank.documents[i];
        if !doc.is_forgotten() {
            continue;
        }
        doc.reread();
        for d in found.iter_mut() {
            d.place_in(&doc.source);
        }
        found.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    }
}

/// The bank rules, then suppressions and levels over everything, sorted.
fn finish(
    bank: &Bank,
    passes: Vec<FilePass>,
    levels: &HashMap<&'static str, Option<Severity>>,
    selection: &Selection,
) -> Vec<Diagnostic> {
    let enabled = |rule: &Rule| levels.get(rule.code).copied().flatten().is_some();
    // the bank rules are independent of one another: they run side by side
    let checks: Vec<_> = RULES
        .iter()
        .filter(|r| enabled(r))
        .filter_map(|r| match r.check {
            Check::Bank(check) => Some(check),
            _ => None,
        })
        .collect();
    let found: Vec<Vec<Diagnostic>> = checks
        .par_iter()
        .map(|check| {
            let mut out = Vec::new();
            check(bank, &mut out);
            out
        })
        .collect();
    let mut bank_level: Vec<Diagnostic> = found.into_iter().flatten().collect();
    rules::walk_diagnostics(bank, enabled, &mut bank_level);
    let mut passes = passes;
    let mut others = Vec::new();
    for d in bank_level {
        // the documents are sorted by their paths' bytes
        let key = d.path.as_os_str().as_encoded_bytes();
        match bank
            .documents
            .binary_search_by(|doc| doc.source.path.as_os_str().as_encoded_bytes().cmp(key))
        {
            Ok(i) => passes[i].diagnostics.push(d),
            Err(_) => others.push(d),
        }
    }
    let mut all: Vec<Diagnostic> = passes
        .into_par_iter()
        .zip(bank.documents.par_iter())
        .flat_map_iter(|(pass, doc)| suppression::apply(doc, pass.allows, pass.diagnostics))
        .collect();
    all.extend(others);
    all.retain(|d| selection.includes(&d.path));
    apply_levels(levels, &mut all);
    all.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    all
}

/// Findings made outside the rules, by `lesson lint --base` (rules of [`Check::Base`]): the
/// selection's rules and paths, the configured levels and the suppressions of the file each
/// finding points into (found in `docs`, the versions the findings were placed in) applied,
/// sorted by path and position.
pub fn settle(
    config: &Config,
    selection: &Selection,
    docs: &[Document],
    mut diagnostics: Vec<Diagnostic>,
) -> Vec<Diagnostic> {
    let levels = levels(config, selection);
    diagnostics.retain(|d| {
        selection.includes(&d.path)
            && !docs.iter().any(|doc| {
                doc.source.path == d.path
                    && suppression::suppresses(&suppression::allows(doc), d.code)
            })
    });
    apply_levels(&levels, &mut diagnostics);
    diagnostics.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    diagnostics
}

/// Lint one document on its own: its parse diagnostics and every file rule, suppressions and the
/// bank's configured levels applied, sorted by position. Bank-wide rules (duplicates,
/// supersession) do not run: they need every lesson.
pub fn lint_document(doc: &Document, bank: &Bank) -> Vec<Diagnostic> {
    lint_file(doc, &bank.config, bank.now)
}

/// [`lint_document`] with a configuration and an instant instead of a loaded bank (for a
/// watcher, which keeps an index, not a bank).
pub fn lint_file(doc: &Document, config: &Config, now: jiff::Timestamp) -> Vec<Diagnostic> {
    let selection = Selection::default();
    let levels = levels(config, &selection);
    let checks = file_checks(|r| levels.get(r.code).copied().flatten().is_some());
    let ctx = FileContext::new(doc, config, now);
    let diagnostics = file_diagnostics(doc, &ctx, &checks);
    let mut out = suppression::apply(doc, suppression::allows(doc), diagnostics);
    apply_levels(&levels, &mut out);
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out
}

/// What decides whether a lesson file has an error-level finding of its own: its parse
/// diagnostics and the file rules that are at error level under the bank's configuration
/// (`[lint.rules]`), with its suppressions applied. Bank rules (B*, L001, L004) and unused
/// suppressions (X001, which depend on them) do not count. `lesson list`, `_index.md` and
/// retrieval leave such a file out; lint's `index-stale` agrees.
pub struct ErrorRules {
    levels: HashMap<&'static str, Option<Severity>>,
    checks: Vec<FileCheck>,
}

impl ErrorRules {
    /// The rules under `config`.
    pub fn new(config: &Config) -> ErrorRules {
        let levels = levels(config, &Selection::default());
        let conflict = rules::merge_conflict::RULE.code;
        // merge-conflict also hides the YAML errors its markers cause: it runs when it is on
        let checks = file_checks(|r| match levels.get(r.code).copied().flatten() {
            Some(Severity::Error) => true,
            Some(_) => r.code == conflict,
            None => false,
        });
        ErrorRules { levels, checks }
    }

    /// Whether `doc` (parsed in full: its tree and body are read) has an error-level finding.
    pub fn has_errors(&self, doc: &Document, config: &Config, now: jiff::Timestamp) -> bool {
        let found = file_diagnostics(doc, &FileContext::new(doc, config, now), &self.checks);
        !found.is_empty() && self.any_error(&suppression::allows(doc), &found)
    }

    /// The codes of `doc`'s error-level findings, sorted and distinct (empty when
    /// [`ErrorRules::has_errors`] is false). Only the rules at error level run.
    pub fn codes(
        &self,
        doc: &Document,
        config: &Config,
        now: jiff::Timestamp,
    ) -> Vec<&'static str> {
        let found = file_diagnostics(doc, &FileContext::new(doc, config, now), &self.checks);
        if found.is_empty() {
            return Vec::new();
        }
        let allows = suppression::allows(doc);
        let mut codes: Vec<&'static str> = found
            .iter()
            .filter(|d| self.is_error(&allows, d))
            .map(|d| d.code)
            .collect();
        codes.sort_unstable();
        codes.dedup();
        codes
    }

    /// Whether `found` (a file's findings before suppressions) holds an error-level finding that
    /// `allows` does not suppress.
    fn any_error(&self, allows: &[suppression::Allow], found: &[Diagnostic]) -> bool {
        found.iter().any(|d| self.is_error(allows, d))
    }

    /// Whether `d` (a finding before suppressions) is at error level and not suppressed by
    /// `allows`.
    fn is_error(&self, allows: &[suppression::Allow], d: &Diagnostic) -> bool {
        d.code != rules::unused_suppression::RULE.code
            && self.levels.get(d.code).copied().flatten() == Some(Severity::Error)
            && !suppression::suppresses(allows, d.code)
    }
}

/// The linter's judge for the bank's loaders ([`crate::bank::ErrorCheck`]): [`ErrorRules`] for
/// the configuration the loader reads, built once.
#[derive(Default)]
pub struct FileErrors(std::sync::OnceLock<ErrorRules>);

impl crate::bank::ErrorCheck for FileErrors {
    fn has_errors(&self, doc: &Document, config: &Config, now: jiff::Timestamp) -> bool {
        self.0
            .get_or_init(|| ErrorRules::new(config))
            .has_errors(doc, config, now)
    }
}

/// Load the bank at `root` with every file judged for errors of its own (what `lesson list`,
/// `_index.md` and the writers that refresh it need): [`Bank::load`], judged.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let bank = dir.path();
/// # lesson::curate::init::init(bank, jiff::Timestamp::now())?;
/// # lesson::define_lesson(bank, serde_json::json!({
/// #     "slug": "cite-the-source-url", "title": "Cite the source URL of every quoted figure.",
/// #     "trigger": {"description": "A summary quotes figures from web pages.", "tags": ["research"]},
/// #     "outcome": "success", "evidence": [{"kind": "run", "ref": "run-1"}],
/// # }), &lesson::curate::Stamp::now("doc"))?;
/// let now = "2026-11-22T12:00:00Z".parse()?;
/// let loaded = lesson::lint::load(bank, now)?;
/// let (_, first) = loaded.lessons().next().unwrap();
/// assert_eq!(first.slug.value, "cite-the-source-url");
/// assert_eq!(loaded.status(first).label(), "active");
/// # Ok(())
/// # }
/// ```
pub fn load(root: &Path, now: jiff::Timestamp) -> Result<Bank, BankError> {
    load_with(root, &Overlay::new(), now)
}

/// [`Bank::load_with`], judged (see [`load`]).
pub fn load_with(root: &Path, overlay: &Overlay, now: jiff::Timestamp) -> Result<Bank, BankError> {
    Bank::load_judged(root, overlay, now, Keep::Full, &FileErrors::default())
}

/// [`Bank::load_lessons`], judged (see [`load`]).
pub fn load_lessons(root: &Path, now: jiff::Timestamp) -> Result<Bank, BankError> {
    Bank::load_judged(
        root,
        &Overlay::new(),
        now,
        Keep::Lessons,
        &FileErrors::default(),
    )
}

/// A file rule's check function.
type FileCheck = fn(&FileContext<'_>, &mut Vec<Diagnostic>);

/// The check functions of the enabled file rules, looked up once per run rather than per file.
fn file_checks(enabled: impl Fn(&Rule) -> bool) -> Vec<FileCheck> {
    RULES
        .iter()
        .filter(|r| enabled(r))
        .filter_map(|r| match r.check {
            Check::File(check) => Some(check),
            _ => None,
        })
        .collect()
}

/// One file's parse diagnostics and the findings of its enabled file rules, before suppressions.
fn file_diagnostics(
    doc: &Document,
    ctx: &FileContext<'_>,
    checks: &[FileCheck],
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    rules::parse_diagnostics(doc, &mut out);
    for check in checks {
        check(ctx, &mut out);
    }
    // a merge conflict in the frontmatter is the one finding there worth reading: the YAML
    // errors it causes point elsewhere
    let conflict = &rules::merge_conflict::RULE;
    if out
        .iter()
        .any(|d| d.code == conflict.code && rules::merge_conflict::in_frontmatter(doc, &d.range))
    {
        out.retain(|d| !rules::merge_conflict::caused_by_conflict(d.code));
    }
    out
}

/// Set each diagnostic's configured level; drop those whose rule is off.
fn apply_levels(
    levels: &HashMap<&'static str, Option<Severity>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    diagnostics.retain_mut(|d| match levels.get(d.code).copied().flatten() {
        Some(level) => {
            d.severity = level;
            true
        }
        None => false,
    });
}

/// Counts by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Error-level findings.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Infos.
    pub infos: usize,
    /// Findings with a safe fix (applied by `--fix`).
    pub fixable: usize,
    /// Findings whose fix is unsafe (applied only with `--unsafe-fixes`).
    pub unsafe_fixable: usize,
}

impl Summary {
    /// Count a set of diagnostics.
    pub fn of(diagnostics: &[Diagnostic]) -> Summary {
        let mut s = Summary::default();
        for d in diagnostics {
            match d.severity {
                Severity::Error => s.errors += 1,
                Severity::Warning => s.warnings += 1,
                Severity::Info => s.infos += 1,
            }
            match d.fix.as_ref().map(|fix| fix.applicability) {
                Some(Applicability::Safe) => s.fixable += 1,
                Some(Applicability::Unsafe) => s.unsafe_fixable += 1,
                None => {}
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown rule in `[lint.rules]` is an error at its key, with the closest rule.
    #[test]
    fn unknown_rule_names_are_errors_with_a_suggestion() {
        for (text, at, message) in [
            (
                "[lint.rules]\nS006 = \"warning\"\nunknwon-field = \"off\"\n",
                (3, 1),
                "[lint.rules]: unknown rule `unknwon-field`; did you mean `unknown-field`?",
            ),
            (
                "[lint]\nrules = { S13 = \"off\" }\n",
                (2, 11),
                "[lint.rules]: unknown rule `S13`; did you mean `S013`?",
            ),
            (
                "[lint.rules]\nNOPE = \"off\"\n",
                (2, 1),
                "[lint.rules]: unknown rule `NOPE`; `lesson rule` lists the rules",
            ),
            // a prefix selects on the command line, but a level is set per rule
            (
                "[lint.rules]\nS = \"off\"\n",
                (2, 1),
                "[lint.rules]: unknown rule `S`; `lesson rule` lists the rules",
            ),
        ] {
            let err = parse_config(text, "lesson.toml").unwrap_err();
            let ConfigError::Invalid {
                line,
                column,
                message: got,
                ..
            } = err
            else {
                panic!("{text}")
            };
            assert_eq!(
                (line, column, got.as_str()),
                (at.0, at.1, message),
                "{text}"
            );
        }
        assert!(parse_config("[lint.rules]\ns006 = \"off\"\n", "x").is_ok());
    }

    #[test]
    fn markdown_loses_the_doc_comment_indent() {
        let rule = Rule {
            id: RuleId {
                code: "Z001",
                name: "z",
                default_level: Severity::Info,
            },
            docs: " Summary.\n\n ## What\n  two\n",
            fixable: false,
            check: Check::Emitted,
        };
        assert_eq!(rule.markdown(), "Summary.\n\n## What\n two");
        assert_eq!(rule.summary(), "Summary.");
    }
}
