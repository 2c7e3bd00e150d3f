//! A fast path for finding a body's headings: a line scanner for ATX headings outside fenced
//! code, for bodies written in plain markdown.
//!
//! It gives up (returns `None`, and the caller runs pulldown-cmark) on anything whose headings a
//! line scanner could misread: tabs, vertical tabs and form feeds, a `\r` that is not part of a `\r\n`, blockquotes, HTML (and so comments), lines that could
//! underline a setext heading, indented or list-nested `#` lines, indented fences, and headings with
//! inline markup, escapes or a closing sequence. For what it accepts it finds exactly the headings
//! pulldown-cmark finds, with the same ranges: a differential test checks this.

use super::Heading;

/// Bytes that make a heading's text differ from its source (inline markup, escapes, entities,
/// a closing sequence): such a body goes to pulldown-cmark. A table: this is checked per byte.
const INLINE: [bool; 256] = {
    let mut table = [false; 256];
    let chars = b"*_`[]<>\\&!~#";
    let mut i = 0;
    while i < chars.len() {
        table[chars[i] as usize] = true;
        i += 1;
    }
    table
};

/// The headings of `text[start..]`, or `None` when the body needs a real markdown parser.
pub(super) fn scan(text: &str, start: usize) -> Option<Vec<Heading>> {
    let body = &text.as_bytes()[start..];
    // a form feed after `#` still opens a heading for pulldown-cmark, and a vertical tab ends
    // its text (both found by the `parse` fuzz target)
    if memchr::memchr2(b'\t', b'<', body).is_some()
        || memchr::memchr2(b'\x0b', b'\x0c', body).is_some()
    {
        return None;
    }
    let has_cr = memchr::memchr(b'\r', body).is_some();
    let mut headings = Vec::new();
    let mut fence: Option<(u8, usize)> = None;
    let mut pos = 0;
    while pos < body.len() {
        let nl = memchr::memchr(b'\n', &body[pos..]).map_or(body.len(), |i| pos + i);
        let mut end = nl;
        if end > pos && body[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &body[pos..end];
        // a lone `\r` ends a line for pulldown-cmark (found by the `parse` fuzz target)
        if has_cr && memchr::memchr(b'\r', line).is_some() {
            return None;
        }
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        if let Some((ch, len)) = fence {
            if indent <= 3 && closes(rest, ch, len) {
                fence = None;
            }
        } else if let Some(open) = opens(rest) {
            // an indented fence may sit in a list item, which closes it when the item ends
            if indent > 0 {
                return None;
            }
            fence = Some(open);
        } else if indent <= 3 {
            match rest.first() {
                Some(b'>') => return None,
                Some(b'#') => {
                    if let Some(h) = heading(text, start + pos + indent, rest)? {
                        headings.push(h);
                    }
                }
                Some(b'=' | b'-') if underline(rest) => return None,
                Some(_) if list_heading(rest) => return None,
                _ => {}
            }
        } else if rest.contains(&b'#') {
            return None;
        }
        pos = nl + 1;
    }
    Some(headings)
}

/// A fence opening: three or more backticks or tildes (a backtick fence's info has none).
fn opens(rest: &[u8]) -> Option<(u8, usize)> {
    let ch = *rest.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.iter().take_while(|&&b| b == ch).count();
    if len < 3 || (ch == b'`' && rest[len..].contains(&b'`')) {
        return None;
    }
    Some((ch, len))
}

/// A fence closing: at least `len` of `ch`, then only spaces.
fn closes(rest: &[u8], ch: u8, len: usize) -> bool {
    let n = rest.iter().take_while(|&&b| b == ch).count();
    n >= len && rest[n..].iter().all(|&b| b == b' ')
}

/// A line of only `=` or only `-` (and spaces): it could underline a setext heading.
fn underline(rest: &[u8]) -> bool {
    let ch = rest[0];
    rest.iter().all(|&b| b == ch || b == b' ')
}

/// A list item whose content starts with `#` (a heading inside the item).
fn list_heading(rest: &[u8]) -> bool {
    let marker = match rest.first() {
        Some(b'-' | b'+' | b'*') => 1,
        Some(b'0'..=b'9') => {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            match rest.get(digits) {
                Some(b'.' | b')') => digits + 1,
                _ => return false,
            }
        }
        _ => return false,
    };
    let spaces = rest[marker..].iter().take_while(|&&b| b == b' ').count();
    spaces > 0 && rest.get(marker + spaces) == Some(&b'#')
}

/// An ATX heading starting at byte `at` of `text` (`rest` is its line from the first `#`).
/// `Some(None)`: not a heading; `None`: give up.
fn heading(text: &str, at: usize, rest: &[u8]) -> Option<Option<Heading>> {
    let level = rest.iter().take_while(|&&b| b == b'#').count();
    if level > 6 || (level < rest.len() && rest[level] != b' ') {
        return Some(None);
    }
    let content = &rest[level..];
    let lead = content.iter().take_while(|&&b| b == b' ').count();
    let trimmed_len = content.len() - content.iter().rev().take_while(|&&b| b == b' ').count();
    if lead >= trimmed_len
        || content[lead..trimmed_len]
            .iter()
            .any(|&b| INLINE[b as usize])
    {
        return None;
    }
    let text_start = at + level + lead;
    let text_end = at + level + trimmed_len;
    Some(Some(Heading {
        level: level as u8,
        // trimmed as the pulldown-cmark path trims it: Unicode spaces too (found by the `parse`
        // fuzz target)
        text: text[text_start..text_end].trim().to_string(),
        range: at..at + rest.len(),
        text_range: text_start..text_end,
    }))
}
