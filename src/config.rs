//! `lesson.toml`, the bank's configuration.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::layout::CONFIG_FILE;

/// A bank's configuration, with defaults for everything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    /// `[lint]`
    #[serde(default)]
    pub lint: LintConfig,
    /// `[review]`
    #[serde(default)]
    pub review: ReviewConfig,
    /// `[retrieve]`
    #[serde(default)]
    pub retrieve: RetrieveConfig,
    /// `[dedup]`
    #[serde(default)]
    pub dedup: DedupConfig,
    /// `[distill]`
    #[serde(default)]
    pub distill: DistillConfig,
    /// `[retention]`
    #[serde(default)]
    pub retention: RetentionConfig,
    /// `[banks]`
    #[serde(default, skip_serializing_if = "BanksConfig::is_empty")]
    pub banks: BanksConfig,
}

/// `[retention]`: which lessons `lesson archive --policy` moves out of the live set (never
/// deleted). Every rule is off unless set; a lesson with `metadata.lesson.pinned: true` is never
/// archived by policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RetentionConfig {
    /// Archive a lesson expired for at least this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_expired_after_days: Option<u64>,
    /// Archive a lesson that has failed more often than it worked (`failure_count >
    /// success_count`) for at least this many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_failure_dominant_after_days: Option<u64>,
    /// Archive a lesson contradicted in at least this many runs (its ledger's distinct
    /// `contradicted` outcomes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_contradicted_at: Option<u64>,
    /// Archive a lesson whose utility (`crate::usage`) is under this after at least
    /// `min-shown` showings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_below_utility: Option<f64>,
    /// The showings `archive-below-utility` waits for.
    #[serde(default = "default_min_shown")]
    pub min_shown: u64,
    /// Flag for review, instead of archiving, a lesson contradicted in at least this many runs
    /// while it still succeeds more than it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_contradicted_at: Option<u64>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            archive_expired_after_days: None,
            archive_failure_dominant_after_days: None,
            archive_contradicted_at: None,
            archive_below_utility: None,
            min_shown: default_min_shown(),
            review_contradicted_at: None,
        }
    }
}

fn default_min_shown() -> u64 {
    10
}

/// `[banks]`: other banks this one reads beside its own lessons (read-only; every write goes
/// to this bank). See [`crate::layers`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BanksConfig {
    /// The included banks' directories, relative to this bank (or absolute), in the order
    /// they are read after it.
    #[serde(default)]
    pub include: Vec<String>,
}

impl BanksConfig {
    /// Whether no bank is included.
    pub fn is_empty(&self) -> bool {
        self.include.is_empty()
    }
}

/// `[distill]`: the write gate of `lesson distill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DistillConfig {
    /// Candidate lessons a judge may propose for one run at most; more refuses the whole run
    /// (a judge that floods the bank is not trusted with any of it).
    #[serde(default = "default_max_candidates_per_run")]
    pub max_candidates: usize,
    /// Runs whose trajectory has fewer steps than this are skipped (nothing is written, the
    /// judge is not called): `trajectory` as a list, or an object's `steps` list; a run without
    /// one has 0 steps. 0 (the default): every run is distilled.
    #[serde(default)]
    pub min_steps: usize,
    /// Candidates whose `confidence` (the judge's rating, AIP-11's 0.5 when absent) is below
    /// this are dropped, the rest admitted. A gate only: an admitted lesson's stored confidence
    /// is 0.5 whatever the judge claimed. 0 (the default): none is dropped.
    #[serde(default)]
    pub min_confidence: f64,
    /// What a secret in the judge's answer does: `refuse` (the default) refuses the whole
    /// answer; `redact` replaces each secret found in a candidate's body and evidence notes
    /// and in verdict and conflict notes with `[redacted: KIND]` and admits the rest. A secret
    /// anywhere else, or still found after redaction, refuses the answer either way.
    #[serde(default)]
    pub secrets: SecretPolicy,
}

impl Default for DistillConfig {
    fn default() -> Self {
        DistillConfig {
            max_candidates: default_max_candidates_per_run(),
            min_steps: 0,
            min_confidence: 0.0,
            secrets: SecretPolicy::default(),
        }
    }
}

