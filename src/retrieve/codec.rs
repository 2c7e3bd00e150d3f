//! Bytes in and out: little-endian integers, LEB128 varints, length-prefixed strings, posting
//! lists (bit-packed blocks) and a checksum. Every read is bounds-checked and fails with
//! [`Corrupt`] instead of panicking, so a damaged index file is rebuilt, never fatal.

/// The bytes do not decode: the index file is damaged or from another program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the index file is damaged ({0})")]
pub struct Corrupt(pub &'static str);

/// An append-only byte buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl Writer {
    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// A byte.
    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// A little-endian u32.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A little-endian u64.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A little-endian i64.
    pub fn i64(&mut self, v: i64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// An f64, as its bits.
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    /// An unsigned LEB128 varint.
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A varint length, then the bytes.
    pub fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }
}

/// A cursor over bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Read `bytes` from the start.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    /// Whether every byte was read.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        let end = self.pos.checked_add(n).ok_or(Corrupt("length overflow"))?;
        let out = self.bytes.get(self.pos..end).ok_or(Corrupt("truncated"))?;
        self.pos = end;
        Ok(out)
    }

    /// A byte.
    pub fn u8(&mut self) -> Result<u8, Corrupt> {
        Ok(self.take(1)?[0])
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32, Corrupt> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> Result<u64, Corrupt> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A little-endian i64.
    pub fn i64(&mut self) -> Result<i64, Corrupt> {
        Ok(self.u64()? as i64)
    }

    /// An unsigned LEB128 varint.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, Corrupt> {
        varint_at(self.bytes, &mut self.pos)
    }

    /// A varint that must fit a `usize` no larger than what is left to read.
    pub fn len(&mut self) -> Result<usize, Corrupt> {
        let n = self.varint()?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(Corrupt("length past the end"));
        }
        Ok(n as usize)
    }

    /// A length-prefixed UTF-8 string.
    pub fn str(&mut self) -> Result<&'a str, Corrupt> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| Corrupt("invalid UTF-8"))
    }
}

// --- posting lists ----------------------------------------------------------------------------
//
// A posting list is a term's docs in ascending id order, each with the term's count in every
// field (title, description, tags, body), in blocks of [`BLOCK`] postings (the last one
// shorter). A block:
//
// ```text
// varint    the first id (after the previous block's last id + 1; the first block: from 0)
// ids       (blocks of two postings or more) a mode byte, then either
//             w ≤ 32: the other ids as gaps − 1, bit-packed w bits each, or
//             0xFF:   varint span (last id − first id), then a bitmap of span bits: bit k set
//                     when first id + 1 + k is in the block (dense lists cost a bit a doc)
// body      a width byte, then every posting's body count, bit-packed
// others    0 when no posting of the block occurs in the title, description or tags; else 1,
//           the three widths (a byte each), a bitmap of the postings that do (a bit each),
//           then their title counts, description counts and tags counts, each bit-packed
// ```
//
// Bit-packed values are little-endian, least significant bit first, each array starting on a
// byte. Most postings of a bank's common terms are in the body only, and dense: their ids cost
// a bit or two, their counts two or three.
//
// A term's list of more than one block starts with its skip table (a varint byte length, then
// an entry per block), so that a search can jump over blocks and knows, before decoding one,
// how high the block can score:
//
// ```text
// varint    the block's last id (after the previous block's last id; the first block: from 0)
// varint    the block's byte length
// u8        which fields (bit f: title, description, tags, body) any posting of the block has
// per such field: varint the largest count, then varint length and varint count of the posting
//           whose length per count is the smallest (the field's length for the term's kind)
// ```
//
// From these a search bounds `tf · norm` for any `b` and average length ([`FieldBound::bound`]).
// A tag's list of docs has no skip table.

/// Postings per block.
pub const BLOCK: usize = 128;

/// A term's counts in one doc, per field: title, description, tags, body.
pub type Tf = [u32; 4];

/// The body's slot in a [`Tf`].
pub const BODY: usize = 3;

/// The bits needed for `v`.
fn width(v: u32) -> u8 {
    (32 - v.leading_zeros()) as u8
}

/// Append `values`, `w` bits each, starting on a byte.
fn pack(out: &mut Vec<u8>, values: impl Iterator<Item = u32>, w: u8) {
    if w == 0 {
        return;
    }
    // at most 31 bits wait in `acc` between values, so a value (32 bits at most) fits beside
    // them; four bytes are written at a time, little-endian, as a byte at a time would
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for v in values {
        acc |= u64::from(v) << bits;
        bits += u32::from(w);
        if bits >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
        }
    }
    let tail = bits.div_ceil(8) as usize;
    out.extend_from_slice(&acc.to_le_bytes()[..tail]);
}

/// [`pack`] of a slice: eight values at a time, which fill `w` bytes exactly (a 64-bit word
/// for widths up to 8, a 128-bit one up to 16), then the rest as [`pack`] writes them.
fn pack_slice(out: &mut Vec<u8>, values: &[u32], w: u8) {
    if w == 0 {
        return;
    }
    let wb = usize::from(w);
    let mut groups = values.chunks_exact(8);
    if w <= 8 {
        for group in groups.by_ref() {
            let mut word: u64 = 0;
            for (j, &v) in group.iter().enumerate() {
                word |= u64::from(v) << (j * wb);
            }
            out.extend_from_slice(&word.to_le_bytes()[..wb]);
        }
    } else if w <= 16 {
        for group in groups.by_ref() {
            let mut word: u128 = 0;
            for (j, &v) in group.iter().enumerate() {
                word |= u128::from(v) << (j * wb);
            }
            out.extend_from_slice(&word.to_le_bytes()[..wb]);
        }
    } else {
        for group in groups.by_ref() {
            pack(out, group.iter().copied(), w);
        }
    }
    pack(out, groups.remainder().iter().copied(), w);
}

