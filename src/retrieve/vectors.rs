//! The lessons' embeddings for semantic retrieval (`[retrieve] model`), kept in
//! `.lesson/retrieve.vectors` beside the index: a cache like it, never in the lesson files
//! (AIP-11 keeps embeddings out of the format).
//!
//! - **Keyed by the file's hash** (the index's 64-bit checksum of its bytes, [`FileStat::hash`]):
//!   a lesson is embedded again only when its bytes change, wherever it moves; an edit, a new
//!   file or a rebuild of the index embeds nothing that is already here.
//! - **Quantised** to int8 with a scale per vector (a quarter of f32's size: 384 dimensions
//!   take 392 bytes a lesson with their key); the cosine with a request's f32 vector is the
//!   dot product times the scale.
//! - **Under one model**: the file records the model's [`Embedder::identity`]; vectors of
//!   another model are dropped, never compared.
//! - **Checked**: a checksum over the file; a damaged or truncated file is read as empty
//!   (every lesson is embedded again), never trusted.
//!
//! [`FileStat::hash`]: super::record::FileStat::hash
//! [`Embedder::identity`]: crate::semantic::Embedder::identity

use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use super::codec;

/// The file's first bytes (and its format's version).
const MAGIC: &[u8; 8] = b"LSNVEC01";

/// Embeddings of lesson files under one model, keyed by the hash of each file's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Vectors {
    identity: String,
    dimension: usize,
    slot: HashMap<u64, u32>,
    keys: Vec<u64>,
    scales: Vec<f32>,
    codes: Vec<i8>,
}

impl Vectors {
    /// No vector yet, for the model `identity` with vectors of length `dimension`.
    pub fn new(identity: &str, dimension: usize) -> Vectors {
        Vectors {
            identity: identity.to_string(),
            dimension,
            slot: HashMap::new(),
            keys: Vec::new(),
            scales: Vec::new(),
            codes: Vec::new(),
        }
    }

    /// The vectors in `bytes` (a file [`Vectors::encode`] wrote) if they are this model's
    /// (`identity`, `dimension`) and the file is whole; else none (`None`).
    pub fn decode(bytes: &[u8], identity: &str, dimension: usize) -> Option<Vectors> {
        let (body, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
        if codec::checksum(body) != u64::from_le_bytes(sum.try_into().ok()?) {
            return None;
        }
        let mut at = body.strip_prefix(MAGIC.as_slice())?;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, rest) = at.split_at_checked(n)?;
            at = rest;
            Some(head)
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
        let id_len = u32_at(take(4)?) as usize;
        if take(id_len)? != identity.as_bytes() || u32_at(take(4)?) as usize != dimension {
            return None;
        }
        let count = u64::from_le_bytes(take(8)?.try_into().ok()?) as usize;
        let each = 8 + 4 + dimension;
        if count.checked_mul(each)? != at.len() {
            return None;
        }
        let mut v = Vectors::new(identity, dimension);
        v.keys.reserve(count);
        v.codes.reserve(count * dimension);
        for entry in at.chunks_exact(each) {
            let key = u64::from_le_bytes(entry[..8].try_into().expect("8 bytes"));
            let scale = f32::from_le_bytes(entry[8..12].try_into().expect("4 bytes"));
            if !scale.is_finite() || v.slot.insert(key, v.keys.len() as u32).is_some() {
                return None;
            }
            v.keys.push(key);
            v.scales.push(scale);
            v.codes.extend(entry[12..].iter().map(|&b| b as i8));
        }
        Some(v)
    }

