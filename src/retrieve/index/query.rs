//! The search: gates, BM25F over the posting lists, the hits read from their files.

use super::prune::bounds_hold;
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

    /// The inverse body norms for this `b`, per term kind, each computed when first needed;
    /// none for the index's first search. A table of every doc costs a new process (one
    /// search) more to zero than it saves; an index kept open (the watcher, `lesson mcp`, the
    /// library) has one from its second search on.
    pub(super) fn norms(&self, b: f64) -> Option<Arc<Norms>> {
        if !self.searched.swap(true, Ordering::Relaxed) {
            return None;
        }
        let mut cache = self.norms.lock().unwrap_or_else(|e| e.into_inner());
        match cache.as_ref() {
            Some(norms) if norms.b == b.to_bits() => Some(norms.clone()),
            _ => {
                let norms = Arc::new(Norms {
                    b: b.to_bits(),
                    fields: [OnceLock::new(), OnceLock::new()],
                });
                *cache = Some(norms.clone());
                Some(norms)
            }
        }
    }

    /// Every doc's inverse norms in the four fields for terms of `kind`, if computed (the bits
    /// of an `f32` at index id × 4 + field; 0 until a search scores a posting that needs it),
    /// when there is a table.
    pub(super) fn field_norms<'a>(
        &self,
        norms: Option<&'a Norms>,
        kind: text::Kind,
    ) -> Option<&'a [AtomicU32]> {
        let norms = norms?;
        Some(
            norms.fields[usize::from(kind == text::Kind::Trigram)]
                .get_or_init(|| (0..self.n * 4).map(|_| AtomicU32::new(0)).collect()),
        )
    }

    /// The request's tags: given (normal form, sorted) and inferred (known tags among its
    /// words that were not given), and which of them gate.
    fn request_tags(&self, req: &Request, mode: InferredTags) -> RequestTags {
        let mut given: Vec<String> = req
            .tags
            .iter()
            .map(|t| text::tag_key(t))
            .filter(|t| !t.is_empty())
            .collect();
        given.sort();
        given.dedup();
        let inferred: Vec<String> = self
            .tags_in(&text::words(&req.text))
            .into_iter()
            .filter(|t| !given.contains(t))
            .collect();
        // tags the caller gives gate alone: an explicit tag narrows
        let gating = if !given.is_empty() {
            given.clone()
        } else if mode == InferredTags::Gate {
            inferred.clone()
        } else {
            Vec::new()
        };
        let boosting = if mode == InferredTags::Boost {
            inferred.clone()
        } else {
            Vec::new()
        };
        RequestTags {
            given,
            inferred,
            gating,
            boosting,
        }
    }

    /// The gates and every eligible doc's similarity: what a search ranks, before the top K.
    /// The exhaustive search (term at a time, every posting scored): what `explain` reads,
    /// and the oracle the pruned search ([`Index::search`]) is tested against.
    pub(super) fn score_all<'r>(
        &self,
        req: &'r Request,
        settings: &Settings,
    ) -> Result<Scored<'r>, Corrupt> {
        let (mut scored, terms) = self.gated(req, settings)?;
        if terms.is_empty() || scored.search.eligible == 0 {
            return Ok(scored);
        }
        self.accumulate(&mut scored, &terms, settings)?;
        Ok(scored)
    }

    /// The request gated, with its terms (none: ranked by the prior alone).
    pub(super) fn gated<'r>(
        &self,
        req: &'r Request,
        settings: &Settings,
    ) -> Result<(Scored<'r>, Vec<Term>), Corrupt> {
        let mode = req.inferred_tags.unwrap_or(settings.inferred_tags);
        let tags = self.request_tags(req, mode);
        let caller = [
            req.operator.as_deref(),
            req.role.as_deref(),
            req.skill.as_deref(),
        ];
        let now_ns = record::clamp_ns(req.now.as_nanosecond());
        let mut search = Search {
            hits: Vec::new(),
            given_tags: tags.given.clone(),
            inferred_tags: tags.inferred.clone(),
            lessons: self.lessons,
            eligible: 0,
            postings: 0,
            skipped_terms: 0,
            stale: Vec::new(),
            held_back: self.held.clone(),
        };

        // gates, as a bitset over doc ids, before any text
        let eligible = self.gates(req, now_ns, caller, &tags.gating)?;
        search.eligible = eligible.count();
        let boosted = if tags.boosting.is_empty() {
            None
        } else {
            Some(self.docs_tagged(&tags.boosting)?)
        };

        // the request's terms: its text and the given tags; a request without text is ranked
        // by the prior alone (its tags only gate)
        let mut terms = QueryTerms::distinct(&req.text);
        if !terms.is_empty() && !req.tags.is_empty() {
            terms = QueryTerms::distinct(&format!("{}\n{}", req.text, req.tags.join("\n")));
        }
        let scored = Scored {
            search,
            tags,
            eligible,
            boosted,
            caller,
            now_ns,
            similarity: Similarity::NoText,
            semantic: None,
        };
        Ok((scored, terms))
    }

    /// BM25F, term at a time: each eligible doc's sum of share × saturation.
    fn accumulate(
        &self,
        scored: &mut Scored,
        terms: &[Term],
        settings: &Settings,
    ) -> Result<(), Corrupt> {
        let mut acc = vec![0.0f64; self.n];
        let mut total = 0.0;
        let mut scratch: Vec<(u32, f64)> = Vec::new();
        let mut block = Box::<Block>::default();
        let norms = self.norms(settings.b);
        let eligible = &scored.eligible;
        let search = &mut scored.search;
        for &term in terms {
            if self.is_stop_term(term)? {
                search.skipped_terms += 1;
                continue;
            }
            let kind = text::kind(term);
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
                let Some(list) = seg.postings(term)? else {
                    continue;
                };
                search.postings += list.count as u64;
                let cached = self.field_norms(norms.as_deref(), kind);
                let scorer = self.list_scorer(seg, offset, eligible, cached, kind, settings)?;
                let check_live = self.deleted_count > 0 && offset == 0;
                let mut sat = [0.0f64; codec::BLOCK];
                let mut failed = None;
                list.for_each_block(&mut block, |blk| {
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
        scored.similarity = Similarity::Text { acc, total };
        Ok(())
    }

    /// The docs that pass the gates and the similarity threshold, each with its score, its
    /// similarity and whether it is a caution, in doc id order.
    pub(super) fn matching(
        &self,
        scored: &Scored,
        settings: &Settings,
    ) -> Result<Vec<Candidate>, Corrupt> {
        let mut out = Vec::new();
        let mut push = |id: usize, sim: f64| -> Result<(), Corrupt> {
            let (parts, caution) = self.parts(id, sim, scored, settings)?;
            if parts.score > 0.0 {
                out.push((parts.score, sim, id, caution));
            }
            Ok(())
        };
        match &scored.similarity {
            // no text: every lesson that passes the gates, by its prior alone
            Similarity::NoText => {
                for id in scored.eligible.ones() {
                    push(id, 1.0)?;
                }
            }
            // the pruned search gives its candidates itself
            Similarity::Bounded => {}
            // hybrid: every eligible doc, by its lexical similarity fused with its cosine
            Similarity::Text { acc, total } if scored.semantic.is_some() => {
                let semantic = scored.semantic.expect("checked");
                for id in scored.eligible.ones() {
                    let a = acc.get(id).copied().unwrap_or(0.0);
                    let lexical = if a > 0.0 && *total > 0.0 {
                        a / total
                    } else {
                        0.0
                    };
                    let sim = crate::semantic::fuse(lexical, semantic.cosine(id), semantic.weight);
                    if sim <= 0.0 || sim < settings.min_similarity {
                        continue;
                    }
                    push(id, sim)?;
                }
            }
            Similarity::Text { total, .. } if *total <= 0.0 => {}
            Similarity::Text { acc, total } => {
                for (id, &a) in acc.iter().enumerate() {
                    if a <= 0.0 {
                        continue;
                    }
                    let sim = a / total;
                    if sim < settings.min_similarity {
                        continue;
                    }
                    push(id, sim)?;
                }
            }
        }
        Ok(out)
    }

    /// `candidates` ranked: best score first, ties by slug then path, with slugs and paths.
    fn ranked(&self, candidates: Vec<Candidate>) -> Result<Vec<Ranked>, Corrupt> {
        let mut ranked = Vec::with_capacity(candidates.len());
        for (score, sim, id, caution) in candidates {
            let (seg, local) = self.locate(id);
            ranked.push(Ranked {
                score,
                sim,
                id,
                caution,
                slug: seg.slug(local)?,
                path: seg.path(local)?,
            });
        }
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.slug.cmp(&b.slug))
                .then_with(|| path_order(&a.path, &b.path))
        });
        Ok(ranked)
    }

    /// The top K of the matching docs, best first, with up to `max-cautions` cautions kept
    /// among them (in place of the lowest-ranked other docs, never of the first), and whether
    /// each is there only as a caution.
    fn top(
        &self,
        mut candidates: Vec<Candidate>,
        k: usize,
        max_cautions: usize,
    ) -> Result<Vec<(Ranked, bool)>, Corrupt> {
        if k == 0 {
            return Ok(Vec::new());
        }
        // the best cautions, whatever their rank: the ones the top K may lack
        let mut cautions: Vec<Candidate> = candidates.iter().filter(|c| c.3).copied().collect();
        if cautions.len() > max_cautions && max_cautions > 0 {
            cautions.select_nth_unstable_by(max_cautions - 1, |a, b| b.0.total_cmp(&a.0));
            let kth = cautions[max_cautions - 1].0;
            cautions.retain(|c| c.0 >= kth);
        } else if max_cautions == 0 {
            cautions.clear();
        }
        if candidates.len() > k {
            candidates.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
            let kth = candidates[k - 1].0;
            // keep every candidate tied with the K-th: the slug decides among them
            candidates.retain(|c| c.0 >= kth);
        }
        let mut top = self.ranked(candidates)?;
        top.truncate(k);
        let mut kept = Vec::new();
        let held = top.iter().filter(|r| r.caution).count();
        if held < max_cautions {
            let mut extra = self.ranked(cautions)?;
            extra.retain(|c| !top.iter().any(|t| t.id == c.id));
            // never the first place: the best hit on its score always stays
            extra.truncate((max_cautions - held).min(k - 1));
            for c in extra {
                // a caution takes the place of the lowest-ranked hit that is not one
                if top.len() >= k {
                    let Some(i) = top.iter().rposition(|t| !t.caution) else {
                        break;
                    };
                    top.remove(i);
                }
                kept.push(c.id);
                top.push(c);
            }
        }
        // the kept cautions rank below every hit that ranked on its score
        Ok(top
            .into_iter()
            .map(|r| {
                let only = kept.contains(&r.id);
                (r, only)
            })
            .collect())
    }

    /// What scores the postings of a term of `kind` in segment `seg` (at `offset`).
    pub(super) fn list_scorer<'a>(
        &'a self,
        seg: &'a Segment,
        offset: usize,
        eligible: &'a Bits,
        cached: Option<&'a [AtomicU32]>,
        kind: text::Kind,
        settings: &Settings,
    ) -> Result<ListScorer<'a>, Corrupt> {
        let mut scorer = ListScorer {
            offset,
            local: seg.doc_count(),
            eligible: &eligible.0,
            cached,
            lens: [&[]; 4],
            avg: [0.0; 4],
            w: settings.field_weights,
            b: settings.b,
            k1: settings.k1,
            zero_adds_zero: cached.is_some()
                && settings.field_weights.iter().all(|w| w.is_finite())
                && (0.0..1.0).contains(&settings.b),
        };
        for f in 0..4 {
            let slot = score::slot(f, kind);
            scorer.lens[f] = seg.lens_of_slot(slot)?;
            scorer.avg[f] = self.stats.avg[slot];
        }
        Ok(scorer)
    }

    /// The top hits for a request: the gates as a bitset over doc ids, then BM25F accumulated
    /// term by term over the eligible docs (or, for a request without text, every eligible
    /// doc), then the top K by score with the cautions kept, each checked against its file.
    ///
    /// Only the docs that can reach the top K (or the cautions kept) are scored in full
    /// (MaxScore, `index/prune.rs`); the hits and their scores are the exhaustive search's, to the
    /// last bit.
    pub fn search(&self, req: &Request, settings: &Settings) -> Result<Search, Corrupt> {
        self.search_with(req, settings, false, None)
    }

    /// [`Index::search`] ranked by the hybrid similarity: each eligible doc's lexical
    /// similarity fused with its cosine to the request ([`crate::semantic::fuse`]), then the
    /// contract's factors as for a lexical search. Pruned as [`Index::search`] is, each doc's
    /// bound on its lexical part lowered by its cosine (a doc whose cosine alone can make the
    /// top K is scored whatever its terms): the same hits and scores, to the last bit, as
    /// scoring every eligible doc. A request without text is ranked by the prior alone, as
    /// without a model.
    pub fn search_hybrid(
        &self,
        req: &Request,
        settings: &Settings,
        semantic: Semantic<'_>,
    ) -> Result<Search, Corrupt> {
        self.search_with(req, settings, false, Some(semantic))
    }

    /// [`Index::search`] scoring every posting, term at a time: the oracle of the pruned
    /// search, for tests and benchmarks.
    #[doc(hidden)]
    pub fn search_exhaustive(&self, req: &Request, settings: &Settings) -> Result<Search, Corrupt> {
        self.search_with(req, settings, true, None)
    }

    /// [`Index::search`] (with a `semantic` side, [`Index::search_hybrid`]), pruned or
    /// (`exhaustive`, a cosine of weight 1, or settings the bounds do not hold for) scoring
    /// every posting.
    pub(super) fn search_with(
        &self,
        req: &Request,
        settings: &Settings,
        exhaustive: bool,
        semantic: Option<Semantic<'_>>,
    ) -> Result<Search, Corrupt> {
        let k = req.k.unwrap_or(settings.k);
        // a cosine of weight 1 leaves no lexical part to bound
        let cosine_only =
            semantic.is_some_and(|s| crate::semantic::effective_weight(s.weight) >= 1.0);
        if k == 0 || exhaustive || cosine_only || !bounds_hold(settings) {
            let mut scored = self.score_all(req, settings)?;
            scored.semantic = semantic;
            if k == 0 {
                return Ok(scored.search);
            }
            let candidates = self.matching(&scored, settings)?;
            return self.hits(scored, candidates, k, settings);
        }
        let (mut scored, terms) = self.gated(req, settings)?;
        scored.semantic = semantic;
        let candidates = if terms.is_empty() || scored.search.eligible == 0 {
            self.matching(&scored, settings)?
        } else {
            self.pruned(&mut scored, &terms, settings, k)?
        };
        self.hits(scored, candidates, k, settings)
    }

    /// The lesson of doc `id` (`path` under `root`), read from its file, if the file still has
    /// the bytes indexed (`stat`): parsed unless the index parsed them before; its ledger's
    /// conflicts read now (a ledger changes without its lesson).
    fn read_fields(
        &self,
        (root, dir): (&Path, &crate::walk::RootDir),
        path: &str,
        id: usize,
        stat: &FileStat,
    ) -> Option<LessonFields> {
        let file = root.join(path);
        let lock = || self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        // a kept parse is of the bytes indexed for `id`: a settled stat that still says what
        // it said then vouches for them, as it does when the index is checked (one `statx`,
        // not reading and hashing the file)
        let kept = lock().get(&id).cloned();
        // (the lock is not held over the stat)
        let kept = kept.filter(|_| {
            stat.settled
                && dir.stamp(Path::new(path))
                    == Some((stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino))
        });
        let parsed = match kept {
            Some(fields) => fields,
            None => {
                let size = usize::try_from(stat.size).unwrap_or(0);
                let bytes = dir.read(&file, Path::new(path), size).ok()?;
                if bytes.len() as u64 != stat.size || codec::checksum(&bytes) != stat.hash {
                    return None;
                }
                let fields = Arc::new(record::lesson_of_file(&file, bytes)?);
                let mut parsed = lock();
                if parsed.len() >= PARSED_KEPT {
                    parsed.clear();
                }
                parsed.insert(id, fields.clone());
                fields
            }
        };
        let mut fields = LessonFields::clone(&parsed);
        fields.ledger_conflicts = record::ledger_facts_in(dir, root, &fields.slug).conflicts;
        Some(fields)
    }

    /// The top K of `candidates`, each read from its file.
    fn hits(
        &self,
        scored: Scored,
        candidates: Vec<Candidate>,
        k: usize,
        settings: &Settings,
    ) -> Result<Search, Corrupt> {
        let top = self.top(candidates, k, scored.max_cautions(settings))?;
        let mut search = scored.search.clone();
        for (r, kept) in top {
            match self.hit(r.id, &r.path, r.sim, &scored, settings)? {
                Some(mut hit) => {
                    hit.kept_as_caution = kept;
                    search.hits.push(hit)
                }
                None => search.stale.push(r.path.clone()),
            }
        }
        crate::retrieve::mark_conflicts(&mut search.hits);
        Ok(search)
    }

    /// Why the live lesson `slug` is or is not among the top K for `req`: the first gate or
    /// threshold that excludes it, else its rank and score parts. A lesson in the top K is
    /// [`Explanation::Shown`] here; the prompt block's budget is the answer's to judge.
    pub fn explain(
        &self,
        req: &Request,
        settings: &Settings,
        slug: &str,
    ) -> Result<Explanation, Corrupt> {
        self.explain_hybrid(req, settings, slug, None)
    }

    /// [`Index::explain`] for the ranking [`Index::search_hybrid`] gives (`semantic`), or the
    /// lexical one (`None`).
    pub fn explain_hybrid<'r>(
        &self,
        req: &'r Request,
        settings: &Settings,
        slug: &str,
        semantic: Option<Semantic<'r>>,
    ) -> Result<Explanation, Corrupt> {
        let mut found = None;
        for id in 0..self.n {
            if !self.is_live(id) {
                continue;
            }
            let (seg, local) = self.locate(id);
            if seg.rank(local)?.is_lesson() && seg.slug(local)? == slug {
                found = Some(id);
                break;
            }
        }
        let Some(id) = found else {
            return Ok(Explanation::Unknown);
        };
        if let Some(h) = self.held.iter().find(|h| h.slug == slug) {
            return Ok(match &h.quarantine {
                Some(rules) if h.codes.is_empty() => Explanation::Quarantined {
                    rules: rules.clone(),
                },
                _ => Explanation::HeldBack {
                    codes: h.codes.clone(),
                },
            });
        }
        if !self.candidates.get(id) {
            let by = self
                .listed()?
                .into_iter()
                .filter(|l| l.supersedes.iter().any(|s| s == slug))
                .map(|l| l.slug)
                .collect();
            return Ok(Explanation::Superseded { by });
        }
        let now_ns = record::clamp_ns(req.now.as_nanosecond());
        if !req.include_expired {
            if let Some(&(_, at)) = self.expires.iter().find(|&&(d, _)| d as usize == id) {
                if at <= now_ns {
                    let expires_at = jiff::Timestamp::from_nanosecond(i128::from(at))
                        .map(|t| t.to_string())
                        .unwrap_or_default();
                    return Ok(Explanation::Expired { expires_at });
                }
            }
        }
        let mut scored = self.score_all(req, settings)?;
        scored.semantic = semantic;
        if !scored.eligible.get(id) {
            if let Some(list) = self.target_of(id)? {
                let set = &self
                    .target_sets()?
                    .get(list)
                    .ok_or(Corrupt("target list out of range"))?;
                if set.matching(scored.caller).is_none() {
                    return Ok(Explanation::Targets {
                        targets: set.targets.clone(),
                    });
                }
            }
            let (seg, local) = self.locate(id);
            let path = seg.path(local)?;
            let lesson = match &self.fields {
                Fields::Memory(f) => f.get(id).cloned().flatten(),
                Fields::Files(root, dir) => {
                    self.read_fields((root, dir), &path, id, &self.stat(id)?)
                }
                Fields::None => None,
            };
            return Ok(Explanation::Tags {
                request: scored.tags.gating.clone(),
                lesson: lesson.map(|l| l.tag_keys()).unwrap_or_default(),
            });
        }
        if let Similarity::Text { acc, total } = &scored.similarity {
            let a = acc[id];
            let lexical = if a > 0.0 && *total > 0.0 {
                a / total
            } else {
                0.0
            };
            let similarity = match scored.semantic {
                Some(s) => crate::semantic::fuse(lexical, s.cosine(id), s.weight),
                None => lexical,
            };
            if similarity <= 0.0 {
                return Ok(Explanation::NoMatch);
            }
            if similarity < settings.min_similarity {
                return Ok(Explanation::BelowMinSimilarity {
                    similarity,
                    min_similarity: settings.min_similarity,
                });
            }
        }
        let k = req.k.unwrap_or(settings.k);
        let candidates = self.matching(&scored, settings)?;
        let matching = candidates.len();
        let top = self.top(candidates.clone(), k, scored.max_cautions(settings))?;
        if let Some(rank) = top.iter().position(|(r, _)| r.id == id) {
            let (r, kept_as_caution) = &top[rank];
            return Ok(Explanation::Shown {
                rank: rank + 1,
                score: self.parts(id, r.sim, &scored, settings)?.0,
                kept_as_caution: *kept_as_caution,
            });
        }
        let ranked = self.ranked(candidates)?;
        let Some(rank) = ranked.iter().position(|r| r.id == id) else {
            // a score of 0 (a confidence of 0): never ranked
            return Ok(Explanation::NoMatch);
        };
        Ok(Explanation::BelowTopK {
            rank: rank + 1,
            matching,
            k,
            score: self.parts(id, ranked[rank].sim, &scored, settings)?.0,
        })
    }

    /// Whether nearly every lesson holds `term` (idf below [`score::MIN_IDF`]): such a term
    /// tells lessons apart no more than "the" does, and its posting list is the longest, so it
    /// is left out of the similarity (numerator and total alike). Decided on the exact number
    /// of live lessons holding it, so a patched index decides as a fresh one does; the list is
    /// only read when the delta leaves the count in doubt.
    pub(super) fn is_stop_term(&self, term: Term) -> Result<bool, Corrupt> {
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
            if let Some(list) = seg.postings(term)? {
                list.for_each_posting(|id, _| {
                    if self.is_live(id as usize + offset) {
                        df += 1;
                    }
                })?;
            }
        }
        Ok(score::idf(self.lessons, df) < score::MIN_IDF)
    }

    /// The docs that carry one of `keys` (known tags, normal form).
    fn docs_tagged(&self, keys: &[String]) -> Result<Bits, Corrupt> {
        let mut out = Bits::new(self.n);
        let segments: Vec<(segment::SegmentTags, usize)> = self
            .segments()
            .map(|(seg, offset)| Ok((seg.tags()?, offset)))
            .collect::<Result<_, Corrupt>>()?;
        for (key, lists) in self.tags.keys.iter().zip(&self.tags.lists) {
            if !keys.contains(key) {
                continue;
            }
            for &(s, i) in lists {
                let (tags, offset) = &segments[s];
                tags.docs(i, |id| {
                    let id = id as usize + offset;
                    if id < self.n {
                        out.set(id);
                    }
                })?;
            }
        }
        Ok(out)
    }

    /// Which docs pass status, targets and tags (`gating`: the request's tags that gate).
    fn gates(
        &self,
        req: &Request,
        now_ns: i64,
        caller: [Option<&str>; 3],
        gating: &[String],
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
            for (e, t) in eligible.0.iter_mut().zip(&self.targeted_docs()?.0) {
                *e &= !t;
            }
        } else {
            let targeted = self.targeted()?;
            let sets = match targeted.iter().any(|t| !t.pairs.is_empty()) {
                true => self.target_sets()?,
                false => &[],
            };
            let mut verdict: Vec<Option<bool>> = vec![None; sets.len()];
            for t in &targeted {
                for doc in t.docs() {
                    let (id, set) = doc?;
                    let ok = *verdict
                        .get_mut(set)
                        .ok_or(Corrupt("target list out of range"))?
                        .get_or_insert_with(|| sets[set].matching(caller).is_some());
                    if !ok {
                        eligible.clear(id);
                    }
                }
            }
        }
        // a request with gating tags, none of them the lesson's (or even the bank's): out
        if !gating.is_empty() {
            let mut allowed = self.docs_tagged(gating)?;
            for (a, t) in allowed.0.iter_mut().zip(&self.tags.tagged.0) {
                *a |= !t;
            }
            for (e, a) in eligible.0.iter_mut().zip(&allowed.0) {
                *e &= a;
            }
        }
        Ok(eligible)
    }

    /// The hit for doc `id`, or `None` when its file no longer has the indexed bytes.
    fn hit(
        &self,
        id: usize,
        path: &str,
        sim: f64,
        scored: &Scored,
        settings: &Settings,
    ) -> Result<Option<Hit>, Corrupt> {
        let read;
        let fields = match &self.fields {
            Fields::Memory(fields) => fields.get(id).and_then(Option::as_ref),
            Fields::Files(root, dir) => {
                read = self.read_fields((root, dir), path, id, &self.stat(id)?);
                read.as_ref()
            }
            Fields::None => return Err(Corrupt("an index without its files")),
        };
        let Some(l) = fields else {
            return Ok(None);
        };
        let targets = match self.target_of(id)? {
            None => TargetGate::Anyone,
            Some(list) => {
                let ts = self
                    .target_sets()?
                    .get(list)
                    .ok_or(Corrupt("target list out of range"))?;
                let i = ts.matching(scored.caller).ok_or(Corrupt("target gate"))?;
                TargetGate::Matched(ts.targets[i].clone())
            }
        };
        let tag_keys = l.tag_keys();
        let gating = &scored.tags.gating;
        let tags = if gating.is_empty() {
            TagGate::RequestUntagged
        } else if tag_keys.is_empty() {
            TagGate::LessonUntagged
        } else {
            TagGate::Shared(
                tag_keys
                    .iter()
                    .filter(|k| gating.contains(k))
                    .cloned()
                    .collect(),
            )
        };
        let expired = l.expires_ns.is_some_and(|at| at <= scored.now_ns);
        let mut declared = l.conflicts_with.clone();
        declared.extend(l.ledger_conflicts.iter().cloned());
        declared.sort();
        declared.dedup();
        Ok(Some(Hit {
            bank: None,
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
            score: self.parts(id, sim, scored, settings)?.0,
            gates: Gates {
                status: if expired { "expired" } else { "active" },
                targets,
                tags,
            },
            caution: l.failures > l.successes,
            kept_as_caution: false,
            conflicts_with: Vec::new(),
            declared_conflicts: declared,
        }))
    }

    /// Doc `id`'s score parts at similarity `similarity`, and whether it is a caution.
    pub(super) fn parts(
        &self,
        id: usize,
        similarity: f64,
        scored: &Scored,
        s: &Settings,
    ) -> Result<(ScoreParts, bool), Corrupt> {
        let (seg, local) = self.locate(id);
        let rank = seg.rank(local)?;
        // the lesson's last commit in git, else its ledger's newest event; never a file time
        let at_s = self.commit_time(id)?.or(rank.ledger_at_s);
        let confidence = score::confidence(rank.confidence);
        let count_factor = score::count_factor(rank.successes, rank.failures);
        let recency = at_s.map_or(1.0, |at| {
            score::recency(
                at.saturating_mul(1_000_000_000),
                scored.now_ns,
                s.half_life_days,
            )
        });
        let tag_boost = match &scored.boosted {
            Some(docs) if docs.get(id) => s.tag_boost,
            _ => 1.0,
        };
        let usage = match &s.usage {
            Some(figures) if s.usage_weight > 0.0 => Some(
                figures
                    .get(&seg.slug(local)?)
                    .copied()
                    .unwrap_or_default()
                    .rank_factor(s.usage_weight),
            ),
            _ => None,
        };
        let parts = ScoreParts {
            similarity,
            semantic: match (&scored.similarity, scored.semantic) {
                (Similarity::Text { .. } | Similarity::Bounded, Some(semantic)) => {
                    Some(semantic.cosine(id))
                }
                _ => None,
            },
            confidence,
            count_factor,
            recency,
            tag_boost,
            usage,
            score: similarity
                * confidence
                * count_factor
                * recency
                * tag_boost
                * usage.unwrap_or(1.0),
        };
        Ok((parts, rank.failures > rank.successes))
    }
}

