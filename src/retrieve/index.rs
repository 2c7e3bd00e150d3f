//! The index in memory: a base segment and its delta, what is derived from them when they
//! load (which docs are live candidates, supersession, tags, targets, length statistics), and
//! the search.
//!
//! Loading reads no per-doc table whole: the segments are mapped, and what is derived is
//! either small (tags, targets, expiry, supersession) or a bitset. A search reads the posting
//! lists of its terms, the rank and length tables of the docs they hold, and, for its K hits,
//! their files: what a hit shows (title, description, gist, tags) is parsed from the file,
//! after checking that the file still has the hash the index recorded. A file that does not
//! (changed or gone since the index was checked) is left out of the hits and counted in
//! [`Search::stale`], so that the caller can check the files again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use globset::GlobMatcher;

use crate::lesson::Outcome;

use super::codec::{self, Block, Corrupt, BODY};
use super::record::{self, FileStat, LessonFields, Record, TargetGlobs};
use super::score::{self, FieldStats, QueryTerms, Settings, LEN_SLOTS};
use super::segment::{self, Header, Kind, Patch, Segment, F_SUPERSEDES};
use super::text::{self, Term};
use super::walk::path_order;
use super::{Gates, Hit, Request, ScoreParts, TagGate, TargetGate};

/// A set of targets and, once needed, their compiled globs.
#[derive(Debug)]
struct TargetSet {
    targets: Vec<TargetGlobs>,
    compiled: OnceLock<Vec<[Option<Option<GlobMatcher>>; 3]>>,
}

impl TargetSet {
    fn new(targets: Vec<TargetGlobs>) -> TargetSet {
        TargetSet {
            targets,
            compiled: OnceLock::new(),
        }
    }

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

/// A bit per doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    /// `n` bits from a segment's little-endian words, the rest of the words cleared.
    fn from_segment(bytes: &[u8], n: usize, capacity: usize) -> Bits {
        let mut bits = Bits::new(capacity);
        for (w, chunk) in bits.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut a = [0u8; 8];
            a.copy_from_slice(chunk);
            *w = u64::from_le_bytes(a);
        }
        let words = n.div_ceil(64);
        if !n.is_multiple_of(64) {
            bits.0[words - 1] &= (1u64 << (n % 64)) - 1;
        }
        for w in &mut bits.0[words..] {
            *w = 0;
        }
        bits
    }

    #[inline]
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    fn count(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The set bits, ascending.
    fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 64 + b
                })
            })
        })
    }
}

/// Where a hit's text comes from.
#[derive(Debug)]
enum Fields {
    /// Nowhere (an index that is only checked against the files, never searched).
    None,
    /// Kept from the records the index was built from (an in-memory index).
    Memory(Vec<Option<LessonFields>>),
    /// Read from the files under this root.
    Files(PathBuf),
}

/// The tags of the live lessons: their keys (each with where its docs are listed) and which
/// docs have tags.
#[derive(Debug, Default)]
struct Tags {
    /// Known tags (normal form), ascending.
    keys: Vec<String>,
    /// Per key: (0 base, 1 delta; its index in that segment's tags).
    lists: Vec<Vec<(usize, usize)>>,
    /// Docs with tags.
    tagged: Bits,
}

/// Inverse length norms of the body, per term kind (word, trigram), computed on first use.
#[derive(Debug)]
struct Norms {
    b: u64,
    body: [OnceLock<Vec<f32>>; 2],
}

/// A base and its delta, with what is derived from them at load.
#[derive(Debug)]
pub struct Index {
    base: Arc<Segment>,
    delta: Option<Arc<Segment>>,
    base_count: usize,
    n: usize,
    deleted: Bits,
    deleted_count: usize,
    restat: HashMap<u32, FileStat>,
    /// Live lessons that no live lesson supersedes.
    candidates: Bits,
    expires: Vec<(u32, i64)>,
    targets: Vec<(u32, u32)>,
    target_sets: OnceLock<Result<Vec<TargetSet>, Corrupt>>,
    tags: Tags,
    lessons: u64,
    stats: FieldStats,
    norms: Mutex<Option<Arc<Norms>>>,
    paths: OnceLock<Result<Paths, Corrupt>>,
    fields: Fields,
}

/// The live docs' paths, decoded once, in path order.
#[derive(Debug)]
struct Paths {
    text: String,
    docs: Vec<(u32, usize, usize)>,
}

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

