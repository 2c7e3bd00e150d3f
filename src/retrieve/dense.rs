//! The semantic side of a bank's retriever (`[retrieve] model`): the model, the lessons'
//! vectors ([`Vectors`], in `.lesson/retrieve.vectors`) kept current with the index, and each
//! lesson's cosine to a request.
//!
//! - **When**: after every check of the files (open, refresh, a watcher's batch) and before a
//!   search whose index changed since, the lessons whose bytes have no vector yet are read,
//!   embedded (title, description and body) and kept; vectors of bytes no longer in the bank
//!   are dropped. An edit embeds one lesson; a rebuild of the index embeds none that it had.
//! - **Never in the way**: a model that is missing, damaged, or fails on a text turns the
//!   semantic side off with the reason ([`Retriever::semantic_problem`]); the search goes on
//!   lexically. A bank that cannot be written keeps its vectors in memory.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::marker::Identity;
use super::record::LessonFields;
use super::store::{read_record, state_path, Retriever};
use super::vectors::{Fed, Vectors};
use super::{Request, RetrieveError};
use crate::document::Document;
use crate::edit;
use crate::lesson::Lesson;
use crate::semantic::{Embedder, ModelError};

pub use crate::layout::VECTORS_FILE;

/// Lessons embedded per call of the model, and between two writes of the vectors (an
/// interrupted first build keeps what it embedded).
const CHUNK: usize = 512;

/// A retriever's semantic side.
#[derive(Debug)]
pub(super) struct Dense {
    embedder: Arc<dyn Embedder>,
    vectors: Vectors,
    /// The weight of the cosine (`[retrieve] semantic-weight`).
    weight: f64,
    /// Each doc id's slot in `vectors` (`u32::MAX`: none), for the index `synced`.
    slot_of: Vec<u32>,
    synced: Option<Identity>,
    /// Hashes of files that are no lesson (nothing to embed), so they are not read again.
    not_lessons: HashSet<u64>,
}

impl Dense {
    /// The semantic side for `embedder`, with the vectors `.lesson/` holds for it.
    pub(super) fn open(root: &Path, embedder: Arc<dyn Embedder>, weight: f64) -> Dense {
        let vectors = std::fs::read(state_path(root, VECTORS_FILE))
            .ok()
            .and_then(|b| Vectors::decode(&b, embedder.identity(), embedder.dimension()))
            .unwrap_or_else(|| Vectors::new(embedder.identity(), embedder.dimension()));
        Dense {
            embedder,
            vectors,
            weight,
            slot_of: Vec::new(),
            synced: None,
            not_lessons: HashSet::new(),
        }
    }

    /// The vectors held.
    pub(super) fn vectors(&self) -> &Vectors {
        &self.vectors
    }
}

/// The lessons' embeddings, for the semantic side of dedup (`crate::dedup::pairs_with`, with
/// a model in `[retrieve] model`): each lesson file's vector by its path under the bank root,
/// as the retrieval index keeps them ([`Retriever::embeddings`]), and the model, for a lesson
/// not yet in the bank.
#[derive(Debug, Clone)]
pub struct Embeddings {
    slots: HashMap<String, u32>,
    vectors: Vectors,
    embedder: Arc<dyn Embedder>,
}

impl Embeddings {
    /// The vectors of `embedder` in `vectors`, each lesson file's slot by its path under the
    /// bank root (`/`-separated).
    pub fn new(slots: HashMap<String, u32>, vectors: Vectors, embedder: Arc<dyn Embedder>) -> Self {
        Embeddings {
            slots,
            vectors,
            embedder,
        }
    }

    /// Give the lesson file at `path` (under the bank root, `/`-separated) the vector
    /// `vector`: a lesson written since the embeddings were read.
    pub fn insert(&mut self, path: String, vector: &[f32]) {
        // a key no file of the index has (keys are hashes of file bytes)
        let mut key = super::text::fnv1a(path.as_bytes());
        while self.vectors.slot(key).is_some() {
            key = key.wrapping_add(1);
        }
        self.vectors.insert(key, vector);
        if let Some(slot) = self.vectors.slot(key) {
            self.slots.insert(path, slot);
        }
    }

    /// The slot of the lesson file at `path` (under the bank root) among [`Embeddings::vectors`].
    pub fn slot(&self, path: &str) -> Option<u32> {
        self.slots.get(path).copied()
    }

    /// The vectors.
    pub fn vectors(&self) -> &Vectors {
        &self.vectors
    }

