//! Synthetic banks: realistic, valid AIP-11 lessons from a fixed seed, identical on every machine.
//!
//! Lesson `i` depends only on the seed and on lessons `0..i`, so a smaller bank is a prefix of a
//! larger one. A bank is written to `banks/<n>/` and stamped in `banks/<n>.stamp`; it is reused
//! while the stamp matches [`GENERATOR_VERSION`]. Bump the version whenever the output changes.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::prng::SplitMix64;
use vocabulary::{
    ADJECTIVES, BULLETS, CONNECTIVES, CONTEXTS, COUNTER_EXAMPLES, DESCRIPTIONS, DESCRIPTION_TAILS,
    EVIDENCE_KINDS, NOTES, NOUNS, PROJECTS, ROLES, SOURCES, STATES, TAGS, TARGETS, VERBS,
    WHEN_SENTENCES,
};

#[rustfmt::skip]
mod vocabulary;

/// The generator's version; part of the stamp.
pub const GENERATOR_VERSION: u32 = 3;
const SEED: u64 = 0x1e55_0b4e_2026_0011;
/// The seed of the search bench's query set.
const QUERY_SEED: u64 = 0x5ea2_c4ed_2026_0011;
/// Lines are wrapped like a formatter would, at this width.
const WIDTH: usize = 80;

/// A bank on disk.
pub struct SyntheticBank {
    /// Its directory.
    pub dir: PathBuf,
    /// How many lessons it holds.
    pub lessons: usize,
    /// Total bytes of its lesson files.
    pub bytes: u64,
    /// Whether it was already there.
    pub reused: bool,
}

/// The bank of `lessons` lessons under `banks`, generated unless a matching stamp exists.
pub fn ensure(banks: &Path, lessons: usize) -> anyhow::Result<SyntheticBank> {
    let dir = banks.join(lessons.to_string());
    let stamp = banks.join(format!("{lessons}.stamp"));
    let expected = stamp_line(lessons);
    if let Ok(text) = std::fs::read_to_string(&stamp) {
        let mut lines = text.lines();
        let bytes = lines
            .nth(1)
            .and_then(|l| l.strip_prefix("bytes ")?.parse().ok());
        if let (true, Some(bytes), true) = (text.starts_with(&expected), bytes, dir.is_dir()) {
            return Ok(SyntheticBank {
                dir,
                lessons,
                bytes,
                reused: true,
            });
        }
    }
    let _ = std::fs::remove_file(&stamp);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    eprintln!("generating {lessons} lessons in {}", dir.display());
    let started = std::time::Instant::now();
    let bytes = write_bank(&dir, lessons)?;
    eprintln!("generated in {:.1?}", started.elapsed());
    std::fs::write(&stamp, format!("{expected}\nbytes {bytes}\n"))
        .with_context(|| format!("cannot write {}", stamp.display()))?;
    Ok(SyntheticBank {
        dir,
        lessons,
        bytes,
        reused: false,
    })
}

/// The search bench's queries: `count` short lowercase phrases drawn from a fixed seed out of the
/// words titles are made of, so that each occurs verbatim (ignoring case) in some lessons of
/// every bank size and `rg -i -F` finds it. They cycle through five shapes a user might type:
/// `stale lockfile`, `webhook times out`, `rate limit`, `retry the flaky webhook` (the start of
/// one of the first 1,000 lessons' titles, which every bank of 1,000 or more holds) and
/// `incident response`.
pub fn queries(count: usize) -> Vec<String> {
    let mut rng = SplitMix64::new(QUERY_SEED);
    let titles: Vec<String> = lessons_iter()
        .take(1000)
        .filter_map(|(_, text)| {
            let title = text.lines().find_map(|l| l.strip_prefix("# "))?;
            let end = CONNECTIVES
                .iter()
                .filter_map(|c| title.find(&format!(" {c} the ")))
                .min()?;
            Some(title[..end].to_string())
        })
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(count);
    while out.len() < count {
        let q = match out.len() % 5 {
            0 => format!("{} {}", rng.pick(ADJECTIVES), rng.pick(NOUNS)),
            1 => format!("{} {}", rng.pick(NOUNS), rng.pick(STATES)),
            2 => rng.pick(NOUNS).to_string(),
            3 => titles[rng.below(titles.len())].clone(),
            _ => rng.pick(CONTEXTS).to_string(),
        }
        .to_lowercase();
        if !out.contains(&q) {
            out.push(q);
        }
    }
    out
}

fn stamp_line(lessons: usize) -> String {
    format!("generator {GENERATOR_VERSION} seed {SEED:#x} lessons {lessons}")
}