/// `[distill] secrets`: what a secret in the judge's answer does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecretPolicy {
    /// Refuse the whole answer (fail closed).
    #[default]
    Refuse,
    /// Replace secrets in bodies and notes with `[redacted: KIND]`, admit the rest.
    Redact,
}

fn default_max_candidates_per_run() -> usize {
    5
}

/// `[review]`: when a lesson needs a human (`lesson review`, rule L003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReviewConfig {
    /// Successes and failures must both be at least this for the mixed band.
    #[serde(default = "default_mixed_min")]
    pub mixed_min: u64,
    /// The mixed band: the smaller count divided by the larger is at least this (0 to 1).
    #[serde(default = "default_mixed_ratio")]
    pub mixed_ratio: f64,
    /// A lesson with no recorded outcome this many days after it was created is listed.
    #[serde(default = "default_unapplied_days")]
    pub unapplied_days: u64,
    /// In a bank whose searches are logged: a lesson shown to at least this many runs, none of
    /// which followed it, is listed (0: never).
    #[serde(default = "default_shown_never_followed")]
    pub shown_never_followed: u64,
    /// In a bank whose searches are logged: a lesson no logged search showed for this many
    /// days (since it was last shown, else since it entered its ledger) is listed (0: never).
    #[serde(default = "default_unshown_days")]
    pub unshown_days: u64,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            mixed_min: default_mixed_min(),
            mixed_ratio: default_mixed_ratio(),
            unapplied_days: default_unapplied_days(),
            shown_never_followed: default_shown_never_followed(),
            unshown_days: default_unshown_days(),
        }
    }
}

impl ReviewConfig {
    /// Whether counts fall in the mixed band: both at least `mixed-min`, and
    /// `min / max >= mixed-ratio`.
    pub fn in_mixed_band(&self, successes: u64, failures: u64) -> bool {
        let (low, high) = (successes.min(failures), successes.max(failures));
        low >= self.mixed_min.max(1) && low as f64 / high as f64 >= self.mixed_ratio
    }
}

fn default_mixed_min() -> u64 {
    3
}

fn default_mixed_ratio() -> f64 {
    0.5
}

fn default_unapplied_days() -> u64 {
    90
}

fn default_shown_never_followed() -> u64 {
    10
}

fn default_unshown_days() -> u64 {
    90
}

/// `[lint]`: rule levels and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LintConfig {
    /// Files larger than this many bytes are reported, not read.
    #[serde(default = "default_size_limit")]
    pub size_limit: u64,
    /// Globs (relative to the bank) of markdown files that are not lessons.
    #[serde(default = "default_exclude")]
    pub exclude: Vec<String>,
    /// Rule levels by code or name: `error`, `warning`, `info` or `off`.
    #[serde(default)]
    pub rules: BTreeMap<String, Level>,
}

impl Default for LintConfig {
    fn default() -> Self {
        LintConfig {
            size_limit: default_size_limit(),
            exclude: default_exclude(),
            rules: BTreeMap::new(),
        }
    }
}

fn default_size_limit() -> u64 {
    1024 * 1024
}

fn default_exclude() -> Vec<String> {
    vec!["README.md".into()]
}