/// A live lesson as `_index.md` lists it, read from the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Path relative to the bank root.
    pub path: String,
    /// Slug.
    pub slug: String,
    /// Title as written.
    pub title: String,
    /// `supersedes`.
    pub supersedes: Vec<String>,
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
}

impl Index {
    /// Build an index in memory from records.
    pub fn build(mut records: Vec<Record>, header: Header) -> Index {
        records.sort_by(|a, b| path_order(&a.path, &b.path));
        let fields = records
            .iter()
            .map(|r| {
                r.lesson.as_ref().map(|l| LessonFields {
                    body: String::new(),
                    ..l.clone()
                })
            })
            .collect();
        let bytes = segment::encode(Kind::Base, header, records, &Patch::default());
        let base = Segment::parse(bytes).expect("a fresh segment decodes");
        let mut index = Index::new(Arc::new(base), None).expect("a fresh index loads");
        index.fields = Fields::Memory(fields);
        index
    }

    /// Load a base and, when it patches this base, a delta.
    pub fn new(base: Arc<Segment>, delta: Option<Arc<Segment>>) -> Result<Index, Corrupt> {
        if base.kind != Kind::Base {
            return Err(Corrupt("not a base"));
        }
        let delta =
            delta.filter(|d| d.kind == Kind::Delta && d.header.index_id == base.header.index_id);
        let base_count = base.doc_count();
        let n = base_count + delta.as_ref().map_or(0, |d| d.doc_count());
        let mut deleted = Bits::new(base_count);
        let mut restat = HashMap::new();
        if let Some(d) = &delta {
            for id in d.deleted()? {
                if id as usize >= base_count {
                    return Err(Corrupt("deleted doc out of range"));
                }
                deleted.set(id as usize);
            }
            for (id, stat) in d.restat()? {
                if id as usize >= base_count {
                    return Err(Corrupt("restat doc out of range"));
                }
                restat.insert(id, stat);
            }
        }
        let deleted_count = deleted.count() as usize;
        let mut index = Index {
            base,
            delta,
            base_count,
            n,
            deleted,
            deleted_count,
            restat,
            candidates: Bits::default(),
            expires: Vec::new(),
            targets: Vec::new(),
            target_sets: OnceLock::new(),
            tags: Tags::default(),
            lessons: 0,
            stats: FieldStats::new(&[0; LEN_SLOTS], 0),
            norms: Mutex::new(None),
            paths: OnceLock::new(),
            fields: Fields::None,
        };
        index.derive()?;
        Ok(index)
    }

    /// Read what hits show from the files under `root`.
    pub fn reading_files_at(mut self, root: &Path) -> Index {
        self.fields = Fields::Files(root.to_path_buf());
        self
    }

    fn segments(&self) -> impl Iterator<Item = (&Segment, usize)> {
        std::iter::once((&*self.base, 0)).chain(self.delta.iter().map(|d| (&**d, self.base_count)))
    }

    /// Live lessons, length statistics, supersession, expiry, targets and tags.
    fn derive(&mut self) -> Result<(), Corrupt> {
        let base = self.base.clone();
        let n = self.n;
        let base_count = self.base_count;
        let mut lessons = Bits::from_segment(base.lesson_bits()?, base_count, n);
        for (id, word) in self.deleted.0.iter().enumerate() {
            lessons.0[id] &= !word;
        }
        let mut count = base.lesson_count();
        let mut totals = *base.totals();
        if self.deleted_count > 0 {
            let ranks = base.ranks()?;
            for id in self.deleted.ones() {
                if Segment::rank_of(ranks, id).is_lesson() {
                    count = count.saturating_sub(1);
                    for (t, l) in totals.iter_mut().zip(base.lens(id)?) {
                        *t = t.saturating_sub(u64::from(l));
                    }
                }
            }
        }
        if let Some(d) = &self.delta {
            let bits = Bits::from_segment(d.lesson_bits()?, d.doc_count(), d.doc_count());
            for id in 0..d.doc_count() {
                if bits.get(id) {
                    lessons.set(base_count + id);
                }
            }
            count += d.lesson_count();
            for (t, l) in totals.iter_mut().zip(d.totals()) {
                *t += l;
            }
        }
        self.lessons = count;
        self.stats = FieldStats::new(&totals, count);

        let superseded = self.superseded()?;
        let mut candidates = lessons.clone();
        for &id in &superseded {
            candidates.clear(id as usize);
        }
        self.candidates = candidates;

        // expiry and targets, of live docs, by global id
        let mut expires = Vec::new();
        let mut targets = Vec::new();
        let mut first = 0;
        for (seg, offset) in self.segments() {
            let local = seg.doc_count();
            for (id, at) in seg.expires()? {
                if id as usize >= local {
                    return Err(Corrupt("expiring doc out of range"));
                }
                expires.push((id + offset as u32, at));
            }
            let (pairs, sets) = seg.target_pairs()?;
            for (id, set) in pairs {
                if id as usize >= local {
                    return Err(Corrupt("targeted doc out of range"));
                }
                targets.push((id + offset as u32, set + first));
            }
            first += sets;
        }
        self.expires = expires;
        self.targets = targets;
        self.tags = self.tags_of(&lessons)?;
        Ok(())
    }