/// A request's tags.
#[derive(Debug, Clone)]
struct RequestTags {
    /// Given by the caller, normal form, sorted.
    given: Vec<String>,
    /// Known tags among the request's words, not given, sorted.
    inferred: Vec<String>,
    /// The tags that gate: the given ones, else (with `inferred-tags = "gate"`) the inferred.
    gating: Vec<String>,
    /// The tags that raise a lesson's score (the inferred, with `inferred-tags = "boost"`).
    boosting: Vec<String>,
}

/// How similar each eligible doc is to the request.
#[derive(Debug)]
pub(super) enum Similarity {
    /// The request has no text (its tags only gate): similarity plays no part.
    NoText,
    /// Each doc's weighted BM25F sum, and the request's total (the normaliser).
    Text { acc: Vec<f64>, total: f64 },
    /// Scored by the pruned search, only where a doc could reach the top; the request's total.
    Bounded,
}

/// A matching doc: its score, similarity, id and whether it is a caution.
pub(super) type Candidate = (f64, f64, usize, bool);

/// A request gated and scored, before the top K.
pub(super) struct Scored<'r> {
    pub(super) search: Search,
    tags: RequestTags,
    pub(super) eligible: Bits,
    /// Docs carrying a boosting tag.
    pub(super) boosted: Option<Bits>,
    caller: [Option<&'r str>; 3],
    now_ns: i64,
    pub(super) similarity: Similarity,
    /// The semantic side of a hybrid search.
    pub(super) semantic: Option<Semantic<'r>>,
}

