//! BERT's forward pass, one text at a time, on the CPU (cargo feature `semantic`): the
//! encoder of all-MiniLM-L6-v2 and its kin, written for the shapes a retrieval index meets.
//!
//! A request is a dozen tokens. At that size a general matrix product spends its time packing
//! the weights into panels on every call (a profile of candle's BERT on a 10-word request:
//! half the time in gemm, 30% of it packing the weight matrices, 15% in the scheduler). Here
//! the weights are packed once, at load, into panels of [`COLS`] rows laid out in the order
//! the kernel reads them ([`Linear::pack`]), and each product streams every panel from memory
//! once, multiplying it with a few tokens at a time while it sits in cache ([`linear`]): a
//! request reads the 42 MB of encoder weights once, whatever the number of tokens. The
//! attention's products go through the same kernel.
//!
//! A text is run alone, never padded into a batch, so its embedding does not depend on the
//! texts embedded beside it; a batch of texts runs one text per thread.
//!
//! Every sum is taken in an order fixed by this code (eight lanes, then a fixed tree), never
//! contracted into fused multiply-adds: the AVX2 build of [`linear`] and the portable one give
//! the same bits, so an index's vectors do not depend on the machine that embedded them.

use std::path::Path;

use safetensors::{Dtype, SafeTensors};

use super::{invalid, ModelError};

/// The parts of a BERT `config.json` the forward pass reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Config {
    /// Tokens of the vocabulary (rows of the word embeddings).
    pub vocab_size: usize,
    /// The width of every hidden state (the embedding's dimension).
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// The width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Positions the model has embeddings for (the longest text it reads).
    pub max_position_embeddings: usize,
    /// Token types (segments); every token here is of type 0.
    #[serde(default = "two")]
    pub type_vocab_size: usize,
    /// The layer norms' epsilon.
    #[serde(default = "layer_norm_eps")]
    pub layer_norm_eps: f64,
    /// The feed-forward activation: `gelu` (with erf), `gelu_new` or `gelu_pytorch_tanh` (the
    /// tanh approximation), or `relu`.
    #[serde(default = "gelu")]
    pub hidden_act: String,
    /// A prefix of the weights' names (`bert.`, or the model type's) when they carry one.
    #[serde(default)]
    pub model_type: Option<String>,
}

fn two() -> usize {
    2
}
fn layer_norm_eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".to_string()
}

/// The feed-forward activation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Activation {
    /// `x/2 (1 + erf(x/√2))`.
    Gelu,
    /// `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    GeluTanh,
    /// `max(x, 0)`.
    Relu,
}

impl Activation {
    fn of(name: &str) -> Option<Activation> {
        match name {
            "gelu" => Some(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" | "geluapproximate" => {
                Some(Activation::GeluTanh)
            }
            "relu" => Some(Activation::Relu),
            _ => None,
        }
    }

