//! YAML with a byte span on every node, built from saphyr-parser's event stream.
//!
//! We keep our own arena of nodes instead of a loader's value tree for three reasons: every key
//! and value keeps its exact byte range in the file (diagnostics point at the node; fixes edit the
//! original bytes), duplicate keys are reported where the second key stands, and aliases stay
//! references to their anchor instead of being expanded, so an alias bomb costs one node per alias.

use std::collections::HashMap;
use std::ops::Range;

use saphyr_parser::{Event, Parser, ScalarStyle};

pub mod emit;
mod fast;

/// Nesting deeper than this is refused (a hostile file cannot exhaust the stack of any walker).
pub const MAX_DEPTH: usize = 64;
/// More aliases than this are refused.
pub const MAX_ALIASES: usize = 1024;

/// Index of a node in [`Yaml::nodes`].
pub type NodeId = usize;

/// A parsed YAML document.
#[derive(Debug, Clone, PartialEq)]
pub struct Yaml {
    /// Every node; children refer to each other by index.
    pub nodes: Vec<Node>,
    /// The document's root, `None` for an empty document.
    pub root: Option<NodeId>,
}

/// One node and where it stands in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// What the node holds.
    pub kind: NodeKind,
    /// Byte range in the file (for a block collection: first child's start to last child's end).
    pub span: Range<usize>,
}

/// The shape of a node.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A scalar with its text (after unescaping and folding) and style.
    Scalar {
        /// The text, unescaped and folded.
        value: String,
        /// Plain or quoted (a block scalar counts as quoted).
        style: Style,
    },
    /// A sequence of nodes.
    Seq(Vec<NodeId>),
    /// A mapping: key and value nodes in source order.
    Map(Vec<(NodeId, NodeId)>),
    /// An alias (`*name`) to the node anchored earlier.
    Alias(NodeId),
}

/// How a scalar was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Plain: resolved by the YAML 1.2 core schema (null, bool, int, float, else string).
    Plain,
    /// Quoted or block: always a string.
    Quoted,
}

/// A plain scalar resolved by the YAML 1.2 core schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    /// `null`, `~` or empty.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// Anything else.
    Str(&'a str),
}

/// A YAML problem at a byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// What kind of problem.
    pub kind: YamlErrorKind,
    /// Byte range in the file.
    pub span: Range<usize>,
    /// A human-readable message.
    pub message: String,
    /// For a duplicate key, where the first one stands.
    pub first: Option<Range<usize>>,
}

/// The kinds of YAML problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YamlErrorKind {
    /// The scanner or parser rejected the text.
    Syntax,
    /// A mapping repeats a key; the document still parses (the first key wins).
    DuplicateKey,
    /// Nesting or aliases beyond the limits.
    TooComplex,
}

/// The tab a tab error is about, as a byte offset in `content`: saphyr places such an error at
/// the start of the plain scalar the tab follows (often on a line before), or just past the
/// tab. The tab is the first one in the indentation of a line, from `at`'s line on; `None` when
/// there is none.
fn tab_near(content: &str, at: usize) -> Option<usize> {
    let bytes = content.as_bytes();
    let at = at.min(bytes.len());
    let mut start = content[..at].rfind('\n').map_or(0, |i| i + 1);
    loop {
        let indent = bytes[start..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        // on `at`'s own line, only an indentation that reaches `at` counts
        if start > at || start + indent >= at {
            if let Some(i) = bytes[start..start + indent]
                .iter()
                .position(|&b| b == b'\t')
            {
                return Some(start + i);
            }
        }
        start += bytes[start..].iter().position(|&b| b == b'\n')? + 1;
    }
}

/// Maps saphyr's character indexes to byte offsets in the file.
struct Offsets<'a> {
    content: &'a str,
    base: usize,
    /// byte offset of each char, present only for non-ASCII content
    table: Option<Vec<usize>>,
}

impl<'a> Offsets<'a> {
    fn new(content: &'a str, base: usize) -> Self {
        let table = (!content.is_ascii()).then(|| {
            let mut t: Vec<usize> = content.char_indices().map(|(i, _)| i).collect();
            t.push(content.len());
            t
        });
        Offsets {
            content,
            base,
            table,
        }
    }

