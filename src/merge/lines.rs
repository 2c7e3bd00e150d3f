//! A three-way merge of lines (diff3), as `git merge-file` does it: the changes each side made to
//! the base are taken when they do not overlap; changes that overlap or touch are a conflict
//! unless both sides made the same change.

use std::ops::Range;

use similar::{capture_diff_slices, Algorithm, DiffOp};

/// The result of a line merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMerge {
    /// The merged text; each conflict is written between markers, as `git merge-file` does.
    pub text: String,
    /// The base's lines (0-based, end exclusive) of each conflict.
    pub conflicts: Vec<Range<usize>>,
}

impl LineMerge {
    /// Whether both sides' changes merged without a conflict.
    pub fn is_clean(&self) -> bool {
        self.conflicts.is_empty()
    }
}

/// The lines of a text, each with its line ending.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A change of one side: base lines `base` became the side's lines `side`.
#[derive(Debug, Clone)]
struct Hunk {
    base: Range<usize>,
    side: Range<usize>,
}

fn hunks(base: &[&str], side: &[&str]) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, base, side) {
        let (b, s) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                old_index..old_index + old_len,
                new_index..new_index + new_len,
            ),
        };
        // a delete followed by an insert (or the reverse) is one change
        match out.last_mut() {
            Some(last) if last.base.end == b.start && last.side.end == s.start => {
                last.base.end = b.end;
                last.side.end = s.end;
            }
            _ => out.push(Hunk { base: b, side: s }),
        }
    }
    out
}

/// One side's text for the base lines `range`, with its hunks inside the range applied.
fn side_text(base: &[&str], side: &[&str], hunks: &[&Hunk], range: Range<usize>) -> String {
    let mut out = String::new();
    let mut at = range.start;
    for h in hunks {
        for line in &base[at..h.base.start] {
            out.push_str(line);
        }
        for line in &side[h.side.clone()] {
            out.push_str(line);
        }
        at = h.base.end;
    }
    for line in &base[at..range.end] {
        out.push_str(line);
    }
    out
}

/// Merge `ours` and `theirs`, both changed from `base`, line by line. A conflict is written as
/// `git merge-file` writes it (`<<<<<<< ours_label`, `=======`, `>>>>>>> theirs_label`).
pub fn merge(base: &str, ours: &str, theirs: &str, labels: (&str, &str)) -> LineMerge {
    let b = split_lines(base);
    let o = split_lines(ours);
    let t = split_lines(theirs);
    let ho = hunks(&b, &o);
    let ht = hunks(&b, &t);
    // every hunk of both sides, by where it starts in the base (ours first on a tie)
    let mut all: Vec<(bool, &Hunk)> = ho
        .iter()
        .map(|h| (true, h))
        .chain(ht.iter().map(|h| (false, h)))
        .collect();
    all.sort_by_key(|(is_ours, h)| (h.base.start, h.base.end, !*is_ours));

    let mut text = String::new();
    let mut conflicts = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while i < all.len() {
        // a cluster: hunks whose base ranges overlap or touch
        let start = all[i].1.base.start;
        let mut end = all[i].1.base.end;
        let mut j = i + 1;
        while j < all.len() && all[j].1.base.start <= end {
            end = end.max(all[j].1.base.end);
            j += 1;
        }
        let cluster = &all[i..j];
        for line in &b[at..start] {
            text.push_str(line);
        }
        let mine: Vec<&Hunk> = cluster
            .iter()
            .filter(|(o, _)| *o)
            .map(|(_, h)| *h)
            .collect();
        let yours: Vec<&Hunk> = cluster
            .iter()
            .filter(|(o, _)| !*o)
            .map(|(_, h)| *h)
            .collect();
        let ours_text = side_text(&b, &o, &mine, start..end);
        let theirs_text = side_text(&b, &t, &yours, start..end);
        if mine.is_empty() {
            text.push_str(&theirs_text);
        } else if yours.is_empty() || ours_text == theirs_text {
            text.push_str(&ours_text);
        } else {
            conflicts.push(start..end);
            text.push_str(&format!("<<<<<<< {}\n", labels.0));
            push_terminated(&mut text, &ours_text);
            text.push_str("=======\n");
            push_terminated(&mut text, &theirs_text);
            text.push_str(&format!(">>>>>>> {}\n", labels.1));
        }
        at = end;
        i = j;
    }
    for line in &b[at..] {
        text.push_str(line);
    }
    LineMerge { text, conflicts }
}

fn push_terminated(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(base: &str, ours: &str, theirs: &str) -> LineMerge {
        merge(base, ours, theirs, ("ours", "theirs"))
    }

    #[test]
    fn changes_apart_merge() {
        let r = m("a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n", "a\nb\nc\nd\nE\n");
        assert_eq!(
            r,
            LineMerge {
                text: "A\nb\nc\nd\nE\n".into(),
                conflicts: vec![]
            }
        );
    }

    #[test]
    fn the_same_change_on_both_sides_is_taken_once() {
        let r = m("a\nb\n", "a\nx\nb\n", "a\nx\nb\n");
        assert_eq!(r.text, "a\nx\nb\n");
        assert!(r.is_clean());
    }

    #[test]
    fn insertions_at_one_place_conflict() {
        let r = m("a\nb\n", "a\nx\nb\n", "a\ny\nb\n");
        assert_eq!(r.conflicts, vec![1..1]);
        assert_eq!(
            r.text,
            "a\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\nb\n"
        );
    }

    #[test]
    fn touching_changes_conflict_as_in_git() {
        let r = m("a\nb\nc\n", "A\nb\nc\n", "a\nB\nc\n");
        assert_eq!(r.conflicts, vec![0..2]);
        assert!(r
            .text
            .contains("<<<<<<< ours\nA\nb\n=======\na\nB\n>>>>>>> theirs\n"));
    }

    #[test]
    fn one_side_unchanged_takes_the_other() {
        assert_eq!(m("a\n", "a\n", "b\nc").text, "b\nc");
        assert_eq!(m("a\n", "", "a\n").text, "");
    }
}