/// `[retrieve]`: what `lesson search` returns and how it ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RetrieveConfig {
    /// Lessons returned at most.
    #[serde(default = "default_k")]
    pub k: usize,
    /// Token budget of the prompt block (tokens estimated as characters / 4, rounded up).
    #[serde(default = "default_budget")]
    pub budget: usize,
    /// Recency half-life in days (a lesson this old counts half); 0: no decay.
    #[serde(default = "default_half_life_days")]
    pub half_life_days: f64,
    /// Lessons whose similarity to the request is below this are not returned.
    #[serde(default = "default_min_similarity")]
    pub min_similarity: f64,
    /// BM25 term-frequency saturation, applied to the weighted sum of a term's field
    /// frequencies (so it is larger than plain BM25's 1.2: the weights add up to about 10).
    #[serde(default = "default_k1")]
    pub k1: f64,
    /// BM25 length normalisation (0: none, 1: full).
    #[serde(default = "default_b")]
    pub b: f64,
    /// What the bank's tags found among the request's words do: `ignore` (the default: they
    /// count as words of the request, no more), `boost` (raise the score of the lessons that
    /// carry them by `tag-boost`), or `gate` (a tagged lesson must carry one, as `--tag` does).
    /// Tags the caller gives always gate, alone.
    #[serde(default)]
    pub inferred_tags: InferredTags,
    /// With `inferred-tags = "boost"`: the factor a lesson's score is multiplied by when it
    /// carries a tag found among the request's words.
    #[serde(default = "default_tag_boost")]
    pub tag_boost: f64,
    /// Cautions (lessons that failed more often than they worked) that keep a place among the
    /// top K when they match, however low their count factor puts them.
    #[serde(default = "default_max_cautions")]
    pub max_cautions: usize,
    /// How much the lessons' retrieval figures (`crate::usage`) weigh in ranking, 0 to 1 (0,
    /// the default: not at all, and a search never reads the retrieval log). Above 0, a
    /// lesson's score is multiplied by `(1 − w) + w × (helped + 1) / (shown + 2)`: a
    /// rich-get-richer loop, since what is shown more gets more chances to help.
    #[serde(default)]
    pub usage_weight: f64,
    /// A sentence-embedding model directory (`config.json`, `tokenizer.json`,
    /// `model.safetensors`), relative to the bank or absolute, that turns semantic retrieval
    /// on in a `lesson` built with the `semantic` feature. Absent (the default): lexical
    /// retrieval only, exactly as without the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// With a `model`: the weight of the cosine in the hybrid similarity, 0 to 1
    /// (`(1 − w) × lexical similarity + w × cosine`); 0 ranks as without a model. Absent (the
    /// default): the model's own (`Embedder::default_weight`: 0.5 for a BERT-class encoder,
    /// 0.3 for a static model), chosen on the training sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_weight: Option<f64>,
    /// `[retrieve.weights]`
    #[serde(default)]
    pub weights: FieldWeights,
}

/// What the bank's tags found among a request's words do to retrieval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InferredTags {
    /// Neither gate nor boost: they count as words of the request (and the tags field weighs
    /// in the similarity). The default: it ranks best on the retrieval sets (README).
    #[default]
    Ignore,
    /// Raise the score of the lessons that carry one (`[retrieve] tag-boost`).
    Boost,
    /// Gate: a tagged lesson must carry one (unless the caller gave tags).
    Gate,
}

impl InferredTags {
    /// The spelling in `lesson.toml` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            InferredTags::Boost => "boost",
            InferredTags::Gate => "gate",
            InferredTags::Ignore => "ignore",
        }
    }
}

impl Default for RetrieveConfig {
    fn default() -> Self {
        RetrieveConfig {
            k: default_k(),
            budget: default_budget(),
            half_life_days: default_half_life_days(),
            min_similarity: default_min_similarity(),
            k1: default_k1(),
            b: default_b(),
            inferred_tags: InferredTags::default(),
            tag_boost: default_tag_boost(),
            max_cautions: default_max_cautions(),
            usage_weight: 0.0,
            model: None,
            semantic_weight: None,
            weights: FieldWeights::default(),
        }
    }
}

impl RetrieveConfig {
    /// The directory of `model`, resolved against the bank's root `bank` (none without one).
    pub fn model_dir(&self, bank: &Path) -> Option<std::path::PathBuf> {
        self.model.as_deref().map(|m| bank.join(m))
    }
}

/// `[retrieve.weights]`: how much a match in each field counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct FieldWeights {
    /// The title.
    #[serde(default = "default_weight_title")]
    pub title: f64,
    /// `trigger.description`.
    #[serde(default = "default_weight_description")]
    pub description: f64,
    /// `trigger.tags`.
    #[serde(default = "default_weight_tags")]
    pub tags: f64,
    /// The markdown body.
    #[serde(default = "default_weight_body")]
    pub body: f64,
    /// A whole-word match, relative to a trigram match.
    #[serde(default = "default_weight_words")]
    pub words: f64,
}

