//! The pruned search: the exhaustive search's candidates that can reach the top K (or the
//! cautions kept), each with the score the exhaustive search gives it, to the last bit,
//! without scoring every posting.
//!
//! MaxScore over windows of doc ids, with block maxima. Each term's skip table bounds what a
//! block of its postings can add to a doc's similarity sum ([`codec::FieldBound`]). For a
//! window of [`WINDOW`] docs, every term gets the largest bound of its blocks there; the terms
//! whose bounds, smallest first, add up to less than what a doc needs are *non-essential*: a
//! doc none of the others holds cannot make it. The essential terms are scored term at a time
//! over the window; each doc they reach is then looked up in the non-essential terms, largest
//! bound first, until its sum plus what is left to look up cannot reach what it needs. A doc
//! that can is scored in full: its terms' shares × saturations re-summed in the request's
//! term order, as the exhaustive search sums them, then its score parts.
//!
//! What a doc needs: a similarity of `min-similarity`, and, once K docs are scored, a score
//! of the K-th best (a caution: of the `max-cautions`-th best caution, when that is lower),
//! its similarity multiplied by its confidence × count factor, a recency of at most 1 and the
//! tag boost. A window needs the lesser of what its plain docs need (the K-th best, over their
//! largest factor) and what its cautions need (the lower bar, over theirs, which a caution's
//! count factor keeps small). Bounds carry a relative slack far above the
//! rounding of the sums and norms they bound, so a doc is only passed over when it is
//! certainly below the bar; ties are kept (the slug decides among them).
//!
//! In a lexical search, the essential terms score only the window's *viable* docs: those
//! eligible whose prior leaves them a chance, a doc whose need at the window's bar is above
//! every term's window bound together being certainly below it (at 100,000 lessons that
//! passes over 60 to 85% of the docs the essential terms reach, before any saturation).
//!
//! An index keeps each term's decoded skip table and live count for the searches to come.
//!
//! The gates, the shares (the live document frequency, as the exhaustive search counts it)
//! and the total are computed exactly as before, so a doc's similarity is the same number.
//!
//! On an index kept open, a lexical search of a segment of many windows is shared by two
//! workers, the calling thread and a pool thread, each with its own cursors and bar: each
//! starts on half of the windows and, its own done, takes the back half of what the other
//! has left. A worker's bar is the higher of its own and the other's (a score K docs reach
//! either way), so what is pruned is still certainly below the final bar, and the hits are
//! the same, in whatever order the windows are searched.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::query::{Candidate, ListScorer, Scored, Similarity};
use super::*;
use crate::retrieve::codec::{Skip, TermList};
use crate::retrieve::segment::{PriorTable, PRIOR_GROUP};
use std::sync::atomic::AtomicU64;

/// Relative slack on every bound.
const SLACK: f64 = 1e-6;
/// Doc ids per window (a multiple of 64; small under test, so that the property test's banks
/// span several windows).
const WINDOW: usize = if cfg!(test) { 128 } else { 2048 };

/// Whether the bounds hold under `s`: field weights and the word weight at least 0 (every
/// share too, then), `b` in `[0, 1]`, `k1` above 0, all finite. Other settings are searched
/// exhaustively.
pub(super) fn bounds_hold(s: &Settings) -> bool {
    s.field_weights.iter().all(|w| w.is_finite() && *w >= 0.0)
        && s.word_weight.is_finite()
        && s.word_weight >= 0.0
        && (0.0..=1.0).contains(&s.b)
        && s.k1.is_finite()
        && s.k1 > 0.0
        && s.tag_boost.is_finite()
}

/// A term's list in one segment, with its skip table and its blocks' saturation bounds.
type Listed<'a> = (TermList<'a>, Arc<[Skip]>, Arc<[f64]>);

/// A term's skip table in one segment, decoded, and its live postings (what its document
/// frequency counts).
#[derive(Debug)]
pub(super) struct TermSkips {
    skips: Arc<[Skip]>,
    live: u64,
    /// Per block, a bound of its postings' saturations, for the settings that key it
    /// ([`TermSkips::sat_bounds`]).
    sat: Mutex<Option<(SatKey, Arc<[f64]>)>>,
}

/// What the saturation bounds of a skip table depend on besides the index: `b`, `k1` and the
/// field weights (their bits).
type SatKey = [u64; 6];

impl TermSkips {
    /// Per block, a bound of what its postings' saturations are under `settings`, the term's
    /// kind averaging `avg` in the four fields: computed once for these settings (both
    /// workers of a search, and every search after them, read the same table).
    fn sat_bounds(&self, settings: &Settings, avg: [f64; 4]) -> Arc<[f64]> {
        let (b, k1, w) = (settings.b, settings.k1, settings.field_weights);
        let key = [b, k1, w[0], w[1], w[2], w[3]].map(f64::to_bits);
        let mut kept = self.sat.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, bounds)) = kept.as_ref() {
            if *k == key {
                return bounds.clone();
            }
        }
        let bounds: Arc<[f64]> = self
            .skips
            .iter()
            .map(|s| {
                let mut x = 0.0;
                for f in 0..4 {
                    x += w[f] * s.fields[f].bound(b, avg[f]);
                }
                let x = x * (1.0 + SLACK);
                let sat = x / (k1 + x) * (1.0 + SLACK);
                if sat.is_finite() {
                    sat.min(1.0)
                } else {
                    1.0
                }
            })
            .collect();
        *kept = Some((key, bounds.clone()));
        bounds
    }
}

/// Skips an index keeps at most ([`Index::term_skips`]; 64 bytes each): past them, the
/// table starts over.
const SKIPS_KEPT: usize = 1 << 18;

/// A cursor's buffers: its decoded block (what it holds is read only once a decode has
/// written it), the block's saturations and its adds.
struct Buffers {
    block: Box<Block>,
    sat: Box<[f64; codec::BLOCK]>,
    adds: Vec<(u32, f64)>,
}

/// Cursors' buffers a thread keeps at most (about 36 KiB each).
const SPARE_KEPT: usize = 64;

thread_local! {
    /// The buffers of the cursors this thread's searches closed, for its searches to come.
    /// Allocated and zeroed for each cursor of each search, they were about 5% of a warm
    /// search's samples, and the allocator handed their pages back to the kernel in between,
    /// to fault them in again at the next.
    static SPARE: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

impl Buffers {
    /// A thread's spare buffers, or new ones.
    fn take() -> Buffers {
        let spare = SPARE
            .try_with(|s| s.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        spare.unwrap_or_else(|| Buffers {
            block: Box::default(),
            sat: Box::new([0.0; codec::BLOCK]),
            adds: Vec::new(),
        })
    }

    /// Keep the buffers for the thread's searches to come (unless it keeps enough).
    fn give_back(self) {
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                if s.len() < SPARE_KEPT {
                    s.push(self);
                }
            }
        });
    }
}

/// One posting list of a request's term, walked forward.
struct Cursor<'a> {
    /// The term's place among the request's scored terms.
    t: usize,
    share: f64,
    list: TermList<'a>,
    skips: Arc<[Skip]>,
    /// Per block, a bound of its saturations (what it adds to a doc's sum is `share` times
    /// as much).
    bounds: Arc<[f64]>,
    scorer: ListScorer<'a>,
    /// The first block not wholly behind the cursor.
    at: usize,
    /// The decoded block (its ids; its counts and saturations if `scored`) and the position
    /// in it.
    decoded: Option<usize>,
    block: Box<Block>,
    sat: Box<[f64; codec::BLOCK]>,
    /// Whether the decoded block's counts are, and whether every posting's saturation is.
    counted: bool,
    scored: bool,
    pos: usize,
    /// This window's bound.
    window: f64,
    /// What the term adds to each doc of this window it holds (an essential term).
    adds: Vec<(u32, f64)>,
    next_add: usize,
}

