//! Span edits of a lesson's frontmatter: set a top-level scalar, add a top-level key, append an
//! item to a list. Each edit touches only the bytes that must change and copies the style it
//! finds (indentation, dash spacing, flow or block lists, key order of evidence items, CRLF), so
//! a human's comments, key order and quoting survive. Nothing here re-serialises YAML.

use std::ops::Range;

use crate::diagnostic::Edit;
use crate::document::Document;
use crate::lesson::Counts;
use crate::lesson::Outcome;
use crate::yaml::emit::{yaml_flow_scalar, yaml_scalar};
use crate::yaml::{NodeId, NodeKind, Scalar, Yaml};

/// The frontmatter cannot be edited in place (the message says why and what to do).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unedit(pub String);

/// A lesson's frontmatter, ready for span edits.
pub struct Frontmatter<'a> {
    text: &'a str,
    yaml: &'a Yaml,
    root: NodeId,
    eol: &'static str,
}

/// An evidence item to append.
#[derive(Debug, Clone, Copy)]
pub struct NewItem<'a> {
    /// `kind`.
    pub kind: &'a str,
    /// `ref`.
    pub reference: &'a str,
    /// `note`.
    pub note: Option<&'a str>,
}

impl<'a> Frontmatter<'a> {
    /// The frontmatter of a parsed document, when it is a block mapping.
    pub fn of(doc: &'a Document) -> Result<Frontmatter<'a>, Unedit> {
        let unusual = |why: &str| Unedit(why.to_string());
        let (Some(fences), Some(yaml), Some(root)) = (doc.fences(), &doc.yaml, doc.root_map())
        else {
            return Err(unusual(
                "the frontmatter is not a YAML mapping; `lesson lint` says why",
            ));
        };
        let text = doc.source.text.as_str();
        if text[yaml.node(root).span.start..].starts_with('{') {
            return Err(unusual(
                "the frontmatter is one flow mapping (`{...}`); write it as one key per line",
            ));
        }
        // YAML ends a line at a lone `\r` too; the edits find lines by `\n` (found by the
        // `edit` fuzz target: an item appended after the line a lone `\r` had ended)
        let content = text[fences.content.clone()].as_bytes();
        let lone_cr = content
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'\r' && content.get(i + 1) != Some(&b'\n'));
        if lone_cr {
            return Err(unusual(
                "the frontmatter has a carriage return that ends no `\\r\\n` line; write its lines with one line ending",
            ));
        }
        let eol = if text[fences.open.end..].starts_with("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        Ok(Frontmatter {
            text,
            yaml,
            root,
            eol,
        })
    }

    fn span(&self, id: NodeId) -> Range<usize> {
        self.yaml.node(id).span.clone()
    }

    fn get(&self, key: &str) -> Option<(NodeId, NodeId)> {
        self.yaml.get(self.root, key)
    }

    /// The bytes of a top-level key's value as written, without a trailing comment or blanks
    /// (the parser's span of a quoted scalar or a flow list can run on over them).
    pub fn value_range(&self, key: &str) -> Option<Range<usize>> {
        let (_, value) = self.get(key)?;
        let span = self.span(value);
        Some(span.start..node_end(self.text, span))
    }

    /// Where a line goes after the last top-level entry, and the entries' indentation.
    fn after_last_entry(&self) -> Result<(usize, &'a str), Unedit> {
        let entries = self.yaml.map(self.root).unwrap_or_default();
        let Some(&(key, value)) = entries.last() else {
            return Err(Unedit("the frontmatter has no keys".into()));
        };
        let end = self.span(key).end.max(self.span(value).end);
        let key_start = self.span(key).start;
        let indent = &self.text[line_start(self.text, key_start)..key_start];
        if !indent.chars().all(|c| c == ' ') {
            return Err(Unedit(
                "the last top-level key does not start its own line".into(),
            ));
        }
        Ok((after_line(self.text, end), indent))
    }

    /// Insert `key: value` lines after the last top-level entry.
    fn insert_lines(&self, lines: &[(&str, String)]) -> Result<Edit, Unedit> {
        let (at, indent) = self.after_last_entry()?;
        let mut text = String::new();
        if at == self.text.len() || !self.text[..at].ends_with('\n') {
            text.push_str(self.eol);
        }
        for (key, value) in lines {
            text.push_str(&format!("{indent}{key}: {value}{}", self.eol));
        }
        Ok(Edit::insert(at, text))
    }

    /// Replace a top-level value with `value` (plain text), or fill an empty one.
    fn replace_value(&self, key: NodeId, value: NodeId, with: &str) -> Option<Edit> {
        let span = self.span(value);
        let span = span.start..node_end(self.text, span);
        if !span.is_empty() {
            return (self.text[span.clone()] != *with).then(|| Edit::replace(span, with));
        }
        let key_end = self.span(key).end;
        let colon = key_end + self.text[key_end..].find(':')?;
        Some(Edit::insert(colon + 1, format!(" {with}")))
    }

    /// Edits that make `success_count` and `failure_count` say `counts`: the values replaced,
    /// missing keys inserted after the last top-level key.
    pub fn set_counts(&self, counts: Counts) -> Result<Vec<Edit>, Unedit> {
        let mut edits = Vec::new();
        let mut missing = Vec::new();
        for (key, n) in [
            ("success_count", counts.success_count),
            ("failure_count", counts.failure_count),
        ] {
            match self.get(key) {
                Some((k, v)) => edits.extend(self.replace_value(k, v, &n.to_string())),
                None => missing.push((key, n.to_string())),
            }
        }
        if !missing.is_empty() {
            edits.push(self.insert_lines(&missing)?);
        }
        Ok(edits)
    }

    /// The edit that sets `outcome`, if it differs.
    pub fn set_outcome(&self, outcome: Outcome) -> Result<Option<Edit>, Unedit> {
        match self.get("outcome") {
            Some((k, v)) => Ok(self.replace_value(k, v, outcome.as_str())),
            None => Ok(Some(
                self.insert_lines(&[("outcome", outcome.as_str().to_string())])?,
            )),
        }
    }

    /// The edit that appends an item to `evidence`, in the style of the last item.
    pub fn append_evidence(&self, item: NewItem<'_>) -> Result<Edit, Unedit> {
        let Some((_, list)) = self.get("evidence") else {
            return Err(Unedit("the lesson has no `evidence` list".into()));
        };
        let Some(items) = self.yaml.seq(list) else {
            return Err(Unedit("`evidence` is not a list".into()));
        };
        let fields = |order: &[&str]| -> Vec<(&'static str, Option<&str>)> {
            let mut keys: Vec<&'static str> = Vec::new();
            for k in order.iter().chain(&["kind", "ref", "note"]) {
                if let Some(known) = ["kind", "ref", "note"].into_iter().find(|x| x == k) {
                    if !keys.contains(&known) {
                        keys.push(known);
                    }
                }
            }
            keys.into_iter()
                .map(|k| match k {
                    "kind" => (k, Some(item.kind)),
                    "ref" => (k, Some(item.reference)),
                    _ => (k, item.note),
                })
                .filter(|(_, v)| v.is_some())
                .collect()
        };
        let flow_map = |order: &[&str]| {
            let parts: Vec<String> = fields(order)
                .into_iter()
                .map(|(k, v)| format!("{k}: {}", yaml_flow_scalar(v.unwrap_or_default())))
                .collect();
            format!("{{{}}}", parts.join(", "))
        };
        let span = self.span(list);
        if self.text[span.start..].starts_with('[') {
            let order = items.last().map(|&i| self.key_order(i)).unwrap_or_default();
            return Ok(self.append_flow(span, items, &flow_map(&order)));
        }
        let &last = items.last().expect("a block list has items");
        let last_span = self.span(last);
        let prefix = self.dash_prefix(last_span.start)?;
        let order = self.key_order(last);
        let mut text = String::new();
        if self.text[last_span.start..].starts_with('{') {
            text.push_str(&format!("{prefix}{}{}", flow_map(&order), self.eol));
        } else {
            let continuation = " ".repeat(prefix.chars().count());
            for (i, (k, v)) in fields(&order).into_iter().enumerate() {
                let lead = if i == 0 { prefix } else { &continuation };
                let v = yaml_scalar(v.unwrap_or_default());
                text.push_str(&format!("{lead}{k}: {v}{}", self.eol));
            }
        }
        Ok(Edit::insert(after_line(self.text, last_span.end), text))
    }

    /// The edit that takes `metadata.lesson.quarantine` out (`lesson review --approve`): its
    /// lines deleted, and with them `lesson:` when it held nothing else, and `metadata:` when
    /// that held nothing else. `None` when the lesson has no such key; refused when one of the
    /// three is written in flow style (`{...}`) or does not start its own line.
    pub fn remove_quarantine(&self) -> Result<Option<Edit>, Unedit> {
        let Some((meta_key, meta)) = self.get("metadata") else {
            return Ok(None);
        };
        let Some((ours_key, ours)) = self.yaml.get(meta, "lesson") else {
            return Ok(None);
        };
        let Some((key, value)) = self.yaml.get(ours, crate::lesson::QUARANTINE_KEY) else {
            return Ok(None);
        };
        let alone = |map: NodeId| self.yaml.map(map).is_some_and(|entries| entries.len() == 1);
        let (key, value) = if !alone(ours) {
            (key, value)
        } else if !alone(meta) {
            (ours_key, ours)
        } else {
            (meta_key, meta)
        };
        for map in [meta, ours] {
            if self.text[self.span(map).start..].starts_with('{') {
                return Err(Unedit(
                    "`metadata.lesson` is written as a flow mapping (`{...}`); write one key per line"
                        .into(),
                ));
            }
        }
        let key_start = self.span(key).start;
        let start = line_start(self.text, key_start);
        if !self.text[start..key_start].chars().all(|c| c == ' ') {
            return Err(Unedit(
                "the `quarantine` key does not start its own line".into(),
            ));
        }
        let end = after_line(
            self.text,
            node_end(self.text, self.span(value)).max(self.span(key).end),
        );
        Ok(Some(Edit::delete(start..end)))
    }

    /// The edit that appends `slugs` to `supersedes` (creating the key when absent), or `None`
    /// when there is nothing to add. Slugs already listed are skipped.
    pub fn add_supersedes(&self, slugs: &[&str]) -> Result<Option<Edit>, Unedit> {
        let Some((key, list)) = self.get("supersedes") else {
            if slugs.is_empty() {
                return Ok(None);
            }
            return Ok(Some(
                self.insert_lines(&[("supersedes", flow_list(slugs))])?,
            ));
        };
        match self.yaml.scalar(list) {
            Some(Scalar::Null) => {
                return Ok((!slugs.is_empty())
                    .then(|| self.replace_value(key, list, &flow_list(slugs)))
                    .flatten());
            }
            Some(_) => return Err(Unedit("`supersedes` is not a list".into())),
            None => {}
        }
        let Some(items) = self.yaml.seq(list) else {
            return Err(Unedit("`supersedes` is not a list".into()));
        };
        let listed: Vec<&str> = items.iter().filter_map(|&i| self.yaml.str(i)).collect();
        let new: Vec<&str> = slugs
            .iter()
            .copied()
            .filter(|s| !listed.contains(s))
            .collect();
        if new.is_empty() {
            return Ok(None);
        }
        let span = self.span(list);
        if self.text[span.start..].starts_with('[') {
            let joined: Vec<String> = new.iter().map(|s| yaml_flow_scalar(s)).collect();
            return Ok(Some(self.append_flow(span, items, &joined.join(", "))));
        }
        let &last = items.last().expect("a block list has items");
        let last_span = self.span(last);
        let prefix = self.dash_prefix(last_span.start)?;
        let text: String = new
            .iter()
            .map(|s| format!("{prefix}{}{}", yaml_scalar(s), self.eol))
            .collect();
        Ok(Some(Edit::insert(
            after_line(self.text, last_span.end),
            text,
        )))
    }

    /// Insert `text` as the last item(s) of the flow list at `span`.
    fn append_flow(&self, span: Range<usize>, items: &[NodeId], text: &str) -> Edit {
        match items.last() {
            Some(&last) => Edit::insert(node_end(self.text, self.span(last)), format!(", {text}")),
            None => Edit::insert(span.start + 1, text.to_string()),
        }
    }

    /// The text before a block list item on its line: indentation, `-`, spaces.
    fn dash_prefix(&self, item_start: usize) -> Result<&'a str, Unedit> {
        let prefix = &self.text[line_start(self.text, item_start)..item_start];
        let after_indent = prefix.trim_start_matches(' ');
        let ok = after_indent.len() >= 2
            && after_indent.starts_with('-')
            && after_indent[1..].chars().all(|c| c == ' ');
        if ok {
            Ok(prefix)
        } else {
            Err(Unedit(
                "a list item does not start its own `- ` line; add the entry by hand".into(),
            ))
        }
    }

    /// The keys of a mapping node, in source order.
    fn key_order(&self, map: NodeId) -> Vec<&'a str> {
        match &self.yaml.node(self.yaml.resolve(map)).kind {
            NodeKind::Map(entries) => entries
                .iter()
                .filter_map(|&(k, _)| self.yaml.str(k))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// Where the line holding `offset` starts.
fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// Where the line after the one holding the last non-blank byte before `end` starts (a block
/// scalar's span can run past its last line into the blank lines after it). A trailing comment
/// stays on its line.
fn after_line(text: &str, end: usize) -> usize {
    let content_end = text[..end].trim_end().len();
    text[content_end..]
        .find('\n')
        .map_or(text.len(), |i| content_end + i + 1)
}

/// Where the node at `span` really ends: after the closing quote of a quoted scalar, the
/// closing bracket of a flow collection, the last non-blank byte of anything else.
fn node_end(text: &str, span: Range<usize>) -> usize {
    let bytes = text.as_bytes();
    let trimmed = span.start + text[span.clone()].trim_end().len();
    let scanned = match bytes.get(span.start) {
        Some(b'\'' | b'"') if span.start < span.end => skip_quoted(bytes, span.start),
        Some(b'[' | b'{') if span.start < span.end => skip_flow(bytes, span.start),
        _ => None,
    };
    scanned.filter(|&end| end <= span.end).unwrap_or(trimmed)
}

/// The offset after the quoted scalar that starts at `start`.
fn skip_quoted(bytes: &[u8], start: usize) -> Option<usize> {
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The offset after the flow collection that starts at `start` (quotes and comments skipped).
fn skip_flow(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'\'' | b'"' => {
                i = skip_quoted(bytes, i)?;
                continue;
            }
            b'#' if i > 0 && bytes[i - 1].is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `[a, b]`.
fn flow_list(items: &[&str]) -> String {
    let items: Vec<String> = items.iter().map(|s| yaml_flow_scalar(s)).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::apply_edits;
    use crate::source::Source;

    fn doc(text: &str) -> Document {
        Document::parse(Source::new("x.md", text.to_string()), None)
    }

    fn edited(text: &str, f: impl Fn(&Frontmatter) -> Vec<Edit>) -> String {
        let d = doc(text);
        let fm = Frontmatter::of(&d).unwrap();
        apply_edits(text, &f(&fm)).0
    }

    const ITEM: NewItem = NewItem {
        kind: "run",
        reference: "r2",
        note: Some("it worked: twice"),
    };

    #[test]
    fn quarantine_is_removed_with_what_only_it_needed() {
        let remove = |text: &str| {
            edited(text, |fm| {
                fm.remove_quarantine().unwrap().into_iter().collect()
            })
        };
        // beside other keys of ours: its line only (a block list too)
        let text = "---\nslug: a\nmetadata:\n  lesson:\n    origin: {source: x}\n    quarantine: [D007] # why\n  acme: 1\n---\nbody\n";
        assert_eq!(
            remove(text),
            "---\nslug: a\nmetadata:\n  lesson:\n    origin: {source: x}\n  acme: 1\n---\nbody\n"
        );
        let text = "---\nmetadata:\n  lesson:\n    quarantine:\n      - D007\n      - D010\n    pinned: true\nslug: a\n---\n";
        assert_eq!(
            remove(text),
            "---\nmetadata:\n  lesson:\n    pinned: true\nslug: a\n---\n"
        );
        // the only key of ours: `lesson:` goes; the only vendor: `metadata:` goes
        let text = "---\nslug: a\nmetadata:\n  acme: 1\n  lesson:\n    quarantine: [D007]\n---\n";
        assert_eq!(remove(text), "---\nslug: a\nmetadata:\n  acme: 1\n---\n");
        let text =
            "---\nslug: a\nmetadata:\n  lesson:\n    quarantine: [D007]\nsuccess_count: 0\n---\n";
        assert_eq!(remove(text), "---\nslug: a\nsuccess_count: 0\n---\n");
        // CRLF kept, nothing to remove, flow style refused
        let text = "---\r\nslug: a\r\nmetadata:\r\n  lesson:\r\n    pinned: true\r\n    quarantine: []\r\n---\r\n";
        assert_eq!(
            remove(text),
            "---\r\nslug: a\r\nmetadata:\r\n  lesson:\r\n    pinned: true\r\n---\r\n"
        );
        let d = doc("---\nslug: a\nmetadata:\n  lesson: {pinned: true}\n---\n");
        assert_eq!(Frontmatter::of(&d).unwrap().remove_quarantine(), Ok(None));
        let d = doc("---\nslug: a\nmetadata:\n  lesson: {quarantine: [D007], pinned: true}\n---\n");
        assert!(Frontmatter::of(&d).unwrap().remove_quarantine().is_err());
    }

    #[test]
    fn counts_are_replaced_or_inserted() {
        let text =
            "---\nslug: a\nsuccess_count: 1 # cached\nmetadata:\n  x: |\n    y\n\n---\nbody\n";
        let out = edited(text, |fm| {
            fm.set_counts(Counts {
                success_count: 2,
                failure_count: 5,
            })
            .unwrap()
        });
        assert_eq!(
            out,
            "---\nslug: a\nsuccess_count: 2 # cached\nmetadata:\n  x: |\n    y\nfailure_count: 5\n\n---\nbody\n"
        );
        let out = edited("---\r\nslug: a\r\nfailure_count:\r\n---\r\n", |fm| {
            fm.set_counts(Counts {
                success_count: 0,
                failure_count: 1,
            })
            .unwrap()
        });
        assert_eq!(
            out,
            "---\r\nslug: a\r\nfailure_count: 1\r\nsuccess_count: 0\r\n---\r\n"
        );
    }

    #[test]
    fn evidence_follows_the_last_item() {
        let text = "---\nevidence:\n-   ref: r1\n    kind: run # first\nsuccess_count: 0\n---\n";
        let out = edited(text, |fm| vec![fm.append_evidence(ITEM).unwrap()]);
        assert_eq!(
            out,
            "---\nevidence:\n-   ref: r1\n    kind: run # first\n-   ref: r2\n    kind: run\n    note: 'it worked: twice'\nsuccess_count: 0\n---\n"
        );
        let text = "---\nevidence: [{kind: run, ref: r1}]\n---\n";
        let out = edited(text, |fm| vec![fm.append_evidence(ITEM).unwrap()]);
        assert_eq!(
            out,
            "---\nevidence: [{kind: run, ref: r1}, {kind: run, ref: r2, note: 'it worked: twice'}]\n---\n"
        );
        let text = "---\nevidence:\n  - {kind: run, ref: r1}\n---\n";
        let out = edited(text, |fm| vec![fm.append_evidence(ITEM).unwrap()]);
        assert_eq!(
            out,
            "---\nevidence:\n  - {kind: run, ref: r1}\n  - {kind: run, ref: r2, note: 'it worked: twice'}\n---\n"
        );
        let out = edited("---\nevidence: []\n---\n", |fm| {
            vec![fm.append_evidence(ITEM).unwrap()]
        });
        assert_eq!(
            out,
            "---\nevidence: [{kind: run, ref: r2, note: 'it worked: twice'}]\n---\n"
        );
    }

    #[test]
    fn supersedes_grows_in_its_own_style() {
        let add = |text: &str| {
            edited(text, |fm| {
                fm.add_supersedes(&["b", "c"])
                    .unwrap()
                    .into_iter()
                    .collect()
            })
        };
        assert_eq!(
            add("---\nsupersedes: [a]\n---\n"),
            "---\nsupersedes: [a, b, c]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes: []\n---\n"),
            "---\nsupersedes: [b, c]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes: [a, b]\n---\n"),
            "---\nsupersedes: [a, b, c]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes:\n  - a # old\nx: 1\n---\n"),
            "---\nsupersedes:\n  - a # old\n  - b\n  - c\nx: 1\n---\n"
        );
        assert_eq!(
            add("---\nx: 1\n---\n"),
            "---\nx: 1\nsupersedes: [b, c]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes:\nx: 1\n---\n"),
            "---\nsupersedes: [b, c]\nx: 1\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes: ~\n---\n"),
            "---\nsupersedes: [b, c]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes: [b, c]\n---\n"),
            "---\nsupersedes: [b, c]\n---\n"
        );
        let d = doc("---\nsupersedes: a\n---\n");
        assert!(Frontmatter::of(&d).unwrap().add_supersedes(&["b"]).is_err());
    }

    #[test]
    fn outcome_is_replaced() {
        let out = edited("---\noutcome: 'success' # was\n---\n", |fm| {
            fm.set_outcome(Outcome::Mixed)
                .unwrap()
                .into_iter()
                .collect()
        });
        assert_eq!(out, "---\noutcome: mixed # was\n---\n");
    }

    #[test]
    fn quoted_and_flow_values_end_where_they_are_written() {
        let add = |text: &str| {
            edited(text, |fm| {
                fm.add_supersedes(&["c"]).unwrap().into_iter().collect()
            })
        };
        assert_eq!(
            add("---\ns: 1\nsupersedes: [a, 'b' ]\n---\n"),
            "---\ns: 1\nsupersedes: [a, 'b', c ]\n---\n"
        );
        assert_eq!(
            add("---\nsupersedes: [\"b\"]  # c\n---\n"),
            "---\nsupersedes: [\"b\", c]  # c\n---\n"
        );
        assert_eq!(node_end("'a''b' # x", 0..10), 6);
        assert_eq!(node_end("\"a\\\"b\" # x", 0..10), 6);
        assert_eq!(node_end("[a, '] #', {b: [c]}] # x", 0..24), 20);
        assert_eq!(node_end("plain  ", 0..7), 5);
    }

    #[test]
    fn a_lone_carriage_return_is_refused() {
        let d = doc("---\r\nslug: a\r\nnote: x\rother: 1\r\nevidence: []\r\n---\r\n");
        assert!(Frontmatter::of(&d).is_err());
        let d = doc("---\r\nslug: a\r\nevidence: []\r\n---\r\nbody\rtext\r\n");
        assert!(Frontmatter::of(&d).is_ok());
    }

    #[test]
    fn flow_frontmatter_is_refused() {
        let d = doc("---\n{slug: a}\n---\n");
        assert!(Frontmatter::of(&d).is_err());
    }
}