    /// The live lessons that a live lesson supersedes. Each segment counts, per doc, the
    /// lessons of its own that supersede it; across a base and its delta, deleted base lessons
    /// are taken out of the counts and the two segments' lessons are matched by slug hash.
    fn superseded(&self) -> Result<Vec<u32>, Corrupt> {
        let base = &*self.base;
        let base_count = self.base_count;
        let mut count: HashMap<u32, i64> = HashMap::new();
        for (id, c) in base.superseded()? {
            if id as usize >= base_count {
                return Err(Corrupt("superseded doc out of range"));
            }
            *count.entry(id).or_default() += i64::from(c);
        }
        if let Some(delta) = &self.delta {
            // the base lessons with this slug
            let base_docs = |slug: &str| -> Result<Vec<u32>, Corrupt> {
                let mut out = Vec::new();
                for id in base.docs_with_slug_hash(segment::slug_hash(slug))? {
                    if (id as usize) < base_count && base.slug(id as usize)? == slug {
                        out.push(id);
                    }
                }
                Ok(out)
            };
            for id in self.deleted.ones() {
                if !base.rank(id)?.has(F_SUPERSEDES) {
                    continue;
                }
                let slug = base.slug(id)?;
                for s in segment::superseded_slugs(&slug, &base.supersedes(id)?) {
                    for d in base_docs(s)? {
                        *count.entry(d).or_default() -= 1;
                    }
                }
            }
            for (id, list) in delta.all_supersedes()? {
                let slug = delta.slug(id as usize)?;
                for s in segment::superseded_slugs(&slug, &list) {
                    for d in base_docs(s)? {
                        *count.entry(d).or_default() += 1;
                    }
                }
            }
            for (id, c) in delta.superseded()? {
                if id as usize >= delta.doc_count() {
                    return Err(Corrupt("superseded doc out of range"));
                }
                *count.entry(base_count as u32 + id).or_default() += i64::from(c);
            }
            let bits =
                Bits::from_segment(delta.lesson_bits()?, delta.doc_count(), delta.doc_count());
            for id in 0..delta.doc_count() {
                if !bits.get(id) {
                    continue;
                }
                let slug = delta.slug(id)?;
                for l in base.superseders_of(segment::slug_hash(&slug))? {
                    let l = l as usize;
                    if l >= base_count || self.deleted.get(l) {
                        continue;
                    }
                    let own = base.slug(l)?;
                    let list = base.supersedes(l)?;
                    if segment::superseded_slugs(&own, &list).contains(&slug.as_str()) {
                        *count.entry((base_count + id) as u32).or_default() += 1;
                    }
                }
            }
        }
        let mut out: Vec<u32> = count
            .into_iter()
            .filter(|&(_, c)| c > 0)
            .map(|(id, _)| id)
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The tags of the live lessons.
    fn tags_of(&self, lessons: &Bits) -> Result<Tags, Corrupt> {
        let mut keys: Vec<(String, usize, usize)> = Vec::new();
        let mut tagged = Bits::new(self.n);
        for (s, (seg, offset)) in self.segments().enumerate() {
            let tags = seg.tags()?;
            let local = seg.doc_count();
            let bits = Bits::from_segment(tags.tagged_bits(), local, local);
            if offset == 0 {
                for (t, (b, l)) in tagged.0.iter_mut().zip(bits.0.iter().zip(&lessons.0)) {
                    *t = b & l;
                }
            } else {
                for id in bits.ones() {
                    if lessons.get(offset + id) {
                        tagged.set(offset + id);
                    }
                }
            }
            // deleted docs are base docs: a base key with more docs than were deleted has a
            // live one, and so does every delta key
            let doubt = if offset == 0 { self.deleted_count } else { 0 };
            for (i, key) in tags.keys.iter().enumerate() {
                let mut live = tags.count(i) > doubt;
                if !live {
                    let mut bad = false;
                    tags.docs(i, |id| match (id as usize) < local {
                        true => live = live || lessons.get(offset + id as usize),
                        false => bad = true,
                    })?;
                    if bad {
                        return Err(Corrupt("tagged doc out of range"));
                    }
                }
                if live {
                    keys.push((key.to_string(), s, i));
                }
            }
        }
        keys.sort();
        let mut out = Tags {
            tagged,
            ..Tags::default()
        };
        for (key, s, i) in keys {
            if out.keys.last() != Some(&key) {
                out.keys.push(key);
                out.lists.push(Vec::new());
            }
            out.lists.last_mut().expect("pushed").push((s, i));
        }
        Ok(out)
    }

    /// The target lists of both segments (decoded when a caller first needs them).
    fn target_sets(&self) -> Result<&[TargetSet], Corrupt> {
        self.target_sets
            .get_or_init(|| {
                let mut sets = Vec::new();
                for (seg, _) in self.segments() {
                    sets.extend(seg.target_sets()?.into_iter().map(TargetSet::new));
                }
                Ok(sets)
            })
            .as_ref()
            .map(Vec::as_slice)
            .map_err(|e| *e)
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

    /// Whether a doc id is live (not deleted by the delta).
    pub fn is_live(&self, id: usize) -> bool {
        id >= self.base_count || !self.deleted.get(id)
    }

    /// The segment of a doc and its id there.
    fn locate(&self, id: usize) -> (&Segment, usize) {
        match id.checked_sub(self.base_count) {
            None => (&self.base, id),
            Some(local) => (self.delta.as_ref().expect("a delta doc"), local),
        }
    }

    /// The stat of a doc.
    pub fn stat(&self, id: usize) -> Result<FileStat, Corrupt> {
        if let Some(stat) = self
            .restat
            .get(&(id as u32))
            .filter(|_| id < self.base_count)
        {
            return Ok(*stat);
        }
        let (seg, local) = self.locate(id);
        seg.stat(local)
    }

    /// The path of a doc.
    pub fn path(&self, id: usize) -> Result<String, Corrupt> {
        let (seg, local) = self.locate(id);
        seg.path(local)
    }

    /// The live docs (lessons or not), sorted by path.
    pub fn entries(&self) -> Result<Vec<Entry<'_>>, Corrupt> {
        let paths = self
            .paths
            .get_or_init(|| {
                let mut text = String::new();
                let mut docs = Vec::with_capacity(self.n);
                for (seg, offset) in self.segments() {
                    seg.for_each_path(|id, p| {
                        if self.is_live(offset + id) {
                            docs.push(((offset + id) as u32, text.len(), text.len() + p.len()));
                            text.push_str(p);
                        }
                    })?;
                }
                if self.delta.is_some() {
                    docs.sort_by(|a, b| path_order(&text[a.1..a.2], &text[b.1..b.2]));
                }
                Ok(Paths { text, docs })
            })
            .as_ref()
            .map_err(|e| *e)?;
        paths
            .docs
            .iter()
            .map(|&(id, start, end)| {
                Ok(Entry {
                    id,
                    path: &paths.text[start..end],
                    stat: self.stat(id as usize)?,
                })
            })
            .collect()
    }

    /// The live doc at `path` (relative to the root, `/`-separated), if any: a binary search
    /// of the delta's paths, then of the base's (each segment's docs are in path order).
    pub fn find<'p>(&self, path: &'p str) -> Result<Option<Entry<'p>>, Corrupt> {
        for (seg, offset) in self.segments().collect::<Vec<_>>().into_iter().rev() {
            let at = seg.lower_bound(path)?;
            if at < seg.doc_count() && self.is_live(offset + at) && seg.path(at)? == path {
                let id = offset + at;
                return Ok(Some(Entry {
                    id: id as u32,
                    path,
                    stat: self.stat(id)?,
                }));
            }
        }
        Ok(None)
    }

    /// Whether a live doc lies below the directory `dir` (relative to the root): a directory
    /// that vanished had lessons to drop.
    pub fn has_under(&self, dir: &str) -> Result<bool, Corrupt> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        for (seg, offset) in self.segments() {
            // paths sharing a prefix are contiguous in path order
            let mut at = seg.lower_bound(&prefix)?;
            while at < seg.doc_count() && seg.path(at)?.starts_with(&prefix) {
                if self.is_live(offset + at) {
                    return Ok(true);
                }
                at += 1;
            }
        }
        Ok(false)
    }

    /// Every live lesson with the fields `_index.md` lists, in doc id order.
    pub fn listed(&self) -> Result<Vec<Listed>, Corrupt> {
        let mut out = Vec::with_capacity(self.lessons as usize);
        for (seg, offset) in self.segments() {
            let mut paths = Vec::with_capacity(seg.doc_count());
            seg.for_each_path(|_, p| paths.push(p.to_string()))?;
            let mut titles = Vec::with_capacity(seg.doc_count());
            seg.for_each_title(|_, t| titles.push(t.to_string()))?;
            let ranks = seg.ranks()?;
            for (local, (path, title)) in paths.into_iter().zip(titles).enumerate() {
                let rank = Segment::rank_of(ranks, local);
                if self.is_live(offset + local) && rank.is_lesson() {
                    out.push(self.listed_from(seg, offset, local, path, title, &rank)?);
                }
            }
        }
        Ok(out)
    }

    /// Doc `id` with the fields `_index.md` lists, when it is a live lesson.
    pub fn listed_at(&self, id: u32) -> Result<Option<Listed>, Corrupt> {
        let id = id as usize;
        if id >= self.n || !self.is_live(id) {
            return Ok(None);
        }
        let offset = if id < self.base_count {
            0
        } else {
            self.base_count
        };
        let (seg, local) = self.locate(id);
        let rank = seg.rank(local)?;
        if !rank.is_lesson() {
            return Ok(None);
        }
        let (path, title) = (seg.path(local)?, seg.title(local)?);
        Ok(Some(
            self.listed_from(seg, offset, local, path, title, &rank)?,
        ))
    }

    fn listed_from(
        &self,
        seg: &Segment,
        offset: usize,
        local: usize,
        path: String,
        title: String,
        rank: &segment::Rank,
    ) -> Result<Listed, Corrupt> {
        let id = (offset + local) as u32;
        let expires_ns = self
            .expires
            .binary_search_by_key(&id, |&(d, _)| d)
            .ok()
            .map(|i| self.expires[i].1);
        let supersedes = if rank.has(F_SUPERSEDES) {
            seg.supersedes(local)?
                .into_iter()
                .map(str::to_string)
                .collect()
        } else {
            Vec::new()
        };
        Ok(Listed {
            slug: seg.slug_of(local, &path)?,
            path,
            title,
            supersedes,
            outcome: rank.outcome(),
            confidence: rank.confidence,
            successes: rank.successes,
            failures: rank.failures,
            expires_ns,
        })
    }

    /// Every known tag (normal form) that occurs among the request's words, sorted.
    fn tags_in(&self, words: &[String]) -> Vec<String> {
        let present: HashSet<&str> = words.iter().map(String::as_str).collect();
        let mut found: Vec<String> = Vec::new();
        for key in &self.tags.keys {
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

    /// The inverse length norms for this `b`, computed per slot when first needed.
    fn norms(&self, b: f64) -> Arc<Norms> {
        let mut cache = self.norms.lock().unwrap_or_else(|e| e.into_inner());
        match cache.as_ref() {
            Some(norms) if norms.b == b.to_bits() => norms.clone(),
            _ => {
                let norms = Arc::new(Norms {
                    b: b.to_bits(),
                    body: [OnceLock::new(), OnceLock::new()],
                });
                *cache = Some(norms.clone());
                norms
            }
        }
    }

    /// Every doc's inverse body norm for terms of `kind`.
    fn body_norms<'a>(
        &self,
        norms: &'a Norms,
        kind: text::Kind,
        b: f64,
    ) -> Result<&'a [f32], Corrupt> {
        let k = usize::from(kind == text::Kind::Trigram);
        if let Some(v) = norms.body[k].get() {
            return Ok(v);
        }
        let slot = score::slot(BODY, kind);
        let avg = self.stats.avg[slot];
        let mut v = Vec::with_capacity(self.n);
        for (seg, _) in self.segments() {
            let lens = seg.lens_of_slot(slot)?;
            v.extend(lens.chunks_exact(4).map(|c| {
                let len = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                (1.0 / (1.0 - b + b * f64::from(len) / avg)) as f32
            }));
        }
        Ok(norms.body[k].get_or_init(|| v))
    }

    /// The top hits for a request: the gates as a bitset over doc ids, then BM25F accumulated
    /// term by term over the eligible docs, then the top K by score, each checked against its
    /// file.
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
            stale: 0,
        };

        // gates, as a bitset over doc ids, before any text
        let eligible = self.gates(req, now_ns, caller, &request_tags)?;
        search.eligible = eligible.count();

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
        let b = settings.b;
        let w = settings.field_weights;
        let mut acc = vec![0.0f64; self.n];
        let mut total = 0.0;
        let mut scratch: Vec<(u32, f64)> = Vec::new();
        let mut block = Box::<Block>::default();
        let norms = self.norms(b);
        for &term in &terms {
            if self.is_stop_term(term)? {
                search.skipped_terms += 1;
                continue;
            }
            let kind = text::kind(term);
            let body = self.body_norms(&norms, kind, b)?;
            // with nothing deleted, the dictionary counts are the live counts
            let known_df = (self.deleted_count == 0)
                .then(|| -> Result<u64, Corrupt> {
                    let mut df = 0;
                    for (seg, _) in self.segments() {
                        df += seg.doc_count_of(term)? as u64;
                    }
                    Ok(df)
                })
                .transpose()?;
            let known_share = known_df.map(|df| score::share(term, df, self.lessons, settings));
            scratch.clear();
            let mut df = known_df.unwrap_or(0);
            for (seg, offset) in self.segments() {
                let Some((count, bytes)) = seg.postings(term)? else {
                    continue;
                };
                search.postings += count as u64;
                let mut scorer = ListScorer {
                    offset,
                    local: seg.doc_count(),
                    eligible: &eligible.0,
                    body,
                    other_lens: [&[]; BODY],
                    other_avg: [0.0; BODY],
                    w,
                    b,
                    k1: settings.k1,
                };
                for f in 0..BODY {
                    let slot = score::slot(f, kind);
                    scorer.other_lens[f] = seg.lens_of_slot(slot)?;
                    scorer.other_avg[f] = self.stats.avg[slot];
                }
                let check_live = self.deleted_count > 0 && offset == 0;
                let mut sat = [0.0f64; codec::BLOCK];
                let mut failed = None;
                codec::for_each_block(bytes, count, &mut block, |blk| {
                    if let Err(e) = scorer.block(blk, &mut sat) {
                        failed = Some(e);
                        return;
                    }
                    let ids = &blk.ids[..blk.len];
                    match known_share {
                        Some(share) => {
                            for (&id, &s) in ids.iter().zip(&sat) {
                                acc[id as usize + offset] += share * s;
                            }
                        }
                        None => {
                            for (&id, &s) in ids.iter().zip(&sat) {
                                let id = id as usize + offset;
                                if check_live && self.deleted.get(id) {
                                    continue;
                                }
                                df += 1;
                                if eligible.get(id) {
                                    scratch.push((id as u32, s));
                                }
                            }
                        }
                    }
                })?;
                if let Some(e) = failed {
                    return Err(e);
                }
            }
            // a term the bank lacks still counts in the total: a request about something else
            // entirely scores low everywhere instead of matching on its few common trigrams
            let share =
                known_share.unwrap_or_else(|| score::share(term, df, self.lessons, settings));
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
            let parts = self.parts(id, sim, now_ns, settings)?;
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
        let mut ranked: Vec<(f64, f64, usize, String, String)> =
            Vec::with_capacity(candidates.len());
        for (score, sim, id) in candidates {
            let (seg, local) = self.locate(id);
            ranked.push((score, sim, id, seg.slug(local)?, seg.path(local)?));
        }
        ranked.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| a.3.cmp(&b.3))
                .then_with(|| path_order(&a.4, &b.4))
        });
        ranked.truncate(k);

        for (_, sim, id, _, path) in ranked {
            match self.hit(id, &path, sim, now_ns, settings, caller, &request_tags)? {
                Some(hit) => search.hits.push(hit),
                None => search.stale += 1,
            }
        }
        super::mark_conflicts(&mut search.hits);
        Ok(search)
    }

    /// Whether nearly every lesson holds `term` (idf below [`score::MIN_IDF`]): such a term
    /// tells lessons apart no more than "the" does, and its posting list is the longest, so it
    /// is left out of the similarity (numerator and total alike). Decided on the exact number
    /// of live lessons holding it, so a patched index decides as a fresh one does; the list is
    /// only read when the delta leaves the count in doubt.
    fn is_stop_term(&self, term: Term) -> Result<bool, Corrupt> {
        let mut most = 0u64;
        for (seg, _) in self.segments() {
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
        for (seg, offset) in self.segments() {
            if let Some((count, bytes)) = seg.postings(term)? {
                codec::for_each_posting(bytes, count, |id, _| {
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
    ) -> Result<Bits, Corrupt> {
        let mut eligible = self.candidates.clone();
        if !req.include_expired {
            for &(id, at) in &self.expires {
                if at <= now_ns {
                    eligible.clear(id as usize);
                }
            }
        }
        let anonymous = caller.iter().all(Option::is_none);
        if anonymous {
            for &(id, _) in &self.targets {
                eligible.clear(id as usize);
            }
        } else if !self.targets.is_empty() {
            let sets = self.target_sets()?;
            let mut verdict: Vec<Option<bool>> = vec![None; sets.len()];
            for &(id, set) in &self.targets {
                let set = set as usize;
                let ok = *verdict
                    .get_mut(set)
                    .ok_or(Corrupt("target list out of range"))?
                    .get_or_insert_with(|| sets[set].matching(caller).is_some());
                if !ok {
                    eligible.clear(id as usize);
                }
            }
        }
        // a request with tags, none of them the lesson's (or even the bank's): out
        if !request_tags.is_empty() {
            let mut allowed = Bits::new(self.n);
            for (a, t) in allowed.0.iter_mut().zip(&self.tags.tagged.0) {
                *a = !t;
            }
            let segments: Vec<(segment::SegmentTags, usize)> = self
                .segments()
                .map(|(seg, offset)| Ok((seg.tags()?, offset)))
                .collect::<Result<_, Corrupt>>()?;
            for (key, lists) in self.tags.keys.iter().zip(&self.tags.lists) {
                if !request_tags.contains(key.as_str()) {
                    continue;
                }
                for &(s, i) in lists {
                    let (tags, offset) = &segments[s];
                    tags.docs(i, |id| {
                        let id = id as usize + offset;
                        if id < self.n {
                            allowed.set(id);
                        }
                    })?;
                }
            }
            for (e, a) in eligible.0.iter_mut().zip(&allowed.0) {
                *e &= a;
            }
        }
        Ok(eligible)
    }

    /// The hit for doc `id`, or `None` when its file no longer has the indexed bytes.
    #[allow(clippy::too_many_arguments)]
    fn hit(
        &self,
        id: usize,
        path: &str,
        sim: f64,
        now_ns: i64,
        settings: &Settings,
        caller: [Option<&str>; 3],
        request_tags: &HashSet<&str>,
    ) -> Result<Option<Hit>, Corrupt> {
        let read;
        let fields = match &self.fields {
            Fields::Memory(fields) => fields.get(id).and_then(Option::as_ref),
            Fields::Files(root) => {
                read = read_fields(&root.join(path), &self.stat(id)?);
                read.as_ref()
            }
            Fields::None => return Err(Corrupt("an index without its files")),
        };
        let Some(l) = fields else {
            return Ok(None);
        };
        let targets = match self.targets.binary_search_by_key(&(id as u32), |&(d, _)| d) {
            Err(_) => TargetGate::Anyone,
            Ok(i) => {
                let ts = self
                    .target_sets()?
                    .get(self.targets[i].1 as usize)
                    .ok_or(Corrupt("target list out of range"))?;
                let i = ts.matching(caller).ok_or(Corrupt("target gate"))?;
                TargetGate::Matched(ts.targets[i].clone())
            }
        };
        let tag_keys = l.tag_keys();
        let tags = if request_tags.is_empty() {
            TagGate::RequestUntagged
        } else if tag_keys.is_empty() {
            TagGate::LessonUntagged
        } else {
            TagGate::Shared(
                tag_keys
                    .iter()
                    .filter(|k| request_tags.contains(k.as_str()))
                    .cloned()
                    .collect(),
            )
        };
        let expired = l.expires_ns.is_some_and(|at| at <= now_ns);
        Ok(Some(Hit {
            slug: l.slug.clone(),
            path: path.to_string(),
            title: l.title.clone(),
            description: l.description.clone(),
            gist: l.gist.clone(),
            outcome: l.outcome,
            confidence: l.confidence,
            success_count: l.successes,
            failure_count: l.failures,
            tags: l.tags.clone(),
            tag_keys,
            score: self.parts(id, sim, now_ns, settings)?,
            gates: Gates {
                status: if expired { "expired" } else { "active" },
                targets,
                tags,
            },
            caution: l.failures > l.successes,
            conflicts_with: Vec::new(),
            declared_conflicts: l.conflicts_with.clone(),
        }))
    }

    fn parts(
        &self,
        id: usize,
        similarity: f64,
        now_ns: i64,
        s: &Settings,
    ) -> Result<ScoreParts, Corrupt> {
        let (seg, local) = self.locate(id);
        let rank = seg.rank(local)?;
        let mtime_ns = match self.restat.get(&(id as u32)) {
            Some(stat) if id < self.base_count => stat.mtime_ns,
            _ => rank.mtime_ns,
        };
        let confidence = score::confidence(rank.confidence);
        let count_factor = score::count_factor(rank.successes, rank.failures);
        let recency = score::recency(mtime_ns, now_ns, s.half_life_days);
        Ok(ScoreParts {
            similarity,
            confidence,
            count_factor,
            recency,
            score: similarity * confidence * count_factor * recency,
        })
    }
}

/// The lesson in the file at `path`, when the file still has the bytes `stat` describes.
fn read_fields(path: &Path, stat: &FileStat) -> Option<LessonFields> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() as u64 != stat.size || codec::checksum(&bytes) != stat.hash {
        return None;
    }
    record::lesson_of_file(path, bytes)
}

/// What scoring the postings of one term in one segment needs.
struct ListScorer<'a> {
    /// The segment's first doc id in the index.
    offset: usize,
    /// Docs in the segment.
    local: usize,
    eligible: &'a [u64],
    /// Inverse body norms per doc (index ids).
    body: &'a [f32],
    /// Title, description and tags lengths per doc (segment ids, u32 each), for the term's
    /// kind, and their averages.
    other_lens: [&'a [u8]; BODY],
    other_avg: [f64; BODY],
    w: [f64; 4],
    b: f64,
    k1: f64,
}

impl ListScorer<'_> {
    /// The saturated frequency `tf~ / (k1 + tf~)` of each posting of a block whose doc is
    /// eligible (0 for the others), with `tf~` summed over the fields in order (title first)
    /// as [`score::saturation`] sums it.
    #[inline]
    fn block(&self, blk: &Block, sat: &mut [f64; codec::BLOCK]) -> Result<(), Corrupt> {
        let n = blk.len;
        if blk.ids[n - 1] as usize >= self.local {
            return Err(Corrupt("doc id out of range"));
        }
        let mut others = [0.0f64; codec::BLOCK];
        for j in 0..blk.others {
            let i = usize::from(blk.which[j]);
            let id = blk.ids[i] as usize;
            let mut x = 0.0;
            for f in 0..BODY {
                let t = blk.other_tf[f][j];
                if t == 0 {
                    continue;
                }
                let l = &self.other_lens[f][id * 4..id * 4 + 4];
                let len = u32::from_le_bytes([l[0], l[1], l[2], l[3]]);
                let norm =
                    (1.0 / (1.0 - self.b + self.b * f64::from(len) / self.other_avg[f])) as f32;
                x += self.w[f] * f64::from(t) * f64::from(norm);
            }
            others[i] = x;
        }
        let wb = self.w[BODY];
        for i in 0..n {
            let id = blk.ids[i] as usize + self.offset;
            let eligible = (self.eligible[id >> 6] >> (id & 63)) & 1;
            // (a body count of 0 adds +0.0, as skipping it would)
            let x = others[i] + wb * f64::from(blk.body[i]) * f64::from(self.body[id]);
            sat[i] = x / (self.k1 + x) * eligible as f64;
        }
        Ok(())
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
    /// Hits left out because their file changed or vanished since the index was checked.
    pub stale: u64,
}