impl<'a> Cursor<'a> {
    fn open(
        t: usize,
        share: f64,
        list: TermList<'a>,
        skips: Arc<[Skip]>,
        bounds: Arc<[f64]>,
        scorer: ListScorer<'a>,
    ) -> Result<Cursor<'a>, Corrupt> {
        let Buffers {
            block,
            sat,
            mut adds,
        } = Buffers::take();
        // at most one add per doc of a window: sized once (grown a push at a time, it was a
        // tenth of a warm search's instructions, in reallocations)
        adds.clear();
        adds.reserve(WINDOW.min(list.count));
        let mut c = Cursor {
            t,
            share,
            list,
            skips,
            bounds,
            scorer,
            at: 0,
            decoded: None,
            block,
            sat,
            counted: false,
            scored: false,
            pos: 0,
            window: 0.0,
            adds,
            next_add: 0,
        };
        if c.skips.is_empty() {
            // one block: decoded now, its bound the largest of its saturations
            c.decode_scored(0)?;
            let n = c.block.len;
            let max = c.sat[..n].iter().copied().fold(0.0, f64::max);
            c.skips = Arc::new([Skip {
                last: c.block.ids[n - 1],
                end: list.blocks.len(),
                fields: Default::default(),
            }]);
            c.bounds = Arc::new([max]);
        }
        Ok(c)
    }

    /// Move the cursor back to the first block that may hold doc `d` or later (a worker's
    /// windows are in order but for a steal, which may go back).
    fn rewind(&mut self, d: usize) {
        self.at = self.skips.partition_point(|s| (s.last as usize) < d);
        self.pos = 0;
    }

    /// Hand the cursor's buffers back to the thread's spares.
    fn close(self) {
        Buffers {
            block: self.block,
            sat: self.sat,
            adds: self.adds,
        }
        .give_back();
    }

    /// Decode block `i`'s doc ids (unless they are), its counts not yet decoded.
    fn decode(&mut self, i: usize) -> Result<(), Corrupt> {
        if self.decoded == Some(i) {
            return Ok(());
        }
        self.list.block_ids(&self.skips, i, &mut self.block)?;
        self.scorer.check(&self.block)?;
        // past the block's ids, ids no doc has: a scan for a doc stops there ([`first_at`])
        let n = self.block.len;
        self.block.ids[n..n + 8].fill(u32::MAX);
        self.decoded = Some(i);
        self.counted = false;
        self.scored = false;
        self.pos = 0;
        Ok(())
    }

    /// Decode block `i`'s ids and counts (unless they are).
    fn decode_counted(&mut self, i: usize) -> Result<(), Corrupt> {
        self.decode(i)?;
        if !self.counted {
            self.list.block_counts(&self.skips, i, &mut self.block)?;
            self.counted = true;
        }
        Ok(())
    }

    /// Decode block `i` (unless it is) and compute every posting's saturation.
    fn decode_scored(&mut self, i: usize) -> Result<(), Corrupt> {
        self.decode_counted(i)?;
        if !self.scored {
            self.scorer.block(&self.block, &mut self.sat)?;
            self.scored = true;
        }
        Ok(())
    }

    /// The largest bound of what the blocks that may hold docs in `lo..hi` add (`share` times
    /// their largest saturation bound: rounding keeps the order of positive products).
    fn window_bound(&mut self, lo: u32, hi: u32) -> f64 {
        while self.at < self.skips.len() && self.skips[self.at].last < lo {
            self.at += 1;
        }
        let mut bound = 0.0f64;
        for b in self.at..self.skips.len() {
            let first = if b == 0 {
                0
            } else {
                self.skips[b - 1].last.saturating_add(1)
            };
            if first >= hi {
                break;
            }
            bound = bound.max(self.bounds[b]);
        }
        self.share * bound
    }

    /// Every eligible posting in `lo..hi`, with what it adds, into `adds`.
    fn score_window(&mut self, lo: u32, hi: u32) -> Result<(), Corrupt> {
        self.adds.clear();
        self.next_add = 0;
        while self.at < self.skips.len() {
            self.decode_scored(self.at)?;
            let n = self.block.len;
            while self.pos < n && self.block.ids[self.pos] < lo {
                self.pos += 1;
            }
            while self.pos < n && self.block.ids[self.pos] < hi {
                let s = self.sat[self.pos];
                if s != 0.0 {
                    self.adds.push((self.block.ids[self.pos], self.share * s));
                }
                self.pos += 1;
            }
            if self.pos < n {
                break;
            }
            self.at += 1;
        }
        Ok(())
    }

    /// [`Cursor::score_window`] for the docs of `lo..hi` whose bit is set in `viable` (bit
    /// `d - lo`) alone: the others' saturations are never computed.
    fn score_window_viable(&mut self, lo: u32, hi: u32, viable: &[u64]) -> Result<(), Corrupt> {
        self.adds.clear();
        self.next_add = 0;
        while self.at < self.skips.len() {
            self.decode(self.at)?;
            let n = self.block.len;
            while self.pos < n && self.block.ids[self.pos] < lo {
                self.pos += 1;
            }
            let start = self.pos;
            let mut end = start;
            while end < n && self.block.ids[end] < hi {
                end += 1;
            }
            // the viable postings, by their place in the block, gathered without a branch
            // (a branch on each doc's bit mispredicted a third of the time, and each miss
            // threw away the norm loads under way), then scored in a loop without one
            let mut kept = [0u8; codec::BLOCK];
            let mut flags = [0u8; codec::BLOCK];
            let mut m = 0;
            let places = self.block.ids[start..end]
                .iter()
                .zip(&mut flags[start..end]);
            for (i, (&id, flag)) in (start..).zip(places) {
                let j = (id - lo) as usize;
                let bit = (viable[j / 64] >> (j % 64)) & 1;
                kept[m] = i as u8;
                m += bit as usize;
                *flag = bit as u8;
            }
            let kept = &kept[..m];
            if !kept.is_empty() {
                if !self.scored {
                    self.decode_counted(self.at)?;
                }
                let (share, adds) = (self.share, &mut self.adds);
                if self.scored {
                    for &i in kept {
                        let s = self.sat[usize::from(i)];
                        if s != 0.0 {
                            adds.push((self.block.ids[usize::from(i)], share * s));
                        }
                    }
                } else {
                    let ids = &self.block.ids;
                    self.scorer.block_kept(&self.block, kept, &flags, |i, s| {
                        if s != 0.0 {
                            adds.push((ids[i], share * s));
                        }
                    })?;
                }
            }
            self.pos = end;
            if end < n {
                break;
            }
            self.at += 1;
        }
        Ok(())
    }

    /// The saturation of doc `d` (not behind the cursor), if the list holds it.
    fn sat_at(&mut self, d: u32) -> Result<Option<f64>, Corrupt> {
        while self.at < self.skips.len() && self.skips[self.at].last < d {
            self.at += 1;
        }
        if self.at == self.skips.len() {
            return Ok(None);
        }
        self.decode(self.at)?;
        let n = self.block.len;
        self.pos = first_at(&self.block.ids, self.pos, d);
        if self.pos == n || self.block.ids[self.pos] != d {
            return Ok(None);
        }
        // a lookup reads the one posting's counts where they lie: most blocks a search
        // decodes are only looked up in
        Ok(Some(match self.scored {
            true => self.sat[self.pos],
            false => {
                let counts = self.list.counts(&self.block, self.pos)?;
                self.scorer.one_counts(&self.block, self.pos, counts)
            }
        }))
    }

    /// What the term added to doc `d` of this window (an essential term).
    fn added(&mut self, d: u32) -> Option<f64> {
        while self.next_add < self.adds.len() && self.adds[self.next_add].0 < d {
            self.next_add += 1;
        }
        match self.adds.get(self.next_add) {
            Some(&(id, v)) if id == d => Some(v),
            _ => None,
        }
    }
}

/// The place of the first of a decoded block's ids from `pos` on that is at or after `d`
/// (the block's length if none: the 8 ids past the block are `u32::MAX`,
/// [`Cursor::decode`]), the ids counted 8 at a time without a branch on each (a loop
/// stopping at the first one at or after `d` mispredicted its exit at almost every lookup).
#[inline]
fn first_at(ids: &[u32; codec::BLOCK + 8], mut pos: usize, d: u32) -> usize {
    loop {
        let chunk: &[u32; 8] = ids[pos..pos + 8].try_into().expect("8 ids");
        let behind: usize = chunk.iter().map(|&id| usize::from(id < d)).sum();
        pos += behind;
        if behind < 8 {
            return pos;
        }
    }
}

/// What a doc needs of its lexical sum in a hybrid search, its fused similarity being
/// `(1 − w) · sum / total + w · cosine` (a little less, for rounding; `1 / (1 − w)` is taken
/// as a product, an ulp or two off, which the slack covers).
struct HybridNeed {
    /// The largest factor besides the prior.
    boost: f64,
    min_similarity: f64,
    /// The cosine's weight, below 1.
    w: f64,
    /// `1 / (1 − w)`.
    per_rest: f64,
    /// The request's total share.
    total: f64,
}

