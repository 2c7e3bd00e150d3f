//! A fast path for the block YAML that lesson frontmatter is almost always written in.
//!
//! It accepts a conservative subset: block mappings with simple keys, block sequences (indented
//! or at their key's indent), plain scalars (also spread over several lines), one-line quoted
//! scalars without escapes, and one-line flow sequences of plain scalars. On anything else
//! (comments, anchors, aliases, tags, block scalars, flow mappings, escapes, tabs, a stray `\r`,
//! empty values, duplicate keys) it returns `None` and the caller parses with saphyr. For what it
//! accepts it builds exactly the tree saphyr's events would (same nodes, same order, same spans,
//! same values): a differential test checks this on every fixture, corpus file and bench bank.

use super::{Node, NodeId, NodeKind, Style, Yaml};

/// Deeper nesting than this goes to the full parser.
const MAX_DEPTH: usize = 16;

/// Characters that may not start a plain scalar (or that we leave to the full parser).
const INDICATORS: &[u8] = b"-?:,[]{}#&*!|>'\"%@`";

#[derive(Clone, Copy)]
struct Line {
    /// Byte offset of the first byte of the line (in the content).
    start: usize,
    /// Byte offset of the end of the line's text (before `\r\n` or `\n`).
    end: usize,
    /// Leading spaces.
    indent: usize,
    /// `end` before trailing spaces were taken off: saphyr ends a quoted scalar or a flow
    /// sequence there.
    spaced_end: usize,
}

impl Line {
    fn blank(&self) -> bool {
        self.start + self.indent == self.end
    }
}

struct Parser<'a> {
    text: &'a str,
    base: usize,
    lines: Vec<Line>,
    /// Index of the current line.
    at: usize,
    nodes: Vec<Node>,
    /// The entries of the mappings being read, innermost last: each mapping takes its own off
    /// the top in one exact allocation when it ends (rather than growing a vector of its own).
    pairs: Vec<(NodeId, NodeId)>,
    /// The same for the items of the sequences being read.
    items: Vec<NodeId>,
}

/// Whether `bytes` hold a character YAML does not allow in a document (saphyr's "unprintable
/// character": a control other than tab and line endings, DEL, C1 controls, U+FFFE, U+FFFF) or
/// a Unicode line or paragraph separator: the full parser says what it makes of them.
fn unprintable(bytes: &[u8]) -> bool {
    let control = |b: u8| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f;
    if bytes.iter().any(|&b| control(b)) {
        return true;
    }
    // the rest are rare: the lead bytes of their encodings first
    memchr::memchr3(0xC2, 0xE2, 0xEF, bytes).is_some()
        && (bytes.windows(2).any(|w| matches!(w, [0xC2, 0x80..=0x9F]))
            || bytes
                .windows(3)
                .any(|w| matches!(w, [0xEF, 0xBF, 0xBE | 0xBF] | [0xE2, 0x80, 0xA8 | 0xA9])))
}

/// Parse `content` (which starts at byte `base` of the file) when it is in the fast subset.
pub fn parse(content: &str, base: usize) -> Option<Yaml> {
    let bytes = content.as_bytes();
    if memchr::memchr3(b'\t', b'#', b'\\', bytes).is_some()
        || (memchr::memchr(0xEF, bytes).is_some() && content.contains('\u{feff}'))
        || unprintable(bytes)
    {
        return None;
    }
    // a `\r` other than in a line's `\r\n` is looked for line by line only when there is one
    let has_cr = memchr::memchr(b'\r', bytes).is_some();
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let mut lines = Vec::with_capacity(bytes.len() / 24 + 1);
    let mut start = 0;
    while start < bytes.len() {
        let nl = newlines.next().unwrap_or(bytes.len());
        let mut end = nl;
        if end > start && bytes[end - 1] == b'\r' {
            end -= 1;
        }
        if has_cr && memchr::memchr(b'\r', &bytes[start..end]).is_some() {
            return None;
        }
        let indent = bytes[start..end].iter().take_while(|&&b| b == b' ').count();
        let mut line = Line {
            start,
            end,
            indent,
            spaced_end: end,
        };
        // trailing spaces are not content
        while line.end > line.start + line.indent && bytes[line.end - 1] == b' ' {
            line.end -= 1;
        }
        lines.push(line);
        start = nl + 1;
    }
    let mut p = Parser {
        text: content,
        base,
        lines,
        at: 0,
        nodes: Vec::with_capacity(64),
        pairs: Vec::with_capacity(32),
        items: Vec::with_capacity(16),
    };
    p.skip_blank();
    let first = p.line()?;
    if first.indent != 0 {
        return None;
    }
    let root = p.map(0, first.start, 1)?;
    p.skip_blank();
    if p.at != p.lines.len() {
        return None;
    }
    Some(Yaml {
        nodes: p.nodes,
        root: Some(root),
    })
}

