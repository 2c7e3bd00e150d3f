//! Segments: the on-disk (and in-memory) form of the index.
//!
//! A **segment** is one byte format for both the immutable **base** and the small **delta**
//! that patches it (new and changed files, the base docs they replace, and new stats for base
//! docs whose file was touched but not changed). An index is a base plus at most one delta; a
//! delta grows until [`super::store::merge_threshold`], then the two are merged into a new base
//! by copying doc tables, records and posting lists: nothing is parsed or tokenised again. An
//! in-memory build goes through the same bytes, so a fresh index and a persisted, patched one
//! answer a request identically.
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

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use rayon::prelude::*;

use crate::lesson::Outcome;

use super::codec::{self, Corrupt, Reader, Writer};
use super::record::{self, FileStat, Record};
use super::score::{self, TermHasher, LEN_SLOTS};
use super::text::{self, Term};
use super::walk::path_order;

/// The on-disk format version; a file of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"LESSONIX";
const HEADER: usize = 128;
const DOC_META_SIZE: usize = 120;
const DICT_ENTRY: usize = 32;
const RESTAT_ENTRY: usize = 48;

pub(crate) const F_LESSON: u8 = 1;
pub(crate) const F_SETTLED: u8 = 2;
pub(crate) const F_TAGS: u8 = 4;
pub(crate) const F_TARGETS: u8 = 8;
pub(crate) const F_SUPERSEDES: u8 = 16;
pub(crate) const F_EXPIRES: u8 = 32;

pub(crate) type TermMap<V> = HashMap<Term, V, std::hash::BuildHasherDefault<TermHasher>>;

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
    /// Confidence (the default filled in).
    pub confidence: f64,
    /// `success_count`.
    pub successes: u64,
    /// `failure_count`.
    pub failures: u64,
    expires_ns: i64,
    /// Field lengths, per [`score::slot`].
    pub lens: [u32; LEN_SLOTS],
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

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The outcome.
    pub fn outcome(&self) -> Outcome {
        match self.outcome {
            0 => Outcome::Success,
            1 => Outcome::Failure,
            _ => Outcome::Mixed,
        }
    }

    /// `expires_at`, nanoseconds since the epoch.
    pub fn expires(&self) -> Option<i64> {
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
pub(crate) fn decode_postings(
    bytes: &[u8],
    count: usize,
    mut f: impl FnMut(u32, &Tf),
) -> Result<(), Corrupt> {
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

    /// The kind, identity and stored checksum of the segment file at `path`, from its first
    /// [`HEADER`] bytes alone (nothing else is read or checked): enough to tell whether the
    /// file is still the segment a process wrote.
    pub fn peek(path: &Path) -> Option<(Kind, Header, u64)> {
        use std::io::Read;
        let mut head = [0u8; HEADER];
        std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
        let layout = Layout::read(&head).ok()?;
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&head[HEADER - 8..]);
        Some((layout.kind, layout.header, u64::from_le_bytes(sum)))
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

    /// The checksum stored in the header (of the head, which holds each posting list's
    /// checksum): with the header, what tells two segments apart.
    pub fn checksum(&self) -> u64 {
        let mut sum = [0u8; 8];
        sum.copy_from_slice(&self.head()[HEADER - 8..HEADER]);
        u64::from_le_bytes(sum)
    }

    /// Docs in the segment.
    pub fn doc_count(&self) -> usize {
        self.doc_count
    }

    pub(crate) fn meta(&self, id: usize) -> Result<DocMeta, Corrupt> {
        let start = self.docs.start + id * DOC_META_SIZE;
        let m = DocMeta::decode(&mut Reader::new(&self.head()[start..start + DOC_META_SIZE]))?;
        if m.record_off + u64::from(m.record_len) > self.records.len() as u64 {
            return Err(Corrupt("record out of range"));
        }
        Ok(m)
    }

    pub(crate) fn record(&self, id: usize) -> Result<&[u8], Corrupt> {
        self.record_at(&self.meta(id)?)
    }

    /// The record bytes a doc table entry points to.
    pub(crate) fn record_at(&self, m: &DocMeta) -> Result<&[u8], Corrupt> {
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
    pub(crate) fn doc_count_of(&self, term: Term) -> Result<usize, Corrupt> {
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
    pub(crate) fn postings<'a>(
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