/// Read `out.len()` values of `w` bits at `*pos`, advancing it.
#[inline]
fn unpack(bytes: &[u8], pos: &mut usize, w: u8, out: &mut [u32]) -> Result<(), Corrupt> {
    if w > 32 {
        return Err(Corrupt("bit width"));
    }
    let len = (out.len() * usize::from(w)).div_ceil(8);
    let end = pos.checked_add(len).ok_or(Corrupt("truncated"))?;
    let src = bytes.get(*pos..end).ok_or(Corrupt("truncated"))?;
    // what follows the values, for whole-word loads
    let rest = &bytes[*pos..];
    *pos = end;
    if w == 0 {
        out.fill(0);
        return Ok(());
    }
    let mask = (1u64 << w) - 1;
    let mut done = 0;
    if w <= 8 {
        // eight values fill `w` bytes: one load, eight shifts
        let wb = usize::from(w);
        for (g, chunk) in out.chunks_exact_mut(8).enumerate() {
            let at = g * wb;
            let mut a = [0u8; 8];
            match rest.get(at..at + 8) {
                Some(word) => a.copy_from_slice(word),
                None => a[..wb].copy_from_slice(&src[at..at + wb]),
            }
            let word = u64::from_le_bytes(a);
            for (j, o) in chunk.iter_mut().enumerate() {
                *o = ((word >> (j * wb)) & mask) as u32;
            }
            done += 8;
        }
    }
    let w = u32::from(w);
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    let mut next = src[done * w as usize / 8..].iter();
    for o in out[done..].iter_mut() {
        while bits < w {
            // `len` bytes hold every value: the iterator never runs dry
            acc |= u64::from(*next.next().unwrap_or(&0)) << bits;
            bits += 8;
        }
        *o = (acc & mask) as u32;
        acc >>= w;
        bits -= w;
    }
    Ok(())
}

fn byte_at(bytes: &[u8], pos: &mut usize) -> Result<u8, Corrupt> {
    let b = *bytes.get(*pos).ok_or(Corrupt("truncated"))?;
    *pos += 1;
    Ok(b)
}

/// A LEB128 varint at `*pos`, advancing it.
#[inline]
pub fn varint_at(bytes: &[u8], pos: &mut usize) -> Result<u64, Corrupt> {
    let first = byte_at(bytes, pos)?;
    if first < 0x80 {
        return Ok(u64::from(first));
    }
    let mut v = u64::from(first & 0x7f);
    let mut shift = 7;
    loop {
        let b = byte_at(bytes, pos)?;
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

/// What bounds a term's `tf · norm` in one field over the postings of a block: the largest
/// count, and the (length, count) of the posting with the smallest length per count.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FieldBound {
    /// The largest count (0: no posting of the block has the term in this field).
    pub max_tf: u32,
    /// The length of the posting with the smallest length per count.
    pub len: u32,
    /// Its count.
    pub tf: u32,
}

impl FieldBound {
    fn add(&mut self, tf: u32, len: u32) {
        if tf == 0 {
            return;
        }
        self.max_tf = self.max_tf.max(tf);
        if self.tf == 0 || u64::from(len) * u64::from(self.tf) < u64::from(self.len) * u64::from(tf)
        {
            self.len = len;
            self.tf = tf;
        }
    }

    /// An upper bound of `tf / (1 − b + b · len / avg)` over the postings the bound was made
    /// from (`b` in `[0, 1]`, `avg > 0`; infinite when nothing bounds it), in real arithmetic:
    /// the denominator over `tf` is `(1 − b) / tf + (b / avg) · len / tf`, which is at least
    /// `(1 − b) / max tf + (b / avg) · min(len / tf)`.
    pub fn bound(&self, b: f64, avg: f64) -> f64 {
        if self.max_tf == 0 {
            return 0.0;
        }
        let d =
            (1.0 - b) / f64::from(self.max_tf) + b / avg * f64::from(self.len) / f64::from(self.tf);
        if d > 0.0 {
            1.0 / d
        } else {
            f64::INFINITY
        }
    }
}

/// A block's entry in a term list's skip table.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skip {
    /// The block's last doc id.
    pub last: u32,
    /// Where the block ends, in the list's block bytes.
    pub end: usize,
    /// Per field (title, description, tags, body), what bounds the block's counts.
    pub fields: [FieldBound; 4],
}

/// A posting list being written: postings arrive in ascending id order and are encoded a
/// block at a time.
#[derive(Debug, Default, Clone)]
pub struct ListWriter {
    bytes: Vec<u8>,
    /// The current block's postings (one buffer: a posting added touches one line).
    staged: Vec<(u32, Tf)>,
    last: Option<u32>,
    count: u32,
    /// A term's list: the skip table, and the current block's bounds.
    scored: bool,
    skips: Vec<u8>,
    bounds: [FieldBound; 4],
}

impl ListWriter {
    /// Add a posting of a term's list, with the doc's field lengths for the term's kind (what
    /// the skip table's bounds are made of).
    #[inline]
    pub fn push_scored(&mut self, id: u32, tf: &Tf, lens: &[u32; 4]) {
        self.scored = true;
        // (most postings have counts in the body alone)
        if tf[0] | tf[1] | tf[2] != 0 {
            for f in 0..BODY {
                self.bounds[f].add(tf[f], lens[f]);
            }
        }
        self.bounds[BODY].add(tf[BODY], lens[BODY]);
        self.push(id, tf);
    }

    /// Add a posting (`id` above every id before).
    #[inline]
    pub fn push(&mut self, id: u32, tf: &Tf) {
        debug_assert!(self
            .staged
            .last()
            .map(|p| &p.0)
            .or(self.last.as_ref())
            .is_none_or(|&l| l < id));
        self.staged.push((id, *tf));
        self.count += 1;
        if self.staged.len() == BLOCK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.staged.is_empty() {
            return;
        }
        let start = self.bytes.len();
        encode_block(&mut self.bytes, self.last, &self.staged);
        let last = self.staged[self.staged.len() - 1].0;
        if self.scored {
            let mut w = Writer {
                buf: std::mem::take(&mut self.skips),
            };
            w.varint(u64::from(last - self.last.map_or(0, |l| l + 1)));
            w.varint((self.bytes.len() - start) as u64);
            let mask = (0..4).fold(0u8, |m, f| m | (u8::from(self.bounds[f].max_tf > 0) << f));
            w.u8(mask);
            for b in self.bounds.iter().filter(|b| b.max_tf > 0) {
                w.varint(u64::from(b.max_tf));
                w.varint(u64::from(b.len));
                w.varint(u64::from(b.tf));
            }
            self.skips = w.buf;
            self.bounds = Default::default();
        }
        self.last = Some(last);
        self.staged.clear();
    }