    fn apply(self, xs: &mut [f32]) {
        match self {
            Activation::Gelu => {
                for x in xs {
                    *x = (libm::erff(*x * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * *x;
                }
            }
            Activation::GeluTanh => {
                const C: f32 = 0.797_884_6; // √(2/π)
                for x in xs {
                    let v = *x;
                    *x = 0.5 * v * (1.0 + (C * (v + 0.044_715 * v * v * v)).tanh());
                }
            }
            Activation::Relu => {
                for x in xs {
                    *x = x.max(0.0);
                }
            }
        }
    }
}

/// A dense layer: `y = W x + b`, `W` stored as the model stores it, one row of `inputs` values
/// per output.
struct Linear {
    /// The weight rows in panels of [`COLS`] ([`Linear::pack`]).
    packed: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

impl Linear {
    /// The layer of `weight` (`bias.len()` rows of `inputs` values) and `bias`.
    fn new(weight: &[f32], bias: Vec<f32>, inputs: usize) -> Linear {
        Linear {
            packed: Linear::pack(weight, bias.len(), inputs),
            bias,
            inputs,
        }
    }

    fn outputs(&self) -> usize {
        self.bias.len()
    }

    /// `weight`'s rows in panels of [`COLS`] rows (the last one padded with zeros), each
    /// panel's rows interleaved [`LANES`] values at a time, then their tails: the order in
    /// which [`panel`] reads them, so that a product streams the weights front to back.
    fn pack(weight: &[f32], outputs: usize, inputs: usize) -> Vec<f32> {
        let whole = inputs - inputs % LANES;
        let panels = outputs.div_ceil(COLS);
        let mut packed = Vec::with_capacity(panels * COLS * inputs);
        let row = |o: usize| (o < outputs).then(|| &weight[o * inputs..][..inputs]);
        for p in 0..panels {
            for i in (0..whole).step_by(LANES) {
                for c in 0..COLS {
                    match row(p * COLS + c) {
                        Some(w) => packed.extend_from_slice(&w[i..i + LANES]),
                        None => packed.extend([0.0; LANES]),
                    }
                }
            }
            for c in 0..COLS {
                match row(p * COLS + c) {
                    Some(w) => packed.extend_from_slice(&w[whole..]),
                    None => packed.extend(std::iter::repeat_n(0.0, inputs - whole)),
                }
            }
        }
        packed
    }
}

/// A layer norm's scale and shift.
struct Norm {
    scale: Vec<f32>,
    shift: Vec<f32>,
    eps: f32,
}

impl Norm {
    /// Normalise each row of `xs` (rows of `scale.len()` values) in place.
    fn apply(&self, xs: &mut [f32]) {
        let width = self.scale.len();
        for row in xs.chunks_exact_mut(width) {
            let mean = sum(row) / width as f32;
            let mut var = 0.0f32;
            for x in row.iter_mut() {
                *x -= mean;
                var += *x * *x;
            }
            let inv = 1.0 / (var / width as f32 + self.eps).sqrt();
            for ((x, g), b) in row.iter_mut().zip(&self.scale).zip(&self.shift) {
                *x = *x * inv * g + b;
            }
        }
    }
}

/// One transformer layer.
struct Layer {
    /// Query, key and value in one product (their rows one after the other).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    output_norm: Norm,
}

/// A loaded BERT encoder.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    positions: usize,
    activation: Activation,
    words: Vec<f32>,
    position_rows: Vec<f32>,
    /// The embedding of token type 0 (every token's).
    type0: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
}

/// The tensors of `model.safetensors`, found by name with or without the model's prefix.
struct Weights<'a> {
    path: &'a Path,
    tensors: SafeTensors<'a>,
    prefix: String,
}

impl Weights<'_> {
    /// The tensor `name` as f32 values, checked to have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| invalid(self.path, format!("no tensor `{full}`")))?;
        if view.shape() != shape {
            return Err(invalid(
                self.path,
                format!(
                    "`{full}` has the shape {:?}; the config says {shape:?}",
                    view.shape()
                ),
            ));
        }
        let data = view.data();
        let values: Vec<f32> = match view.dtype() {
            Dtype::F32 => data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::F16 => data
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::BF16 => data
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(invalid(
                    self.path,
                    format!("`{full}` is {other:?}; weights are F32, F16 or BF16"),
                ))
            }
        };
        if values.len() != shape.iter().product::<usize>() {
            return Err(invalid(
                self.path,
                format!("`{full}` holds {} bytes for its shape", data.len()),
            ));
        }
        Ok(values)
    }

    /// The weight and bias of the dense layer `name`.
    fn dense(
        &self,
        name: &str,
        outputs: usize,
        inputs: usize,
    ) -> Result<(Vec<f32>, Vec<f32>), ModelError> {
        Ok((
            self.get(&format!("{name}.weight"), &[outputs, inputs])?,
            self.get(&format!("{name}.bias"), &[outputs])?,
        ))
    }

    fn linear(&self, name: &str, outputs: usize, inputs: usize) -> Result<Linear, ModelError> {
        let (weight, bias) = self.dense(name, outputs, inputs)?;
        Ok(Linear::new(&weight, bias, inputs))
    }

    fn norm(&self, name: &str, width: usize, eps: f32) -> Result<Norm, ModelError> {
        Ok(Norm {
            scale: self.get(&format!("{name}.weight"), &[width])?,
            shift: self.get(&format!("{name}.bias"), &[width])?,
            eps,
        })
    }
}