impl Default for FieldWeights {
    fn default() -> Self {
        FieldWeights {
            title: default_weight_title(),
            description: default_weight_description(),
            tags: default_weight_tags(),
            body: default_weight_body(),
            words: default_weight_words(),
        }
    }
}

fn default_k() -> usize {
    5
}
fn default_budget() -> usize {
    400
}
fn default_half_life_days() -> f64 {
    365.0
}
fn default_min_similarity() -> f64 {
    0.1
}
fn default_k1() -> f64 {
    6.0
}
fn default_b() -> f64 {
    0.75
}
fn default_tag_boost() -> f64 {
    1.5
}
fn default_max_cautions() -> usize {
    1
}
fn default_weight_title() -> f64 {
    5.0
}
fn default_weight_description() -> f64 {
    1.5
}
fn default_weight_tags() -> f64 {
    3.0
}
fn default_weight_body() -> f64 {
    1.0
}
fn default_weight_words() -> f64 {
    2.0
}

/// `[dedup]`: when two lessons are near-duplicates (`lesson dedup`, `lesson review`, `lesson add`).
///
/// A pair is reported when its trigram similarity of title + trigger description is at least
/// `min-text-similarity`, its targets overlap, and its score (the weighted mean of slug
/// similarity, text similarity and tag overlap) is at least `min-score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DedupConfig {
    /// Trigram similarity (Dice) of title + trigger description a pair needs at least (0 to 1).
    /// It also bounds the candidate search: pairs below it are never compared.
    #[serde(default = "default_min_text_similarity")]
    pub min_text_similarity: f64,
    /// The score a pair needs at least (0 to 1).
    #[serde(default = "default_min_score")]
    pub min_score: f64,
    /// Weight of slug similarity in the score.
    #[serde(default = "default_slug_weight")]
    pub slug_weight: f64,
    /// Weight of text similarity in the score.
    #[serde(default = "default_text_weight")]
    pub text_weight: f64,
    /// Weight of tag overlap (Jaccard of the tags) in the score; counts only when one of the
    /// two lessons has tags.
    #[serde(default = "default_tag_weight")]
    pub tag_weight: f64,
    /// Lessons compared with each lesson at most (the most promising first), so a bank of
    /// look-alikes stays linear.
    #[serde(default = "default_max_candidates")]
    pub max_candidates: usize,
    /// Index entries read at most per lesson while looking for its candidates, rarest terms
    /// first: the bound that keeps a bank of 100,000 lessons from going quadratic. Below it the
    /// search is exact (no pair above `min-text-similarity` is missed).
    #[serde(default = "default_max_postings")]
    pub max_postings: usize,
    /// With a model (`[retrieve] model`): the cosine of two lessons' embeddings at which they
    /// are a pair even when their words differ (0 to 1); such a pair's score counts the cosine
    /// in place of the text similarity when it is higher. Absent: the model's own
    /// (`Embedder::default_dedup_similarity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_semantic_similarity: Option<f64>,
}

impl Default for DedupConfig {
    fn default() -> Self {
        DedupConfig {
            min_text_similarity: default_min_text_similarity(),
            min_score: default_min_score(),
            slug_weight: default_slug_weight(),
            text_weight: default_text_weight(),
            tag_weight: default_tag_weight(),
            max_candidates: default_max_candidates(),
            max_postings: default_max_postings(),
            min_semantic_similarity: None,
        }
    }
}

fn default_min_text_similarity() -> f64 {
    0.6
}
fn default_min_score() -> f64 {
    0.65
}
fn default_slug_weight() -> f64 {
    1.0
}
fn default_text_weight() -> f64 {
    2.0
}
fn default_tag_weight() -> f64 {
    0.5
}
fn default_max_candidates() -> usize {
    100
}
fn default_max_postings() -> usize {
    8000
}

