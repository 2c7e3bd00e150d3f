//! `index-stale` (B008).

use std::ops::Range;

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::lint::Check;
use crate::source::Source;

declare_rule! {
    /// `_index.md` is missing or out of date.
    ///
    /// ## What it does
    /// Renders `_index.md` from the bank's lessons (with the bank's `templates/_index.md.j2`
    /// when it has one) and compares it with the file, byte for byte. Points at the first line
    /// that differs. The fix writes the rendered index, as `lesson index` does.
    ///
    /// ## Why is this bad?
    /// AIP-11 requires an index listing every lesson with its slug, title, outcome, confidence
    /// and counts. Readers and runtimes that trust a stale index miss new lessons and apply
    /// superseded or expired ones.
    ///
    /// ## Example
    /// A lesson was added with a text editor, and `_index.md` was not regenerated:
    /// ```text
    /// 1 lesson: 1 active, 0 superseded, 0 expired.
    /// ```
    /// Run `lesson index` (or `lesson lint --fix`) to write:
    /// ```text
    /// 2 lessons: 2 active, 0 superseded, 0 expired.
    /// ```
    pub static RULE = {
        code: "B008",
        name: "index-stale",
        level: Error,
        fixable: true,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    // the index is only cloned (or an empty one made) for a finding
    let source = || {
        bank.index
            .clone()
            .unwrap_or_else(|| Source::new(bank.index_path(), String::new()))
    };
    let rendered = match crate::index_md::render_parts(bank) {
        Ok(rendered) => rendered,
        Err(err) => {
            out.push(Diagnostic::new(
                &RULE,
                &source(),
                0..0,
                format!("cannot render `_index.md`: {err}"),
            ));
            return;
        }
    };
    if bank
        .index
        .as_ref()
        .is_some_and(|s| rendered.matches(&s.text))
    {
        return;
    }
    let rendered = rendered.into_string();
    let source = source();
    let fix = Fix::safe(
        "regenerate `_index.md`",
        vec![Edit::replace(0..source.text.len(), rendered.clone())],
    );
    let diagnostic = match &bank.index {
        None => Diagnostic::new(&RULE, &source, 0..0, "`_index.md` is missing"),
        Some(old) => {
            let (line, range) = first_difference(&old.text, &rendered);
            Diagnostic::new(
                &RULE,
                &source,
                range,
                format!("`_index.md` is out of date from line {line}"),
            )
        }
    };
    out.push(
        diagnostic
            .with_help("run `lesson index` to regenerate it")
            .with_fix(fix),
    );
}

/// The 1-based number and byte range (without its line ending) of the first line of `old`
/// that differs from `new`; past the end of `old` when `old` is a prefix of `new`.
fn first_difference(old: &str, new: &str) -> (usize, Range<usize>) {
    let mut start = 0;
    let mut new_lines = new.split_inclusive('\n');
    for (i, line) in old.split_inclusive('\n').enumerate() {
        if new_lines.next() != Some(line) {
            let content = line.trim_end_matches(['\n', '\r']);
            return (i + 1, start..start + content.len());
        }
        start += line.len();
    }
    let line = old.split_inclusive('\n').count() + 1;
    (line, old.len()..old.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_points_at_the_line() {
        assert_eq!(first_difference("a\nb\nc\n", "a\nx\nc\n"), (2, 2..3));
        assert_eq!(first_difference("a\n", "a\nb\n"), (2, 2..2));
        assert_eq!(first_difference("a\nb", "a\nb\n"), (2, 2..3));
        assert_eq!(first_difference("", "a\n"), (1, 0..0));
    }
}
