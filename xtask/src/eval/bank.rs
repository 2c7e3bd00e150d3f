//! A BEIR corpus as a lesson bank: one lesson per document, every field within the schema's
//! limits and every string double-quoted, so that `lesson lint` finds no error.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use super::beir::Document;

/// Slugs are at most this long (AIP-11).
const SLUG_MAX: usize = 80;
/// A title is at most this many characters.
const TITLE_MAX: usize = 200;
/// An empty title is made from the text's first sentence, or this many characters of it.
const TITLE_FROM_TEXT: usize = 100;
/// `trigger.description` is at most this many characters.
const DESCRIPTION_MAX: usize = 1000;
/// An evidence `ref` is at most this many characters.
const REF_MAX: usize = 256;

/// Write one lesson per document into `bank` (which must not exist yet), each tagged with up
/// to `tags` topic words of its title ([`topic_tags`]); returns slug → doc id.
pub fn write(
    bank: &Path,
    corpus: &[Document],
    source: &Path,
    tags: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    std::fs::create_dir_all(bank).with_context(|| format!("cannot create {}", bank.display()))?;
    std::fs::write(
        bank.join("lesson.toml"),
        format!(
            "# A throwaway bank written by `cargo xtask eval-retrieval` from {}:\n\
             # one lesson per document of the corpus.\n\n\
             [lint.rules]\n\
             # Nobody browses this bank, so it has no _index.md.\n\
             index-stale = \"off\"\n",
            source.display()
        ),
    )?;
    let mut taken = HashSet::new();
    let mut mapping = Vec::with_capacity(corpus.len());
    let topics = topic_tags(corpus, tags);
    for (doc, tags) in corpus.iter().zip(&topics) {
        let slug = slug_for(&doc.id, &mut taken);
        let path = bank.join(format!("{slug}.md"));
        std::fs::write(&path, render(&slug, doc, tags))
            .with_context(|| format!("cannot write {}", path.display()))?;
        mapping.push((slug, doc.id.clone()));
    }
    Ok(mapping)
}

/// The mapping as a lookup from slug to document id.
pub fn lookup(mapping: &[(String, String)]) -> HashMap<&str, &str> {
    mapping
        .iter()
        .map(|(s, id)| (s.as_str(), id.as_str()))
        .collect()
}

/// `d-` and the id lowercased, with every run of other characters than `a-z0-9` made one `-`,
/// cut to 80 characters; a numeric suffix keeps slugs unique.
pub fn slug_for(id: &str, taken: &mut HashSet<String>) -> String {
    let mut base = String::from("d-");
    for c in id.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            base.push(c);
        } else if !base.ends_with('-') {
            base.push('-');
        }
    }
    let mut base = base.trim_end_matches('-').to_string();
    if base == "d" {
        base = "d-doc".into();
    }
    let cut = |s: &str, max: usize| s[..s.len().min(max)].trim_end_matches('-').to_string();
    let base = cut(&base, SLUG_MAX);
    let mut slug = base.clone();
    let mut n = 2;
    while !taken.insert(slug.clone()) {
        let suffix = format!("-{n}");
        slug = cut(&base, SLUG_MAX - suffix.len()) + &suffix;
        n += 1;
    }
    slug
}

/// Words that are no topic.
const NOT_TOPICS: &[&str] = &[
    "about", "after", "also", "among", "been", "before", "being", "between", "both", "each",
    "from", "have", "into", "more", "most", "only", "other", "over", "some", "such", "than",
    "that", "their", "them", "then", "there", "these", "they", "this", "those", "under", "upon",
    "very", "were", "what", "when", "where", "which", "while", "will", "with", "within",
];