impl Encoder {
    /// The encoder `config` describes, from the bytes of `model.safetensors` (read from
    /// `path`, which every error names).
    pub fn load(config: &Config, path: &Path, bytes: &[u8]) -> Result<Encoder, ModelError> {
        let activation = Activation::of(&config.hidden_act).ok_or_else(|| {
            invalid(
                &path.with_file_name("config.json"),
                format!(
                    "hidden_act `{}` is not one of gelu, gelu_new, gelu_pytorch_tanh, relu",
                    config.hidden_act
                ),
            )
        })?;
        let tensors = SafeTensors::deserialize(bytes).map_err(|e| invalid(path, e))?;
        // the weights' names carry `bert.` (or the model type) in some checkpoints
        let first = "embeddings.word_embeddings.weight";
        let prefix = ["".to_string(), "bert.".to_string()]
            .into_iter()
            .chain(config.model_type.iter().map(|t| format!("{t}.")))
            .find(|p| tensors.tensor(&format!("{p}{first}")).is_ok())
            .unwrap_or_default();
        let w = Weights {
            path,
            tensors,
            prefix,
        };
        let (h, inter) = (config.hidden_size, config.intermediate_size);
        let eps = config.layer_norm_eps as f32;
        let mut type_rows = w.get(
            "embeddings.token_type_embeddings.weight",
            &[config.type_vocab_size, h],
        )?;
        type_rows.truncate(h);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let l = format!("encoder.layer.{i}");
            let (q, k, v) = (
                w.dense(&format!("{l}.attention.self.query"), h, h)?,
                w.dense(&format!("{l}.attention.self.key"), h, h)?,
                w.dense(&format!("{l}.attention.self.value"), h, h)?,
            );
            let qkv = Linear::new(&[q.0, k.0, v.0].concat(), [q.1, k.1, v.1].concat(), h);
            layers.push(Layer {
                qkv,
                attention_out: w.linear(&format!("{l}.attention.output.dense"), h, h)?,
                attention_norm: w.norm(&format!("{l}.attention.output.LayerNorm"), h, eps)?,
                up: w.linear(&format!("{l}.intermediate.dense"), inter, h)?,
                down: w.linear(&format!("{l}.output.dense"), h, inter)?,
                output_norm: w.norm(&format!("{l}.output.LayerNorm"), h, eps)?,
            });
        }
        Ok(Encoder {
            hidden: h,
            heads: config.num_attention_heads,
            positions: config.max_position_embeddings,
            activation,
            words: w.get("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position_rows: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            type0: type_rows,
            embedding_norm: w.norm("embeddings.LayerNorm", h, eps)?,
            layers,
        })
    }

    /// The width of its hidden states.
    pub fn dimension(&self) -> usize {
        self.hidden
    }

    /// The mean of the last hidden states of the tokens `ids` (at most the model's positions;
    /// ids beyond the vocabulary read as 0), L2-normalised; all zeros for no token.
    /// `parallel` splits each product over rayon's threads (for one text; a batch runs one
    /// text per thread instead).
    pub fn embed(&self, ids: &[u32], parallel: bool) -> Vec<f32> {
        let h = self.hidden;
        let ids = &ids[..ids.len().min(self.positions)];
        let t = ids.len();
        if t == 0 {
            return vec![0.0; h];
        }
        let vocab = self.words.len() / h;
        let mut x = vec![0.0f32; t * h];
        for (p, (row, &id)) in x.chunks_exact_mut(h).zip(ids).enumerate() {
            let id = if (id as usize) < vocab {
                id as usize
            } else {
                0
            };
            let word = &self.words[id * h..][..h];
            let position = &self.position_rows[p * h..][..h];
            for (((x, w), p), ty) in row.iter_mut().zip(word).zip(position).zip(&self.type0) {
                *x = w + p + ty;
            }
        }
        self.embedding_norm.apply(&mut x);
        let mut qkv = vec![0.0f32; t * 3 * h];
        let mut context = vec![0.0f32; t * h];
        let mut projected = vec![0.0f32; t * h];
        let mut up = Vec::new();
        for layer in &self.layers {
            linear(&x, t, &layer.qkv, &mut qkv, parallel, None);
            self.attention(&qkv, t, &mut context);
            linear(
                &context,
                t,
                &layer.attention_out,
                &mut projected,
                parallel,
                None,
            );
            for (x, p) in x.iter_mut().zip(&projected) {
                *x += p;
            }
            layer.attention_norm.apply(&mut x);
            up.resize(t * layer.up.outputs(), 0.0);
            linear(&x, t, &layer.up, &mut up, parallel, Some(self.activation));
            linear(&up, t, &layer.down, &mut projected, parallel, None);
            for (x, p) in x.iter_mut().zip(&projected) {
                *x += p;
            }
            layer.output_norm.apply(&mut x);
        }
        // mean pooling, then unit length
        let mut mean = vec![0.0f32; h];
        for row in x.chunks_exact(h) {
            for (m, v) in mean.iter_mut().zip(row) {
                *m += v;
            }
        }
        for m in &mut mean {
            *m /= t as f32;
        }
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        for m in &mut mean {
            *m /= norm;
        }
        mean
    }