    /// The file's bytes: the same vectors give the same bytes (ordered by key).
    pub fn encode(&self) -> Vec<u8> {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_unstable_by_key(|&i| self.keys[i]);
        let mut out = Vec::with_capacity(32 + self.keys.len() * (12 + self.dimension));
        out.extend_from_slice(MAGIC);
        out.extend((self.identity.len() as u32).to_le_bytes());
        out.extend(self.identity.as_bytes());
        out.extend((self.dimension as u32).to_le_bytes());
        out.extend((self.keys.len() as u64).to_le_bytes());
        for i in order {
            out.extend(self.keys[i].to_le_bytes());
            out.extend(self.scales[i].to_le_bytes());
            out.extend(self.code(i).iter().map(|&c| c as u8));
        }
        let sum = codec::checksum(&out);
        out.extend(sum.to_le_bytes());
        out
    }

    /// The model the vectors are of.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The slot of the file whose bytes hash to `key`, if it has a vector.
    pub fn slot(&self, key: u64) -> Option<u32> {
        self.slot.get(&key).copied()
    }

    /// The length of the vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The int8 codes of the vector in `slot`; its cosines are dot products of codes times
    /// the two scales ([`Vectors::scale`]).
    pub fn codes(&self, slot: u32) -> &[i8] {
        self.code(slot as usize)
    }

    /// The scale of the vector in `slot`.
    pub fn scale(&self, slot: u32) -> f32 {
        self.scales[slot as usize]
    }

    fn code(&self, i: usize) -> &[i8] {
        &self.codes[i * self.dimension..(i + 1) * self.dimension]
    }

    /// Keep the vector of the file whose bytes hash to `key` (quantised; a vector of another
    /// length is not kept). A key held already keeps its vector.
    pub fn insert(&mut self, key: u64, vector: &[f32]) {
        if vector.len() != self.dimension || self.slot.contains_key(&key) {
            return;
        }
        let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / 127.0
        } else {
            0.0
        };
        self.slot.insert(key, self.keys.len() as u32);
        self.keys.push(key);
        self.scales.push(scale);
        self.codes.extend(vector.iter().map(|&x| {
            if scale == 0.0 {
                0
            } else {
                (x / scale).round().clamp(-127.0, 127.0) as i8
            }
        }));
    }

    /// Keep only the vectors whose key `keep` accepts; whether any was dropped.
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) -> bool {
        let before = self.keys.len();
        let mut kept = Vectors::new(&self.identity, self.dimension);
        for i in 0..before {
            if keep(self.keys[i]) {
                kept.slot.insert(self.keys[i], kept.keys.len() as u32);
                kept.keys.push(self.keys[i]);
                kept.scales.push(self.scales[i]);
                kept.codes.extend_from_slice(self.code(i));
            }
        }
        *self = kept;
        self.keys.len() != before
    }

    /// The cosine of the vector in `slot` with the request `request` (a unit vector,
    /// quantised), as near to the f32 cosine as int8 allows: each component of the lesson's
    /// vector is off by half a step at most (its largest component / 254), so the cosine by
    /// √dimension of that at most; the request's 16-bit steps add a thousandth of that.
    ///
    /// An integer dot product: exact whatever the order of its sum, so the compiler runs it in
    /// SIMD registers (a float sum in one running total is a chain of dependent additions),
    /// and the same vector and request give the same bits on every machine.
    pub fn cosine(&self, slot: u32, request: &Request) -> f32 {
        let i = slot as usize;
        dot_request(self.code(i), &request.codes) as f32 * self.scales[i] * request.scale
    }
}

impl Vectors {
    /// The cosine of the vectors in slots `a` and `b`, as near to their f32 cosine as int8
    /// allows (each side off by half a step at most): an integer dot product, as
    /// [`Vectors::cosine`]'s, summed in runs short enough that no run overflows an `i32`.
    pub fn cosine_between(&self, a: u32, b: u32) -> f32 {
        let dot = dot(self.code(a as usize), self.code(b as usize));
        dot as f32 * self.scales[a as usize] * self.scales[b as usize]
    }