/// Per document, up to `n` topic tags: the words of its title (ASCII letters only, at least
/// four, lowercased, not in [`NOT_TOPICS`]) that the most other titles share (at least one other;
/// ties by the word). They stand in for the tags an author gives: shared, topical words, the
/// kind a request's ordinary words run into.
pub fn topic_tags(corpus: &[Document], n: usize) -> Vec<Vec<String>> {
    let words = |doc: &Document| -> Vec<String> {
        let mut w: Vec<String> = title_for(doc)
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            // a tag is ASCII (lint's S008): a word with other letters is no tag
            .filter(|w| w.len() >= 4 && w.bytes().all(|b| b.is_ascii_lowercase()))
            .filter(|w| !NOT_TOPICS.contains(&w.as_str()))
            .collect();
        w.sort();
        w.dedup();
        w
    };
    if n == 0 {
        return vec![Vec::new(); corpus.len()];
    }
    let titles: Vec<Vec<String>> = corpus.iter().map(words).collect();
    let mut df: HashMap<&str, usize> = HashMap::new();
    for t in &titles {
        for w in t {
            *df.entry(w).or_default() += 1;
        }
    }
    titles
        .iter()
        .map(|t| {
            let mut shared: Vec<&String> = t.iter().filter(|w| df[w.as_str()] >= 2).collect();
            shared.sort_by(|a, b| df[b.as_str()].cmp(&df[a.as_str()]).then_with(|| a.cmp(b)));
            shared.into_iter().take(n).cloned().collect()
        })
        .collect()
}

/// The lesson for one document.
pub fn render(slug: &str, doc: &Document, tags: &[String]) -> String {
    let text = clean_text(&doc.text);
    let title = title_for(doc);
    let description = description_for(doc);
    let reference = truncate_chars(&one_line(&doc.id), REF_MAX);
    let reference = if reference.is_empty() {
        slug.to_string()
    } else {
        reference
    };
    let mut s = String::with_capacity(text.len() * 2 + 512);
    s += "---\nschema: learning/v1\n";
    writeln!(s, "slug: {slug}").unwrap();
    writeln!(s, "title: {}", yaml_quote(&title)).unwrap();
    writeln!(s, "trigger:\n  description: {}", yaml_quote(&description)).unwrap();
    if !tags.is_empty() {
        let quoted: Vec<String> = tags.iter().map(|t| yaml_quote(t)).collect();
        writeln!(s, "  tags: [{}]", quoted.join(", ")).unwrap();
    }
    s += "outcome: success\nevidence:\n  - kind: wiki-page\n";
    writeln!(s, "    ref: {}", yaml_quote(&reference)).unwrap();
    writeln!(s, "---\n\n# {title}\n\n## When this applies\n").unwrap();
    if !text.trim().is_empty() {
        s += text.trim();
        s.push('\n');
    }
    s
}

/// `trigger.description`: the text on one line, at most 1000 characters (cut after a word),
/// else the title.
pub fn description_for(doc: &Document) -> String {
    let flat = one_line(&clean_text(&doc.text));
    if flat.is_empty() {
        title_for(doc)
    } else {
        truncate_words(&flat, DESCRIPTION_MAX)
    }
}

/// The title: the document's, else the text's first sentence or first 100 characters, else
/// `Document <id>`; on one line, at most 200 characters.
pub fn title_for(doc: &Document) -> String {
    let title = one_line(&clean_text(&doc.title));
    let title = if title.is_empty() {
        let text = one_line(&clean_text(&doc.text));
        let sentence = text
            .find(". ")
            .map_or(text.as_str(), |end| &text[..=end])
            .trim();
        truncate_words(sentence, TITLE_FROM_TEXT)
    } else {
        title
    };
    let title = if title.is_empty() {
        format!("Document {}", one_line(&doc.id))
    } else {
        title
    };
    truncate_words(&title, TITLE_MAX)
}

/// Text without control characters (but newlines) and without the invisible and direction
/// control characters `lesson lint` reports (hidden-unicode).
pub fn clean_text(text: &str) -> String {
    text.replace("\r\n", "\n")
        .chars()
        .filter_map(|c| match c {
            '\n' => Some('\n'),
            '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{061C}'
            | '\u{00AD}'
            | '\u{FEFF}' => None,
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => Some(' '),
            c => Some(c),
        })
        .collect()
}

/// Whitespace runs (newlines included) made one space, trimmed.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn truncate_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// At most `max` characters, cut after a whole word when there is one to cut after.
fn truncate_words(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut = truncate_chars(s, max);
    let at_word = match cut.rfind(' ') {
        Some(i) if i > 0 => &cut[..i],
        _ => cut.as_str(),
    };
    at_word.trim_end().to_string()
}