impl HybridNeed {
    /// What a doc of prior `prior` and cosine `c` needs to score `bar`.
    #[inline]
    fn of(&self, bar: f64, prior: f64, c: f32) -> f64 {
        self.need_of(self.part(bar, prior, f64::from(c)))
    }

    /// The similarity a doc of prior `prior` needs to score `bar`, less its cosine's share:
    /// what its need grows with.
    #[inline]
    fn part(&self, bar: f64, prior: f64, c: f64) -> f64 {
        let sim = (bar / (prior * self.boost)).max(self.min_similarity);
        sim - self.w * c
    }

    #[inline]
    fn need_of(&self, part: f64) -> f64 {
        (part * self.per_rest - SLACK) * self.total
    }

    /// The least need of the eligible docs of `range` (segment ids, from a multiple of 64) with
    /// a prior above 0, a plain doc's to score `bars.0` and a caution's (when cautions are
    /// kept) `bars.1`, their cosines in `cosines` (from the range's start); infinite when there
    /// is none. The same as the least of [`HybridNeed::of`] over them, to the bit: a need grows
    /// with its part, and the least part is taken.
    #[allow(clippy::too_many_arguments)]
    fn least(
        &self,
        table: &PriorTable<'_>,
        eligible: &Bits,
        cautions_kept: bool,
        offset: usize,
        range: std::ops::Range<usize>,
        cosines: &[f32],
        (plain_bar, caution_bar): (f64, f64),
    ) -> f64 {
        let start = range.start;
        let mut least = f64::INFINITY;
        let mut lo = range.start;
        while lo < range.end {
            let hi = (lo + 64).min(range.end);
            let eligible = eligible.word_at(offset + lo);
            let cautions = match cautions_kept {
                true => table.caution_word(lo / 64),
                false => 0,
            };
            let cosines = &cosines[lo - start..hi - start];
            match hi - lo == 64 && eligible == !0 && cautions == 0 {
                // 64 plain eligible docs: a loop without a branch, which the compiler runs in
                // vector registers
                true => {
                    let priors = table.prior_bytes(lo, hi);
                    for (prior, &c) in priors.chunks_exact(8).zip(cosines) {
                        let prior = f64::from_le_bytes(prior.try_into().expect("8 bytes"));
                        let part = match prior > 0.0 {
                            true => self.part(plain_bar, prior, f64::from(c)),
                            false => f64::INFINITY,
                        };
                        least = if part < least { part } else { least };
                    }
                }
                false => {
                    for d in lo..hi {
                        let bit = 1u64 << (d - lo);
                        let prior = table.prior(d);
                        if eligible & bit == 0 || prior.is_nan() || prior <= 0.0 {
                            continue;
                        }
                        let bar = match cautions & bit != 0 {
                            true => caution_bar,
                            false => plain_bar,
                        };
                        let part = self.part(bar, prior, f64::from(cosines[d - lo]));
                        least = if part < least { part } else { least };
                    }
                }
            }
            lo = hi;
        }
        match least == f64::INFINITY {
            true => least,
            false => self.need_of(least),
        }
    }
}

/// Per segment, per window of its docs: the largest prior (confidence × count factor, what a
/// score multiplies its similarity by besides recency, at most 1, and the tag boost) of its
/// plain docs and of its cautions (0 when it has none), what a window's bar is set from. Folded
/// from the segments' priors sections ([`Segment::priors`]), whose groups windows are made of.
#[derive(Debug)]
pub(super) struct Priors {
    windows: Vec<Vec<(f64, f64)>>,
}

const _: () = assert!(WINDOW.is_multiple_of(PRIOR_GROUP));

/// The best scores so far: the K-th best is the bar.
struct Best {
    k: usize,
    heap: BinaryHeap<Reverse<u64>>,
}