    fn byte(&self, char_index: usize) -> usize {
        let local = match &self.table {
            Some(t) => t[char_index.min(t.len() - 1)],
            None => char_index.min(self.content.len()),
        };
        self.base + local
    }
}

enum Open {
    Seq {
        start: usize,
        anchor: usize,
        items: Vec<NodeId>,
    },
    Map {
        start: usize,
        anchor: usize,
        entries: Vec<(NodeId, NodeId)>,
        pending_key: Option<NodeId>,
        seen: HashMap<String, NodeId>,
        /// Where the entries of duplicate keys (left out of `entries`) end: the mapping's span
        /// still covers them, so that an edit after the mapping goes after them too.
        dropped_end: usize,
    },
}

impl Yaml {
    /// Parse `content`, which starts at byte `base` of the file.
    ///
    /// Returns the tree (when the syntax allows one) and every problem found. A syntax error
    /// yields no tree; duplicate keys yield both a tree and errors. The common shape of lesson
    /// frontmatter takes a fast path that builds the same tree; everything else goes through
    /// saphyr.
    pub fn parse(content: &str, base: usize) -> (Option<Yaml>, Vec<YamlError>) {
        match fast::parse(content, base) {
            Some(yaml) => (Some(yaml), Vec::new()),
            None => Yaml::parse_with_saphyr(content, base),
        }
    }

    /// Parse with the fast path only: `None` when the text is outside its subset.
    #[doc(hidden)]
    pub fn parse_fast(content: &str, base: usize) -> Option<Yaml> {
        fast::parse(content, base)
    }

