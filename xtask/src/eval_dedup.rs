//! `cargo xtask eval-dedup [DIR]`: precision and recall of `lesson dedup` on the near-duplicate
//! material of the shared corpora (DIR, default `$LESSON_CORPORA_DIR`, else `../shared/corpora`
//! next to the checkout).
//!
//! Each set becomes a throwaway bank under `target/bench/eval-dedup/<set>/bank`, one lesson per
//! record, no tags and no targets (the material has none; inventing them from the grouping would
//! leak the answer). `lesson dedup --format json` runs on it once per (slug weight,
//! `min-text-similarity`) with `min-score = 0`; the pairs it prints carry their score, so each
//! `min-score` of the grid is the same run's pairs filtered by `score >= min-score`, exactly what
//! the library does with that threshold (candidates do not depend on `min-score`).
//!
//! Ground truth, derived from the material alone (never from text similarity):
//! - **reflexion** (`reflexion-reflections/reflections.jsonl`): a lesson per line that names
//!   its task (`task_id` not null: the HumanEval programming runs, webshop and alfworld; 1,747
//!   of 4,013 lines), with title = the text's first sentence and description = the whole text.
//!   Two lessons are duplicates when they reflect on the same task: same `source` and
//!   `task_id`, across runs and files. Lines without a `task_id` are left out: their task is
//!   known only within one file (consecutive lines), and the same MBPP task run by another
//!   file would count as a false positive though it is the same task. A same-task pair may
//!   still be two different lessons (two bugs of one function), and two tasks can fail alike,
//!   so neither figure is exact; exact-repeat recall (pairs whose texts are identical) is
//!   reported beside them and must be 1.
//! - **cheatsheet** (`dynamic-cheatsheet/memory_item_versions.jsonl`): a lesson per item version
//!   (title = `header` without its `(Reference: …)` suffix, description = `description` without
//!   its first line, which repeats the header). Two versions are duplicates when their headers
//!   are equal after removing the suffix, lowercasing and collapsing whitespace, in any file: the
//!   revisions of one item across rounds, and the same item written by another run. Positives
//!   therefore share their title by construction, so this set mostly tests precision (distinct
//!   items that read alike) and that description drift does not break a pair.
//!
//! Slugs come from the titles (lowercase ASCII words joined by `-`, at most 60 characters, `-2`,
//! `-3`… on collision), as a writer of `lesson add` would make them.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};

use crate::bench::table::{Align, Table};
use crate::bench::{tools, Paths};

/// What to evaluate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Options {
    /// The corpora directory.
    pub dir: Option<PathBuf>,
    /// A model directory: also evaluate with `[retrieve] model` set to it.
    pub model: Option<PathBuf>,
}

/// The grid: `min-text-similarity` values (one `lesson dedup` run each, per slug weight).
const MIN_TEXT: [f64; 7] = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];
/// The grid: `min-score` values (filters of each run's pairs).
const MIN_SCORE: [f64; 7] = [0.0, 0.5, 0.6, 0.65, 0.7, 0.8, 0.9];
/// The grid: slug weights (text weight fixed at 2).
const SLUG_WEIGHT: [f64; 3] = [0.0, 1.0, 2.0];
/// The grid with a model: `min-semantic-similarity` values (one `lesson dedup` run each).
const MIN_SEMANTIC: [f64; 8] = [0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0];

/// One record as a lesson, and its ground-truth group.
struct Record {
    title: String,
    description: String,
    body: String,
    /// Records in the same group are duplicates of each other.
    group: String,
    /// For exact-repeat recall: the record's full text.
    text: String,
}

/// A set of records.
struct Set {
    name: &'static str,
    records: Vec<Record>,
}

/// Precision, recall and counts of one configuration.
#[derive(Clone, Copy, Default)]
struct Score {
    found: usize,
    true_found: usize,
    positives: usize,
}