/// The semantic side of a hybrid search ([`Index::search_hybrid`]).
#[derive(Debug, Clone, Copy)]
pub struct Semantic<'a> {
    /// Each doc's cosine to the request, by doc id (a doc beyond them, or without a vector:
    /// 0).
    pub cosines: Cosines<'a>,
    /// The cosine's weight in the fused similarity (`[retrieve] semantic-weight`).
    pub weight: f64,
}

/// Each doc's cosine to a request, by doc id.
#[derive(Debug, Clone, Copy)]
pub enum Cosines<'a> {
    /// Computed.
    All(&'a [f32]),
    /// Being computed: each read waits for its doc's ([`Fed`]).
    Fed(&'a Fed<'a>),
}

impl<'a> Semantic<'a> {
    /// The semantic side with the cosines `cosines`, of weight `weight`.
    pub fn new(cosines: &'a [f32], weight: f64) -> Semantic<'a> {
        Semantic {
            cosines: Cosines::All(cosines),
            weight,
        }
    }

    /// Doc `id`'s cosine to the request.
    #[inline]
    pub(super) fn cosine(&self, id: usize) -> f64 {
        f64::from(match self.cosines {
            Cosines::All(all) => all.get(id).copied().unwrap_or(0.0),
            Cosines::Fed(fed) => fed.get(id),
        })
    }

    /// The cosines of docs `ids`, into `out` (as long).
    pub(super) fn window(&self, ids: std::ops::Range<usize>, out: &mut [f32]) {
        match self.cosines {
            Cosines::All(all) => {
                let held = ids.start.min(all.len())..ids.end.min(all.len());
                let n = held.len();
                out[..n].copy_from_slice(&all[held]);
                out[n..].fill(0.0);
            }
            Cosines::Fed(fed) => fed.window(ids, out),
        }
    }
}

impl Scored<'_> {
    /// Cautions kept among the top K: `max-cautions` for a request with text, none without
    /// (every lesson "matches" a request without text; its prior alone ranks it).
    pub(super) fn max_cautions(&self, settings: &Settings) -> usize {
        match self.similarity {
            Similarity::NoText => 0,
            Similarity::Text { .. } | Similarity::Bounded => settings.max_cautions,
        }
    }
}