    /// Parse with saphyr only (the reference the fast path is tested against).
    #[doc(hidden)]
    pub fn parse_with_saphyr(content: &str, base: usize) -> (Option<Yaml>, Vec<YamlError>) {
        let offsets = Offsets::new(content, base);
        let mut nodes: Vec<Node> = Vec::new();
        let mut anchors: HashMap<usize, NodeId> = HashMap::new();
        let mut stack: Vec<Open> = Vec::new();
        let mut root = None;
        let mut errors = Vec::new();
        let mut aliases = 0usize;

        for item in Parser::new_from_str(content) {
            let (event, span) = match item {
                Ok(pair) => pair,
                Err(err) => {
                    let mut at = offsets.byte(err.marker().index());
                    let mut span = at..at;
                    if err.info().contains("tab") {
                        if let Some(tab) = tab_near(content, at - base) {
                            at = base + tab;
                            span = at..at + 1;
                        }
                    }
                    errors.push(YamlError {
                        kind: YamlErrorKind::Syntax,
                        span,
                        message: err.info().to_string(),
                        first: None,
                    });
                    return (None, errors);
                }
            };
            let range = offsets.byte(span.start.index())..offsets.byte(span.end.index());
            let finished: Option<(NodeId, usize)> = match event {
                Event::Scalar(value, style, anchor, _tag) => {
                    let style = match style {
                        ScalarStyle::Plain => Style::Plain,
                        _ => Style::Quoted,
                    };
                    nodes.push(Node {
                        kind: NodeKind::Scalar {
                            value: value.into_owned(),
                            style,
                        },
                        span: range,
                    });
                    Some((nodes.len() - 1, anchor))
                }
                Event::Alias(anchor) => {
                    aliases += 1;
                    if aliases > MAX_ALIASES {
                        errors.push(YamlError {
                            kind: YamlErrorKind::TooComplex,
                            span: range,
                            message: format!("more than {MAX_ALIASES} aliases"),
                            first: None,
                        });
                        return (None, errors);
                    }
                    let Some(&target) = anchors.get(&anchor) else {
                        errors.push(YamlError {
                            kind: YamlErrorKind::Syntax,
                            span: range,
                            message: "alias to an unknown anchor".into(),
                            first: None,
                        });
                        return (None, errors);
                    };
                    nodes.push(Node {
                        kind: NodeKind::Alias(target),
                        span: range,
                    });
                    Some((nodes.len() - 1, 0))
                }
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        errors.push(YamlError {
                            kind: YamlErrorKind::TooComplex,
                            span: range,
                            message: format!("nesting deeper than {MAX_DEPTH} levels"),
                            first: None,
                        });
                        return (None, errors);
                    }
                    // flow collections start at their bracket; block ones at their first child
                    let start = if range.is_empty() {
                        usize::MAX
                    } else {
                        range.start
                    };
                    stack.push(if matches!(event, Event::SequenceStart(..)) {
                        Open::Seq {
                            start,
                            anchor,
                            items: Vec::new(),
                        }
                    } else {
                        Open::Map {
                            start,
                            anchor,
                            entries: Vec::new(),
                            pending_key: None,
                            seen: HashMap::new(),
                            dropped_end: 0,
                        }
                    });
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let open = stack.pop().expect("parser balances collections");
                    let (kind, start, anchor, children, dropped_end) = match open {
                        Open::Seq {
                            start,
                            anchor,
                            items,
                        } => {
                            let c: Vec<NodeId> = items.clone();
                            (NodeKind::Seq(items), start, anchor, c, None)
                        }
                        Open::Map {
                            start,
                            anchor,
                            entries,
                            dropped_end,
                            ..
                        } => {
                            let c: Vec<NodeId> =
                                entries.iter().flat_map(|&(k, v)| [k, v]).collect();
                            let dropped = (dropped_end > 0).then_some(dropped_end);
                            (NodeKind::Map(entries), start, anchor, c, dropped)
                        }
                    };
                    let first = children.first().map(|&c| nodes[c].span.start);
                    let last = children
                        .iter()
                        .map(|&c| nodes[c].span.end)
                        .chain(dropped_end)
                        .max();
                    let start = if start == usize::MAX {
                        first.unwrap_or(range.start)
                    } else {
                        start
                    };
                    let end = if range.is_empty() {
                        last.unwrap_or(range.end).max(start)
                    } else {
                        range.end
                    };
                    nodes.push(Node {
                        kind,
                        span: start..end,
                    });
                    Some((nodes.len() - 1, anchor))
                }
                Event::StreamStart
                | Event::StreamEnd
                | Event::DocumentStart(_)
                | Event::DocumentEnd
                | Event::Nothing => None,
            };
            let Some((id, anchor)) = finished else {
                continue;
            };
            if anchor != 0 {
                anchors.insert(anchor, id);
            }
            match stack.last_mut() {
                None => {
                    if root.is_none() {
                        root = Some(id);
                    }
                }
                Some(Open::Seq { items, .. }) => items.push(id),
                Some(Open::Map {
                    entries,
                    pending_key,
                    seen,
                    dropped_end,
                    ..
                }) => match pending_key.take() {
                    None => *pending_key = Some(id),
                    Some(key) => {
                        let key_text = match &nodes[key].kind {
                            NodeKind::Scalar { value, .. } => Some(value.clone()),
                            _ => None,
                        };
                        if let Some(k) = key_text {
                            if let Some(&first) = seen.get(&k) {
                                errors.push(YamlError {
                                    kind: YamlErrorKind::DuplicateKey,
                                    span: nodes[key].span.clone(),
                                    message: format!("duplicate key `{k}`"),
                                    first: Some(nodes[first].span.clone()),
                                });
                                *dropped_end = (*dropped_end).max(nodes[id].span.end);
                                continue;
                            }
                            seen.insert(k, key);
                        }
                        entries.push((key, id));
                    }
                },
            }
        }
        (Some(Yaml { nodes, root }), errors)
    }

    /// A node by id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// Follow aliases to the anchored node (bounded: an alias can only point backwards).
    pub fn resolve(&self, mut id: NodeId) -> NodeId {
        for _ in 0..MAX_ALIASES {
            match self.nodes[id].kind {
                NodeKind::Alias(target) if target != id => id = target,
                _ => return id,
            }
        }
        id
    }

    /// The entries of a mapping node (after alias resolution), or `None` if it is not a mapping.
    pub fn map(&self, id: NodeId) -> Option<&[(NodeId, NodeId)]> {
        match &self.nodes[self.resolve(id)].kind {
            NodeKind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items of a sequence node (after alias resolution), or `None` if it is not a sequence.
    pub fn seq(&self, id: NodeId) -> Option<&[NodeId]> {
        match &self.nodes[self.resolve(id)].kind {
            NodeKind::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The text of a scalar node (after alias resolution).
    pub fn str(&self, id: NodeId) -> Option<&str> {
        match &self.nodes[self.resolve(id)].kind {
            NodeKind::Scalar { value, .. } => Some(value),
            _ => None,
        }
    }

    /// A scalar resolved by the YAML 1.2 core schema, or `None` for a collection.
    pub fn scalar(&self, id: NodeId) -> Option<Scalar<'_>> {
        match &self.nodes[self.resolve(id)].kind {
            NodeKind::Scalar {
                value,
                style: Style::Quoted,
            } => Some(Scalar::Str(value)),
            NodeKind::Scalar {
                value,
                style: Style::Plain,
            } => Some(resolve_plain(value)),
            _ => None,
        }
    }

    /// The value of `key` in a mapping, with the key node.
    pub fn get(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        // the rules look keys up all the time: compare lengths before bytes, and resolve a key
        // only when it is an alias (keys almost never are)
        self.map(map)?
            .iter()
            .find(|&&(k, _)| match &self.nodes[k].kind {
                NodeKind::Scalar { value, .. } => value.len() == key.len() && value == key,
                NodeKind::Alias(_) => self.str(k) == Some(key),
                _ => false,
            })
            .copied()
    }

    /// A name for the node's type, for messages: "string", "number", "mapping", ...
    pub fn type_name(&self, id: NodeId) -> &'static str {
        match self.scalar(id) {
            Some(Scalar::Null) => "null",
            Some(Scalar::Bool(_)) => "boolean",
            Some(Scalar::Int(_)) => "integer",
            Some(Scalar::Float(_)) => "number",
            Some(Scalar::Str(_)) => "string",
            None => match self.nodes[self.resolve(id)].kind {
                NodeKind::Seq(_) => "sequence",
                NodeKind::Map(_) => "mapping",
                _ => "value",
            },
        }
    }

    /// The node as JSON, expanding aliases but never more than `budget` nodes in all.
    pub fn to_json(&self, id: NodeId, budget: &mut usize) -> Option<serde_json::Value> {
        use serde_json::Value;
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        let id = self.resolve(id);
        Some(match &self.nodes[id].kind {
            NodeKind::Scalar { .. } => match self.scalar(id)? {
                Scalar::Null => Value::Null,
                Scalar::Bool(b) => Value::Bool(b),
                Scalar::Int(i) => Value::from(i),
                Scalar::Float(f) => {
                    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                }
                Scalar::Str(s) => Value::String(s.to_string()),
            },
            NodeKind::Seq(items) => Value::Array(
                items
                    .iter()
                    .map(|&i| self.to_json(i, budget))
                    .collect::<Option<_>>()?,
            ),
            NodeKind::Map(entries) => {
                let mut map = serde_json::Map::new();
                for &(k, v) in entries {
                    let key = match self.to_json(k, budget)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    map.insert(key, self.to_json(v, budget)?);
                }
                Value::Object(map)
            }
            NodeKind::Alias(_) => return None,
        })
    }
}

/// Resolve a plain scalar by the YAML 1.2 core schema.
pub fn resolve_plain(value: &str) -> Scalar<'_> {
    match value {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "true" | "True" | "TRUE" => return Scalar::Bool(true),
        "false" | "False" | "FALSE" => return Scalar::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Scalar::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Scalar::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Scalar::Float(f64::NAN),
        _ => {}
    }
    let bytes = value.as_bytes();
    let digits = value.strip_prefix(['-', '+']).unwrap_or(value);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = value.parse::<i64>() {
            return Scalar::Int(i);
        }
        return Scalar::Float(value.parse().unwrap_or(f64::NAN));
    }
    if let Some(hex) = value.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return Scalar::Int(i);
        }
    }
    if let Some(oct) = value.strip_prefix("0o") {
        if let Ok(i) = i64::from_str_radix(oct, 8) {
            return Scalar::Int(i);
        }
    }
    let looks_float = bytes
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && bytes.iter().any(u8::is_ascii_digit)
        && (bytes[0].is_ascii_digit() || matches!(bytes[0], b'.' | b'-' | b'+'));
    if looks_float {
        if let Ok(f) = value.parse::<f64>() {
            return Scalar::Float(f);
        }
    }
    Scalar::Str(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> (Option<Yaml>, Vec<YamlError>) {
        Yaml::parse(s, 0)
    }

    #[test]
    fn spans_are_byte_exact_with_multibyte_and_crlf() {
        let text = "é: 1\r\ntitle:\r\n  multi line\r\n  plain\r\n";
        let (y, errs) = parse(text);
        assert!(errs.is_empty());
        let y = y.unwrap();
        let root = y.root.unwrap();
        let (k, v) = y.get(root, "title").unwrap();
        assert_eq!(&text[y.node(k).span.clone()], "title");
        assert_eq!(&text[y.node(v).span.clone()], "multi line\r\n  plain");
        assert_eq!(y.str(v), Some("multi line plain"));
        assert_eq!(&text[y.node(root).span.clone()], text.trim_end());
    }

    /// The error of a tab in indentation points at the tab, wherever saphyr places it (after a
    /// plain scalar on the line before, or just past the tab), with a multi-byte character
    /// before it.
    #[test]
    fn a_tab_error_points_at_the_tab() {
        for text in [
            "t:\n  d: é x\n\ttags: [a]\n",
            "t:\n  d: é x\n  \ttags: [a]\n",
            "t:\n  - é: a\n\t- b: c\n",
            "t: é\n\tx: y\n",
        ] {
            let (y, errs) = parse(text);
            assert!(y.is_none(), "{text:?}");
            let tab = text.find('\t').unwrap();
            assert_eq!(errs[0].kind, YamlErrorKind::Syntax, "{text:?}");
            assert!(
                errs[0].message.contains("tab"),
                "{text:?}: {}",
                errs[0].message
            );
            assert_eq!(errs[0].span, tab..tab + 1, "{text:?}: {}", errs[0].message);
        }
    }

    #[test]
    fn duplicate_key_points_at_second_key() {
        let text = "a: 1\nb: 2\na: 3\n";
        let (y, errs) = parse(text);
        assert!(y.is_some());
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].kind, YamlErrorKind::DuplicateKey);
        assert_eq!(errs[0].span, 10..11);
    }

    #[test]
    fn a_mapping_spans_its_duplicate_keys_too() {
        // found by the `edit` fuzz target: the list ended after the first `note`, and a key
        // inserted after it split the item in two
        let text = "evidence:\n  - ref: a\n    note: b\n    ref: c\n    note: d\n";
        let (y, errs) = parse(text);
        let y = y.unwrap();
        assert_eq!(errs.len(), 2);
        let (_, list) = y.get(y.root.unwrap(), "evidence").unwrap();
        let end = y.node(list).span.end;
        assert_eq!(text[..end].trim_end(), text.trim_end());
    }

    #[test]
    fn alias_bomb_is_cheap() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let (y, errs) = parse(&text);
        assert!(errs.is_empty());
        let y = y.unwrap();
        assert!(y.nodes.len() < 200);
        let mut budget = 10_000;
        assert_eq!(y.to_json(y.root.unwrap(), &mut budget), None);
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(100), "]".repeat(100));
        let (y, errs) = parse(&text);
        assert!(y.is_none());
        assert_eq!(errs[0].kind, YamlErrorKind::TooComplex);
        // unbalanced and very deep: refused one way or another, never a stack overflow
        let (y, errs) = parse(&"[".repeat(100_000));
        assert!(y.is_none());
        assert!(!errs.is_empty());
    }

    #[test]
    fn core_schema_resolution() {
        assert_eq!(resolve_plain("0.7"), Scalar::Float(0.7));
        assert_eq!(resolve_plain("17"), Scalar::Int(17));
        assert_eq!(resolve_plain("-3"), Scalar::Int(-3));
        assert_eq!(resolve_plain("yes"), Scalar::Str("yes"));
        assert_eq!(resolve_plain("~"), Scalar::Null);
        assert_eq!(resolve_plain("2026-10-01"), Scalar::Str("2026-10-01"));
        assert_eq!(resolve_plain("1e3"), Scalar::Float(1000.0));
    }
}