/// A configured rule level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Report as an error.
    Error,
    /// Report as a warning.
    Warning,
    /// Report as information.
    Info,
    /// Do not run the rule.
    Off,
}

/// The keys of `[lint.rules]` with their positions, for an error message.
#[derive(Deserialize, Default)]
struct RuleKeys {
    #[serde(default)]
    lint: RuleKeysLint,
}

#[derive(Deserialize, Default)]
struct RuleKeysLint {
    #[serde(default)]
    rules: BTreeMap<toml::Spanned<String>, toml::Value>,
}

/// The entries of `[banks] include` with their positions, for an error message.
#[derive(Deserialize, Default)]
struct IncludeKeys {
    #[serde(default)]
    banks: IncludeKeysBanks,
}

#[derive(Deserialize, Default)]
struct IncludeKeysBanks {
    #[serde(default)]
    include: Vec<toml::Spanned<String>>,
}

/// The spans of `[retrieve]`'s semantic keys, for an error message.
#[derive(Deserialize, Default)]
struct SemanticKeys {
    #[serde(default)]
    retrieve: SemanticKeysRetrieve,
}

#[derive(Deserialize, Default)]
struct SemanticKeysRetrieve {
    model: Option<toml::Spanned<toml::Value>>,
    #[serde(rename = "semantic-weight")]
    semantic_weight: Option<toml::Spanned<toml::Value>>,
}

impl RetrieveConfig {
    /// The checks serde cannot make: `model` names a directory (not empty, no NUL), and
    /// `semantic-weight` is a number from 0 to 1; an error points at the value.
    fn check(&self, text: &str, path: &str) -> Result<(), ConfigError> {
        let problem = match &self.model {
            Some(m) if m.trim().is_empty() => Some(("model", "must name a model directory")),
            Some(m) if m.contains('\0') => Some(("model", "must not contain a NUL character")),
            _ => None,
        }
        .or_else(|| {
            let w = self.semantic_weight?;
            (!(0.0..=1.0).contains(&w)).then_some(("semantic-weight", "must be from 0 to 1"))
        });
        let Some((key, message)) = problem else {
            return Ok(());
        };
        let keys = toml::from_str::<SemanticKeys>(text).unwrap_or_default();
        let span = match key {
            "model" => keys.retrieve.model,
            _ => keys.retrieve.semantic_weight,
        };
        let offset = span
            .map(|s| s.span().start)
            .or_else(|| text.find("[retrieve]"))
            .unwrap_or(0);
        Err(invalid_at(
            text,
            path,
            offset,
            format!("[retrieve] {key}: {message}"),
        ))
    }
}

/// `lesson.toml` could not be read or is invalid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The TOML is invalid or has unknown keys.
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl Config {
    /// Read `lesson.toml` from a bank directory; defaults when the file does not exist.
    pub fn load(bank: &Path) -> Result<Config, ConfigError> {
        let path = bank.join(CONFIG_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => {
                return Err(ConfigError::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Config::parse(&text, &path.display().to_string())
    }

    /// Parse configuration text; `path` is for messages. Which rules the keys of `[lint.rules]`
    /// name is the linter's to say ([`crate::lint::check_config`]).
    pub fn parse(text: &str, path: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            invalid_at(
                text,
                path,
                e.span().map_or(0, |s| s.start),
                e.message().to_string(),
            )
        })?;
        config.retrieve.check(text, path)?;
        Ok(config)
    }

    /// An error at the key `key` of `[lint.rules]` in the configuration text `text`.
    pub fn rule_key_error(text: &str, path: &str, key: &str, message: String) -> ConfigError {
        let offset = toml::from_str::<RuleKeys>(text)
            .ok()
            .and_then(|keys| keys.lint.rules.into_keys().find(|k| *k.get_ref() == key))
            .map_or(0, |k| k.span().start);
        invalid_at(text, path, offset, format!("[lint.rules]: {message}"))
    }

    /// An error at the `index`th entry of `[banks] include` in the configuration text `text`
    /// (at the table's start when the entry cannot be found).
    pub fn include_error(text: &str, path: &str, index: usize, message: String) -> ConfigError {
        let offset = toml::from_str::<IncludeKeys>(text)
            .ok()
            .and_then(|keys| keys.banks.include.get(index).map(|k| k.span().start))
            .or_else(|| text.find("[banks]"))
            .unwrap_or(0);
        invalid_at(text, path, offset, format!("[banks] include: {message}"))
    }

    /// The resolved configuration as TOML, every default spelled out.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes")
    }
}