    /// The count and bytes of the list (a term's list of more than one block: its skip
    /// table first).
    pub fn finish(mut self) -> (u32, Vec<u8>) {
        self.flush();
        if !self.scored || self.count as usize <= BLOCK {
            return (self.count, self.bytes);
        }
        let mut w = Writer::default();
        w.buf.reserve(self.skips.len() + self.bytes.len() + 5);
        w.varint(self.skips.len() as u64);
        w.buf.extend_from_slice(&self.skips);
        w.buf.extend_from_slice(&self.bytes);
        (self.count, w.buf)
    }
}

/// A block's bytes (`postings`: 1 to [`BLOCK`], after `prev`, the list's id before them).
///
/// Each value is read once: the gaps, the body counts and the postings with other counts
/// are gathered in one pass each, and a width is that of the values' OR (whose highest bit
/// is the largest value's), where the encoder used to walk the postings again for every
/// maximum and every packing (`encode_block_by_passes`, kept as the tests' oracle).
fn encode_block(out: &mut Vec<u8>, prev: Option<u32>, postings: &[(u32, Tf)]) {
    // (a posting's place in its block is a byte)
    const _: () = assert!(BLOCK <= 256);
    let n = postings.len();
    debug_assert!((1..=BLOCK).contains(&n));
    let first = postings[0].0;
    let gap = match prev {
        None => first,
        Some(p) => first - p - 1,
    };
    let mut w = Writer {
        buf: std::mem::take(out),
    };
    w.varint(u64::from(gap));
    if n > 1 {
        let mut gaps = [0u32; BLOCK];
        let mut or = 0;
        for (g, p) in gaps.iter_mut().zip(postings.windows(2)) {
            *g = p[1].0 - p[0].0 - 1;
            or |= *g;
        }
        let wid = width(or);
        let packed = ((n - 1) * usize::from(wid)).div_ceil(8);
        let span = postings[n - 1].0 - first;
        let bitmap = (span as usize).div_ceil(8);
        if bitmap < packed {
            w.u8(0xFF);
            w.varint(u64::from(span));
            let start = w.len();
            w.buf.resize(start + bitmap, 0);
            let map = &mut w.buf[start..];
            for &(id, _) in &postings[1..] {
                let k = (id - first - 1) as usize;
                map[k / 8] |= 1 << (k % 8);
            }
        } else {
            w.u8(wid);
            pack_slice(&mut w.buf, &gaps[..n - 1], wid);
        }
    }
    // the body counts, and the postings with counts in other fields than the body
    let mut body = [0u32; BLOCK];
    let mut at = [0u8; BLOCK];
    let (mut body_or, mut others_or, mut m) = (0, [0u32; BODY], 0);
    for (i, (b, (_, t))) in body.iter_mut().zip(postings).enumerate() {
        *b = t[BODY];
        body_or |= t[BODY];
        for f in 0..BODY {
            others_or[f] |= t[f];
        }
        // (written whatever it is, kept only when it has other counts: no branch on it)
        at[m] = i as u8;
        m += usize::from(t[0] | t[1] | t[2] != 0);
    }
    let wb = width(body_or);
    w.u8(wb);
    pack_slice(&mut w.buf, &body[..n], wb);
    let others = &at[..m];
    if others.is_empty() {
        w.u8(0);
    } else {
        w.u8(1);
        // (a posting without other counts adds 0 to each OR)
        let widths = others_or.map(width);
        w.buf.extend_from_slice(&widths);
        let start = w.len();
        w.buf.resize(start + n.div_ceil(8), 0);
        for &i in others {
            w.buf[start + usize::from(i) / 8] |= 1 << (i % 8);
        }
        for (f, &wf) in widths.iter().enumerate() {
            pack(
                &mut w.buf,
                others.iter().map(|&i| postings[usize::from(i)].1[f]),
                wf,
            );
        }
    }
    *out = w.buf;
}

/// One decoded block of a posting list.
#[derive(Debug, Clone)]
pub struct Block {
    /// Postings in the block.
    pub len: usize,
    /// Doc ids, ascending: the first `len` (the rest is the decoder's scratch).
    pub ids: [u32; BLOCK + 8],
    /// Body counts.
    pub body: [u32; BLOCK],
    /// How many postings occur in the title, description or tags.
    pub others: usize,
    /// Which postings those are (their index in the block), ascending.
    pub which: [u8; BLOCK],
    /// Their title, description and tags counts, field-major.
    pub other_tf: [[u32; BLOCK]; BODY],
    /// Where the block's counts start in its list's bytes.
    pub counts_at: usize,
}

impl Default for Block {
    fn default() -> Block {
        Block {
            len: 0,
            ids: [0; BLOCK + 8],
            body: [0; BLOCK],
            others: 0,
            which: [0; BLOCK],
            other_tf: [[0; BLOCK]; BODY],
            counts_at: 0,
        }
    }
}

fn decode_block(
    bytes: &[u8],
    pos: &mut usize,
    prev: Option<u32>,
    n: usize,
    b: &mut Block,
) -> Result<(), Corrupt> {
    decode_ids(bytes, pos, prev, n, b)?;
    decode_counts(bytes, pos, n, b)
}

/// For each byte, the places of its set bits, lowest first (then zeros), and last how many
/// there are.
const BIT_PLACES: [[u8; 9]; 256] = {
    let mut table = [[0u8; 9]; 256];
    let mut byte = 0;
    while byte < 256 {
        let (mut bit, mut k) = (0, 0);
        while bit < 8 {
            if byte >> bit & 1 != 0 {
                table[byte][k] = bit as u8;
                k += 1;
            }
            bit += 1;
        }
        table[byte][8] = k as u8;
        byte += 1;
    }
    table
};

