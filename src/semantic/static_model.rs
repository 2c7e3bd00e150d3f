//! The static sentence encoder (cargo feature `semantic-static`, part of `semantic`): a table
//! of one vector per token, as Model2Vec distils from a transformer or WordLlama trains from an
//! LLM's input embeddings. A text's embedding is the mean of its tokens' rows, L2-normalised:
//! no neural network runs, so a request embeds in microseconds and a bank of 100,000 lessons
//! in seconds, at a cost in quality against a transformer (README, "Semantic retrieval").
//!
//! A model directory holds Model2Vec's layout, the same three files as a BERT model's:
//! `config.json` with `"model_type": "model2vec"` (which is how [`super::load`] tells the two
//! apart; `"normalize": false` keeps the mean unnormalised, which the index then normalises
//! anyway), `tokenizer.json` (a Hugging Face tokenizer) and `model.safetensors`, whose tensor
//! `embeddings` (f32, f16 or bf16, one row per token id) is the table. Texts are tokenized
//! without special tokens, the unknown token is skipped, and at most [`MAX_TOKENS`] tokens are
//! read, as Model2Vec does.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use tokenizers::models::ModelWrapper;
use tokenizers::{Tokenizer, TruncationParams};

use super::{identity_of, invalid, read, Embedder, ModelError, FILES};

/// Tokens of a text the static encoder reads at most (Model2Vec's default).
pub const MAX_TOKENS: usize = 512;

/// The name of the table in `model.safetensors` (Model2Vec's).
pub const TENSOR: &str = "embeddings";

/// The `model_type` of a static model's `config.json`.
pub const MODEL_TYPE: &str = "model2vec";

/// A loaded static encoder.
pub struct StaticModel {
    dir: PathBuf,
    tokenizer: Tokenizer,
    /// The bytes of `model.safetensors`, kept as read: the table is read in place, a row at a
    /// time (converting a 32,000-token table to f32 up front doubled a new process's memory
    /// and cost more than all its requests).
    weights: Vec<u8>,
    /// Where the table's `rows × dimension` values start in `weights`, and their type.
    start: usize,
    dtype: Element,
    rows: usize,
    dimension: usize,
    /// The unknown token's id, skipped in a text.
    unknown: Option<u32>,
    identity: String,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("dir", &self.dir)
            .field("identity", &self.identity)
            .field("rows", &self.rows)
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

/// Whether the bytes of a `config.json` name a static model (`"model_type": "model2vec"`).
pub fn is_static_config(config: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(config)
        .ok()
        .and_then(|v| {
            v.get("model_type")
                .and_then(|t| t.as_str())
                .map(|t| t == MODEL_TYPE)
        })
        .unwrap_or(false)
}

/// The type of the table's values.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Element {
    F32,
    F16,
    BF16,
}