    /// The cosine with `request` of the vector in each of `slots` (one not held, such as
    /// `u32::MAX`: 0), in parallel for many.
    pub fn cosines(&self, slots: &[u32], request: &Request) -> Vec<f32> {
        let mut out = vec![0.0; slots.len()];
        out.par_chunks_mut(FED_CHUNK)
            .zip(slots.par_chunks(FED_CHUNK))
            .for_each(|(out, slots)| self.cosines_into(slots, request, out));
        out
    }

    /// [`Vectors::cosines`] of `slots` into `out`, on this thread.
    fn cosines_into(&self, slots: &[u32], request: &Request, out: &mut [f32]) {
        for (o, &slot) in out.iter_mut().zip(slots) {
            *o = match (slot as usize) < self.len() {
                true => self.cosine(slot, request),
                false => 0.0,
            };
        }
    }

    /// Renumber the slots so that the vectors lie in the order `slots` first names them (the
    /// vectors it does not name after them, in their order): a pass over the slots of doc
    /// ids in order then reads them in the order they lie in memory. Returns each old slot's
    /// new one, or none when the order is already so.
    pub fn arrange(&mut self, slots: &[u32]) -> Option<Vec<u32>> {
        let n = self.len();
        let mut order: Vec<u32> = Vec::with_capacity(n);
        let mut placed = vec![false; n];
        for &slot in slots {
            if let Some(p) = placed.get_mut(slot as usize) {
                if !*p {
                    *p = true;
                    order.push(slot);
                }
            }
        }
        order.extend((0..n as u32).filter(|&s| !placed[s as usize]));
        if order.iter().enumerate().all(|(i, &s)| s as usize == i) {
            return None;
        }
        let mut arranged = Vectors::new(&self.identity, self.dimension);
        arranged.keys.reserve(n);
        arranged.scales.reserve(n);
        arranged.codes.reserve(n * self.dimension);
        let mut new_of = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            let old = old as usize;
            new_of[old] = new as u32;
            arranged.slot.insert(self.keys[old], new as u32);
            arranged.keys.push(self.keys[old]);
            arranged.scales.push(self.scales[old]);
            arranged.codes.extend_from_slice(self.code(old));
        }
        *self = arranged;
        Some(new_of)
    }
}

/// Doc ids a [`Fed`] computes at a time.
const FED_CHUNK: usize = 2048;

/// A request's cosine with the vector of each doc, by doc id, computed a chunk of docs at a
/// time by whichever thread needs the chunk first: a helper thread runs ([`Fed::run`]) ahead
/// of a search that reads the cosines in doc order, so that the pass over the vectors (bound
/// by memory) and the search (by computation) overlap. A read of a doc whose chunk no thread
/// has claimed computes it; one another thread is computing waits for it.
#[derive(Debug)]
pub struct Fed<'a> {
    vectors: &'a Vectors,
    /// Each doc id's slot (one not held: no vector, a cosine of 0).
    slots: &'a [u32],
    request: Request,
    /// Each doc's cosine, as `f32` bits, once its chunk is done.
    values: Vec<AtomicU32>,
    /// Chunks claimed (in order).
    claimed: AtomicUsize,
    /// Whether each chunk's cosines are in `values`.
    done: Vec<AtomicBool>,
}

