//! Three-way merges of bank files by the bank's rules (ledgers by union, counts and evidence of
//! lesson files, `_index.md` rows), shared by `lesson sync` and the git merge driver
//! (`lesson merge-file`).
//!
//! Each function takes the common ancestor (`base`) and the two sides (`ours`, `theirs`) as
//! text and is pure: the same three texts always give the same result.
//!
//! - [`ledger`]: the union of the lines, an identical line on both sides kept once.
//! - [`lesson`]: a `lesson record` changes two count lines and appends an evidence item; two
//!   records on one lesson merge into one file with both sides' evidence and the counts plus
//!   both sides' deltas (span edits of ours: a human's frontmatter is never re-serialised).
//!   Other changes merge line by line when they do not overlap; an overlap is a [`Conflict`].
//! - [`index_md`]: the rows of `_index.md` by slug (it is regenerated after a merge anyway).

pub mod lines;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::diagnostic::{apply_edits, Edit};
use crate::document::Document;
use crate::edit::frontmatter::{Frontmatter, NewItem};
use crate::lesson::{Counts, Lesson};
use crate::source::Source;

/// Two sides changed the same part of a file differently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}")]
pub struct Conflict {
    /// Which fields or lines conflict, for a human.
    pub what: String,
}

/// Ledgers: the union of the lines (ours in order, then theirs' lines not in ours); a line on
/// both sides is kept once (a line twice on one side stays twice). Blank lines of theirs are
/// dropped, and every line ends with a line ending (a torn last line of ours is not glued to
/// theirs' first). The base is not needed: ledgers only grow.
pub fn ledger(_base: &str, ours: &str, theirs: &str) -> String {
    let key = |line: &str| line.trim_end_matches(['\n', '\r']).to_string();
    let mut out = String::with_capacity(ours.len() + theirs.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for line in ours.split_inclusive('\n') {
        *seen.entry(key(line)).or_default() += 1;
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push('\n');
        }
    }
    for line in theirs.split_inclusive('\n') {
        let k = key(line);
        if k.trim().is_empty() {
            continue;
        }
        match seen.get_mut(&k) {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// The labels of the conflict markers [`lesson_lines`] writes.
pub const LABELS: (&str, &str) = ("ours", "theirs");

/// A lesson file. When each side changed only the count lines and appended evidence items, the
/// result is ours with counts = ours + (theirs − base) and theirs' new evidence items appended
/// (span edits, never re-serialised); an item both sides appended (the same run recorded on two
/// machines: same `kind` and `ref`) is kept once, and when every item theirs appended is one
/// ours has too, theirs' delta is already in ours (counts = ours', as the ledgers' union counts
/// each run once, by its first line: ours'). Other
/// changes (the text without counts and new items) merge line by line when they do not overlap;
/// else a [`Conflict`] naming the fields or lines.
pub fn lesson(base: &str, ours: &str, theirs: &str) -> Result<String, Conflict> {
    if ours == theirs || theirs == base {
        return Ok(ours.to_string());
    }
    if ours == base {
        return Ok(theirs.to_string());
    }
    let b = parse(base);
    let o = parse(ours);
    let t = parse(theirs);
    if let (Some(os), Some(ts)) = (Record::of(&b, &o), Record::of(&b, &t)) {
        if let Some(merged) = merge_records(&b, &o, &os, &ts)? {
            return Ok(merged);
        }
    }
    let merged = lines::merge(base, ours, theirs, LABELS);
    if merged.is_clean() {
        Ok(merged.text)
    } else {
        Err(conflict(base, &merged.conflicts))
    }
}

/// The line merge of a lesson file with conflict markers, as `git merge-file` writes it, and
/// whether it is clean: the fallback when [`lesson`] reports a conflict.
pub fn lesson_lines(base: &str, ours: &str, theirs: &str, labels: (&str, &str)) -> (String, bool) {
    let merged = lines::merge(base, ours, theirs, labels);
    let clean = merged.is_clean();
    (merged.text, clean)
}

fn parse(text: &str) -> Document {
    Document::parse(Source::new("lesson.md", text.to_string()), None)
}

/// What one side did on top of the base, when it is "counts and new evidence" plus other
/// changes that can be merged line-wise: the side's text without them (`core`), its counts,
/// and the evidence items it added (in its order).
struct Record {
    core: String,
    counts: Counts,
    added: Vec<Item>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    kind: String,
    reference: String,
    note: Option<String>,
}

impl Item {
    fn of(e: &crate::lesson::Evidence) -> Item {
        Item {
            kind: e.kind.value.as_str().to_string(),
            reference: e.reference.value.clone(),
            note: e.note.as_ref().map(|n| n.value.clone()),
        }
    }

    fn key(&self) -> (&str, &str) {
        (&self.kind, &self.reference)
    }

    fn new_item(&self) -> NewItem<'_> {
        NewItem {
            kind: &self.kind,
            reference: &self.reference,
            note: self.note.as_deref(),
        }
    }
}

fn items(lesson: &Lesson) -> Vec<Item> {
    lesson.evidence.iter().map(Item::of).collect()
}

fn count_keys(lesson: &Lesson) -> (bool, bool) {
    (
        lesson.success_count.is_some(),
        lesson.failure_count.is_some(),
    )
}

impl Record {
    /// The side `side` split against `base`; `None` when it cannot be split (no lesson, an item
    /// of the base missing, a flow list, a count key added or removed).
    ///
    /// Evidence is a set of items named by kind and reference: the side's new items are those
    /// whose name the base lacks, wherever they stand, and the base's items may stand in
    /// another order. Merges on other clones put their own new items first, so after a few
    /// rounds two histories hold the same items in different orders; the order is left to the
    /// line merge of the cores.
    fn of(base: &Document, side: &Document) -> Option<Record> {
        let (bl, sl) = (base.lesson.as_deref()?, side.lesson.as_deref()?);
        if count_keys(bl) != count_keys(sl) {
            return None;
        }
        let (base_items, side_items) = (items(bl), items(sl));
        let names = |items: &[Item]| {
            let mut names: Vec<(String, String)> = items
                .iter()
                .map(|i| (i.kind.clone(), i.reference.clone()))
                .collect();
            names.sort();
            names
        };
        // each of the base's items matches one of the side's with its name (the first not yet
        // matched); the side's other items are new, a run recorded again among them
        let mut in_base: HashMap<(&str, &str), usize> = HashMap::new();
        for item in &base_items {
            *in_base.entry(item.key()).or_default() += 1;
        }
        let (new, kept): (Vec<usize>, Vec<usize>) =
            (0..side_items.len()).partition(|&i| match in_base.get_mut(&side_items[i].key()) {
                Some(left) if *left > 0 => {
                    *left -= 1;
                    false
                }
                _ => true,
            });
        let kept: Vec<Item> = kept.into_iter().map(|i| side_items[i].clone()).collect();
        let base_names = names(&base_items);
        if names(&kept) != base_names {
            return None;
        }
        let fm = Frontmatter::of(side).ok()?;
        let text = side.source.text.as_str();
        let mut edits = fm.set_counts(bl.counts()).ok()?;
        for &i in &new {
            let item = &sl.evidence[i];
            let start = line_start(text, item.span.start);
            // block items only: each new item starts its own `- ` line
            if !text[start..item.span.start].trim_start().starts_with('-') {
                return None;
            }
            edits.push(Edit::delete(start..after_line(text, item.span.end)));
        }
        let (core, applied) = apply_edits(text, &edits);
        if applied != edits.len() {
            return None;
        }
        // read back: the core must hold the base's items (in the side's order) and counts
        let check = parse(&core);
        let cl = check.lesson.as_deref()?;
        if items(cl) != kept || cl.counts() != bl.counts() {
            return None;
        }
        // the base's items back in the base's order, so that two sides that hold them in
        // different orders (criss-cross merges) do not conflict over the order of a set
        let core = match in_base_order(&core, &base_items) {
            Some(reordered) => {
                let check = parse(&reordered);
                let cl = check.lesson.as_deref()?;
                if !items(cl)
                    .iter()
                    .map(Item::key)
                    .eq(base_items.iter().map(Item::key))
                    || cl.counts() != bl.counts()
                {
                    return None;
                }
                reordered
            }
            None => core,
        };
        Some(Record {
            core,
            counts: sl.counts(),
            added: new.into_iter().map(|i| side_items[i].clone()).collect(),
        })
    }
}

/// `core` with its evidence items (the base's, by name) moved into `base_items`' order, each
/// item's lines moved whole (no byte of an item changes); `None` when they stand in that order
/// already, or are not block items on consecutive lines.
fn in_base_order(core: &str, base_items: &[Item]) -> Option<String> {
    let doc = parse(core);
    let lesson = doc.lesson.as_deref()?;
    let now = items(lesson);
    if now
        .iter()
        .map(Item::key)
        .eq(base_items.iter().map(Item::key))
    {
        return None;
    }
    let blocks: Vec<std::ops::Range<usize>> = lesson
        .evidence
        .iter()
        .map(|e| line_start(core, e.span.start)..after_line(core, e.span.end))
        .collect();
    if blocks.windows(2).any(|w| w[0].end != w[1].start)
        || blocks
            .iter()
            .any(|b| !core[b.clone()].trim_start().starts_with('-'))
    {
        return None;
    }
    let mut used = vec![false; now.len()];
    let mut out = String::with_capacity(core.len());
    out.push_str(&core[..blocks.first()?.start]);
    for item in base_items {
        let j = (0..now.len()).find(|&j| !used[j] && now[j].key() == item.key())?;
        used[j] = true;
        out.push_str(&core[blocks[j].clone()]);
    }
    out.push_str(&core[blocks.last()?.end..]);
    Some(out)
}

/// Merge two split sides; `Ok(None)` when the result does not read back as expected (the
/// caller then merges line-wise).
fn merge_records(
    base: &Document,
    ours: &Document,
    os: &Record,
    ts: &Record,
) -> Result<Option<String>, Conflict> {
    let base_text = base.source.text.as_str();
    let core = lines::merge(base_text, &os.core, &ts.core, LABELS);
    if !core.is_clean() {
        return Err(conflict(base_text, &core.conflicts));
    }
    let Some(bl) = base.lesson.as_deref() else {
        return Ok(None);
    };
    let Some(ol) = ours.lesson.as_deref() else {
        return Ok(None);
    };
    let in_ours: HashSet<(&str, &str)> = os
        .added
        .iter()
        .map(Item::key)
        .chain(
            ol.evidence
                .iter()
                .map(|e| (e.kind.value.as_str(), e.reference.value.as_str())),
        )
        .collect();
    let extra: Vec<&Item> = ts
        .added
        .iter()
        .filter(|i| !in_ours.contains(&i.key()))
        .collect();
    let base_counts = bl.counts();
    let counts = if !ts.added.is_empty() && extra.is_empty() {
        // every run theirs recorded, ours recorded too: it counts once, with ours' verdict (the
        // ledgers' union puts ours' lines first, and the first line of a run is the one that
        // counts)
        os.counts
    } else {
        let add = |o: u64, t: u64, b: u64| (o + t).saturating_sub(b);
        Counts {
            success_count: add(
                os.counts.success_count,
                ts.counts.success_count,
                base_counts.success_count,
            ),
            failure_count: add(
                os.counts.failure_count,
                ts.counts.failure_count,
                base_counts.failure_count,
            ),
        }
    };
    // ours' own bytes when the rest of ours is the merge; else the merged core rebuilt
    let (start, append): (Document, Vec<&Item>) = if core.text == os.core {
        (parse(&ours.source.text), extra)
    } else {
        let mut all: Vec<&Item> = os.added.iter().collect();
        all.extend(extra);
        (parse(&core.text), all)
    };
    let Ok(fm) = Frontmatter::of(&start) else {
        return Ok(None);
    };
    let Ok(mut edits) = fm.set_counts(counts) else {
        return Ok(None);
    };
    let mut expected = items(start.lesson.as_deref().expect("a split side is a lesson"));
    if !append.is_empty() {
        let mut insert: Option<Edit> = None;
        for item in &append {
            let Ok(edit) = fm.append_evidence(item.new_item()) else {
                return Ok(None);
            };
            match &mut insert {
                Some(e) if e.range == edit.range => e.content.push_str(&edit.content),
                Some(_) => return Ok(None),
                None => insert = Some(edit),
            }
            expected.push((*item).clone());
        }
        // before the counts: missing count keys are inserted where the list ends too
        if let Some(insert) = insert {
            edits.insert(0, insert);
        }
    }
    let (text, applied) = apply_edits(&start.source.text, &edits);
    if applied != edits.len() {
        return Ok(None);
    }
    let check = parse(&text);
    let ok = check
        .lesson
        .as_deref()
        .is_some_and(|l| l.counts() == counts && items(l) == expected);
    Ok(ok.then_some(text))
}

/// Where the line holding `offset` starts.
fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// Where the line after the last non-blank byte before `end` starts.
fn after_line(text: &str, end: usize) -> usize {
    let content_end = text[..end].trim_end().len();
    text[content_end..]
        .find('\n')
        .map_or(text.len(), |i| content_end + i + 1)
}

/// A conflict naming each overlap by the frontmatter field it falls in, or its body lines.
fn conflict(base: &str, ranges: &[std::ops::Range<usize>]) -> Conflict {
    let lines = lines::split_lines(base);
    // the frontmatter's lines: between the first two `---` lines
    let fence_end = if lines.first().is_some_and(|l| l.trim_end() == "---") {
        lines
            .iter()
            .skip(1)
            .position(|l| l.trim_end() == "---")
            .map(|i| i + 1)
    } else {
        None
    };
    let mut parts: Vec<String> = Vec::new();
    for r in ranges {
        let (first, last) = (r.start + 1, r.end.max(r.start + 1));
        let what = match fence_end {
            Some(end) if r.start < end => {
                let key = lines[..=r.start.min(lines.len().saturating_sub(1))]
                    .iter()
                    .rev()
                    .find_map(|l| top_level_key(l));
                match key {
                    Some(k) => format!("`{k}`"),
                    None => "the frontmatter".to_string(),
                }
            }
            _ => "the body".to_string(),
        };
        let at = if first >= last {
            format!("line {first}")
        } else {
            format!("lines {first}-{last}")
        };
        parts.push(format!("{what} ({at} of the base)"));
    }
    parts.dedup();
    Conflict {
        what: format!("both sides changed {}", parts.join(", ")),
    }
}

fn top_level_key(line: &str) -> Option<String> {
    let first = line.chars().next()?;
    if first.is_whitespace() || first == '-' || first == '#' {
        return None;
    }
    let (key, _) = line.split_once(':')?;
    Some(key.trim().to_string())
}

/// `_index.md`: its table rows merged by slug (the link in the first cell): a row changed, added
/// or removed on one side takes that side; a row both sides changed differently takes ours.
/// The lines around the table are ours when ours changed them, else theirs. Rows are written in
/// the order of their keys (the index is sorted by slug). An index with no rows is merged line
/// by line, ours winning a conflict. It is regenerated after a merge anyway (`lesson index`).
pub fn index_md(base: &str, ours: &str, theirs: &str) -> String {
    if ours == theirs || theirs == base {
        return ours.to_string();
    }
    if ours == base {
        return theirs.to_string();
    }
    let (b, o, t) = (Table::of(base), Table::of(ours), Table::of(theirs));
    let (Some(b), Some(o), Some(t)) = (b, o, t) else {
        let merged = lines::merge(base, ours, theirs, LABELS);
        return if merged.is_clean() {
            merged.text
        } else {
            ours.to_string()
        };
    };
    let pick = |bv: &str, ov: &str, tv: &str| -> String {
        if ov == bv {
            tv.to_string()
        } else {
            ov.to_string()
        }
    };
    let mut keys: Vec<&String> = o.rows.keys().chain(t.rows.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = pick(&b.head, &o.head, &t.head);
    for key in keys {
        let row = match (b.rows.get(key), o.rows.get(key), t.rows.get(key)) {
            (None, Some(v), None) | (None, None, Some(v)) => Some(v.clone()),
            // removed on one side: gone unless the other side changed it
            (Some(bv), Some(ov), None) => (ov != bv).then(|| ov.clone()),
            (Some(bv), None, Some(tv)) => (tv != bv).then(|| tv.clone()),
            (Some(bv), Some(ov), Some(tv)) => Some(pick(bv, ov, tv)),
            // added on both sides: ours
            (None, Some(ov), Some(_)) => Some(ov.clone()),
            _ => None,
        };
        if let Some(row) = row {
            out.push_str(&row);
        }
    }
    out.push_str(&pick(&b.tail, &o.tail, &t.tail));
    out
}

/// `_index.md` split at its table rows.
struct Table {
    /// Everything up to the first row.
    head: String,
    /// The rows by their first cell (the `[slug](path)` link), each with its line ending.
    rows: BTreeMap<String, String>,
    /// Everything after the last row.
    tail: String,
}

impl Table {
    fn of(text: &str) -> Option<Table> {
        let lines = lines::split_lines(text);
        let is_row = |l: &str| l.starts_with("| [");
        let first = lines.iter().position(|l| is_row(l))?;
        let last = lines.iter().rposition(|l| is_row(l))?;
        let mut rows = BTreeMap::new();
        for line in &lines[first..=last] {
            if !is_row(line) {
                return None;
            }
            let cell = line[1..].split(" | ").next()?.trim().to_string();
            if rows.insert(cell, line.to_string()).is_some() {
                return None;
            }
        }
        Some(Table {
            head: lines[..first].concat(),
            rows,
            tail: lines[last + 1..].concat(),
        })
    }
}

/// What a path of the repository is to the bank's merge rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `_log/*.jsonl`: merged by [`ledger`].
    Ledger,
    /// `_index.md`: merged by [`index_md`].
    Index,
    /// Another `*.md`: merged by [`lesson`].
    Lesson,
    /// Anything else: merged line by line.
    Other,
}

impl FileKind {
    /// The kind of a `/`-separated path (relative to the repository or the bank: a bank may be
    /// a folder of a bigger repository, so only the last two components matter).
    pub fn of(path: &str) -> FileKind {
        let mut parts = path.rsplit(['/', '\\']);
        let name = parts.next().unwrap_or_default();
        let dir = parts.next();
        if name == crate::layout::INDEX_FILE {
            FileKind::Index
        } else if dir == Some(crate::layout::LOG_DIR) && name.ends_with(".jsonl") {
            FileKind::Ledger
        } else if name.ends_with(".md") {
            FileKind::Lesson
        } else {
            FileKind::Other
        }
    }
}

/// The result of merging one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The merged text; with conflict markers when `conflict` is set.
    pub text: String,
    /// What conflicts, when the merge is not clean.
    pub conflict: Option<Conflict>,
}

/// Merge one file by the rules of its kind ([`FileKind::of`] `path`). A lesson file that
/// conflicts is merged line by line with conflict markers (as `git merge-file` writes them),
/// and the conflict says what overlaps.
pub fn file(path: &str, base: &str, ours: &str, theirs: &str) -> Merged {
    let clean = |text: String| Merged {
        text,
        conflict: None,
    };
    match FileKind::of(path) {
        FileKind::Ledger => clean(ledger(base, ours, theirs)),
        FileKind::Index => clean(index_md(base, ours, theirs)),
        FileKind::Lesson => match lesson(base, ours, theirs) {
            Ok(text) => clean(text),
            Err(conflict) => Merged {
                text: lines::merge(base, ours, theirs, LABELS).text,
                conflict: Some(conflict),
            },
        },
        FileKind::Other => {
            let merged = lines::merge(base, ours, theirs, LABELS);
            let conflict = (!merged.is_clean()).then(|| conflict(base, &merged.conflicts));
            Merged {
                text: merged.text,
                conflict,
            }
        }
    }
}

/// The git merge driver could not read or write its files.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A side is not UTF-8 text.
    #[error("{path}: not UTF-8 text; merge it by hand")]
    NotText {
        /// The file.
        path: String,
    },
}