    /// Lesson files with a vector.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no lesson file has a vector.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The model.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The vector of a lesson that is not in the bank yet (`doc`, read from its bytes), as
    /// the retrieval index embeds a lesson: title, description and body.
    pub fn embed(&self, doc: &Document, lesson: &Lesson) -> Result<Vec<f32>, ModelError> {
        let body = doc
            .body
            .as_ref()
            .and_then(|b| doc.source.text.get(b.start..))
            .unwrap_or_default();
        let text = text_of(&lesson.title.value, &lesson.trigger.description.value, body);
        let mut vectors = self.embedder.embed(&[text.as_str()])?;
        Ok(vectors.pop().unwrap_or_default())
    }
}

/// The text of a lesson its vector embeds: title, description and body, a line apart.
pub fn embedding_text(l: &LessonFields) -> String {
    text_of(&l.title, &l.description, &l.body)
}

fn text_of(title: &str, description: &str, body: &str) -> String {
    format!("{title}\n{description}\n{}", body.trim())
}

impl Retriever {
    /// Open the model of `[retrieve] model`, if any (a failure is kept as the semantic
    /// problem; the retriever is lexical then).
    pub(super) fn open_model(&mut self) {
        let Some(dir) = self.config().retrieve.model_dir(self.root()) else {
            return;
        };
        match crate::semantic::load(&dir) {
            Ok(embedder) => {
                let weight = self.config().retrieve.semantic_weight;
                let weight = weight.unwrap_or_else(|| embedder.default_weight());
                self.dense = Some(Dense::open(self.root(), embedder, weight));
            }
            Err(problem) => self.semantic_problem = Some(Arc::new(problem)),
        }
    }

