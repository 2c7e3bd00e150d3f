//! Loading an index: built from records, or opened from a base and its delta, with what is
//! derived from them; and the live docs read back (for checking against the files and for
//! `_index.md`).

use super::*;

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
            commits: None,
            candidates: Bits::default(),
            held: Vec::new(),
            expires: Vec::new(),
            target_sets: OnceLock::new(),
            targeted_bits: OnceLock::new(),
            tags: Tags::default(),
            lessons: 0,
            stats: FieldStats::new(&[0; LEN_SLOTS], 0),
            norms: Mutex::new(None),
            skips: Mutex::default(),
            searched: AtomicBool::new(false),
            priors: OnceLock::new(),
            paths: OnceLock::new(),
            fields: Fields::None,
            parsed: Mutex::default(),
        };
        index.derive()?;
        Ok(index)
    }

    /// Rank by each lesson's last commit (its provenance's `changed` time) instead of its
    /// ledger: the recency input of a bank in git. `None` (a bank outside git) ranks by the
    /// ledgers again. A lesson no commit holds yet keeps its ledger's time.
    pub fn set_provenance(&mut self, provenance: Option<Arc<crate::git::provenance::Provenance>>) {
        // a bank whose lessons no commit holds ranks by its ledgers throughout
        self.commits = provenance
            .filter(|p| !p.is_empty())
            .map(|provenance| Commits {
                provenance,
                times: (0..self.n).map(|_| AtomicI64::new(NOT_LOOKED_UP)).collect(),
            });
    }

    /// The time of doc `id`'s last commit (seconds), when the bank is in git and a commit
    /// holds it: looked up in the provenance by the doc's path on first use, then kept.
    pub(super) fn commit_time(&self, id: usize) -> Result<Option<i64>, Corrupt> {
        let Some(commits) = &self.commits else {
            return Ok(None);
        };
        let Some(slot) = commits.times.get(id) else {
            return Ok(None);
        };
        let mut t = slot.load(Ordering::Relaxed);
        if t == NOT_LOOKED_UP {
            t = commits
                .provenance
                .get(&self.path(id)?)
                .map_or(NOT_COMMITTED, |s| s.changed.time.as_second());
            slot.store(t, Ordering::Relaxed);
        }
        Ok((t != NOT_COMMITTED).then_some(t))
    }

    /// Read what hits show from the files under `root`.
    pub fn reading_files_at(mut self, root: &Path) -> Index {
        self.fields = Fields::Files(root.to_path_buf(), crate::walk::RootDir::open(root));
        self
    }

    pub(super) fn segments(&self) -> impl Iterator<Item = (&Segment, usize)> {
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
        // a lesson with an error-level finding in its own file is never served
        let mut held = Vec::new();
        for (seg, offset) in self.segments() {
            for (id, codes) in seg.all_held()? {
                if !lessons.get(offset + id as usize) {
                    continue;
                }
                candidates.clear(offset + id as usize);
                let path = seg.path(id as usize)?;
                let (codes, quarantine) = record::split_marks(codes.iter().copied());
                held.push(HeldBack {
                    slug: seg.slug_of(id as usize, &path)?,
                    path,
                    codes,
                    quarantine,
                });
            }
        }
        held.sort_by(|a, b| path_order(&a.path, &b.path));
        self.held = held;
        self.candidates = candidates;

        // expiry, of live docs, by global id (the base's list as it is read; a delta's
        // appended, its ids moved on); targets are read in place ([`Index::targeted`])
        let mut expires: Vec<(u32, i64)> = Vec::new();
        for (seg, offset) in self.segments() {
            let local = seg.doc_count();
            let mut seg_expires = seg.expires()?;
            if seg_expires.iter().any(|&(id, _)| id as usize >= local) {
                return Err(Corrupt("expiring doc out of range"));
            }
            if offset > 0 {
                for (id, _) in &mut seg_expires {
                    *id += offset as u32;
                }
            }
            if expires.is_empty() {
                expires = seg_expires;
            } else {
                expires.extend(seg_expires);
            }
        }
        self.expires = expires;
        self.tags = self.tags_of(&lessons)?;
        Ok(())
    }

    /// The live lessons that a live lesson supersedes. Each segment counts, per doc, the
    /// lessons of its own that supersede it; across a base and its delta, deleted base lessons
    /// are taken out of the counts and the two segments' lessons are matched by slug hash.
    fn superseded(&self) -> Result<Vec<u32>, Corrupt> {
        let base = &*self.base;
        let base_count = self.base_count;
        // the base's counts as they are (ascending, often many), and what a delta changes
        let own = base.superseded()?;
        let mut count: HashMap<u32, i64> = HashMap::new();
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
        let mut out = Vec::with_capacity(own.len());
        for (id, c) in own {
            if id as usize >= base_count {
                return Err(Corrupt("superseded doc out of range"));
            }
            if i64::from(c) + count.remove(&id).unwrap_or(0) > 0 {
                out.push(id);
            }
        }
        out.extend(count.into_iter().filter(|&(_, c)| c > 0).map(|(id, _)| id));
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

    /// Each segment's targeted docs, with its first doc id, its doc count and its first
    /// target list (the lists numbered across the segments, as [`Index::target_sets`] has
    /// them).
    pub(super) fn targeted(&self) -> Result<Vec<Targeted<'_>>, Corrupt> {
        let mut out = Vec::with_capacity(2);
        let mut first = 0usize;
        for (seg, offset) in self.segments() {
            let pairs = seg.target_pairs()?;
            out.push(Targeted {
                pairs,
                offset,
                local: seg.doc_count(),
                first,
            });
            first += pairs.sets as usize;
        }
        Ok(out)
    }

    /// The docs with targets (what a search without a caller leaves out), as a bitset made
    /// once per index.
    pub(super) fn targeted_docs(&self) -> Result<&Bits, Corrupt> {
        self.targeted_bits
            .get_or_init(|| {
                let mut bits = Bits::new(self.n);
                for t in self.targeted()? {
                    for doc in t.docs() {
                        bits.set(doc?.0);
                    }
                }
                Ok(bits)
            })
            .as_ref()
            .map_err(|e| *e)
    }

    /// Doc `id`'s target list (numbered as [`Index::target_sets`] has them), if it has
    /// targets.
    pub(super) fn target_of(&self, id: usize) -> Result<Option<usize>, Corrupt> {
        for t in self.targeted()? {
            if (t.offset..t.offset + t.local).contains(&id) {
                return t
                    .pairs
                    .of((id - t.offset) as u32)
                    .map(|set| t.list(set))
                    .transpose();
            }
        }
        Ok(None)
    }

    /// The target lists of both segments (decoded when a caller first needs them).
    pub(super) fn target_sets(&self) -> Result<&[TargetSet], Corrupt> {
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

    /// Check every byte of the base and the delta now: each section, each posting list.
    pub fn check_all(&self) -> Result<(), Corrupt> {
        self.segments().try_for_each(|(seg, _)| seg.check_all())
    }

    /// Take the base and the delta as checked ([`Segment::trust`]): for an index whose
    /// identity a process that checked it whole vouches for.
    pub(crate) fn trust(&self) {
        self.segments().for_each(|(seg, _)| seg.trust());
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

    /// Live lessons held back for error-level findings in their own file (left out of
    /// `_index.md` as `lesson index` leaves them out) or in quarantine (listed there as
    /// quarantined), in path order: never served.
    pub fn held_back(&self) -> &[HeldBack] {
        &self.held
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
    pub(super) fn locate(&self, id: usize) -> (&Segment, usize) {
        match id.checked_sub(self.base_count) {
            None => (&self.base, id),
            Some(local) => (self.delta.as_ref().expect("a delta doc"), local),
        }
    }

    /// The stat of a doc.
    pub fn stat(&self, id: usize) -> Result<FileStat, Corrupt> {
        if !self.restat.is_empty() && id < self.base_count {
            if let Some(stat) = self.restat.get(&(id as u32)) {
                return Ok(*stat);
            }
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
    pub fn entries(&self) -> Result<Vec<IndexedFile<'_>>, Corrupt> {
        let paths = self
            .paths
            .get_or_init(|| {
                // room for typical paths up front: growing copies the text each time, and
                // pages of a large reservation that are never written are never touched
                let mut text = String::with_capacity(self.n * 64);
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
                Ok(IndexedFile {
                    id,
                    path: &paths.text[start..end],
                    stat: self.stat(id as usize)?,
                })
            })
            .collect()
    }

    /// One more than the largest doc id (base docs, then delta docs; dead ones included).
    pub fn id_count(&self) -> usize {
        self.n
    }

    /// For each of `keys` (the hashes of paths relative to the root, as the segments' path
    /// index keeps them, ascending), the live docs whose path has that hash, as `(the key's
    /// place in keys, doc id, the doc's stamp)`: the doc of the path, if there is one, and any
    /// other doc whose path shares its 64-bit hash; the stamp is what the doc's stat says now
    /// ([`Index::stat`] but for the hash). Nothing is read but the path indexes (and the
    /// delta's new stats): each segment's docs come in the keys' order.
    pub fn docs_with_path_hashes(
        &self,
        keys: &[u64],
    ) -> Result<Vec<(u32, u32, FileStamp)>, Corrupt> {
        let mut out = Vec::with_capacity(keys.len());
        for (seg, offset) in self.segments() {
            let count = seg.doc_count();
            let mut bad = false;
            seg.join_path_hashes(keys, |i, local, stamp| {
                let id = offset + local as usize;
                bad |= local as usize >= count;
                if !bad && self.is_live(id) {
                    let stamp = match id < self.base_count && !self.restat.is_empty() {
                        true => self.restat.get(&(id as u32)).map_or(stamp, FileStat::stamp),
                        false => stamp,
                    };
                    out.push((i as u32, id as u32, stamp));
                }
            })?;
            if bad {
                return Err(Corrupt("doc id out of range"));
            }
        }
        Ok(out)
    }

    /// The live doc at `path` (relative to the root, `/`-separated), if any: a binary search
    /// of the delta's paths, then of the base's (each segment's docs are in path order).
    pub fn find<'p>(&self, path: &'p str) -> Result<Option<IndexedFile<'p>>, Corrupt> {
        for (seg, offset) in self.segments().collect::<Vec<_>>().into_iter().rev() {
            let at = seg.lower_bound(path)?;
            if at < seg.doc_count() && self.is_live(offset + at) && seg.path(at)? == path {
                let id = offset + at;
                return Ok(Some(IndexedFile {
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

    /// The paths of the live lessons with `slug` (in path order), and the slugs of the live
    /// lessons that supersede it (sorted): looked up by the slug's hash, reading no other doc.
    pub fn slug_lookup(&self, slug: &str) -> Result<(Vec<String>, Vec<String>), Corrupt> {
        let h = segment::slug_hash(slug);
        let mut paths = Vec::new();
        let mut by = Vec::new();
        for (seg, offset) in self.segments() {
            let live = |local: u32| {
                let local = local as usize;
                (local < seg.doc_count() && self.is_live(offset + local)).then_some(local)
            };
            for local in seg.docs_with_slug_hash(h)?.into_iter().filter_map(live) {
                let path = seg.path(local)?;
                if seg.rank(local)?.is_lesson() && seg.slug_of(local, &path)? == slug {
                    paths.push(path);
                }
            }
            for local in seg.superseders_of(h)?.into_iter().filter_map(live) {
                let own = seg.slug(local)?;
                if segment::superseded_slugs(&own, &seg.supersedes(local)?).contains(&slug) {
                    by.push(own);
                }
            }
        }
        paths.sort_by(|a, b| path_order(a, b));
        by.sort_unstable();
        by.dedup();
        Ok((paths, by))
    }

    /// Every `(superseded slug, superseding slug)` pair the live lessons declare, reading only
    /// the docs that supersede something: what a layered search applies across banks.
    pub fn supersession(&self) -> Result<Vec<(String, String)>, Corrupt> {
        let mut out = Vec::new();
        for (seg, offset) in self.segments() {
            for (local, list) in seg.all_supersedes()? {
                let local = local as usize;
                if local >= seg.doc_count()
                    || !self.is_live(offset + local)
                    || !seg.rank(local)?.is_lesson()
                {
                    continue;
                }
                let own = seg.slug(local)?;
                for old in segment::superseded_slugs(&own, &list) {
                    out.push((old.to_string(), own.clone()));
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
}
