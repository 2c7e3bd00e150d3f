//! The index: segments of documents with posting lists, and the search over them.
//!
//! A **segment** is one byte format for both the immutable **base** and the small **delta**
//! that patches it (new and changed files, the base docs they replace, and new stats for base
//! docs whose file was touched but not changed). An index is a base plus at most one delta; a
//! delta grows until [`super::store::merge_threshold`], then the two are merged into a new base.
//! An in-memory build goes through the same bytes, so a fresh index and a persisted, patched
//! one answer a request identically.
//!
//! Segment layout (little-endian; offsets from the start of the file):
//!
//! ```text
//! header    128 bytes: magic "LESSONIX", format version u32, kind u32 (0 base, 1 delta),
//!           index id u64 (a delta: the id of the base it patches), generation u64, config
//!           hash u64, counts u32 × 4 (docs, terms, deleted, restat), section offsets u64 × 7
//!           (deleted, restat, docs, dict, records, postings, end), 0u64, checksum u64 (of the
//!           head: every byte before the postings but these 8)
//! deleted   base doc ids, u32 each, ascending (a delta only)
//! restat    base doc id u32, size u64, mtime i64, ctime i64, inode u64, hash u64, settled u8,
//!           3 bytes padding
//! docs      120 bytes each (DocMeta), sorted by path
//! dict      32 bytes each, ascending by term: term u64, postings offset u64, docs u32,
//!           bytes u32, checksum of the list u64
//! records   per doc, its strings (record::encode_strings; the body is not kept)
//! postings  per term, one entry per doc holding it, ascending by doc id:
//!           varint(doc id − previous id, the first from 0), a byte of four 2-bit term counts
//!           (title, description, tags, body; 3 means "3 or more": a varint of count − 3
//!           follows, in field order)
//! ```
//!
//! Everything before the postings (the head) is read and checked when a segment opens; a
//! posting list is read from the file, and checked, only when a request needs it.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use globset::GlobMatcher;
use rayon::prelude::*;

use crate::lesson::Outcome;

use super::codec::{self, Corrupt, Reader, Writer};
use super::record::{self, FileStat, LessonView, Record, TargetGlobs};
use super::score::{self, FieldStats, QueryTerms, Settings, TermHasher, LEN_SLOTS};
use super::text::{self, Term};
use super::walk::path_order;
use super::{Gates, Hit, Request, ScoreParts, TagGate, TargetGate};

/// The on-disk format version; a file of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"LESSONIX";
const HEADER: usize = 128;
const DOC_META_SIZE: usize = 120;
const DICT_ENTRY: usize = 32;
const RESTAT_ENTRY: usize = 48;

const F_LESSON: u8 = 1;
const F_SETTLED: u8 = 2;
const F_TAGS: u8 = 4;
const F_TARGETS: u8 = 8;
const F_SUPERSEDES: u8 = 16;
const F_EXPIRES: u8 = 32;

type TermMap<V> = HashMap<Term, V, std::hash::BuildHasherDefault<TermHasher>>;

/// Term counts of one term in one doc, per field.
pub type Tf = [u32; 4];

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

/// The numbers of one doc, fixed-size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocMeta {
    /// Size, mtime, hash, settled.
    pub stat: FileStat,
    flags: u8,
    outcome: u8,
    confidence: f64,
    successes: u64,
    failures: u64,
    expires_ns: i64,
    lens: [u32; LEN_SLOTS],
    record_off: u64,
    record_len: u32,
}

impl DocMeta {
    fn new(r: &Record, lens: [u32; LEN_SLOTS]) -> DocMeta {
        let mut m = DocMeta {
            stat: r.stat,
            flags: 0,
            outcome: 0,
            confidence: 0.0,
            successes: 0,
            failures: 0,
            expires_ns: 0,
            lens,
            record_off: 0,
            record_len: 0,
        };
        if let Some(l) = &r.lesson {
            let flag = |b: bool, f: u8| if b { f } else { 0 };
            m.flags = F_LESSON
                | flag(!l.tag_keys().is_empty(), F_TAGS)
                | flag(!l.targets.is_empty(), F_TARGETS)
                | flag(!l.supersedes.is_empty(), F_SUPERSEDES)
                | flag(l.expires_ns.is_some(), F_EXPIRES);
            m.outcome = match l.outcome {
                Outcome::Success => 0,
                Outcome::Failure => 1,
                Outcome::Mixed => 2,
            };
            m.confidence = l.confidence;
            m.successes = l.successes;
            m.failures = l.failures;
            m.expires_ns = l.expires_ns.unwrap_or(0);
        }
        m
    }

    /// Whether the file is a lesson.
    pub fn is_lesson(&self) -> bool {
        self.flags & F_LESSON != 0
    }

    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    fn outcome(&self) -> Outcome {
        match self.outcome {
            0 => Outcome::Success,
            1 => Outcome::Failure,
            _ => Outcome::Mixed,
        }
    }

    fn expires(&self) -> Option<i64> {
        self.has(F_EXPIRES).then_some(self.expires_ns)
    }

    fn encode(&self, w: &mut Writer) {
        let flags = (self.flags & !F_SETTLED) | if self.stat.settled { F_SETTLED } else { 0 };
        w.u64(self.stat.size);
        w.i64(self.stat.mtime_ns);
        w.i64(self.stat.ctime_ns);
        w.u64(self.stat.ino);
        w.u64(self.stat.hash);
        w.u8(flags);
        w.u8(self.outcome);
        w.buf.extend_from_slice(&[0, 0]);
        w.u32(self.record_len);
        w.f64(self.confidence);
        w.u64(self.successes);
        w.u64(self.failures);
        w.i64(self.expires_ns);
        for l in self.lens {
            w.u32(l);
        }
        w.u64(self.record_off);
    }