impl Best {
    fn new(k: usize) -> Best {
        Best {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    /// A score (positive) joins.
    fn push(&mut self, score: f64) {
        if self.k == 0 {
            return;
        }
        // positive floats order as their bits do
        self.heap.push(Reverse(score.to_bits()));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// The score a doc must reach to count (0 until there are K).
    fn bar(&self) -> f64 {
        match self.heap.peek() {
            Some(Reverse(bits)) if self.heap.len() == self.k => f64::from_bits(*bits),
            _ => 0.0,
        }
    }
}

impl Index {
    /// Each window's largest priors, folded once from the segments' groups.
    fn priors(&self) -> Result<&Priors, Corrupt> {
        self.priors
            .get_or_init(|| {
                let mut windows = Vec::new();
                for (seg, _) in self.segments() {
                    let table = seg.priors()?;
                    let groups = table.group_count();
                    let per = WINDOW / PRIOR_GROUP;
                    let mut seg_windows = vec![(0.0f64, 0.0f64); groups.div_ceil(per)];
                    for g in 0..groups {
                        let (plain, cautions) = table.group(g);
                        let w = &mut seg_windows[g / per];
                        w.0 = w.0.max(plain);
                        w.1 = w.1.max(cautions);
                    }
                    windows.push(seg_windows);
                }
                Ok(Priors { windows })
            })
            .as_ref()
            .map_err(|e| *e)
    }

    /// How many of a segment's postings are of live docs (the exhaustive search's count):
    /// only the base has dead docs, and only the ids of the blocks whose range holds one are
    /// decoded.
    /// Term `term`'s skip table in segment `s` (at `offset`), decoded, and its live count:
    /// kept for the searches to come (an index kept open decodes each once).
    fn term_skips(
        &self,
        s: usize,
        term: Term,
        list: &TermList,
        offset: usize,
    ) -> Result<Arc<TermSkips>, Corrupt> {
        let key = (s as u8, term);
        let kept = |cache: &std::sync::MutexGuard<'_, SkipCache>| cache.lists.get(&key).cloned();
        if let Some(found) = kept(&self.skips.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(found);
        }
        let mut skips = Vec::new();
        list.skips(&mut skips)?;
        let live = self.live_count(list, &skips, offset)?;
        let found = Arc::new(TermSkips {
            skips: skips.into(),
            live,
            sat: Mutex::new(None),
        });
        let mut cache = self.skips.lock().unwrap_or_else(|e| e.into_inner());
        if cache.held + found.skips.len() > SKIPS_KEPT {
            *cache = SkipCache::default();
        }
        cache.held += found.skips.len();
        cache.lists.insert(key, found.clone());
        Ok(found)
    }

    fn live_count(&self, list: &TermList, skips: &[Skip], offset: usize) -> Result<u64, Corrupt> {
        if self.deleted_count == 0 || offset != 0 {
            return Ok(list.count as u64);
        }
        let mut block = Block::default();
        let mut dead = 0u64;
        for b in 0..list.block_count() {
            if let Some(s) = skips.get(b) {
                let first = b.checked_sub(1).map_or(0, |p| skips[p].last as usize + 1);
                let hi = (s.last as usize + 1).min(self.base_count);
                if !self.deleted.any_in(first, hi) {
                    continue;
                }
            }
            list.block_ids(skips, b, &mut block)?;
            for &id in &block.ids[..block.len] {
                let id = id as usize;
                if id >= self.base_count {
                    return Err(Corrupt("doc id out of range"));
                }
                dead += u64::from(self.deleted.get(id));
            }
        }
        Ok(list.count as u64 - dead)
    }

    /// The candidates of a request with text whose eligible docs are not none, less those
    /// that cannot reach the top `k` (nor the cautions kept), as [`Index::matching`] would
    /// give them.
    pub(super) fn pruned(
        &self,
        scored: &mut Scored,
        terms: &[Term],
        settings: &Settings,
        k: usize,
    ) -> Result<Vec<Candidate>, Corrupt> {
        // the shares and the total, in term order, as the exhaustive search has them
        // (and each term's list in the base and the delta, read once, its skip table decoded
        // once for the live count and the cursor)
        let mut shares: Vec<(Term, f64)> = Vec::new();
        let mut lists: Vec<[Option<Listed>; 2]> = Vec::new();
        let mut total = 0.0;
        for &term in terms {
            if self.is_stop_term(term)? {
                scored.search.skipped_terms += 1;
                continue;
            }
            let mut df = 0u64;
            let mut found = [None, None];
            for (s, (seg, offset)) in self.segments().enumerate() {
                if let Some(list) = seg.postings(term)? {
                    scored.search.postings += list.count as u64;
                    let skips = self.term_skips(s, term, &list, offset)?;
                    df += skips.live;
                    let kind = text::kind(term);
                    let avg = std::array::from_fn(|f| self.stats.avg[score::slot(f, kind)]);
                    let bounds = skips.sat_bounds(settings, avg);
                    found[s] = Some((list, skips.skips.clone(), bounds));
                }
            }
            let share = score::share(term, df, self.lessons, settings);
            total += share;
            shares.push((term, share));
            lists.push(found);
        }
        scored.similarity = Similarity::Bounded;
        let mut out = Vec::new();
        // hybrid: the cosine's weight (below 1: search_with scores a weight of 1 exhaustively)
        let hybrid = scored
            .semantic
            .map(|s| (s, crate::semantic::effective_weight(s.weight)));
        if total <= 0.0 {
            if let Some((semantic, w)) = hybrid {
                // no lexical similarity anywhere: every eligible doc by its cosine alone
                for id in scored.eligible.ones() {
                    let sim = crate::semantic::fuse(0.0, semantic.cosine(id), w);
                    if sim <= 0.0 || sim < settings.min_similarity {
                        continue;
                    }
                    let (parts, caution) = self.parts(id, sim, scored, settings)?;
                    if parts.score > 0.0 {
                        out.push((parts.score, sim, id, caution));
                    }
                }
            }
            return Ok(out);
        }
        let max_cautions = scored.max_cautions(settings);
        let priors = self.priors()?;
        let cautions_kept = max_cautions > 0;
        // the largest factor besides the prior: recency is at most 1, the tag boost
        let boost = match scored.boosted {
            Some(_) => settings.tag_boost.max(1.0),
            None => 1.0,
        };
        // hybrid: the lexical sum a doc of cosine `c` needs
        let hybrid_need = hybrid.map(|(_, w)| HybridNeed {
            boost,
            min_similarity: settings.min_similarity,
            w,
            per_rest: 1.0 / (1.0 - w),
            total,
        });
        let norms = self.norms(settings.b);
        let ctx = Ctx {
            index: self,
            scored,
            settings,
            shares: &shares,
            total,
            hybrid,
            hybrid_need,
            priors,
            cautions_kept,
            boost,
            floor: settings.min_similarity * total,
            k,
            max_cautions,
        };
        // two workers for a segment of many windows, on an index kept open (one whose norms
        // are kept: its second search on), where a second core is free. A new process pays
        // more for the thread than it gains (their faults on the index's pages contend), and a
        // hybrid search's second core computes the cosines. (The pool's size, not
        // `available_parallelism`, which reads the cgroup's files again at every call: eight
        // system calls a search.)
        #[cfg(test)]
        let serial = SERIAL.with(std::cell::Cell::get);
        #[cfg(not(test))]
        let serial = false;
        let parallel =
            norms.is_some() && hybrid.is_none() && (serial || rayon::current_num_threads() > 1);
        for (s, (seg, offset)) in self.segments().enumerate() {
            let listed: Vec<Option<Listed>> = lists.iter_mut().map(|l| l[s].take()).collect();
            let windows = seg.doc_count().div_ceil(WINDOW);
            let shared = Bars::default();
            let norms = norms.as_deref();
            // a worker of two, taking the windows `claims` gives worker `me`
            let share = |listed: Vec<Option<Listed<'_>>>, claims: &Claims, me: usize| {
                let mut w = Worker::new(&ctx, &shared, s, seg, offset, listed, norms)?;
                w.seed(&out);
                w.windows(claims, me)?;
                Ok::<_, Corrupt>(w.finish())
            };
            let found = match (parallel && windows >= PARALLEL_WINDOWS, serial) {
                // two workers, each with its own cursors and bars, raising the bars they
                // share: this thread from the first window on, a pool thread from the middle
                // one, each taking its windows in order and, its own done, the back half of
                // what the other has left ([`Claims`]). Halves fixed in advance left this
                // thread waiting on the pool thread, which starts tens of microseconds later
                // (windows taken in turns measured 18% slower: a block that spans two windows
                // is decoded by the workers of both; halves have one such boundary, and a
                // steal one more)
                #[cfg(test)]
                (true, true) => {
                    // (tests: worker 0 takes every window, stealing, then worker 1 finds none)
                    let claims = Claims::new(windows);
                    let mut found = share(listed.clone(), &claims, 0)?;
                    found.extend(share(listed, &claims, 1)?);
                    found
                }
                (true, _) => {
                    let claims = Claims::new(windows);
                    let copy = listed.clone();
                    let theirs: Mutex<Option<Result<Vec<Candidate>, Corrupt>>> = Mutex::new(None);
                    let done = std::sync::atomic::AtomicBool::new(false);
                    // on rayon's threads, which a process keeps (and with them their
                    // allocator's heaps): a thread started per search measured slower
                    let mine = rayon::in_place_scope(|scope| {
                        scope.spawn(|_| {
                            let found = share(listed, &claims, 1);
                            *theirs.lock().unwrap_or_else(|e| e.into_inner()) = Some(found);
                            done.store(true, Ordering::Release);
                        });
                        let mine = share(copy, &claims, 0);
                        // the other is in its last window (or not started, its windows
                        // taken): waited for here rather than asleep, which costs a wake-up
                        // as long as a window (but on a pool thread, whose wait runs the other
                        // itself if no one took it)
                        let spin = rayon::current_thread_index().is_none();
                        let start = std::time::Instant::now();
                        while spin && !done.load(Ordering::Acquire) && start.elapsed() < SPIN {
                            std::hint::spin_loop();
                        }
                        mine
                    });
                    let mut mine = mine?;
                    let theirs = theirs.into_inner().unwrap_or_else(|e| e.into_inner());
                    mine.extend(theirs.ok_or(Corrupt("a search's second worker"))??);
                    mine
                }
                (false, _) => {
                    let mut w = Worker::new(&ctx, &shared, s, seg, offset, listed, norms)?;
                    w.seed(&out);
                    for i in 0..windows {
                        w.window(i * WINDOW)?;
                    }
                    w.finish()
                }
            };
            out.extend(found);
        }
        Ok(out)
    }
}

/// Into `viable`, bit `d - lo` for each doc `d` of `lo..hi` (segment ids) that is eligible and
/// whose prior is not below its class's threshold (`plain`, `caution`; a prior that is not a
/// number is kept): a doc below it needs more than the window's terms can give.
fn viable_docs(
    table: &PriorTable<'_>,
    eligible: &Bits,
    offset: usize,
    lo: usize,
    hi: usize,
    (plain, caution): (f64, f64),
    viable: &mut [u64; WINDOW / 64],
) {
    viable.fill(0);
    let mut at = lo;
    while at < hi {
        let end = (at + PRIOR_GROUP).min(hi);
        // a group none of whose docs reaches its threshold is passed over whole (its largest
        // priors are compared as the docs' are: one that is not a number keeps the group)
        let (plain_max, caution_max) = table.group(at / PRIOR_GROUP);
        if plain_max < plain && caution_max < caution {
            at = end;
            continue;
        }
        let mut w = at;
        while w < end {
            let to = (w + 64).min(end);
            let word = eligible.word_at(offset + w);
            let priors = table.prior_bytes(w, to);
            let cautions = table.caution_word(w / 64) & (u64::MAX >> (64 - (to - w)));
            let mut bits = not_below(priors, plain);
            if cautions != 0 && caution.to_bits() != plain.to_bits() {
                bits = bits & !cautions | not_below(priors, caution) & cautions;
            }
            viable[(w - lo) / 64] = bits & word;
            w = to;
        }
        at = end;
    }
}

/// A bit per prior of `priors` (at most 64, 8 little-endian bytes each; lowest first), set
/// when it is not below `threshold` (a prior that is not a number is kept): two priors a
/// compare on x86-64 (a doc at a time, the bits shifted in one by one, this was 5% of a warm
/// search).
#[inline]
fn not_below(priors: &[u8], threshold: f64) -> u64 {
    debug_assert!(priors.len() <= 64 * 8 && priors.len().is_multiple_of(8));
    let prior = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut bits = 0u64;
    // priors compared so far
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_cmpnlt_pd, _mm_movemask_pd, _mm_set1_pd, _mm_set_pd};
        // SAFETY: SSE2 is part of x86-64 itself, and these take no pointers
        unsafe {
            let t = _mm_set1_pd(threshold);
            for pair in priors.chunks_exact(16) {
                let two = _mm_set_pd(prior(&pair[8..]), prior(&pair[..8]));
                // (not less than: true where either is not a number)
                let m = _mm_movemask_pd(_mm_cmpnlt_pd(two, t));
                bits |= (m as u64) << done;
                done += 2;
            }
        }
    }
    for p in priors[done * 8..].chunks_exact(8) {
        let below = prior(p) < threshold;
        bits |= u64::from(!below) << done;
        done += 1;
    }
    bits
}