/// A configuration error at a byte offset of its text.
fn invalid_at(text: &str, path: &str, offset: usize, message: String) -> ConfigError {
    let source = crate::source::Source::new(path, text.to_string());
    let (line, column) = source.line_col(offset);
    ConfigError::Invalid {
        path: path.to_string(),
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_has_position() {
        let err = Config::parse("[lint]\nsize-limt = 3\n", "lesson.toml").unwrap_err();
        let ConfigError::Invalid { line, column, .. } = err else {
            panic!()
        };
        assert_eq!((line, column), (2, 1));
    }

    #[test]
    fn levels_parse() {
        let c = Config::parse(
            "[lint.rules]\nS006 = \"warning\"\nmissing-section = \"off\"\n",
            "x",
        )
        .unwrap();
        assert_eq!(c.lint.rules["S006"], Level::Warning);
        assert_eq!(c.lint.rules["missing-section"], Level::Off);
        assert_eq!(c.lint.size_limit, 1024 * 1024);
    }

    #[test]
    fn the_semantic_keys_are_optional_and_checked_at_their_value() {
        let none = Config::parse("[retrieve]\nk = 3\n", "x").unwrap();
        assert_eq!(none.retrieve.model, None);
        assert_eq!(none.retrieve.model_dir(Path::new("/bank")), None);
        assert_eq!(none.retrieve.semantic_weight, None, "the model's own");
        assert!(!none.to_toml().contains("model ="), "absent, not printed");

        let c = Config::parse(
            "[retrieve]\nmodel = \"models/minilm\"\nsemantic-weight = 0.3\n",
            "x",
        )
        .unwrap();
        assert_eq!(
            c.retrieve.model_dir(Path::new("/bank")),
            Some(Path::new("/bank/models/minilm").to_path_buf())
        );
        assert_eq!(c.retrieve.semantic_weight, Some(0.3));
        assert!(c.to_toml().contains("model = \"models/minilm\""));
        let abs = Config::parse("[retrieve]\nmodel = \"/opt/m\"\n", "x").unwrap();
        assert_eq!(
            abs.retrieve.model_dir(Path::new("/bank")),
            Some(Path::new("/opt/m").to_path_buf())
        );

        let at = |text: &str| match Config::parse(text, "lesson.toml").unwrap_err() {
            ConfigError::Invalid {
                line,
                column,
                message,
                ..
            } => (line, column, message),
            other => panic!("{other}"),
        };
        assert_eq!(
            at("[retrieve]\nk = 3\nsemantic-weight = 1.5\n"),
            (
                3,
                19,
                "[retrieve] semantic-weight: must be from 0 to 1".into()
            )
        );
        let (line, column, message) = at("[retrieve]\nmodel = \" \"\n");
        assert_eq!((line, column), (2, 9));
        assert!(message.contains("model directory"), "{message}");
        assert!(at("[retrieve]\nsemantic-weight = nan\n")
            .2
            .contains("0 to 1"));
        assert!(at("[retrieve]\nmodel = 3\n").2.contains("string"));
    }

    #[test]
    fn mixed_band() {
        let r = ReviewConfig::default();
        assert!(r.in_mixed_band(3, 3));
        assert!(r.in_mixed_band(6, 3));
        assert!(!r.in_mixed_band(7, 3));
        assert!(!r.in_mixed_band(2, 2));
        let c = Config::parse("[review]\nmixed-min = 0\nmixed-ratio = 0.8\n", "x").unwrap();
        assert!(!c.review.in_mixed_band(0, 0));
        assert!(c.review.in_mixed_band(4, 5));
        assert!(Config::parse("[review]\nmixed = 1\n", "x").is_err());
    }
}
