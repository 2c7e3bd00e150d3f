//! `merge-conflict` (P015).

use std::ops::Range;

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::{Document, Split};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A lesson holds an unresolved git merge conflict.
    ///
    /// ## What it does
    /// Reports each conflict git left in the file: a `<<<<<<<` line, then the two sides
    /// separated by a `=======` line, closed by a `>>>>>>>` line (and a `|||||||` line before the
    /// base in the diff3 style). The finding is at the `<<<<<<<` marker; a `>>>>>>>` marker that
    /// closes no conflict is reported too. A `=======` line outside a conflict is a Markdown
    /// heading underline and is not reported.
    ///
    /// When a conflict reaches into the frontmatter, the YAML errors it causes (and the
    /// frontmatter findings that follow from them) are not reported: they would point away
    /// from the one thing to do, finishing the merge.
    ///
    /// ## Why is this bad?
    /// The lesson is both versions at once: its frontmatter does not parse and its body says
    /// two things. The merge was committed (or is about to be) before it was finished.
    ///
    /// ## Example
    /// ```text
    /// ---
    /// <<<<<<< HEAD
    /// title: Retry with jitter.
    /// =======
    /// title: Retry with exponential backoff and jitter.
    /// >>>>>>> feature
    /// ---
    /// ```
    /// Keep the right lines, delete the three marker lines, then `git add` the file (or run
    /// `git mergetool`).
    pub static RULE = {
        code: "P015",
        name: "merge-conflict",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

const HELP: &str = "finish the merge: keep the right lines, delete the `<<<<<<<`, `=======` and \
                    `>>>>>>>` lines, then `git add` the file (or resolve it with `git mergetool`)";

/// Which marker a line starts with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// `<<<<<<< ours`
    Open,
    /// `||||||| base` (diff3)
    Base,
    /// `=======`
    Separator,
    /// `>>>>>>> theirs`
    Close,
}

/// The marker a line (without its ending) is, if any: seven marker characters, then the end
/// of the line or a space (`=======` stands alone).
fn marker(line: &str) -> Option<Marker> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let head = line.get(..7)?;
    let rest = &line[7..];
    let kind = match head {
        "<<<<<<<" => Marker::Open,
        "|||||||" => Marker::Base,
        "=======" => Marker::Separator,
        ">>>>>>>" => Marker::Close,
        _ => return None,
    };
    let ends = match kind {
        Marker::Separator => rest.is_empty(),
        _ => rest.is_empty() || rest.starts_with(' '),
    };
    ends.then_some(kind)
}

/// One conflict: the marker reported and the lines it spans.
struct Conflict {
    marker: Range<usize>,
    /// `true` for a `>>>>>>>` that closes no conflict.
    stray_close: bool,
    /// The 1-based line the conflict closes on, if it does.
    close_line: Option<usize>,
}

/// The conflicts of `text`, in order.
fn conflicts(text: &str) -> Vec<Conflict> {
    let mut found: Vec<Conflict> = Vec::new();
    // the conflict open at this point, by its index in `found`
    let mut open: Option<usize> = None;
    let mut start = 0;
    for (n, line) in text.split('\n').enumerate() {
        let at = start;
        start += line.len() + 1;
        let Some(kind) = marker(line) else { continue };
        match (kind, open) {
            (Marker::Open, _) => {
                found.push(Conflict {
                    marker: at..at + 7,
                    stray_close: false,
                    close_line: None,
                });
                open = Some(found.len() - 1);
            }
            (Marker::Close, Some(i)) => {
                found[i].close_line = Some(n + 1);
                open = None;
            }
            (Marker::Close, None) => found.push(Conflict {
                marker: at..at + 7,
                stray_close: true,
                close_line: None,
            }),
            // a base or separator line outside a conflict is ordinary text
            (Marker::Base | Marker::Separator, _) => {}
        }
    }
    found
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let src = &ctx.doc.source;
    // the common case: no line starts a marker
    if !has_marker(&src.text) {
        return;
    }
    for conflict in conflicts(&src.text) {
        let (line, _) = src.line_col(conflict.marker.start);
        let message = match (conflict.stray_close, conflict.close_line) {
            (true, _) => "unresolved merge conflict: a `>>>>>>>` marker closes no conflict".into(),
            (false, Some(close)) => {
                format!("unresolved merge conflict (lines {line}-{close})")
            }
            (false, None) => {
                "unresolved merge conflict: a `<<<<<<<` marker is never closed".to_string()
            }
        };
        out.push(Diagnostic::new(&RULE, src, conflict.marker, message).with_help(HELP));
    }
}

/// Whether some line of `text` starts with `<<<<<<<` or `>>>>>>>`.
fn has_marker(text: &str) -> bool {
    let starts = |m: &str| text.starts_with(m) || text.contains(&format!("\n{m}"));
    starts("<<<<<<<") || starts(">>>>>>>")
}

/// Whether a conflict found in `doc` (a P015 finding at `range`) reaches into its frontmatter:
/// it starts before the frontmatter ends, or no frontmatter could be found at all.
pub fn in_frontmatter(doc: &Document, range: &Range<usize>) -> bool {
    match &doc.split {
        Some(Split::Yaml(fences)) => range.start < fences.body_start,
        Some(Split::Missing | Split::Unterminated { .. }) => true,
        Some(Split::Foreign { .. }) | None => false,
    }
}

/// The parse and schema findings a conflict in the frontmatter causes: YAML that does not
/// parse, a frontmatter that is not found, not closed or not a mapping, and what the schema
/// rules make of half of each side. Dropped when P015 reports a conflict there.
pub fn caused_by_conflict(code: &str) -> bool {
    matches!(code, "P005" | "P006" | "P008" | "P009" | "P010" | "P011") || code.starts_with('S')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_need_the_whole_marker_at_line_start() {
        assert!(marker("<<<<<<< HEAD").is_some());
        assert!(marker("<<<<<<<").is_some());
        assert!(marker(">>>>>>> feature/x\r").is_some());
        assert!(marker("=======").is_some());
        assert!(marker("||||||| merged common ancestors").is_some());
        assert!(marker("======== ").is_none());
        assert!(marker("<<<<<<<<").is_none());
        assert!(marker(" <<<<<<< HEAD").is_none());
        assert!(marker("<<<<<<").is_none());
    }

    #[test]
    fn a_setext_underline_is_no_conflict() {
        assert!(conflicts("Title\n=======\n\ntext\n").is_empty());
        let found = conflicts("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> x\n>>>>>>> y\n");
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].marker.clone(), found[0].close_line),
            (2..9, Some(6))
        );
        assert!(found[1].stray_close);
    }
}
