//! Sentence embeddings for semantic retrieval: what the retrieval index needs of an encoder
//! ([`Embedder`]), the hybrid similarity ([`fuse`]), and (cargo feature `semantic`) a BERT-class
//! encoder run in-process on the CPU (`Model`, see `bert.rs`) and (feature `semantic-static`,
//! part of `semantic`) a static one, a table of token vectors (`StaticModel`, see
//! `static_model.rs`).
//!
//! `[retrieve] model = "PATH"` names a model directory; [`load`] opens it. A `lesson` built
//! without the feature reads the key, says it cannot run the model, and searches lexically, as
//! it does when the directory is missing or damaged: a model is an option, never a
//! requirement.
//!
//! A model's **identity** is a hash of the bytes of its files (not their size and time: a
//! retrained model can keep both), computed once when the model loads; the retrieval index
//! records it with its vectors, so that vectors of another model are never compared with this
//! one's.

use std::path::{Path, PathBuf};

#[cfg(feature = "semantic")]
mod bert;
#[cfg(feature = "semantic")]
mod encoder;
#[cfg(feature = "semantic-static")]
mod static_model;
#[cfg(feature = "semantic")]
pub use bert::{fetch, hub_repository, Model, HUB, MAX_TOKENS};
#[cfg(feature = "semantic-static")]
pub use static_model::{is_static_config, StaticModel};

/// The files of a model directory.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// `[retrieve] semantic-weight` by default with a BERT-class encoder (all-MiniLM-L6-v2): the
/// weight of the cosine in [`fuse`], chosen on the training sets by `cargo xtask
/// eval-retrieval`'s sweep.
pub const DEFAULT_WEIGHT: f64 = 0.5;

/// `[retrieve] semantic-weight` by default with a static model (WordLlama's l2_supercat_256):
/// its cosine ranks below the lexical similarity on one training set, so it weighs less
/// (the best mean nDCG@10 of Cranfield and DBpedia-entity is at 0.3 and 0.4, within 0.0002;
/// 0.3 loses less on Cranfield, where the static model is the weaker side).
pub const STATIC_WEIGHT: f64 = 0.3;

/// `[dedup] min-semantic-similarity` by default with a BERT-class encoder (all-MiniLM-L6-v2):
/// the lowest cosine at which `cargo xtask eval-dedup --model` finds F1 no worse than by
/// words alone on both near-duplicate sets (lower thresholds gain on one and lose more on the
/// other; `lesson add` merges what dedup pairs, so a model must not make it less precise).
pub const DEDUP_SIMILARITY: f64 = 0.9;

/// `[dedup] min-semantic-similarity` by default with a static model (WordLlama's
/// l2_supercat_256), chosen as [`DEDUP_SIMILARITY`] is: its cosines run higher, and below 0.95
/// it pairs distinct items that read alike.
pub const STATIC_DEDUP_SIMILARITY: f64 = 0.95;

/// Why a model cannot be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file of the model directory cannot be read (missing directory or file).
    #[error("cannot read the model file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file of the model directory is not what it should be.
    #[error("the model file {path} is not valid: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A file of the model cannot be downloaded (`fetch`).
    #[error("cannot download {url}: {reason}")]
    Fetch {
        /// What was asked for.
        url: String,
        /// Why it failed.
        reason: String,
    },
    /// The encoder failed on a text.
    #[error("the model in {dir} cannot embed: {reason}")]
    Run {
        /// The model directory.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// This build of `lesson` has no encoder (built without the `semantic` feature).
    #[error(
        "cannot use the model {dir}: this lesson was built without the encoder it needs \
         (cargo build --release --features semantic)"
    )]
    Unsupported {
        /// The model directory.
        dir: PathBuf,
    },
}

/// The bytes of a model's file, with its path; a failure names it.
#[cfg(feature = "semantic-static")]
fn read(path: PathBuf) -> Result<(PathBuf, Vec<u8>), ModelError> {
    match std::fs::read(&path) {
        Ok(bytes) => Ok((path, bytes)),
        Err(source) => Err(ModelError::Read { path, source }),
    }
}