impl<'a> Parser<'a> {
    fn line(&self) -> Option<Line> {
        self.lines.get(self.at).copied()
    }

    fn skip_blank(&mut self) {
        while self.line().is_some_and(|l| l.blank()) {
            self.at += 1;
        }
    }

    fn push(&mut self, kind: NodeKind, start: usize, end: usize) -> NodeId {
        self.nodes.push(Node {
            kind,
            span: self.base + start..self.base + end,
        });
        self.nodes.len() - 1
    }

    fn scalar(&mut self, value: String, style: Style, start: usize, end: usize) -> NodeId {
        self.push(NodeKind::Scalar { value, style }, start, end)
    }

    /// Where a block collection stands (relative to the content): from its first child's start
    /// to its children's furthest end.
    fn span_of(&self, children: impl Iterator<Item = NodeId>) -> (usize, usize) {
        let mut span: Option<(usize, usize)> = None;
        for c in children {
            let s = &self.nodes[c].span;
            span = Some(span.map_or((s.start, s.end), |(start, end)| (start, end.max(s.end))));
        }
        let (start, end) = span.expect("a collection here has children");
        (start - self.base, end - self.base)
    }

    /// A block mapping whose keys stand at column `indent`; the first key starts at byte
    /// `first` of the current line (after a `- ` when the mapping is a sequence item).
    fn map(&mut self, indent: usize, first: usize, depth: usize) -> Option<NodeId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let base = self.pairs.len();
        let mut key_start = first;
        loop {
            let line = self.line()?;
            let (key, rest) = self.key(key_start, line.end)?;
            let key_text = &self.text[key.clone()];
            if self.pairs[base..]
                .iter()
                .any(|&(k, _)| self.nodes[k].kind.scalar_value() == Some(key_text))
            {
                return None;
            }
            let key_id = self.scalar(key_text.to_string(), Style::Plain, key.start, key.end);
            let value = match rest {
                Some(rest) => self.inline_value(rest, line.end, indent)?,
                None => self.nested_value(indent, depth)?,
            };
            self.pairs.push((key_id, value));
            self.skip_blank();
            match self.line() {
                Some(next) if next.indent == indent && !self.is_item(next) => {
                    key_start = next.start + next.indent;
                }
                Some(next) if next.indent > indent => return None,
                _ => break,
            }
        }
        let entries: Vec<(NodeId, NodeId)> = self.pairs.drain(base..).collect();
        let (start, end) = self.span_of(entries.iter().flat_map(|&(k, v)| [k, v]));
        Some(self.push(NodeKind::Map(entries), start, end))
    }

    /// A block sequence whose `- ` stand at column `indent`.
    fn seq(&mut self, indent: usize, depth: usize) -> Option<NodeId> {
        if depth > MAX_DEPTH {
            return None;
        }
        let base = self.items.len();
        while let Some(line) = self.line() {
            if line.indent != indent || !self.is_item(line) {
                break;
            }
            let dash = line.start + line.indent;
            let content = dash
                + 1
                + self.text[dash + 1..line.end]
                    .bytes()
                    .take_while(|&b| b == b' ')
                    .count();
            if content == line.end {
                return None;
            }
            let item = if self.key_like(content, line.end) {
                self.map(content - line.start, content, depth + 1)?
            } else {
                self.inline_value(content, line.end, indent)?
            };
            self.items.push(item);
            self.skip_blank();
            if self.line().is_some_and(|next| next.indent > indent) {
                return None;
            }
        }
        if self.items.len() == base {
            return None;
        }
        let items: Vec<NodeId> = self.items.drain(base..).collect();
        let (start, end) = self.span_of(items.iter().copied());
        Some(self.push(NodeKind::Seq(items), start, end))
    }

    fn is_item(&self, line: Line) -> bool {
        let b = self.text.as_bytes();
        let dash = line.start + line.indent;
        b.get(dash) == Some(&b'-') && (dash + 1 == line.end || b[dash + 1] == b' ')
    }

    /// Whether the text from `from` to `end` is a `key: value` or `key:` line.
    fn key_like(&self, from: usize, end: usize) -> bool {
        has_mapping_colon(&self.text[from..end])
    }

    /// Split a `key: value` line at `from`: the key's range and where the value starts (`None`
    /// when the line ends after the colon). Keys are simple identifiers.
    fn key(&self, from: usize, end: usize) -> Option<(std::ops::Range<usize>, Option<usize>)> {
        let bytes = self.text.as_bytes();
        let mut i = from;
        while i < end
            && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'-' | b'.'))
        {
            i += 1;
        }
        if i == from || i >= end || bytes[i] != b':' || bytes[from] == b'-' {
            return None;
        }
        let key = from..i;
        if i + 1 == end {
            return Some((key, None));
        }
        if bytes[i + 1] != b' ' {
            return None;
        }
        let value = i + 1 + bytes[i + 1..end].iter().take_while(|&&b| b == b' ').count();
        Some((key, Some(value)))
    }

    /// The value of a key whose line ends after the colon: a nested mapping or sequence, or a
    /// plain scalar on the following, more indented lines.
    fn nested_value(&mut self, indent: usize, depth: usize) -> Option<NodeId> {
        self.at += 1;
        self.skip_blank();
        let next = self.line()?;
        if self.is_item(next) && next.indent >= indent {
            return self.seq(next.indent, depth + 1);
        }
        if next.indent <= indent {
            return None;
        }
        let content = next.start + next.indent;
        if self.key_like(content, next.end) {
            self.map(next.indent, content, depth + 1)
        } else {
            self.plain(content, next.end, indent)
        }
    }

    /// A value that starts on the current line at `from`: quoted, a flow sequence, or plain
    /// (which may continue on more indented lines). `parent` is the indent of the block the
    /// value belongs to.
    fn inline_value(&mut self, from: usize, end: usize, parent: usize) -> Option<NodeId> {
        let id = match self.text.as_bytes()[from] {
            b'"' | b'\'' => self.quoted(from, end)?,
            b'[' => self.flow_seq(from, end)?,
            _ => return self.plain(from, end, parent),
        };
        // saphyr's span of a quoted scalar or a flow sequence runs on over trailing spaces
        if let Some(line) = self.line() {
            self.nodes[id].span.end = self.base + line.spaced_end;
        }
        self.at += 1;
        self.skip_blank();
        if self.line().is_some_and(|l| l.indent > parent) {
            return None;
        }
        Some(id)
    }

    /// A plain scalar from `from` on the current line, continued by lines indented more than
    /// `parent` (folded: lines joined by one space).
    fn plain(&mut self, from: usize, end: usize, parent: usize) -> Option<NodeId> {
        let first = &self.text[from..end];
        if !plain_ok(first) || INDICATORS.contains(&first.as_bytes()[0]) {
            return None;
        }
        let mut value = first.to_string();
        let mut last_end = end;
        self.at += 1;
        while let Some(line) = self.line() {
            if line.blank() {
                // a blank line inside a scalar folds to a newline: leave that to saphyr
                let mut k = self.at;
                while self.lines.get(k).is_some_and(|l| l.blank()) {
                    k += 1;
                }
                if self.lines.get(k).is_some_and(|l| l.indent > parent) {
                    return None;
                }
                break;
            }
            if line.indent <= parent {
                break;
            }
            let text = &self.text[line.start + line.indent..line.end];
            if !plain_ok(text)
                || INDICATORS.contains(&text.as_bytes()[0])
                || self.key_like(line.start, line.end)
            {
                return None;
            }
            value.push(' ');
            value.push_str(text);
            last_end = line.end;
            self.at += 1;
        }
        Some(self.scalar(value, Style::Plain, from, last_end))
    }

    /// A quoted scalar that ends on its line, without escapes.
    fn quoted(&mut self, from: usize, end: usize) -> Option<NodeId> {
        let s = &self.text[from..end];
        let quote = s.as_bytes()[0];
        if s.len() < 2 || s.as_bytes()[s.len() - 1] != quote {
            return None;
        }
        let inner = &s[1..s.len() - 1];
        if inner.as_bytes().contains(&quote) || inner.contains('\\') {
            return None;
        }
        Some(self.scalar(inner.to_string(), Style::Quoted, from, end))
    }

    /// `[a, b, c]` of plain scalars on one line.
    fn flow_seq(&mut self, from: usize, end: usize) -> Option<NodeId> {
        let s = &self.text[from..end];
        if !s.ends_with(']') {
            return None;
        }
        let inner_start = from + 1;
        let inner = &self.text[inner_start..end - 1];
        let mut items = Vec::new();
        if !inner.trim_matches(' ').is_empty() {
            let mut offset = inner_start;
            for part in inner.split(',') {
                let lead = part.len() - part.trim_start_matches(' ').len();
                let item = part.trim_matches(' ');
                if item.is_empty()
                    || INDICATORS.contains(&item.as_bytes()[0])
                    || item
                        .bytes()
                        .any(|b| matches!(b, b'[' | b']' | b'{' | b'}' | b'"' | b'\'' | b'#'))
                    || has_mapping_colon(item)
                {
                    return None;
                }
                let start = offset + lead;
                items.push(self.scalar(item.to_string(), Style::Plain, start, start + item.len()));
                offset += part.len() + 1;
            }
        }
        Some(self.push(NodeKind::Seq(items), from, end))
    }
}

