//! The index in memory: a base segment and its delta, what is derived from them when they
//! load (live docs, supersession, tags, target sets, length statistics), and the search.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use globset::GlobMatcher;

use super::codec::Corrupt;
use super::record::{self, FileStat, LessonView, Record, TargetGlobs};
use super::score::{self, FieldStats, QueryTerms, Settings, LEN_SLOTS};
use super::segment::{
    self, decode_postings, DocMeta, Header, Kind, Patch, Segment, F_SUPERSEDES, F_TAGS, F_TARGETS,
};
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

/// A live lesson as `_index.md` lists it, read from the index.
#[derive(Debug, Clone)]
pub struct Listed<'a> {
    /// Path relative to the bank root.
    pub path: &'a str,
    /// Slug.
    pub slug: &'a str,
    /// Title as written.
    pub title: &'a str,
    /// `supersedes`.
    pub supersedes: Vec<&'a str>,
    /// Outcome, confidence, counts and expiry.
    pub meta: DocMeta,
}

impl Index {
    /// Build an index in memory from records.
    pub fn build(records: Vec<Record>, header: Header) -> Index {
        let bytes = segment::encode(Kind::Base, header, records, &Patch::default());
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
        let base_count = base.doc_count();
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
            for i in 0..d.doc_count() {
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

    /// The live doc at `path` (relative to the root, `/`-separated), if any: a binary search
    /// of the delta's doc table, then of the base's (each is sorted by path).
    pub fn find(&self, path: &str) -> Result<Option<Entry<'_>>, Corrupt> {
        for range in [self.base_count..self.docs.len(), 0..self.base_count] {
            let at = self.lower_bound(range.clone(), path)?;
            if at < range.end && self.is_live(at) && self.path_of(at)? == path {
                return Ok(Some(Entry {
                    id: at as u32,
                    path: self.path_of(at)?,
                    stat: self.docs[at].stat,
                }));
            }
        }
        Ok(None)
    }

    /// Whether a live doc lies below the directory `dir` (relative to the root): a directory
    /// that vanished had lessons to drop.
    pub fn has_under(&self, dir: &str) -> Result<bool, Corrupt> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        for range in [self.base_count..self.docs.len(), 0..self.base_count] {
            // paths sharing a prefix are contiguous in path order
            let mut at = self.lower_bound(range.clone(), &prefix)?;
            while at < range.end && self.path_of(at)?.starts_with(&prefix) {
                if self.is_live(at) {
                    return Ok(true);
                }
                at += 1;
            }
        }
        Ok(false)
    }

    /// The first doc id in `range` (a segment's docs, sorted by path) whose path is not before
    /// `path`.
    fn lower_bound(&self, range: Range<usize>, path: &str) -> Result<usize, Corrupt> {
        let (mut lo, mut hi) = (range.start, range.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if path_order(self.path_of(mid)?, path).is_lt() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    fn path_of(&self, id: usize) -> Result<&str, Corrupt> {
        record::decode_path(self.record(id)?)
    }

    /// Every live lesson with the fields `_index.md` lists, in doc id order.
    pub fn listed(&self) -> Result<Vec<Listed<'_>>, Corrupt> {
        let mut out = Vec::with_capacity(self.lessons as usize);
        for id in 0..self.docs.len() {
            out.extend(self.listed_at(id as u32)?);
        }
        Ok(out)
    }

    /// Doc `id` with the fields `_index.md` lists, when it is a live lesson.
    pub fn listed_at(&self, id: u32) -> Result<Option<Listed<'_>>, Corrupt> {
        let id = id as usize;
        let Some(m) = self.docs.get(id) else {
            return Ok(None);
        };
        if !self.is_live(id) || !m.is_lesson() {
            return Ok(None);
        }
        let v = LessonView::decode(self.record(id)?)?;
        Ok(Some(Listed {
            path: v.path,
            slug: v.slug,
            title: v.title,
            supersedes: if m.has(F_SUPERSEDES) {
                v.supersedes()?
            } else {
                Vec::new()
            },
            meta: *m,
        }))
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