/// A block's doc ids (`b.len` and `b.ids`), `*pos` left at its counts.
fn decode_ids(
    bytes: &[u8],
    pos: &mut usize,
    prev: Option<u32>,
    n: usize,
    b: &mut Block,
) -> Result<(), Corrupt> {
    let gap = varint_at(bytes, pos)?;
    let first = match prev {
        None => gap,
        Some(p) => u64::from(p) + 1 + gap,
    };
    let first = u32::try_from(first).map_err(|_| Corrupt("doc id out of range"))?;
    b.len = n;
    b.ids[0] = first;
    if n > 1 {
        let mode = byte_at(bytes, pos)?;
        if mode == 0xFF {
            let span = varint_at(bytes, pos)?;
            if span > u64::from(u32::MAX - first) {
                return Err(Corrupt("doc id out of range"));
            }
            let len = (span as usize).div_ceil(8);
            let end = pos.checked_add(len).ok_or(Corrupt("truncated"))?;
            let map = bytes.get(*pos..end).ok_or(Corrupt("truncated"))?;
            *pos = end;
            // every set bit is an id after the first: n - 1 of them, counted before any is
            // written
            let mut words = map.chunks_exact(8);
            let mut ones = words
                .by_ref()
                .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")).count_ones())
                .sum::<u32>();
            ones += words
                .remainder()
                .iter()
                .map(|b| b.count_ones())
                .sum::<u32>();
            if ones as usize != n - 1 {
                return Err(Corrupt("bitmap block"));
            }
            // a byte at a time: eight ids written from its bits' places whatever its bits, the
            // next byte's written after its own ones (the ids' spare slots take the rest)
            let mut k = 1;
            for (i, &byte) in map.iter().enumerate() {
                let at = first
                    .wrapping_add(1)
                    .wrapping_add((i as u32).wrapping_mul(8));
                let places = &BIT_PLACES[usize::from(byte)];
                for (slot, &place) in b.ids[k..k + 8].iter_mut().zip(&places[..8]) {
                    *slot = at.wrapping_add(u32::from(place));
                }
                k += usize::from(places[8]);
            }
            if u64::from(b.ids[n - 1].wrapping_sub(first)) != span {
                return Err(Corrupt("bitmap block"));
            }
        } else {
            unpack(bytes, pos, mode, &mut b.ids[1..n])?;
            let mut id = u64::from(first);
            for slot in &mut b.ids[1..n] {
                id += u64::from(*slot) + 1;
                *slot = id as u32;
            }
            if id > u64::from(u32::MAX) {
                return Err(Corrupt("doc id out of range"));
            }
        }
    }
    Ok(())
}

/// A block's counts (`b.body`, `b.others`, `b.which`, `b.other_tf`) at `*pos`, for its `n`
/// postings.
fn decode_counts(bytes: &[u8], pos: &mut usize, n: usize, b: &mut Block) -> Result<(), Corrupt> {
    let wb = byte_at(bytes, pos)?;
    unpack(bytes, pos, wb, &mut b.body[..n])?;
    match byte_at(bytes, pos)? {
        0 => b.others = 0,
        1 => {
            let widths = [
                byte_at(bytes, pos)?,
                byte_at(bytes, pos)?,
                byte_at(bytes, pos)?,
            ];
            let len = n.div_ceil(8);
            let end = pos.checked_add(len).ok_or(Corrupt("truncated"))?;
            let map = bytes.get(*pos..end).ok_or(Corrupt("truncated"))?;
            *pos = end;
            if !n.is_multiple_of(8) && map[len - 1] >> (n % 8) != 0 {
                return Err(Corrupt("field bitmap"));
            }
            // each place written, and kept if its bit is set: no branch on the bits (a loop
            // over each byte's set bits mispredicted its exit at almost every byte). A place
            // is written at `m`, the count of the bits before it, at most the place itself.
            let mut m = 0;
            for (i, &byte) in map.iter().enumerate() {
                for k in 0..8 {
                    b.which[m] = (i * 8 + k) as u8;
                    m += usize::from(byte >> k & 1);
                }
            }
            if m == 0 {
                return Err(Corrupt("field bitmap"));
            }
            b.others = m;
            for (f, &wf) in widths.iter().enumerate() {
                unpack(bytes, pos, wf, &mut b.other_tf[f][..m])?;
            }
        }
        _ => return Err(Corrupt("field mode")),
    }
    Ok(())
}

/// The `i`-th of the `w`-bit values packed at `at`, as [`unpack`] lays them out (least
/// significant bits first, one after another), read in place.
fn packed_at(bytes: &[u8], at: usize, w: u8, i: usize) -> Result<u32, Corrupt> {
    if w > 32 {
        return Err(Corrupt("bit width"));
    }
    if w == 0 {
        return Ok(0);
    }
    let bit = i * usize::from(w);
    let start = at.checked_add(bit / 8).ok_or(Corrupt("truncated"))?;
    let len = (bit % 8 + usize::from(w)).div_ceil(8);
    let src = bytes.get(start..start + len).ok_or(Corrupt("truncated"))?;
    let mut word = [0u8; 8];
    word[..len].copy_from_slice(src);
    let v = u64::from_le_bytes(word) >> (bit % 8);
    Ok((v & ((1u64 << w) - 1)) as u32)
}