/// A plain scalar's text that the fast path reads exactly like YAML does (`#` never gets here:
/// a file with one goes to saphyr).
fn plain_ok(s: &str) -> bool {
    !s.is_empty() && !has_mapping_colon(s)
}

/// Whether `s` holds `: ` or ends with `:` (a mapping indicator in block context).
fn has_mapping_colon(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b':', b).any(|i| i + 1 == b.len() || b[i + 1] == b' ')
}

impl NodeKind {
    fn scalar_value(&self) -> Option<&str> {
        match self {
            NodeKind::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `\r` that is not part of a line's `\r\n` is left to saphyr, wherever it stands; a
    /// `\r\n` line ending is read here.
    #[test]
    fn a_stray_carriage_return_goes_to_the_full_parser() {
        for text in ["a: b\rc\n", "a: b\r\n c\rd\r\n", "a:\r b\n"] {
            assert_eq!(parse(text, 0), None, "{text:?}");
        }
        let yaml = parse("a: b\r\nc: d\r\n", 0).expect("CRLF is in the fast subset");
        let root = yaml.root.expect("a mapping");
        assert_eq!(
            yaml.get(root, "c").map(|(_, v)| yaml.str(v)),
            Some(Some("d"))
        );
    }

    /// Found by the `parse` fuzz target: a NUL byte in a plain scalar was read here, where
    /// saphyr refuses it ("found unprintable character").
    #[test]
    fn unprintable_characters_go_to_the_full_parser() {
        for c in [
            '\0', '\u{1}', '\u{7f}', '\u{85}', '\u{9f}', '\u{fffe}', '\u{ffff}', '\u{2028}',
        ] {
            let text = format!("a: b{c}c\n");
            assert_eq!(parse(&text, 0), None, "{c:?}");
        }
        for c in ['\u{a0}', '\u{e9}', '\u{2027}', '\u{fffd}', '\u{1f600}'] {
            let text = format!("a: b{c}c\n");
            assert!(parse(&text, 0).is_some(), "{c:?}");
        }
    }

    /// Found by the `parse` fuzz target: saphyr ends a flow sequence followed by spaces at the
    /// end of its line, the fast path ended it at `]`. Trailing spaces after every kind of
    /// value the fast path reads, at every depth, give saphyr's tree or go to saphyr.
    #[test]
    fn trailing_spaces_give_saphyrs_spans() {
        let values = ["[a]", "[a, b]", "[]", "'q'", "\"q\"", "plain", "two words"];
        let mut differ = Vec::new();
        for value in values {
            for pad in [" ", "    "] {
                for eol in ["\n", "\r\n"] {
                    let texts = [
                        format!("k: {value}{pad}{eol}x: 1{eol}"),
                        format!("k: {value}{pad}{eol}"),
                        format!("t:{eol}  k: {value}{pad}{eol}x: 1{eol}"),
                        format!("t:{eol}  - {value}{pad}{eol}  - b{eol}"),
                        format!("t:{eol}- {value}{pad}{eol}"),
                    ];
                    for text in texts {
                        if let Some(fast) = parse(&text, 4) {
                            let (reference, errors) = Yaml::parse_with_saphyr(&text, 4);
                            if !errors.is_empty() || Some(fast) != reference {
                                differ.push(text);
                            }
                        }
                    }
                }
            }
        }
        assert!(
            differ.is_empty(),
            "the fast path differs from saphyr on {differ:#?}"
        );
    }
}
