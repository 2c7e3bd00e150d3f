//! Splitting a file into frontmatter and body, keeping byte offsets, and finding body sections.

use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::lesson::Lesson;
use crate::source::{ReadProblem, Source, BOM};
use crate::yaml::{NodeId, Yaml, YamlError};

mod heading_scan;

/// One file, parsed as far as it goes: source, fences, YAML tree, typed lesson, body.
#[derive(Debug, Clone)]
pub struct Document {
    /// The text and line index.
    pub source: Source,
    /// Why the bytes could not be read as text, if they could not.
    pub read_problem: Option<ReadProblem>,
    /// Where the frontmatter is (`None` when the file could not be read).
    pub split: Option<Split>,
    /// The frontmatter tree, when its syntax is valid (and the document was parsed in full).
    pub yaml: Option<Box<Yaml>>,
    /// YAML problems: syntax errors, duplicate keys, limits.
    pub yaml_errors: Vec<YamlError>,
    /// The typed lesson, when the required fields are present with the right types.
    pub lesson: Option<Box<Lesson>>,
    /// The markdown body (the whole file when there is no frontmatter).
    pub body: Option<Box<Body>>,
    /// Whether [`Document::slim`] dropped the tree and the body.
    slimmed: bool,
    /// Whether [`Document::forget_text`] dropped the text: what the document holds is no longer
    /// known to be the file's text, even once read again.
    trimmed: bool,
    /// Whether [`Document::forget_text`] dropped all of it.
    forgotten: bool,
    /// What the bank-wide rules ask of the file, worked out as it is parsed.
    keys: Keys,
    /// Whether the file has an error-level finding of its own ([`crate::lint::ErrorRules`]),
    /// as the loader or the lint pass found.
    file_errors: bool,
}

/// What the bank-wide rules ask of every document, worked out while the file is parsed (its
/// lesson still in cache) and kept inline in the document: the rules then walk one contiguous
/// array instead of reaching into a lesson's box and its strings for each of 100,000 files,
/// and look at a lesson itself only where its keys say it may matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Keys {
    /// [`name_hash`] of the lesson's slug; 0 without a lesson.
    pub slug: u64,
    /// [`name_hash`] of the file's stem; 0 when it has none.
    pub stem: u64,
    /// Whether the lesson has `supersedes` entries.
    pub supersedes: bool,
    /// Whether the lesson's slug is the file's stem.
    pub slug_is_stem: bool,
}

/// The hash [`Keys`] hold of a slug or a file stem (fixed for the process): equal names have
/// equal hashes, so a differing hash rules a match out without reading the names.
pub fn name_hash(name: &str) -> u64 {
    use std::hash::BuildHasher;
    // never 0, which stands for "no name"
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(name) | 1
}

/// How much of a file [`Document::reread`] and [`Document::full`] read again: the file was
/// within the bank's size limit when it was parsed, and is read whole unless it has grown past
/// this.
const REREAD_LIMIT: u64 = 64 << 20;

impl Document {
    /// Parse a source. Never fails: what cannot be parsed is recorded for the lint rules.
    pub fn parse(source: Source, read_problem: Option<ReadProblem>) -> Document {
        Document::parse_as(source, read_problem, true)
    }

    /// Parse the frontmatter into the typed lesson only: no body, and the YAML tree is dropped
    /// once the lesson is built (`yaml` is `None`). Enough for the index, listing and retrieval,
    /// at a fraction of the memory.
    pub fn parse_frontmatter(source: Source, read_problem: Option<ReadProblem>) -> Document {
        Document::parse_as(source, read_problem, false)
    }

    fn parse_as(source: Source, read_problem: Option<ReadProblem>, full: bool) -> Document {
        let mut doc = Document {
            source,
            read_problem,
            split: None,
            yaml: None,
            yaml_errors: Vec::new(),
            lesson: None,
            body: None,
            slimmed: false,
            trimmed: false,
            forgotten: false,
            keys: Keys::default(),
            file_errors: false,
        };
        doc.keys.stem = doc.stem().map_or(0, name_hash);
        if doc.read_problem.is_some() {
            return doc;
        }
        let text = &doc.source.text;
        let split = split(text);
        let body_start = match &split {
            Split::Yaml(f) => {
                let (yaml, errors) = Yaml::parse(&text[f.content.clone()], f.content.start);
                doc.lesson = yaml.as_ref().and_then(Lesson::from_yaml).map(Box::new);
                doc.yaml = if full { yaml.map(Box::new) } else { None };
                doc.yaml_errors = errors;
                Some(f.body_start)
            }
            Split::Missing => Some(if text.starts_with(BOM) { BOM.len() } else { 0 }),
            Split::Unterminated { .. } | Split::Foreign { .. } => None,
        };
        if full {
            doc.body = body_start.map(|start| Box::new(Body::parse(text, start)));
        }
        doc.split = Some(split);
        if let Some(lesson) = &doc.lesson {
            let slug = lesson.slug.value.as_str();
            doc.keys.slug = name_hash(slug);
            doc.keys.supersedes = !lesson.supersedes.is_empty();
            doc.keys.slug_is_stem = doc.stem() == Some(slug);
        }
        doc
    }

