//! Segments: the on-disk (and in-memory) form of the index.
//!
//! A **segment** is one byte format for both the immutable **base** and the small **delta**
//! that patches it (new and changed files, the base docs they replace, and new stats for base
//! docs whose file was touched but not changed). An index is a base plus at most one delta; a
//! delta grows until [`super::store::merge_threshold`], then the two are merged into a new base
//! from what the segments hold: nothing is parsed or tokenised again. An in-memory build goes
//! through the same bytes, so a fresh index and a persisted, patched one answer a request
//! identically.
//!
//! The index keeps what ranking and the gates need, and what it takes to notice a change:
//! each doc's path and stat, a lesson's numbers (confidence, counts, field lengths, expiry),
//! its slug, tags, targets and `supersedes`, and the posting lists; and its title, so that
//! `_index.md` can be rendered from the index alone (see [`crate::watch::listing`]). What a
//! hit shows (title, description, gist, tags as written) is read from the hit's file, whose
//! hash the index knows, so description and gist are not stored twice.
//!
//! Layout (little-endian; offsets from the start of the file):
//!
//! ```text
//! header     magic "LESSONIX", format version u32, kind u32 (0 base, 1 delta), index id u64
//!            (a delta: the id of the base it patches), generation u64, config hash u64,
//!            docs u32, terms u32, lessons u32, sections u32, field length totals u64 × 8,
//!            then per section: offset u64, length u64, checksum u64; then the checksum of
//!            all that (u64)
//! deleted    base doc ids, u32 each, ascending (a delta only)
//! restat     base doc id u32, size u64, mtime i64, ctime i64, inode u64, hash u64,
//!            settled u8, 3 bytes padding
//! stat       per doc: size u64, ctime i64, inode u64, hash u64
//! rank       per doc: mtime i64, confidence f64, successes u64, failures u64, flags u8,
//!            outcome u8, 6 bytes padding
//! lens       per length slot (score::slot), per doc: u32
//! paths      per block of 32 docs an offset u32, then the paths in doc order, each the
//!            length of the prefix it shares with the previous one in its block (varint) and
//!            the rest (varint length, bytes)
//! titles     a lesson's title as written (empty for other files), laid out as the paths are
//! lessons    a bit per doc: a lesson
//! slugs      the slugs that are not their file's name (`x.md` → `x`): count u32, then
//!            (doc u32, offset u32) ascending, then the strings
//! slug-index (slug hash u64, doc u32) per lesson, ascending
//! supersedes count u32, (doc u32, offset u32) ascending, then per doc its list of strings
//! superseded (doc u32, lessons of this segment superseding it u32), ascending
//! superseders (slug hash u64, doc u32) per lesson and each other slug it supersedes
//! targets    the distinct target lists: count u32, each a count and per target a presence
//!            byte and its globs; then count u32 and (doc u32, list u32) ascending
//! expires    (doc u32, expires_at i64 ns) ascending
//! tags       count u32, a bit per doc (tagged), then per tag (ascending): the key, and the
//!            doc ids as a posting list (count and byte length as varints)
//! dict       24 bytes per term, ascending: term u64, postings offset u64, docs u32,
//!            checksum of the list u32 (its length: up to the next offset)
//! postings   the lists ([`codec`]'s block format)
//! ```
//!
//! Opening a segment reads and checks its header only (the file is mapped, not read). A
//! section is checked against its checksum the first time it is used, a posting list each
//! time it is read: a search reads the dictionary, the rank and length tables and the lists
//! of its terms; checking the index against the files reads the paths and stats.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::lesson::Outcome;

use super::codec::{self, Corrupt, ListWriter, Reader, Tf, Writer};
use super::record::{FileStat, Record, TargetGlobs};
use super::score::{self, TermHasher, LEN_SLOTS};
use super::text::{self, Term};
use super::walk::path_order;

/// The on-disk format version; a file of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 2;
const MAGIC: &[u8; 8] = b"LESSONIX";

/// The sections, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sec {
    Deleted,
    Restat,
    Stat,
    Rank,
    Lens,
    Paths,
    Titles,
    Lessons,
    Slugs,
    SlugIndex,
    Supersedes,
    Superseded,
    Superseders,
    Targets,
    Expires,
    Tags,
    Dict,
    Postings,
}

const SECTIONS: usize = 18;
const FIXED: usize = 120;
const HEAD: usize = FIXED + SECTIONS * 24 + 8;
const RESTAT_ENTRY: usize = 48;
const STAT_ENTRY: usize = 32;
const RANK_ENTRY: usize = 40;
const DICT_ENTRY: usize = 24;
/// Docs per block of a string column (paths, titles): a lookup decodes at most this many.
const COLUMN_BLOCK: usize = 32;

pub(crate) const F_LESSON: u8 = 1;
pub(crate) const F_SETTLED: u8 = 2;
pub(crate) const F_TAGS: u8 = 4;
pub(crate) const F_TARGETS: u8 = 8;
pub(crate) const F_SUPERSEDES: u8 = 16;
pub(crate) const F_EXPIRES: u8 = 32;

pub(crate) type TermMap<V> = HashMap<Term, V, std::hash::BuildHasherDefault<TermHasher>>;

/// Whether a segment is a base or a delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Stands alone.
    Base,
    /// Patches the base whose id it carries.
    Delta,
}

/// Identity of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// A base's random id; for a delta, the id of the base it patches.
    pub index_id: u64,
    /// Incremented on every write (base or delta): a watcher can vouch for a generation.
    pub generation: u64,
    /// Hash of the configuration that shaped the index (a change rebuilds it).
    pub config_hash: u64,
}

/// What the index keeps of a lesson.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonMeta {
    /// Slug.
    pub slug: String,
    /// Title as written (what `_index.md` lists).
    pub title: String,
    /// Outcome.
    pub outcome: Outcome,
    /// Confidence (the default filled in).
    pub confidence: f64,
    /// `success_count`.
    pub successes: u64,
    /// `failure_count`.
    pub failures: u64,
    /// `expires_at`, nanoseconds since the epoch.
    pub expires_ns: Option<i64>,
    /// Field lengths, per [`score::slot`].
    pub lens: [u32; LEN_SLOTS],
    /// Tags in normal form, sorted, without repeats.
    pub tag_keys: Vec<String>,
    /// `trigger.targets`.
    pub targets: Vec<TargetGlobs>,
    /// `supersedes`.
    pub supersedes: Vec<String>,
}

/// What the index keeps of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Path relative to the bank root, `/`-separated.
    pub path: String,
    /// Stat and hash when read.
    pub stat: FileStat,
    /// The lesson, when the file is one.
    pub lesson: Option<LessonMeta>,
}

/// The numbers of one doc that ranking reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rank {
    /// Modification time (recency).
    pub mtime_ns: i64,
    /// Confidence.
    pub confidence: f64,
    /// `success_count`.
    pub successes: u64,
    /// `failure_count`.
    pub failures: u64,
    flags: u8,
    outcome: u8,
}

impl Rank {
    /// Whether the file is a lesson.
    pub fn is_lesson(&self) -> bool {
        self.flags & F_LESSON != 0
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The outcome.
    pub fn outcome(&self) -> Outcome {
        outcome_of(self.outcome)
    }
}

fn outcome_of(b: u8) -> Outcome {
    match b {
        0 => Outcome::Success,
        1 => Outcome::Failure,
        _ => Outcome::Mixed,
    }
}

fn outcome_byte(o: Outcome) -> u8 {
    match o {
        Outcome::Success => 0,
        Outcome::Failure => 1,
        Outcome::Mixed => 2,
    }
}

/// The file name of `path` without `.md`: the slug a lesson is expected to have.
fn stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name)
}

