//! A batch of changes to a bank, planned in memory and written at the end: outcomes recorded
//! (`lesson record`'s own plan), candidates admitted (absorbed by the lesson they duplicate, or
//! new), conflicts marked.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::{AddError, Prepared};
use crate::bank::Bank;
use crate::curate::{edited, find, frontmatter, lesson_of, with_import};
use crate::curate::{CurateError, Stamp};
use crate::dedup::Pair;
use crate::document::Document;
use crate::edit::frontmatter::NewItem;
use crate::ledger::{Event, EventKind, EvidenceRef, Ledger, Merge};
use crate::lesson::Counts;
use crate::source::Source;

/// Why a candidate went into an existing lesson.
#[derive(Debug, Clone, PartialEq)]
pub enum Why {
    /// It has that lesson's slug (AIP-11: one slug, one lesson; a repeat is an update).
    SameSlug,
    /// Dedup found it a near-duplicate.
    Similar(Pair),
    /// It was merged into that lesson before: the lesson's ledger records a merge from the
    /// candidate's slug with some of its evidence.
    Recorded,
}

/// What became of one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Admitted {
    /// A new lesson.
    Created {
        /// Where the candidate came from.
        label: String,
        /// Its slug.
        slug: String,
        /// Its file.
        path: PathBuf,
        /// Its initial counts.
        counts: Counts,
        /// Lessons it conflicts with.
        conflicts_with: Vec<String>,
        /// The injection-carrier rules it tripped: written in quarantine, never served until
        /// `lesson review --approve` clears it.
        quarantine: Option<Vec<String>>,
    },
    /// Absorbed by an existing lesson, which gained the evidence items.
    Merged {
        /// Where the candidate came from.
        label: String,
        /// The candidate's slug.
        candidate: String,
        /// The lesson that absorbed it.
        into: String,
        /// That lesson's file.
        path: PathBuf,
        /// The evidence items appended (none: the lesson had them all; nothing changed).
        added: Vec<EvidenceRef>,
        /// Why it is a duplicate.
        why: Why,
    },
}

/// Changes to a bank, planned in memory: lesson texts (edited or new) and ledger events.
/// [`Batch::commit`] writes them; dropping the batch writes nothing.
pub struct Batch {
    /// The bank as it will be (documents replaced and added).
    pub bank: Bank,
    stamp: Stamp,
    run_id: Option<String>,
    /// Text on disk of each document changed so far (`None`: a new file).
    original: BTreeMap<PathBuf, Option<String>>,
    /// Ledgers as read, by slug.
    ledgers: BTreeMap<String, Ledger>,
    /// Events to append, by slug, in order.
    pending: BTreeMap<String, Vec<Event>>,
    /// Slugs of the new lessons.
    new_slugs: Vec<String>,
    /// The lessons' embeddings when a model is configured ([`Batch::set_embeddings`]): the
    /// dedup gate compares by meaning too, and a new lesson's vector joins them.
    embeddings: Option<crate::dedup::Embeddings>,
}

impl Batch {
    /// A batch on a bank loaded under the lock. Events are stamped with `stamp` and, when
    /// given, `run_id`.
    pub fn new(bank: Bank, stamp: Stamp, run_id: Option<String>) -> Batch {
        Batch {
            bank,
            stamp,
            run_id,
            original: BTreeMap::new(),
            ledgers: BTreeMap::new(),
            pending: BTreeMap::new(),
            new_slugs: Vec::new(),
            embeddings: None,
        }
    }

    /// Compare candidates by meaning too, with the bank's lessons' `embeddings` (see
    /// [`crate::dedup::duplicates_of_with`]).
    pub fn set_embeddings(&mut self, embeddings: Option<crate::dedup::Embeddings>) {
        self.embeddings = embeddings;
    }

    /// The embeddings, with the vectors of the lessons this batch created.
    pub fn embeddings(&self) -> Option<&crate::dedup::Embeddings> {
        self.embeddings.as_ref()
    }

    /// Whether anything would be written.
    pub fn is_empty(&self) -> bool {
        self.pending.values().all(Vec::is_empty)
            && self
                .original
                .iter()
                .all(|(path, before)| before.as_deref() == self.text_of(path) && before.is_some())
    }

