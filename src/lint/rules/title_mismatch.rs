//! `title-mismatch` (D001).

use std::ops::Range;

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::document::{Document, Heading};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// The body's `# ` heading differs from the frontmatter `title`, or is missing.
    ///
    /// ## What it does
    /// Compares the body's first level-1 heading with `title` (whitespace runs count as one
    /// space, and markdown formatting in the heading is allowed) and reports a difference or a
    /// missing heading. The fix writes the title into the heading, or inserts `# <title>` at the
    /// top of the body.
    ///
    /// ## Why is this bad?
    /// AIP-11 opens the body with `# <title>`. Retrieval and `_index.md` show the frontmatter
    /// title while a reader of the file sees the heading: when they differ, one of them is stale.
    ///
    /// ## Example
    /// ```text
    /// title: Verify the page id before clicking "Load More" again.
    /// ---
    ///
    /// # Click "Load More" until the list stops growing.
    /// ```
    pub static RULE = {
        code: "D001",
        name: "title-mismatch",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    check_document(ctx.doc, out);
}

fn check_document(doc: &Document, out: &mut Vec<Diagnostic>) {
    let (Some(lesson), Some(body)) = (&doc.lesson, &doc.body) else {
        return;
    };
    let written = lesson.title.value.as_str();
    if written.trim().is_empty() {
        return;
    }
    let text = &doc.source.text;
    match body.h1() {
        Some(h1) => {
            let content = heading_content(text, h1);
            let raw = &text[content.range.clone()];
            // compared without allocating: this runs on every lesson
            if same_words(raw, written)
                || same_words(&h1.text, written)
                || (written.trim_end().ends_with('#')
                    && same_words(raw, &heading_text(&fold_whitespace(written))))
            {
                return;
            }
            let title = fold_whitespace(written);
            let (title_line, _) = doc.source.line_col(lesson.title.span.start);
            let range = if content.range.is_empty() {
                h1.range.clone()
            } else {
                content.range.clone()
            };
            let mut replacement = heading_text(&title);
            if content.needs_space {
                replacement.insert(0, ' ');
            }
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    range,
                    format!("H1 differs from the `title` on line {title_line}"),
                )
                .with_help(format!("the title is: {title}"))
                .with_fix(Fix::safe(
                    "replace the H1 text with the title",
                    vec![Edit::replace(content.range, replacement)],
                )),
            );
        }
        None => {
            let title = fold_whitespace(written);
            let (at, insertion) = insertion(doc, body.start, &heading_text(&title));
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    body.start..body.start,
                    "no `# ` H1 heading: the body should open with the title",
                )
                .with_help(format!("add `# {title}` at the top of the body"))
                .with_fix(Fix::safe(
                    "insert the title as an H1",
                    vec![Edit::insert(at, insertion)],
                )),
            );
        }
    }
}

/// Whether two texts have the same words (`fold_whitespace(a) == fold_whitespace(b)`).
fn same_words(a: &str, b: &str) -> bool {
    if a == b {
        // the H1 as written is most often the title as written
        return true;
    }
    if ascii_words(a) && ascii_words(b) {
        a.split_ascii_whitespace().eq(b.split_ascii_whitespace())
    } else {
        a.split_whitespace().eq(b.split_whitespace())
    }
}

/// ASCII without a vertical tab: there `split_ascii_whitespace` splits as `split_whitespace`.
fn ascii_words(s: &str) -> bool {
    s.is_ascii() && !s.contains('\x0b')
}

/// Collapse whitespace runs (a folded multi-line YAML title, a heading with double spaces).
fn fold_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The title as heading text: a trailing `#` would be read as a closing sequence, so escape it.
fn heading_text(title: &str) -> String {
    match title.strip_suffix('#') {
        Some(rest) => format!("{rest}\\#"),
        None => title.to_string(),
    }
}

/// The text of a heading in its line(s), without markers and closing sequence.
struct HeadingContent {
    range: Range<usize>,
    /// An empty ATX heading with no space after its `#`: replacement text needs one.
    needs_space: bool,
}

fn heading_content(text: &str, h: &Heading) -> HeadingContent {
    let src = &text[h.range.clone()];
    let bytes = src.as_bytes();
    let lead = src.len() - src.trim_start_matches([' ', '\t']).len();
    let fallback = || HeadingContent {
        range: h.text_range.clone(),
        needs_space: false,
    };
    if src[lead..].starts_with('#') {
        let line_end = src.find(['\r', '\n']).unwrap_or(src.len());
        let hashes = src[lead..line_end].len() - src[lead..line_end].trim_start_matches('#').len();
        let after_hashes = lead + hashes;
        let mut start = after_hashes;
        while start < line_end && matches!(bytes[start], b' ' | b'\t') {
            start += 1;
        }
        let mut end = line_end;
        while end > start && matches!(bytes[end - 1], b' ' | b'\t') {
            end -= 1;
        }
        let inner = &src[start..end];
        let unclosed = inner.trim_end_matches('#');
        if unclosed.len() < inner.len() && (unclosed.is_empty() || unclosed.ends_with([' ', '\t']))
        {
            end = start + unclosed.trim_end_matches([' ', '\t']).len();
        }
        HeadingContent {
            range: h.range.start + start..h.range.start + end,
            needs_space: start == after_hashes && start == end,
        }
    } else {
        // a setext heading: its text lines, then an underline of `=`
        let Some(underline) = src.trim_end().rfind('\n') else {
            return fallback();
        };
        let content = src[..underline].trim_end();
        if content.len() <= lead {
            return fallback();
        }
        HeadingContent {
            range: h.range.start + lead..h.range.start + content.len(),
            needs_space: false,
        }
    }
}