/// A model's file `path` is not what it should be, for `reason`.
#[cfg(feature = "semantic-static")]
fn invalid(path: &Path, reason: impl std::fmt::Display) -> ModelError {
    ModelError::Invalid {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// A sentence encoder, as the retrieval index uses one: unit-length vectors of one length,
/// and an identity that changes whenever its vectors would.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// What the vectors depend on: the model's files, and how a text is cut and pooled.
    fn identity(&self) -> &str;
    /// The length of its vectors.
    fn dimension(&self) -> usize;
    /// The embeddings of `texts`, in their order, each of length [`Embedder::dimension`] and
    /// unit length (all zeros for a text without tokens).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError>;
    /// The cosine's weight in [`fuse`] when `[retrieve] semantic-weight` is absent.
    fn default_weight(&self) -> f64 {
        DEFAULT_WEIGHT
    }
    /// `[dedup] min-semantic-similarity` when absent: the cosine at which two lessons are
    /// compared as near-duplicates whatever their words.
    fn default_dedup_similarity(&self) -> f64 {
        DEDUP_SIMILARITY
    }
}

/// Load the model directory `dir` (its three [`FILES`]); every failure names the file. A
/// `config.json` with `"model_type": "model2vec"` is a static model (`StaticModel`, feature
/// `semantic-static`); any other is a BERT-class encoder (`Model`, feature `semantic`).
pub fn load(dir: &Path) -> Result<std::sync::Arc<dyn Embedder>, ModelError> {
    #[cfg(feature = "semantic-static")]
    {
        let config = dir.join(FILES[0]);
        let bytes = std::fs::read(&config).map_err(|source| ModelError::Read {
            path: config,
            source,
        })?;
        if is_static_config(&bytes) {
            return Ok(std::sync::Arc::new(StaticModel::load(dir)?));
        }
    }
    #[cfg(feature = "semantic")]
    {
        Ok(std::sync::Arc::new(Model::load(dir)?))
    }
    #[cfg(not(feature = "semantic"))]
    {
        Err(ModelError::Unsupported {
            dir: dir.to_path_buf(),
        })
    }
}

/// Whether `name` can name a model on the hub and a directory under `.lesson/models/`: one
/// or two `/`-separated parts (`all-MiniLM-L6-v2`, `sentence-transformers/all-MiniLM-L6-v2`),
/// each of ASCII letters, digits, `-`, `_` and `.`, and none `.` or `..` (a name never leads
/// out of the models' folder, nor into a URL's query).
pub fn valid_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() <= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
}

/// Git's blob hash (SHA-1) of `bytes`, in hex.
fn blob_hash(bytes: &[u8]) -> String {
    git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
        .expect("hashing bytes in memory cannot fail")
        .to_string()
}

/// The identity of a model from the bytes of its files, in [`FILES`] order: the checksum (16
/// hex digits) of each file's 64-bit checksum and length. Not SHA-1: a model's weights are
/// 90 MB, which SHA-1 (with git's collision detection) took 0.3 s to hash in every new process.
pub fn identity_of(files: &[&[u8]]) -> String {
    let mut all = Vec::with_capacity(files.len() * 16);
    for bytes in files {
        all.extend(crate::checksum::checksum(bytes).to_le_bytes());
        all.extend((bytes.len() as u64).to_le_bytes());
    }
    format!("{:016x}", crate::checksum::checksum(&all))
}

/// The key of a text's embedding under one model: the SHA-1 of the text (git's blob hash, 40
/// hex digits). A store of vectors keyed by it and by the model's identity embeds a text again
/// only when the text changed.
pub fn text_key(text: &str) -> String {
    blob_hash(text.as_bytes())
}

/// The dot product of two vectors (their cosine when both have unit length).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The hybrid similarity of a lesson: `(1 − weight) · lexical + weight · cosine`, each on its
/// own fixed scale (the lexical similarity in `[0, 1)`, the cosine of two unit vectors in
/// `[−1, 1]`), without normalising per request: a fused score means the same in every request
/// and every bank, so hits of layered banks still merge by score and a threshold on it is a
/// threshold. `weight` is clamped to `[0, 1]` (not a number: 0); 0 is the lexical similarity,
/// 1 the cosine.
///
/// Chosen by `cargo xtask eval-retrieval` on the training sets (Cranfield, DBpedia-entity)
/// against min-max over the corpus, min-max and z-scores over each side's top N, and
/// reciprocal rank fusion (README, "Semantic retrieval").
pub fn fuse(lexical: f64, cosine: f64, weight: f64) -> f64 {
    let w = effective_weight(weight);
    (1.0 - w) * lexical + w * cosine
}