    fn text_of(&self, path: &Path) -> Option<&str> {
        self.bank
            .documents
            .iter()
            .find(|d| d.source.path == path)
            .map(|d| d.source.text.as_str())
    }

    /// An event stamped for this batch.
    pub fn event(&self, kind: EventKind) -> Event {
        let event = self.stamp.event(kind);
        match &self.run_id {
            Some(id) => event.with_run_id(id),
            None => event,
        }
    }

    /// Events marked with this batch's run id, if it has one.
    fn for_run(&self, events: Vec<Event>) -> Vec<Event> {
        match &self.run_id {
            Some(id) => events.into_iter().map(|e| e.with_run_id(id)).collect(),
            None => events,
        }
    }

    /// The ledger of `slug` with this batch's events so far.
    pub fn ledger(&mut self, slug: &str) -> Result<Ledger, CurateError> {
        if !self.ledgers.contains_key(slug) {
            let ledger = Ledger::read(&self.bank.root, slug)?;
            self.ledgers.insert(slug.to_string(), ledger);
        }
        let disk = &self.ledgers[slug];
        match self.pending.get(slug) {
            Some(events) if !events.is_empty() => {
                let mut text = disk.text.clone();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.extend(events.iter().map(Event::to_line));
                Ok(Ledger::parse(&disk.path, text.as_bytes()))
            }
            _ => Ok(disk.clone()),
        }
    }

    /// Queue events for `slug`'s ledger.
    pub fn push(&mut self, slug: &str, events: Vec<Event>) {
        self.pending
            .entry(slug.to_string())
            .or_default()
            .extend(events);
    }

    /// Replace the document at `i` with its edited version.
    pub fn replace(&mut self, i: usize, doc: Document) {
        let old = std::mem::replace(&mut self.bank.documents[i], doc);
        // a new file is in `original` already, as `None`
        self.original
            .entry(old.source.path)
            .or_insert(Some(old.source.text));
    }

    /// Add a new lesson file.
    fn insert(&mut self, slug: &str, doc: Document) {
        let key = |p: &Path| p.as_os_str().as_encoded_bytes().to_vec();
        let at = self
            .bank
            .documents
            .partition_point(|d| key(&d.source.path) < key(&doc.source.path));
        self.original.insert(doc.source.path.clone(), None);
        self.new_slugs.push(slug.to_string());
        self.bank.documents.insert(at, doc);
    }

    /// Plan `lesson record`'s change; see [`crate::curate::record::plan`].
    pub fn record(
        &mut self,
        req: &crate::curate::record::Request,
    ) -> Result<crate::curate::record::Recorded, CurateError> {
        let i = find(&self.bank, &req.slug)?;
        let ledger = self.ledger(&req.slug)?;
        let planned =
            crate::curate::record::plan(&self.bank.documents[i], &ledger, req, &self.stamp)?;
        let events = self.for_run(planned.events);
        self.push(&req.slug, events);
        if planned.recorded.changed {
            self.replace(i, planned.doc);
        }
        Ok(planned.recorded)
    }