impl Element {
    fn size(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F16 | Element::BF16 => 2,
        }
    }

    /// Add the values in `bytes` to `sum`, one by one.
    fn add(self, bytes: &[u8], sum: &mut [f32]) {
        match self {
            Element::F32 => {
                for (s, b) in sum.iter_mut().zip(bytes.chunks_exact(4)) {
                    *s += f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Element::F16 => {
                for (s, b) in sum.iter_mut().zip(bytes.chunks_exact(2)) {
                    *s += half::f16::from_le_bytes([b[0], b[1]]).to_f32();
                }
            }
            Element::BF16 => {
                for (s, b) in sum.iter_mut().zip(bytes.chunks_exact(2)) {
                    *s += half::bf16::from_le_bytes([b[0], b[1]]).to_f32();
                }
            }
        }
    }
}

/// The table of `model.safetensors`: its rows, its dimension, where its values start in
/// `bytes` and their type.
fn table(path: &Path, bytes: &[u8]) -> Result<(usize, usize, usize, Element), ModelError> {
    let tensors = SafeTensors::deserialize(bytes).map_err(|e| invalid(path, e))?;
    let view = tensors.tensor(TENSOR).map_err(|_| {
        invalid(
            path,
            format!("no tensor `{TENSOR}` (a static model's table of token vectors)"),
        )
    })?;
    let (rows, dimension) = match view.shape() {
        &[rows, dimension] if rows > 0 && dimension > 0 => (rows, dimension),
        shape => {
            return Err(invalid(
                path,
                format!("`{TENSOR}` has the shape {shape:?}, not [tokens, dimension]"),
            ))
        }
    };
    let dtype = match view.dtype() {
        Dtype::F32 => Element::F32,
        Dtype::F16 => Element::F16,
        Dtype::BF16 => Element::BF16,
        other => {
            return Err(invalid(
                path,
                format!("`{TENSOR}` is {other:?}; a static model's table is F32, F16 or BF16"),
            ))
        }
    };
    // the view borrows `bytes`: where its data starts is its offset in them
    let data = view.data();
    let start = data.as_ptr() as usize - bytes.as_ptr() as usize;
    let size = rows
        .checked_mul(dimension)
        .and_then(|n| n.checked_mul(dtype.size()));
    if size != Some(data.len()) {
        return Err(invalid(
            path,
            format!("`{TENSOR}` holds {} bytes for its shape", data.len()),
        ));
    }
    Ok((rows, dimension, start, dtype))
}

impl StaticModel {
    /// Load the static model in `dir` (its three [`FILES`]); every failure names the file.
    pub fn load(dir: &Path) -> Result<StaticModel, ModelError> {
        let (config_path, config_bytes) = read(dir.join(FILES[0]))?;
        let (tokenizer_path, tokenizer_bytes) = read(dir.join(FILES[1]))?;
        let (weights_path, weights) = read(dir.join(FILES[2]))?;
        if !is_static_config(&config_bytes) {
            return Err(invalid(
                &config_path,
                format!("not a static model's configuration (no \"model_type\": \"{MODEL_TYPE}\")"),
            ));
        }
        let identity = identity_of(&[&config_bytes, &tokenizer_bytes, &weights]);
        let mut tokenizer =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| invalid(&tokenizer_path, e))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(&tokenizer_path, e))?;
        tokenizer.with_padding(None);
        // the tokenizer's model names its unknown token (Model2Vec skips it in a text); a
        // Unigram model keeps its own private
        let unknown = match tokenizer.get_model() {
            ModelWrapper::BPE(m) => m.get_unk_token().clone(),
            ModelWrapper::WordPiece(m) => Some(m.unk_token.clone()),
            ModelWrapper::WordLevel(m) => Some(m.unk_token.clone()),
            ModelWrapper::Unigram(_) => None,
        }
        .and_then(|t| tokenizer.token_to_id(&t));
        let (rows, dimension, start, dtype) = table(&weights_path, &weights)?;
        let vocabulary = tokenizer.get_vocab_size(true);
        if vocabulary > rows {
            return Err(invalid(
                &weights_path,
                format!("`{TENSOR}` has {rows} rows for a tokenizer of {vocabulary} tokens"),
            ));
        }
        Ok(StaticModel {
            dir: dir.to_path_buf(),
            tokenizer,
            weights,
            start,
            dtype,
            rows,
            dimension,
            unknown,
            identity,
        })
    }

    /// The model's identity (a hash of its files' bytes).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The length of its embeddings.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The embedding of one text: the mean of its tokens' rows, unit length (all zeros for a
    /// text without tokens).
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| ModelError::Run {
                dir: self.dir.clone(),
                reason: e.to_string(),
            })?;
        let mut sum = vec![0f32; self.dimension];
        let mut count = 0usize;
        for &id in encoding.get_ids() {
            if Some(id) == self.unknown || id as usize >= self.rows {
                continue;
            }
            self.dtype.add(self.row(id as usize), &mut sum);
            count += 1;
        }
        if sum.iter().any(|x| !x.is_finite()) {
            return Err(ModelError::Run {
                dir: self.dir.clone(),
                reason: format!(
                    "the table `{TENSOR}` holds a NaN or an infinity in a row of the text's tokens"
                ),
            });
        }
        // the mean's direction is the sum's: normalising the sum is the normalised mean
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if count > 0 && norm > 0.0 {
            sum.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(sum)
    }

    /// The bytes of the table's row `id`.
    fn row(&self, id: usize) -> &[u8] {
        let len = self.dimension * self.dtype.size();
        let at = self.start + id * len;
        &self.weights[at..at + len]
    }

    /// The embeddings of `texts`, in their order (in parallel).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        texts.par_iter().map(|t| self.embed_one(t)).collect()
    }
}