/// git's merge driver (`merge.lesson.driver = lesson merge-file %O %A %B %P`): merges the
/// files `base`, `ours` and `theirs` (temp files git made) by the rules of `path` (the file's
/// path in the repository) and writes the result into `ours`, as git's contract asks. `ours`
/// is git's temp file, not a bank file: this is the one write outside `edit`.
pub fn driver(
    base: &std::path::Path,
    ours: &std::path::Path,
    theirs: &std::path::Path,
    path: &str,
) -> Result<Merged, DriverError> {
    let read = |p: &std::path::Path| -> Result<String, DriverError> {
        let bytes = std::fs::read(p).map_err(|source| DriverError::Io {
            path: p.display().to_string(),
            source,
        })?;
        String::from_utf8(bytes).map_err(|_| DriverError::NotText {
            path: path.to_string(),
        })
    };
    let (b, o, t) = (read(base)?, read(ours)?, read(theirs)?);
    let merged = file(path, &b, &o, &t);
    if merged.text != o {
        std::fs::write(ours, merged.text.as_bytes()).map_err(|source| DriverError::Io {
            path: ours.display().to_string(),
            source,
        })?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BASE: &str = "---
schema: learning/v1
slug: retry
title: Retry with jitter.
trigger:
  description: Retrying a call.
  tags: [net]
outcome: success
evidence:
  - kind: run
    ref: r0
confidence: 0.7
success_count: 2
failure_count: 1
---

# Retry with jitter.

## When this applies

Calls.
";

    fn record(text: &str, run: &str, counts: (u64, u64)) -> String {
        let doc = parse(text);
        let fm = Frontmatter::of(&doc).unwrap();
        let mut edits = fm
            .set_counts(Counts {
                success_count: counts.0,
                failure_count: counts.1,
            })
            .unwrap();
        edits.push(
            fm.append_evidence(NewItem {
                kind: "run",
                reference: run,
                note: None,
            })
            .unwrap(),
        );
        apply_edits(text, &edits).0
    }

    fn refs(text: &str) -> Vec<String> {
        parse(text)
            .lesson
            .unwrap()
            .evidence
            .iter()
            .map(|e| e.reference.value.clone())
            .collect()
    }

    fn counts(text: &str) -> (u64, u64) {
        let c = parse(text).lesson.unwrap().counts();
        (c.success_count, c.failure_count)
    }

    #[test]
    fn two_records_keep_both_items_and_both_deltas() {
        let ours = record(BASE, "r1", (3, 1));
        let theirs = record(BASE, "r2", (2, 2));
        // plain lines conflict: both append at the same place and change the count lines
        assert!(!lines::merge(BASE, &ours, &theirs, LABELS).is_clean());
        let merged = lesson(BASE, &ours, &theirs).unwrap();
        assert_eq!(refs(&merged), ["r0", "r1", "r2"]);
        assert_eq!(counts(&merged), (3, 2));
        // span edits of ours: only the count line and the new item differ
        let expected = ours
            .replace("failure_count: 1", "failure_count: 2")
            .replace("    ref: r1\n", "    ref: r1\n  - kind: run\n    ref: r2\n");
        assert_eq!(merged, expected);
    }

    /// Three clones: a pushed r1, b merged it after its own r2 (b's item first), and a merges
    /// again with a new r3. The remote's items are not the base's followed by new ones, but
    /// the base's with a new one before them: still two records, no conflict. The same when
    /// the base's own items stand in another order on one side.
    #[test]
    fn a_side_whose_new_items_stand_before_the_bases_merges() {
        let base = record(BASE, "r1", (3, 1));
        let ours = record(&base, "r3", (4, 1));
        let b = record(BASE, "r2", (3, 1));
        let theirs = lesson(BASE, &b, &base).unwrap();
        assert_eq!(refs(&theirs), ["r0", "r2", "r1"]);
        let merged = lesson(&base, &ours, &theirs).unwrap();
        assert_eq!(refs(&merged), ["r0", "r1", "r3", "r2"]);
        assert_eq!(counts(&merged), (5, 1));
        let merged = lesson(&base, &theirs, &ours).unwrap();
        assert_eq!(refs(&merged), ["r0", "r2", "r1", "r3"]);
        assert_eq!(counts(&merged), (5, 1));

        // the base [r0, r1, r2] as one history ordered it, theirs [r0, r2, r1, r4] as another
        let base = lesson(BASE, &record(BASE, "r1", (3, 1)), &b).unwrap();
        assert_eq!(refs(&base), ["r0", "r1", "r2"]);
        let theirs = record(&theirs, "r4", (5, 1));
        let ours = record(&base, "r5", (5, 1));
        let merged = lesson(&base, &ours, &theirs).unwrap();
        assert_eq!(refs(&merged), ["r0", "r1", "r2", "r5", "r4"]);
        assert_eq!(counts(&merged), (6, 1));
    }

    /// Found by the fleet row of `cargo xtask bench git` (runtimes on their own branches and a
    /// merger): two histories hold the base's items in two other orders, and each side records
    /// a run. The order of a set is no conflict: ours as it is with theirs' new item appended,
    /// every item once, counts base + both deltas.
    #[test]
    fn two_sides_that_reorder_the_bases_items_differently_merge() {
        let mut base = BASE.to_string();
        for (i, run) in ["r1", "r2", "r3"].iter().enumerate() {
            base = record(&base, run, (3 + i as u64, 1));
        }
        assert_eq!(refs(&base), ["r0", "r1", "r2", "r3"]);
        let block = |run: &str| format!("  - kind: run\n    ref: {run}\n");
        let reorder = |text: &str, order: &[&str]| {
            let all: String = ["r0", "r1", "r2", "r3"].iter().map(|r| block(r)).collect();
            let now: String = order.iter().map(|r| block(r)).collect();
            text.replace(&all, &now)
        };
        let ours = record(&reorder(&base, &["r0", "r2", "r1", "r3"]), "r8", (6, 1));
        let theirs = record(&reorder(&base, &["r0", "r3", "r1", "r2"]), "r9", (6, 1));
        assert!(!lines::merge(&base, &ours, &theirs, LABELS).is_clean());
        let merged = lesson(&base, &ours, &theirs).unwrap();
        assert_eq!(refs(&merged), ["r0", "r2", "r1", "r3", "r8", "r9"]);
        assert_eq!(
            merged,
            ours.replace("ref: r8\n", "ref: r8\n  - kind: run\n    ref: r9\n")
                .replace("success_count: 6", "success_count: 7")
        );
        assert_eq!(counts(&merged), (7, 1));
        let merged = lesson(&base, &theirs, &ours).unwrap();
        assert_eq!(refs(&merged), ["r0", "r3", "r1", "r2", "r9", "r8"]);
        assert_eq!(counts(&merged), (7, 1));
    }

    #[test]
    fn the_same_run_on_both_sides_counts_once() {
        let ours = record(BASE, "r1", (3, 1));
        let merged = lesson(BASE, &ours, &ours.clone()).unwrap();
        assert_eq!(merged, ours);
        // the same run, and ours recorded one more
        let theirs = record(BASE, "r1", (3, 1));
        let ours2 = record(&ours, "r3", (4, 1));
        let merged = lesson(BASE, &ours2, &theirs).unwrap();
        assert_eq!(refs(&merged), ["r0", "r1", "r3"]);
        assert_eq!(counts(&merged), (4, 1));
        // opposite verdicts for one run: ours' counts (its ledger line comes first)
        let theirs = record(BASE, "r1", (2, 2));
        let merged = lesson(BASE, &ours, &theirs).unwrap();
        assert_eq!(merged, ours);
    }

    #[test]
    fn a_record_merges_with_a_body_edit_on_the_other_side() {
        let ours = record(BASE, "r1", (3, 1));
        let theirs = BASE.replace("Calls.\n", "Calls over the network.\n");
        let merged = lesson(BASE, &ours, &theirs).unwrap();
        assert!(merged.contains("Calls over the network.\n"));
        assert_eq!(refs(&merged), ["r0", "r1"]);
        assert_eq!(counts(&merged), (3, 1));
        // both sides recorded, and theirs also edited the body
        let theirs = record(&theirs, "r2", (3, 1));
        let merged = lesson(BASE, &ours, &theirs).unwrap();
        assert!(merged.contains("Calls over the network.\n"));
        assert_eq!(refs(&merged), ["r0", "r1", "r2"]);
        assert_eq!(counts(&merged), (4, 1));
    }

    #[test]
    fn two_rewrites_of_one_field_conflict_naming_it() {
        let ours = BASE.replace("Retrying a call.", "Retrying an HTTP call.");
        let theirs = BASE.replace("Retrying a call.", "Retrying any call.");
        let err = lesson(BASE, &ours, &theirs).unwrap_err();
        assert_eq!(
            err.what,
            "both sides changed `trigger` (line 6 of the base)"
        );
        let ours = BASE.replace("Calls.\n", "Calls, A.\n");
        let theirs = record(&BASE.replace("Calls.\n", "Calls, B.\n"), "r2", (2, 2));
        let err = lesson(BASE, &ours, &theirs).unwrap_err();
        assert!(err.what.contains("the body (line 21"), "{}", err.what);
        let (text, clean) = lesson_lines(BASE, &ours, &theirs, ("a", "b"));
        assert!(!clean);
        assert!(text.contains("<<<<<<< a\nCalls, A.\n=======\nCalls, B.\n>>>>>>> b\n"));
    }

    #[test]
    fn a_flow_evidence_list_falls_back_to_lines() {
        let base = BASE.replace(
            "evidence:\n  - kind: run\n    ref: r0\n",
            "evidence: [{kind: run, ref: r0}]\n",
        );
        let ours = record(&base, "r1", (3, 1));
        let theirs = record(&base, "r2", (2, 2));
        assert!(lesson(&base, &ours, &theirs).is_err());
    }

    #[test]
    fn ledgers_keep_every_line_once() {
        let merged = ledger("a\n", "a\nb\n", "a\nc\nb\n");
        assert_eq!(merged, "a\nb\nc\n");
        assert_eq!(ledger("", "a\nx", "b\n\n"), "a\nx\nb\n");
        assert_eq!(ledger("", "a\na\n", "a\n"), "a\na\n");
        assert_eq!(ledger("", "a\n", "a\na\n"), "a\na\n");
    }

    const INDEX: &str = "# Lessons\n\n2 lessons.\n\n| slug | n |\n| --- | ---: |\n| [a](a.md) | 1 |\n| [b](b.md) | 1 |\n| [c](c.md) | 1 |\n\nend\n";

    #[test]
    fn index_rows_merge_by_slug() {
        let ours = INDEX.replace("| [a](a.md) | 1 |", "| [a](a.md) | 2 |");
        let theirs = INDEX.replace("| [b](b.md) | 1 |", "| [b](b.md) | 5 |");
        assert!(!lines::merge(INDEX, &ours, &theirs, LABELS).is_clean());
        let merged = index_md(INDEX, &ours, &theirs);
        assert_eq!(
            merged,
            INDEX
                .replace("| [a](a.md) | 1 |", "| [a](a.md) | 2 |")
                .replace("| [b](b.md) | 1 |", "| [b](b.md) | 5 |")
        );
        // added on one side, removed on the other
        let ours = INDEX.replace(
            "| [c](c.md) | 1 |\n",
            "| [c](c.md) | 1 |\n| [d](d.md) | 1 |\n",
        );
        let theirs = INDEX.replace("| [a](a.md) | 1 |\n", "");
        let merged = index_md(INDEX, &ours, &theirs);
        assert_eq!(
            merged,
            INDEX.replace("| [a](a.md) | 1 |\n", "").replace(
                "| [c](c.md) | 1 |\n",
                "| [c](c.md) | 1 |\n| [d](d.md) | 1 |\n"
            )
        );
    }

    #[test]
    fn paths_pick_the_rule() {
        assert_eq!(FileKind::of("_log/a.jsonl"), FileKind::Ledger);
        assert_eq!(FileKind::of("docs/lessons/_log/a.jsonl"), FileKind::Ledger);
        assert_eq!(FileKind::of("docs/a.jsonl"), FileKind::Other);
        assert_eq!(FileKind::of("docs/lessons/_index.md"), FileKind::Index);
        assert_eq!(FileKind::of("_index.md"), FileKind::Index);
        assert_eq!(FileKind::of("lessons/_archive/x.md"), FileKind::Lesson);
        assert_eq!(FileKind::of("lesson.toml"), FileKind::Other);
    }

    #[test]
    fn the_driver_writes_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let (b, o, t) = (
            tmp.path().join("b"),
            tmp.path().join("o"),
            tmp.path().join("t"),
        );
        std::fs::write(&b, BASE).unwrap();
        std::fs::write(&o, record(BASE, "r1", (3, 1))).unwrap();
        std::fs::write(&t, record(BASE, "r2", (3, 1))).unwrap();
        let merged = driver(&b, &o, &t, "lessons/retry.md").unwrap();
        assert!(merged.conflict.is_none());
        let text = std::fs::read_to_string(&o).unwrap();
        assert_eq!(text, merged.text);
        assert_eq!(refs(&text), ["r0", "r1", "r2"]);
        // a conflict: markers in ours, and what conflicts
        std::fs::write(&o, BASE.replace("Calls.", "A.")).unwrap();
        std::fs::write(&t, BASE.replace("Calls.", "B.")).unwrap();
        let merged = driver(&b, &o, &t, "lessons/retry.md").unwrap();
        assert!(merged.conflict.unwrap().what.contains("the body"));
        let text = std::fs::read_to_string(&o).unwrap();
        assert!(text.contains("<<<<<<< ours\nA.\n=======\nB.\n>>>>>>> theirs\n"));
        std::fs::write(&t, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            driver(&b, &o, &t, "x.md"),
            Err(DriverError::NotText { .. })
        ));
    }

    fn ledger_lines() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c", "d", "e"]), 0..8)
            .prop_map(|v| v.into_iter().map(String::from).collect())
    }

    fn text(lines: &[String]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn multiset(text: &str) -> HashMap<String, usize> {
        let mut m = HashMap::new();
        for l in text.lines() {
            *m.entry(l.to_string()).or_default() += 1;
        }
        m
    }

    proptest! {
        #[test]
        fn ledger_merge_is_a_union_without_new_duplicates(
            base in ledger_lines(), o in ledger_lines(), t in ledger_lines()
        ) {
            let (base, o, t) = (text(&base), text(&[base.clone(), o].concat()), text(&[base, t].concat()));
            let merged = ledger(&base, &o, &t);
            prop_assert_eq!(&merged, &ledger(&base, &o, &t));
            prop_assert!(merged.starts_with(&o));
            let (m, mo, mt) = (multiset(&merged), multiset(&o), multiset(&t));
            for (line, n) in &m {
                let most = mo.get(line).copied().unwrap_or(0).max(mt.get(line).copied().unwrap_or(0));
                prop_assert_eq!(*n, most, "line {}", line);
            }
            for line in mo.keys().chain(mt.keys()) {
                prop_assert!(m.contains_key(line));
            }
        }

        #[test]
        fn two_records_give_base_plus_both_deltas(
            ours_runs in prop::collection::btree_map(0u8..20, any::<bool>(), 0..4),
            theirs_runs in prop::collection::btree_map(20u8..40, any::<bool>(), 0..4),
        ) {
            let ours_runs: Vec<(u8, bool)> = ours_runs.into_iter().collect();
            let theirs_runs: Vec<(u8, bool)> = theirs_runs.into_iter().collect();
            let apply = |runs: &[(u8, bool)]| {
                let mut text = BASE.to_string();
                let (mut s, mut f) = (2, 1);
                for (run, success) in runs {
                    if *success { s += 1 } else { f += 1 }
                    text = record(&text, &format!("r{run}"), (s, f));
                }
                (text, (s - 2, f - 1))
            };
            let (ours, (os, of)) = apply(&ours_runs);
            let (theirs, (ts, tf)) = apply(&theirs_runs);
            let merged = lesson(BASE, &ours, &theirs).unwrap();
            prop_assert_eq!(counts(&merged), (2 + os + ts, 1 + of + tf));
            let mut want = refs(&ours);
            for r in refs(&theirs).into_iter().skip(1) {
                if !want.contains(&r) { want.push(r); }
            }
            prop_assert_eq!(refs(&merged), want);
            prop_assert_eq!(&merged, &lesson(BASE, &ours, &theirs).unwrap());
        }
    }
}