/// Posting `i`'s counts in a block of `n` postings whose counts start at `pos`, read in
/// place: its body count and, when it has any, its title, description and tags counts.
fn counts_at(
    bytes: &[u8],
    mut pos: usize,
    n: usize,
    i: usize,
) -> Result<(u32, Option<[u32; BODY]>), Corrupt> {
    let wb = byte_at(bytes, &mut pos)?;
    let body = packed_at(bytes, pos, wb, i)?;
    pos += (n * usize::from(wb)).div_ceil(8);
    match byte_at(bytes, &mut pos)? {
        0 => Ok((body, None)),
        1 => {
            let widths = [
                byte_at(bytes, &mut pos)?,
                byte_at(bytes, &mut pos)?,
                byte_at(bytes, &mut pos)?,
            ];
            let len = n.div_ceil(8);
            let map = bytes.get(pos..pos + len).ok_or(Corrupt("truncated"))?;
            pos += len;
            if i >= n || len > 16 {
                return Err(Corrupt("posting out of range"));
            }
            // the bitmap as one number (a block has at most 128 postings): its bits counted
            // at once, not a byte at a time
            let mut word = [0u8; 16];
            word[..len].copy_from_slice(map);
            let bits = u128::from_le_bytes(word);
            let m = bits.count_ones() as usize;
            if m == 0 {
                return Err(Corrupt("field bitmap"));
            }
            if bits >> i & 1 == 0 {
                return Ok((body, None));
            }
            // its place among the postings with such counts
            let j = (bits & ((1u128 << i) - 1)).count_ones() as usize;
            let mut tf = [0u32; BODY];
            for (f, &wf) in widths.iter().enumerate() {
                tf[f] = packed_at(bytes, pos, wf, j)?;
                pos += (m * usize::from(wf)).div_ceil(8);
            }
            Ok((body, Some(tf)))
        }
        _ => Err(Corrupt("field mode")),
    }
}

/// A term's posting list: its skip table (lists of more than one block) and its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermList<'a> {
    /// Postings in the list.
    pub count: usize,
    skips: &'a [u8],
    /// The blocks' bytes.
    pub blocks: &'a [u8],
}