/// The hash a slug is looked up by.
pub(crate) fn slug_hash(slug: &str) -> u64 {
    text::fnv1a(slug.as_bytes())
}

/// A lesson's superseded slugs: distinct, not its own.
pub(crate) fn superseded_slugs<'a>(slug: &str, supersedes: &'a [impl AsRef<str>]) -> Vec<&'a str> {
    let mut out: Vec<&str> = supersedes
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| *s != slug)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A record's doc and its terms with their counts per field.
fn analyse(r: &Record) -> (Doc, Vec<(Term, Tf)>) {
    let Some(l) = &r.lesson else {
        let doc = Doc {
            path: r.path.clone(),
            stat: r.stat,
            lesson: None,
        };
        return (doc, Vec::new());
    };
    let mut counts: TermMap<Tf> = TermMap::with_capacity_and_hasher(1024, Default::default());
    let mut lens = [0u32; LEN_SLOTS];
    let mut add = |field: usize, s: &str| {
        text::for_each_term(s, |t| {
            lens[score::slot(field, text::kind(t))] += 1;
            counts.entry(t).or_default()[field] += 1;
        });
    };
    add(0, &l.title);
    add(1, &l.description);
    for tag in &l.tags {
        add(2, tag);
    }
    add(3, &l.body);
    let doc = Doc {
        path: r.path.clone(),
        stat: r.stat,
        lesson: Some(LessonMeta {
            slug: l.slug.clone(),
            title: l.title.clone(),
            outcome: l.outcome,
            confidence: l.confidence,
            successes: l.successes,
            failures: l.failures,
            expires_ns: l.expires_ns,
            lens,
            tag_keys: l.tag_keys(),
            targets: l.targets.clone(),
            supersedes: l.supersedes.clone(),
        }),
    };
    (doc, counts.into_iter().collect())
}

/// What a new segment holds besides its docs.
#[derive(Debug, Clone, Default)]
pub struct Patch {
    /// Base doc ids this delta deletes.
    pub deleted: Vec<u32>,
    /// New stats for base docs whose file was touched, not changed.
    pub restat: Vec<(u32, FileStat)>,
}