impl Embedder for StaticModel {
    fn identity(&self) -> &str {
        StaticModel::identity(self)
    }
    fn dimension(&self) -> usize {
        StaticModel::dimension(self)
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        StaticModel::embed(self, texts)
    }
    fn default_weight(&self) -> f64 {
        super::STATIC_WEIGHT
    }
    fn default_dedup_similarity(&self) -> f64 {
        super::STATIC_DEDUP_SIMILARITY
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::semantic::dot;

    /// Words of the tiny static model's vocabulary (after `[UNK]`).
    const WORDS: [&str; 10] = [
        "the", "build", "cache", "is", "stale", "deploy", "fails", "flaky", "tests", "retry",
    ];

    /// A static model of dimension 4 over [`WORDS`] (a word-level tokenizer), written to `dir`
    /// in Model2Vec's layout with its table as `dtype` (`"F32"` or `"F16"`); `seed` changes the
    /// table. Row 0 is `[UNK]`.
    pub(crate) fn write_tiny_static_model(dir: &Path, seed: u64, dtype: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join("config.json"),
            r#"{"model_type": "model2vec", "architectures": ["StaticModel"], "hidden_dim": 4, "normalize": true}"#,
        )
        .unwrap();
        let mut vocab = serde_json::Map::new();
        for (i, t) in std::iter::once(&"[UNK]").chain(WORDS.iter()).enumerate() {
            vocab.insert(t.to_string(), i.into());
        }
        let tokenizer = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true}],
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
        });
        std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
        let (rows, dim) = (1 + WORDS.len(), 4);
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut data = Vec::new();
        for _ in 0..rows * dim {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            match dtype {
                "F16" => data.extend(half::f16::from_f32(x).to_le_bytes()),
                _ => data.extend(x.to_le_bytes()),
            }
        }
        let header = serde_json::json!({
            TENSOR: {"dtype": dtype, "shape": [rows, dim], "data_offsets": [0, data.len()]}
        })
        .to_string();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    }

    /// The table's row of a word of the tiny model.
    fn row(model: &StaticModel, word: &str) -> Vec<f32> {
        let id = model.tokenizer.token_to_id(word).unwrap() as usize;
        let mut out = vec![0.0; model.dimension];
        model.dtype.add(model.row(id), &mut out);
        out
    }

    #[test]
    fn a_static_model_embeds_the_normalised_mean_of_its_tokens_rows() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny_static_model(dir.path(), 1, "F32");
        let model = StaticModel::load(dir.path()).unwrap();
        assert_eq!(model.dimension(), 4);
        let (a, b) = (row(&model, "stale"), row(&model, "cache"));
        let mean: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x + y) / 2.0).collect();
        let norm = dot(&mean, &mean).sqrt();
        let v = model.embed_one("Stale CACHE").unwrap();
        for (x, m) in v.iter().zip(&mean) {
            assert!((x - m / norm).abs() < 1e-6, "{v:?} vs {mean:?}");
        }
        assert!((dot(&v, &v) - 1.0).abs() < 1e-5, "unit length");
        // an unknown word is skipped, as Model2Vec does
        assert_eq!(model.embed_one("stale zebra cache").unwrap(), v);
        // a text without (known) tokens is all zeros, not NaN
        assert_eq!(model.embed_one("").unwrap(), vec![0.0; 4]);
        assert_eq!(model.embed_one("zebra okapi").unwrap(), vec![0.0; 4]);
        // the batch is each text alone, in order
        let texts = ["the build is stale", "flaky tests retry", "deploy fails"];
        let batch = model.embed(&texts).unwrap();
        for (t, v) in texts.iter().zip(&batch) {
            assert_eq!(&model.embed_one(t).unwrap(), v);
        }
        // a text past MAX_TOKENS is cut: what follows the cut changes nothing
        let long = "stale ".repeat(MAX_TOKENS);
        assert_eq!(
            model.embed_one(&format!("{long} deploy fails")).unwrap(),
            model.embed_one(&long).unwrap()
        );
    }

    #[test]
    fn an_f16_table_reads_as_its_f32_values_and_the_identity_follows_the_bytes() {
        let (a, b, c) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        write_tiny_static_model(a.path(), 1, "F32");
        write_tiny_static_model(b.path(), 1, "F16");
        write_tiny_static_model(c.path(), 2, "F32");
        let (ma, mb, mc) = (
            StaticModel::load(a.path()).unwrap(),
            StaticModel::load(b.path()).unwrap(),
            StaticModel::load(c.path()).unwrap(),
        );
        for word in WORDS {
            for (x, y) in row(&ma, word).iter().zip(&row(&mb, word)) {
                assert!((x - y).abs() < 1e-3, "{x} vs {y}");
            }
        }
        assert_ne!(ma.identity(), mb.identity());
        assert_ne!(ma.identity(), mc.identity());
        assert_eq!(
            ma.identity(),
            StaticModel::load(a.path()).unwrap().identity()
        );
    }

    #[test]
    fn a_damaged_static_model_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let damaged = |file: &str, bytes: &[u8]| {
            let d = dir.path().join(file.replace('.', "-"));
            write_tiny_static_model(&d, 1, "F32");
            std::fs::write(d.join(file), bytes).unwrap();
            let e = StaticModel::load(&d).unwrap_err();
            match &e {
                ModelError::Invalid { path, .. } => assert_eq!(path, &d.join(file), "{e}"),
                other => panic!("{file}: {other}"),
            }
            e.to_string()
        };
        damaged("config.json", br#"{"model_type": "bert"}"#);
        damaged("tokenizer.json", b"[1, 2]");
        damaged("model.safetensors", b"\x10\0\0\0\0\0\0\0{not json at all");
        let header = br#"{"other":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header);
        bytes.extend(1f32.to_le_bytes());
        let message = damaged("model.safetensors", &bytes);
        assert!(message.contains("no tensor `embeddings`"), "{message}");
        // fewer rows than the tokenizer has tokens: an id would fall outside the table
        let header = br#"{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header);
        bytes.extend([0u8; 16]);
        let message = damaged("model.safetensors", &bytes);
        assert!(
            message.contains("2 rows for a tokenizer of 11 tokens"),
            "{message}"
        );
        // a NaN in a row: the texts with its token fail, naming the model, the others embed
        let d = dir.path().join("nan");
        write_tiny_static_model(&d, 1, "F32");
        let mut bytes = std::fs::read(d.join("model.safetensors")).unwrap();
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let stale = 1 + WORDS.iter().position(|w| *w == "stale").unwrap();
        let at = 8 + n + stale * 4 * 4;
        bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        std::fs::write(d.join("model.safetensors"), bytes).unwrap();
        let model = StaticModel::load(&d).unwrap();
        assert!(model.embed_one("deploy fails").is_ok());
        let e = model.embed_one("the cache is stale").unwrap_err();
        assert!(
            matches!(e, ModelError::Run { ref dir, .. } if dir == &d),
            "{e}"
        );
        assert!(e.to_string().contains("NaN"), "{e}");
        let missing = dir.path().join("nowhere");
        assert!(matches!(
            StaticModel::load(&missing),
            Err(ModelError::Read { ref path, .. }) if path == &missing.join("config.json")
        ));
    }

    #[test]
    fn a_bank_names_a_static_model_in_its_config_and_embeds_only_what_changed() {
        use crate::retrieve::{Request, Retriever};
        let bank = tempfile::tempdir().unwrap();
        write_tiny_static_model(&bank.path().join("tiny"), 1, "F16");
        std::fs::write(
            bank.path().join("lesson.toml"),
            "[retrieve]\nmodel = \"tiny\"\n",
        )
        .unwrap();
        let write = |slug: &str, title: &str| {
            std::fs::write(
                bank.path().join(format!("{slug}.md")),
                format!(
                    "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: {title}\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n"
                ),
            )
            .unwrap();
        };
        write("stale-cache", "the build cache is stale");
        write("flaky", "flaky tests retry");
        let mut r = Retriever::open(bank.path()).unwrap();
        assert!(r.is_semantic(), "{:?}", r.semantic_problem());
        assert_eq!((r.last_refresh().embedded, r.embedded_lessons()), (2, 2));
        let hits = r.search(&Request::new("stale build cache")).unwrap().hits;
        assert_eq!(hits[0].slug, "stale-cache");
        let model = StaticModel::load(&bank.path().join("tiny")).unwrap();
        let request = model.embed_one("stale build cache").unwrap();
        let lesson = model
            .embed_one(
                "the build cache is stale\nthe build cache is stale\n# the build cache is stale",
            )
            .unwrap();
        let cosine = hits[0].score.semantic.expect("a semantic part");
        // the index keeps int8 vectors: the cosine is the float one to within their rounding
        assert!(
            (cosine - f64::from(dot(&request, &lesson))).abs() < 0.02,
            "{cosine}"
        );
        // one lesson edited: it alone is embedded again
        write("flaky", "flaky tests retry deploy fails");
        r.refresh().unwrap();
        let _ = r.search(&Request::new("deploy")).unwrap();
        assert_eq!(r.last_refresh().embedded, 1);
        // another table: every lesson embedded again
        write_tiny_static_model(&bank.path().join("tiny"), 2, "F16");
        let r2 = Retriever::open(bank.path()).unwrap();
        assert_eq!(r2.last_refresh().embedded, 2);
        // a damaged table: the reason names the file, the search is lexical
        std::fs::write(bank.path().join("tiny/model.safetensors"), b"\0\0").unwrap();
        let mut r3 = Retriever::open(bank.path()).unwrap();
        assert!(!r3.is_semantic());
        let problem = r3.semantic_problem().unwrap().to_string();
        assert!(problem.contains("model.safetensors"), "{problem}");
        let hits = r3.search(&Request::new("stale build cache")).unwrap().hits;
        assert_eq!(hits[0].slug, "stale-cache");
        assert!(hits[0].score.semantic.is_none());
    }
}