    /// Admit a prepared candidate: absorbed by the lesson with its slug, else by the lesson a
    /// merge from it was recorded into ([`Why::Recorded`]), else by the lesson dedup finds it
    /// duplicates (a lesson this batch created first, then the bank's), else a new lesson. A
    /// candidate that conflicts with lessons is never absorbed: both pieces of advice are kept.
    pub fn admit(&mut self, candidate: &Prepared) -> Result<Admitted, AddError> {
        let slug = candidate.lesson.slug.value.clone();
        let same_slug = self.bank.lessons().any(|(_, l)| l.slug.value == slug);
        // a merge copies only evidence into a live lesson: a quarantined candidate is merged
        // only when its evidence is clean
        let guarded = candidate.quarantine.is_some() && candidate.evidence_carriers;
        if same_slug {
            if guarded {
                return Err(CurateError::Refused(format!(
                    "{}: its evidence trips the injection-carrier rules ({}), so it cannot be merged into the live lesson `{slug}`; clean the evidence, or give it a slug of its own",
                    candidate.label,
                    candidate.quarantine.as_deref().unwrap_or_default().join(", ")
                ))
                .into());
            }
            if !candidate.conflicts_with.is_empty() {
                return Err(CurateError::Refused(format!(
                    "{}: the candidate conflicts with other lessons but has the slug of the existing lesson `{slug}`; give it a slug of its own",
                    candidate.label
                ))
                .into());
            }
            return Ok(self.absorb(candidate, &slug, Why::SameSlug)?);
        }
        if candidate.conflicts_with.is_empty() && !guarded {
            if let Some(into) = self.recorded_in(&candidate.lesson)? {
                return Ok(self.absorb(candidate, &into, Why::Recorded)?);
            }
            // a candidate the model cannot embed is compared by its words alone
            let vector = self
                .embeddings
                .as_ref()
                .and_then(|e| e.embed(&candidate.doc, &candidate.lesson).ok());
            let semantic = self.embeddings.as_ref().zip(vector.as_deref());
            let found = crate::dedup::duplicates_of_with(&self.bank, &candidate.lesson, semantic)?;
            // the batch's own lessons first: candidates are deduplicated among themselves
            // before against the bank
            let ours = found.iter().find(|p| self.new_slugs.contains(&p.a));
            if let Some(pair) = ours.or(found.first()).cloned() {
                let into = pair.a.clone();
                return Ok(self.absorb(candidate, &into, Why::Similar(pair))?);
            }
            return Ok(self.create(candidate, vector)?);
        }
        Ok(self.create(candidate, None)?)
    }

    /// The live lesson whose ledger records a merge from a candidate with `lesson`'s slug that
    /// brought one of `lesson`'s evidence items (the first by slug, if several do): where the
    /// same candidate went before, whatever dedup would say of it now.
    fn recorded_in(
        &mut self,
        lesson: &crate::lesson::Lesson,
    ) -> Result<Option<String>, CurateError> {
        let slug = lesson.slug.value.as_str();
        let keys: Vec<(&str, &str)> = lesson
            .evidence
            .iter()
            .map(|e| (e.kind.value.as_str(), e.reference.value.as_str()))
            .collect();
        // only lessons that list one of the items can have absorbed them
        let holders: Vec<String> = self
            .bank
            .by_slug()
            .into_iter()
            .filter(|(s, (_, l))| {
                *s != slug
                    && l.evidence.iter().any(|e| {
                        keys.contains(&(e.kind.value.as_str(), e.reference.value.as_str()))
                    })
            })
            .map(|(s, _)| s.to_string())
            .collect();
        for holder in holders {
            let ledger = self.ledger(&holder)?;
            let merged_here = ledger.entries.iter().any(|entry| match &entry.event.kind {
                EventKind::Merged(m) => {
                    m.from.as_deref() == Some(slug)
                        && m.evidence
                            .iter()
                            .any(|e| keys.contains(&(e.kind.as_str(), e.reference.as_str())))
                }
                _ => false,
            });
            if merged_here {
                return Ok(Some(holder));
            }
        }
        Ok(None)
    }

    /// Absorb `candidate` into the lesson `into` (of the bank, or created by this batch).
    pub fn merge_into(
        &mut self,
        candidate: &Prepared,
        into: &str,
        why: Why,
    ) -> Result<Admitted, AddError> {
        Ok(self.absorb(candidate, into, why)?)
    }

    /// Write `candidate` as a new lesson, whatever dedup says of it (`lesson promote` has
    /// asked dedup itself), with `first` as the first event of its ledger in place of
    /// `created`.
    pub(crate) fn create_with(
        &mut self,
        candidate: &Prepared,
        first: Event,
    ) -> Result<Admitted, CurateError> {
        let admitted = self.create(candidate, None)?;
        if let Some(events) = self.pending.get_mut(&candidate.lesson.slug.value) {
            events[0] = first;
        }
        Ok(admitted)
    }