fn bitset_bytes(n: usize, on: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut words = vec![0u64; n.div_ceil(64)];
    for (i, w) in words.iter_mut().enumerate() {
        for b in 0..64 {
            let id = i * 64 + b;
            if id < n && on(id) {
                *w |= 1 << b;
            }
        }
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Strings of some docs: count u32, (doc u32, offset u32) ascending, then the data.
fn doc_strings(entries: &[(u32, Vec<&str>)], list: bool) -> Vec<u8> {
    let mut table = Writer::default();
    let mut data = Writer::default();
    table.u32(entries.len() as u32);
    for (doc, strings) in entries {
        table.u32(*doc);
        table.u32(data.len() as u32);
        if list {
            data.varint(strings.len() as u64);
        }
        for s in strings {
            data.str(s);
        }
    }
    table.buf.extend_from_slice(&data.buf);
    table.buf
}

/// `n` strings in doc order as a column: front-coded in blocks of [`COLUMN_BLOCK`], each
/// block's offset first.
fn column<'a>(strings: impl Iterator<Item = &'a str>, n: usize) -> Writer {
    let mut offsets = Writer::default();
    let mut data = Writer::default();
    offsets.u32(n.div_ceil(COLUMN_BLOCK) as u32);
    let mut prev = "";
    for (id, s) in strings.enumerate() {
        let shared = if id % COLUMN_BLOCK == 0 {
            offsets.u32(data.len() as u32);
            0
        } else {
            prev.as_bytes()
                .iter()
                .zip(s.as_bytes())
                .take_while(|(a, b)| a == b)
                .count()
        };
        data.varint(shared as u64);
        let rest = &s.as_bytes()[shared..];
        data.varint(rest.len() as u64);
        data.buf.extend_from_slice(rest);
        prev = s;
    }
    offsets.buf.extend_from_slice(&data.buf);
    offsets
}

/// Write a segment: header, patch, docs and sorted term lists.
fn write_segment(
    kind: Kind,
    header: Header,
    patch: &Patch,
    docs: &[Doc],
    lists: &[(Term, u32, Vec<u8>)],
) -> Vec<u8> {
    let n = docs.len();
    let mut secs: Vec<Writer> = (0..SECTIONS).map(|_| Writer::default()).collect();
    let sec = |s: Sec| s as usize;

    let mut deleted = patch.deleted.clone();
    deleted.sort_unstable();
    deleted.dedup();
    for &id in &deleted {
        secs[sec(Sec::Deleted)].u32(id);
    }
    let mut restat = patch.restat.clone();
    restat.sort_unstable_by_key(|(id, _)| *id);
    restat.dedup_by_key(|(id, _)| *id);
    let w = &mut secs[sec(Sec::Restat)];
    for (id, s) in &restat {
        w.u32(*id);
        w.u64(s.size);
        w.i64(s.mtime_ns);
        w.i64(s.ctime_ns);
        w.u64(s.ino);
        w.u64(s.hash);
        w.u8(u8::from(s.settled));
        w.buf.extend_from_slice(&[0, 0, 0]);
    }

    // the fixed-size tables
    let mut lens = vec![0u32; LEN_SLOTS * n];
    let mut totals = [0u64; LEN_SLOTS];
    let mut lessons = 0u32;
    for (id, d) in docs.iter().enumerate() {
        let w = &mut secs[sec(Sec::Stat)];
        w.u64(d.stat.size);
        w.i64(d.stat.ctime_ns);
        w.u64(d.stat.ino);
        w.u64(d.stat.hash);
        let flag = |b: bool, f: u8| if b { f } else { 0 };
        let mut flags = flag(d.stat.settled, F_SETTLED);
        let (mut confidence, mut successes, mut failures, mut outcome) = (0.0, 0, 0, 0);
        if let Some(l) = &d.lesson {
            lessons += 1;
            flags |= F_LESSON
                | flag(!l.tag_keys.is_empty(), F_TAGS)
                | flag(!l.targets.is_empty(), F_TARGETS)
                | flag(!l.supersedes.is_empty(), F_SUPERSEDES)
                | flag(l.expires_ns.is_some(), F_EXPIRES);
            confidence = l.confidence;
            successes = l.successes;
            failures = l.failures;
            outcome = outcome_byte(l.outcome);
            for (slot, &len) in l.lens.iter().enumerate() {
                lens[slot * n + id] = len;
                totals[slot] += u64::from(len);
            }
        }
        let w = &mut secs[sec(Sec::Rank)];
        w.i64(d.stat.mtime_ns);
        w.f64(confidence);
        w.u64(successes);
        w.u64(failures);
        w.u8(flags);
        w.u8(outcome);
        w.buf.extend_from_slice(&[0; 6]);
    }
    let w = &mut secs[sec(Sec::Lens)];
    for len in lens {
        w.u32(len);
    }

    secs[sec(Sec::Paths)] = column(docs.iter().map(|d| d.path.as_str()), n);
    secs[sec(Sec::Titles)] = column(
        docs.iter()
            .map(|d| d.lesson.as_ref().map_or("", |l| l.title.as_str())),
        n,
    );

    secs[sec(Sec::Lessons)].buf = bitset_bytes(n, |id| docs[id].lesson.is_some());

    // slugs, supersession, targets, expiry, tags
    let lesson_docs: Vec<(u32, &LessonMeta, &str)> = docs
        .iter()
        .enumerate()
        .filter_map(|(id, d)| d.lesson.as_ref().map(|l| (id as u32, l, d.path.as_str())))
        .collect();
    let slugs: Vec<(u32, Vec<&str>)> = lesson_docs
        .iter()
        .filter(|(_, l, path)| l.slug != stem(path))
        .map(|(id, l, _)| (*id, vec![l.slug.as_str()]))
        .collect();
    secs[sec(Sec::Slugs)].buf = doc_strings(&slugs, false);
    let mut slug_index: Vec<(u64, u32)> = lesson_docs
        .iter()
        .map(|(id, l, _)| (slug_hash(&l.slug), *id))
        .collect();
    slug_index.sort_unstable();
    for (h, id) in slug_index {
        secs[sec(Sec::SlugIndex)].u64(h);
        secs[sec(Sec::SlugIndex)].u32(id);
    }
    let supersedes: Vec<(u32, Vec<&str>)> = lesson_docs
        .iter()
        .filter(|(_, l, _)| !l.supersedes.is_empty())
        .map(|(id, l, _)| (*id, l.supersedes.iter().map(String::as_str).collect()))
        .collect();
    secs[sec(Sec::Supersedes)].buf = doc_strings(&supersedes, true);
    let mut by_slug: HashMap<&str, Vec<u32>> = HashMap::new();
    for (id, l, _) in &lesson_docs {
        by_slug.entry(l.slug.as_str()).or_default().push(*id);
    }
    let mut superseded: BTreeMap<u32, u32> = BTreeMap::new();
    let mut superseders: Vec<(u64, u32)> = Vec::new();
    for (id, l, _) in &lesson_docs {
        for s in superseded_slugs(&l.slug, &l.supersedes) {
            superseders.push((slug_hash(s), *id));
            for &d in by_slug.get(s).into_iter().flatten() {
                *superseded.entry(d).or_default() += 1;
            }
        }
    }
    for (d, count) in superseded {
        secs[sec(Sec::Superseded)].u32(d);
        secs[sec(Sec::Superseded)].u32(count);
    }
    superseders.sort_unstable();
    for (h, id) in superseders {
        secs[sec(Sec::Superseders)].u64(h);
        secs[sec(Sec::Superseders)].u32(id);
    }

    let mut sets: Vec<&[TargetGlobs]> = Vec::new();
    let mut set_ids: HashMap<&[TargetGlobs], u32> = HashMap::new();
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for (id, l, _) in &lesson_docs {
        if l.targets.is_empty() {
            continue;
        }
        let next = sets.len() as u32;
        let set = *set_ids.entry(l.targets.as_slice()).or_insert_with(|| {
            sets.push(&l.targets);
            next
        });
        pairs.push((*id, set));
    }
    let w = &mut secs[sec(Sec::Targets)];
    w.u32(pairs.len() as u32);
    for (id, set) in pairs {
        w.u32(id);
        w.u32(set);
    }
    w.u32(sets.len() as u32);
    for set in sets {
        w.varint(set.len() as u64);
        for t in set {
            let globs = [&t.operator, &t.role, &t.skill];
            let mut present = 0u8;
            for (i, g) in globs.iter().enumerate() {
                if g.is_some() {
                    present |= 1 << i;
                }
            }
            w.u8(present);
            for g in globs.into_iter().flatten() {
                w.str(g);
            }
        }
    }

    for (id, l, _) in &lesson_docs {
        if let Some(at) = l.expires_ns {
            secs[sec(Sec::Expires)].u32(*id);
            secs[sec(Sec::Expires)].i64(at);
        }
    }

    let mut tags: BTreeMap<&str, ListWriter> = BTreeMap::new();
    for (id, l, _) in &lesson_docs {
        for key in &l.tag_keys {
            tags.entry(key.as_str()).or_default().push(*id, &[0; 4]);
        }
    }
    let w = &mut secs[sec(Sec::Tags)];
    w.u32(tags.len() as u32);
    w.buf.extend_from_slice(&bitset_bytes(n, |id| {
        docs[id]
            .lesson
            .as_ref()
            .is_some_and(|l| !l.tag_keys.is_empty())
    }));
    for (key, list) in tags {
        let (count, bytes) = list.finish();
        w.str(key);
        w.varint(u64::from(count));
        w.varint(bytes.len() as u64);
        w.buf.extend_from_slice(&bytes);
    }

    // the dictionary and the posting lists
    let mut posting_off = 0u64;
    for (t, count, bytes) in lists {
        let w = &mut secs[sec(Sec::Dict)];
        w.u64(*t);
        w.u64(posting_off);
        w.u32(*count);
        w.u32(codec::checksum(bytes) as u32);
        posting_off += bytes.len() as u64;
    }
    let postings_len: usize = lists.iter().map(|(_, _, b)| b.len()).sum();

    // assemble: the head, then each section on an 8-byte boundary
    let mut out = Writer::default();
    let body_len: usize = secs.iter().map(|s| s.len() + 8).sum::<usize>() + postings_len;
    out.buf.reserve(HEAD + body_len);
    out.buf.resize(HEAD, 0);
    let mut table = Vec::with_capacity(SECTIONS);
    for (i, s) in secs.iter().enumerate() {
        out.buf.resize(out.len().next_multiple_of(8), 0);
        let start = out.len();
        if i == Sec::Postings as usize {
            for (_, _, bytes) in lists {
                out.buf.extend_from_slice(bytes);
            }
            table.push((start, out.len() - start, 0));
        } else {
            out.buf.extend_from_slice(&s.buf);
            table.push((start, s.len(), codec::checksum(&s.buf)));
        }
    }
    let mut h = Writer::default();
    h.buf.extend_from_slice(MAGIC);
    h.u32(FORMAT_VERSION);
    h.u32(match kind {
        Kind::Base => 0,
        Kind::Delta => 1,
    });
    h.u64(header.index_id);
    h.u64(header.generation);
    h.u64(header.config_hash);
    h.u32(n as u32);
    h.u32(lists.len() as u32);
    h.u32(lessons);
    h.u32(SECTIONS as u32);
    for t in totals {
        h.u64(t);
    }
    for (off, len, sum) in table {
        h.u64(off as u64);
        h.u64(len as u64);
        h.u64(sum);
    }
    let sum = codec::checksum(&h.buf);
    h.u64(sum);
    debug_assert_eq!(h.len(), HEAD);
    out.buf[..HEAD].copy_from_slice(&h.buf);
    out.buf
}

/// Encode a segment from records (any order: they are sorted by path).
pub fn encode(kind: Kind, header: Header, mut records: Vec<Record>, patch: &Patch) -> Vec<u8> {
    records.sort_by(|a, b| path_order(&a.path, &b.path));
    let mut encoder = Encoder::default();
    for chunk in records.chunks(Encoder::CHUNK) {
        encoder.add(chunk);
    }
    encoder.finish(kind, header, patch)
}

/// A segment being written from records that arrive in path order, a chunk at a time (so
/// that a whole bank's records need never be in memory at once).
#[derive(Default)]
pub struct Encoder {
    lists: TermMap<ListWriter>,
    docs: Vec<Doc>,
}

impl Encoder {
    /// A good number of records per [`Encoder::add`].
    pub const CHUNK: usize = 2048;

    /// Add records (sorted by path, and after every record added before).
    pub fn add(&mut self, chunk: &[Record]) {
        debug_assert!(chunk
            .windows(2)
            .all(|w| path_order(&w[0].path, &w[1].path).is_lt()));
        debug_assert!(chunk.first().is_none_or(|r| self
            .docs
            .last()
            .is_none_or(|d| path_order(&d.path, &r.path).is_lt())));
        // analysed in parallel, appended in order: deterministic output
        let analysed: Vec<(Doc, Vec<(Term, Tf)>)> = chunk.par_iter().map(analyse).collect();
        for (doc, terms) in analysed {
            let id = self.docs.len() as u32;
            self.docs.push(doc);
            for (t, tf) in terms {
                self.lists.entry(t).or_default().push(id, &tf);
            }
        }
    }

    /// The segment's bytes.
    pub fn finish(self, kind: Kind, header: Header, patch: &Patch) -> Vec<u8> {
        let mut lists: Vec<(Term, u32, Vec<u8>)> = self
            .lists
            .into_iter()
            .map(|(t, l)| {
                let (count, bytes) = l.finish();
                (t, count, bytes)
            })
            .collect();
        lists.par_sort_unstable_by_key(|(t, _, _)| *t);
        write_segment(kind, header, patch, &self.docs, &lists)
    }
}

/// One input of [`merge`]: a segment, which of its docs are dead, and new stats for some.
pub struct Part<'a> {
    /// The segment.
    pub segment: &'a Segment,
    /// Per doc of the segment: dropped from the merge.
    pub dead: &'a [bool],
    /// New stats by doc id of the segment.
    pub restat: &'a HashMap<u32, FileStat>,
}