impl Score {
    fn precision(self) -> f64 {
        if self.found == 0 {
            1.0
        } else {
            self.true_found as f64 / self.found as f64
        }
    }
    fn recall(self) -> f64 {
        if self.positives == 0 {
            1.0
        } else {
            self.true_found as f64 / self.positives as f64
        }
    }
    fn f1(self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

/// Run the evaluation.
pub fn run(options: &Options) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let corpora = match &options.dir {
        Some(dir) => dir.clone(),
        None => match std::env::var_os("LESSON_CORPORA_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => paths.root.join("../shared/corpora"),
        },
    };
    if !corpora.is_dir() {
        bail!(
            "no corpora at {} (pass the directory, or set LESSON_CORPORA_DIR)",
            corpora.display()
        );
    }
    let model = match &options.model {
        Some(dir) if dir.join("config.json").is_file() => Some(
            dir.canonicalize()
                .with_context(|| format!("cannot resolve {}", dir.display()))?,
        ),
        Some(dir) => bail!(
            "{} is no model directory (see `cargo xtask model`)",
            dir.display()
        ),
        None => None,
    };
    // the semantic build first: the plain one is built again after it
    let semantic = match &model {
        Some(dir) => Some((tools::build_lesson_semantic(&paths)?, dir.clone())),
        None => None,
    };
    let lesson = tools::build_lesson(&paths)?;
    let defaults = default_dedup(&lesson)?;
    let sets = [reflexion(&corpora)?, cheatsheet(&corpora)?];
    let mut report = String::new();
    for set in &sets {
        report += &evaluate(&paths, &lesson, set, &defaults)?;
        if let Some((lesson, model)) = &semantic {
            report += &evaluate_semantic(&paths, lesson, model, set, &defaults)?;
        }
    }
    print!("{report}");
    let out = paths.bench().join("eval-dedup.txt");
    std::fs::write(&out, &report).with_context(|| format!("cannot write {}", out.display()))?;
    println!("report written to {}", out.display());
    Ok(())
}

/// The `[dedup]` defaults, as `lesson config` prints them on a bank without `lesson.toml`.
fn default_dedup(lesson: &Path) -> anyhow::Result<HashMap<String, f64>> {
    let tmp = std::env::temp_dir().join(format!("eval-dedup-defaults-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let out = Command::new(lesson)
        .args(["config", "--dir"])
        .arg(&tmp)
        .output()
        .context("cannot run lesson config")?;
    std::fs::remove_dir(&tmp).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut values = HashMap::new();
    let mut in_dedup = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_dedup = line.trim() == "[dedup]";
        } else if let (true, Some((k, v))) = (in_dedup, line.split_once('=')) {
            if let Ok(v) = v.trim().parse::<f64>() {
                values.insert(k.trim().to_string(), v);
            }
        }
    }
    for key in [
        "min-text-similarity",
        "min-score",
        "slug-weight",
        "text-weight",
    ] {
        if !values.contains_key(key) {
            bail!("`lesson config` prints no [dedup] {key}");
        }
    }
    Ok(values)
}

fn evaluate(
    paths: &Paths,
    lesson: &Path,
    set: &Set,
    defaults: &HashMap<String, f64>,
) -> anyhow::Result<String> {
    let work = paths.bench().join("eval-dedup").join(set.name);
    let bank = work.join("bank");
    if bank.exists() {
        std::fs::remove_dir_all(&bank)
            .with_context(|| format!("cannot remove {}", bank.display()))?;
    }
    let slugs = write_bank(&bank, &set.records)?;
    let group_of: HashMap<&str, &str> = slugs
        .iter()
        .zip(&set.records)
        .map(|(s, r)| (s.as_str(), r.group.as_str()))
        .collect();
    let text_of: HashMap<&str, &str> = slugs
        .iter()
        .zip(&set.records)
        .map(|(s, r)| (s.as_str(), r.text.as_str()))
        .collect();
    let positives = pairs_within(set.records.iter().map(|r| r.group.as_str()));
    let repeats = pairs_within(set.records.iter().map(|r| r.text.as_str()));
    let groups: HashSet<&str> = set.records.iter().map(|r| r.group.as_str()).collect();
    let loaded = count_lessons(lesson, &bank)?;
    if loaded != set.records.len() {
        bail!(
            "{}: wrote {} lessons but lesson loads {loaded}",
            bank.display(),
            set.records.len()
        );
    }
    let mut out = format!(
        "\n== {}: {} lessons in {} ground-truth groups, {} duplicate pairs ({} of them exact repeats)\n\
         bank: {}\n",
        set.name,
        set.records.len(),
        groups.len(),
        positives,
        repeats,
        bank.display()
    );
    let default_text = defaults["text-weight"];
    let mut at_defaults = None;
    for slug_weight in SLUG_WEIGHT {
        let mut table = grid("min-text \\ min-score");
        let mut slowest = 0.0f64;
        for min_text in MIN_TEXT {
            std::fs::write(
                bank.join("lesson.toml"),
                config(min_text, 0.0, slug_weight, default_text),
            )?;
            let started = Instant::now();
            let pairs = run_dedup(lesson, &bank)?;
            slowest = slowest.max(started.elapsed().as_secs_f64());
            let mut row = vec![format!("{min_text:.1}")];
            for min_score in MIN_SCORE {
                let kept: Vec<&(String, String, f64)> =
                    pairs.iter().filter(|p| p.2 >= min_score).collect();
                let found = score(&pairs, min_score, &group_of, positives);
                row.push(format!("{:.2}/{:.2}", found.precision(), found.recall()));
                let is_default = (slug_weight - defaults["slug-weight"]).abs() < 1e-9
                    && (min_text - defaults["min-text-similarity"]).abs() < 1e-9
                    && (min_score - defaults["min-score"]).abs() < 1e-9;
                if is_default {
                    let repeats_found = kept
                        .iter()
                        .filter(|p| text_of[p.0.as_str()] == text_of[p.1.as_str()])
                        .count();
                    at_defaults = Some((found, repeats_found));
                }
            }
            table.row(row);
        }
        writeln!(
            out,
            "\nprecision/recall, slug-weight {slug_weight}, text-weight {default_text}, no tags \
             (slowest lesson dedup run: {slowest:.2} s):"
        )?;
        out += &table.render();
    }
    // the defaults once more without the caps: what `max-postings` and `max-candidates` cost
    std::fs::write(
        bank.join("lesson.toml"),
        config(
            defaults["min-text-similarity"],
            defaults["min-score"],
            defaults["slug-weight"],
            default_text,
        ) + "max-candidates = 1000000000\nmax-postings = 1000000000\n",
    )?;
    let uncapped = run_dedup(lesson, &bank)?.len();
    match at_defaults {
        Some((s, _)) if s.found != uncapped => writeln!(
            out,
            "\nthe caps cost pairs: {} found with them, {uncapped} without",
            s.found
        )?,
        Some(_) => writeln!(
            out,
            "\nthe caps cost no pair: {uncapped} found without them too"
        )?,
        None => {}
    }
    match at_defaults {
        Some((s, repeats_found)) => writeln!(
            out,
            "\nat the defaults (min-text-similarity {}, min-score {}, slug-weight {}, text-weight {}):\n  \
             precision {:.3}  recall {:.3}  F1 {:.3}  pairs found {}  true {}  false {}  missed {}  \
             exact repeats found {}/{}",
            defaults["min-text-similarity"],
            defaults["min-score"],
            defaults["slug-weight"],
            default_text,
            s.precision(),
            s.recall(),
            s.f1(),
            s.found,
            s.true_found,
            s.found - s.true_found,
            s.positives - s.true_found,
            repeats_found,
            repeats
        )?,
        None => writeln!(
            out,
            "\nthe defaults are not on the grid; run `lesson dedup` on {} to see them",
            bank.display()
        )?,
    }
    Ok(out)
}

/// With `[retrieve] model = model`: the defaults (`min-semantic-similarity` the model's own),
/// then precision/recall by `min-semantic-similarity` and `min-score`, the other thresholds at
/// their defaults, on the bank [`evaluate`] wrote.
fn evaluate_semantic(
    paths: &Paths,
    lesson: &Path,
    model: &Path,
    set: &Set,
    defaults: &HashMap<String, f64>,
) -> anyhow::Result<String> {
    let bank = paths.bench().join("eval-dedup").join(set.name).join("bank");
    let slugs = slug_order(&bank, set)?;
    let group_of: HashMap<&str, &str> = slugs
        .iter()
        .zip(&set.records)
        .map(|(s, r)| (s.as_str(), r.group.as_str()))
        .collect();
    let positives = pairs_within(set.records.iter().map(|r| r.group.as_str()));
    let score_of =
        |pairs: &[(String, String, f64)], min_score| score(pairs, min_score, &group_of, positives);
    let base = |min_score: f64| {
        config(
            defaults["min-text-similarity"],
            min_score,
            defaults["slug-weight"],
            defaults["text-weight"],
        )
    };
    let retrieve = format!(
        "\n[retrieve]\nmodel = {}\n",
        serde_json::to_string(&model.to_string_lossy())?
    );
    // no index yet: the first run embeds every lesson
    if bank.join(".lesson").exists() {
        std::fs::remove_dir_all(bank.join(".lesson"))?;
    }
    std::fs::write(
        bank.join("lesson.toml"),
        base(defaults["min-score"]) + &retrieve,
    )?;
    let started = Instant::now();
    let at_defaults = score_of(&run_dedup(lesson, &bank)?, defaults["min-score"]);
    let first = started.elapsed().as_secs_f64();
    let mut table = grid("min-semantic \\ min-score");
    let mut slowest = 0.0f64;
    for min_semantic in MIN_SEMANTIC {
        std::fs::write(
            bank.join("lesson.toml"),
            base(0.0) + &format!("min-semantic-similarity = {min_semantic:?}\n") + &retrieve,
        )?;
        let started = Instant::now();
        let pairs = run_dedup(lesson, &bank)?;
        slowest = slowest.max(started.elapsed().as_secs_f64());
        let mut row = vec![format!("{min_semantic:.2}")];
        for min_score in MIN_SCORE {
            let s = score_of(&pairs, min_score);
            row.push(format!("{:.2}/{:.2}", s.precision(), s.recall()));
        }
        table.row(row);
    }
    let mut out = String::new();
    writeln!(
        out,
        "\nwith [retrieve] model = {}: precision/recall, min-text-similarity {}, slug-weight {}, \
         text-weight {}, no tags (first run, embedding every lesson: {first:.2} s; slowest \
         later run: {slowest:.2} s):",
        model.display(),
        defaults["min-text-similarity"],
        defaults["slug-weight"],
        defaults["text-weight"],
    )?;
    out += &table.render();
    writeln!(
        out,
        "\nwith the model, at the defaults (min-semantic-similarity: the model's own):\n  \
         precision {:.3}  recall {:.3}  F1 {:.3}  pairs found {}  true {}  false {}  missed {}",
        at_defaults.precision(),
        at_defaults.recall(),
        at_defaults.f1(),
        at_defaults.found,
        at_defaults.true_found,
        at_defaults.found - at_defaults.true_found,
        at_defaults.positives - at_defaults.true_found,
    )?;
    Ok(out)
}

/// The slugs [`write_bank`] gave `set`'s records, in record order (the same titles give the
/// same slugs).
fn slug_order(bank: &Path, set: &Set) -> anyhow::Result<Vec<String>> {
    let mut taken = HashSet::new();
    let slugs: Vec<String> = set
        .records
        .iter()
        .map(|r| slug_for(&r.title, &mut taken))
        .collect();
    if let Some(missing) = slugs
        .iter()
        .find(|s| !bank.join(format!("{s}.md")).is_file())
    {
        bail!("{}: no lesson {missing}.md", bank.display());
    }
    Ok(slugs)
}

/// A precision/recall table: `corner` names its rows and columns, the first row the
/// `min-score` columns.
fn grid(corner: &'static str) -> Table {
    let mut table = Table::new(
        std::iter::once((corner, Align::Left))
            .chain(MIN_SCORE.iter().map(|_| ("", Align::Right)))
            .collect(),
    );
    table.row(
        std::iter::once(String::new())
            .chain(MIN_SCORE.iter().map(|s| format!("{s}")))
            .collect(),
    );
    table
}

/// The pairs of `pairs` (a, b, score) scoring at least `min_score`, against the ground truth.
fn score(
    pairs: &[(String, String, f64)],
    min_score: f64,
    group_of: &HashMap<&str, &str>,
    positives: usize,
) -> Score {
    let kept = pairs.iter().filter(|p| p.2 >= min_score);
    Score {
        found: kept.clone().count(),
        true_found: kept
            .filter(|p| group_of[p.0.as_str()] == group_of[p.1.as_str()])
            .count(),
        positives,
    }
}

/// Unordered pairs of items with equal keys.
fn pairs_within<'a>(keys: impl Iterator<Item = &'a str>) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for k in keys {
        *counts.entry(k).or_default() += 1;
    }
    counts.values().map(|n| n * (n - 1) / 2).sum()
}