#[cfg(test)]
thread_local! {
    /// Whether this thread's searches run their two workers one after the other, on this
    /// thread (the first taking every window): for tests, whose steals otherwise depend on
    /// timing.
    static SERIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How long a worker out of windows waits for the other's last one before it sleeps.
const SPIN: std::time::Duration = std::time::Duration::from_micros(500);

/// The windows of a segment two workers share: each has a range of them left, `[next, end)`
/// packed in one word (`next` high), takes its windows from the front of its own and, that
/// done, takes the back half of what the other has left as its own.
struct Claims {
    left: [AtomicU64; 2],
}

impl Claims {
    /// The first half of `windows` for worker 0, the rest for worker 1.
    fn new(windows: usize) -> Claims {
        let half = windows / 2;
        Claims {
            left: [
                AtomicU64::new(Claims::pack(0, half)),
                AtomicU64::new(Claims::pack(half, windows)),
            ],
        }
    }

    fn pack(next: usize, end: usize) -> u64 {
        ((next as u64) << 32) | end as u64
    }

    fn unpack(v: u64) -> (usize, usize) {
        ((v >> 32) as usize, (v & u64::from(u32::MAX)) as usize)
    }

    /// Worker `me`'s next window, if any is left to either.
    fn next(&self, me: usize) -> Option<usize> {
        let own = &self.left[me];
        let taken = own.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            let (next, end) = Claims::unpack(v);
            (next < end).then(|| Claims::pack(next + 1, end))
        });
        if let Ok(v) = taken {
            return Some(Claims::unpack(v).0);
        }
        // the back half of the other's, the middle window first
        let other = &self.left[1 - me];
        let stolen = other.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            let (next, end) = Claims::unpack(v);
            (next < end).then(|| Claims::pack(next, next + (end - next) / 2))
        });
        let (next, end) = Claims::unpack(stolen.ok()?);
        let mid = next + (end - next) / 2;
        // (no one takes from an empty range: this is the only writer now)
        own.store(Claims::pack(mid + 1, end), Ordering::Release);
        Some(mid)
    }
}

/// Windows a segment must have for its search to be shared by two workers (handing half of them
/// to another thread takes tens of microseconds: a few windows are searched sooner).
const PARALLEL_WINDOWS: usize = if cfg!(test) { 2 } else { 8 };

/// What the workers of a pruned search read: the request, its terms and the bounds' inputs.
struct Ctx<'a, 'r> {
    index: &'a Index,
    scored: &'a Scored<'r>,
    settings: &'a Settings,
    /// The request's terms and their shares, in order.
    shares: &'a [(Term, f64)],
    total: f64,
    /// Hybrid: the semantic side and the cosine's weight.
    hybrid: Option<(Semantic<'r>, f64)>,
    hybrid_need: Option<HybridNeed>,
    priors: &'a Priors,
    cautions_kept: bool,
    /// The largest factor besides the prior.
    boost: f64,
    /// The sum `min-similarity` asks for.
    floor: f64,
    k: usize,
    max_cautions: usize,
}

impl Ctx<'_, '_> {
    /// The sum a doc whose prior is at most `prior` needs to score `bar`, or to be similar
    /// enough.
    #[inline]
    fn need(&self, bar: f64, prior: f64) -> f64 {
        (bar * self.total / (prior * self.boost)).max(self.floor)
    }
}

/// The bars the workers of a segment share: the largest of their K-th best scores, and of
/// their cautions' (`f64` bits: positive floats order as their bits do). A worker's bar is
/// the higher of its own and the shared one, a score some K docs reach: pruning below it
/// loses no hit.
#[derive(Debug, Default)]
struct Bars {
    plain: AtomicU64,
    cautions: AtomicU64,
}

/// The bar a plain doc must reach.
#[inline]
fn plain_bar(best: &Best, shared: &Bars) -> f64 {
    best.bar()
        .max(f64::from_bits(shared.plain.load(Ordering::Relaxed)))
}

/// The bar a caution must reach: the top K's, or the cautions kept's if lower.
#[inline]
fn caution_bar(best: &Best, best_cautions: &Best, shared: &Bars) -> f64 {
    let cautions = best_cautions
        .bar()
        .max(f64::from_bits(shared.cautions.load(Ordering::Relaxed)));
    plain_bar(best, shared).min(cautions)
}

/// Doc `id` of similarity `sim` among the candidates, if it is similar enough and scores
/// above 0; its score raises the bars (the worker's and the shared ones).
fn admit(
    ctx: &Ctx,
    shared: &Bars,
    (best, best_cautions): (&mut Best, &mut Best),
    out: &mut Vec<Candidate>,
    id: usize,
    sim: f64,
) -> Result<(), Corrupt> {
    if sim <= 0.0 || sim < ctx.settings.min_similarity {
        return Ok(());
    }
    let (parts, caution) = ctx.index.parts(id, sim, ctx.scored, ctx.settings)?;
    if parts.score > 0.0 {
        best.push(parts.score);
        shared
            .plain
            .fetch_max(best.bar().to_bits(), Ordering::Relaxed);
        if caution {
            best_cautions.push(parts.score);
            shared
                .cautions
                .fetch_max(best_cautions.bar().to_bits(), Ordering::Relaxed);
        }
        out.push((parts.score, sim, id, caution));
    }
    Ok(())
}

/// One worker of a pruned search over a segment: its cursors, one per term, and the buffers
/// of a window.
struct Worker<'c, 'a, 'r> {
    ctx: &'c Ctx<'a, 'r>,
    shared: &'c Bars,
    /// The segment's index among the index's, its first doc id, doc count and priors.
    s: usize,
    offset: usize,
    local: usize,
    table: PriorTable<'a>,
    cursors: Vec<Cursor<'a>>,
    /// Each doc of the window's sum of its essential terms, and whether one reached it.
    acc: Vec<f64>,
    reached: [u64; WINDOW / 64],
    /// Hybrid: whether an essential term reached each doc of the window, and their cosines.
    seen: [u64; WINDOW / 64],
    /// Lexical: the window's docs whose prior leaves them a chance ([`viable_docs`]).
    viable: [u64; WINDOW / 64],
    cosines: Vec<f32>,
    /// A doc's sum, term by term, as the exhaustive search adds it.
    row: Vec<f64>,
    /// The terms by their window bound, smallest first, and the running sums of those bounds.
    order: Vec<usize>,
    sums: Vec<f64>,
    best: Best,
    best_cautions: Best,
    out: Vec<Candidate>,
}