    /// What the bank-wide rules ask of this file, as parsed ([`Keys`]).
    pub fn keys(&self) -> Keys {
        self.keys
    }

    /// Drop the YAML tree and the body, keeping the text and the typed lesson (what a bank needs
    /// once the file rules have run). [`Document::full`] gives them back.
    pub fn slim(&mut self) {
        self.yaml = None;
        self.body = None;
        self.slimmed = true;
    }

    /// Slim the document and drop all its text, keeping the path and the typed lesson. The
    /// rare user that must point into it again reads the file again ([`Document::reread`];
    /// [`Document::full`] does).
    pub fn forget_text(&mut self) {
        self.slim();
        self.source.keep_prefix(0);
        self.trimmed = true;
        self.forgotten = true;
    }

    /// Whether the file has an error-level finding of its own (its parse diagnostics and file
    /// rules at the bank's levels, suppressions applied): such a file is left out of `lesson
    /// list`, `_index.md` and retrieval. Set by the bank's loader (or the lint pass).
    pub fn has_file_errors(&self) -> bool {
        self.file_errors
    }

    /// Record whether the file has an error-level finding of its own.
    pub fn set_file_errors(&mut self, errors: bool) {
        self.file_errors = errors;
    }

    /// Whether it is left out of listings: it has no lesson, or an error-level finding.
    pub fn is_left_out(&self) -> bool {
        self.lesson.is_none() || self.file_errors
    }

    /// Whether [`Document::forget_text`] dropped the text.
    pub fn is_forgotten(&self) -> bool {
        self.forgotten
    }

    /// Give a document whose text was forgotten the text its file has now (unchanged when it
    /// cannot be read). It stays trimmed: what was parsed is not known to be that text.
    pub fn reread(&mut self) {
        if !self.forgotten {
            return;
        }
        let path = self.source.path.clone();
        let (source, problem) = Source::read(&path, path.clone(), REREAD_LIMIT);
        if problem.is_none() {
            self.source = source;
            self.forgotten = false;
        }
    }

    /// Whether [`Document::forget_text`] dropped the text (read again or not, it must never be
    /// the base of an edit).
    pub fn is_trimmed(&self) -> bool {
        self.trimmed
    }

    /// This document with its tree and body: itself, or parsed again if it was slimmed (for the
    /// rare bank rule that builds a fix from the tree).
    pub fn full(&self) -> std::borrow::Cow<'_, Document> {
        if self.forgotten {
            let path = &self.source.path;
            let (source, problem) = Source::read(path, path.clone(), REREAD_LIMIT);
            std::borrow::Cow::Owned(Document::parse(source, problem))
        } else if self.slimmed {
            std::borrow::Cow::Owned(Document::parse(
                self.source.clone(),
                self.read_problem.clone(),
            ))
        } else {
            std::borrow::Cow::Borrowed(self)
        }
    }

    /// The frontmatter's root node when it is a mapping.
    pub fn root_map(&self) -> Option<NodeId> {
        let yaml = self.yaml.as_ref()?;
        let root = yaml.root?;
        yaml.map(root).map(|_| root)
    }

    /// The fences, when the frontmatter is YAML.
    pub fn fences(&self) -> Option<&Fences> {
        match &self.split {
            Some(Split::Yaml(f)) => Some(f),
            _ => None,
        }
    }

    /// The file name without `.md`.
    pub fn stem(&self) -> Option<&str> {
        // the common case, `.../<name>.md` in UTF-8 on a `/` system, without parsing the path's
        // components (the bank rules ask for every file's stem)
        #[cfg(unix)]
        {
            let path = self.source.path.as_os_str().as_encoded_bytes();
            let name = memchr::memrchr(b'/', path).map_or(path, |i| &path[i + 1..]);
            if let Some(stem) = name.strip_suffix(b".md") {
                if !stem.is_empty() && stem[0] != b'.' {
                    return std::str::from_utf8(stem).ok();
                }
            }
        }
        self.source.path.file_stem()?.to_str()
    }
}

