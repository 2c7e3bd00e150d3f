//! The invariant every diagnostic must keep, whatever the input: it points inside its file.
//! Shared by `corpora` and `parse_props`.

use lesson::source::Source;
use lesson::Diagnostic;

/// Why `d` does not point inside `src`, if it does not: its byte range lies on char boundaries
/// within the text, its lines are within `1..=line_count + 1` and its columns within
/// `1..=chars in that line + 1`.
pub fn check(src: &Source, d: &Diagnostic) -> Result<(), String> {
    let text = &src.text;
    let range = &d.range;
    let fail = |what: String| Err(format!("{} {}: {what}", d.code, d.name));
    if range.start > range.end || range.end > text.len() {
        return fail(format!(
            "range {range:?} outside the text (len {})",
            text.len()
        ));
    }
    if !text.is_char_boundary(range.start) || !text.is_char_boundary(range.end) {
        return fail(format!("range {range:?} splits a character"));
    }
    let lines = src.line_count();
    for (what, line, column) in [
        ("start", d.line, d.column),
        ("end", d.end_line, d.end_column),
    ] {
        if !(1..=lines + 1).contains(&line) {
            return fail(format!("{what} line {line} outside 1..={}", lines + 1));
        }
        let chars = if line <= lines {
            src.line_text(line).chars().count()
        } else {
            0
        };
        if !(1..=chars + 1).contains(&column) {
            return fail(format!(
                "{what} {line}:{column}: column outside 1..={} (line {line} has {chars} characters)",
                chars + 1
            ));
        }
    }
    Ok(())
}