    fn create(
        &mut self,
        candidate: &Prepared,
        vector: Option<Vec<f32>>,
    ) -> Result<Admitted, CurateError> {
        let slug = candidate.lesson.slug.value.clone();
        if let Some(path) = crate::curate::new::existing(&self.bank, &slug) {
            return Err(CurateError::Refused(format!(
                "{}: the slug `{slug}` is taken by {} (an archived lesson or a ledger keeps it); give the candidate another slug",
                candidate.label,
                path.display()
            )));
        }
        for (with, _) in &candidate.conflicts_with {
            if with == &slug {
                return Err(CurateError::Refused(format!(
                    "{}: a lesson cannot conflict with itself",
                    candidate.label
                )));
            }
            find(&self.bank, with).map_err(|e| {
                CurateError::Refused(format!(
                    "{}: it conflicts with `{with}`, which is not a lesson of the bank: {e}",
                    candidate.label
                ))
            })?;
        }
        let path = crate::curate::new::lesson_path(&self.bank.root, &slug);
        let doc = Document::parse(
            Source::new(path.clone(), candidate.doc.source.text.clone()),
            None,
        );
        self.insert(&slug, doc);
        if let (Some(embeddings), Some(vector)) = (&mut self.embeddings, vector) {
            let at = crate::retrieve::store::relative(&self.bank.root, &path);
            embeddings.insert(at, &vector);
        }
        let created = self.event(EventKind::Created(candidate.counts));
        self.push(&slug, vec![created]);
        if let Some(rules) = &candidate.quarantine {
            let quarantined = self.event(EventKind::Quarantined {
                rules: rules.clone(),
            });
            self.push(&slug, vec![quarantined]);
        }
        for (with, note) in &candidate.conflicts_with {
            let mine = self.event(EventKind::Conflict {
                with: with.clone(),
                note: note.clone(),
            });
            self.push(&slug, vec![mine]);
            let i = find(&self.bank, with)?;
            let ledger = self.ledger(with)?;
            let theirs = EventKind::Conflict {
                with: slug.clone(),
                note: note.clone(),
            };
            let events = self.for_run(with_import(
                &ledger,
                lesson_of(&self.bank.documents[i]),
                &self.stamp,
                theirs,
            ));
            self.push(with, events);
        }
        Ok(Admitted::Created {
            label: candidate.label.clone(),
            slug,
            path,
            counts: candidate.counts,
            conflicts_with: candidate
                .conflicts_with
                .iter()
                .map(|(s, _)| s.clone())
                .collect(),
            quarantine: candidate.quarantine.clone(),
        })
    }

    /// Append the candidate's evidence items that `into` lacks, one span edit each, and a
    /// `merged` event; nothing else of `into` changes.
    fn absorb(
        &mut self,
        candidate: &Prepared,
        into: &str,
        why: Why,
    ) -> Result<Admitted, CurateError> {
        let i = find(&self.bank, into)?;
        let mut doc = self.bank.documents[i].clone();
        let mut added: Vec<EvidenceRef> = Vec::new();
        for e in &candidate.lesson.evidence {
            let item = EvidenceRef {
                kind: e.kind.value.as_str().to_string(),
                reference: e.reference.value.clone(),
                note: e.note.as_ref().map(|n| n.value.clone()),
            };
            let listed = lesson_of(&doc)
                .evidence
                .iter()
                .any(|x| x.kind.value.as_str() == item.kind && x.reference.value == item.reference);
            if listed
                || added
                    .iter()
                    .any(|a| a.kind == item.kind && a.reference == item.reference)
            {
                continue;
            }
            let fm = frontmatter(&doc)?;
            let edit = fm
                .append_evidence(NewItem {
                    kind: &item.kind,
                    reference: &item.reference,
                    note: item.note.as_deref(),
                })
                .map_err(|e| crate::curate::uneditable(&doc, e))?;
            doc = edited(&doc, std::slice::from_ref(&edit), |old, new| {
                let mut expected: Vec<_> = old.evidence.iter().map(evidence_key).collect();
                expected.push((item.kind.clone(), item.reference.clone(), item.note.clone()));
                let got: Vec<_> = new.evidence.iter().map(evidence_key).collect();
                if got != expected {
                    return Some("the evidence list is not the old one plus the new item".into());
                }
                (crate::curate::json_without(old, &["evidence"])
                    != crate::curate::json_without(new, &["evidence"]))
                .then(|| "a field other than the evidence changed".into())
            })?;
            added.push(item);
        }
        let path = doc.source.path.clone();
        if !added.is_empty() {
            let ledger = self.ledger(into)?;
            let kind = EventKind::Merged(Merge {
                into: None,
                from: Some(candidate.lesson.slug.value.clone()),
                evidence: added.clone(),
            });
            let events = self.for_run(with_import(
                &ledger,
                lesson_of(&self.bank.documents[i]),
                &self.stamp,
                kind,
            ));
            self.push(into, events);
            self.replace(i, doc);
        }
        Ok(Admitted::Merged {
            label: candidate.label.clone(),
            candidate: candidate.lesson.slug.value.clone(),
            into: into.to_string(),
            path,
            added,
            why,
        })
    }