impl<'a> Fed<'a> {
    /// The cosines of `request` with the vectors of `slots` (each doc id's), none computed.
    pub fn new(vectors: &'a Vectors, slots: &'a [u32], request: Request) -> Fed<'a> {
        Fed {
            vectors,
            slots,
            request,
            values: (0..slots.len()).map(|_| AtomicU32::new(0)).collect(),
            claimed: AtomicUsize::new(0),
            done: (0..slots.len().div_ceil(FED_CHUNK))
                .map(|_| AtomicBool::new(false))
                .collect(),
        }
    }

    /// Compute the chunks no thread has claimed, until there is none.
    pub fn run(&self) {
        while let Some(c) = self.claim() {
            self.compute(c);
        }
    }

    fn claim(&self) -> Option<usize> {
        let c = self.claimed.fetch_add(1, Ordering::Relaxed);
        (c < self.done.len()).then_some(c)
    }

    fn compute(&self, c: usize) {
        let ids = c * FED_CHUNK..((c + 1) * FED_CHUNK).min(self.slots.len());
        let mut out = [0.0f32; FED_CHUNK];
        let out = &mut out[..ids.len()];
        self.vectors
            .cosines_into(&self.slots[ids.clone()], &self.request, out);
        for (v, &x) in self.values[ids].iter().zip(out.iter()) {
            v.store(x.to_bits(), Ordering::Relaxed);
        }
        self.done[c].store(true, Ordering::Release);
    }

    /// Wait until chunk `c` is done, computing the chunks no thread has claimed meanwhile.
    fn wait(&self, c: usize) {
        let mut spins = 0u32;
        while !self.done[c].load(Ordering::Acquire) {
            match self.claim() {
                Some(other) => self.compute(other),
                None if spins < 64 => {
                    spins += 1;
                    std::hint::spin_loop();
                }
                None => std::thread::yield_now(),
            }
        }
    }

    /// Doc `id`'s cosine (a doc beyond the slots: 0).
    #[inline]
    pub fn get(&self, id: usize) -> f32 {
        let Some(v) = self.values.get(id) else {
            return 0.0;
        };
        let c = id / FED_CHUNK;
        if !self.done[c].load(Ordering::Acquire) {
            self.wait(c);
        }
        f32::from_bits(v.load(Ordering::Relaxed))
    }

    /// The cosines of docs `ids` into `out` (as long; a doc beyond the slots: 0).
    pub fn window(&self, ids: std::ops::Range<usize>, out: &mut [f32]) {
        let held = ids.start.min(self.values.len())..ids.end.min(self.values.len());
        if !held.is_empty() {
            for c in held.start / FED_CHUNK..=(held.end - 1) / FED_CHUNK {
                self.wait(c);
            }
        }
        let n = held.len();
        for (o, v) in out.iter_mut().zip(&self.values[held]) {
            *o = f32::from_bits(v.load(Ordering::Relaxed));
        }
        out[n..].fill(0.0);
    }
}

/// The dot product of two vectors of codes within ±127 (int8 codes, or the same widened to
/// 16 bits), summed in runs short enough that no run overflows an `i32` (65,536 · 127² < 2³¹):
/// exact, so the same codes give the same sum whatever their width.
pub fn dot<T: Copy + Into<i32>>(x: &[T], y: &[T]) -> i64 {
    const RUN: usize = 65_536;
    x.chunks(RUN)
        .zip(y.chunks(RUN))
        .map(|(x, y)| {
            let run: i32 = x.iter().zip(y).map(|(&a, &b)| a.into() * b.into()).sum();
            i64::from(run)
        })
        .sum()
}

/// The dot product of a lesson's int8 codes and a request's 16-bit ones, within an `i32`
/// (what [`Request::new`]'s steps promise), with AVX2 where the CPU has it: 16 products a step
/// instead of SSE2's 8 (a request's cosines with the 100,000 lessons of a bank took 3.6 ms on
/// 2 cores, 1.7 ms with AVX2). An integer sum, so the same value either way.
fn dot_request(codes: &[i8], request: &[i16]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the only feature the function enables
        return unsafe { avx2::dot_request(codes, request) };
    }
    dot_request_scalar(codes, request)
}