impl<'a> TermList<'a> {
    /// The list of `count` postings in `bytes`.
    pub fn parse(count: usize, bytes: &'a [u8]) -> Result<TermList<'a>, Corrupt> {
        if count <= BLOCK {
            return Ok(TermList {
                count,
                skips: &[],
                blocks: bytes,
            });
        }
        let mut r = Reader::new(bytes);
        let n = r.len()?;
        let skips = r.take(n)?;
        Ok(TermList {
            count,
            skips,
            blocks: &bytes[r.pos..],
        })
    }

    /// Blocks in the list.
    pub fn block_count(&self) -> usize {
        self.count.div_ceil(BLOCK)
    }

    /// The skip table, checked: an entry per block, ids and ends ascending, the last end the
    /// end of the blocks. Empty for a list of one block.
    pub fn skips(&self, out: &mut Vec<Skip>) -> Result<(), Corrupt> {
        out.clear();
        if self.skips.is_empty() {
            return Ok(());
        }
        let blocks = self.block_count();
        out.reserve(blocks);
        let mut r = Reader::new(self.skips);
        let mut prev: Option<u32> = None;
        let mut end = 0usize;
        for _ in 0..blocks {
            let gap = r.varint()?;
            let last = prev.map_or(Some(0), |p| p.checked_add(1)).map(u64::from);
            let last = last
                .and_then(|l| l.checked_add(gap))
                .and_then(|l| u32::try_from(l).ok())
                .ok_or(Corrupt("skip table"))?;
            let len = r.varint()? as usize;
            end = end
                .checked_add(len)
                .filter(|&e| e <= self.blocks.len())
                .ok_or(Corrupt("skip table"))?;
            let mask = r.u8()?;
            if mask > 15 {
                return Err(Corrupt("skip table"));
            }
            let mut fields = [FieldBound::default(); 4];
            for (f, b) in fields.iter_mut().enumerate() {
                if mask & (1 << f) != 0 {
                    let mut v = || -> Result<u32, Corrupt> {
                        u32::try_from(r.varint()?).map_err(|_| Corrupt("skip table"))
                    };
                    *b = FieldBound {
                        max_tf: v()?,
                        len: v()?,
                        tf: v()?,
                    };
                    if b.max_tf == 0 || b.tf == 0 || b.tf > b.max_tf {
                        return Err(Corrupt("skip table"));
                    }
                }
            }
            out.push(Skip { last, end, fields });
            prev = Some(last);
        }
        if end != self.blocks.len() || r.pos != self.skips.len() {
            return Err(Corrupt("skip table"));
        }
        Ok(())
    }

    /// Decode block `i` (< [`TermList::block_count`]) on its own, from its skip entry and the
    /// one before; fails unless it ends where the skip table says, on the id it says. (A
    /// search decodes a block's ids and its counts apart; the tests compare with this.)
    #[cfg(test)]
    pub fn block(&self, skips: &[Skip], i: usize, block: &mut Block) -> Result<(), Corrupt> {
        self.block_ids(skips, i, block)?;
        self.block_counts(skips, i, block)
    }

    /// Decode block `i`'s doc ids alone (its counts are read in place with
    /// [`TermList::counts`], or decoded with [`TermList::block_counts`]).
    pub fn block_ids(&self, skips: &[Skip], i: usize, block: &mut Block) -> Result<(), Corrupt> {
        let n = if i + 1 == self.block_count() {
            self.count - i * BLOCK
        } else {
            BLOCK
        };
        let (mut pos, prev) = match i.checked_sub(1) {
            None => (0, None),
            Some(p) => (skips[p].end, Some(skips[p].last)),
        };
        decode_ids(self.blocks, &mut pos, prev, n, block)?;
        block.counts_at = pos;
        let last = skips.get(i).map_or(block.ids[n - 1], |s| s.last);
        if block.ids[n - 1] != last {
            return Err(Corrupt("skip table"));
        }
        Ok(())
    }

    /// Decode the counts of block `i`, whose ids `block` holds ([`TermList::block_ids`]).
    pub fn block_counts(&self, skips: &[Skip], i: usize, block: &mut Block) -> Result<(), Corrupt> {
        let mut pos = block.counts_at;
        decode_counts(self.blocks, &mut pos, block.len, block)?;
        let end = skips.get(i).map_or(self.blocks.len(), |s| s.end);
        if pos != end {
            return Err(Corrupt("skip table"));
        }
        Ok(())
    }

    /// Posting `i`'s counts in `block` (its ids decoded), read in place: its body count and,
    /// when it has any, its title, description and tags counts.
    pub fn counts(&self, block: &Block, i: usize) -> Result<(u32, Option<[u32; BODY]>), Corrupt> {
        counts_at(self.blocks, block.counts_at, block.len, i)
    }

    /// Decode the list a block at a time, calling `f` on each block.
    pub fn for_each_block(&self, block: &mut Block, f: impl FnMut(&Block)) -> Result<(), Corrupt> {
        for_each_block(self.blocks, self.count, block, f)
    }

    /// Decode the list, calling `f(doc id, counts)` on each posting.
    pub fn for_each_posting(&self, f: impl FnMut(u32, &Tf)) -> Result<(), Corrupt> {
        for_each_posting(self.blocks, self.count, f)
    }
}

/// Decode a posting list of `count` postings a block at a time, calling `f` on each block.
/// Fails on anything but exactly `count` well-formed postings filling `bytes`.
pub fn for_each_block(
    bytes: &[u8],
    count: usize,
    block: &mut Block,
    mut f: impl FnMut(&Block),
) -> Result<(), Corrupt> {
    let mut pos = 0;
    let mut left = count;
    let mut prev = None;
    while left > 0 {
        let n = left.min(BLOCK);
        decode_block(bytes, &mut pos, prev, n, block)?;
        prev = Some(block.ids[n - 1]);
        left -= n;
        f(block);
    }
    if pos != bytes.len() {
        return Err(Corrupt("posting list length"));
    }
    Ok(())
}

/// Decode a posting list, calling `f(doc id, counts)` on each posting.
pub fn for_each_posting(
    bytes: &[u8],
    count: usize,
    mut f: impl FnMut(u32, &Tf),
) -> Result<(), Corrupt> {
    let mut block = Box::<Block>::default();
    for_each_block(bytes, count, &mut block, |b| {
        let mut j = 0;
        for i in 0..b.len {
            let mut tf = [0, 0, 0, b.body[i]];
            if j < b.others && usize::from(b.which[j]) == i {
                for (f, t) in tf[..BODY].iter_mut().enumerate() {
                    *t = b.other_tf[f][j];
                }
                j += 1;
            }
            f(b.ids[i], &tf);
        }
    })
}

pub use crate::checksum::checksum;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        let mut w = Writer::default();
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        for v in values {
            w.varint(v);
        }
        w.str("héllo");
        let mut r = Reader::new(&w.buf);
        for v in values {
            assert_eq!(r.varint().unwrap(), v);
        }
        assert_eq!(r.str().unwrap(), "héllo");
        assert!(r.is_empty());
        assert_eq!(r.u8(), Err(Corrupt("truncated")));
    }

    #[test]
    fn damaged_bytes_are_errors_not_panics() {
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        assert!(Reader::new(&[5, b'a']).str().is_err());
        assert!(Reader::new(&[2, 0xff, 0xfe]).str().is_err());
    }

    fn encode(entries: &[(u32, Tf)]) -> (u32, Vec<u8>) {
        let mut w = ListWriter::default();
        for (id, tf) in entries {
            w.push(*id, tf);
        }
        w.finish()
    }

    fn decode(count: u32, bytes: &[u8]) -> Result<Vec<(u32, Tf)>, Corrupt> {
        let mut out = Vec::new();
        for_each_posting(bytes, count as usize, |id, tf| out.push((id, *tf)))?;
        Ok(out)
    }

    #[test]
    fn posting_lists_round_trip_at_the_edges() {
        let dense: Vec<(u32, Tf)> = (10..400).map(|i| (i, [0, 0, 0, 1])).collect();
        let sparse: Vec<(u32, Tf)> = (0..300)
            .map(|i| (i * 9_000 + i % 7, [i % 2, 0, i % 3, 900 * (i % 5)]))
            .collect();
        let lists: [Vec<(u32, Tf)>; 5] = [
            vec![(0, [1, 0, 0, 2])],
            vec![(u32::MAX, [0, 0, 0, 0])],
            vec![
                (5, [0, 3, 0, 0]),
                (6, [0, 0, 1, 900]),
                (u32::MAX, [2, 2, 2, 2]),
            ],
            dense,
            sparse,
        ];
        for list in lists {
            let (count, bytes) = encode(&list);
            assert_eq!(count as usize, list.len());
            assert_eq!(decode(count, &bytes).unwrap(), list);
            assert!(decode(count, &bytes[..bytes.len() - 1]).is_err());
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(decode(count, &longer).is_err());
        }
    }

    #[test]
    fn dense_lists_cost_about_a_bit_a_doc() {
        let list: Vec<(u32, Tf)> = (0..100_000u32)
            .filter(|i| i % 3 != 0)
            .map(|i| (i, [0, 0, 0, 1 + i % 2]))
            .collect();
        let (_, bytes) = encode(&list);
        // a bitmap of ids (1.5 bits a posting) and body counts of 2 bits
        assert!(bytes.len() * 8 < list.len() * 4, "{} bytes", bytes.len());
    }

    /// The block encoder as it was: a pass over the postings for every maximum and every
    /// packing. [`encode_block`] must write its bytes.
    fn encode_block_by_passes(out: &mut Vec<u8>, prev: Option<u32>, postings: &[(u32, Tf)]) {
        let n = postings.len();
        let first = postings[0].0;
        let gap = match prev {
            None => first,
            Some(p) => first - p - 1,
        };
        let mut w = Writer {
            buf: std::mem::take(out),
        };
        w.varint(u64::from(gap));
        if n > 1 {
            let gaps = postings.windows(2).map(|p| p[1].0 - p[0].0 - 1);
            let wid = width(gaps.clone().max().unwrap_or(0));
            let packed = ((n - 1) * usize::from(wid)).div_ceil(8);
            let span = postings[n - 1].0 - first;
            let bitmap = (span as usize).div_ceil(8);
            if bitmap < packed {
                w.u8(0xFF);
                w.varint(u64::from(span));
                let start = w.len();
                w.buf.resize(start + bitmap, 0);
                for &(id, _) in &postings[1..] {
                    let k = (id - first - 1) as usize;
                    w.buf[start + k / 8] |= 1 << (k % 8);
                }
            } else {
                w.u8(wid);
                pack(&mut w.buf, gaps, wid);
            }
        }
        let body = postings.iter().map(|p| p.1[BODY]);
        let wb = width(body.clone().max().unwrap_or(0));
        w.u8(wb);
        pack(&mut w.buf, body, wb);
        // the postings with counts in other fields than the body (a block has at most BLOCK)
        let mut at = [0usize; BLOCK];
        let mut m = 0;
        for (i, (_, t)) in postings.iter().enumerate() {
            if t[..BODY] != [0; BODY] {
                at[m] = i;
                m += 1;
            }
        }
        let others = &at[..m];
        if others.is_empty() {
            w.u8(0);
        } else {
            w.u8(1);
            let widths: [u8; BODY] = std::array::from_fn(|f| {
                width(others.iter().map(|&i| postings[i].1[f]).max().unwrap_or(0))
            });
            w.buf.extend_from_slice(&widths);
            let start = w.len();
            w.buf.resize(start + n.div_ceil(8), 0);
            for &i in others {
                w.buf[start + i / 8] |= 1 << (i % 8);
            }
            for (f, &wf) in widths.iter().enumerate() {
                pack(&mut w.buf, others.iter().map(|&i| postings[i].1[f]), wf);
            }
        }
        *out = w.buf;
    }

    proptest::proptest! {
        /// A block's bytes are those of the encoder that walked the postings once per value
        /// it wrote, whatever the gaps (packed or a bitmap), the counts and their widths.
        #[test]
        fn a_block_is_written_as_the_encoder_by_passes_wrote_it(
            postings in proptest::collection::vec(
                (0u32..6, 0u32..3, 0u32..2, 0u32..3, 0u32..9, 0u8..8),
                1..=BLOCK,
            ),
            prev in proptest::option::of(0u32..1000),
        ) {
            let mut id = prev.map_or(0, |p| p + 1);
            let mut block = Vec::new();
            for (i, (gap, t, d, g, b, wide)) in postings.into_iter().enumerate() {
                // now and then a far gap or a large count (widths past 8 and 16 bits)
                let far = match wide { 0 => 70_000, 1 => 300, _ => 0 };
                id += if i == 0 { gap } else { gap + 1 } + far;
                let big = match wide { 2 => 40_000, 3 => 200, _ => 0 };
                block.push((id, [t * (1 + big), d, g + big, b + big * 7]));
            }
            let (mut got, mut want) = (vec![7u8], vec![7u8]);
            encode_block(&mut got, prev, &block);
            encode_block_by_passes(&mut want, prev, &block);
            proptest::prop_assert_eq!(got, want);
        }

        /// [`pack_slice`] writes the bytes of [`pack`].
        #[test]
        fn packing_a_slice_writes_the_bytes_of_packing_one_by_one(
            w in 0u8..=32,
            values in proptest::collection::vec(proptest::num::u32::ANY, 0..140),
        ) {
            let values: Vec<u32> = values
                .into_iter()
                .map(|v| if w >= 32 { v } else { v & ((1 << w) - 1) })
                .collect();
            let (mut got, mut want) = (vec![1u8], vec![1u8]);
            pack_slice(&mut got, &values, w);
            pack(&mut want, values.iter().copied(), w);
            proptest::prop_assert_eq!(got, want);
        }
    }

    proptest::proptest! {
        /// Values packed four bytes at a time are the bytes of packing them a byte at a time
        /// (the format's definition), whatever the width and the bytes already written.
        #[test]
        fn packing_writes_the_bytes_of_packing_a_byte_at_a_time(
            w in 1u8..=32,
            values in proptest::collection::vec(proptest::num::u32::ANY, 0..140),
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..3),
        ) {
            let values: Vec<u32> = values
                .into_iter()
                .map(|v| if w == 32 { v } else { v & ((1 << w) - 1) })
                .collect();
            let mut want = before.clone();
            let (mut acc, mut bits) = (0u64, 0u32);
            for &v in &values {
                acc |= u64::from(v) << bits;
                bits += u32::from(w);
                while bits >= 8 {
                    want.push(acc as u8);
                    acc >>= 8;
                    bits -= 8;
                }
            }
            if bits > 0 {
                want.push(acc as u8);
            }
            let mut got = before;
            pack(&mut got, values.into_iter(), w);
            proptest::prop_assert_eq!(got, want);
        }

        /// Dense lists (bitmap blocks), at the top of the id range too, round-trip; damaged,
        /// they decode to an error or to other postings, never to a panic.
        #[test]
        fn dense_lists_round_trip_and_damage_never_panics(
            gaps in proptest::collection::vec(0u32..4, 1..600),
            top in proptest::bool::ANY,
            flips in proptest::collection::vec((0usize..2000, 1u8..=255), 0..4),
        ) {
            let mut id = if top { u32::MAX - 4 * gaps.len() as u32 - 1 } else { 0 };
            let mut list = Vec::new();
            for (i, &gap) in gaps.iter().enumerate() {
                id += if i == 0 { gap } else { gap + 1 };
                list.push((id, [0, 0, 0, 1 + gap % 2]));
            }
            let (count, bytes) = encode(&list);
            proptest::prop_assert_eq!(decode(count, &bytes).unwrap(), list);
            let mut damaged = bytes;
            for (at, x) in flips {
                let n = damaged.len();
                damaged[at % n] ^= x;
            }
            let _ = decode(count, &damaged);
        }

        #[test]
        fn posting_lists_round_trip(
            postings in proptest::collection::vec(
                (0u32..70, 0u32..4, 0u32..3, 0u32..2, 0u32..9, proptest::bool::weighted(0.02)),
                1..700,
            )
        ) {
            let mut id = 0u32;
            let mut list = Vec::new();
            for (i, (gap, t, d, g, b, huge)) in postings.into_iter().enumerate() {
                id += if i == 0 { gap } else { gap + 1 } + if huge { 1_000_000 } else { 0 };
                let body = if huge { b * 100_000 } else { b };
                list.push((id, [t, d, g, body]));
            }
            let (count, bytes) = encode(&list);
            proptest::prop_assert_eq!(decode(count, &bytes).unwrap(), list);
        }
    }

    proptest::proptest! {
        /// A lookup reads one posting's counts where they lie, its block's ids decoded alone:
        /// the counts are the full decode's, and damaged bytes are an error, never a panic.
        #[test]
        fn counts_read_in_place_are_the_decoded_ones(
            postings in proptest::collection::vec(
                (0u32..40, 0u32..3, 0u32..2, 0u32..3, 0u32..7, proptest::bool::weighted(0.03)),
                1..700,
            ),
            flips in proptest::collection::vec((0usize..4000, 1u8..=255), 0..4),
        ) {
            let mut w = ListWriter::default();
            let mut id = 0u32;
            for (i, &(gap, t, d, g, body, huge)) in postings.iter().enumerate() {
                id += if i == 0 { gap } else { gap + 1 };
                // wide counts now and then: every bit width, values across byte edges
                let t = if huge { t * 70_001 } else { t };
                let body = if huge { body * 9_000_001 } else { body };
                let tf = [t, d, g, body.max(u32::from(t + d + g == 0))];
                w.push_scored(id, &tf, &[9, 9, 9, 9]);
            }
            let (count, bytes) = w.finish();
            let tl = TermList::parse(count as usize, &bytes).unwrap();
            let mut skips = Vec::new();
            tl.skips(&mut skips).unwrap();
            let (mut full, mut ids) = (Block::default(), Block::default());
            for i in 0..tl.block_count() {
                tl.block(&skips, i, &mut full).unwrap();
                tl.block_ids(&skips, i, &mut ids).unwrap();
                proptest::prop_assert_eq!(&ids.ids[..ids.len], &full.ids[..full.len]);
                for p in 0..full.len {
                    let others = full.which[..full.others]
                        .iter()
                        .position(|&w| usize::from(w) == p)
                        .map(|j| std::array::from_fn(|f| full.other_tf[f][j]));
                    proptest::prop_assert_eq!(tl.counts(&ids, p).unwrap(), (full.body[p], others));
                }
            }
            let mut bad = bytes.clone();
            for &(at, x) in &flips {
                if let Some(b) = bad.get_mut(at) {
                    *b ^= x;
                }
            }
            if let Ok(tl) = TermList::parse(count as usize, &bad) {
                if tl.skips(&mut skips).is_ok() {
                    for i in 0..tl.block_count() {
                        if tl.block_ids(&skips, i, &mut ids).is_ok() {
                            for p in 0..ids.len {
                                let _ = tl.counts(&ids, p);
                            }
                        }
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn skip_tables_find_every_block_and_bound_it(
            postings in proptest::collection::vec(
                (0u32..40, 0u32..3, 0u32..3, 0u32..7, 1u32..400),
                1..900,
            ),
            b in 0.0f64..=1.0,
            avg in 0.5f64..300.0,
        ) {
            let mut w = ListWriter::default();
            let mut list = Vec::new();
            let mut id = 0u32;
            for (i, &(gap, t, g, body, len)) in postings.iter().enumerate() {
                id += if i == 0 { gap } else { gap + 1 };
                let tf = [t, 0, g, body.max(u32::from(t + g == 0))];
                let lens = [len / 4 + t, 3, g, len + body];
                w.push_scored(id, &tf, &lens);
                list.push((id, tf, lens));
            }
            let (count, bytes) = w.finish();
            let tl = TermList::parse(count as usize, &bytes).unwrap();
            proptest::prop_assert_eq!(decode(count, tl.blocks).unwrap(),
                list.iter().map(|&(i, tf, _)| (i, tf)).collect::<Vec<_>>());
            let mut skips = Vec::new();
            tl.skips(&mut skips).unwrap();
            let blocks = list.len().div_ceil(BLOCK);
            proptest::prop_assert_eq!(skips.len(), if blocks > 1 { blocks } else { 0 });
            let mut block = Block::default();
            // every block on its own, backwards, and each posting under its block's bounds
            for i in (0..skips.len()).rev() {
                tl.block(&skips, i, &mut block).unwrap();
                let chunk = &list[i * BLOCK..((i + 1) * BLOCK).min(list.len())];
                proptest::prop_assert_eq!(&block.ids[..block.len],
                    &chunk.iter().map(|p| p.0).collect::<Vec<_>>()[..]);
                for &(_, tf, lens) in chunk {
                    for f in 0..4 {
                        let x = f64::from(tf[f]) / (1.0 - b + b * f64::from(lens[f]) / avg);
                        let bound = skips[i].fields[f].bound(b, avg);
                        proptest::prop_assert!(x <= bound * (1.0 + 1e-12), "{} > {}", x, bound);
                    }
                }
            }
            // a damaged skip table is an error, never a panic
            if !skips.is_empty() {
                for at in 0..8.min(bytes.len()) {
                    let mut bad = bytes.clone();
                    bad[at] ^= 0x41;
                    if let Ok(tl) = TermList::parse(count as usize, &bad) {
                        if tl.skips(&mut skips).is_ok() {
                            for i in 0..skips.len() {
                                let _ = tl.block(&skips, i, &mut block);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn checksum_sees_every_byte_and_the_length() {
        // past a 1 KiB block, a stripe and a word, so that every part of the loop is covered
        let data: Vec<u8> = (0..2500u32).map(|i| (i * 7 + i / 256) as u8).collect();
        let base = checksum(&data);
        for i in 0..data.len() {
            for bit in [0, 7] {
                let mut d = data.clone();
                d[i] ^= 1 << bit;
                assert_ne!(checksum(&d), base, "byte {i} bit {bit}");
            }
        }
        let mut lengths: Vec<u64> = (0..=data.len()).map(|n| checksum(&data[..n])).collect();
        lengths.sort_unstable();
        lengths.dedup();
        assert_eq!(lengths.len(), data.len() + 1, "every length differs");
        assert_ne!(checksum(&[]), checksum(&[0]));
    }
}
