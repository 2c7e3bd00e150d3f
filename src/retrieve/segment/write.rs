//! Writing a segment: records analysed into docs and posting lists, laid out as the format
//! in [`super`] says.

use std::collections::HashMap;

use rayon::prelude::*;

use super::*;
use crate::retrieve::codec::{self, ListWriter, Tf, Writer};
use crate::retrieve::record::Record;

/// A record's doc and its terms with their counts per field, handed to `f` (the terms are
/// the thread's [`Counter`]'s: `f` analyses no other record).
fn analyse<R>(r: &Record, f: impl FnOnce(Doc, &[(Term, Tf)]) -> R) -> R {
    let Some(l) = &r.lesson else {
        let doc = Doc {
            path: r.path.clone(),
            stat: r.stat,
            lesson: None,
        };
        return f(doc, &[]);
    };
    COUNTER.with_borrow_mut(|counts| {
        counts.clear();
        // a field's terms gathered, then counted: with the counting in the tokeniser's
        // callback, the callback was not inlined and cost a call per term
        let mut buf = std::mem::take(&mut counts.buf);
        let mut add = |field: usize, s: &str| {
            buf.clear();
            text::push_terms(s, &mut buf);
            for &t in &buf {
                counts.add(t, field);
            }
        };
        add(0, &l.title);
        add(1, &l.description);
        for tag in &l.tags {
            add(2, tag);
        }
        add(3, &l.body);
        counts.buf = buf;
        // the lengths from the counts: a sum per distinct term, not per term counted, and by
        // arithmetic, not by a branch on each term's kind
        let (mut words, mut trigrams) = ([0u32; 4], [0u32; 4]);
        for (t, tf) in counts.terms() {
            let trigram = u32::from(text::kind(*t) == text::Kind::Trigram);
            for f in 0..4 {
                words[f] += tf[f] * (1 - trigram);
                trigrams[f] += tf[f] * trigram;
            }
        }
        let mut lens = [0u32; LEN_SLOTS];
        for f in 0..4 {
            lens[score::slot(f, text::Kind::Word)] = words[f];
            lens[score::slot(f, text::Kind::Trigram)] = trigrams[f];
        }
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
                errors: l.errors.clone(),
                ledger_at_s: l.ledger_at_s,
            }),
        };
        f(doc, counts.terms())
    })
}

thread_local! {
    /// Each thread's counter, kept from record to record.
    static COUNTER: std::cell::RefCell<Counter> = std::cell::RefCell::new(Counter::new());
}

/// A doc's terms counted per field, in the order first seen: an open-addressing table
/// (linear probing) kept from doc to doc and cleared slot by slot. A hash map made per doc
/// cost more in its allocation, its control bytes and its iteration than in counting (in
/// the bench's bank, about 900 terms are counted per doc, 400 of them distinct).
///
/// Whether a term is new is as likely as not, so [`Counter::add`] does not branch on it:
/// it writes a new term's entry either way and counts it only when it is new.
struct Counter {
    /// The term at each slot ([`EMPTY`] where none: [`Counter::add`] keeps that term apart).
    keys: Vec<Term>,
    /// Where the slot's term is in `terms`.
    at: Vec<u32>,
    /// The terms counted (the first `len`) and room for one more, and the slot of each.
    terms: Vec<(Term, Tf)>,
    taken: Vec<u32>,
    len: usize,
    /// A field's terms, before they are counted.
    buf: Vec<Term>,
    /// Where the [`EMPTY`] term is in `terms`, when counted.
    empty_at: Option<u32>,
    /// 64 − log2 of the table's size: a hash's top bits are its slot.
    shift: u32,
}

/// The key of a free slot. No term the tokeniser makes is 0 (a trigram of three NUL
/// characters), but a term that is 0 is counted all the same, outside the table.
const EMPTY: Term = 0;

