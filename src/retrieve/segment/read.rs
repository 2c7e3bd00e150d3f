//! Reading a segment: its head checked on open, each section when first used.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::*;
use crate::retrieve::codec::{self, Corrupt, Reader};

/// A segment's bytes: built in this process, or a file mapped into memory.
#[derive(Debug)]
pub(super) enum Bytes {
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
    pub(super) sections: [Range<usize>; SECTIONS],
    sums: [u64; SECTIONS],
    checked: [OnceLock<bool>; SECTIONS],
    /// The posting lists found whole, a bit per dictionary entry (unless the section was
    /// checked whole): an index kept open checks each list once, not at every search.
    pub(super) lists_checked: OnceLock<Box<[AtomicU64]>>,
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

/// A segment's targeted docs, read in place: `(doc, target list)` per doc with targets,
/// ascending by doc, and how many distinct lists there are. A new process's search reads them
/// where they lie (a vector of them cost it a twentieth of its time at 100,000 lessons).
#[derive(Debug, Clone, Copy)]
pub struct TargetPairs<'a> {
    pairs: &'a [u8],
    /// Distinct target lists.
    pub sets: u32,
}

impl<'a> TargetPairs<'a> {
    /// Targeted docs.
    pub fn len(&self) -> usize {
        self.pairs.len() / 8
    }

    /// No doc has targets.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The `i`-th pair.
    fn get(&self, i: usize) -> (u32, u32) {
        (u32_at(self.pairs, i * 8), u32_at(self.pairs, i * 8 + 4))
    }