    fn decode(r: &mut Reader) -> Result<DocMeta, Corrupt> {
        let size = r.u64()?;
        let mtime_ns = r.i64()?;
        let ctime_ns = r.i64()?;
        let ino = r.u64()?;
        let hash = r.u64()?;
        let flags = r.u8()?;
        let outcome = r.u8()?;
        r.take(2)?;
        let record_len = r.u32()?;
        let confidence = r.f64()?;
        let successes = r.u64()?;
        let failures = r.u64()?;
        let expires_ns = r.i64()?;
        let mut lens = [0u32; LEN_SLOTS];
        for l in &mut lens {
            *l = r.u32()?;
        }
        let record_off = r.u64()?;
        Ok(DocMeta {
            stat: FileStat {
                size,
                mtime_ns,
                ctime_ns,
                ino,
                hash,
                settled: flags & F_SETTLED != 0,
            },
            flags,
            outcome,
            confidence,
            successes,
            failures,
            expires_ns,
            lens,
            record_off,
            record_len,
        })
    }
}

/// A record's doc table entry and its terms with their counts per field.
fn analyse(r: &Record) -> (DocMeta, Vec<(Term, Tf)>) {
    let Some(l) = &r.lesson else {
        return (DocMeta::new(r, [0; LEN_SLOTS]), Vec::new());
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
    (DocMeta::new(r, lens), counts.into_iter().collect())
}

/// Append one posting: the doc id delta and the counts.
fn encode_posting(w: &mut Writer, delta: u32, tf: &Tf) {
    w.varint(u64::from(delta));
    let mut code = 0u8;
    for (f, &n) in tf.iter().enumerate() {
        code |= (n.min(3) as u8) << (f * 2);
    }
    w.u8(code);
    for &n in tf {
        if n >= 3 {
            w.varint(u64::from(n - 3));
        }
    }
}

/// Decode `count` postings, calling `f(doc id, counts)` on each.
#[inline]
fn decode_postings(bytes: &[u8], count: usize, mut f: impl FnMut(u32, &Tf)) -> Result<(), Corrupt> {
    let mut pos = 0usize;
    let mut id: u64 = 0;
    for i in 0..count {
        let delta = varint_at(bytes, &mut pos)?;
        id = if i == 0 { delta } else { id + delta };
        if id > u64::from(u32::MAX) {
            return Err(Corrupt("doc id out of range"));
        }
        let code = *bytes.get(pos).ok_or(Corrupt("truncated"))?;
        pos += 1;
        let mut tf = [0u32; 4];
        for (k, n) in tf.iter_mut().enumerate() {
            let v = u32::from((code >> (k * 2)) & 3);
            *n = if v == 3 {
                let extra = varint_at(bytes, &mut pos)?;
                u32::try_from(extra + 3).map_err(|_| Corrupt("count out of range"))?
            } else {
                v
            };
        }
        f(id as u32, &tf);
    }
    Ok(())
}

/// A LEB128 varint at `*pos`, advancing it.
#[inline]
fn varint_at(bytes: &[u8], pos: &mut usize) -> Result<u64, Corrupt> {
    let first = *bytes.get(*pos).ok_or(Corrupt("truncated"))?;
    *pos += 1;
    if first < 0x80 {
        return Ok(u64::from(first));
    }
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let b = *bytes.get(*pos).ok_or(Corrupt("truncated"))?;
        *pos += 1;
        if shift > 63 || (shift == 63 && b > 1) {
            return Err(Corrupt("varint overflow"));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// A posting list being written.
#[derive(Default)]
struct ListBuilder {
    last: u32,
    count: u32,
    w: Writer,
}

impl ListBuilder {
    fn push(&mut self, id: u32, tf: &Tf) {
        let delta = if self.count == 0 { id } else { id - self.last };
        encode_posting(&mut self.w, delta, tf);
        self.last = id;
        self.count += 1;
    }
}

/// What a new segment holds besides its docs.
#[derive(Debug, Clone, Default)]
pub struct Patch {
    /// Base doc ids this delta deletes.
    pub deleted: Vec<u32>,
    /// New stats for base docs whose file was touched, not changed.
    pub restat: Vec<(u32, FileStat)>,
}

/// Write a segment: header, patch, docs (with record bytes) and sorted term lists.
fn write_segment(
    kind: Kind,
    header: Header,
    patch: &Patch,
    metas: &[DocMeta],
    records: &[u8],
    terms: &[(Term, ListBuilder)],
) -> Vec<u8> {
    let mut deleted = patch.deleted.clone();
    deleted.sort_unstable();
    deleted.dedup();
    let mut restat = patch.restat.clone();
    restat.sort_unstable_by_key(|(id, _)| *id);
    restat.dedup_by_key(|(id, _)| *id);

    let mut w = Writer::default();
    w.buf.resize(HEADER, 0);
    let deleted_off = w.len();
    for &id in &deleted {
        w.u32(id);
    }
    let restat_off = w.len();
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
    let docs_off = w.len();
    for m in metas {
        m.encode(&mut w);
    }
    let dict_off = w.len();
    let mut posting_off = 0u64;
    for (t, list) in terms {
        w.u64(*t);
        w.u64(posting_off);
        w.u32(list.count);
        w.u32(list.w.len() as u32);
        w.u64(codec::checksum(&list.w.buf));
        posting_off += list.w.len() as u64;
    }
    let records_off = w.len();
    w.buf.extend_from_slice(records);
    let postings_off = w.len();
    for (_, list) in terms {
        w.buf.extend_from_slice(&list.w.buf);
    }
    let end = w.len();

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
    for n in [metas.len(), terms.len(), deleted.len(), restat.len()] {
        h.u32(n as u32);
    }
    for off in [
        deleted_off,
        restat_off,
        docs_off,
        dict_off,
        records_off,
        postings_off,
        end,
    ] {
        h.u64(off as u64);
    }
    w.buf[..h.len()].copy_from_slice(&h.buf);
    let sum = head_checksum(&w.buf[..postings_off]);
    w.patch_u64(HEADER - 8, sum);
    w.buf
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
    lists: TermMap<ListBuilder>,
    metas: Vec<DocMeta>,
    records: Writer,
    last_path: Option<String>,
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
            .last_path
            .as_deref()
            .is_none_or(|p| path_order(p, &r.path).is_lt())));
        // analysed in parallel, appended in order: deterministic output
        let analysed: Vec<(DocMeta, Vec<(Term, Tf)>)> = chunk.par_iter().map(analyse).collect();
        for ((mut meta, terms), r) in analysed.into_iter().zip(chunk) {
            let id = self.metas.len() as u32;
            let start = self.records.len();
            record::encode_strings(r, &mut self.records);
            meta.record_off = start as u64;
            meta.record_len = (self.records.len() - start) as u32;
            self.metas.push(meta);
            for (t, tf) in terms {
                self.lists.entry(t).or_default().push(id, &tf);
            }
        }
        if let Some(r) = chunk.last() {
            self.last_path = Some(r.path.clone());
        }
    }

    /// The segment's bytes.
    pub fn finish(self, kind: Kind, header: Header, patch: &Patch) -> Vec<u8> {
        let mut terms: Vec<(Term, ListBuilder)> = self.lists.into_iter().collect();
        terms.sort_unstable_by_key(|(t, _)| *t);
        write_segment(kind, header, patch, &self.metas, &self.records.buf, &terms)
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
/// without parsing or tokenising anything: doc tables, records and posting lists are copied.
pub fn merge(
    kind: Kind,
    header: Header,
    parts: &[Part],
    patch: &Patch,
) -> Result<Vec<u8>, Corrupt> {
    // the live docs of every part, in path order
    let mut live: Vec<(usize, u32, &str)> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        for id in 0..part.segment.doc_count {
            if !part.dead.get(id).copied().unwrap_or(false) {
                let path = record::decode_path(part.segment.record(id)?)?;
                live.push((p, id as u32, path));
            }
        }
    }
    live.sort_by(|a, b| path_order(a.2, b.2));
    let mut remap: Vec<Vec<Option<u32>>> = parts
        .iter()
        .map(|p| vec![None; p.segment.doc_count])
        .collect();
    let mut metas = Vec::with_capacity(live.len());
    let mut rec = Writer::default();
    for (new_id, &(p, id, _)) in live.iter().enumerate() {
        remap[p][id as usize] = Some(new_id as u32);
        let seg = parts[p].segment;
        let mut m = seg.meta(id as usize)?;
        if let Some(stat) = parts[p].restat.get(&id) {
            m.stat = *stat;
        }
        let bytes = seg.record(id as usize)?;
        m.record_off = rec.len() as u64;
        m.record_len = bytes.len() as u32;
        rec.buf.extend_from_slice(bytes);
        metas.push(m);
    }
    // every term of every part, ascending; each list's entries remapped and merged by new id
    let mut all_terms: Vec<Term> = Vec::new();
    for part in parts {
        for i in 0..part.segment.term_count {
            all_terms.push(part.segment.dict_term(i));
        }
    }
    all_terms.sort_unstable();
    all_terms.dedup();
    let mut terms: Vec<(Term, ListBuilder)> = Vec::with_capacity(all_terms.len());
    let mut entries: Vec<(u32, Tf)> = Vec::new();
    let mut buf = Vec::new();
    for t in all_terms {
        entries.clear();
        for (p, part) in parts.iter().enumerate() {
            if let Some((count, bytes)) = part.segment.postings(t, &mut buf)? {
                let map = &remap[p];
                let mut bad = false;
                decode_postings(bytes, count, |id, tf| match map.get(id as usize) {
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
            continue;
        }
        entries.sort_unstable_by_key(|(id, _)| *id);
        let mut list = ListBuilder::default();
        for (id, tf) in &entries {
            list.push(*id, tf);
        }
        terms.push((t, list));
    }
    Ok(write_segment(kind, header, patch, &metas, &rec.buf, &terms))
}

/// The checksum of a segment's head (everything before the postings), but the checksum slot
/// (the header's last 8 bytes). Each posting list has its own checksum in the dictionary.
fn head_checksum(head: &[u8]) -> u64 {
    codec::checksum(&head[..HEADER - 8]) ^ codec::checksum(&head[HEADER..]).rotate_left(1)
}

/// Where a segment's bytes are.
#[derive(Debug)]
enum Storage {
    /// All of it in memory (built in this process, or read whole).
    Memory(Vec<u8>),
    /// The head in memory; posting lists read from the file when a request needs them.
    File { head: Vec<u8>, file: std::fs::File },
}

/// A checked segment: header, patch, doc table, dictionary and records in memory, posting lists
/// in memory or in its file.
#[derive(Debug)]
pub struct Segment {
    storage: Storage,
    /// Base or delta.
    pub kind: Kind,
    /// Its identity.
    pub header: Header,
    doc_count: usize,
    term_count: usize,
    deleted: Range<usize>,
    restat: Range<usize>,
    docs: Range<usize>,
    dict: Range<usize>,
    records: Range<usize>,
    postings: Range<usize>,
}

/// The section table of a segment's head.
struct Layout {
    kind: Kind,
    header: Header,
    counts: [usize; 4],
    offsets: [usize; 7],
}

impl Layout {
    /// Read and check the first [`HEADER`] bytes.
    fn read(header: &[u8]) -> Result<Layout, Corrupt> {
        if header.len() < HEADER || &header[..8] != MAGIC {
            return Err(Corrupt("not an index file"));
        }
        let mut r = Reader::new(&header[8..HEADER]);
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
        let mut counts = [0usize; 4];
        for c in &mut counts {
            *c = r.u32()? as usize;
        }
        let mut offsets = [0usize; 7];
        for o in &mut offsets {
            *o = usize::try_from(r.u64()?).map_err(|_| Corrupt("offset"))?;
        }
        let [doc_count, term_count, n_deleted, n_restat] = counts;
        let [deleted, restat, docs, dict, records, postings, end] = offsets;
        let ordered = HEADER <= deleted
            && deleted <= restat
            && restat <= docs
            && docs <= dict
            && dict <= records
            && records <= postings
            && postings <= end;
        let sized = |range: usize, n: usize, each: usize| {
            n.checked_mul(each).is_some_and(|size| size == range)
        };
        if !ordered
            || !sized(restat - deleted, n_deleted, 4)
            || !sized(docs - restat, n_restat, RESTAT_ENTRY)
            || !sized(dict - docs, doc_count, DOC_META_SIZE)
            || !sized(records - dict, term_count, DICT_ENTRY)
        {
            return Err(Corrupt("section table"));
        }
        Ok(Layout {
            kind,
            header,
            counts,
            offsets,
        })
    }

    fn postings_start(&self) -> usize {
        self.offsets[5]
    }

    fn end(&self) -> usize {
        self.offsets[6]
    }

    /// Check the head's checksum and make the segment.
    fn segment(self, storage: Storage) -> Result<Segment, Corrupt> {
        let head = match &storage {
            Storage::Memory(bytes) => &bytes[..self.postings_start()],
            Storage::File { head, .. } => head.as_slice(),
        };
        let mut stored = [0u8; 8];
        stored.copy_from_slice(&head[HEADER - 8..HEADER]);
        if u64::from_le_bytes(stored) != head_checksum(head) {
            return Err(Corrupt("checksum mismatch"));
        }
        let [doc_count, term_count, _, _] = self.counts;
        let [deleted, restat, docs, dict, records, postings, end] = self.offsets;
        Ok(Segment {
            storage,
            kind: self.kind,
            header: self.header,
            doc_count,
            term_count,
            deleted: deleted..restat,
            restat: restat..docs,
            docs: docs..dict,
            dict: dict..records,
            records: records..postings,
            postings: postings..end,
        })
    }
}

impl Segment {
    /// Check and take a whole segment file's bytes.
    pub fn parse(bytes: Vec<u8>) -> Result<Segment, Corrupt> {
        let layout = Layout::read(&bytes)?;
        if layout.end() != bytes.len() {
            return Err(Corrupt("truncated"));
        }
        layout.segment(Storage::Memory(bytes))
    }

    /// Open a segment file: its head is read and checked now, its posting lists when needed
    /// (each against its own checksum). `Ok(Err(_))` when the file is damaged.
    pub fn open(path: &Path) -> std::io::Result<Result<Segment, Corrupt>> {
        #[cfg(unix)]
        {
            use std::io::Read;
            let mut file = std::fs::File::open(path)?;
            let len = file.metadata()?.len();
            let mut header = vec![0u8; HEADER];
            if file.read_exact(&mut header).is_err() {
                return Ok(Err(Corrupt("truncated")));
            }
            let layout = match Layout::read(&header) {
                Ok(l) => l,
                Err(e) => return Ok(Err(e)),
            };
            if layout.end() as u64 != len {
                return Ok(Err(Corrupt("truncated")));
            }
            let mut head = header;
            head.resize(layout.postings_start(), 0);
            if file.read_exact(&mut head[HEADER..]).is_err() {
                return Ok(Err(Corrupt("truncated")));
            }
            Ok(layout.segment(Storage::File { head, file }))
        }
        #[cfg(not(unix))]
        {
            Ok(Segment::parse(std::fs::read(path)?))
        }
    }

    /// An empty base.
    pub fn empty(header: Header) -> Segment {
        Segment::parse(encode(Kind::Base, header, Vec::new(), &Patch::default()))
            .expect("an empty segment decodes")
    }

    /// The whole file's bytes, when they are in memory (a segment built in this process).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.storage {
            Storage::Memory(bytes) => Some(bytes),
            Storage::File { .. } => None,
        }
    }

    fn head(&self) -> &[u8] {
        match &self.storage {
            Storage::Memory(bytes) => &bytes[..self.postings.start],
            Storage::File { head, .. } => head,
        }
    }

    /// Docs in the segment.
    pub fn doc_count(&self) -> usize {
        self.doc_count
    }

    fn meta(&self, id: usize) -> Result<DocMeta, Corrupt> {
        let start = self.docs.start + id * DOC_META_SIZE;
        let m = DocMeta::decode(&mut Reader::new(&self.head()[start..start + DOC_META_SIZE]))?;
        if m.record_off + u64::from(m.record_len) > self.records.len() as u64 {
            return Err(Corrupt("record out of range"));
        }
        Ok(m)
    }

    fn record(&self, id: usize) -> Result<&[u8], Corrupt> {
        self.record_at(&self.meta(id)?)
    }

    /// The record bytes a doc table entry points to.
    fn record_at(&self, m: &DocMeta) -> Result<&[u8], Corrupt> {
        let start = self.records.start + m.record_off as usize;
        let end = start + m.record_len as usize;
        if end > self.records.end {
            return Err(Corrupt("record out of range"));
        }
        Ok(&self.head()[start..end])
    }

    /// Base doc ids this delta deletes.
    pub fn deleted(&self) -> Result<Vec<u32>, Corrupt> {
        let mut r = Reader::new(&self.head()[self.deleted.clone()]);
        (0..self.deleted.len() / 4).map(|_| r.u32()).collect()
    }

    /// New stats of base docs.
    pub fn restat(&self) -> Result<Vec<(u32, FileStat)>, Corrupt> {
        let mut r = Reader::new(&self.head()[self.restat.clone()]);
        (0..self.restat.len() / RESTAT_ENTRY)
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

    fn dict_term(&self, i: usize) -> Term {
        let at = self.dict.start + i * DICT_ENTRY;
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.head()[at..at + 8]);
        u64::from_le_bytes(a)
    }

    /// How many docs of this segment hold `term` (dead ones included), from the dictionary.
    fn doc_count_of(&self, term: Term) -> Result<usize, Corrupt> {
        match self.find(term) {
            Some(i) => {
                let at = self.dict.start + i * DICT_ENTRY + 16;
                Ok(Reader::new(&self.head()[at..at + 4]).u32()? as usize)
            }
            None => Ok(0),
        }
    }

    /// The dictionary position of `term`.
    fn find(&self, term: Term) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.term_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.dict_term(mid).cmp(&term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The posting list of `term`: its doc count and bytes (in `buf` when read from the file).
    fn postings<'a>(
        &'a self,
        term: Term,
        buf: &'a mut Vec<u8>,
    ) -> Result<Option<(usize, &'a [u8])>, Corrupt> {
        let Some(i) = self.find(term) else {
            return Ok(None);
        };
        let at = self.dict.start + i * DICT_ENTRY + 8;
        let mut r = Reader::new(&self.head()[at..at + DICT_ENTRY - 8]);
        let off = r.u64()? as usize;
        let count = r.u32()? as usize;
        let len = r.u32()? as usize;
        let sum = r.u64()?;
        let end = off
            .checked_add(len)
            .filter(|&e| e <= self.postings.len())
            .ok_or(Corrupt("postings out of range"))?;
        let bytes: &[u8] = match &self.storage {
            Storage::Memory(bytes) => &bytes[self.postings.start + off..self.postings.start + end],
            Storage::File { file, .. } => {
                buf.resize(len, 0);
                read_at(file, buf, (self.postings.start + off) as u64)?;
                buf
            }
        };
        if codec::checksum(bytes) != sum {
            return Err(Corrupt("posting list checksum mismatch"));
        }
        Ok(Some((count, bytes)))
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> Result<(), Corrupt> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
        .map_err(|_| Corrupt("cannot read a posting list"))
}

#[cfg(not(unix))]
fn read_at(_: &std::fs::File, _: &mut [u8], _: u64) -> Result<(), Corrupt> {
    Err(Corrupt("posting lists are read whole on this platform"))
}

/// A set of targets and, once needed, their compiled globs.
#[derive(Debug)]
struct TargetSet {
    targets: Vec<TargetGlobs>,
    compiled: OnceLock<Vec<[Option<Option<GlobMatcher>>; 3]>>,
}

impl TargetSet {
    /// The index of the first target whose globs all match the caller, if any.
    fn matching(&self, caller: [Option<&str>; 3]) -> Option<usize> {
        let compiled = self.compiled.get_or_init(|| {
            self.targets
                .iter()
                .map(|t| {
                    [&t.operator, &t.role, &t.skill].map(|g| {
                        g.as_ref()
                            .map(|g| globset::Glob::new(g).ok().map(|g| g.compile_matcher()))
                    })
                })
                .collect()
        });
        compiled.iter().position(|globs| {
            globs.iter().zip(caller).all(|(glob, value)| match glob {
                None => true,
                // an invalid glob never matches (lint reports it)
                Some(None) => false,
                Some(Some(m)) => value.is_some_and(|v| m.is_match(v)),
            })
        })
    }
}

/// A base and its delta in memory, with what is derived from them at load.
#[derive(Debug)]
pub struct Index {
    base: Arc<Segment>,
    delta: Option<Arc<Segment>>,
    docs: Vec<DocMeta>,
    base_count: usize,
    deleted: Vec<bool>,
    deleted_count: usize,
    superseded: Vec<bool>,
    doc_tags: Vec<Range<u32>>,
    tag_ids: Vec<u32>,
    tag_keys: Vec<String>,
    target_set: Vec<u32>,
    target_sets: Vec<TargetSet>,
    lessons: u64,
    stats: FieldStats,
    norms: Mutex<Option<(u64, Arc<Norms>)>>,
}

/// Inverse length norms per doc: for word terms, for trigram terms.
type Norms = (Vec<[f32; 4]>, Vec<[f32; 4]>);

/// A live doc, for checking the index against the files.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Doc id in the index (base docs first, then delta docs).
    pub id: u32,
    /// Path relative to the bank root.
    pub path: &'a str,
    /// Stat and hash when indexed (or re-stated).
    pub stat: FileStat,
}

impl Index {
    /// Build an index in memory from records.
    pub fn build(records: Vec<Record>, header: Header) -> Index {
        let bytes = encode(Kind::Base, header, records, &Patch::default());
        let base = Segment::parse(bytes).expect("a fresh segment decodes");
        Index::new(Arc::new(base), None).expect("a fresh index loads")
    }

    /// Load a base and, when it patches this base, a delta.
    pub fn new(base: Arc<Segment>, delta: Option<Arc<Segment>>) -> Result<Index, Corrupt> {
        if base.kind != Kind::Base {
            return Err(Corrupt("not a base"));
        }
        let delta =
            delta.filter(|d| d.kind == Kind::Delta && d.header.index_id == base.header.index_id);
        let base_count = base.doc_count;
        let mut docs: Vec<DocMeta> = (0..base_count)
            .map(|i| base.meta(i))
            .collect::<Result<_, _>>()?;
        let mut deleted = vec![false; base_count];
        if let Some(d) = &delta {
            for id in d.deleted()? {
                *deleted
                    .get_mut(id as usize)
                    .ok_or(Corrupt("deleted doc out of range"))? = true;
            }
            for (id, stat) in d.restat()? {
                docs.get_mut(id as usize)
                    .ok_or(Corrupt("restat doc out of range"))?
                    .stat = stat;
            }
            for i in 0..d.doc_count {
                docs.push(d.meta(i)?);
            }
        }
        let deleted_count = deleted.iter().filter(|&&d| d).count();
        let mut index = Index {
            base,
            delta,
            docs,
            base_count,
            deleted,
            deleted_count,
            superseded: Vec::new(),
            doc_tags: Vec::new(),
            tag_ids: Vec::new(),
            tag_keys: Vec::new(),
            target_set: Vec::new(),
            target_sets: Vec::new(),
            lessons: 0,
            stats: FieldStats::new(&[0; LEN_SLOTS], 0),
            norms: Mutex::new(None),
        };
        index.derive()?;
        Ok(index)
    }

    /// Counts, length statistics, supersession, tags and target sets of the live lessons.
    fn derive(&mut self) -> Result<(), Corrupt> {
        let n = self.docs.len();
        let mut totals = [0u64; LEN_SLOTS];
        let mut lessons = 0u64;
        let mut superseded_slugs: HashSet<String> = HashSet::new();
        let mut tag_lookup: HashMap<String, u32> = HashMap::new();
        let mut doc_tags = vec![0..0; n];
        let mut target_set = vec![0u32; n];
        let mut tag_keys: Vec<String> = Vec::new();
        let mut tag_ids: Vec<u32> = Vec::new();
        let mut target_sets = vec![TargetSet {
            targets: Vec::new(),
            compiled: OnceLock::new(),
        }];
        let mut set_lookup: HashMap<Vec<TargetGlobs>, u32> = HashMap::new();
        for id in 0..n {
            let m = self.docs[id];
            if !self.is_live(id) || !m.is_lesson() {
                continue;
            }
            lessons += 1;
            for (t, l) in totals.iter_mut().zip(m.lens) {
                *t += u64::from(l);
            }
            if !(m.has(F_TAGS) || m.has(F_TARGETS) || m.has(F_SUPERSEDES)) {
                continue;
            }
            let v = LessonView::decode(self.record(id)?)?;
            if m.has(F_SUPERSEDES) {
                for old in v.supersedes()? {
                    if old != v.slug {
                        superseded_slugs.insert(old.to_string());
                    }
                }
            }
            if m.has(F_TAGS) {
                let start = tag_ids.len() as u32;
                for key in &v.tag_keys {
                    let next = tag_keys.len() as u32;
                    let tag = *tag_lookup.entry(key.to_string()).or_insert_with(|| {
                        tag_keys.push(key.to_string());
                        next
                    });
                    tag_ids.push(tag);
                }
                doc_tags[id] = start..tag_ids.len() as u32;
            }
            if m.has(F_TARGETS) {
                let targets = v.targets()?;
                let next = target_sets.len() as u32;
                target_set[id] = *set_lookup.entry(targets.clone()).or_insert_with(|| {
                    target_sets.push(TargetSet {
                        targets,
                        compiled: OnceLock::new(),
                    });
                    next
                });
            }
        }
        let mut superseded = vec![false; n];
        if !superseded_slugs.is_empty() {
            for (id, s) in superseded.iter_mut().enumerate() {
                if self.is_live(id) && self.docs[id].is_lesson() {
                    *s = superseded_slugs.contains(record::decode_slug(self.record(id)?)?);
                }
            }
        }
        self.superseded = superseded;
        self.doc_tags = doc_tags;
        self.tag_ids = tag_ids;
        self.tag_keys = tag_keys;
        self.target_set = target_set;
        self.target_sets = target_sets;
        self.lessons = lessons;
        self.stats = FieldStats::new(&totals, lessons);
        Ok(())
    }

    /// The base.
    pub fn base(&self) -> &Arc<Segment> {
        &self.base
    }

    /// The delta in use, if any.
    pub fn delta(&self) -> Option<&Arc<Segment>> {
        self.delta.as_ref()
    }

    /// Number of docs in the base.
    pub fn base_count(&self) -> usize {
        self.base_count
    }

    /// Number of live lessons.
    pub fn lesson_count(&self) -> u64 {
        self.lessons
    }

    /// Per doc and field, `1 / (1 − b + b · length / average length)` for word terms and for
    /// trigram terms: computed once per index (and `b`), read for every posting.
    fn norms(&self, b: f64) -> Arc<Norms> {
        let mut cache = self.norms.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cached_b, norms)) = cache.as_ref() {
            if *cached_b == b.to_bits() {
                return norms.clone();
            }
        }
        let of = |kind: text::Kind| -> Vec<[f32; 4]> {
            self.docs
                .iter()
                .map(|m| score::inverse_norms(&m.lens, kind, &self.stats, b))
                .collect()
        };
        let norms = Arc::new((of(text::Kind::Word), of(text::Kind::Trigram)));
        *cache = Some((b.to_bits(), norms.clone()));
        norms
    }

    /// Whether a doc id is live (not deleted by the delta).
    pub fn is_live(&self, id: usize) -> bool {
        id >= self.base_count || !self.deleted[id]
    }

    /// The stat of a doc.
    pub fn stat(&self, id: usize) -> FileStat {
        self.docs[id].stat
    }

    /// The record bytes of a doc.
    fn record(&self, id: usize) -> Result<&[u8], Corrupt> {
        let seg = if id < self.base_count {
            &self.base
        } else {
            self.delta.as_ref().ok_or(Corrupt("no delta"))?
        };
        seg.record_at(&self.docs[id])
    }

    /// The live docs (lessons or not), sorted by path.
    pub fn entries(&self) -> Result<Vec<Entry<'_>>, Corrupt> {
        let mut out = Vec::with_capacity(self.docs.len());
        for id in 0..self.docs.len() {
            if self.is_live(id) {
                out.push(Entry {
                    id: id as u32,
                    path: record::decode_path(self.record(id)?)?,
                    stat: self.docs[id].stat,
                });
            }
        }
        if self.docs.len() > self.base_count {
            out.sort_by(|a, b| path_order(a.path, b.path));
        }
        Ok(out)
    }

    /// Every known tag (normal form) that occurs among the request's words, sorted.
    fn tags_in(&self, words: &[String]) -> Vec<String> {
        let present: HashSet<&str> = words.iter().map(String::as_str).collect();
        let mut found: Vec<String> = Vec::new();
        for key in &self.tag_keys {
            let parts: Vec<&str> = key.split(' ').collect();
            if !parts.iter().all(|p| present.contains(p)) {
                continue;
            }
            let occurs = words
                .windows(parts.len())
                .any(|w| w.iter().zip(&parts).all(|(a, b)| a == b));
            if occurs {
                found.push(key.clone());
            }
        }
        found.sort();
        found
    }

    /// The top hits for a request: the gates as a bitset over doc ids, then BM25F accumulated
    /// term by term over the eligible docs, then the top K by score.
    pub fn search(&self, req: &Request, settings: &Settings) -> Result<Search, Corrupt> {
        let k = req.k.unwrap_or(settings.k);
        let now_ns = record::clamp_ns(req.now.as_nanosecond());
        let mut given_tags: Vec<String> = req
            .tags
            .iter()
            .map(|t| text::tag_key(t))
            .filter(|t| !t.is_empty())
            .collect();
        given_tags.sort();
        given_tags.dedup();
        let inferred_tags: Vec<String> = self
            .tags_in(&text::words(&req.text))
            .into_iter()
            .filter(|t| !given_tags.contains(t))
            .collect();
        let request_tags: HashSet<&str> = given_tags
            .iter()
            .chain(&inferred_tags)
            .map(String::as_str)
            .collect();
        let request_tag_ids: HashSet<u32> = self
            .tag_keys
            .iter()
            .enumerate()
            .filter(|(_, k)| request_tags.contains(k.as_str()))
            .map(|(i, _)| i as u32)
            .collect();
        let caller = [
            req.operator.as_deref(),
            req.role.as_deref(),
            req.skill.as_deref(),
        ];
        let mut search = Search {
            hits: Vec::new(),
            given_tags: given_tags.clone(),
            inferred_tags: inferred_tags.clone(),
            lessons: self.lessons,
            eligible: 0,
            postings: 0,
            skipped_terms: 0,
        };

        // gates, as a bitset over doc ids, before any text
        let eligible = self.gates(req, now_ns, caller, &request_tags, &request_tag_ids);
        search.eligible = eligible.iter().filter(|&&e| e).count() as u64;

        // the request's terms: its text and the given tags
        let mut query_text = req.text.clone();
        for t in &req.tags {
            query_text.push('\n');
            query_text.push_str(t);
        }
        let terms = QueryTerms::distinct(&query_text);
        if search.eligible == 0 || k == 0 || terms.is_empty() {
            return Ok(search);
        }

        // BM25F, term at a time: each eligible doc's sum of share × saturation
        let mut acc = vec![0.0f64; self.docs.len()];
        let mut total = 0.0;
        let mut scratch: Vec<(u32, f64)> = Vec::new();
        let mut buf = Vec::new();
        let segments: Vec<(&Segment, usize)> = std::iter::once((&*self.base, 0))
            .chain(self.delta.iter().map(|d| (&**d, self.base_count)))
            .collect();
        let n = self.docs.len();
        let all_norms = self.norms(settings.b);
        for &term in &terms {
            if self.is_stop_term(term, &segments)? {
                search.skipped_terms += 1;
                continue;
            }
            scratch.clear();
            let mut df = 0u64;
            let norms = match text::kind(term) {
                text::Kind::Word => &all_norms.0,
                text::Kind::Trigram => &all_norms.1,
            };
            for &(seg, offset) in &segments {
                let Some((count, bytes)) = seg.postings(term, &mut buf)? else {
                    continue;
                };
                search.postings += count as u64;
                let mut bad = false;
                decode_postings(bytes, count, |id, tf| {
                    let id = id as usize + offset;
                    if id >= n {
                        bad = true;
                    } else if self.is_live(id) {
                        df += 1;
                        if eligible[id] {
                            scratch.push((id as u32, score::saturation(tf, &norms[id], settings)));
                        }
                    }
                })?;
                if bad {
                    return Err(Corrupt("doc id out of range"));
                }
            }
            // a term the bank lacks still counts in the total: a request about something else
            // entirely scores low everywhere instead of matching on its few common trigrams
            let share = score::share(term, df, self.lessons, settings);
            total += share;
            for &(id, s) in &scratch {
                acc[id as usize] += share * s;
            }
        }
        if total <= 0.0 {
            return Ok(search);
        }

        // score = similarity × prior; the top K, ties by slug then path
        let mut candidates: Vec<(f64, f64, usize)> = Vec::new();
        for (id, &a) in acc.iter().enumerate() {
            if a <= 0.0 {
                continue;
            }
            let sim = a / total;
            if sim < settings.min_similarity {
                continue;
            }
            let parts = self.parts(id, sim, now_ns, settings);
            if parts.score > 0.0 {
                candidates.push((parts.score, sim, id));
            }
        }
        if candidates.len() > k {
            candidates.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
            let kth = candidates[k - 1].0;
            // keep every candidate tied with the K-th: the slug decides among them
            candidates.retain(|c| c.0 >= kth);
        }
        let mut ranked: Vec<(f64, f64, usize, &str, &str)> = Vec::with_capacity(candidates.len());
        for (score, sim, id) in candidates {
            let bytes = self.record(id)?;
            let slug = record::decode_slug(bytes)?;
            let path = record::decode_path(bytes)?;
            ranked.push((score, sim, id, slug, path));
        }
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.3.cmp(b.3))
                .then_with(|| path_order(a.4, b.4))
        });
        ranked.truncate(k);

        for (_, sim, id, _, _) in ranked {
            let hit = self.hit(id, sim, now_ns, settings, caller, &request_tags)?;
            search.hits.push(hit);
        }
        super::mark_conflicts(&mut search.hits);
        Ok(search)
    }

    /// Whether nearly every lesson holds `term` (idf below [`score::MIN_IDF`]): such a term
    /// tells lessons apart no more than "the" does, and its posting list is the longest, so it
    /// is left out of the similarity (numerator and total alike). Decided on the exact number
    /// of live lessons holding it, so a patched index decides as a fresh one does; the list is
    /// only read when the delta leaves the count in doubt.
    fn is_stop_term(&self, term: Term, segments: &[(&Segment, usize)]) -> Result<bool, Corrupt> {
        let mut most = 0u64;
        for (seg, _) in segments {
            most += seg.doc_count_of(term)? as u64;
        }
        if most == 0 {
            return Ok(false);
        }
        let deleted = self.deleted_count as u64;
        let least = most.saturating_sub(deleted);
        if score::idf(self.lessons, least) < score::MIN_IDF {
            return Ok(true);
        }
        if deleted == 0 || score::idf(self.lessons, most) >= score::MIN_IDF {
            return Ok(false);
        }
        let mut df = 0u64;
        let mut buf = Vec::new();
        for &(seg, offset) in segments {
            if let Some((count, bytes)) = seg.postings(term, &mut buf)? {
                decode_postings(bytes, count, |id, _| {
                    if self.is_live(id as usize + offset) {
                        df += 1;
                    }
                })?;
            }
        }
        Ok(score::idf(self.lessons, df) < score::MIN_IDF)
    }

    /// Which docs pass status, targets and tags.
    fn gates(
        &self,
        req: &Request,
        now_ns: i64,
        caller: [Option<&str>; 3],
        request_tags: &HashSet<&str>,
        request_tag_ids: &HashSet<u32>,
    ) -> Vec<bool> {
        let anonymous = caller.iter().all(Option::is_none);
        let any_request_tag = !request_tags.is_empty();
        let mut set_verdict: Vec<Option<bool>> = vec![None; self.target_sets.len()];
        let mut eligible = vec![false; self.docs.len()];
        for (id, e) in eligible.iter_mut().enumerate() {
            let m = &self.docs[id];
            if !self.is_live(id) || !m.is_lesson() || self.superseded[id] {
                continue;
            }
            if !req.include_expired && m.expires().is_some_and(|at| at <= now_ns) {
                continue;
            }
            let set = self.target_set[id] as usize;
            if set != 0 {
                if anonymous {
                    continue;
                }
                let ok = *set_verdict[set]
                    .get_or_insert_with(|| self.target_sets[set].matching(caller).is_some());
                if !ok {
                    continue;
                }
            }
            // a request with tags, none of them the lesson's (or even the bank's): out
            if any_request_tag && m.has(F_TAGS) {
                let r = &self.doc_tags[id];
                let tags = &self.tag_ids[r.start as usize..r.end as usize];
                if !tags.iter().any(|t| request_tag_ids.contains(t)) {
                    continue;
                }
            }
            *e = true;
        }
        eligible
    }

    fn hit(
        &self,
        id: usize,
        sim: f64,
        now_ns: i64,
        settings: &Settings,
        caller: [Option<&str>; 3],
        request_tags: &HashSet<&str>,
    ) -> Result<Hit, Corrupt> {
        let m = &self.docs[id];
        let v = LessonView::decode(self.record(id)?)?;
        let set = self.target_set[id] as usize;
        let targets = if set == 0 {
            TargetGate::Anyone
        } else {
            let ts = &self.target_sets[set];
            let i = ts.matching(caller).ok_or(Corrupt("target gate"))?;
            TargetGate::Matched(ts.targets[i].clone())
        };
        let tags = if request_tags.is_empty() {
            TagGate::RequestUntagged
        } else if v.tag_keys.is_empty() {
            TagGate::LessonUntagged
        } else {
            TagGate::Shared(
                v.tag_keys
                    .iter()
                    .filter(|k| request_tags.contains(*k))
                    .map(|k| k.to_string())
                    .collect(),
            )
        };
        let expired = m.expires().is_some_and(|at| at <= now_ns);
        Ok(Hit {
            slug: v.slug.to_string(),
            path: v.path.to_string(),
            title: v.title.to_string(),
            description: v.description.to_string(),
            gist: v.gist.to_string(),
            outcome: m.outcome(),
            confidence: m.confidence,
            success_count: m.successes,
            failure_count: m.failures,
            tags: v.tags.iter().map(|t| t.to_string()).collect(),
            tag_keys: v.tag_keys.iter().map(|t| t.to_string()).collect(),
            score: self.parts(id, sim, now_ns, settings),
            gates: Gates {
                status: if expired { "expired" } else { "active" },
                targets,
                tags,
            },
            caution: m.failures > m.successes,
            conflicts_with: Vec::new(),
        })
    }

    fn parts(&self, id: usize, similarity: f64, now_ns: i64, s: &Settings) -> ScoreParts {
        let m = &self.docs[id];
        let confidence = score::confidence(m.confidence);
        let count_factor = score::count_factor(m.successes, m.failures);
        let recency = score::recency(m.stat.mtime_ns, now_ns, s.half_life_days);
        ScoreParts {
            similarity,
            confidence,
            count_factor,
            recency,
            score: similarity * confidence * count_factor * recency,
        }
    }
}