/// A YAML double-quoted scalar: `\` and `"` escaped, and any character YAML does not allow
/// printed (or reads as a line break in YAML 1.1) written as an escape.
pub fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
                ) =>
            {
                write!(out, "\\u{:04X}", u32::from(c)).unwrap()
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, title: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            title: title.into(),
            text: text.into(),
        }
    }

    #[test]
    fn slugs_are_valid_and_unique() {
        let mut taken = HashSet::new();
        let valid = |s: &str| {
            (2..=80).contains(&s.len())
                && s.starts_with(|c: char| c.is_ascii_lowercase())
                && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        let cases = [
            ("<dbpedia:Oceanic_Airlines>", "d-dbpedia-oceanic-airlines"),
            ("<dbpedia:Oceanic_airlines>", "d-dbpedia-oceanic-airlines-2"),
            ("184", "d-184"),
            ("<>", "d-doc"),
            ("Über–Straße", "d-ber-stra-e"),
            ("", "d-doc-2"),
        ];
        for (id, want) in cases {
            let s = slug_for(id, &mut taken);
            assert_eq!(s, want);
            assert!(valid(&s), "{s}");
        }
        let long = "x_".repeat(100);
        let a = slug_for(&long, &mut taken);
        let b = slug_for(&long, &mut taken);
        assert!(valid(&a) && valid(&b) && a != b && b.len() <= 80, "{a} {b}");
    }

    #[test]
    fn titles_fall_back_and_fit() {
        assert_eq!(title_for(&doc("1", "  A  title\n", "x")), "A title");
        assert_eq!(
            title_for(&doc("1", "", "first sentence . second one.")),
            "first sentence ."
        );
        assert_eq!(title_for(&doc("471", "", "")), "Document 471");
        let long = "word ".repeat(100);
        let t = title_for(&doc("1", "", &long));
        assert!(t.chars().count() <= 100 && t.ends_with("word"), "{t}");
        let t = title_for(&doc("1", &long, ""));
        assert!(t.chars().count() <= 200);
    }

    #[test]
    fn quoting_and_rendering() {
        assert_eq!(yaml_quote(r#"a "b" \c: #d"#), r#""a \"b\" \\c: #d""#);
        assert_eq!(yaml_quote("x\u{7}\u{2028}"), "\"x\\u0007\\u2028\"");
        assert_eq!(clean_text("a\u{200B}b\r\nc\u{1}d"), "ab\nc d");
        let text = "The \"quoted\" text: with # and \u{202E}. Second line\nthird.";
        let lesson = render("d-x", &doc("<x:Y>", "", text), &[]);
        assert!(lesson.starts_with("---\nschema: learning/v1\nslug: d-x\n"));
        assert!(lesson.contains("\ntitle: \"The \\\"quoted\\\" text: with # and .\"\n"));
        assert!(lesson.contains("    ref: \"<x:Y>\"\n"));
        assert!(
            lesson.contains("\n# The \"quoted\" text: with # and .\n\n## When this applies\n\n")
        );
        assert!(lesson.ends_with("Second line\nthird.\n"));
        let long = "w ".repeat(800);
        let lesson = render("d-y", &doc("y", "T", &long), &["wing".into()]);
        let desc = lesson
            .lines()
            .find_map(|l| l.strip_prefix("  description: "))
            .unwrap();
        assert!(desc.chars().count() - 2 <= 1000);
        assert!(lesson.contains("\n  tags: [\"wing\"]\noutcome: success\n"));
    }

    #[test]
    fn topic_tags_are_title_words_other_titles_share() {
        let corpus = [
            doc("1", "Supersonic flow over a wing", ""),
            doc("2", "Heat transfer in supersonic flow", ""),
            doc("3", "Wing flutter", ""),
            doc("4", "Cake", ""),
        ];
        let tags = topic_tags(&corpus, 2);
        assert_eq!(tags[0], ["flow", "supersonic"]);
        assert_eq!(tags[1], ["flow", "supersonic"]);
        assert_eq!(tags[2], ["wing"]);
        assert!(tags[3].is_empty());
        assert!(topic_tags(&corpus, 0).iter().all(Vec::is_empty));
    }
}