    /// Multi-head self-attention of `t` tokens over their queries, keys and values (`qkv`,
    /// `t` rows of `3 × hidden`), into `context` (`t` rows of `hidden`). One text, no padding:
    /// every token attends to every token. Both products of a head go through the dense
    /// layers' kernel: the scores with the head's keys as the weight rows, the context with
    /// its values' columns.
    fn attention(&self, qkv: &[f32], t: usize, context: &mut [f32]) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let (mut queries, mut keys, mut values) = (
            vec![0.0f32; t * d],
            vec![0.0f32; t * d],
            vec![0.0f32; d * t],
        );
        let mut scores = vec![0.0f32; t * t];
        let mut out = vec![0.0f32; t * d];
        for head in 0..self.heads {
            let offset = head * d;
            for i in 0..t {
                let row = &qkv[i * 3 * h..][..3 * h];
                queries[i * d..][..d].copy_from_slice(&row[offset..][..d]);
                keys[i * d..][..d].copy_from_slice(&row[h + offset..][..d]);
                for (c, v) in row[2 * h + offset..][..d].iter().enumerate() {
                    values[c * t + i] = *v;
                }
            }
            let by_key = Linear::new(&keys, vec![0.0; t], d);
            linear_rows_best(&queries, t, &by_key, 0..t.div_ceil(COLS), &mut scores);
            for row in scores.chunks_exact_mut(t) {
                let mut max = f32::NEG_INFINITY;
                for s in row.iter_mut() {
                    *s *= scale;
                    max = max.max(*s);
                }
                let mut total = 0.0f32;
                for s in row.iter_mut() {
                    *s = (*s - max).exp();
                    total += *s;
                }
                for s in row.iter_mut() {
                    *s /= total;
                }
            }
            let by_value = Linear::new(&values, vec![0.0; d], t);
            linear_rows_best(&scores, t, &by_value, 0..d.div_ceil(COLS), &mut out);
            for i in 0..t {
                context[i * h + offset..][..d].copy_from_slice(&out[i * d..][..d]);
            }
        }
    }
}

/// Lanes of every partial sum: the sums' order, and so their bits, are fixed by this and not
/// by the machine's vector width.
const LANES: usize = 8;

/// The sum of `xs`, in lanes then a fixed tree.
fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    reduce(acc) + tail.iter().sum::<f32>()
}