    /// Every pair, in doc order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        self.pairs
            .chunks_exact(8)
            .map(|p| (u32_at(p, 0), u32_at(p, 4)))
    }

    /// Doc `id`'s target list, if it has targets.
    pub fn of(&self, id: u32) -> Option<u32> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (doc, set) = self.get(mid);
            match doc.cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(set),
            }
        }
        None
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

    pub(super) fn from_bytes(bytes: Bytes) -> Result<Segment, Corrupt> {
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
            && Some(size(Sec::Priors)) == priors_size(doc_count)
            && exactly(Sec::Lens, doc_count, 4 * LEN_SLOTS)
            && exactly(Sec::Lessons, doc_count.div_ceil(64), 8)
            && exactly(Sec::Dict, term_count, DICT_ENTRY)
            && each(Sec::Deleted, 4)
            && each(Sec::Restat, RESTAT_ENTRY)
            && exactly(Sec::PathIndex, doc_count, PATH_INDEX_ENTRY)
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
            lists_checked: OnceLock::new(),
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
        self.sec_at(s as usize)
    }

    fn sec_at(&self, i: usize) -> Result<&[u8], Corrupt> {
        let bytes = self.section_bytes(i);
        let ok = *self.checked[i].get_or_init(|| codec::checksum(bytes) == self.sums[i]);
        if ok {
            Ok(bytes)
        } else {
            Err(Corrupt("section checksum mismatch"))
        }
    }

    /// Check every byte now: each section, the posting lists as the one section they make
    /// up. Once it passes, no read checks anything again. A watcher checks so before it
    /// vouches for an index; a process that maps the same file then skips the checks
    /// ([`Segment::trust`]).
    pub fn check_all(&self) -> Result<(), Corrupt> {
        let postings = Sec::Postings as usize;
        for i in (0..SECTIONS).filter(|&i| i != postings) {
            self.sec_at(i)?;
        }
        if !self.postings_checked() {
            // each list against its own checksum in the dictionary (the section has none)
            for i in 0..self.term_count {
                self.list_at(i)?;
            }
            let _ = self.checked[postings].set(true);
        }
        Ok(())
    }

    /// Take every section as checked, without reading it: only for the bytes another process
    /// checked whole ([`Segment::check_all`]) and vouches for by this segment's checksum.
    /// The file is never written in place, so a file with that checksum in its head has the
    /// bytes that process checked. A section already found damaged stays damaged.
    pub fn trust(&self) {
        for c in &self.checked {
            let _ = c.set(true);
        }
    }

    /// Whether the posting lists were checked as one section, so that a list needs no check
    /// of its own.
    fn postings_checked(&self) -> bool {
        self.checked[Sec::Postings as usize].get() == Some(&true)
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

    /// The priors table (each doc's confidence × count factor, its cautions, and each group's
    /// largest prior).
    pub(crate) fn priors(&self) -> Result<PriorTable<'_>, Corrupt> {
        let bytes = self.sec(Sec::Priors)?;
        let groups = self.doc_count.div_ceil(PRIOR_GROUP) * 16;
        let (groups, rest) = bytes.split_at(groups);
        let (prior, cautions) = rest.split_at(self.doc_count * 8);
        Ok(PriorTable {
            groups,
            prior,
            cautions,
        })
    }

    /// Doc `id`'s entry of a rank table.
    pub(crate) fn rank_of(ranks: &[u8], id: usize) -> Rank {
        let at = id * RANK_ENTRY;
        Rank {
            mtime_ns: u64_at(ranks, at) as i64,
            ledger_at_s: {
                let mut b = [0u8; 8];
                b[..6].copy_from_slice(&ranks[at + 34..at + 40]);
                Some(u64::from_le_bytes(b) as i64).filter(|&s| s > 0)
            },
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

    /// Where the lesson bits lie in the file, a section every index reads as it opens (for
    /// tests that damage it).
    #[cfg(test)]
    pub(crate) fn lesson_bits_range(&self) -> Range<usize> {
        self.sections[Sec::Lessons as usize].clone()
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

    /// Merge `keys` (paths' hashes ([`super::path_hash`]), ascending) with the path index,
    /// calling `f(i, doc, stamp)` for each doc whose path has the hash `keys[i]`, with what
    /// the doc's stat said of the file when it was indexed (its size, times, inode and whether
    /// it was settled; no content hash): both are read front to back once.
    pub(crate) fn join_path_hashes(
        &self,
        keys: &[u64],
        mut f: impl FnMut(usize, u32, FileStamp),
    ) -> Result<(), Corrupt> {
        let table = self.sec(Sec::PathIndex)?;
        let n = table.len() / PATH_INDEX_ENTRY;
        let hash = |e: usize| u64_at(table, e * PATH_INDEX_ENTRY);
        let (mut i, mut e) = (0, 0);
        while i < keys.len() && e < n {
            let (key, h) = (keys[i], hash(e));
            if key < h {
                i += 1;
            } else if h < key {
                e += 1;
            } else {
                let end = (e..n).find(|&x| hash(x) != h).unwrap_or(n);
                while i < keys.len() && keys[i] == h {
                    for x in e..end {
                        let at = x * PATH_INDEX_ENTRY;
                        let stamp = FileStamp {
                            size: u64_at(table, at + 16),
                            mtime_ns: u64_at(table, at + 24) as i64,
                            ctime_ns: u64_at(table, at + 32) as i64,
                            ino: u64_at(table, at + 40),
                            settled: u32_at(table, at + 12) & 1 != 0,
                        };
                        f(i, u32_at(table, at + 8), stamp);
                    }
                    i += 1;
                }
                e = end;
            }
        }
        Ok(())
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

    /// Every lesson held back for error-level findings, with their codes.
    pub fn all_held(&self) -> Result<Vec<(u32, Vec<&str>)>, Corrupt> {
        let table = DocStrings::new(self.sec(Sec::Held)?)?;
        (0..table.count)
            .map(|i| Ok((table.doc(i), table.list(i)?)))
            .collect()
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
    pub fn target_pairs(&self) -> Result<TargetPairs<'_>, Corrupt> {
        let mut r = Reader::new(self.sec(Sec::Targets)?);
        let pairs = r.u32()? as usize;
        let pairs = r.take(pairs.checked_mul(8).ok_or(Corrupt("length overflow"))?)?;
        let sets = r.u32()?;
        Ok(TargetPairs { pairs, sets })
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
        let targets: HashMap<u32, u32> = self.target_pairs()?.iter().collect();
        let supersedes: HashMap<u32, Vec<&str>> = self.all_supersedes()?.into_iter().collect();
        let held: HashMap<u32, Vec<&str>> = self.all_held()?.into_iter().collect();
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
                    targets: match targets.get(&key) {
                        Some(&s) => sets
                            .get(s as usize)
                            .cloned()
                            .ok_or(Corrupt("target list out of range"))?,
                        None => Vec::new(),
                    },
                    supersedes: supersedes
                        .get(&key)
                        .map(|s| s.iter().map(|s| s.to_string()).collect())
                        .unwrap_or_default(),
                    errors: held
                        .get(&key)
                        .map(|s| s.iter().map(|s| s.to_string()).collect())
                        .unwrap_or_default(),
                    ledger_at_s: rank.ledger_at_s,
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

    pub(super) fn dict_term(&self, i: usize) -> Result<Term, Corrupt> {
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

    /// The posting list of `term`, checked against its checksum.
    pub(crate) fn postings(&self, term: Term) -> Result<Option<codec::TermList<'_>>, Corrupt> {
        let Some(i) = self.find(term)? else {
            return Ok(None);
        };
        self.list_at(i).map(Some)
    }

    /// The posting list of the dictionary's `i`-th term, checked against its checksum (unless
    /// every list was: [`Segment::check_all`], [`Segment::trust`]).
    fn list_at(&self, i: usize) -> Result<codec::TermList<'_>, Corrupt> {
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
        if !self.postings_checked() && !self.list_whole(i, bytes, sum) {
            return Err(Corrupt("posting list checksum mismatch"));
        }
        codec::TermList::parse(count, bytes)
    }

    /// Whether the dictionary's `i`-th list (`bytes`) matches its checksum `sum`: computed the
    /// first time, remembered once it does (a damaged list is checked again, and fails again).
    fn list_whole(&self, i: usize, bytes: &[u8], sum: u32) -> bool {
        let bits = self.lists_checked.get_or_init(|| {
            (0..self.term_count.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect()
        });
        let (word, bit) = (&bits[i / 64], 1u64 << (i % 64));
        if word.load(Ordering::Relaxed) & bit != 0 {
            return true;
        }
        let whole = codec::checksum(bytes) as u32 == sum;
        if whole {
            word.fetch_or(bit, Ordering::Relaxed);
        }
        whole
    }
}

/// The size of the priors section of `docs` docs.
fn priors_size(docs: usize) -> Option<usize> {
    let groups = docs.div_ceil(PRIOR_GROUP).checked_mul(16)?;
    let words = docs.div_ceil(64).checked_mul(8)?;
    groups.checked_add(docs.checked_mul(8)?)?.checked_add(words)
}

/// A segment's priors ([`Segment::priors`]), read where they lie.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PriorTable<'a> {
    groups: &'a [u8],
    prior: &'a [u8],
    cautions: &'a [u8],
}

impl PriorTable<'_> {
    /// Groups of [`PRIOR_GROUP`] docs.
    pub(crate) fn group_count(&self) -> usize {
        self.groups.len() / 16
    }

    /// The largest prior of group `g`'s plain docs and of its cautions (0 when none).
    pub(crate) fn group(&self, g: usize) -> (f64, f64) {
        (
            f64::from_bits(u64_at(self.groups, g * 16)),
            f64::from_bits(u64_at(self.groups, g * 16 + 8)),
        )
    }

    /// Doc `id`'s confidence × count factor.
    pub(crate) fn prior(&self, id: usize) -> f64 {
        f64::from_bits(u64_at(self.prior, id * 8))
    }

    /// The priors of docs `lo..hi`, 8 little-endian bytes each ([`PriorTable::prior`]'s).
    pub(crate) fn prior_bytes(&self, lo: usize, hi: usize) -> &[u8] {
        &self.prior[lo * 8..hi * 8]
    }

    /// Whether each of docs `64 * w .. 64 * w + 64` is a caution, a bit each (lowest first).
    pub(crate) fn caution_word(&self, w: usize) -> u64 {
        u64_at(self.cautions, w * 8)
    }

    /// Whether doc `id` is a caution (more failures than successes).
    pub(crate) fn caution(&self, id: usize) -> bool {
        self.cautions[id / 8] & (1 << (id % 8)) != 0
    }
}