/// Merge the live docs of segments (whose live paths are distinct) into one new segment,
/// without parsing or tokenising anything: docs and posting lists are carried over.
pub fn merge(
    kind: Kind,
    header: Header,
    parts: &[Part],
    patch: &Patch,
) -> Result<Vec<u8>, Corrupt> {
    // the live docs of every part, in path order
    let mut live: Vec<(usize, u32, Doc)> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        for (id, mut doc) in part.segment.docs()?.into_iter().enumerate() {
            if part.dead.get(id).copied().unwrap_or(false) {
                continue;
            }
            if let Some(stat) = part.restat.get(&(id as u32)) {
                doc.stat = *stat;
            }
            live.push((p, id as u32, doc));
        }
    }
    live.sort_by(|a, b| path_order(&a.2.path, &b.2.path));
    let mut remap: Vec<Vec<Option<u32>>> = parts
        .iter()
        .map(|p| vec![None; p.segment.doc_count])
        .collect();
    for (new_id, (p, id, _)) in live.iter().enumerate() {
        remap[*p][*id as usize] = Some(new_id as u32);
    }
    let docs: Vec<Doc> = live.into_iter().map(|(_, _, d)| d).collect();

    // every term of every part, ascending; each list's entries remapped and merged by new id
    let mut all_terms: Vec<Term> = Vec::new();
    for part in parts {
        for i in 0..part.segment.term_count {
            all_terms.push(part.segment.dict_term(i)?);
        }
    }
    all_terms.sort_unstable();
    all_terms.dedup();
    let lists: Vec<Option<(Term, u32, Vec<u8>)>> = all_terms
        .par_iter()
        .map(|&t| -> Result<_, Corrupt> {
            let mut entries: Vec<(u32, Tf)> = Vec::new();
            for (p, part) in parts.iter().enumerate() {
                if let Some((count, bytes)) = part.segment.postings(t)? {
                    let map = &remap[p];
                    let mut bad = false;
                    codec::for_each_posting(bytes, count, |id, tf| match map.get(id as usize) {
                        Some(Some(new_id)) => entries.push((*new_id, *tf)),
                        Some(None) => {}
                        None => bad = true,
                    })?;
                    if bad {
                        return Err(Corrupt("doc id out of range"));
                    }
                }
            }
            if entries.is_empty() {
                return Ok(None);
            }
            entries.sort_unstable_by_key(|(id, _)| *id);
            let mut list = ListWriter::default();
            for (id, tf) in &entries {
                list.push(*id, tf);
            }
            let (count, bytes) = list.finish();
            Ok(Some((t, count, bytes)))
        })
        .collect::<Result<_, _>>()?;
    let lists: Vec<(Term, u32, Vec<u8>)> = lists.into_iter().flatten().collect();
    Ok(write_segment(kind, header, patch, &docs, &lists))
}

/// A segment's bytes: built in this process, or a file mapped into memory.
#[derive(Debug)]
enum Bytes {
    Memory(Vec<u8>),
    #[cfg(unix)]
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Memory(b) => b,
            #[cfg(unix)]
            Bytes::Mapped(m) => m,
        }
    }
}

/// A segment whose header is checked; its sections are checked as they are first used.
#[derive(Debug)]
pub struct Segment {
    bytes: Bytes,
    /// Base or delta.
    pub kind: Kind,
    /// Its identity.
    pub header: Header,
    doc_count: usize,
    term_count: usize,
    lessons: u64,
    totals: [u64; LEN_SLOTS],
    sections: [Range<usize>; SECTIONS],
    sums: [u64; SECTIONS],
    checked: [OnceLock<bool>; SECTIONS],
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The entries of a table of (u64 key, u32 doc), 12 bytes each, whose key is `key`.
fn keyed(table: &[u8], key: u64) -> impl Iterator<Item = u32> + '_ {
    let n = table.len() / 12;
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if u64_at(table, mid * 12) < key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo..n)
        .take_while(move |&i| u64_at(table, i * 12) == key)
        .map(move |i| u32_at(table, i * 12 + 8))
}

/// The strings of a doc in a table written by `doc_strings`.
struct DocStrings<'a> {
    count: usize,
    table: &'a [u8],
    data: &'a [u8],
}

impl<'a> DocStrings<'a> {
    fn new(sec: &'a [u8]) -> Result<DocStrings<'a>, Corrupt> {
        let count = Reader::new(sec).u32()? as usize;
        let end = count
            .checked_mul(8)
            .and_then(|t| t.checked_add(4))
            .filter(|&e| e <= sec.len())
            .ok_or(Corrupt("string table"))?;
        Ok(DocStrings {
            count,
            table: &sec[4..end],
            data: &sec[end..],
        })
    }

    fn doc(&self, i: usize) -> u32 {
        u32_at(self.table, i * 8)
    }

    fn reader(&self, i: usize) -> Result<Reader<'a>, Corrupt> {
        let off = u32_at(self.table, i * 8 + 4) as usize;
        Ok(Reader::new(
            self.data.get(off..).ok_or(Corrupt("string offset"))?,
        ))
    }

    fn find(&self, doc: u32) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.doc(mid).cmp(&doc) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    fn list(&self, i: usize) -> Result<Vec<&'a str>, Corrupt> {
        let mut r = self.reader(i)?;
        let n = r.len()?;
        (0..n).map(|_| r.str()).collect()
    }
}

/// A segment's tags: keys, which docs are tagged, and each key's docs.
pub struct SegmentTags<'a> {
    /// Keys (normal form), ascending.
    pub keys: Vec<&'a str>,
    tagged: &'a [u8],
    lists: Vec<(usize, &'a [u8])>,
}

impl SegmentTags<'_> {
    /// A bit per doc: it has tags (u64 words, little-endian).
    pub(crate) fn tagged_bits(&self) -> &[u8] {
        self.tagged
    }

    /// How many docs key `i` has.
    pub fn count(&self, i: usize) -> usize {
        self.lists[i].0
    }

    /// The docs of key `i`, ascending.
    pub fn docs(&self, i: usize, mut f: impl FnMut(u32)) -> Result<(), Corrupt> {
        let (count, bytes) = self.lists[i];
        codec::for_each_posting(bytes, count, |id, _| f(id))
    }
}

/// What the head of a segment file says, checked against its own checksum, with its section
/// table in order (whether the sections fit the file is for the caller, which knows its
/// length).
struct Head {
    kind: Kind,
    header: Header,
    doc_count: usize,
    term_count: usize,
    lessons: u64,
    totals: [u64; LEN_SLOTS],
    sections: [Range<usize>; SECTIONS],
    sums: [u64; SECTIONS],
}