fn config(min_text: f64, min_score: f64, slug_weight: f64, text_weight: f64) -> String {
    format!(
        "# written by `cargo xtask eval-dedup`\n[lint.rules]\nindex-stale = \"off\"\n\n\
         [dedup]\nmin-text-similarity = {min_text:?}\nmin-score = {min_score:?}\n\
         slug-weight = {slug_weight:?}\ntext-weight = {text_weight:?}\n"
    )
}

/// `lesson dedup --format json`: (a, b, score) per pair.
fn run_dedup(lesson: &Path, bank: &Path) -> anyhow::Result<Vec<(String, String, f64)>> {
    let out = Command::new(lesson)
        .args(["dedup", "--format", "json", "--dir"])
        .arg(bank)
        .env_remove("LESSON_DIR")
        .output()
        .context("cannot run lesson dedup")?;
    if !out.status.success() {
        bail!(
            "lesson dedup failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("lesson dedup printed no JSON")?;
    json.as_array()
        .context("lesson dedup --format json printed no array")?
        .iter()
        .map(|p| {
            Ok((
                p["a"].as_str().context("a pair without `a`")?.to_string(),
                p["b"].as_str().context("a pair without `b`")?.to_string(),
                p["score"].as_f64().context("a pair without `score`")?,
            ))
        })
        .collect()
}

/// How many lessons `lesson list` sees.
fn count_lessons(lesson: &Path, bank: &Path) -> anyhow::Result<usize> {
    let out = Command::new(lesson)
        .args(["list", "--format", "json", "--dir"])
        .arg(bank)
        .env_remove("LESSON_DIR")
        .output()
        .context("cannot run lesson list")?;
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("lesson list printed no JSON")?;
    Ok(json.as_array().map_or(0, Vec::len))
}

/// Write one lesson per record; returns the slugs in record order.
fn write_bank(bank: &Path, records: &[Record]) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(bank).with_context(|| format!("cannot create {}", bank.display()))?;
    let mut taken = HashSet::new();
    let mut slugs = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let slug = slug_for(&r.title, &mut taken);
        let mut s = String::with_capacity(r.description.len() + r.body.len() + 512);
        s += "---\nschema: learning/v1\n";
        writeln!(s, "slug: {slug}")?;
        writeln!(s, "title: {}", quote(&r.title))?;
        writeln!(s, "trigger:\n  description: {}", quote(&r.description))?;
        s += "outcome: failure\nevidence:\n  - kind: run\n";
        writeln!(s, "    ref: \"record-{i}\"\n---\n\n# {}\n", r.title)?;
        s += "## What to do (or avoid)\n\n";
        s += r.body.trim();
        s.push('\n');
        let path = bank.join(format!("{slug}.md"));
        std::fs::write(&path, s).with_context(|| format!("cannot write {}", path.display()))?;
        slugs.push(slug);
    }
    Ok(slugs)
}

