//! The default, human format: each finding with its source line(s) and a caret under the span,
//! in the style of rustc and ruff (rendered by `annotate-snippets`).
//!
//! ```text
//! error[P009]: duplicate key `title`
//!  --> lessons/twice.md:5:1
//!   |
//! 5 | title: Second title.
//!   | ^^^^^
//!   |
//!   = help: first defined at 4:1; remove one of them
//!   = help: remove the second `title` (safe fix)
//! ```
//!
//! Every span is underlined with `^`, whatever its level. Tabs show as four spaces and control
//! characters as their Unicode pictures (`␀`), with the caret still under the right character.
//!
//! Without the file's text (unreadable, too large, a directory) only the header and the location
//! are printed. Every span is clamped to the text and to character boundaries first, so no
//! diagnostic can make the renderer panic.

use std::ops::Range;

use annotate_snippets::{
    normalize_untrusted_str, AnnotationKind, Level, Origin, Renderer, Snippet,
};

use super::{RenderOptions, Sources};
use crate::diagnostic::{Applicability, Diagnostic, Severity};
use crate::source::{floor_char_boundary, Source};

/// Render each diagnostic as an annotated snippet, followed by a blank line.
pub fn render(diagnostics: &[Diagnostic], sources: &Sources<'_>, options: RenderOptions) -> String {
    let renderer = if options.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&render_one(&renderer, d, sources.get(&d.path)));
        out.push_str("\n\n");
    }
    out
}

fn render_one(renderer: &Renderer, d: &Diagnostic, source: Option<&Source>) -> String {
    let path = d.path.display().to_string();
    let title = level(d.severity)
        .primary_title(d.message.as_str())
        .id(d.code);
    let group = match source.and_then(|s| Excerpt::of(s, &d.range)) {
        Some(excerpt) => title.element(
            Snippet::source(excerpt.text)
                .line_start(excerpt.line)
                .path(path)
                .fold(true)
                .annotation(AnnotationKind::Primary.span(excerpt.span)),
        ),
        None => title.element(Origin::path(path).line(d.line).char_column(d.column)),
    };
    let group = group.elements(footers(d));
    renderer.render(&[group])
}

fn level(severity: Severity) -> Level<'static> {
    match severity {
        Severity::Error => Level::ERROR,
        Severity::Warning => Level::WARNING,
        Severity::Info => Level::INFO,
    }
}

/// `= help: <help>` and `= help: <fix> (safe fix)`. Unlike titles, footers are not cleaned of
/// control characters by annotate-snippets, and a help line may quote the file.
fn footers(d: &Diagnostic) -> Vec<annotate_snippets::Message<'static>> {
    let mut footers = Vec::new();
    if let Some(help) = &d.help {
        footers.push(Level::HELP.message(normalize_untrusted_str(help)));
    }
    if let Some(fix) = &d.fix {
        let safety = match fix.applicability {
            Applicability::Safe => "safe fix",
            Applicability::Unsafe => "unsafe fix, --unsafe-fixes",
        };
        let text = format!("{} ({safety})", fix.message);
        footers.push(Level::HELP.message(normalize_untrusted_str(&text)));
    }
    footers
}

/// The whole lines a span touches, and the span relative to them.
#[derive(Debug, PartialEq, Eq)]
struct Excerpt<'a> {
    /// 1-based number of the first line.
    line: usize,
    /// The lines, without the last line's ending.
    text: &'a str,
    /// The span in `text`; may end one past `text` (a caret after the last character).
    span: Range<usize>,
}

impl<'a> Excerpt<'a> {
    /// `None` when there is nothing to show: an empty file, or a file whose text was not read.
    fn of(source: &'a Source, range: &Range<usize>) -> Option<Self> {
        let text = source.text.as_str();
        if text.is_empty() {
            return None;
        }
        let first = source.line_start(1); // after a BOM
        let start = floor_char_boundary(text, range.start.min(text.len())).max(first);
        let end = floor_char_boundary(text, range.end.min(text.len())).max(start);
        let (line, _) = source.line_col(start);
        let (mut end_line, _) = source.line_col(end);
        // A span that takes a line ending ends on that line, not at column 1 of the next.
        if end_line > line && end == source.line_start(end_line) {
            end_line -= 1;
        }
        let from = source.line_start(line);
        let to = source.line_start(end_line) + source.line_text(end_line).len();
        let text = &text[from..to];
        let span = (start - from).min(text.len())..(end - from).min(text.len());
        Some(Excerpt { line, text, span })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn excerpt(text: &str, range: Range<usize>) -> Option<(usize, String, Range<usize>)> {
        let source = Source::new("a.md", text.to_string());
        Excerpt::of(&source, &range).map(|e| (e.line, e.text.to_string(), e.span))
    }

    #[test]
    fn excerpt_is_the_spanned_lines() {
        let text = "a: 1\nbb: 2\nc: 3\n";
        assert_eq!(excerpt(text, 6..7), Some((2, "bb: 2".into(), 1..2)));
        assert_eq!(excerpt(text, 2..8), Some((1, "a: 1\nbb: 2".into(), 2..8)));
    }

    #[test]
    fn excerpt_of_a_whole_line_stops_at_its_ending() {
        let text = "a: 1\r\nbb: 2\r\n";
        assert_eq!(excerpt(text, 6..13), Some((2, "bb: 2".into(), 0..5)));
    }

    #[test]
    fn excerpt_at_eof_is_the_empty_last_line() {
        assert_eq!(excerpt("a\n", 2..2), Some((2, String::new(), 0..0)));
        assert_eq!(excerpt("ab", 2..2), Some((1, "ab".into(), 2..2)));
    }

    #[test]
    fn excerpt_clamps_bad_spans() {
        let text = "\u{feff}é\n";
        assert_eq!(excerpt(text, 0..1), Some((1, "é".into(), 0..0)));
        assert_eq!(excerpt(text, 4..99), Some((1, "é".into(), 0..2)));
        let backwards = Range { start: 9, end: 3 };
        assert_eq!(excerpt(text, backwards), Some((2, String::new(), 0..0)));
        assert_eq!(excerpt("", 0..0), None);
    }
}