impl Counter {
    /// Slots to start with (at most half of them are ever taken): room for 5 times as many
    /// distinct terms as a doc of the bench's bank has, so that few probes go past one slot.
    const MIN_SLOTS: usize = 4096;
    /// A table grown past this (by a huge doc) is made small again for the next doc.
    const KEEP_SLOTS: usize = 1 << 16;
    /// Nor is a field's buffer kept past this many terms.
    const KEEP_TERMS: usize = 1 << 16;

    fn new() -> Counter {
        Counter::with_slots(Counter::MIN_SLOTS)
    }

    fn with_slots(slots: usize) -> Counter {
        debug_assert!(slots.is_power_of_two());
        // room for every term a table of `slots` takes, and one more
        let room = slots / 2 + 1;
        Counter {
            keys: vec![EMPTY; slots],
            at: vec![0; slots],
            terms: vec![(EMPTY, [0; 4]); room],
            taken: vec![0; room],
            len: 0,
            buf: Vec::new(),
            empty_at: None,
            shift: 64 - slots.trailing_zeros(),
        }
    }

    fn clear(&mut self) {
        if self.keys.len() > Counter::KEEP_SLOTS || self.buf.capacity() > Counter::KEEP_TERMS {
            *self = Counter::new();
            return;
        }
        for &s in &self.taken[..self.len] {
            self.keys[s as usize] = EMPTY;
        }
        self.len = 0;
        self.empty_at = None;
    }

