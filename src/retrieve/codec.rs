//! Bytes in and out: little-endian integers, LEB128 varints, length-prefixed strings, and a
//! checksum. Every read is bounds-checked and fails with [`Corrupt`] instead of panicking, so a
//! damaged index file is rebuilt, never fatal.

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

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// A byte.
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

    /// Overwrite 8 bytes at `at` with `v` (for offsets known only later).
    pub fn patch_u64(&mut self, at: usize, v: u64) {
        self.buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
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

    /// An f64.
    pub fn f64(&mut self) -> Result<f64, Corrupt> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// An unsigned LEB128 varint.
    pub fn varint(&mut self) -> Result<u64, Corrupt> {
        let mut v: u64 = 0;
        let mut shift = 0;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(Corrupt("varint overflow"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(Corrupt("varint overflow"));
            }
        }
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

/// Append the doc ids of a sorted list as deltas (the first from 0) in varints.
pub fn encode_postings(ids: &[u32], out: &mut Vec<u8>) {
    let mut w = Writer {
        buf: std::mem::take(out),
    };
    let mut prev = 0u32;
    for (i, &id) in ids.iter().enumerate() {
        let delta = if i == 0 { id } else { id - prev };
        w.varint(u64::from(delta));
        prev = id;
    }
    *out = w.buf;
}

/// Decode `count` doc ids written by [`encode_postings`], calling `f` on each.
pub fn decode_postings(bytes: &[u8], count: usize, mut f: impl FnMut(u32)) -> Result<(), Corrupt> {
    let mut r = Reader::new(bytes);
    let mut id: u64 = 0;
    for i in 0..count {
        let delta = r.varint()?;
        id = if i == 0 { delta } else { id + delta };
        if id > u64::from(u32::MAX) {
            return Err(Corrupt("doc id out of range"));
        }
        f(id as u32);
    }
    Ok(())
}

/// A fast 64-bit checksum of `bytes` (four lanes of multiply-rotate over 8-byte words).
/// It detects truncation and damage; it is not a cryptographic hash.
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: [u64; 4] = [
        0x9E37_79B9_7F4A_7C15,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0x27D4_EB2F_1656_67C5,
    ];
    let mut lanes = K;
    let mut chunks = bytes.chunks_exact(32);
    for chunk in &mut chunks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&chunk[i * 8..i * 8 + 8]);
            let v = u64::from_le_bytes(w);
            *lane = (*lane ^ v).wrapping_mul(K[i]).rotate_left(31);
        }
    }
    let mut h = lanes[0] ^ lanes[1].rotate_left(17) ^ lanes[2].rotate_left(29) ^ lanes[3];
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K[0]).rotate_left(23);
    }
    h ^= bytes.len() as u64;
    h = (h ^ (h >> 33)).wrapping_mul(K[1]);
    h ^ (h >> 29)
}

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

    #[test]
    fn postings_round_trip() {
        let ids = [3u32, 4, 200, 70_000, u32::MAX];
        let mut buf = Vec::new();
        encode_postings(&ids, &mut buf);
        let mut out = Vec::new();
        decode_postings(&buf, ids.len(), |id| out.push(id)).unwrap();
        assert_eq!(out, ids);
        assert!(decode_postings(&buf[..buf.len() - 1], ids.len(), |_| {}).is_err());
    }

    #[test]
    fn checksum_sees_every_byte_and_the_length() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let base = checksum(&data);
        for i in [0, 31, 32, 500, 999] {
            let mut d = data.clone();
            d[i] ^= 1;
            assert_ne!(checksum(&d), base, "byte {i}");
        }
        assert_ne!(checksum(&data[..999]), base);
        assert_ne!(checksum(&[]), checksum(&[0]));
    }
}
