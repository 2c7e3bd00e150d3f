//! The BERT-class sentence encoder (cargo feature `semantic`): all-MiniLM-L6-v2 and its kin,
//! run in-process on the CPU by our own forward pass (`encoder.rs`), its requests cut at
//! [`MAX_TOKENS`] tokens, mean-pooled and L2-normalised, so that the dot product of two
//! embeddings is their cosine.
//!
//! A model directory holds the sentence-transformers layout's three files: `config.json` (the
//! BERT configuration), `tokenizer.json` (a Hugging Face tokenizer) and `model.safetensors` (the
//! weights, with or without a `bert.` prefix). Nothing is downloaded: `lesson model fetch` and
//! `cargo xtask model` put the files there.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::encoder::{Config, Encoder};
use super::{identity_of, invalid, read, Embedder, ModelError, FILES};

use tokenizers::{Tokenizer, TruncationParams};

/// Tokens of a text the encoder reads at most (the rest is cut).
pub const MAX_TOKENS: usize = 256;

/// A loaded sentence encoder.
pub struct Model {
    dir: PathBuf,
    encoder: Encoder,
    tokenizer: Tokenizer,
    identity: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("dir", &self.dir)
            .field("identity", &self.identity)
            .field("dimension", &self.encoder.dimension())
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Load the model in `dir` (its three [`FILES`]); every failure names the file.
    pub fn load(dir: &Path) -> Result<Model, ModelError> {
        let (config_path, config_bytes) = read(dir.join(FILES[0]))?;
        let (tokenizer_path, tokenizer_bytes) = read(dir.join(FILES[1]))?;
        let (weights_path, weights) = read(dir.join(FILES[2]))?;
        let identity = identity_of(&[&config_bytes, &tokenizer_bytes, &weights]);
        let config: Config =
            serde_json::from_slice(&config_bytes).map_err(|e| invalid(&config_path, e))?;
        if config.hidden_size == 0 || config.num_attention_heads == 0 {
            return Err(invalid(
                &config_path,
                "hidden_size and num_attention_heads must be above 0",
            ));
        }
        if !config
            .hidden_size
            .is_multiple_of(config.num_attention_heads)
        {
            return Err(invalid(
                &config_path,
                "hidden_size is not a multiple of num_attention_heads",
            ));
        }
        let mut tokenizer =
            Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| invalid(&tokenizer_path, e))?;
        let max_length = MAX_TOKENS.min(config.max_position_embeddings);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| invalid(&tokenizer_path, e))?;
        // one text at a time: never padded
        tokenizer.with_padding(None);
        let encoder = Encoder::load(&config, &weights_path, &weights)?;
        Ok(Model {
            dir: dir.to_path_buf(),
            encoder,
            tokenizer,
            identity,
        })
    }

    /// The model's identity (a hash of its files' bytes).
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The length of its embeddings.
    pub fn dimension(&self) -> usize {
        self.encoder.dimension()
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The embedding of one text (unit length; all zeros for a text without tokens), its
    /// products split over rayon's threads.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        Ok(self.encoder.embed(&self.tokens(text)?, true))
    }

    /// The embeddings of `texts`, in their order, one text per thread. Each text is run
    /// alone, so its embedding is the one [`Model::embed_one`] gives.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        if let [text] = texts {
            return Ok(vec![self.embed_one(text)?]);
        }
        texts
            .par_iter()
            .map(|text| Ok(self.encoder.embed(&self.tokens(text)?, false)))
            .collect()
    }

    /// The token ids of `text`, with the model's special tokens, cut at [`MAX_TOKENS`].
    fn tokens(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| ModelError::Run {
                dir: self.dir.clone(),
                reason: e.to_string(),
            })?;
        Ok(encoding.get_ids().to_vec())
    }
}

impl Embedder for Model {
    fn identity(&self) -> &str {
        Model::identity(self)
    }
    fn dimension(&self) -> usize {
        Model::dimension(self)
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        Model::embed(self, texts)
    }
}

/// The Hugging Face hub [`fetch`] downloads from.
pub const HUB: &str = "https://huggingface.co";