    fn slot(&self, t: Term) -> usize {
        (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Count `t` once in `field`.
    #[inline(always)]
    fn add(&mut self, t: Term, field: usize) {
        if t == EMPTY {
            return self.add_empty(field);
        }
        let mask = self.keys.len() - 1;
        let mut s = self.slot(t);
        let mut k = self.keys[s];
        // one test, not two: which of the two ends the probe is the unpredictable part
        while (k != t) & (k != EMPTY) {
            s = (s + 1) & mask;
            k = self.keys[s];
        }
        let new = k == EMPTY;
        let n = self.len;
        // entry `n` is free: written whether or not `t` is new, kept only when it is
        let at = std::hint::select_unpredictable(new, n, self.at[s] as usize);
        self.keys[s] = t;
        self.at[s] = at as u32;
        self.taken[n] = s as u32;
        self.terms[n] = (t, [0; 4]);
        self.terms[at].1[field] += 1;
        self.len = n + usize::from(new);
        if self.len * 2 > self.keys.len() {
            self.grow();
        }
    }

    #[cold]
    #[inline(never)]
    fn add_empty(&mut self, field: usize) {
        let at = match self.empty_at {
            Some(at) => at as usize,
            None => {
                let at = self.len;
                self.terms[at] = (EMPTY, [0; 4]);
                // no slot of the table: clearing it again is harmless
                self.taken[at] = 0;
                self.len += 1;
                if self.len * 2 > self.keys.len() {
                    self.grow();
                }
                self.empty_at = Some(at as u32);
                at
            }
        };
        self.terms[at].1[field] += 1;
    }

    /// Double the table, its terms placed again.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut bigger = Counter::with_slots(self.keys.len() * 2);
        let mask = bigger.keys.len() - 1;
        for (i, &(t, tf)) in self.terms[..self.len].iter().enumerate() {
            bigger.terms[i] = (t, tf);
            if t == EMPTY {
                continue;
            }
            let mut s = bigger.slot(t);
            while bigger.keys[s] != EMPTY {
                s = (s + 1) & mask;
            }
            bigger.keys[s] = t;
            bigger.at[s] = i as u32;
            bigger.taken[i] = s as u32;
        }
        bigger.len = self.len;
        bigger.buf = std::mem::take(&mut self.buf);
        bigger.empty_at = self.empty_at;
        *self = bigger;
    }

    /// The terms counted since the last clear, in the order first seen.
    fn terms(&self) -> &[(Term, Tf)] {
        &self.terms[..self.len]
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
pub(super) fn write_segment(
    kind: Kind,
    header: Header,
    patch: &Patch,
    docs: &[Doc],
    lists: &[(Term, u32, Vec<u8>)],
) -> Vec<u8> {
    let n = docs.len();
    let sec = |s: Sec| s as usize;
    let new_secs = || -> Vec<Writer> { (0..SECTIONS).map(|_| Writer::default()).collect() };
    let lesson_docs: Vec<(u32, &LessonMeta, &str)> = docs
        .iter()
        .enumerate()
        .filter_map(|(id, d)| d.lesson.as_ref().map(|l| (id as u32, l, d.path.as_str())))
        .collect();

    // four tasks write the sections, each its own (the rest of each task's vector stays
    // empty)
    let fixed = || {
        let mut secs = new_secs();
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
        let mut priors: Vec<(f64, bool)> = Vec::with_capacity(n);
        for (id, d) in docs.iter().enumerate() {
            let w = &mut secs[sec(Sec::Stat)];
            w.u64(d.stat.size);
            w.i64(d.stat.ctime_ns);
            w.u64(d.stat.ino);
            w.u64(d.stat.hash);
            let flag = |b: bool, f: u8| if b { f } else { 0 };
            let mut flags = flag(d.stat.settled, F_SETTLED);
            let (mut confidence, mut successes, mut failures, mut outcome) = (0.0, 0, 0, 0);
            let mut ledger_at = 0u64;
            if let Some(l) = &d.lesson {
                lessons += 1;
                flags |= F_LESSON
                    | flag(!l.tag_keys.is_empty(), F_TAGS)
                    | flag(!l.targets.is_empty(), F_TARGETS)
                    | flag(!l.supersedes.is_empty(), F_SUPERSEDES)
                    | flag(l.expires_ns.is_some(), F_EXPIRES)
                    | flag(!l.errors.is_empty(), F_HELD);
                confidence = l.confidence;
                successes = l.successes;
                failures = l.failures;
                outcome = outcome_byte(l.outcome);
                // 48 bits of seconds; 0 (and any time before 1970 or past the year 8 million)
                // is none
                ledger_at = l
                    .ledger_at_s
                    .filter(|&s| s > 0 && s < 1 << 48)
                    .map_or(0, |s| s as u64);
                for (slot, &len) in l.lens.iter().enumerate() {
                    lens[slot * n + id] = len;
                    totals[slot] += u64::from(len);
                }
            }
            priors.push((
                score::confidence(confidence) * score::count_factor(successes, failures),
                failures > successes,
            ));
            let w = &mut secs[sec(Sec::Rank)];
            w.i64(d.stat.mtime_ns);
            w.f64(confidence);
            w.u64(successes);
            w.u64(failures);
            w.u8(flags);
            w.u8(outcome);
            w.buf.extend_from_slice(&ledger_at.to_le_bytes()[..6]);
        }
        let w = &mut secs[sec(Sec::Priors)];
        for group in priors.chunks(PRIOR_GROUP) {
            let (mut plain, mut cautions) = (0.0f64, 0.0f64);
            for &(p, caution) in group {
                match caution {
                    true => cautions = cautions.max(p),
                    false => plain = plain.max(p),
                }
            }
            w.f64(plain);
            w.f64(cautions);
        }
        for &(p, _) in &priors {
            w.f64(p);
        }
        w.buf.extend_from_slice(&bitset_bytes(n, |id| priors[id].1));
        let w = &mut secs[sec(Sec::Lens)];
        for len in lens {
            w.u32(len);
        }
        (secs, totals, lessons)
    };

    let named = || {
        let mut secs = new_secs();
        secs[sec(Sec::Paths)] = column(docs.iter().map(|d| d.path.as_str()), n);
        let mut path_index: Vec<(u64, u32)> = docs
            .iter()
            .enumerate()
            .map(|(id, d)| (path_hash(&d.path), id as u32))
            .collect();
        path_index.sort_unstable();
        let w = &mut secs[sec(Sec::PathIndex)];
        w.buf.reserve(path_index.len() * PATH_INDEX_ENTRY);
        for (h, id) in path_index {
            let stat = &docs[id as usize].stat;
            w.u64(h);
            w.u32(id);
            w.u32(u32::from(stat.settled));
            w.u64(stat.size);
            w.i64(stat.mtime_ns);
            w.i64(stat.ctime_ns);
            w.u64(stat.ino);
        }
        secs[sec(Sec::Titles)] = column(
            docs.iter()
                .map(|d| d.lesson.as_ref().map_or("", |l| l.title.as_str())),
            n,
        );

        secs[sec(Sec::Lessons)].buf = bitset_bytes(n, |id| docs[id].lesson.is_some());
        secs
    };

    // slugs, supersession, targets, expiry, tags
    let gated = || {
        let mut secs = new_secs();
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
        for &(h, id) in &slug_index {
            secs[sec(Sec::SlugIndex)].u64(h);
            secs[sec(Sec::SlugIndex)].u32(id);
        }
        let supersedes: Vec<(u32, Vec<&str>)> = lesson_docs
            .iter()
            .filter(|(_, l, _)| !l.supersedes.is_empty())
            .map(|(id, l, _)| (*id, l.supersedes.iter().map(String::as_str).collect()))
            .collect();
        secs[sec(Sec::Supersedes)].buf = doc_strings(&supersedes, true);
        let held: Vec<(u32, Vec<&str>)> = lesson_docs
            .iter()
            .filter(|(_, l, _)| !l.errors.is_empty())
            .map(|(id, l, _)| (*id, l.errors.iter().map(String::as_str).collect()))
            .collect();
        secs[sec(Sec::Held)].buf = doc_strings(&held, true);
        let mut superseded: BTreeMap<u32, u32> = BTreeMap::new();
        let mut superseders: Vec<(u64, u32)> = Vec::new();
        for (id, l, _) in &lesson_docs {
            for s in superseded_slugs(&l.slug, &l.supersedes) {
                let h = slug_hash(s);
                superseders.push((h, *id));
                // the lessons of the slug: those of its hash in the slug index (few lessons
                // supersede, so no map of every slug)
                let from = slug_index.partition_point(|&(x, _)| x < h);
                for &(_, d) in slug_index[from..].iter().take_while(|&&(x, _)| x == h) {
                    if docs[d as usize]
                        .lesson
                        .as_ref()
                        .is_some_and(|l| l.slug == s)
                    {
                        *superseded.entry(d).or_default() += 1;
                    }
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
        secs
    };

    // the dictionary and the posting lists
    let dict = || {
        let mut secs = new_secs();
        let mut posting_off = 0u64;
        let sums: Vec<u32> = lists
            .par_iter()
            .map(|(_, _, bytes)| codec::checksum(bytes) as u32)
            .collect();
        let w = &mut secs[sec(Sec::Dict)];
        w.buf.reserve(lists.len() * DICT_ENTRY);
        for ((t, count, bytes), sum) in lists.iter().zip(sums) {
            w.u64(*t);
            w.u64(posting_off);
            w.u32(*count);
            w.u32(sum);
            posting_off += bytes.len() as u64;
        }
        secs
    };

    let (((fixed, totals, lessons), named), (gated, dict)) =
        rayon::join(|| rayon::join(fixed, named), || rayon::join(gated, dict));
    let mut secs = new_secs();
    for (i, w) in [fixed, named, gated, dict]
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !w.buf.is_empty() {
            secs[i % SECTIONS] = w;
        }
    }
    let sums: Vec<u64> = secs.par_iter().map(|s| codec::checksum(&s.buf)).collect();
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
            table.push((start, s.len(), sums[i]));
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
///
/// The posting lists are split into [`SHARDS`] maps by term, each filled by one task with
/// every doc of a chunk in order: a term's list gets the same postings in the same order
/// whichever task fills it, so the segment's bytes do not depend on the threads.
pub struct Encoder {
    shards: Vec<TermMap<ListWriter>>,
    docs: Vec<Doc>,
}

/// The number of term shards of an [`Encoder`]: enough for the tasks to even out.
const SHARDS: usize = 16;

/// A term's shard. Not the bits the maps hash on (those are `TermHasher`'s, a different
/// multiplier), so that every shard's map sees the whole spread of hashes.
fn shard(t: Term) -> usize {
    (t.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> (64 - SHARDS.trailing_zeros())) as usize
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder {
            shards: (0..SHARDS).map(|_| TermMap::default()).collect(),
            docs: Vec::new(),
        }
    }
}

/// A doc analysed for an [`Encoder`]: its terms grouped by shard, and where each group ends.
pub struct Analysed {
    doc: Doc,
    terms: Vec<(Term, Tf)>,
    ends: [u32; SHARDS],
    lens: [[u32; 4]; 2],
}

/// Ask for the cache lines of `items` ahead of their use (a hint: nothing on other targets).
#[inline(always)]
fn prefetch<T>(items: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(items);
        let start = items.as_ptr().cast::<u8>();
        for at in (0..bytes).step_by(64) {
            let line = start.wrapping_add(at);
            // SAFETY: a prefetch reads nothing (and the address is inside `items`)
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = items;
}

/// A record analysed for [`Encoder::add_analysed`] (on the thread that read it, while its text
/// is in the cache).
pub fn analyse_sharded(r: &Record) -> Analysed {
    analyse(r, |doc, terms| {
        // a counting sort by shard
        let mut ends = [0u32; SHARDS];
        for (t, _) in terms {
            ends[shard(*t)] += 1;
        }
        let mut next = [0u32; SHARDS];
        let mut sum = 0;
        for (s, e) in ends.iter_mut().enumerate() {
            next[s] = sum;
            sum += *e;
            *e = sum;
        }
        // filled, not allocated zeroed: the allocator's zeroing of a fresh block cost more
        // than the rest of this sort
        let mut grouped = Vec::with_capacity(terms.len());
        grouped.resize(terms.len(), (0, [0; 4]));
        for &(t, tf) in terms {
            let at = &mut next[shard(t)];
            grouped[*at as usize] = (t, tf);
            *at += 1;
        }
        let lens = [text::Kind::Word, text::Kind::Trigram].map(|k| kind_lens(&doc, k));
        Analysed {
            doc,
            terms: grouped,
            ends,
            lens,
        }
    })
}

impl Encoder {
    /// A good number of records per [`Encoder::add`].
    pub const CHUNK: usize = 2048;

    /// Add records (sorted by path, and after every record added before).
    pub fn add(&mut self, chunk: &[Record]) {
        self.add_analysed(chunk.par_iter().map(analyse_sharded).collect());
    }

    /// Add records analysed by [`analyse_sharded`] (sorted by path, and after every record
    /// added before).
    pub fn add_analysed(&mut self, analysed: Vec<Analysed>) {
        debug_assert!(analysed
            .windows(2)
            .all(|w| path_order(&w[0].doc.path, &w[1].doc.path).is_lt()));
        debug_assert!(analysed.first().is_none_or(|a| self
            .docs
            .last()
            .is_none_or(|d| path_order(&d.path, &a.doc.path).is_lt())));
        let first = self.docs.len() as u32;
        self.shards
            .par_iter_mut()
            .enumerate()
            .for_each(|(s, lists)| {
                let group = |a: &Analysed| {
                    let start = if s == 0 { 0 } else { a.ends[s - 1] as usize };
                    start..a.ends[s] as usize
                };
                for (i, (id, a)) in (first..).zip(&analysed).enumerate() {
                    // the group of a doc two ahead asked of memory now: the groups were
                    // written by other tasks, and the step from one doc's group to the next
                    // is nothing a hardware prefetcher follows
                    if let Some(ahead) = analysed.get(i + 2) {
                        prefetch(&ahead.terms[group(ahead)]);
                    }
                    for (t, tf) in &a.terms[group(a)] {
                        let lens = &a.lens[usize::from(text::kind(*t) == text::Kind::Trigram)];
                        lists.entry(*t).or_default().push_scored(id, tf, lens);
                    }
                }
            });
        self.docs.extend(analysed.into_iter().map(|a| a.doc));
    }

    /// The segment's bytes.
    pub fn finish(self, kind: Kind, header: Header, patch: &Patch) -> Vec<u8> {
        let mut lists: Vec<(Term, u32, Vec<u8>)> = self
            .shards
            .into_par_iter()
            .flat_map_iter(|lists| {
                lists.into_iter().map(|(t, l)| {
                    let (count, bytes) = l.finish();
                    (t, count, bytes)
                })
            })
            .collect();
        lists.par_sort_unstable_by_key(|(t, _, _)| *t);
        let bytes = write_segment(kind, header, patch, &self.docs, &lists);
        // freeing the docs and lists (60 ms at 100,000 lessons) on a pool thread, while the
        // caller goes on with the segment
        let docs = self.docs;
        rayon::spawn(move || drop((lists, docs)));
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::record::{FileStat, LessonFields};

    const WORDS: [&str; 12] = [
        "cache",
        "merge",
        "test",
        "deploy",
        "rust",
        "panic",
        "retry",
        "flaky",
        "café",
        "naïve",
        "日本語",
        "getHTTPResponse",
    ];

    fn records(n: usize) -> Vec<Record> {
        let mut state = 7u64;
        let mut next = move |below: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % below
        };
        let mut words = |least: usize, more: usize| {
            let n = least + next(more + 1);
            (0..n)
                .map(|_| WORDS[next(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        (0..n)
            .map(|i| {
                let lesson = (i % 9 != 4).then(|| LessonFields {
                    slug: format!("l{i:04}"),
                    title: words(1, 3),
                    description: words(0, 6),
                    tags: vec![words(0, 1)],
                    targets: Vec::new(),
                    outcome: Outcome::Success,
                    confidence: 0.5,
                    successes: 1,
                    failures: 0,
                    supersedes: Vec::new(),
                    expires_ns: None,
                    conflicts_with: Vec::new(),
                    gist: String::new(),
                    body: words(0, 80),
                    errors: Vec::new(),
                    ledger_at_s: None,
                    ledger_conflicts: Vec::new(),
                });
                Record {
                    path: format!("l{i:04}.md"),
                    stat: FileStat::default(),
                    lesson,
                }
            })
            .collect()
    }

    /// The segment as the encoder wrote it before its lists were sharded: one map of lists,
    /// filled doc by doc on one thread.
    fn serial(records: &[Record]) -> Vec<u8> {
        let mut lists: TermMap<ListWriter> = TermMap::default();
        let mut docs = Vec::new();
        for r in records {
            let (doc, terms) = analyse(r, |doc, terms| (doc, terms.to_vec()));
            let id = docs.len() as u32;
            let lens = [text::Kind::Word, text::Kind::Trigram].map(|k| kind_lens(&doc, k));
            docs.push(doc);
            for (t, tf) in terms {
                let lens = &lens[usize::from(text::kind(t) == text::Kind::Trigram)];
                lists.entry(t).or_default().push_scored(id, &tf, lens);
            }
        }
        let mut lists: Vec<(Term, u32, Vec<u8>)> = lists
            .into_iter()
            .map(|(t, l)| {
                let (count, bytes) = l.finish();
                (t, count, bytes)
            })
            .collect();
        lists.sort_unstable_by_key(|(t, _, _)| *t);
        write_segment(
            Kind::Base,
            Header::default(),
            &Patch::default(),
            &docs,
            &lists,
        )
    }

    /// What [`Counter`] must count: a map of each term's counts, and the terms in the order
    /// first seen.
    fn counted_by_map(stream: &[(Term, usize)]) -> Vec<(Term, Tf)> {
        let mut counts: HashMap<Term, Tf> = HashMap::new();
        let mut order = Vec::new();
        for &(t, f) in stream {
            let tf = counts.entry(t).or_insert_with(|| {
                order.push(t);
                [0; 4]
            });
            tf[f] += 1;
        }
        order.into_iter().map(|t| (t, counts[&t])).collect()
    }

    proptest::proptest! {
        /// The counter counts what a map counts, in the order first seen, doc after doc on one
        /// counter: with the term 0, with terms whose slots collide, and with docs of more
        /// distinct terms than its table holds at first (which grow it, and past the size it
        /// keeps, which makes it small again).
        #[test]
        fn the_counter_counts_what_a_map_counts_doc_after_doc(
            docs in proptest::collection::vec(
                (
                    proptest::collection::vec((0u64..300, 0usize..4), 0..400),
                    0usize..3,
                    1u64..4,
                ),
                1..6,
            ),
        ) {
            let mut counter = Counter::new();
            for (stream, wide, spread) in docs {
                // terms from a few hundred values, or spread over the whole range (the top bit
                // of word terms included), or many thousands of them
                let mut stream: Vec<(Term, usize)> = stream
                    .into_iter()
                    .map(|(t, f)| (t.wrapping_mul(spread << 62 | spread), f))
                    .collect();
                if wide == 2 {
                    let n = stream.len() as u64 * 200 + 1;
                    stream.extend((0..n).map(|t| (t * 2 + 1, (t % 4) as usize)));
                }
                counter.clear();
                for &(t, f) in &stream {
                    counter.add(t, f);
                }
                proptest::prop_assert_eq!(counter.terms(), &counted_by_map(&stream)[..]);
            }
        }
    }

    #[test]
    fn the_counter_counts_terms_whose_slots_collide() {
        let mut counter = Counter::new();
        // five terms whose hashes fall on the slot of 1, found by search: each probes past the
        // ones before it
        let slot0 = counter.slot(1);
        let same: Vec<Term> = (2..)
            .filter(|&t| counter.slot(t) == slot0)
            .take(5)
            .collect();
        let mut stream = vec![(1, 0)];
        stream.extend(same.iter().map(|&t| (t, 3)));
        stream.extend(same.iter().rev().map(|&t| (t, 1)));
        stream.push((1, 2));
        counter.clear();
        for &(t, f) in &stream {
            counter.add(t, f);
        }
        assert_eq!(counter.terms(), &counted_by_map(&stream)[..]);
        assert_eq!(counter.terms().len(), 6);
    }

    #[test]
    fn the_sharded_encoder_writes_the_serial_bytes_whatever_the_chunks_and_threads() {
        let records = records(700);
        let want = serial(&records);
        let seg = Segment::parse(want.clone()).unwrap();
        // lists long enough for skip tables, and every shard used
        let long = seg.postings(text::word_term("cache")).unwrap().unwrap();
        assert!(long.count as usize > 2 * codec::BLOCK, "{}", long.count);
        let shards: std::collections::BTreeSet<usize> = records
            .iter()
            .flat_map(|r| analyse(r, |_, terms| terms.to_vec()))
            .map(|(t, _)| shard(t))
            .collect();
        assert_eq!(shards.len(), SHARDS);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for chunk in [1, 13, 256, Encoder::CHUNK] {
                let got = pool.install(|| {
                    let mut encoder = Encoder::default();
                    for c in records.chunks(chunk) {
                        encoder.add(c);
                    }
                    encoder.finish(Kind::Base, Header::default(), &Patch::default())
                });
                assert!(got == want, "{threads} threads, chunks of {chunk}");
            }
        }
    }
}