/// A YAML double-quoted scalar (JSON's escapes are YAML's), control characters dropped.
fn quote(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).collect();
    serde_json::to_string(&clean).expect("strings serialize")
}

/// Lowercase ASCII words of `title` joined by `-`, at most 60 characters, unique in `taken`.
fn slug_for(title: &str, taken: &mut HashSet<String>) -> String {
    let mut base = String::new();
    for word in title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_ascii_lowercase();
        if base.len() + word.len() + 1 > 60 {
            break;
        }
        if !base.is_empty() {
            base.push('-');
        }
        base += &word;
    }
    let base = base.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
    let base = if base.len() < 2 {
        format!("lesson-{base}").trim_end_matches('-').to_string()
    } else {
        base.to_string()
    };
    let mut slug = base.clone();
    let mut n = 2;
    while !taken.insert(slug.clone()) {
        slug = format!("{base}-{n}");
        n += 1;
    }
    slug
}

/// Whitespace runs made one space, at most `max` characters, cut after a whole word.
fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    match cut.rfind(' ') {
        Some(i) if i > 0 => cut[..i].to_string(),
        _ => cut,
    }
}

fn read_jsonl(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1))
        })
        .collect()
}

/// The reflexion reflections, grouped by task (see the module docs).
fn reflexion(corpora: &Path) -> anyhow::Result<Set> {
    let rows = read_jsonl(&corpora.join("reflexion-reflections/reflections.jsonl"))?;
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        let text = row["text"].as_str().unwrap_or_default();
        let source = row["source"].as_str().unwrap_or_default();
        let Some(task) = row["task_id"].as_str() else {
            continue;
        };
        let group = format!("{source}\t{task}");
        let flat = one_line(text, usize::MAX);
        let sentence = flat.find(". ").map_or(flat.as_str(), |end| &flat[..=end]);
        records.push(Record {
            title: one_line(sentence, 120),
            description: one_line(&flat, 1000),
            body: text.to_string(),
            group,
            text: flat,
        });
    }
    Ok(Set {
        name: "reflexion",
        records,
    })
}

