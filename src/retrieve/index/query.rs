//! The search: gates, BM25F over the posting lists, the hits read from their files.

use super::*;

impl Index {
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
            stale: Vec::new(),
            held_back: self.held.clone(),
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
                None => search.stale.push(path),
            }
        }
        crate::retrieve::mark_conflicts(&mut search.hits);
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
        // the lesson's last commit in git, else its ledger's newest event; never a file time
        let at_s = match self.commit_times.get(id) {
            Some(&t) if t != NOT_COMMITTED => Some(t),
            _ => rank.ledger_at_s,
        };
        let confidence = score::confidence(rank.confidence);
        let count_factor = score::count_factor(rank.successes, rank.failures);
        let recency = at_s.map_or(1.0, |at| {
            score::recency(at.saturating_mul(1_000_000_000), now_ns, s.half_life_days)
        });
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