/// What a search found, and how much work it took.
#[derive(Debug, Clone)]
pub struct Search {
    /// Best first, at most K.
    pub hits: Vec<Hit>,
    /// The request's tags (`--tag`), in normal form.
    pub given_tags: Vec<String>,
    /// Known tags found among the request's words.
    pub inferred_tags: Vec<String>,
    /// Lessons in the bank.
    pub lessons: u64,
    /// Lessons that passed the gates.
    pub eligible: u64,
    /// Postings read.
    pub postings: u64,
    /// Request terms left out because nearly every lesson holds them.
    pub skipped_terms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_round_trip_with_counts() {
        let mut w = Writer::default();
        let entries: [(u32, Tf); 4] = [
            (0, [1, 0, 0, 2]),
            (5, [0, 3, 0, 0]),
            (6, [0, 0, 1, 900]),
            (70_000, [2, 2, 2, 2]),
        ];
        let mut last = 0;
        for (i, (id, tf)) in entries.iter().enumerate() {
            encode_posting(&mut w, if i == 0 { *id } else { id - last }, tf);
            last = *id;
        }
        let mut out = Vec::new();
        decode_postings(&w.buf, entries.len(), |id, tf| out.push((id, *tf))).unwrap();
        assert_eq!(out, entries);
        assert!(decode_postings(&w.buf[..w.len() - 1], entries.len(), |_, _| {}).is_err());
    }
}