/// A header without its `(Reference: …)` suffix.
fn strip_reference(header: &str) -> &str {
    let h = header.trim();
    match h.rfind('(') {
        Some(i) if h.ends_with(')') && h[i..].to_ascii_lowercase().starts_with("(ref") => {
            h[..i].trim_end()
        }
        _ => h,
    }
}

/// The dynamic-cheatsheet item versions, grouped by item (see the module docs).
fn cheatsheet(corpora: &Path) -> anyhow::Result<Set> {
    let rows = read_jsonl(&corpora.join("dynamic-cheatsheet/memory_item_versions.jsonl"))?;
    let mut records = Vec::with_capacity(rows.len());
    for row in &rows {
        let header = row["header"].as_str().unwrap_or_default();
        let description = row["description"].as_str().unwrap_or_default();
        let example = row["example"].as_str().unwrap_or_default();
        let title = one_line(strip_reference(header), 120);
        let rest = match description.split_once('\n') {
            Some((first, rest)) if first.trim() == header.trim() => rest,
            _ => description,
        };
        let group = title
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        records.push(Record {
            description: one_line(if rest.trim().is_empty() { &title } else { rest }, 1000),
            title,
            body: example.to_string(),
            group,
            text: one_line(&format!("{header}\n{description}\n{example}"), usize::MAX),
        });
    }
    Ok(Set {
        name: "cheatsheet",
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_valid_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(
            slug_for("Retry flaky tests.", &mut taken),
            "retry-flaky-tests"
        );
        assert_eq!(
            slug_for("Retry flaky tests!", &mut taken),
            "retry-flaky-tests-2"
        );
        assert_eq!(slug_for("3D Geometry", &mut taken), "d-geometry");
        assert_eq!(slug_for("数据", &mut taken), "lesson");
        assert!(slug_for(&"word ".repeat(40), &mut taken).len() <= 60);
    }

    #[test]
    fn references_are_stripped_from_headers() {
        assert_eq!(
            strip_reference("Systematic Framework (Reference: Q1, Q2)"),
            "Systematic Framework"
        );
        assert_eq!(strip_reference("Power (of a point)"), "Power (of a point)");
    }

    #[test]
    fn pairs_within_groups() {
        assert_eq!(pairs_within(["a", "a", "b", "a", "c", "c"].into_iter()), 4);
    }
}