#[inline(always)]
fn reduce(acc: [f32; LANES]) -> f32 {
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

/// The dot products of `R` rows of inputs (of `k` values) with the [`COLS`] weight rows of a
/// packed panel ([`Linear::pack`]): each weight chunk is loaded once for the `R` rows, and the
/// panel is read front to back, one stream from memory.
#[inline(always)]
fn panel<const R: usize>(xs: [&[f32]; R], panel: &[f32], k: usize) -> [[f32; COLS]; R] {
    let whole = k - k % LANES;
    let (chunks, tail) = panel.split_at(whole * COLS);
    let mut acc = [[[0.0f32; LANES]; COLS]; R];
    for (j, w) in chunks.chunks_exact(COLS * LANES).enumerate() {
        let i = j * LANES;
        for r in 0..R {
            let x: &[f32; LANES] = xs[r][i..i + LANES].try_into().expect("a chunk");
            for c in 0..COLS {
                let w: &[f32; LANES] = w[c * LANES..][..LANES].try_into().expect("a chunk");
                for l in 0..LANES {
                    acc[r][c][l] += x[l] * w[l];
                }
            }
        }
    }
    let rest = k - whole;
    let mut out = [[0.0f32; COLS]; R];
    for r in 0..R {
        for c in 0..COLS {
            let mut sum = 0.0f32;
            for (x, w) in xs[r][whole..k].iter().zip(&tail[c * rest..][..rest]) {
                sum += x * w;
            }
            out[r][c] = reduce(acc[r][c]) + sum;
        }
    }
    out
}

/// Tokens in a block of [`panel`]'s rows.
const ROWS: usize = 4;
/// Weight rows in a packed panel.
const COLS: usize = 4;

/// `ys = xs Wᵀ + b` for `t` rows of inputs, over the panels `range` of `layer` (each
/// product streams those panels once, [`ROWS`] tokens at a time). `ys` holds `t` rows of the
/// panels' outputs.
fn linear_rows(
    xs: &[f32],
    t: usize,
    layer: &Linear,
    range: std::ops::Range<usize>,
    ys: &mut [f32],
) {
    linear_rows_with::<ROWS, _>(xs, t, layer, range, ys, |i, row, weights, k, put| {
        match t - i {
            1 => put(i, &panel::<1>([row(i)], weights, k)),
            2 => put(
                i,
                &panel::<2>(std::array::from_fn(|r| row(i + r)), weights, k),
            ),
            3 => put(
                i,
                &panel::<3>(std::array::from_fn(|r| row(i + r)), weights, k),
            ),
            _ => put(
                i,
                &panel::<ROWS>(std::array::from_fn(|r| row(i + r)), weights, k),
            ),
        }
    })
}

/// The loops of [`linear_rows`] around a kernel: `kernel(i, row, panel, k, put)` takes the
/// tokens from `i` (up to `STEP` of them, `row(i)` the inputs of token `i`) against one
/// packed panel of `k` inputs, and hands `put` their outputs.
#[inline(always)]
fn linear_rows_with<'a, const STEP: usize, K>(
    xs: &'a [f32],
    t: usize,
    layer: &Linear,
    range: std::ops::Range<usize>,
    ys: &mut [f32],
    mut kernel: K,
) where
    K: FnMut(
        usize,
        &dyn Fn(usize) -> &'a [f32],
        &[f32],
        usize,
        &mut dyn FnMut(usize, &[[f32; COLS]]),
    ),
{
    let k = layer.inputs;
    let n = layer.outputs();
    let first = range.start * COLS;
    let width = (range.end * COLS).min(n) - first;
    let row = |i: usize| &xs[i * k..][..k];
    for p in range {
        let weights = &layer.packed[p * COLS * k..][..COLS * k];
        let mut put = |i: usize, out: &[[f32; COLS]]| {
            for (r, out) in out.iter().enumerate() {
                for (c, v) in out.iter().enumerate() {
                    let o = p * COLS + c;
                    if o < n {
                        ys[(i + r) * width + o - first] = v + layer.bias[o];
                    }
                }
            }
        };
        let mut i = 0;
        while i < t {
            kernel(i, &row, weights, k, &mut put);
            i += STEP;
        }
    }
}