/// A matching doc, placed.
#[derive(Debug, Clone)]
struct Ranked {
    score: f64,
    sim: f64,
    id: usize,
    caution: bool,
    slug: String,
    path: String,
}

/// What scoring the postings of one term in one segment needs.
pub(super) struct ListScorer<'a> {
    /// The segment's first doc id in the index.
    offset: usize,
    /// Docs in the segment.
    local: usize,
    eligible: &'a [u64],
    /// Inverse norms per doc and field (index id × 4 + field), as they are computed (none:
    /// each computed where it is needed).
    cached: Option<&'a [AtomicU32]>,
    /// Title, description, tags and body lengths per doc (segment ids, u32 each), for the
    /// term's kind, and their averages.
    lens: [&'a [u8]; 4],
    avg: [f64; 4],
    w: [f64; 4],
    b: f64,
    k1: f64,
    /// Whether a count of 0 adds exactly 0 to `tf~` (a finite weight × 0 × a finite norm):
    /// the norms kept, every weight finite and `b` in `[0, 1)` (where every norm is finite
    /// and positive; at `b = 1` an empty field's is infinite).
    zero_adds_zero: bool,
}

impl ListScorer<'_> {
    /// Fails unless every doc of the block is one of the segment's.
    #[inline]
    pub(super) fn check(&self, blk: &Block) -> Result<(), Corrupt> {
        if blk.ids[blk.len - 1] as usize >= self.local {
            return Err(Corrupt("doc id out of range"));
        }
        Ok(())
    }

    /// The saturated frequency `tf~ / (k1 + tf~)` of each posting of a block whose doc is
    /// eligible (0 for the others), with `tf~` summed over the fields in order (title first)
    /// as [`score::saturation`] sums it.
    #[inline]
    pub(super) fn block(&self, blk: &Block, sat: &mut [f64; codec::BLOCK]) -> Result<(), Corrupt> {
        self.check(blk)?;
        let mut others = [0.0f64; codec::BLOCK];
        for j in 0..blk.others {
            others[usize::from(blk.which[j])] = self.others(blk, j);
        }
        for (i, s) in sat.iter_mut().enumerate().take(blk.len) {
            *s = self.saturate(blk, i, others[i]);
        }
        Ok(())
    }

    /// [`ListScorer::block`]'s saturations of the postings `kept` alone (their places in the
    /// block, ascending; `flags` is 1 at their places, 0 elsewhere), to the last bit, each
    /// passed to `f` with its place.
    #[inline]
    pub(super) fn block_kept(
        &self,
        blk: &Block,
        kept: &[u8],
        flags: &[u8; codec::BLOCK],
        mut f: impl FnMut(usize, f64),
    ) -> Result<(), Corrupt> {
        const { assert!(codec::BLOCK <= 128) };
        self.check(blk)?;
        self.prefetch(blk, kept);
        let mut others = [0.0f64; codec::BLOCK];
        // the kept postings among those with other-field counts, gathered without a branch
        // (a branch on each one's bit mispredicted as often as the bits of `kept` vary), then
        // read
        let mut with = [0u8; codec::BLOCK];
        let mut m = 0;
        for j in 0..blk.others {
            with[m] = j as u8;
            m += usize::from(flags[usize::from(blk.which[j])]);
        }
        for &j in &with[..m] {
            let j = usize::from(j);
            others[usize::from(blk.which[j])] = self.others(blk, j);
        }
        for &i in kept {
            let i = usize::from(i);
            f(i, self.saturate(blk, i, others[i]));
        }
        Ok(())
    }

    /// [`ListScorer::block`]'s saturation of posting `i` alone, from its counts read in place
    /// (its block's ids decoded and checked, not its counts), to the last bit.
    #[inline]
    pub(super) fn one_counts(
        &self,
        blk: &Block,
        i: usize,
        (body, others): (u32, Option<[u32; BODY]>),
    ) -> f64 {
        let local = blk.ids[i] as usize;
        let others = others.map_or(0.0, |tf| self.others_of(local, tf));
        self.saturate_count(local, body, others)
    }

    /// What the fields before the body add to `tf~` for the `j`-th posting that has counts
    /// in them.
    #[inline]
    fn others(&self, blk: &Block, j: usize) -> f64 {
        let id = blk.ids[usize::from(blk.which[j])] as usize;
        self.others_of(id, std::array::from_fn(|f| blk.other_tf[f][j]))
    }

    /// What counts `tf` in the fields before the body add to `tf~` for doc `id` (segment id).
    #[inline]
    fn others_of(&self, id: usize, tf: [u32; BODY]) -> f64 {
        let mut x = 0.0;
        if self.zero_adds_zero {
            // every field, without a branch on its count (a doc's norms share a cache line;
            // the branch mispredicted as often as fields are empty, and a select of floats is
            // one on x86-64): a count of 0 adds ±0.0 to a sum that starts at +0.0, which
            // leaves its bits as passing the field over does
            for (f, &t) in tf.iter().enumerate() {
                x += self.w[f] * f64::from(t) * f64::from(self.norm(f, id));
            }
            return x;
        }
        for (f, &t) in tf.iter().enumerate() {
            if t == 0 {
                continue;
            }
            x += self.w[f] * f64::from(t) * f64::from(self.norm(f, id));
        }
        x
    }

    /// Doc `local`'s (segment id) inverse length norm in field `f`: computed once per doc,
    /// field and index when the index keeps a table (not for every doc up front: a pruned
    /// search scores a small part of the bank, and a new process spent a tenth of its time on
    /// the norms of docs it never reads); a race computes the same bits twice.
    #[inline]
    fn norm(&self, f: usize, local: usize) -> f32 {
        let Some(cached) = self.cached else {
            return self.norm_of(f, local);
        };
        // doc-major: the fields a posting reads share a cache line (field-major, 15% of a
        // warm search waited on their misses)
        let slot = &cached[(local + self.offset) * 4 + f];
        match slot.load(Ordering::Relaxed) {
            0 => self.norm_first(slot, f, local),
            bits => f32::from_bits(bits),
        }
    }

    /// Ask for the cache lines of the kept norms of the postings `kept` of `blk`, so that
    /// their misses overlap.
    #[inline]
    fn prefetch(&self, blk: &Block, kept: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(cached) = self.cached {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            for &i in kept {
                let at = (blk.ids[usize::from(i)] as usize + self.offset) * 4;
                if let Some(slot) = cached.get(at) {
                    // SAFETY: a prefetch reads nothing (and the address is in the table)
                    unsafe { _mm_prefetch::<_MM_HINT_T0>((slot as *const AtomicU32).cast()) };
                }
            }
        }
    }

    /// [`ListScorer::norm`] the first time: computed and kept (out of line, so that the
    /// lookup is inlined where it is read).
    #[cold]
    #[inline(never)]
    fn norm_first(&self, slot: &AtomicU32, f: usize, local: usize) -> f32 {
        let norm = self.norm_of(f, local);
        slot.store(norm.to_bits(), Ordering::Relaxed);
        norm
    }

    /// Doc `local`'s (segment id) inverse length norm in field `f`, from its length.
    #[inline]
    fn norm_of(&self, f: usize, local: usize) -> f32 {
        let l = &self.lens[f][local * 4..local * 4 + 4];
        let len = u32::from_le_bytes([l[0], l[1], l[2], l[3]]);
        score::inverse_norm(len, self.avg[f], self.b)
    }

    /// Posting `i`'s saturation, its other fields adding `others`.
    #[inline]
    fn saturate(&self, blk: &Block, i: usize, others: f64) -> f64 {
        self.saturate_count(blk.ids[i] as usize, blk.body[i], others)
    }

    /// The saturation of doc `local` (segment id) with body count `body`, its other fields
    /// adding `others`.
    #[inline]
    fn saturate_count(&self, local: usize, body_count: u32, others: f64) -> f64 {
        let id = local + self.offset;
        let eligible = (self.eligible[id >> 6] >> (id & 63)) & 1;
        // (a body count of 0 adds +0.0, as skipping it would)
        let norm = self.norm(BODY, local);
        let x = others + self.w[BODY] * f64::from(body_count) * f64::from(norm);
        x / (self.k1 + x) * eligible as f64
    }
}