/// Where the frontmatter sits in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fences {
    /// The opening fence line, without its line ending.
    pub open: Range<usize>,
    /// The text between the fences (starts after the opening line's ending).
    pub content: Range<usize>,
    /// The closing fence line, without its line ending.
    pub close: Range<usize>,
    /// Where the body starts (after the closing line's ending).
    pub body_start: usize,
}

/// The outcome of looking for frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split {
    /// YAML between `---` fences.
    Yaml(Fences),
    /// The file does not start with a fence.
    Missing,
    /// An opening `---` with no closing `---` or `...` line.
    Unterminated {
        /// Byte range of the opening fence.
        open: Range<usize>,
    },
    /// Frontmatter in another language: `+++` (TOML) or `---json` and the like.
    Foreign {
        /// Byte range of the opening fence.
        open: Range<usize>,
        /// The language the fence names (`toml`, `json`, ...).
        language: String,
    },
}

/// Lines of `text` from `start`: (line range without ending, offset after the ending).
fn lines_from(text: &str, start: usize) -> impl Iterator<Item = (Range<usize>, usize)> + '_ {
    let mut pos = start;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let rest = &text[pos..];
        let (line_len, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(i) => (i, pos + i + 1),
            None => (rest.len(), text.len()),
        };
        let mut end = pos + line_len;
        if end > pos && text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        let line = pos..end;
        pos = next;
        Some((line, next))
    })
}

/// Find the frontmatter fences. Fences may carry trailing spaces or tabs; a BOM is skipped.
pub fn split(text: &str) -> Split {
    let start = if text.starts_with(BOM) { BOM.len() } else { 0 };
    let mut lines = lines_from(text, start);
    let Some((open, content_start)) = lines.next() else {
        return Split::Missing;
    };
    let first = text[open.clone()].trim_end_matches([' ', '\t']);
    if first == "+++" {
        return Split::Foreign {
            open,
            language: "TOML".into(),
        };
    }
    let Some(language) = first.strip_prefix("---") else {
        return Split::Missing;
    };
    let language = language.trim();
    if !language.is_empty() && !language.eq_ignore_ascii_case("yaml") {
        if language.chars().all(|c| c == '-') {
            // a thematic break such as `-----` is body, not a fence
            return Split::Missing;
        }
        return Split::Foreign {
            open,
            language: language.to_string(),
        };
    }
    for (line, next) in lines {
        let trimmed = text[line.clone()].trim_end_matches([' ', '\t']);
        if trimmed == "---" || trimmed == "..." {
            return Split::Yaml(Fences {
                open,
                content: content_start..line.start,
                close: line,
                body_start: next,
            });
        }
    }
    Split::Unterminated { open }
}

/// A markdown heading in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 for `#`, 2 for `##`, ...
    pub level: u8,
    /// The heading's plain text.
    pub text: String,
    /// The heading's source range (the whole line for ATX headings).
    pub range: Range<usize>,
    /// The range of the heading's text inside the line.
    pub text_range: Range<usize>,
}

/// A `## ...` section: its heading and the range of its content up to the next heading of level <= 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The section's heading.
    pub heading: Heading,
    /// The content after the heading line.
    pub content: Range<usize>,
}

/// What the body holds: headings, sections and HTML comments, with offsets into the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body {
    /// Where the body starts in the file.
    pub start: usize,
    /// Every heading, in order.
    pub headings: Vec<Heading>,
    /// Level-2 sections, in order.
    pub sections: Vec<Section>,
    /// HTML comments (`<!-- ... -->`), as ranges of the whole comment.
    pub comments: Vec<Range<usize>>,
}

impl Body {
    /// Find the headings, sections and comments of the body of `text` starting at `start`.
    /// Plain bodies take a line scanner; everything else goes through pulldown-cmark.
    pub fn parse(text: &str, start: usize) -> Body {
        match heading_scan::scan(text, start) {
            Some(headings) => Body {
                start,
                sections: sections(text, &headings),
                headings,
                comments: Vec::new(),
            },
            None => Body::parse_with_pulldown(text, start),
        }
    }

    /// Parse with the line scanner only: `None` when the body needs pulldown-cmark.
    #[doc(hidden)]
    pub fn parse_fast(text: &str, start: usize) -> Option<Body> {
        let headings = heading_scan::scan(text, start)?;
        Some(Body {
            start,
            sections: sections(text, &headings),
            headings,
            comments: Vec::new(),
        })
    }