    /// Use `embedder` for semantic retrieval (`None`: lexical only), in place of the model of
    /// `[retrieve] model`: for a runtime that holds its own model, and for tests. The
    /// lessons' vectors are brought up to date at once.
    pub fn set_embedder(
        &mut self,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<(), RetrieveError> {
        self.semantic_problem = None;
        self.dense = embedder.map(|e| {
            let weight = self.config().retrieve.semantic_weight;
            let weight = weight.unwrap_or_else(|| e.default_weight());
            Dense::open(self.root(), e, weight)
        });
        self.last.embedded = self.sync_vectors()?;
        Ok(())
    }

    /// Why semantic retrieval is off although `[retrieve] model` names a model (it cannot be
    /// loaded, or failed on a text): the search is lexical then.
    pub fn semantic_problem(&self) -> Option<&ModelError> {
        self.semantic_problem.as_deref()
    }

    /// Whether searches rank by the hybrid similarity (a model is configured and works).
    pub fn is_semantic(&self) -> bool {
        self.dense.is_some()
    }

    /// Lessons that have a vector (none without a model).
    pub fn embedded_lessons(&self) -> usize {
        self.dense.as_ref().map_or(0, |d| d.vectors().len())
    }

    /// Bring the vectors up to date with the index: embed the lessons whose bytes have none,
    /// drop the vectors of bytes gone, and keep the result in `.lesson/`. Returns how many
    /// lessons were embedded. A model that fails turns the semantic side off.
    pub(super) fn sync_vectors(&mut self) -> Result<usize, RetrieveError> {
        if self.dense.is_none() {
            return Ok(0);
        }
        let identity = self.identity();
        if self.dense.as_ref().and_then(|d| d.synced) == Some(identity) {
            return Ok(0);
        }
        let entries: Vec<(u32, String, u64)> = self
            .index()
            .entries()?
            .into_iter()
            .map(|e| (e.id, e.path.to_string(), e.stat.hash))
            .collect();
        let dense = self.dense.as_ref().expect("checked");
        let mut wanted: HashSet<u64> = HashSet::new();
        let missing: Vec<(&str, u64)> = entries
            .iter()
            .filter(|(_, _, hash)| {
                dense.vectors.slot(*hash).is_none()
                    && !dense.not_lessons.contains(hash)
                    && wanted.insert(*hash)
            })
            .map(|(_, path, hash)| (path.as_str(), *hash))
            .collect();
        let root = self.root().to_path_buf();
        let (limit, config) = (self.config().lint.size_limit, self.config().clone());
        let mut embedded = 0;
        let mut failed = None;
        let mut not_lessons = Vec::new();
        for chunk in missing.chunks(CHUNK) {
            // read the files again: the index keeps no body text
            let texts: Vec<(u64, Option<String>)> = chunk
                .par_iter()
                .filter_map(|&(path, hash)| {
                    let record = read_record(path, &root.join(path), limit, &config);
                    // changed since it was indexed: the next check embeds its new bytes
                    (record.stat.hash == hash)
                        .then(|| (hash, record.lesson.as_ref().map(embedding_text)))
                })
                .collect();
            let (lessons, others): (Vec<_>, Vec<_>) =
                texts.into_iter().partition(|(_, text)| text.is_some());
            not_lessons.extend(others.into_iter().map(|(hash, _)| hash));
            let refs: Vec<&str> = lessons.iter().filter_map(|(_, t)| t.as_deref()).collect();
            let dense = self.dense.as_mut().expect("checked");
            match dense.embedder.embed(&refs) {
                Ok(vectors) => {
                    for ((hash, _), v) in lessons.iter().zip(&vectors) {
                        dense.vectors.insert(*hash, v);
                    }
                    embedded += lessons.len();
                }
                Err(problem) => {
                    failed = Some(problem);
                    break;
                }
            }
            if missing.len() > CHUNK {
                self.persist_vectors();
            }
        }
        if let Some(problem) = failed {
            self.persist_vectors();
            self.dense = None;
            self.semantic_problem = Some(Arc::new(problem));
            return Ok(embedded);
        }
        let live: HashSet<u64> = entries.iter().map(|e| e.2).collect();
        let dense = self.dense.as_mut().expect("checked");
        dense.not_lessons.extend(not_lessons);
        let dropped = dense.vectors.retain(|hash| live.contains(&hash));
        let n = entries.iter().map(|e| e.0 as usize + 1).max().unwrap_or(0);
        dense.slot_of = vec![u32::MAX; n];
        for (id, _, hash) in &entries {
            dense.slot_of[*id as usize] = dense.vectors.slot(*hash).unwrap_or(u32::MAX);
        }
        // the vectors in doc order, so that a search's pass reads them in the order they lie
        // (a new or edited lesson's comes last in both: most syncs find them so already)
        if let Some(new_of) = dense.vectors.arrange(&dense.slot_of) {
            for slot in &mut dense.slot_of {
                if let Some(&new) = new_of.get(*slot as usize) {
                    *slot = new;
                }
            }
        }
        dense.synced = Some(identity);
        if embedded > 0 || dropped {
            self.persist_vectors();
        }
        Ok(embedded)
    }

    /// Write the vectors to `.lesson/` (when the bank can be written).
    fn persist_vectors(&self) {
        let Some(dense) = &self.dense else {
            return;
        };
        let bytes = dense.vectors.encode();
        self.persist(|root| edit::write_atomic(root, &state_path(root, VECTORS_FILE), &bytes));
    }

    /// The embedding of `request`'s text; none without a model or text (a model that fails
    /// on it turns the semantic side off).
    pub(super) fn request_vector(&mut self, request: &Request) -> Option<Vec<f32>> {
        let dense = self.dense.as_ref()?;
        if request.text.trim().is_empty() {
            return None;
        }
        match dense.embedder.embed(&[request.text.as_str()]) {
            Ok(mut v) => v.pop(),
            Err(problem) => {
                self.dense = None;
                self.semantic_problem = Some(Arc::new(problem));
                None
            }
        }
    }

    /// Each doc's cosine to the request embedded as `query`, by doc id, with the vectors
    /// brought up to date first; none when the semantic side is off.
    pub(super) fn cosines(&mut self, query: &[f32]) -> Result<Option<Vec<f32>>, RetrieveError> {
        self.sync_vectors()?;
        let Some(dense) = self.dense.as_ref() else {
            return Ok(None);
        };
        let request = super::vectors::Request::new(query);
        Ok(Some(dense.vectors.cosines(&dense.slot_of, &request)))
    }

    /// [`Retriever::cosines`] to be computed as a search reads them ([`Fed`]), the vectors
    /// as they are (brought up to date by [`Retriever::sync_vectors`] first); none when the
    /// semantic side is off.
    pub(super) fn fed(&self, query: &[f32]) -> Option<Fed<'_>> {
        let dense = self.dense.as_ref()?;
        let request = super::vectors::Request::new(query);
        Some(Fed::new(&dense.vectors, &dense.slot_of, request))
    }

    /// The lessons' vectors for dedup ([`crate::dedup::pairs_with`]), brought up to date
    /// first: each file's slot by its path under the bank root. None without a model, or
    /// when it failed ([`Retriever::semantic_problem`] says why).
    pub fn embeddings(&mut self) -> Result<Option<Embeddings>, RetrieveError> {
        self.sync_vectors()?;
        let Some(dense) = self.dense.as_ref() else {
            return Ok(None);
        };
        let slots = self
            .index()
            .entries()?
            .into_iter()
            .filter_map(|e| Some((e.path.to_string(), dense.vectors.slot(e.stat.hash)?)))
            .collect();
        Ok(Some(Embeddings::new(
            slots,
            dense.vectors.clone(),
            dense.embedder.clone(),
        )))
    }

    /// The cosine's weight in the hybrid similarity.
    pub(super) fn semantic_weight(&self) -> f64 {
        self.dense.as_ref().map_or(0.0, |d| d.weight)
    }
}