impl Head {
    /// Read the head from the start of `bytes`.
    fn read(bytes: &[u8]) -> Result<Head, Corrupt> {
        if bytes.len() < HEAD || &bytes[..8] != MAGIC {
            return Err(Corrupt("not an index file"));
        }
        if u64_at(bytes, HEAD - 8) != codec::checksum(&bytes[..HEAD - 8]) {
            return Err(Corrupt("header checksum mismatch"));
        }
        let mut r = Reader::new(&bytes[8..HEAD]);
        if r.u32()? != FORMAT_VERSION {
            return Err(Corrupt("another format version"));
        }
        let kind = match r.u32()? {
            0 => Kind::Base,
            1 => Kind::Delta,
            _ => return Err(Corrupt("unknown segment kind")),
        };
        let header = Header {
            index_id: r.u64()?,
            generation: r.u64()?,
            config_hash: r.u64()?,
        };
        let doc_count = r.u32()? as usize;
        let term_count = r.u32()? as usize;
        let lessons = u64::from(r.u32()?);
        if r.u32()? as usize != SECTIONS {
            return Err(Corrupt("section count"));
        }
        let mut totals = [0u64; LEN_SLOTS];
        for t in &mut totals {
            *t = r.u64()?;
        }
        let mut sections: [Range<usize>; SECTIONS] = std::array::from_fn(|_| 0..0);
        let mut sums = [0u64; SECTIONS];
        let mut end = HEAD;
        for (range, sum) in sections.iter_mut().zip(&mut sums) {
            let off = usize::try_from(r.u64()?).map_err(|_| Corrupt("offset"))?;
            let len = usize::try_from(r.u64()?).map_err(|_| Corrupt("offset"))?;
            *sum = r.u64()?;
            let stop = off.checked_add(len).ok_or(Corrupt("offset"))?;
            if off < end {
                return Err(Corrupt("section table"));
            }
            *range = off..stop;
            end = stop;
        }
        Ok(Head {
            kind,
            header,
            doc_count,
            term_count,
            lessons,
            totals,
            sections,
            sums,
        })
    }
}

impl Segment {
    /// Check and take a segment built in this process.
    pub fn parse(bytes: Vec<u8>) -> Result<Segment, Corrupt> {
        let segment = Segment::from_bytes(Bytes::Memory(bytes))?;
        for (i, c) in segment.checked.iter().enumerate() {
            if i != Sec::Postings as usize {
                c.set(codec::checksum(segment.section_bytes(i)) == segment.sums[i])
                    .expect("a new segment is unchecked");
            }
        }
        if segment.checked.iter().any(|c| c.get() == Some(&false)) {
            return Err(Corrupt("section checksum mismatch"));
        }
        Ok(segment)
    }

    /// Open a segment file: its header is read and checked now, each section when first
    /// used, each posting list when read. `Ok(Err(_))` when the file is damaged.
    pub fn open(path: &Path) -> std::io::Result<Result<Segment, Corrupt>> {
        #[cfg(unix)]
        {
            let file = std::fs::File::open(path)?;
            // SAFETY: the map is read-only and the file is never written in place: every
            // writer of `.lesson/` writes a temp file and renames it over the old one, so a
            // mapped file's bytes do not change while it is mapped (a reader that mapped the
            // old file keeps it). A length too short for the header is caught before any read.
            let map = unsafe { memmap2::Mmap::map(&file)? };
            Ok(Segment::from_bytes(Bytes::Mapped(map)))
        }
        #[cfg(not(unix))]
        {
            Ok(Segment::from_bytes(Bytes::Memory(std::fs::read(path)?)))
        }
    }

    fn from_bytes(bytes: Bytes) -> Result<Segment, Corrupt> {
        let Head {
            kind,
            header,
            doc_count,
            term_count,
            lessons,
            totals,
            sections,
            sums,
        } = Head::read(&bytes)?;
        if sections[SECTIONS - 1].end != bytes.len() {
            return Err(Corrupt("truncated"));
        }
        let size = |s: Sec| sections[s as usize].len();
        let each = |s: Sec, unit: usize| size(s) % unit == 0;
        let exactly = |s: Sec, n: usize, unit: usize| n.checked_mul(unit) == Some(size(s));
        let sized = exactly(Sec::Stat, doc_count, STAT_ENTRY)
            && exactly(Sec::Rank, doc_count, RANK_ENTRY)
            && exactly(Sec::Lens, doc_count, 4 * LEN_SLOTS)
            && exactly(Sec::Lessons, doc_count.div_ceil(64), 8)
            && exactly(Sec::Dict, term_count, DICT_ENTRY)
            && each(Sec::Deleted, 4)
            && each(Sec::Restat, RESTAT_ENTRY)
            && each(Sec::SlugIndex, 12)
            && each(Sec::Superseded, 8)
            && each(Sec::Superseders, 12)
            && each(Sec::Expires, 12);
        if !sized || lessons > doc_count as u64 {
            return Err(Corrupt("section sizes"));
        }
        Ok(Segment {
            bytes,
            kind,
            header,
            doc_count,
            term_count,
            lessons,
            totals,
            sections,
            sums,
            checked: std::array::from_fn(|_| OnceLock::new()),
        })
    }

    /// The kind, identity and stored checksum of the segment file at `path`, from its first
    /// [`HEAD`] bytes alone (checked against their own checksum; nothing else is read): enough
    /// to tell whether the file is still the segment a process wrote.
    pub fn peek(path: &Path) -> Option<(Kind, Header, u64)> {
        use std::io::Read;
        let mut head = [0u8; HEAD];
        std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
        let h = Head::read(&head).ok()?;
        Some((h.kind, h.header, u64_at(&head, HEAD - 8)))
    }

    /// An empty base.
    pub fn empty(header: Header) -> Segment {
        Segment::parse(encode(Kind::Base, header, Vec::new(), &Patch::default()))
            .expect("an empty segment decodes")
    }