/// Where to insert the missing H1, and the text: after a leading blank line when the body has
/// one, with the file's line ending.
fn insertion(doc: &Document, body_start: usize, title: &str) -> (usize, String) {
    let text = &doc.source.text;
    let nl = line_ending(doc);
    let rest = &text[body_start..];
    let first_line_end = rest.find('\n').map(|i| i + 1);
    let at = match first_line_end {
        Some(end) if rest[..end].trim().is_empty() => body_start + end,
        _ => body_start,
    };
    let insertion = if at < text.len() {
        format!("# {title}{nl}{nl}")
    } else if text.is_empty() || text.ends_with('\n') {
        format!("# {title}{nl}")
    } else {
        format!("{nl}# {title}{nl}")
    };
    (at, insertion)
}

/// The file's line ending: that of the closing fence, else of the first line, else `\n`.
fn line_ending(doc: &Document) -> &'static str {
    let text = &doc.source.text;
    let ending = doc
        .fences()
        .map(|f| &text[f.close.end..f.body_start])
        .filter(|e| !e.is_empty())
        .or_else(|| text.find('\n').map(|i| &text[..=i]));
    match ending {
        Some(e) if e.ends_with("\r\n") => "\r\n",
        _ => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::apply_edits;
    use crate::source::Source;

    fn lesson(title: &str, body: &str) -> String {
        format!(
            "---\nschema: learning/v1\nslug: t\ntitle: {title}\ntrigger:\n  description: d\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---{body}"
        )
    }

    fn diagnostics(text: &str) -> Vec<Diagnostic> {
        let doc = Document::parse(Source::new("t.md", text.to_string()), None);
        assert!(doc.lesson.is_some(), "fixture must parse: {text}");
        let mut out = Vec::new();
        check_document(&doc, &mut out);
        out
    }

    /// Apply the fix (if any) and check a second run is clean.
    fn fixed(text: &str) -> String {
        let diags = diagnostics(text);
        let mut text = text.to_string();
        if let Some(d) = diags.first() {
            text = apply_edits(&text, &d.fix.as_ref().unwrap().edits).0;
        }
        assert!(
            diagnostics(&text).is_empty(),
            "fix did not converge: {text:?}"
        );
        text
    }

    #[test]
    fn matching_titles_are_quiet() {
        assert!(diagnostics(&lesson("Use x.", "\n\n# Use x.\n")).is_empty());
        assert!(diagnostics(&lesson("Use `x` now.", "\n# Use `x` now. ##\n")).is_empty());
        assert!(diagnostics(&lesson("Use x now.", "\n# Use *x*   now.\n")).is_empty());
        assert!(diagnostics(&lesson("Use x\n  now.", "\n# Use x now.\n")).is_empty());
        assert!(diagnostics(&lesson("Use x now.", "\nUse x now.\n===\n")).is_empty());
    }

    #[test]
    fn fix_replaces_heading_text() {
        assert_eq!(
            fixed(&lesson("New.", "\n\n# Old. #\n")),
            lesson("New.", "\n\n# New. #\n")
        );
        assert_eq!(
            fixed(&lesson("New.", "\nOld\n===\n")),
            lesson("New.", "\nNew.\n===\n")
        );
        assert_eq!(
            fixed(&lesson("New.", "\n#\n")),
            lesson("New.", "\n# New.\n")
        );
        assert_eq!(
            fixed(&lesson("\"Count #\"", "\n# Count\n")),
            lesson("\"Count #\"", "\n# Count \\#\n")
        );
    }

    #[test]
    fn fix_converges_on_markdown_punctuation() {
        // `\=` is an escape in markdown: neither the raw nor the rendered heading equals the title
        assert_eq!(
            fixed(&lesson("'a \\= b #'", "\n# x\n")),
            lesson("'a \\= b #'", "\n# a \\= b \\#\n")
        );
    }

    #[test]
    fn fix_inserts_missing_heading() {
        assert_eq!(fixed(&lesson("T.", "")), lesson("T.", "\n# T.\n"));
        assert_eq!(fixed(&lesson("T.", "\n")), lesson("T.", "\n# T.\n"));
        assert_eq!(fixed(&lesson("T.", "\n\n")), lesson("T.", "\n\n# T.\n"));
        assert_eq!(
            fixed(&lesson("T.", "\n\n## When this applies\n")),
            lesson("T.", "\n\n# T.\n\n## When this applies\n")
        );
        assert_eq!(
            fixed(&lesson("T.", "\nText\n")),
            lesson("T.", "\n# T.\n\nText\n")
        );
        let crlf = lesson("T.", "\n\nText\n").replace('\n', "\r\n");
        assert_eq!(
            fixed(&crlf),
            lesson("T.", "\n\n# T.\n\nText\n").replace('\n', "\r\n")
        );
    }
}