fn write_bank(dir: &Path, lessons: usize) -> anyhow::Result<u64> {
    std::fs::write(
        dir.join("lesson.toml"),
        format!(
            "# A synthetic bank written by `cargo xtask bench` (generator {GENERATOR_VERSION}).\n\
             # Its lessons carry counts but no ledgers (a bank that predates them): L004 is off,\n\
             # as the README says for such a bank, so that lint measures a clean bank.\n\
             [lint.rules]\nunledgered-counts = \"off\"\n"
        ),
    )?;
    let mut bytes = 0;
    for (slug, text) in lessons_iter().take(lessons) {
        let path = dir.join(format!("{slug}.md"));
        std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
        bytes += text.len() as u64;
    }
    Ok(bytes)
}

/// The infinite sequence of lessons: (slug, file text).
pub fn lessons_iter() -> impl Iterator<Item = (String, String)> {
    let mut rng = SplitMix64::new(SEED);
    let mut slugs: Vec<String> = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut superseded: HashSet<String> = HashSet::new();
    std::iter::from_fn(move || {
        let lesson = Lesson::random(&mut rng, &slugs, &mut taken, &mut superseded);
        let text = lesson.render();
        slugs.push(lesson.slug.clone());
        Some((lesson.slug, text))
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Success,
    Failure,
    Mixed,
}

struct Evidence {
    kind: &'static str,
    reference: String,
    note: Option<String>,
}

/// One lesson before rendering.
struct Lesson {
    slug: String,
    title: String,
    description: String,
    tags: Vec<&'static str>,
    targets: Vec<(&'static str, &'static str)>,
    outcome: Outcome,
    evidence: Vec<Evidence>,
    confidence: usize,
    success_count: usize,
    failure_count: usize,
    supersedes: Vec<String>,
    expires_at: Option<String>,
    when: String,
    bullets: Vec<String>,
    counter_example: String,
}

/// The random words one lesson is about; templates draw from them.
struct Theme {
    verb: &'static str,
    adj: &'static str,
    noun: &'static str,
    noun2: &'static str,
    state: &'static str,
    role: &'static str,
    context: &'static str,
    source: &'static str,
}

impl Theme {
    fn random(rng: &mut SplitMix64) -> Theme {
        let nouns = rng.sample(NOUNS, 2);
        Theme {
            verb: rng.pick(VERBS),
            adj: rng.pick(ADJECTIVES),
            noun: nouns[0],
            noun2: nouns[1],
            state: rng.pick(STATES),
            role: rng.pick(ROLES),
            context: rng.pick(CONTEXTS),
            source: rng.pick(SOURCES),
        }
    }

    /// One of `templates`, filled in.
    fn sentence(&self, rng: &mut SplitMix64, templates: &[&str], reference: &str) -> String {
        let template = rng.pick(templates);
        self.fill(rng, template, reference)
    }

    fn fill(&self, rng: &mut SplitMix64, template: &str, reference: &str) -> String {
        let n = rng.between(2, 9).to_string();
        template
            .replace("{verb}", self.verb)
            .replace("{adj}", self.adj)
            .replace("{noun2}", self.noun2)
            .replace("{noun}", self.noun)
            .replace("{state}", self.state)
            .replace("{role}", self.role)
            .replace("{context}", self.context)
            .replace("{source}", self.source)
            .replace("{ref}", reference)
            .replace("{n}", &n)
    }
}

impl Lesson {
    /// A lesson that supersedes only `earlier` lessons nobody superseded yet (no cycles, no
    /// lesson with two successors), and whose slug is not `taken`.
    fn random(
        rng: &mut SplitMix64,
        earlier: &[String],
        taken: &mut HashSet<String>,
        superseded: &mut HashSet<String>,
    ) -> Lesson {
        let t = Theme::random(rng);
        let connective = rng.pick(CONNECTIVES);
        let title = format!(
            "{} the {} {} {connective} the {} {}.",
            t.verb, t.adj, t.noun, t.noun2, t.state
        );
        let slug = unique_slug(&[t.verb, t.adj, t.noun, connective, t.noun2], taken);

        let mut description = t.sentence(rng, DESCRIPTIONS, "");
        if rng.percent(60) {
            description.push(' ');
            description += &t.sentence(rng, DESCRIPTION_TAILS, "");
        }
        let tag_count = rng.between(1, 4);
        let tags = rng.sample(TAGS, tag_count).into_iter().copied().collect();
        let targets = if rng.percent(30) {
            (0..rng.between(1, 2))
                .map(|_| {
                    let (key, values) = rng.pick(TARGETS);
                    (key, rng.pick(values))
                })
                .collect()
        } else {
            Vec::new()
        };
        let outcome = match rng.below(100) {
            0..=54 => Outcome::Success,
            55..=84 => Outcome::Failure,
            _ => Outcome::Mixed,
        };
        let evidence: Vec<Evidence> = (0..rng.between(1, 4))
            .map(|_| {
                let kind = rng.pick(EVIDENCE_KINDS);
                let reference = evidence_ref(rng, kind, &t);
                let note = rng.percent(70).then(|| {
                    if rng.percent(10) {
                        let total = rng.between(3, 9);
                        format!(
                            "Status: {} of {total} checks passed.",
                            rng.between(1, total)
                        )
                    } else {
                        t.sentence(rng, NOTES, "")
                    }
                });
                Evidence {
                    kind,
                    reference,
                    note,
                }
            })
            .collect();
        let (success_count, failure_count) = match outcome {
            Outcome::Success if rng.percent(80) => (rng.between(1, 12), 0),
            Outcome::Success => (rng.between(3, 12), rng.between(1, 2)),
            Outcome::Failure => (0, rng.between(1, 5)),
            Outcome::Mixed => (rng.between(1, 8), rng.between(1, 6)),
        };
        let mut supersedes = Vec::new();
        if earlier.len() >= 20 && rng.percent(3) {
            for _ in 0..rng.between(1, 2) {
                let old = &earlier[rng.below(earlier.len())];
                if superseded.insert(old.to_string()) {
                    supersedes.push(old.to_string());
                }
            }
        }
        let expires_at = rng.percent(5).then(|| {
            // after the benches' LESSON_NOW, so that the bank stays clean
            let year = rng.between(2027, 2029);
            format!(
                "{year}-{:02}-{:02}T00:00:00Z",
                rng.between(1, 12),
                rng.between(1, 28)
            )
        });

        let first_ref = evidence[0].reference.clone();
        let when_count = rng.between(2, 3);
        let when = rng
            .sample(WHEN_SENTENCES, when_count)
            .into_iter()
            .map(|w| t.fill(rng, w, ""))
            .collect::<Vec<_>>()
            .join(" ");
        let bullet_count = rng.between(2, 4);
        let bullets = rng
            .sample(BULLETS, bullet_count)
            .into_iter()
            .map(|b| t.fill(rng, b, ""))
            .collect();
        let counter_example = t.sentence(rng, COUNTER_EXAMPLES, &first_ref);
        Lesson {
            slug,
            title,
            description,
            tags,
            targets,
            outcome,
            evidence,
            confidence: rng.between(10, 95),
            success_count,
            failure_count,
            supersedes,
            expires_at,
            when,
            bullets,
            counter_example,
        }
    }

    fn render(&self) -> String {
        let mut s = String::with_capacity(2048);
        s += "---\nschema: learning/v1\n";
        writeln!(s, "slug: {}", self.slug).unwrap();
        yaml_field(&mut s, "", "title", &self.title);
        s += "trigger:\n";
        yaml_field(&mut s, "  ", "description", &self.description);
        writeln!(s, "  tags: [{}]", self.tags.join(", ")).unwrap();
        if !self.targets.is_empty() {
            s += "  targets:\n";
            for (key, value) in &self.targets {
                writeln!(s, "    - {key}: {}", yaml_plain_or_quoted(value)).unwrap();
            }
        }
        let outcome = match self.outcome {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Mixed => "mixed",
        };
        writeln!(s, "outcome: {outcome}\nevidence:").unwrap();
        for e in &self.evidence {
            writeln!(s, "  - kind: {}\n    ref: {}", e.kind, e.reference).unwrap();
            if let Some(note) = &e.note {
                yaml_field(&mut s, "    ", "note", note);
            }
        }
        if !self.supersedes.is_empty() {
            writeln!(s, "supersedes: [{}]", self.supersedes.join(", ")).unwrap();
        }
        writeln!(
            s,
            "confidence: {}\nsuccess_count: {}\nfailure_count: {}",
            decimal(self.confidence),
            self.success_count,
            self.failure_count
        )
        .unwrap();
        if let Some(at) = &self.expires_at {
            writeln!(s, "expires_at: {at}").unwrap();
        }
        writeln!(s, "---\n\n# {}\n\n## When this applies\n", self.title).unwrap();
        s += &wrap(&self.when, "", "");
        s += "\n## What to do (or avoid)\n\n";
        for bullet in &self.bullets {
            s += &wrap(bullet, "- ", "  ");
        }
        s += "\n## Counter-example\n\n";
        s += &wrap(&self.counter_example, "", "");
        s
    }
}

/// A slug from the title's words: lowercase ASCII words joined by `-`, at most 64 bytes,
/// made unique with a numeric suffix.
fn unique_slug(words: &[&str], taken: &mut HashSet<String>) -> String {
    let mut base = String::new();
    for word in words.iter().flat_map(|w| w.split([' ', '-'])) {
        let word: String = word
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if word.is_empty() {
            continue;
        }
        if !base.is_empty() && base.len() + 1 + word.len() > 64 {
            break;
        }
        if !base.is_empty() {
            base.push('-');
        }
        base += &word;
    }
    let mut slug = base.clone();
    let mut n = 2;
    while !taken.insert(slug.clone()) {
        slug = format!("{base}-{n}");
        n += 1;
    }
    slug
}

fn evidence_ref(rng: &mut SplitMix64, kind: &str, t: &Theme) -> String {
    let date = format!(
        "{}-{:02}-{:02}",
        rng.between(2025, 2026),
        rng.between(1, 12),
        rng.between(1, 28)
    );
    let hex = format!("{:06x}", rng.next_u64() & 0xff_ffff);
    match kind {
        "run" => format!("r_{date}_{hex}"),
        "conversation" => format!("c_{date}_{hex}"),
        "work-item" => format!("wi_{}-{:02}", rng.pick(PROJECTS), rng.between(1, 99)),
        "audit" => format!("aud_{date}_{hex}_{}", rng.pick(&["ok", "fail", "partial"])),
        _ => format!("wiki/{}/{}", kebab(t.context), kebab(t.noun)),
    }
}

fn kebab(s: &str) -> String {
    s.to_ascii_lowercase().replace(' ', "-")
}

/// `0.65` for 65, `0.5` for 50.
fn decimal(percent: usize) -> String {
    let s = format!("0.{percent:02}");
    s.trim_end_matches('0').to_string()
}

/// A value that would start a YAML alias or contain `: ` is double-quoted; others are plain.
fn yaml_plain_or_quoted(value: &str) -> String {
    if value.starts_with(['*', '&', '!', '?', '[', '{', '"', '\'']) || value.contains(": ") {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        value.to_string()
    }
}

/// `key: value` on one line when it fits in [`WIDTH`], else the value as a multi-line plain
/// scalar indented under the key (the layout a YAML formatter produces).
fn yaml_field(out: &mut String, indent: &str, key: &str, value: &str) {
    let value = yaml_plain_or_quoted(value);
    if indent.len() + key.len() + 2 + value.len() <= WIDTH {
        writeln!(out, "{indent}{key}: {value}").unwrap();
    } else {
        writeln!(out, "{indent}{key}:").unwrap();
        let inner = format!("{indent}  ");
        *out += &wrap(&value, &inner, &inner);
    }
}

/// Greedy word wrap at [`WIDTH`]: `first` prefixes the first line, `rest` the others.
fn wrap(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out += &line;
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += word;
        empty = false;
    }
    out += &line;
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lessons_are_deterministic_unique_and_sized() {
        let a: Vec<_> = lessons_iter().take(500).collect();
        let b: Vec<_> = lessons_iter().take(500).collect();
        assert_eq!(a, b);
        let slugs: HashSet<_> = a.iter().map(|(s, _)| s).collect();
        assert_eq!(slugs.len(), a.len());
        let mean = a.iter().map(|(_, t)| t.len()).sum::<usize>() / a.len();
        assert!((1000..=2048).contains(&mean), "mean lesson size {mean}");
        for (slug, text) in &a {
            assert!(slug.len() <= 80 && slug.starts_with(|c: char| c.is_ascii_lowercase()));
            assert!(text.starts_with("---\nschema: learning/v1\n"));
            assert!(text.contains(&format!("\nslug: {slug}\n")));
            for section in [
                "## When this applies",
                "## What to do (or avoid)",
                "## Counter-example",
            ] {
                assert!(text.contains(section), "{slug} lacks {section}");
            }
        }
    }

    #[test]
    fn queries_are_deterministic_distinct_and_occur_in_the_bank() {
        let q = queries(20);
        assert_eq!(q, queries(20));
        assert_eq!(q.iter().collect::<HashSet<_>>().len(), 20);
        let bank: String = lessons_iter()
            .take(1000)
            .map(|(_, t)| t.to_lowercase())
            .collect();
        for query in &q {
            assert!(bank.contains(query.as_str()), "{query:?} occurs nowhere");
        }
    }

    #[test]
    fn wrap_and_quote() {
        assert_eq!(wrap("a b", "- ", "  "), "- a b\n");
        let long = "word ".repeat(40);
        assert!(wrap(&long, "", "").lines().all(|l| l.len() <= WIDTH));
        assert_eq!(yaml_plain_or_quoted("*-lead"), "\"*-lead\"");
        assert_eq!(yaml_plain_or_quoted("a: b"), "\"a: b\"");
        assert_eq!(yaml_plain_or_quoted("marketing-*"), "marketing-*");
        assert_eq!(decimal(50), "0.5");
        assert_eq!(decimal(65), "0.65");
    }
}