    /// The whole file's bytes, when they are in memory (a segment built in this process).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.bytes {
            Bytes::Memory(bytes) => Some(bytes),
            #[cfg(unix)]
            Bytes::Mapped(_) => None,
        }
    }

    fn section_bytes(&self, i: usize) -> &[u8] {
        &self.bytes[self.sections[i].clone()]
    }

    /// A section, checked against its checksum the first time.
    fn sec(&self, s: Sec) -> Result<&[u8], Corrupt> {
        let i = s as usize;
        let bytes = self.section_bytes(i);
        let ok = *self.checked[i].get_or_init(|| codec::checksum(bytes) == self.sums[i]);
        if ok {
            Ok(bytes)
        } else {
            Err(Corrupt("section checksum mismatch"))
        }
    }

    /// The checksum stored at the end of the head (over the head, which holds every section's
    /// checksum, the dictionary's included, and so each posting list's): with the header,
    /// what tells two segments apart.
    pub fn checksum(&self) -> u64 {
        u64_at(&self.bytes, HEAD - 8)
    }

    /// Docs in the segment.
    pub fn doc_count(&self) -> usize {
        self.doc_count
    }

    /// Lessons in the segment.
    pub fn lesson_count(&self) -> u64 {
        self.lessons
    }

    /// Field length totals over the segment's lessons, per [`score::slot`].
    pub fn totals(&self) -> &[u64; LEN_SLOTS] {
        &self.totals
    }

    /// The stat of doc `id` (< [`Segment::doc_count`]).
    pub fn stat(&self, id: usize) -> Result<FileStat, Corrupt> {
        let s = self.sec(Sec::Stat)?;
        let rank = self.sec(Sec::Rank)?;
        let at = id * STAT_ENTRY;
        Ok(FileStat {
            size: u64_at(s, at),
            mtime_ns: u64_at(rank, id * RANK_ENTRY) as i64,
            ctime_ns: u64_at(s, at + 8) as i64,
            ino: u64_at(s, at + 16),
            hash: u64_at(s, at + 24),
            settled: rank[id * RANK_ENTRY + 32] & F_SETTLED != 0,
        })
    }

    /// The rank table (for [`Segment::rank_of`]).
    pub(crate) fn ranks(&self) -> Result<&[u8], Corrupt> {
        self.sec(Sec::Rank)
    }

    /// Doc `id`'s entry of a rank table.
    pub(crate) fn rank_of(ranks: &[u8], id: usize) -> Rank {
        let at = id * RANK_ENTRY;
        Rank {
            mtime_ns: u64_at(ranks, at) as i64,
            confidence: f64::from_bits(u64_at(ranks, at + 8)),
            successes: u64_at(ranks, at + 16),
            failures: u64_at(ranks, at + 24),
            flags: ranks[at + 32],
            outcome: ranks[at + 33],
        }
    }

    /// The rank entry of doc `id`.
    pub fn rank(&self, id: usize) -> Result<Rank, Corrupt> {
        Ok(Segment::rank_of(self.ranks()?, id))
    }

    /// The lengths of slot `slot` for every doc, u32 each.
    pub(crate) fn lens_of_slot(&self, slot: usize) -> Result<&[u8], Corrupt> {
        let n = self.doc_count * 4;
        Ok(&self.sec(Sec::Lens)?[slot * n..(slot + 1) * n])
    }

    /// The field lengths of doc `id`.
    pub fn lens(&self, id: usize) -> Result<[u32; LEN_SLOTS], Corrupt> {
        let lens = self.sec(Sec::Lens)?;
        let n = self.doc_count * 4;
        Ok(std::array::from_fn(|slot| u32_at(lens, slot * n + id * 4)))
    }

    /// A bit per doc: a lesson (u64 words, little-endian).
    pub(crate) fn lesson_bits(&self) -> Result<&[u8], Corrupt> {
        self.sec(Sec::Lessons)
    }

    /// Call `f(id, path)` on every doc's path, in doc order.
    pub fn for_each_path(&self, f: impl FnMut(usize, &str)) -> Result<(), Corrupt> {
        self.for_each_in(Sec::Paths, f)
    }

    /// Call `f(id, title)` on every doc's title (empty: not a lesson), in doc order.
    pub fn for_each_title(&self, f: impl FnMut(usize, &str)) -> Result<(), Corrupt> {
        self.for_each_in(Sec::Titles, f)
    }

    /// The path of doc `id`.
    pub fn path(&self, id: usize) -> Result<String, Corrupt> {
        self.string_at(Sec::Paths, id)
    }

    /// The title of doc `id` as written (empty: not a lesson).
    pub fn title(&self, id: usize) -> Result<String, Corrupt> {
        self.string_at(Sec::Titles, id)
    }

    /// The first doc whose path is not before `path` ([`path_order`]; the docs are in path
    /// order): a binary search over the blocks' first paths (stored whole), then one block.
    pub fn lower_bound(&self, path: &str) -> Result<usize, Corrupt> {
        let blocks = self.doc_count.div_ceil(COLUMN_BLOCK);
        let mut buf = Vec::new();
        let first_of = |b: usize, buf: &mut Vec<u8>| -> Result<String, Corrupt> {
            let mut out = String::new();
            self.column_block(Sec::Paths, b, buf, |_, p| {
                out = p.to_string();
                false
            })?;
            Ok(out)
        };
        // the last block whose first path is before `path`
        let (mut lo, mut hi) = (0, blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if path_order(&first_of(mid, &mut buf)?, path).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(b) = lo.checked_sub(1) else {
            return Ok(0);
        };
        let mut at = (b + 1) * COLUMN_BLOCK;
        self.column_block(Sec::Paths, b, &mut buf, |id, p| {
            if path_order(p, path).is_lt() {
                return true;
            }
            at = id;
            false
        })?;
        Ok(at.min(self.doc_count))
    }

    fn for_each_in(&self, s: Sec, mut f: impl FnMut(usize, &str)) -> Result<(), Corrupt> {
        let blocks = self.doc_count.div_ceil(COLUMN_BLOCK);
        let mut buf = Vec::new();
        for b in 0..blocks {
            self.column_block(s, b, &mut buf, |id, p| {
                f(id, p);
                true
            })?;
        }
        Ok(())
    }

    fn string_at(&self, s: Sec, id: usize) -> Result<String, Corrupt> {
        if id >= self.doc_count {
            return Err(Corrupt("doc id out of range"));
        }
        let mut buf = Vec::new();
        let mut out = String::new();
        self.column_block(s, id / COLUMN_BLOCK, &mut buf, |i, p| {
            if i == id {
                out = p.to_string();
                return false;
            }
            true
        })?;
        Ok(out)
    }

    /// Decode block `b` of a string column, calling `f(id, string)` until it returns false.
    fn column_block(
        &self,
        s: Sec,
        b: usize,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(usize, &str) -> bool,
    ) -> Result<(), Corrupt> {
        let sec = self.sec(s)?;
        let blocks = self.doc_count.div_ceil(COLUMN_BLOCK);
        let mut r = Reader::new(sec);
        if r.u32()? as usize != blocks || sec.len() < 4 + blocks * 4 {
            return Err(Corrupt("string column"));
        }
        let data = &sec[4 + blocks * 4..];
        let off = u32_at(sec, 4 + b * 4) as usize;
        let mut r = Reader::new(data.get(off..).ok_or(Corrupt("string offset"))?);
        buf.clear();
        let first = b * COLUMN_BLOCK;
        for id in first..self.doc_count.min(first + COLUMN_BLOCK) {
            let shared = r.varint()? as usize;
            if shared > buf.len() {
                return Err(Corrupt("string prefix"));
            }
            buf.truncate(shared);
            let n = r.len()?;
            buf.extend_from_slice(r.take(n)?);
            let p = std::str::from_utf8(buf).map_err(|_| Corrupt("invalid UTF-8"))?;
            if !f(id, p) {
                break;
            }
        }
        Ok(())
    }

    /// The slug of doc `id`, a lesson.
    pub fn slug(&self, id: usize) -> Result<String, Corrupt> {
        self.slug_of(id, &self.path(id)?)
    }

    /// The slug of doc `id`, a lesson whose path is `path`.
    pub(crate) fn slug_of(&self, id: usize, path: &str) -> Result<String, Corrupt> {
        let slugs = DocStrings::new(self.sec(Sec::Slugs)?)?;
        match slugs.find(id as u32) {
            Some(i) => Ok(slugs.reader(i)?.str()?.to_string()),
            None => Ok(stem(path).to_string()),
        }
    }

    /// The lessons whose slug has hash `h`.
    pub(crate) fn docs_with_slug_hash(&self, h: u64) -> Result<Vec<u32>, Corrupt> {
        Ok(keyed(self.sec(Sec::SlugIndex)?, h).collect())
    }

    /// The lessons that supersede a slug of hash `h` (not their own).
    pub(crate) fn superseders_of(&self, h: u64) -> Result<Vec<u32>, Corrupt> {
        Ok(keyed(self.sec(Sec::Superseders)?, h).collect())
    }

    /// `supersedes` of doc `id`.
    pub fn supersedes(&self, id: usize) -> Result<Vec<&str>, Corrupt> {
        let table = DocStrings::new(self.sec(Sec::Supersedes)?)?;
        match table.find(id as u32) {
            Some(i) => table.list(i),
            None => Ok(Vec::new()),
        }
    }

    /// Every doc with `supersedes`, with them.
    pub fn all_supersedes(&self) -> Result<Vec<(u32, Vec<&str>)>, Corrupt> {
        let table = DocStrings::new(self.sec(Sec::Supersedes)?)?;
        (0..table.count)
            .map(|i| Ok((table.doc(i), table.list(i)?)))
            .collect()
    }

    /// Docs superseded by lessons of this segment, with how many supersede each.
    pub(crate) fn superseded(&self) -> Result<Vec<(u32, u32)>, Corrupt> {
        let sec = self.sec(Sec::Superseded)?;
        Ok((0..sec.len() / 8)
            .map(|i| (u32_at(sec, i * 8), u32_at(sec, i * 8 + 4)))
            .collect())
    }

    /// Which doc has which target list, and how many lists there are.
    pub fn target_pairs(&self) -> Result<(Vec<(u32, u32)>, u32), Corrupt> {
        let mut r = Reader::new(self.sec(Sec::Targets)?);
        let pairs = r.u32()? as usize;
        let mut docs = Vec::with_capacity(pairs.min(1 << 20));
        for _ in 0..pairs {
            docs.push((r.u32()?, r.u32()?));
        }
        let sets = r.u32()?;
        if docs.iter().any(|&(_, set)| set >= sets) {
            return Err(Corrupt("target list out of range"));
        }
        Ok((docs, sets))
    }

    /// The distinct target lists.
    pub fn target_sets(&self) -> Result<Vec<Vec<TargetGlobs>>, Corrupt> {
        let mut r = Reader::new(self.sec(Sec::Targets)?);
        let pairs = r.u32()? as usize;
        r.take(pairs.checked_mul(8).ok_or(Corrupt("length overflow"))?)?;
        let sets = r.u32()? as usize;
        let mut out = Vec::with_capacity(sets.min(1 << 16));
        for _ in 0..sets {
            let n = r.len()?;
            let mut set = Vec::with_capacity(n.min(64));
            for _ in 0..n {
                let present = r.u8()?;
                let mut get = |bit: u8| -> Result<Option<String>, Corrupt> {
                    Ok(if present & bit != 0 {
                        Some(r.str()?.to_string())
                    } else {
                        None
                    })
                };
                let operator = get(1)?;
                let role = get(2)?;
                let skill = get(4)?;
                set.push(TargetGlobs {
                    operator,
                    role,
                    skill,
                });
            }
            out.push(set);
        }
        Ok(out)
    }

    /// Docs with `expires_at`, with it.
    pub fn expires(&self) -> Result<Vec<(u32, i64)>, Corrupt> {
        let sec = self.sec(Sec::Expires)?;
        Ok((0..sec.len() / 12)
            .map(|i| (u32_at(sec, i * 12), u64_at(sec, i * 12 + 4) as i64))
            .collect())
    }

    /// The tags.
    pub fn tags(&self) -> Result<SegmentTags<'_>, Corrupt> {
        let sec = self.sec(Sec::Tags)?;
        let mut r = Reader::new(sec);
        let count = r.u32()? as usize;
        let tagged = r.take(self.doc_count.div_ceil(64) * 8)?;
        let mut keys = Vec::with_capacity(count.min(1 << 16));
        let mut lists = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            keys.push(r.str()?);
            let docs = r.varint()? as usize;
            let len = r.len()?;
            lists.push((docs, r.take(len)?));
        }
        Ok(SegmentTags {
            keys,
            tagged,
            lists,
        })
    }

    /// Base doc ids this delta deletes.
    pub fn deleted(&self) -> Result<Vec<u32>, Corrupt> {
        let sec = self.sec(Sec::Deleted)?;
        Ok((0..sec.len() / 4).map(|i| u32_at(sec, i * 4)).collect())
    }

    /// New stats of base docs.
    pub fn restat(&self) -> Result<Vec<(u32, FileStat)>, Corrupt> {
        let mut r = Reader::new(self.sec(Sec::Restat)?);
        (0..self.sections[Sec::Restat as usize].len() / RESTAT_ENTRY)
            .map(|_| {
                let id = r.u32()?;
                let size = r.u64()?;
                let mtime_ns = r.i64()?;
                let ctime_ns = r.i64()?;
                let ino = r.u64()?;
                let hash = r.u64()?;
                let settled = r.u8()? != 0;
                r.take(3)?;
                Ok((
                    id,
                    FileStat {
                        size,
                        mtime_ns,
                        ctime_ns,
                        ino,
                        hash,
                        settled,
                    },
                ))
            })
            .collect()
    }

    /// Every doc, decoded (for a merge).
    pub fn docs(&self) -> Result<Vec<Doc>, Corrupt> {
        let n = self.doc_count;
        let mut paths = Vec::with_capacity(n);
        self.for_each_path(|_, p| paths.push(p.to_string()))?;
        let mut titles = Vec::with_capacity(n);
        self.for_each_title(|_, t| titles.push(t.to_string()))?;
        let mut tag_keys: Vec<Vec<String>> = vec![Vec::new(); n];
        let tags = self.tags()?;
        for (i, key) in tags.keys.iter().enumerate() {
            let mut bad = false;
            tags.docs(i, |id| match tag_keys.get_mut(id as usize) {
                Some(keys) => keys.push(key.to_string()),
                None => bad = true,
            })?;
            if bad {
                return Err(Corrupt("tagged doc out of range"));
            }
        }
        let sets = self.target_sets()?;
        let targets: HashMap<u32, u32> = self.target_pairs()?.0.into_iter().collect();
        let supersedes: HashMap<u32, Vec<&str>> = self.all_supersedes()?.into_iter().collect();
        let expires: HashMap<u32, i64> = self.expires()?.into_iter().collect();
        let slugs = DocStrings::new(self.sec(Sec::Slugs)?)?;
        let mut slug_of: HashMap<u32, &str> = HashMap::new();
        for i in 0..slugs.count {
            slug_of.insert(slugs.doc(i), slugs.reader(i)?.str()?);
        }
        let ranks = self.ranks()?;
        let mut docs = Vec::with_capacity(n);
        for (id, (path, title)) in paths.into_iter().zip(titles).enumerate() {
            let stat = self.stat(id)?;
            let rank = Segment::rank_of(ranks, id);
            let lesson = if rank.is_lesson() {
                let key = id as u32;
                let slug = slug_of.get(&key).copied().unwrap_or_else(|| stem(&path));
                Some(LessonMeta {
                    slug: slug.to_string(),
                    title,
                    outcome: rank.outcome(),
                    confidence: rank.confidence,
                    successes: rank.successes,
                    failures: rank.failures,
                    expires_ns: expires.get(&key).copied(),
                    lens: self.lens(id)?,
                    tag_keys: std::mem::take(&mut tag_keys[id]),
                    targets: targets
                        .get(&key)
                        .map(|&s| sets[s as usize].clone())
                        .unwrap_or_default(),
                    supersedes: supersedes
                        .get(&key)
                        .map(|s| s.iter().map(|s| s.to_string()).collect())
                        .unwrap_or_default(),
                })
            } else {
                None
            };
            docs.push(Doc { path, stat, lesson });
        }
        Ok(docs)
    }

    /// Terms in the segment.
    pub fn term_count(&self) -> usize {
        self.term_count
    }

    fn dict_term(&self, i: usize) -> Result<Term, Corrupt> {
        Ok(u64_at(self.sec(Sec::Dict)?, i * DICT_ENTRY))
    }

    /// The dictionary position of `term`.
    fn find(&self, term: Term) -> Result<Option<usize>, Corrupt> {
        let dict = self.sec(Sec::Dict)?;
        let (mut lo, mut hi) = (0, self.term_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match u64_at(dict, mid * DICT_ENTRY).cmp(&term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }

    /// How many docs of this segment hold `term` (dead ones included), from the dictionary.
    pub(crate) fn doc_count_of(&self, term: Term) -> Result<usize, Corrupt> {
        match self.find(term)? {
            Some(i) => Ok(u32_at(self.sec(Sec::Dict)?, i * DICT_ENTRY + 16) as usize),
            None => Ok(0),
        }
    }

    /// The posting list of `term`, checked: its doc count and bytes.
    pub(crate) fn postings(&self, term: Term) -> Result<Option<(usize, &[u8])>, Corrupt> {
        let Some(i) = self.find(term)? else {
            return Ok(None);
        };
        let dict = self.sec(Sec::Dict)?;
        let postings = self.section_bytes(Sec::Postings as usize);
        let at = i * DICT_ENTRY;
        let off = u64_at(dict, at + 8);
        let end = if i + 1 < self.term_count {
            u64_at(dict, at + DICT_ENTRY + 8)
        } else {
            postings.len() as u64
        };
        let count = u32_at(dict, at + 16) as usize;
        let sum = u32_at(dict, at + 20);
        if off > end || end > postings.len() as u64 {
            return Err(Corrupt("postings out of range"));
        }
        let bytes = &postings[off as usize..end as usize];
        if codec::checksum(bytes) as u32 != sum {
            return Err(Corrupt("posting list checksum mismatch"));
        }
        Ok(Some((count, bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(slug: &str, tags: &[&str], supersedes: &[&str]) -> LessonMeta {
        LessonMeta {
            slug: slug.to_string(),
            title: format!("{slug}: a title, ü"),
            outcome: Outcome::Failure,
            confidence: 0.7,
            successes: 3,
            failures: 9,
            expires_ns: (tags.len() == 1).then_some(-5),
            lens: [1, 2, 3, 4, 5, 6, 7, 8],
            tag_keys: tags.iter().map(|s| s.to_string()).collect(),
            targets: if tags.is_empty() {
                Vec::new()
            } else {
                vec![TargetGlobs {
                    operator: None,
                    role: Some("rev*".into()),
                    skill: Some(slug.to_string()),
                }]
            },
            supersedes: supersedes.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn doc(path: &str, lesson: Option<LessonMeta>) -> Doc {
        Doc {
            path: path.to_string(),
            stat: FileStat {
                size: path.len() as u64,
                mtime_ns: -7,
                ctime_ns: 11,
                ino: 13,
                hash: 17,
                settled: path.len().is_multiple_of(2),
            },
            lesson,
        }
    }

    #[test]
    fn docs_round_trip_through_a_segment() {
        let docs = vec![
            doc("a.md", Some(lesson("a", &["ci", "git"], &["b", "a"]))),
            doc("b.md", Some(lesson("bee", &[], &[]))),
            doc("notes.md", None),
            doc("sub/a.md", Some(lesson("a", &["git"], &[]))),
            doc("sub/b.md", Some(lesson("b", &["ci"], &["a", "a"]))),
        ];
        let mut list = ListWriter::default();
        list.push(0, &[1, 0, 0, 2]);
        list.push(4, &[0, 0, 0, 1]);
        let (count, bytes) = list.finish();
        let patch = Patch {
            deleted: vec![9, 3],
            restat: vec![(2, docs[1].stat)],
        };
        let header = Header {
            index_id: 5,
            generation: 6,
            config_hash: 7,
        };
        let bytes = write_segment(Kind::Delta, header, &patch, &docs, &[(42, count, bytes)]);
        let seg = Segment::parse(bytes).unwrap();
        assert_eq!((seg.kind, seg.header), (Kind::Delta, header));
        assert_eq!(seg.docs().unwrap(), docs);
        assert_eq!(seg.lesson_count(), 4);
        assert_eq!(seg.deleted().unwrap(), [3, 9]);
        assert_eq!(seg.restat().unwrap(), [(2, docs[1].stat)]);
        assert_eq!(seg.slug(1).unwrap(), "bee");
        assert_eq!(seg.path(3).unwrap(), "sub/a.md");
        // `a.md` supersedes `b` (`sub/b.md`; its own slug `a` does not count), and `sub/b.md`
        // both lessons with slug `a`
        assert_eq!(seg.superseded().unwrap(), [(0, 1), (3, 1), (4, 1)]);
        assert_eq!(seg.superseders_of(slug_hash("a")).unwrap(), [4]);
        assert_eq!(seg.docs_with_slug_hash(slug_hash("a")).unwrap(), [0, 3]);
        let (count, bytes) = seg.postings(42).unwrap().unwrap();
        assert_eq!(count, 2);
        assert!(codec::for_each_posting(bytes, count, |_, _| {}).is_ok());
        assert_eq!(seg.postings(43).unwrap(), None);
    }

    #[test]
    fn a_damaged_section_is_found_when_it_is_used() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let bytes = write_segment(Kind::Base, Header::default(), &Patch::default(), &docs, &[]);
        let tags_at = {
            let seg = Segment::parse(bytes.clone()).unwrap();
            seg.sections[Sec::Tags as usize].start
        };
        let mut damaged = bytes.clone();
        damaged[tags_at + 4] ^= 1;
        assert!(Segment::parse(damaged.clone()).is_err());
        let seg = Segment::from_bytes(Bytes::Memory(damaged)).unwrap();
        assert!(seg.stat(0).is_ok(), "other sections are fine");
        assert!(seg.tags().is_err());
        let mut truncated = bytes.clone();
        truncated.pop();
        assert!(Segment::from_bytes(Bytes::Memory(truncated)).is_err());
        let mut header = bytes;
        header[50] ^= 1;
        assert!(Segment::from_bytes(Bytes::Memory(header)).is_err());
    }

    #[test]
    fn peek_reads_what_the_segment_says_of_itself_and_nothing_damaged() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let header = Header {
            index_id: 3,
            generation: 4,
            config_hash: 5,
        };
        let bytes = write_segment(Kind::Delta, header, &Patch::default(), &docs, &[]);
        let seg = Segment::parse(bytes.clone()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("seg");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            Segment::peek(&path),
            Some((Kind::Delta, header, seg.checksum()))
        );
        // another doc, another checksum
        let other = vec![doc("b.md", Some(lesson("a", &["ci"], &[])))];
        let other = write_segment(Kind::Delta, header, &Patch::default(), &other, &[]);
        assert_ne!(Segment::parse(other).unwrap().checksum(), seg.checksum());
        let mut damaged = bytes;
        damaged[40] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        assert_eq!(Segment::peek(&path), None);
        std::fs::write(&path, &damaged[..10]).unwrap();
        assert_eq!(Segment::peek(&path), None);
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lower_bound_and_the_string_columns_agree_with_a_scan(
            names in proptest::collection::btree_set("[ab/.-]{1,6}", 0..100),
            probes in proptest::collection::vec("[ab/.-]{0,7}", 1..20),
        ) {
            let mut paths: Vec<String> = names.into_iter().collect();
            paths.sort_by(|a, b| path_order(a, b));
            let docs: Vec<Doc> = paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let l = (i % 3 != 0).then(|| LessonMeta {
                        title: format!("{}é {p}", "t".repeat(i % 5)),
                        ..lesson("x", &[], &[])
                    });
                    doc(p, l)
                })
                .collect();
            let bytes = write_segment(Kind::Base, Header::default(), &Patch::default(), &docs, &[]);
            let seg = Segment::parse(bytes).unwrap();
            for probe in paths.iter().chain(&probes) {
                let scan = paths.partition_point(|p| path_order(p, probe).is_lt());
                prop_assert_eq!(seg.lower_bound(probe).unwrap(), scan, "{}", probe);
            }
            let mut titles = Vec::new();
            seg.for_each_title(|_, t| titles.push(t.to_string())).unwrap();
            for (id, d) in docs.iter().enumerate() {
                let title = d.lesson.as_ref().map_or("", |l| l.title.as_str());
                prop_assert_eq!(&titles[id], title);
                prop_assert_eq!(seg.title(id).unwrap(), title);
                prop_assert_eq!(seg.path(id).unwrap(), d.path.as_str());
            }
        }
    }
}