/// The cosine's weight as [`fuse`] takes it: `weight` clamped to `[0, 1]`, not a number 0.
pub fn effective_weight(weight: f64) -> f64 {
    if weight.is_finite() {
        weight.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// The hybrid ranking of one request: the union of the lexical hits (`lexical`: key and
/// similarity) and the nearest lessons by cosine (`dense`: key and cosine), each scored by
/// [`fuse`], best first (ties by key). A lexical hit's cosine comes from `cosine_of`; a lesson
/// only the dense side found has lexical similarity 0 (it was no lexical hit).
pub fn hybrid<K: Ord + Clone>(
    lexical: &[(K, f64)],
    dense: &[(K, f64)],
    cosine_of: impl Fn(&K) -> f64,
    weight: f64,
) -> Vec<(K, f64)> {
    let mut sides: std::collections::BTreeMap<K, (f64, Option<f64>)> =
        std::collections::BTreeMap::new();
    for (key, cosine) in dense {
        sides.insert(key.clone(), (0.0, Some(*cosine)));
    }
    for (key, similarity) in lexical {
        sides.entry(key.clone()).or_insert((0.0, None)).0 = *similarity;
    }
    let mut fused: Vec<(K, f64)> = sides
        .into_iter()
        .map(|(key, (lexical, cosine))| {
            let cosine = cosine.unwrap_or_else(|| cosine_of(&key));
            let score = fuse(lexical, cosine, weight);
            (key, score)
        })
        .collect();
    // stable: equal scores keep the keys' order
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "semantic-static"))]
    #[test]
    fn without_the_feature_a_model_is_unsupported_and_says_how_to_get_it() {
        let e = load(Path::new("models/minilm")).unwrap_err();
        assert!(matches!(e, ModelError::Unsupported { .. }));
        let message = e.to_string();
        assert!(message.contains("models/minilm"), "{message}");
        assert!(message.contains("--features semantic"), "{message}");
    }

    #[test]
    fn a_model_name_never_leads_out_of_its_folder() {
        for ok in [
            "all-MiniLM-L6-v2",
            "sentence-transformers/all-MiniLM-L6-v2",
            "m_2.1",
        ] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in [
            "", ".", "..", "../x", "a/..", "a/b/c", "/abs", "a/", "a b", "a?x=1", "a\\b", "é",
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_text_key_and_an_identity_follow_the_bytes() {
        assert_eq!(text_key("deploy fails"), text_key("deploy fails"));
        assert_ne!(text_key("deploy fails"), text_key("deploy  fails"));
        assert_eq!(text_key("").len(), 40);
        assert_eq!(identity_of(&[b"a", b"b"]), identity_of(&[b"a", b"b"]));
        assert_ne!(identity_of(&[b"a", b"b"]), identity_of(&[b"b", b"a"]));
        // a byte moved from one file to the next is another model
        assert_ne!(identity_of(&[b"ab", b"c"]), identity_of(&[b"a", b"bc"]));
        assert_eq!(identity_of(&[b"a"]).len(), 16);
    }

    #[test]
    fn fuse_is_a_convex_combination_of_the_raw_scores() {
        assert_eq!(fuse(0.4, 0.8, 0.0), 0.4);
        assert_eq!(fuse(0.4, 0.8, 1.0), 0.8);
        assert!((fuse(0.4, 0.8, 0.25) - 0.5).abs() < 1e-12);
        // out of range or not a number: clamped, else lexical
        assert_eq!(fuse(0.4, 0.8, 7.0), 0.8);
        assert_eq!(fuse(0.4, 0.8, -1.0), 0.4);
        assert_eq!(fuse(0.4, 0.8, f64::NAN), 0.4);
    }

    #[test]
    fn hybrid_ranks_the_union_of_both_sides() {
        let lexical = [("a", 0.9), ("b", 0.5), ("c", 0.1)];
        let dense = [("d", 0.9), ("b", 0.6)];
        let cosine_of = |k: &&str| match *k {
            "a" => 0.1,
            "c" => 0.2,
            other => panic!("{other} has its cosine from the dense side"),
        };
        fn keys(v: Vec<(&'static str, f64)>) -> Vec<&'static str> {
            v.into_iter().map(|(k, _)| k).collect()
        }
        // weight 0: the lexical order, the dense-only lesson last with 0
        assert_eq!(
            keys(hybrid(&lexical, &dense, cosine_of, 0.0)),
            ["a", "b", "c", "d"]
        );
        // weight 1: the cosine order
        assert_eq!(
            keys(hybrid(&lexical, &dense, cosine_of, 1.0)),
            ["d", "b", "c", "a"]
        );
        let half = hybrid(&lexical, &dense, cosine_of, 0.5);
        assert_eq!(keys(half.clone()), ["b", "a", "d", "c"]);
        assert!((half[0].1 - 0.55).abs() < 1e-12 && (half[2].1 - 0.45).abs() < 1e-12);
        // equal scores: by key
        let tied = hybrid(&[("z", 0.5), ("y", 0.5)], &[], |_| 0.5, 0.5);
        assert_eq!(keys(tied), ["y", "z"]);
        assert!(hybrid::<&str>(&[], &[], |_| 0.0, 0.5).is_empty());
    }
}