    /// Parse with pulldown-cmark (the reference the line scanner is tested against).
    #[doc(hidden)]
    pub fn parse_with_pulldown(text: &str, start: usize) -> Body {
        let body = &text[start..];
        let mut headings = Vec::new();
        let mut comments = Vec::new();
        // an open heading: level, source range, text so far, range of the text
        let mut current: Option<OpenHeading> = None;
        let parser = Parser::new_ext(body, Options::empty()).into_offset_iter();
        for (event, range) in parser {
            let range = range.start + start..range.end + start;
            match event {
                Event::Start(Tag::Heading { level, .. }) => {
                    current = Some((level_number(level), range, String::new(), None));
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some((level, range, text, inner)) = current.take() {
                        let range = trim_line_end(text_of(body, start, &range), range);
                        let text_range = inner.unwrap_or(range.end..range.end);
                        headings.push(Heading {
                            level,
                            text: text.trim().to_string(),
                            range,
                            text_range,
                        });
                    }
                }
                Event::Text(t) | Event::Code(t) => {
                    if let Some((_, _, text, inner)) = current.as_mut() {
                        text.push_str(&t);
                        let r = inner.get_or_insert(range.clone());
                        r.start = r.start.min(range.start);
                        r.end = r.end.max(range.end);
                    }
                }
                Event::Html(html) | Event::InlineHtml(html) => {
                    let mut from = 0;
                    while let Some(open) = html[from..].find("<!--") {
                        let open = from + open;
                        let Some(close) = html[open..].find("-->") else {
                            break;
                        };
                        let close = open + close + 3;
                        comments.push(range.start + open..range.start + close);
                        from = close;
                    }
                }
                _ => {}
            }
        }
        let sections = sections(text, &headings);
        Body {
            start,
            headings,
            sections,
            comments,
        }
    }

    /// The first level-1 heading, if any.
    pub fn h1(&self) -> Option<&Heading> {
        self.headings.iter().find(|h| h.level == 1)
    }

    /// The first `##` section whose heading matches `name` (case-insensitive, whitespace folded).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| fold_eq(&s.heading.text, name))
    }
}

type OpenHeading = (u8, Range<usize>, String, Option<Range<usize>>);

fn text_of<'a>(body: &'a str, start: usize, range: &Range<usize>) -> &'a str {
    &body[range.start - start..range.end - start]
}

fn trim_line_end(text: &str, range: Range<usize>) -> Range<usize> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    range.start..range.start + trimmed.len()
}

/// ASCII without a vertical tab: there `split_ascii_whitespace` splits as `split_whitespace`.
fn ascii_words(s: &str) -> bool {
    s.is_ascii() && !s.contains('\x0b')
}