/// [`dot_request`] one product at a time (wrapping additions: the sum cannot overflow, so
/// they give it exactly, in any order).
fn dot_request_scalar(codes: &[i8], request: &[i16]) -> i32 {
    codes.iter().zip(request).fold(0i32, |s, (&c, &r)| {
        s.wrapping_add(i32::from(c) * i32::from(r))
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        _mm256_add_epi32, _mm256_cvtepi8_epi16, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_setzero_si256, _mm256_storeu_si256, _mm_loadu_si128,
    };

    /// [`super::dot_request`] 16 codes a step: widened to 16 bits, multiplied in pairs
    /// summed into eight 32-bit lanes, then the lanes and the tail summed.
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_request(codes: &[i8], request: &[i16]) -> i32 {
        let n = codes.len().min(request.len());
        let whole = n - n % 16;
        let mut acc = _mm256_setzero_si256();
        for i in (0..whole).step_by(16) {
            let (c, r) = (&codes[i..i + 16], &request[i..i + 16]);
            // SAFETY: `c` holds the 16 bytes and `r` the 32 bytes read (unaligned loads)
            let (c, r) = unsafe {
                (
                    _mm_loadu_si128(c.as_ptr().cast()),
                    _mm256_loadu_si256(r.as_ptr().cast()),
                )
            };
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_cvtepi8_epi16(c), r));
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` has room for the 32 bytes written
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        let sum = lanes.iter().fold(0i32, |s, &x| s.wrapping_add(x));
        sum.wrapping_add(super::dot_request_scalar(
            &codes[whole..n],
            &request[whole..n],
        ))
    }
}

/// A request's vector as [`Vectors::cosine`] reads it: 16-bit integers and their scale.
#[derive(Debug, Clone)]
pub struct Request {
    codes: Vec<i16>,
    scale: f32,
}

impl Request {
    /// Quantise `vector` (a unit vector; all zeros, or not finite: a request whose every
    /// cosine is 0). The steps are as fine as 16 bits allow while a dot product with an int8
    /// vector of the same length stays within an `i32`.
    pub fn new(vector: &[f32]) -> Request {
        let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if !(max > 0.0 && vector.iter().all(|x| x.is_finite())) {
            return Request {
                codes: vec![0; vector.len()],
                scale: 0.0,
            };
        }
        let range = (i64::from(i32::MAX) / (127 * vector.len().max(1) as i64)).clamp(1, 32767);
        let scale = max / range as f32;
        Request {
            codes: vector
                .iter()
                .map(|x| (x / scale).round().clamp(-(range as f32), range as f32) as i16)
                .collect(),
            scale,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn the_file_round_trips_and_refuses_another_model_or_damage() {
        let mut v = Vectors::new("model-a", 4);
        v.insert(7, &unit(&[1.0, 0.0, 0.5, -0.25]));
        v.insert(3, &unit(&[0.0, 1.0, 0.0, 0.0]));
        v.insert(3, &unit(&[1.0, 1.0, 1.0, 1.0])); // held already: kept as it was
        v.insert(9, &[1.0, 2.0]); // another length: not kept
        assert_eq!(v.len(), 2);
        let bytes = v.encode();
        let back = Vectors::decode(&bytes, "model-a", 4).expect("its own file");
        assert_eq!(back.encode(), bytes, "deterministic");
        assert_eq!(
            back.slot(3)
                .map(|s| back.cosine(s, &Request::new(&[0.0, 1.0, 0.0, 0.0]))),
            Some(1.0)
        );
        assert!(
            Vectors::decode(&bytes, "model-b", 4).is_none(),
            "another model"
        );
        assert!(
            Vectors::decode(&bytes, "model-a", 8).is_none(),
            "another length"
        );
        for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                Vectors::decode(&bytes[..cut], "model-a", 4).is_none(),
                "cut at {cut}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[bytes.len() / 2] ^= 1;
        assert!(Vectors::decode(&flipped, "model-a", 4).is_none(), "damaged");
        // the same vectors inserted in another order: the same bytes
        let mut w = Vectors::new("model-a", 4);
        w.insert(3, &unit(&[0.0, 1.0, 0.0, 0.0]));
        w.insert(7, &unit(&[1.0, 0.0, 0.5, -0.25]));
        assert_eq!(w.encode(), bytes);
        // retain drops what is not kept
        assert!(w.retain(|k| k == 7));
        assert_eq!((w.len(), w.slot(3), w.slot(7)), (1, None, Some(0)));
        assert!(!w.retain(|_| true));
    }

    #[test]
    fn the_integer_dot_product_never_overflows_whatever_the_dimension() {
        for d in [1usize, 3, 256, 384, 768, 1024, 1536, 4096, 10_000] {
            // the worst case: every component at its largest, in both vectors
            let all = unit(&vec![1.0; d]);
            let mut v = Vectors::new("m", d);
            v.insert(1, &all);
            let got = v.cosine(0, &Request::new(&all));
            assert!((got - 1.0).abs() < 1e-3, "{d}: {got}");
            let minus: Vec<f32> = all.iter().map(|x| -x).collect();
            let got = v.cosine(0, &Request::new(&minus));
            assert!((got + 1.0).abs() < 1e-3, "{d}: {got}");
        }
        // a request of zeros (no tokens) or not finite: every cosine 0
        let mut v = Vectors::new("m", 2);
        v.insert(1, &[0.6, 0.8]);
        assert_eq!(v.cosine(0, &Request::new(&[0.0, 0.0])), 0.0);
        assert_eq!(v.cosine(0, &Request::new(&[f32::NAN, 1.0])), 0.0);
    }

    #[test]
    fn the_cosine_between_two_vectors_is_near_their_f32_cosine() {
        let (a, b) = (unit(&[1.0, 0.0, 0.5, -0.25]), unit(&[0.5, 1.0, 0.0, 0.25]));
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let mut v = Vectors::new("m", 4);
        v.insert(1, &a);
        v.insert(2, &b);
        let got = v.cosine_between(0, 1);
        assert!((got - exact).abs() < 0.01, "{got} vs {exact}");
        assert_eq!(got, v.cosine_between(1, 0), "symmetric");
        assert!((v.cosine_between(0, 0) - 1.0).abs() < 0.01);
        // a long vector at its largest everywhere: runs keep the sum from overflowing
        let d = 200_000;
        let all = unit(&vec![1.0; d]);
        let mut v = Vectors::new("m", d);
        v.insert(1, &all);
        assert!((v.cosine_between(0, 0) - 1.0).abs() < 1e-3);
    }

    proptest! {
        /// int8 keeps the cosine within √d half-steps of the f32 cosine.
        #[test]
        fn the_int8_cosine_is_near_the_f32_cosine(
            a in prop::collection::vec(-1.0f32..1.0, 24),
            b in prop::collection::vec(-1.0f32..1.0, 24),
        ) {
            prop_assume!(a.iter().any(|x| x.abs() > 1e-3) && b.iter().any(|x| x.abs() > 1e-3));
            let (a, b) = (unit(&a), unit(&b));
            let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let mut v = Vectors::new("m", 24);
            v.insert(1, &a);
            let got = v.cosine(0, &Request::new(&b));
            let max = a.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let bound = (24f32).sqrt() * max / 254.0 * 1.001 + 1e-5;
            prop_assert!((got - exact).abs() <= bound, "{got} vs {exact} (bound {bound})");
        }

        /// The machine's dot product (AVX2's where it has it) is the one done a product at a
        /// time, for any length (whole steps of 16 and a tail) and codes up to their bounds.
        #[test]
        fn the_dot_product_is_the_one_a_product_at_a_time(
            codes in prop::collection::vec(-127i8..=127, 0..100),
            seed in any::<u64>(),
            extreme in any::<bool>(),
        ) {
            let range = (i64::from(i32::MAX) / (127 * codes.len().max(1) as i64)).clamp(1, 32767);
            let range = range as i16;
            let mut x = seed;
            let request: Vec<i16> = codes
                .iter()
                .map(|&c| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    match extreme {
                        // the largest products, every one of the code's sign
                        true => if c < 0 { -range } else { range },
                        false => ((x >> 33) as i64 % (2 * i64::from(range) + 1) - i64::from(range)) as i16,
                    }
                })
                .collect();
            let expected: i64 = codes.iter().zip(&request).map(|(&c, &r)| i64::from(c) * i64::from(r)).sum();
            prop_assert_eq!(i64::from(dot_request(&codes, &request)), expected);
            prop_assert_eq!(dot_request_scalar(&codes, &request), dot_request(&codes, &request));
        }
    }

    /// Random vectors under keys `1..=n`, and doc slots naming them in a random order, some
    /// twice (two files of the same bytes), some docs without a vector (`u32::MAX`) or with a
    /// slot beyond those held.
    fn bank(n: usize, docs: usize, seed: u64) -> (Vectors, Vec<u32>) {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m.max(1)
        };
        let mut v = Vectors::new("m", 20);
        for key in 1..=n as u64 {
            let raw: Vec<f32> = (0..20).map(|_| next(2001) as f32 / 1000.0 - 1.0).collect();
            v.insert(key, &unit(&raw));
        }
        let slots = (0..docs)
            .map(|_| match next(10) {
                0 => u32::MAX,
                1 => n as u32 + next(3) as u32,
                _ => next(n as u64) as u32,
            })
            .collect();
        (v, slots)
    }

    proptest! {
        /// Arranged in doc order, the vectors are the same (the same file, each doc the same
        /// cosine through its renumbered slot), and a second arrangement changes nothing.
        #[test]
        fn arranging_the_vectors_keeps_every_cosine_and_the_file(
            n in 0usize..40,
            docs in 0usize..80,
            seed in any::<u64>(),
        ) {
            let (mut v, mut slots) = bank(n, docs, seed);
            let request = Request::new(&unit(&[0.3; 20]));
            let before = v.cosines(&slots, &request);
            let file = v.encode();
            if let Some(new_of) = v.arrange(&slots) {
                for slot in &mut slots {
                    if let Some(&new) = new_of.get(*slot as usize) {
                        *slot = new;
                    }
                }
            }
            prop_assert_eq!(v.encode(), file);
            prop_assert_eq!(v.cosines(&slots, &request), before);
            prop_assert!(v.arrange(&slots).is_none());
            // each vector's first doc in doc order lies in that order
            let mut next = 0u32;
            for &slot in &slots {
                if (slot as usize) < v.len() {
                    prop_assert!(slot <= next);
                    next = next.max(slot + 1);
                }
            }
        }
    }

    #[test]
    fn a_fed_pass_gives_every_cosine_whoever_computes_it() {
        for (n, docs) in [(0, 0), (5, 1), (300, FED_CHUNK * 3 + 17), (50, FED_CHUNK)] {
            let (v, slots) = bank(n, docs, n as u64);
            let request = Request::new(&unit(&[
                0.1, -0.4, 0.2, 0.3, 0.0, 0.5, 0.1, 0.1, 0.2, 0.0, -0.3, 0.1, 0.2, 0.2, 0.1, 0.0,
                0.4, -0.1, 0.2, 0.3,
            ]));
            let all = v.cosines(&slots, &request);
            // read alone: each read computes what it needs
            let fed = Fed::new(&v, &slots, request.clone());
            for id in (0..docs + 3).rev() {
                assert_eq!(fed.get(id), all.get(id).copied().unwrap_or(0.0), "{id}");
            }
            // read in windows while another thread computes ahead
            let fed = Fed::new(&v, &slots, request.clone());
            let mut window = vec![0.0f32; 1000];
            std::thread::scope(|s| {
                s.spawn(|| fed.run());
                for lo in (0..docs + 1000).step_by(1000) {
                    fed.window(lo..lo + 1000, &mut window);
                    for (j, &c) in window.iter().enumerate() {
                        assert_eq!(c, all.get(lo + j).copied().unwrap_or(0.0), "{}", lo + j);
                    }
                }
            });
        }
    }
}
