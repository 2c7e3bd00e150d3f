//! Span edits on a file's original bytes, and applying them.

use std::ops::Range;

use serde::Serialize;

/// Replace `range` of a file's bytes with `content`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// Byte range in the file the diagnostic names (empty for an insertion).
    pub range: Range<usize>,
    /// The new text.
    pub content: String,
}

impl Edit {
    /// Replace a range.
    pub fn replace(range: Range<usize>, content: impl Into<String>) -> Self {
        Edit {
            range,
            content: content.into(),
        }
    }

    /// Insert at an offset.
    pub fn insert(at: usize, content: impl Into<String>) -> Self {
        Edit::replace(at..at, content)
    }

    /// Delete a range.
    pub fn delete(range: Range<usize>) -> Self {
        Edit::replace(range, "")
    }
}

/// Apply non-overlapping edits to `text`. Edits that overlap an earlier one are skipped;
/// returns the new text and how many edits were applied.
pub fn apply_edits<'a>(text: &str, edits: impl IntoIterator<Item = &'a Edit>) -> (String, usize) {
    let mut edits: Vec<&Edit> = edits.into_iter().collect();
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut applied = 0;
    for edit in edits {
        if edit.range.start < pos || edit.range.end > text.len() {
            continue;
        }
        out.push_str(&text[pos..edit.range.start]);
        out.push_str(&edit.content);
        pos = edit.range.end;
        applied += 1;
    }
    out.push_str(&text[pos..]);
    (out, applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_edits_skips_overlaps() {
        let edits = [
            Edit::replace(0..3, "ABC"),
            Edit::replace(2..4, "zz"),
            Edit::insert(6, "!"),
        ];
        assert_eq!(apply_edits("abcdef", &edits), ("ABCdef!".to_string(), 2));
    }
}