impl<'c, 'a, 'r> Worker<'c, 'a, 'r> {
    /// A worker over segment `s` (`seg`, at `offset`) whose terms' lists (in the request's
    /// order) are `listed`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        ctx: &'c Ctx<'a, 'r>,
        shared: &'c Bars,
        s: usize,
        seg: &'a Segment,
        offset: usize,
        listed: Vec<Option<Listed<'a>>>,
        norms: Option<&'a Norms>,
    ) -> Result<Self, Corrupt> {
        let (index, settings) = (ctx.index, ctx.settings);
        let mut cursors: Vec<Cursor> = Vec::new();
        for (t, (&(term, share), listed)) in ctx.shares.iter().zip(listed).enumerate() {
            let Some((list, skips, bounds)) = listed else {
                continue;
            };
            let kind = text::kind(term);
            let cached = index.field_norms(norms, kind);
            let scorer =
                index.list_scorer(seg, offset, &ctx.scored.eligible, cached, kind, settings)?;
            cursors.push(Cursor::open(t, share, list, skips, bounds, scorer)?);
        }
        Ok(Worker {
            ctx,
            shared,
            s,
            offset,
            local: seg.doc_count(),
            table: seg.priors()?,
            cursors,
            acc: vec![0.0; WINDOW],
            reached: [0; WINDOW / 64],
            seen: [0; WINDOW / 64],
            viable: [0; WINDOW / 64],
            // (a lexical search reads none)
            cosines: match ctx.hybrid {
                Some(_) => vec![0.0; WINDOW],
                None => Vec::new(),
            },
            row: vec![0.0; ctx.shares.len()],
            order: Vec::new(),
            sums: Vec::new(),
            best: Best::new(ctx.k),
            best_cautions: Best::new(ctx.max_cautions),
            out: Vec::new(),
        })
    }

    /// The worker's candidates; its cursors' buffers go back to the thread's spares.
    fn finish(self) -> Vec<Candidate> {
        for c in self.cursors {
            c.close();
        }
        self.out
    }

    /// Raise the worker's bars by the candidates of the segments searched before.
    fn seed(&mut self, candidates: &[Candidate]) {
        for &(score, _, _, caution) in candidates {
            self.best.push(score);
            if caution {
                self.best_cautions.push(score);
            }
        }
    }

    /// Search the windows `claims` gives worker `me`, in the order it gives them.
    fn windows(&mut self, claims: &Claims, me: usize) -> Result<(), Corrupt> {
        let mut at = 0;
        while let Some(w) = claims.next(me) {
            if w < at {
                for c in &mut self.cursors {
                    c.rewind(w * WINDOW);
                }
            }
            self.window(w * WINDOW)?;
            at = w + 1;
        }
        Ok(())
    }

    /// Search the window of segment docs from `lo`: what its docs need, its essential terms'
    /// postings, each doc they reach (the non-essential terms looked up while it can make
    /// it), and, in a hybrid search, the docs whose cosine alone may make it.
    fn window(&mut self, lo: usize) -> Result<(), Corrupt> {
        let ctx = self.ctx;
        let (scored, total, hybrid) = (ctx.scored, ctx.total, ctx.hybrid);
        let (hybrid_need, priors, cautions_kept) =
            (&ctx.hybrid_need, ctx.priors, ctx.cautions_kept);
        let (s, offset, table, local, shared) =
            (self.s, self.offset, self.table, self.local, self.shared);
        let Worker {
            cursors,
            acc,
            reached,
            seen,
            viable,
            cosines,
            row,
            order,
            sums,
            best,
            best_cautions,
            out,
            ..
        } = self;
        // without cautions kept, a caution is a plain doc
        let caution_at = |d: usize| cautions_kept && table.caution(d);
        let need = |bar: f64, prior: f64| ctx.need(bar, prior);
        let hi = (lo + WINDOW).min(local);
        let (lo32, hi32) = (lo as u32, hi as u32);
        // hybrid: the bars of plain docs and cautions as the window began
        let mut bars = (0.0, 0.0);
        // the largest prior of the window's plain docs and of its cautions: a caution
        // makes it into the top K or among the cautions kept, whose bar is lower, but
        // its count factor (failures over successes) keeps its prior small
        let window_need = match hybrid {
            None => {
                let (plain, caution) = priors.windows[s][lo / WINDOW];
                // without cautions kept, a caution is a plain doc
                let (plain, caution) = match cautions_kept {
                    true => (plain, caution),
                    false => (plain.max(caution), 0.0),
                };
                if plain <= 0.0 && caution <= 0.0 {
                    // every score here is 0: nothing matches
                    return Ok(());
                }
                let class_need = |bar: f64, prior: f64| match prior > 0.0 {
                    true => need(bar, prior),
                    false => f64::INFINITY,
                };
                class_need(plain_bar(best, shared), plain).min(class_need(
                    caution_bar(best, best_cautions, shared),
                    caution,
                ))
            }
            // the least of its docs' needs: a doc's cosine lowers its need, to 0 or
            // below for a doc that can make it without any lexical match
            Some((semantic, _)) => {
                bars = (
                    plain_bar(best, shared),
                    caution_bar(best, best_cautions, shared),
                );
                semantic.window(offset + lo..offset + hi, &mut cosines[..hi - lo]);
                let least = hybrid_need.as_ref().expect("hybrid").least(
                    &table,
                    &scored.eligible,
                    cautions_kept,
                    offset,
                    lo..hi,
                    &cosines[..hi - lo],
                    bars,
                );
                if least == f64::INFINITY {
                    return Ok(());
                }
                least
            }
        };
        let mut all = 0.0;
        for c in cursors.iter_mut() {
            c.window = c.window_bound(lo32, hi32);
            all += c.window;
        }
        if all * (1.0 + SLACK) < window_need {
            return Ok(());
        }
        // lexical: the docs whose prior leaves them a chance at all (a doc that needs more than
        // every term's bound here together cannot make it, whatever its terms), so that the
        // essential terms score those alone
        let viable = match hybrid {
            None => {
                let threshold = |bar: f64| match bar > 0.0 {
                    // need(bar, prior) > all × (1 + slack) for any prior below this (kept
                    // lower by far more than the rounding of either side)
                    true => bar * total / (ctx.boost * all * (1.0 + SLACK)) * (1.0 - SLACK),
                    false => 0.0,
                };
                let plain = threshold(plain_bar(best, shared));
                let caution = match cautions_kept {
                    true => threshold(caution_bar(best, best_cautions, shared)),
                    false => plain,
                };
                viable_docs(
                    &table,
                    &scored.eligible,
                    offset,
                    lo,
                    hi,
                    (plain, caution),
                    viable,
                );
                Some(&*viable)
            }
            Some(_) => None,
        };
        // the non-essential terms: the smallest bounds adding up to less than needed
        order.clear();
        order.extend((0..cursors.len()).filter(|&i| cursors[i].window > 0.0));
        order.sort_by(|&a, &b| cursors[a].window.total_cmp(&cursors[b].window));
        sums.clear();
        let mut sum = 0.0;
        for &i in order.iter() {
            sum += cursors[i].window;
            sums.push(sum);
        }
        let lazy = sums
            .iter()
            .take_while(|&&s| s * (1.0 + SLACK) < window_need)
            .count();
        for &i in &order[lazy..] {
            let c = &mut cursors[i];
            match viable {
                Some(viable) => c.score_window_viable(lo32, hi32, viable)?,
                None => c.score_window(lo32, hi32)?,
            }
            for &(id, v) in &c.adds {
                let j = (id - lo32) as usize;
                acc[j] += v;
                reached[j / 64] |= 1 << (j % 64);
            }
        }
        if hybrid.is_some() {
            *seen = *reached;
        }
        for (word, bits) in reached.iter_mut().enumerate() {
            let mut bits = std::mem::take(bits);
            while bits != 0 {
                let j = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let mut a = std::mem::take(&mut acc[j]);
                let d = lo32 + j as u32;
                let id = offset + d as usize;
                let bar = if caution_at(d as usize) {
                    caution_bar(best, best_cautions, shared)
                } else {
                    plain_bar(best, shared)
                };
                let prior = table.prior(d as usize);
                if prior <= 0.0 {
                    continue;
                }
                let needed = match hybrid_need {
                    None => need(bar, prior),
                    // an ineligible doc's saturations are 0 (or, under settings
                    // beyond reason, not a number: its score is not one either, but a
                    // hybrid similarity of 0 lexically is its cosine's)
                    Some(_) if !scored.eligible.get(id) => continue,
                    // with the current bar (it may have risen since the window began)
                    Some(h) => h.of(bar, prior, cosines[j]),
                };
                // the non-essential terms, largest bound first, while the doc can make it
                let mut short = false;
                for x in (0..lazy).rev() {
                    if (a + sums[x]) * (1.0 + SLACK) < needed {
                        short = true;
                        break;
                    }
                    let c = &mut cursors[order[x]];
                    if let Some(s) = c.sat_at(d)? {
                        let v = c.share * s;
                        a += v;
                        row[c.t] = v;
                    }
                }
                if short || a * (1.0 + SLACK) < needed {
                    row.fill(0.0);
                    continue;
                }
                // in full: the request's terms in order, as the exhaustive search sums
                for &i in &order[lazy..] {
                    let c = &mut cursors[i];
                    if let Some(v) = c.added(d) {
                        row[c.t] = v;
                    }
                }
                let mut exact = 0.0;
                for v in row.iter_mut() {
                    exact += std::mem::take(v);
                }
                let sim = match hybrid {
                    None if exact <= 0.0 => continue,
                    None => exact / total,
                    Some((_, w)) => {
                        let lexical = if exact > 0.0 { exact / total } else { 0.0 };
                        crate::semantic::fuse(lexical, f64::from(cosines[j]), w)
                    }
                };
                admit(ctx, shared, (best, best_cautions), out, id, sim)?;
            }
        }
        // hybrid: the docs no term reached whose cosine alone may make it (their
        // lexical sum is 0: a need at or below 0 left every term essential)
        let (Some((_, w)), Some(h)) = (hybrid, hybrid_need) else {
            return Ok(());
        };
        if window_need > 0.0 {
            return Ok(());
        }
        for j in 0..(hi - lo) {
            if seen[j / 64] & (1 << (j % 64)) != 0 {
                continue;
            }
            let d = lo + j;
            let id = offset + d;
            // its need as the window began
            let prior = table.prior(d);
            if prior <= 0.0 || !scored.eligible.get(id) {
                continue;
            }
            let bar = match caution_at(d) {
                true => bars.1,
                false => bars.0,
            };
            if h.of(bar, prior, cosines[j]) > 0.0 {
                continue;
            }
            let sim = crate::semantic::fuse(0.0, f64::from(cosines[j]), w);
            admit(ctx, shared, (best, best_cautions), out, id, sim)?;
        }

        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::InferredTags;
    use crate::retrieve::record::Record;
    use proptest::prelude::*;

    const WORDS: [&str; 14] = [
        "git", "merge", "rebase", "cache", "lint", "test", "deploy", "docker", "rust", "panic",
        "timeout", "retry", "flaky", "ci",
    ];
    const TAGS: [&str; 4] = ["ci", "git", "rust", "docker build"];

    /// A small deterministic generator (splitmix64).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn chance(&mut self, percent: usize) -> bool {
            self.below(100) < percent
        }
        /// `least` to `least + more` words, skewed towards the first ones (long lists for them, short for the rest).
        fn words(&mut self, least: usize, more: usize) -> String {
            let n = least + self.below(more + 1);
            (0..n)
                .map(|_| {
                    let a = self.below(WORDS.len());
                    WORDS[self.below(a + 1)]
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
    }

    const DAY_S: i64 = 86_400;
    const NOW_S: i64 = 1_800_000_000;

    fn record(rng: &mut Rng, path: &str, slugs: usize) -> Record {
        let slug = path.trim_end_matches(".md").replace('/', "-");
        let body_len = [0, 3, 20, 60, 250][rng.below(5)];
        let lesson = LessonFields {
            slug: slug.clone(),
            title: rng.words(1, 2),
            description: rng.words(0, 5),
            tags: (0..rng.below(3))
                .map(|_| TAGS[rng.below(TAGS.len())].to_string())
                .collect(),
            targets: if rng.chance(10) {
                vec![TargetGlobs {
                    operator: None,
                    role: Some(["rev*", "dev"][rng.below(2)].to_string()),
                    skill: None,
                }]
            } else {
                Vec::new()
            },
            outcome: crate::lesson::Outcome::Success,
            confidence: [0.0, 0.3, 0.5, 0.9, 1.0][rng.below(5)],
            successes: rng.below(4) as u64,
            failures: rng.below(4) as u64,
            supersedes: if rng.chance(5) {
                vec![format!("l{}", rng.below(slugs))]
            } else {
                Vec::new()
            },
            expires_ns: rng
                .chance(10)
                .then(|| (NOW_S + [-DAY_S, DAY_S][rng.below(2)]) * 1_000_000_000),
            conflicts_with: Vec::new(),
            gist: String::new(),
            body: rng.words(body_len, body_len / 2),
            errors: if rng.chance(3) {
                vec!["S001".to_string()]
            } else {
                Vec::new()
            },
            ledger_at_s: rng
                .chance(70)
                .then(|| NOW_S - rng.below(900) as i64 * DAY_S),
            ledger_conflicts: Vec::new(),
        };
        Record {
            path: path.to_string(),
            stat: FileStat::default(),
            lesson: Some(lesson),
        }
    }

    /// A bank of `n` lessons, and with `delta`, a delta that changes some and adds others.
    fn bank(seed: u64, n: usize, delta: bool) -> Index {
        let mut rng = Rng(seed);
        let records: Vec<Record> = (0..n)
            .map(|i| record(&mut rng, &format!("l{i:04}.md"), n))
            .collect();
        let index = Index::build(records.clone(), Header::default());
        if !delta {
            return index;
        }
        // base ids are path order, which is the order the records were made in
        let mut deleted = Vec::new();
        let mut changed = Vec::new();
        for (id, r) in records.iter().enumerate() {
            if rng.chance(8) {
                deleted.push(id as u32);
                if rng.chance(60) {
                    changed.push(record(&mut rng, &r.path, n));
                }
            }
        }
        for i in 0..rng.below(40) {
            changed.push(record(&mut rng, &format!("new{i:03}.md"), n));
        }
        changed.sort_by(|a, b| path_order(&a.path, &b.path));
        let header = index.base.header;
        let patch = Patch {
            deleted,
            restat: Vec::new(),
        };
        let bytes = segment::encode(Kind::Delta, header, changed.clone(), &patch);
        let delta = Segment::parse(bytes).unwrap();
        let mut out = Index::new(index.base.clone(), Some(Arc::new(delta))).unwrap();
        let fields = records
            .iter()
            .chain(&changed)
            .map(|r| r.lesson.clone())
            .collect();
        out.fields = Fields::Memory(fields);
        out
    }

    fn request(rng: &mut Rng) -> (Request, Settings) {
        let mut text = rng.words(1, 5);
        if rng.chance(20) {
            text.push_str(" zyxwv");
        }
        let req = Request {
            text,
            tags: if rng.chance(20) {
                vec![TAGS[rng.below(TAGS.len())].to_string()]
            } else {
                Vec::new()
            },
            role: rng.chance(30).then(|| "reviewer".to_string()),
            k: Some([1, 2, 3, 5, 10, 40][rng.below(6)]),
            include_expired: rng.chance(30),
            inferred_tags: Some(
                [
                    InferredTags::Ignore,
                    InferredTags::Boost,
                    InferredTags::Gate,
                ][rng.below(3)],
            ),
            now: jiff::Timestamp::from_second(NOW_S).unwrap(),
            ..Request::default()
        };
        let settings = Settings {
            max_cautions: rng.below(3),
            min_similarity: [0.0, 0.05, 0.2][rng.below(3)],
            tag_boost: [1.0, 1.5, 0.5][rng.below(3)],
            b: [0.0, 0.75, 1.0][rng.below(3)],
            word_weight: [0.6, 1.0, -0.5][rng.below(3)],
            ..Settings::default()
        };
        (req, settings)
    }

    /// Everything a search says (`{:?}` writes a float so that it reads back to the same bits).
    fn said(s: &Search) -> String {
        let hits: Vec<_> = s
            .hits
            .iter()
            .map(|h| {
                (
                    &h.slug,
                    &h.path,
                    format!("{:?}", h.score),
                    h.kept_as_caution,
                )
            })
            .collect();
        format!(
            "{hits:?} {} {} {} {:?}",
            s.eligible, s.postings, s.skipped_terms, s.stale
        )
    }

    /// A prior, as the priors section holds them: mostly in `[0, 1]`, at times 0, not a
    /// number, negative or infinite.
    fn any_prior() -> impl Strategy<Value = f64> {
        prop_oneof![
            6 => 0.0f64..=1.0,
            1 => Just(0.0),
            1 => Just(f64::NAN),
            1 => Just(-0.0),
            1 => proptest::num::f64::ANY,
        ]
    }

    proptest! {
        #[test]
        fn priors_not_below_a_threshold_are_those_compared_one_by_one(
            priors in proptest::collection::vec(any_prior(), 0..=64),
            threshold in any_prior(),
            equal in proptest::bool::weighted(0.2),
        ) {
            // at times a threshold equal to one of the priors (not below it: kept)
            let threshold = match (equal, priors.first()) {
                (true, Some(&p)) => p,
                _ => threshold,
            };
            let bytes: Vec<u8> = priors.iter().flat_map(|p| p.to_le_bytes()).collect();
            let expected = priors
                .iter()
                .enumerate()
                .fold(0u64, |bits, (k, &p)| {
                    let below = p < threshold;
                    bits | u64::from(!below) << k
                });
            prop_assert_eq!(not_below(&bytes, threshold), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases(48)))]

        #[test]
        fn the_pruned_search_is_the_exhaustive_one(
            seed in any::<u64>(),
            n in 1usize..700,
            delta in proptest::bool::weighted(0.4),
        ) {
            let index = bank(seed, n, delta);
            let mut rng = Rng(seed ^ 0x5555);
            for _ in 0..12 {
                let (req, settings) = request(&mut rng);
                let pruned = index.search_with(&req, &settings, false, None).unwrap();
                let exhaustive = index.search_with(&req, &settings, true, None).unwrap();
                prop_assert_eq!(said(&pruned), said(&exhaustive), "{:?} {:?}", req, settings);
            }
        }

        #[test]
        fn a_search_scores_alike_whether_the_index_keeps_its_norms_or_not(
            seed in any::<u64>(),
            n in 1usize..700,
            delta in proptest::bool::weighted(0.4),
        ) {
            let mut rng = Rng(seed ^ 0x3333);
            for _ in 0..4 {
                let (req, mut settings) = request(&mut rng);
                // a weight of 0 and one beyond reason: a field a posting has no count in
                // adds nothing either way, not 0 × ∞
                settings.field_weights = [
                    Settings::default().field_weights,
                    [0.0, 2.0, 1.0, 1.0],
                    [f64::INFINITY, 1.0, 0.0, 1.0],
                ][rng.below(3)];
                // an index's first search computes the norms it reads, the next ones read
                // those it keeps (branch-free)
                let index = bank(seed, n, delta);
                let first = index.search_with(&req, &settings, true, None).unwrap();
                let kept = index.search_with(&req, &settings, true, None).unwrap();
                prop_assert_eq!(said(&first), said(&kept), "{:?} {:?}", req, settings);
                let pruned = index.search_with(&req, &settings, false, None).unwrap();
                prop_assert_eq!(said(&pruned), said(&kept), "{:?} {:?}", req, settings);
            }
        }

        #[test]
        fn the_pruned_hybrid_search_is_the_exhaustive_one(
            seed in any::<u64>(),
            n in 1usize..700,
            delta in proptest::bool::weighted(0.4),
        ) {
            let index = bank(seed, n, delta);
            let mut rng = Rng(seed ^ 0xAAAA);
            for _ in 0..8 {
                let (req, settings) = request(&mut rng);
                // cosines spread as a model's are (some docs without a vector: 0), over
                // fewer docs than the index has at times
                let spread = [0.1, 0.5, 1.0][rng.below(3)];
                let cosines: Vec<f32> = (0..index.n - rng.below(3).min(index.n))
                    .map(|_| match rng.below(10) {
                        0 => 0.0,
                        _ => ((rng.below(2001) as f32 / 1000.0) - 1.0) * spread,
                    })
                    .collect();
                let weight = [0.0, 0.2, 0.5, 0.8, 0.99, 1.0][rng.below(6)];
                let semantic = Semantic::new(&cosines, weight);
                let pruned = index.search_hybrid(&req, &settings, semantic).unwrap();
                let exhaustive = index.search_with(&req, &settings, true, Some(semantic)).unwrap();
                let semantic_parts = |s: &Search| -> Vec<String> {
                    s.hits.iter().map(|h| format!("{:?}", h.score.semantic)).collect()
                };
                prop_assert_eq!(said(&pruned), said(&exhaustive), "{:?} {:?} w={}", req, settings, weight);
                prop_assert_eq!(semantic_parts(&pruned), semantic_parts(&exhaustive));
            }
        }
    }

    proptest! {
        #[test]
        fn two_workers_take_every_window_once_whatever_the_turns(
            windows in 0usize..200,
            turns in proptest::collection::vec(proptest::bool::ANY, 0..400),
        ) {
            let claims = Claims::new(windows);
            let mut taken = vec![0u32; windows];
            let mut turns = turns.into_iter();
            let mut out = [false, false];
            while !(out[0] && out[1]) {
                // the turns given, then worker 0's, then worker 1's
                let me = match turns.next() {
                    Some(t) => usize::from(t),
                    None => usize::from(out[0]),
                };
                match claims.next(me) {
                    Some(w) => {
                        prop_assert!(!out[me], "a worker out of windows found one");
                        prop_assert!(w < windows);
                        taken[w] += 1;
                    }
                    None => out[me] = true,
                }
            }
            prop_assert!(taken.iter().all(|&n| n == 1), "{:?}", taken);
            prop_assert_eq!(claims.next(0), None);
            prop_assert_eq!(claims.next(1), None);
        }

        #[test]
        fn a_search_shared_by_two_workers_is_the_exhaustive_one(
            seed in any::<u64>(),
            n in 300usize..1200,
            delta in proptest::bool::weighted(0.3),
        ) {
            // one worker taking every window (the steals sending its cursors back), then
            // the other finding none
            let index = bank(seed, n, delta);
            let mut rng = Rng(seed ^ 0x7777);
            SERIAL.with(|s| s.set(true));
            for _ in 0..6 {
                let (req, settings) = request(&mut rng);
                // (the first search keeps the norms that the shared search needs)
                let exhaustive = index.search_with(&req, &settings, true, None).unwrap();
                let shared = index.search_with(&req, &settings, false, None).unwrap();
                prop_assert_eq!(said(&shared), said(&exhaustive), "{:?} {:?}", req, settings);
            }
            SERIAL.with(|s| s.set(false));
        }
    }

    #[test]
    fn a_search_from_a_pool_thread_is_shared_and_the_exhaustive_one() {
        // the caller a thread of a two-thread pool (an embedder's `par_iter`): its second
        // worker is spawned into its own pool, and its wait may run that worker itself
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let index = bank(3, 1500, false);
        let mut rng = Rng(0x1234);
        for _ in 0..8 {
            let (req, settings) = request(&mut rng);
            let exhaustive = index.search_with(&req, &settings, true, None).unwrap();
            let shared = pool.install(|| index.search_with(&req, &settings, false, None).unwrap());
            assert_eq!(said(&shared), said(&exhaustive), "{req:?} {settings:?}");
        }
    }

    #[test]
    fn a_hybrid_search_scores_fewer_docs_than_are_eligible() {
        let index = bank(7, 3000, false);
        let req = Request {
            text: "git merge rebase cache".into(),
            k: Some(3),
            now: jiff::Timestamp::from_second(NOW_S).unwrap(),
            ..Request::default()
        };
        let settings = Settings::default();
        let mut rng = Rng(11);
        let cosines: Vec<f32> = (0..index.n)
            .map(|_| rng.below(600) as f32 / 1000.0)
            .collect();
        let semantic = Semantic::new(&cosines, 0.5);
        let (mut scored, terms) = index.gated(&req, &settings).unwrap();
        scored.semantic = Some(semantic);
        let pruned = index
            .pruned(&mut scored, &terms, &settings, 3)
            .unwrap()
            .len();
        let eligible = scored.search.eligible as usize;
        assert!(pruned * 4 < eligible, "{pruned} scored of {eligible}");
        assert_eq!(
            said(&index.search_hybrid(&req, &settings, semantic).unwrap()),
            said(
                &index
                    .search_with(&req, &settings, true, Some(semantic))
                    .unwrap()
            )
        );
    }

    #[test]
    fn a_search_scores_fewer_docs_than_match() {
        let index = bank(7, 3000, false);
        let req = Request {
            text: "git merge rebase cache".into(),
            k: Some(3),
            now: jiff::Timestamp::from_second(NOW_S).unwrap(),
            ..Request::default()
        };
        let settings = Settings::default();
        let all = index.score_all(&req, &settings).unwrap();
        let matching = index.matching(&all, &settings).unwrap().len();
        let (mut scored, terms) = index.gated(&req, &settings).unwrap();
        let pruned = index
            .pruned(&mut scored, &terms, &settings, 3)
            .unwrap()
            .len();
        assert!(pruned * 4 < matching, "{pruned} scored of {matching}");
        assert_eq!(
            said(&index.search(&req, &settings).unwrap()),
            said(&index.search_with(&req, &settings, true, None).unwrap())
        );
    }

    #[test]
    fn any_in_sees_the_range_only() {
        let mut bits = Bits::new(200);
        bits.set(64);
        bits.set(130);
        assert!(bits.any_in(0, 65) && bits.any_in(64, 65) && bits.any_in(100, 131));
        assert!(!bits.any_in(0, 64) && !bits.any_in(65, 130) && !bits.any_in(131, 200));
        assert!(!bits.any_in(5, 5));
    }
}