/// The hub repository of a model name: `all-MiniLM-L6-v2` is
/// `sentence-transformers/all-MiniLM-L6-v2`; a name with a `/` is a repository already.
pub fn hub_repository(name: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else {
        format!("sentence-transformers/{name}")
    }
}

/// Download the [`FILES`] of the hub model `name` ([`hub_repository`]) into `dir` over https
/// and load them (so that a bad download is an error here, not at the first search): a BERT
/// model or a static one (Model2Vec's layout, such as `minishlab/potion-base-8M`).
///
/// The download goes through the system's `curl` (as `git` goes through the system's git,
/// with the user's proxies and certificates); each file is written to `dir/.NAME.part` and
/// renamed into place, so an interrupted download leaves no half file under the real name.
pub fn fetch(name: &str, dir: &Path) -> Result<std::sync::Arc<dyn Embedder>, ModelError> {
    let repo = hub_repository(name);
    std::fs::create_dir_all(dir).map_err(|source| ModelError::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    for file in FILES {
        let url = format!("{HUB}/{repo}/resolve/main/{file}");
        let part = dir.join(format!(".{file}.part"));
        let failed = |reason: String| ModelError::Fetch {
            url: url.clone(),
            reason,
        };
        let output = std::process::Command::new("curl")
            .args([
                "--fail",
                "--location",
                "--silent",
                "--show-error",
                "--proto",
                "=https",
            ])
            .arg("--output")
            .arg(&part)
            .arg(&url)
            .output()
            .map_err(|e| failed(format!("cannot run curl (is it installed?): {e}")))?;
        if !output.status.success() {
            let _ = std::fs::remove_file(&part);
            return Err(failed(format!(
                "curl {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        std::fs::rename(&part, dir.join(file)).map_err(|source| ModelError::Read {
            path: part.clone(),
            source,
        })?;
    }
    super::load(dir)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::semantic::dot;

    /// Words of the tiny model's vocabulary (after its five special tokens).
    const WORDS: [&str; 12] = [
        "the", "build", "cache", "is", "stale", "deploy", "fails", "on", "friday", "tests",
        "flaky", "retry",
    ];

    /// A random-weight BERT (1 layer, 8 dimensions, 2 heads, 64 positions) with a word-level
    /// tokenizer over [`WORDS`], written to `dir` in the sentence-transformers layout; `seed`
    /// changes the weights.
    pub(crate) fn write_tiny_model(dir: &Path, seed: u64) {
        write_tiny_model_with(dir, seed, Shape::default());
    }

    /// The sizes of a tiny model.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Shape {
        pub hidden: usize,
        pub heads: usize,
        pub intermediate: usize,
        pub layers: usize,
        pub act: &'static str,
    }

    impl Default for Shape {
        fn default() -> Self {
            Shape {
                hidden: 8,
                heads: 2,
                intermediate: 16,
                layers: 1,
                act: "gelu",
            }
        }
    }

    /// [`write_tiny_model`] of the sizes `shape`.
    pub(crate) fn write_tiny_model_with(dir: &Path, seed: u64, shape: Shape) {
        std::fs::create_dir_all(dir).unwrap();
        let (h, inter, pos, types) = (shape.hidden, shape.intermediate, 64usize, 2usize);
        let vocab = 5 + WORDS.len();
        let config = serde_json::json!({
            "vocab_size": vocab, "hidden_size": h, "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads, "intermediate_size": inter,
            "hidden_act": shape.act,
            "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
            "max_position_embeddings": pos, "type_vocab_size": types,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
            "model_type": "bert"
        });
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        let mut vocab_map = serde_json::Map::new();
        for (i, t) in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .chain(WORDS.iter())
            .enumerate()
        {
            vocab_map.insert(t.to_string(), i.into());
        }
        let added: Vec<serde_json::Value> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .enumerate()
            .map(|(i, t)| {
                serde_json::json!({"id": i, "content": t, "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true})
            })
            .collect();
        let tokenizer = serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
            "decoder": null,
            "model": {"type": "WordLevel", "vocab": vocab_map, "unk_token": "[UNK]"}
        });
        std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut random = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.8
        };
        let mut tensors: Vec<(String, Vec<usize>)> = vec![
            ("embeddings.word_embeddings.weight".into(), vec![vocab, h]),
            ("embeddings.position_embeddings.weight".into(), vec![pos, h]),
            (
                "embeddings.token_type_embeddings.weight".into(),
                vec![types, h],
            ),
            ("embeddings.LayerNorm.weight".into(), vec![h]),
            ("embeddings.LayerNorm.bias".into(), vec![h]),
        ];
        for (l, (name, dims)) in (0..shape.layers).flat_map(|l| {
            [
                ("attention.self.query.weight", vec![h, h]),
                ("attention.self.query.bias", vec![h]),
                ("attention.self.key.weight", vec![h, h]),
                ("attention.self.key.bias", vec![h]),
                ("attention.self.value.weight", vec![h, h]),
                ("attention.self.value.bias", vec![h]),
                ("attention.output.dense.weight", vec![h, h]),
                ("attention.output.dense.bias", vec![h]),
                ("attention.output.LayerNorm.weight", vec![h]),
                ("attention.output.LayerNorm.bias", vec![h]),
                ("intermediate.dense.weight", vec![inter, h]),
                ("intermediate.dense.bias", vec![inter]),
                ("output.dense.weight", vec![h, inter]),
                ("output.dense.bias", vec![h]),
                ("output.LayerNorm.weight", vec![h]),
                ("output.LayerNorm.bias", vec![h]),
            ]
            .map(move |t| (l, t))
        }) {
            tensors.push((format!("encoder.layer.{l}.{name}"), dims));
        }
        // safetensors: an 8-byte header length, the JSON header, then the raw data
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, shape) in &tensors {
            let n: usize = shape.iter().product();
            let start = data.len();
            for _ in 0..n {
                let x = if name.ends_with("LayerNorm.weight") {
                    1.0 + random() * 0.1
                } else {
                    random()
                };
                data.extend(x.to_le_bytes());
            }
            header.insert(
                name.clone(),
                serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let header = serde_json::Value::Object(header).to_string();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    }

    #[test]
    fn a_tiny_model_embeds_unit_vectors_independent_of_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny_model(dir.path(), 1);
        let model = Model::load(dir.path()).unwrap();
        assert_eq!(model.dimension(), 8);
        let texts = [
            "the build cache is stale",
            "deploy fails",
            "flaky tests retry on friday the build",
        ];
        let batch = model.embed(&texts).unwrap();
        assert_eq!(batch.len(), 3);
        for (t, v) in texts.iter().zip(&batch) {
            assert_eq!(v.len(), 8);
            assert!((dot(v, v) - 1.0).abs() < 1e-4, "unit length");
            // padding in a batch changes nothing: the attention mask and the pooling skip it
            let alone = model.embed_one(t).unwrap();
            for (a, b) in alone.iter().zip(v) {
                assert!((a - b).abs() < 1e-4, "{t}: {alone:?} vs {v:?}");
            }
        }
        assert!(dot(&batch[0], &batch[1]) < 0.9999, "different texts differ");
        // a text longer than the model's 64 positions is cut, not an error
        let long = "the build ".repeat(100);
        assert_eq!(model.embed_one(&long).unwrap().len(), 8);
        assert_eq!(model.embed_one("").unwrap().len(), 8);
    }

    #[test]
    fn the_identity_follows_the_bytes() {
        let (a, b, c) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        write_tiny_model(a.path(), 1);
        write_tiny_model(b.path(), 1);
        write_tiny_model(c.path(), 2);
        let id = |d: &tempfile::TempDir| Model::load(d.path()).unwrap().identity().to_string();
        assert_eq!(id(&a), id(&b), "same files, same identity");
        assert_ne!(id(&a), id(&c), "other weights (same size), other identity");
        assert_eq!(id(&a).len(), 16);
    }

    #[test]
    fn a_missing_or_corrupt_model_directory_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nowhere");
        let e = Model::load(&missing).unwrap_err();
        assert!(
            matches!(e, ModelError::Read { ref path, .. } if path == &missing.join("config.json"))
        );
        assert!(e.to_string().contains("nowhere/config.json"), "{e}");

        let corrupt = |file: &str, bytes: &[u8]| {
            let d = dir.path().join(file);
            write_tiny_model(&d, 1);
            std::fs::write(d.join(file), bytes).unwrap();
            let e = Model::load(&d).unwrap_err();
            match &e {
                ModelError::Invalid { path, .. } => assert_eq!(path, &d.join(file), "{e}"),
                other => panic!("{file}: {other}"),
            }
        };
        corrupt("config.json", b"{\"hidden_size\": 8");
        corrupt("tokenizer.json", b"[1, 2]");
        corrupt("model.safetensors", b"\x10\0\0\0\0\0\0\0{not json at all");
        // weights of another shape than the config says
        let d = dir.path().join("shapes");
        write_tiny_model(&d, 1);
        let config = std::fs::read_to_string(d.join("config.json")).unwrap();
        std::fs::write(
            d.join("config.json"),
            config.replace("\"hidden_size\":8", "\"hidden_size\":16"),
        )
        .unwrap();
        assert!(matches!(Model::load(&d), Err(ModelError::Invalid { .. })));
    }

    /// A bank of two lessons whose `lesson.toml` names the tiny model in `tiny/`.
    fn bank_with_tiny_model(seed: u64) -> tempfile::TempDir {
        let bank = tempfile::tempdir().unwrap();
        write_tiny_model(&bank.path().join("tiny"), seed);
        std::fs::write(
            bank.path().join("lesson.toml"),
            "[retrieve]\nmodel = \"tiny\"\n",
        )
        .unwrap();
        for (slug, title) in [
            ("stale-cache", "the build cache is stale"),
            ("flaky", "flaky tests retry"),
        ] {
            std::fs::write(
                bank.path().join(format!("{slug}.md")),
                format!(
                    "---\nschema: learning/v1\nslug: {slug}\ntitle: {title}\ntrigger:\n  description: {title}\noutcome: success\nevidence:\n  - kind: run\n    ref: r1\n---\n\n# {title}\n"
                ),
            )
            .unwrap();
        }
        bank
    }

    #[test]
    fn a_bank_with_a_model_ranks_by_the_hybrid_and_a_changed_model_embeds_again() {
        use crate::retrieve::{Request, Retriever};
        let bank = bank_with_tiny_model(1);
        let mut r = Retriever::open(bank.path()).unwrap();
        assert!(r.is_semantic(), "{:?}", r.semantic_problem());
        assert_eq!((r.last_refresh().embedded, r.embedded_lessons()), (2, 2));
        let hits = r.search(&Request::new("stale build cache")).unwrap().hits;
        assert_eq!(hits[0].slug, "stale-cache");
        let cosine = hits[0].score.semantic.expect("a semantic part");
        assert!((-1.0..=1.0).contains(&cosine));
        // the same model in a new process: nothing embedded again
        let r2 = Retriever::open(bank.path()).unwrap();
        assert_eq!(r2.last_refresh().embedded, 0);
        // other weights, same file sizes: another identity, every lesson embedded again
        write_tiny_model(&bank.path().join("tiny"), 2);
        let r3 = Retriever::open(bank.path()).unwrap();
        assert!(r3.is_semantic());
        assert_eq!(r3.last_refresh().embedded, 2);
        // a damaged model: the reason names the file, the search is lexical
        std::fs::write(bank.path().join("tiny/tokenizer.json"), "[1, 2]").unwrap();
        let mut r4 = Retriever::open(bank.path()).unwrap();
        assert!(!r4.is_semantic());
        let problem = r4.semantic_problem().unwrap().to_string();
        assert!(problem.contains("tokenizer.json"), "{problem}");
        let hits = r4.search(&Request::new("stale build cache")).unwrap().hits;
        assert_eq!(hits[0].slug, "stale-cache");
        assert!(hits[0].score.semantic.is_none());
    }
}