/// [`linear_rows`] over [`panel`]'s AVX2 twin: the same sums in the same order, eight lanes
/// to a register.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Linear, COLS, LANES};
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    #[inline(always)]
    fn load(chunk: &[f32]) -> __m256 {
        let chunk: &[f32; LANES] = chunk[..LANES].try_into().expect("a chunk");
        // SAFETY: `chunk` holds the eight floats read
        unsafe { _mm256_loadu_ps(chunk.as_ptr()) }
    }

    #[inline(always)]
    fn lanes(v: __m256) -> [f32; LANES] {
        let mut out = [0.0f32; LANES];
        // SAFETY: `out` has room for the eight floats written
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
        out
    }

    ///
    /// # Safety
    /// The CPU has AVX2 (inlined, it takes its caller's registers: AVX-512VL's 32 make room
    /// for four tokens' accumulators).
    #[inline(always)]
    unsafe fn panel<const R: usize>(xs: [&[f32]; R], panel: &[f32], k: usize) -> [[f32; COLS]; R] {
        let whole = k - k % LANES;
        let (chunks, tail) = panel.split_at(whole * COLS);
        // SAFETY: the caller promises AVX2
        let mut acc = [[unsafe { _mm256_setzero_ps() }; COLS]; R];
        for (j, w) in chunks.chunks_exact(COLS * LANES).enumerate() {
            let i = j * LANES;
            let w: [__m256; COLS] = std::array::from_fn(|c| load(&w[c * LANES..]));
            for r in 0..R {
                let x = load(&xs[r][i..]);
                for c in 0..COLS {
                    // SAFETY: the caller promises AVX2
                    acc[r][c] = unsafe { _mm256_add_ps(acc[r][c], _mm256_mul_ps(x, w[c])) };
                }
            }
        }
        let rest = k - whole;
        let mut out = [[0.0f32; COLS]; R];
        for r in 0..R {
            for c in 0..COLS {
                let mut sum = 0.0f32;
                for (x, w) in xs[r][whole..k].iter().zip(&tail[c * rest..][..rest]) {
                    sum += x * w;
                }
                out[r][c] = super::reduce(lanes(acc[r][c])) + sum;
            }
        }
        out
    }

    /// [`super::linear_rows`] with vector registers, `STEP` tokens at a time.
    #[inline(always)]
    fn linear_rows_simd<const STEP: usize>(
        xs: &[f32],
        t: usize,
        layer: &Linear,
        range: std::ops::Range<usize>,
        ys: &mut [f32],
    ) {
        super::linear_rows_with::<STEP, _>(xs, t, layer, range, ys, |i, row, weights, k, put| {
            // SAFETY (all three): the callers enable AVX2
            match (t - i).min(STEP) {
                1 => put(i, &unsafe { panel::<1>([row(i)], weights, k) }),
                2 => put(i, &unsafe {
                    panel::<2>(std::array::from_fn(|r| row(i + r)), weights, k)
                }),
                3 => put(i, &unsafe {
                    panel::<3>(std::array::from_fn(|r| row(i + r)), weights, k)
                }),
                _ => put(i, &unsafe {
                    panel::<4>(std::array::from_fn(|r| row(i + r)), weights, k)
                }),
            }
        })
    }

    /// [`super::linear_rows`] with AVX2's 16 registers: two tokens by a panel of [`COLS`]
    /// weight rows.
    #[target_feature(enable = "avx2")]
    pub(super) fn linear_rows(
        xs: &[f32],
        t: usize,
        layer: &Linear,
        range: std::ops::Range<usize>,
        ys: &mut [f32],
    ) {
        linear_rows_simd::<2>(xs, t, layer, range, ys)
    }

    /// [`super::linear_rows`] with AVX-512VL's 32 registers (still eight lanes, so still the
    /// same sums): four tokens by a panel.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) fn linear_rows_wide(
        xs: &[f32],
        t: usize,
        layer: &Linear,
        range: std::ops::Range<usize>,
        ys: &mut [f32],
    ) {
        linear_rows_simd::<4>(xs, t, layer, range, ys)
    }
}

/// [`linear_rows`] with the widest vectors the machine has (the same bits either way).
fn linear_rows_best(
    xs: &[f32],
    t: usize,
    layer: &Linear,
    range: std::ops::Range<usize>,
    ys: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512vl") {
        // SAFETY: the CPU has the features the function enables
        return unsafe { avx2::linear_rows_wide(xs, t, layer, range, ys) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the only feature the function enables
        return unsafe { avx2::linear_rows(xs, t, layer, range, ys) };
    }
    linear_rows(xs, t, layer, range, ys)
}

/// Panels below which a product is not split between threads.
const PARALLEL_PANELS: usize = 32;