/// Whether two headings are equal but for case and whitespace (`fold(a) == fold(b)`, without
/// allocating).
pub fn fold_eq(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if ascii_words(a) && ascii_words(b) {
        let mut a = a.split_ascii_whitespace();
        let mut b = b.split_ascii_whitespace();
        return loop {
            match (a.next(), b.next()) {
                (None, None) => break true,
                (Some(x), Some(y)) if x.eq_ignore_ascii_case(y) => {}
                _ => break false,
            }
        };
    }
    let mut a = a.split_whitespace();
    let mut b = b.split_whitespace();
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) => {
                let same = if x.is_ascii() && y.is_ascii() {
                    x.eq_ignore_ascii_case(y)
                } else {
                    x.chars()
                        .flat_map(char::to_lowercase)
                        .eq(y.chars().flat_map(char::to_lowercase))
                };
                if !same {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

fn sections(text: &str, headings: &[Heading]) -> Vec<Section> {
    let mut out = Vec::new();
    for (i, h) in headings.iter().enumerate() {
        if h.level != 2 {
            continue;
        }
        let end = headings[i + 1..]
            .iter()
            .find(|n| n.level <= 2)
            .map_or(text.len(), |n| n.range.start);
        let content_start = text[h.range.end..]
            .find('\n')
            .map_or(text.len(), |i| h.range.end + i + 1)
            .min(end);
        out.push(Section {
            heading: h.clone(),
            content: content_start..end,
        });
    }
    out
}

fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_are_the_file_stems() {
        for path in [
            "a.md",
            "dir/a.md",
            "/abs/dir/a.b.md",
            "dir/.md",
            "dir/..md",
            "dir/.hidden.md",
            "dir/README",
            "dir/x.MD",
            "dir/é.md",
            "x.md/",
        ] {
            let doc = Document::parse(Source::new(path, String::new()), None);
            let want = std::path::Path::new(path)
                .file_stem()
                .and_then(|s| s.to_str());
            assert_eq!(doc.stem(), want, "{path}");
        }
    }

    /// A document's keys say what its lesson and file name are, in both parse modes and after
    /// its text is let go.
    #[test]
    fn keys_describe_the_lesson_and_the_file() {
        let lesson = |slug: &str, supersedes: &str| {
            format!(
                "---\nschema: learning/v1\nslug: {slug}\ntitle: T.\ntrigger:\n  description: d\n\
                 outcome: success\nevidence:\n  - kind: run\n    ref: r\n{supersedes}---\n# T.\n"
            )
        };
        let cases = [
            ("dir/a.md", lesson("a", ""), Some("a"), false, true),
            (
                "dir/a.md",
                lesson("b", "supersedes: [a]\n"),
                Some("b"),
                true,
                false,
            ),
            (
                "dir/a.md",
                lesson("a", "supersedes: []\n"),
                Some("a"),
                false,
                true,
            ),
            (
                "dir/a.md",
                "no frontmatter\n".to_string(),
                None,
                false,
                false,
            ),
            (
                "dir/README",
                lesson("README", ""),
                Some("README"),
                false,
                true,
            ),
            ("dir/a.b.md", lesson("a", ""), Some("a"), false, false),
        ];
        for (path, text, slug, supersedes, slug_is_stem) in cases {
            for full in [true, false] {
                let mut doc = Document::parse_as(Source::new(path, text.clone()), None, full);
                assert_eq!(
                    doc.lesson.as_ref().map(|l| l.slug.value.as_str()),
                    slug,
                    "{text}"
                );
                let want = Keys {
                    slug: slug.map_or(0, name_hash),
                    stem: doc.stem().map_or(0, name_hash),
                    supersedes,
                    slug_is_stem,
                };
                assert_eq!(doc.keys(), want, "{path} {text}");
                doc.forget_text();
                assert_eq!(doc.keys(), want, "forgotten: {path} {text}");
            }
        }
        assert_ne!(name_hash("a"), name_hash("b"));
        assert_ne!(name_hash(""), 0);
    }

    #[test]
    fn split_keeps_offsets_with_bom_crlf_and_trailing_spaces() {
        let text = "\u{feff}--- \r\na: 1\r\n---\t\r\n# T\r\n";
        let Split::Yaml(f) = split(text) else {
            panic!("expected yaml")
        };
        assert_eq!(&text[f.open.clone()], "--- ");
        assert_eq!(&text[f.content.clone()], "a: 1\r\n");
        assert_eq!(&text[f.close.clone()], "---\t");
        assert_eq!(&text[f.body_start..], "# T\r\n");
    }

    #[test]
    fn split_recognises_missing_unterminated_and_foreign() {
        assert_eq!(split("# hello\n"), Split::Missing);
        assert_eq!(split(""), Split::Missing);
        assert_eq!(split("-----\nx\n"), Split::Missing);
        assert!(matches!(split("---\na: 1\n"), Split::Unterminated { .. }));
        assert!(
            matches!(split("+++\na = 1\n+++\n"), Split::Foreign { ref language, .. } if language == "TOML")
        );
        assert!(
            matches!(split("---json\n{}\n---\n"), Split::Foreign { ref language, .. } if language == "json")
        );
        let Split::Yaml(f) = split("---\n---\n") else {
            panic!()
        };
        assert!(f.content.is_empty());
    }

    #[test]
    fn fold_eq_ignores_case_and_whitespace() {
        assert!(fold_eq("When this  applies", "when this applies"));
        assert!(fold_eq(" Counter-example ", "counter-example"));
        assert!(fold_eq("Ärger Über", "ärger über"));
        assert!(!fold_eq("When this", "When this applies"));
        assert!(!fold_eq("Counter example", "Counter-example"));
    }

    #[test]
    fn body_sections_and_h1() {
        let text = "---\n---\n# Title here\n\n## When this applies\n\nx\n\n### sub\n\n## What to do (or avoid)\n\ny\n<!-- lesson-allow S001: ok -->\n";
        let Split::Yaml(f) = split(text) else {
            panic!()
        };
        let body = Body::parse(text, f.body_start);
        let h1 = body.h1().unwrap();
        assert_eq!(h1.text, "Title here");
        assert_eq!(&text[h1.text_range.clone()], "Title here");
        assert_eq!(&text[h1.range.clone()], "# Title here");
        assert_eq!(body.sections.len(), 2);
        let s = body.section("when this  applies").unwrap();
        assert_eq!(&text[s.content.clone()], "\nx\n\n### sub\n\n");
        assert_eq!(body.comments.len(), 1);
    }
}