    /// Write everything: the ledgers of existing lessons first, then their files (a writer
    /// killed in between leaves counts behind their ledger, which L001 repairs); each new
    /// lesson's file before its ledger (killed in between, it simply has no ledger yet); then
    /// `_index.md`. The index is rendered before the first write, so a broken template stops
    /// the batch with nothing written.
    pub fn commit(self) -> Result<(), AddError> {
        let root = self.bank.root.clone();
        let index = crate::index_md::render_parts(&self.bank).map_err(CurateError::from)?;
        self.write(&root, &index).map_err(AddError::PartlyWritten)
    }

    fn write(self, root: &Path, index: &crate::index_md::Rendered) -> Result<(), CurateError> {
        let mut ledgers = self.ledgers;
        let mut append = |slug: &str, events: &[Event]| -> Result<(), CurateError> {
            if events.is_empty() {
                return Ok(());
            }
            if !ledgers.contains_key(slug) {
                ledgers.insert(slug.to_string(), Ledger::read(root, slug)?);
            }
            let ledger = ledgers.get_mut(slug).expect("inserted above");
            ledger.append(root, events)?;
            Ok(())
        };
        let new_slugs = &self.new_slugs;
        // every target is checked before the first write: a refused one writes nothing
        let mut targets: Vec<std::path::PathBuf> = self
            .pending
            .keys()
            .map(|slug| crate::ledger::path(root, slug))
            .collect();
        targets.extend(self.original.keys().cloned());
        targets.extend(
            new_slugs
                .iter()
                .map(|slug| crate::curate::new::lesson_path(root, slug)),
        );
        targets.push(self.bank.index_path());
        crate::edit::check_targets(root, targets.iter().map(|p| p.as_path()))?;
        for (slug, events) in &self.pending {
            if !new_slugs.contains(slug) {
                append(slug, events)?;
            }
        }
        let by_path: HashMap<&Path, &Document> = self
            .bank
            .documents
            .iter()
            .map(|d| (d.source.path.as_path(), d))
            .collect();
        for (path, before) in &self.original {
            let doc = by_path[path.as_path()];
            if before.as_deref().is_some_and(|b| b != doc.source.text) {
                crate::edit::write_atomic(root, path, doc.source.text.as_bytes())?;
            }
        }
        for slug in new_slugs {
            let path = crate::curate::new::lesson_path(root, slug);
            let doc = by_path[path.as_path()];
            crate::edit::write_atomic(root, &path, doc.source.text.as_bytes())?;
            if let Some(events) = self.pending.get(slug) {
                append(slug, events)?;
            }
        }
        crate::index_md::write_if_changed(&self.bank, index)?;
        Ok(())
    }
}

/// The labels of the candidates that became new lessons.
pub fn created_labels(admitted: &[Admitted]) -> Vec<&str> {
    admitted
        .iter()
        .filter_map(|a| match a {
            Admitted::Created { label, .. } => Some(label.as_str()),
            Admitted::Merged { .. } => None,
        })
        .collect()
}

fn evidence_key(e: &crate::lesson::Evidence) -> (String, String, Option<String>) {
    (
        e.kind.value.as_str().to_string(),
        e.reference.value.clone(),
        e.note.as_ref().map(|n| n.value.clone()),
    )
}