/// `ys = xs Wᵀ + b` for `t` rows of `xs`; `parallel` splits the panels in two halves, one
/// for each of the pool's threads (`rayon::join`: the second half is taken by an idle
/// thread or run here after the first).
///
/// `then`, when given, is applied to every output, by the thread that computed it.
fn linear(
    xs: &[f32],
    t: usize,
    layer: &Linear,
    ys: &mut [f32],
    parallel: bool,
    then: Option<Activation>,
) {
    let n = layer.outputs();
    let panels = n.div_ceil(COLS);
    let part = |range: std::ops::Range<usize>, out: &mut [f32]| {
        linear_rows_best(xs, t, layer, range, out);
        if let Some(activation) = then {
            activation.apply(out);
        }
    };
    if !parallel || panels < 2 * PARALLEL_PANELS || rayon::current_num_threads() < 2 {
        part(0..panels, ys);
        return;
    }
    let middle = panels / 2;
    let split = middle * COLS;
    let mut right = vec![0.0f32; t * (n - split)];
    let mut left = vec![0.0f32; t * split];
    rayon::join(
        || part(0..middle, &mut left),
        || part(middle..panels, &mut right),
    );
    for ((y, l), r) in ys
        .chunks_exact_mut(n)
        .zip(left.chunks_exact(split))
        .zip(right.chunks_exact(n - split))
    {
        y[..split].copy_from_slice(l);
        y[split..].copy_from_slice(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::bert::tests::{write_tiny_model_with, Shape};

    /// BERT's forward pass as the definition reads, in f64, with no blocking, packing or
    /// threads: the oracle the encoder is checked against.
    fn reference(dir: &Path, ids: &[u32]) -> Vec<f64> {
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let get = |k: &str| config[k].as_u64().unwrap() as usize;
        let (h, heads, layers) = (
            get("hidden_size"),
            get("num_attention_heads"),
            get("num_hidden_layers"),
        );
        let act = config["hidden_act"].as_str().unwrap().to_string();
        let eps = config["layer_norm_eps"].as_f64().unwrap();
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let tensors = SafeTensors::deserialize(&bytes).unwrap();
        let w = |name: &str| -> Vec<f64> {
            let view = tensors.tensor(name).unwrap();
            view.data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
                .collect()
        };
        let norm = |x: &mut Vec<Vec<f64>>, name: &str| {
            let (g, b) = (w(&format!("{name}.weight")), w(&format!("{name}.bias")));
            for row in x.iter_mut() {
                let mean = row.iter().sum::<f64>() / h as f64;
                let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
                for (j, v) in row.iter_mut().enumerate() {
                    *v = (*v - mean) / (var + eps).sqrt() * g[j] + b[j];
                }
            }
        };
        let dense = |x: &[Vec<f64>], name: &str| -> Vec<Vec<f64>> {
            let (wt, b) = (w(&format!("{name}.weight")), w(&format!("{name}.bias")));
            let inputs = x[0].len();
            x.iter()
                .map(|row| {
                    (0..b.len())
                        .map(|o| {
                            b[o] + (0..inputs)
                                .map(|i| row[i] * wt[o * inputs + i])
                                .sum::<f64>()
                        })
                        .collect()
                })
                .collect()
        };
        let (words, positions, types) = (
            w("embeddings.word_embeddings.weight"),
            w("embeddings.position_embeddings.weight"),
            w("embeddings.token_type_embeddings.weight"),
        );
        let mut x: Vec<Vec<f64>> = ids
            .iter()
            .enumerate()
            .map(|(p, &id)| {
                (0..h)
                    .map(|j| words[id as usize * h + j] + positions[p * h + j] + types[j])
                    .collect()
            })
            .collect();
        norm(&mut x, "embeddings.LayerNorm");
        let t = ids.len();
        let d = h / heads;
        for l in 0..layers {
            let p = format!("encoder.layer.{l}");
            let q = dense(&x, &format!("{p}.attention.self.query"));
            let k = dense(&x, &format!("{p}.attention.self.key"));
            let v = dense(&x, &format!("{p}.attention.self.value"));
            let mut context = vec![vec![0.0; h]; t];
            for head in 0..heads {
                let r = head * d..(head + 1) * d;
                for i in 0..t {
                    let scores: Vec<f64> = (0..t)
                        .map(|j| {
                            r.clone().map(|c| q[i][c] * k[j][c]).sum::<f64>() / (d as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = e.iter().sum();
                    for c in r.clone() {
                        context[i][c] = (0..t).map(|j| e[j] / total * v[j][c]).sum();
                    }
                }
            }
            let out = dense(&context, &format!("{p}.attention.output.dense"));
            for (x, o) in x.iter_mut().zip(&out) {
                for (x, o) in x.iter_mut().zip(o) {
                    *x += o;
                }
            }
            norm(&mut x, &format!("{p}.attention.output.LayerNorm"));
            let mut up = dense(&x, &format!("{p}.intermediate.dense"));
            for v in up.iter_mut().flatten() {
                *v = match act.as_str() {
                    "gelu" => *v * 0.5 * (1.0 + libm::erf(*v / std::f64::consts::SQRT_2)),
                    "relu" => v.max(0.0),
                    _ => {
                        let c = (2.0 / std::f64::consts::PI).sqrt();
                        0.5 * *v * (1.0 + (c * (*v + 0.044715 * v.powi(3))).tanh())
                    }
                };
            }
            let down = dense(&up, &format!("{p}.output.dense"));
            for (x, o) in x.iter_mut().zip(&down) {
                for (x, o) in x.iter_mut().zip(o) {
                    *x += o;
                }
            }
            norm(&mut x, &format!("{p}.output.LayerNorm"));
        }
        let mean: Vec<f64> = (0..h)
            .map(|j| x.iter().map(|row| row[j]).sum::<f64>() / t as f64)
            .collect();
        let length = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
        mean.iter().map(|v| v / length).collect()
    }

    fn load(dir: &Path) -> Encoder {
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
        let path = dir.join("model.safetensors");
        Encoder::load(&config, &path, &std::fs::read(&path).unwrap()).unwrap()
    }

    #[test]
    fn the_forward_pass_is_berts_and_threads_change_no_bit() {
        let shapes = [
            // every width a multiple of the lanes and of the panels
            Shape::default(),
            // tails: widths that are neither, two layers, the tanh GELU
            Shape {
                hidden: 10,
                heads: 2,
                intermediate: 14,
                layers: 2,
                act: "gelu_new",
            },
            // products wide enough to be split between threads, a padded last panel
            Shape {
                hidden: 48,
                heads: 4,
                intermediate: 270,
                layers: 1,
                act: "relu",
            },
        ];
        for (n, shape) in shapes.into_iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            write_tiny_model_with(dir.path(), n as u64 + 3, shape);
            let encoder = load(dir.path());
            // 1 to 9 tokens: every remainder of the blocks of tokens
            for t in 1..=9u32 {
                let ids: Vec<u32> = (0..t).map(|i| (i * 7 + 2) % 17).collect();
                let alone = encoder.embed(&ids, false);
                let split = encoder.embed(&ids, true);
                assert_eq!(alone, split, "{shape:?}, {t} tokens: threads change no bit");
                let expected = reference(dir.path(), &ids);
                for (a, e) in alone.iter().zip(&expected) {
                    assert!(
                        (*a as f64 - e).abs() < 1e-5,
                        "{shape:?}, {t} tokens: {alone:?} against {expected:?}"
                    );
                }
            }
            assert_eq!(encoder.embed(&[], true), vec![0.0; shape.hidden]);
        }
    }

    #[test]
    fn every_vector_width_gives_the_same_bits() {
        // a layer of 13 outputs (a padded panel) over 21 inputs (a tail after the lanes)
        let (outputs, inputs, t) = (13, 21, 7);
        let value = |i: usize| ((i * 2654435761) % 1000) as f32 / 997.0 - 0.5;
        let weight: Vec<f32> = (0..outputs * inputs).map(value).collect();
        let bias: Vec<f32> = (0..outputs).map(|i| value(i + 5)).collect();
        let layer = Linear::new(&weight, bias.clone(), inputs);
        let xs: Vec<f32> = (0..t * inputs).map(|i| value(i + 11)).collect();
        let panels = outputs.div_ceil(COLS);
        let mut portable = vec![0.0; t * outputs];
        linear_rows(&xs, t, &layer, 0..panels, &mut portable);
        let mut best = vec![0.0; t * outputs];
        linear_rows_best(&xs, t, &layer, 0..panels, &mut best);
        assert_eq!(portable, best);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // the AVX2 build on a machine that would choose AVX-512VL
            let mut avx2 = vec![0.0; t * outputs];
            // SAFETY: the CPU has AVX2
            unsafe { avx2::linear_rows(&xs, t, &layer, 0..panels, &mut avx2) };
            assert_eq!(portable, avx2);
        }
        // and both are the products
        for i in 0..t {
            for o in 0..outputs {
                let expected = bias[o]
                    + (0..inputs)
                        .map(|j| xs[i * inputs + j] * weight[o * inputs + j])
                        .sum::<f32>();
                assert!((portable[i * outputs + o] - expected).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn an_unknown_activation_is_an_error_naming_the_config() {
        let dir = tempfile::tempdir().unwrap();
        write_tiny_model_with(
            dir.path(),
            1,
            Shape {
                act: "swish",
                ..Shape::default()
            },
        );
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.path().join("config.json")).unwrap())
                .unwrap();
        let path = dir.path().join("model.safetensors");
        let e = Encoder::load(&config, &path, &std::fs::read(&path).unwrap())
            .err()
            .unwrap();
        assert!(e.to_string().contains("config.json"), "{e}");
        assert!(e.to_string().contains("swish"), "{e}");
    }
}
