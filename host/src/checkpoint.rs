//! Loading DeepSeek-V3/R1 FP8 checkpoints (safetensors, memory-mapped) into the GEMMs' operands.
//!
//! # The format
//! Every FP8 linear layer `<prefix>` is two tensors (DeepSeek-V3's `README_WEIGHTS.md`, "FP8 Weight
//! Documentation"; `inference/kernel.py`, `weight_dequant`):
//! * `<prefix>.weight`: `F8_E4M3` (OCP E4M3FN, `torch.float8_e4m3fn`) `[N, K]`, row-major;
//! * `<prefix>.weight_scale_inv`: `F32 [⌈N/128⌉, ⌈K/128⌉]`, one scale per 128×128 block. Despite
//!   the name it is the **dequantization** scale: `w[n, k] = fp8[n, k] · scale_inv[n/128, k/128]`
//!   (`weight_dequant` computes `y = x * s`; the README: "(128x128 weight block) *
//!   weight_scale_inv"). That is exactly this library's SFB ([`crate::quant`]).
//!
//! An MoE layer `L` has routed experts `model.layers.L.mlp.experts.E.{gate_proj,up_proj,down_proj}`
//! (gate and up `[I, H]`, down `[H, I]`) and optionally a shared expert
//! `model.layers.L.mlp.shared_experts.{gate_proj,up_proj,down_proj}` (its own intermediate size).
//! A checkpoint is one `.safetensors` file or a directory of shards with a
//! `model.safetensors.index.json` whose `weight_map` names each tensor's shard
//! ([`Checkpoint::open`] takes either; shards are memory-mapped when first used).
//!
//! # What the loader produces
//! [`Checkpoint::moe_layer`] returns host-side [`MoeWeights`] in the device's FP8 format `F`
//! ([`CheckpointFormat`]): the experts' gate and up fused into one `[G, 2·I, H]` weight (per
//! expert the `I` gate rows, then the `I` up rows — the `[m, 2·I]` gate ‖ up order that
//! [`crate::silu_mul_quantize_activations`] reads) and down as `[G, H, I]`; the shared expert
//! likewise as an [`MlpWeights`] pair for the dense GEMM. That stages the whole layer on the host
//! (DeepSeek-V3: 256 experts × 44 MB ≈ 11 GB); it is meant for tests and CPU references.
//!
//! [`DeviceMoeWeights::load`] streams instead: it allocates the device weights once
//! ([`DeviceGroupedWeights::alloc`]), then reads, converts and checks one expert at a time
//! ([`Checkpoint::mlp`]) and copies it into its group ([`DeviceGroupedWeights::upload_group`])
//! before reading the next, so host memory is O(one expert) — the same bytes on the device as
//! [`DeviceMoeWeights::upload`] of [`Checkpoint::moe_layer`]. An engine with its own buffers can
//! do the same with the public pieces. (Setup time: it copies on its own stream and waits.)
//! The memory map's pages of the expert just read stay in the page cache (file-backed,
//! reclaimable, counted in the process's RSS while mapped); the loader's own allocations are
//! one expert.
//!
//! * gfx942 ([`E4M3Fnuz`]): every byte is kept except `0x80` (−0 in E4M3FN, NaN in E4M3FNUZ) →
//!   `0x00`, and every scale is doubled (E4M3FNUZ's exponent bias is one larger, so the same bits
//!   are worth half; [`crate::quant::e4m3fn_to_e4m3fnuz_value`]). The dequantized values are
//!   identical, element for element.
//! * gfx950 ([`E4M3Fn`]): bytes and scales as stored.
//!
//! # Fusing gate and up
//! The fused weight's 128×128 scale blocks must each lie inside gate or inside up, so the loader
//! requires the intermediate size `I` to be a multiple of 128 (DeepSeek-V3: 2048; the down
//! GEMM needs `K = I` to be a multiple of 128 anyway). Otherwise it returns
//! [`Error::TensorShape`] rather than requantizing (which would change the model's weights).
//!
//! # Errors
//! Nothing in a malformed file panics or reads out of bounds; each problem is a typed
//! [`Error`] naming the file or tensor: [`Error::CheckpointIo`], [`Error::CheckpointParse`]
//! (not safetensors, bad index), [`Error::MissingTensor`], [`Error::TensorDtype`],
//! [`Error::TensorShape`], [`Error::ScaleGrid`], [`Error::Fp8Nan`] (an E4M3FN NaN byte
//! `0x7F`/`0xFF` in a weight: a corrupt checkpoint), [`Error::CheckpointScale`] (a scale outside
//! the kernels' range, [`fp8gemm_device::tile::scale_supported`], after conversion).
//!
//! # Writing
//! [`write_fp8_linears`] and [`write_deepseek_moe`] write checkpoints in the same format from
//! `f32` weights (quantized to E4M3FN per 128×128 block with [`QuantizedWeights::quantize`]),
//! for tests, examples and converting models.
//!
//! ```
//! use fp8gemm::checkpoint::{write_deepseek_moe, Checkpoint, DeviceMoeWeights, MlpF32, MoeLayerF32};
//! use fp8gemm::fp8::E4M3Fnuz;
//! use fp8gemm::Context;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (h, i) = (256, 128);
//! let expert = |seed: usize| MlpF32 {
//!     hidden: h,
//!     intermediate: i,
//!     gate: (0..i * h).map(|x| ((x * 7 + seed) % 13) as f32 / 64.0 - 0.1).collect(),
//!     up: (0..i * h).map(|x| ((x * 5 + seed) % 11) as f32 / 64.0 - 0.08).collect(),
//!     down: (0..h * i).map(|x| ((x * 3 + seed) % 7) as f32 / 64.0 - 0.05).collect(),
//! };
//! let layer = MoeLayerF32 { experts: (0..4).map(expert).collect(), shared: Some(expert(9)) };
//! let dir = std::env::temp_dir().join(format!("fp8gemm-doc-{}", std::process::id()));
//! write_deepseek_moe(&dir, 3, &layer, 2)?; // two shards + model.safetensors.index.json
//!
//! let ctx = Context::new()?; // the bundled gfx942 emulator: E4M3FNUZ
//! let ckpt = Checkpoint::open(&dir)?;
//! let w = DeviceMoeWeights::<E4M3Fnuz>::load(&ctx, &ckpt, 3)?;
//! assert_eq!((w.gate_up.groups(), w.gate_up.n(), w.gate_up.k()), (4, 2 * i, h));
//! assert_eq!((w.down.n(), w.down.k()), (h, i));
//! assert!(w.shared.is_some());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use fp8gemm_device::tile;
use memmap2::Mmap;
use rayon::prelude::*;
use safetensors::tensor::{Metadata, TensorView};
use safetensors::{Dtype, SafeTensors};

use crate::checks::check_format;
use crate::error::{Error, Result};
use crate::fp8::{E4M3Fn, E4M3Fnuz, Fp8Format};
use crate::gemm::DeviceWeights;
use crate::grouped::DeviceGroupedWeights;
use crate::layout::WeightLayout;
use crate::moe::{MoeLayer, MoeOptions};
use crate::quant::{BLOCK, GroupedQuantizedWeights, QuantizedWeights, blocks, e4m3fn_to_e4m3fnuz_value};
use crate::runtime::{Context, Stream};

/// The shard index of a sharded checkpoint directory.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// The file of an unsharded checkpoint directory.
pub const SINGLE_FILE: &str = "model.safetensors";

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::fp8::E4M3Fn {}
    impl Sealed for crate::fp8::E4M3Fnuz {}
}

/// An FP8 format a DeepSeek (E4M3FN) checkpoint converts to exactly: [`E4M3Fnuz`] (gfx942) and
/// [`E4M3Fn`] (gfx950).
pub trait CheckpointFormat: Fp8Format + sealed::Sealed {
    /// What each `weight_scale_inv` is multiplied by (2 for E4M3FNUZ, 1 for E4M3FN).
    const SCALE_FACTOR: f32;
    /// The value of `x` divided by [`Self::SCALE_FACTOR`], exactly; `None` for the E4M3FN NaNs.
    fn from_e4m3fn(x: E4M3Fn) -> Option<Self>;
}

impl CheckpointFormat for E4M3Fnuz {
    const SCALE_FACTOR: f32 = 2.0;
    #[inline]
    fn from_e4m3fn(x: E4M3Fn) -> Option<Self> {
        e4m3fn_to_e4m3fnuz_value(x)
    }
}

impl CheckpointFormat for E4M3Fn {
    const SCALE_FACTOR: f32 = 1.0;
    #[inline]
    fn from_e4m3fn(x: E4M3Fn) -> Option<Self> {
        if x.is_nan() { None } else { Some(x) }
    }
}

/// One memory-mapped safetensors file and its parsed header.
struct Shard {
    mmap: Mmap,
    /// Byte offset of the data section (8 + header length).
    data_start: usize,
    metadata: Metadata,
}

impl Shard {
    fn open(path: &Path) -> Result<Shard> {
        let io = |source| Error::CheckpointIo { path: path.to_path_buf(), source };
        let file = File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and private to this `Shard`; it stays valid while the
        // `Shard` lives. Its contents are only sound to read as long as no other process
        // truncates or rewrites the file meanwhile — the contract of every memory-mapped
        // checkpoint loader, documented on `Checkpoint::open`. Every access below is
        // bounds-checked against the mapping's length.
        let mmap = unsafe { Mmap::map(&file) }.map_err(io)?;
        let (header_len, metadata) = SafeTensors::read_metadata(&mmap[..])
            .map_err(|e| Error::CheckpointParse { path: path.to_path_buf(), detail: format!("not a valid safetensors file: {e}") })?;
        let data_start =
            header_len.checked_add(8).ok_or_else(|| Error::CheckpointParse { path: path.to_path_buf(), detail: "header length overflows".into() })?;
        Ok(Shard { mmap, data_start, metadata })
    }

    /// The tensor's view, or `None` if the shard lacks it. `read_metadata` checked that the
    /// offsets tile the data section exactly and match dtype × shape; the slice is still taken
    /// with `get`.
    fn tensor(&self, name: &str) -> Option<std::result::Result<TensorView<'_>, String>> {
        let info = self.metadata.info(name)?;
        let (s, e) = info.data_offsets;
        let bytes = match (self.data_start.checked_add(s), self.data_start.checked_add(e)) {
            (Some(s), Some(e)) => self.mmap.get(s..e),
            _ => None,
        };
        Some(match bytes {
            Some(b) => TensorView::new(info.dtype, info.shape.clone(), b).map_err(|e| e.to_string()),
            None => Err(format!("data offsets {s}..{e} outside the file")),
        })
    }
}

impl Shard {
    /// Drops this process's mapping of the pages of tensor `name` (best effort; they are
    /// re-read from the file if the tensor is read again): after a streaming load has copied an
    /// expert to the device, its pages need not stay in the process's resident set.
    fn release(&self, name: &str) {
        let Some(info) = self.metadata.info(name) else { return };
        let (s, e) = info.data_offsets;
        let (Some(start), Some(end)) = (self.data_start.checked_add(s), self.data_start.checked_add(e)) else { return };
        if start >= end || end > self.mmap.len() {
            return;
        }
        #[cfg(unix)]
        {
            // SAFETY: the mapping is a read-only, shared (`MAP_SHARED`) mapping of a file that
            // must not be modified while the `Checkpoint` lives (`Checkpoint::open`'s contract).
            // For such a mapping MADV_DONTNEED only unmaps the pages: a later read of the range
            // (through a borrow of `self.mmap` in this or another thread) faults the same file
            // contents back in, so no reader can observe a change — unlike a private or
            // anonymous mapping, where the advice would zero the pages. The range lies inside
            // the mapping (checked above); memmap2 aligns it to pages.
            let _ = unsafe { self.mmap.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
        }
    }
}

/// An opened checkpoint: one safetensors file, or the shards of a `model.safetensors.index.json`.
///
/// Shards are memory-mapped when a tensor in them is first read, and stay mapped while the
/// `Checkpoint` lives; the files must not be modified or truncated meanwhile.
pub struct Checkpoint {
    /// What was opened (file, index or directory), for error messages.
    path: PathBuf,
    files: Vec<PathBuf>,
    shards: Vec<OnceLock<Shard>>,
    /// Tensor name → index into `files`.
    index: HashMap<String, usize>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint").field("path", &self.path).field("files", &self.files).field("tensors", &self.index.len()).finish()
    }
}

impl Checkpoint {
    /// Opens a checkpoint: a `.safetensors` file, a shard index (`….index.json`), or a
    /// directory holding [`INDEX_FILE`] (sharded) or else [`SINGLE_FILE`].
    ///
    /// The index's `weight_map` must map tensor names to shard file names relative to the
    /// index's directory (no absolute paths, no `..`). A single file is mapped and its header
    /// parsed here; shards of an index when first used.
    pub fn open(path: impl AsRef<Path>) -> Result<Checkpoint> {
        let path = path.as_ref();
        let io = |p: &Path, source| Error::CheckpointIo { path: p.to_path_buf(), source };
        let meta = std::fs::metadata(path).map_err(|e| io(path, e))?;
        if meta.is_dir() {
            let index = path.join(INDEX_FILE);
            if index.is_file() {
                return Self::open_index(&index);
            }
            let single = path.join(SINGLE_FILE);
            if single.is_file() {
                return Self::open_file(&single);
            }
            return Err(io(path, std::io::Error::new(std::io::ErrorKind::NotFound, format!("the directory holds neither {INDEX_FILE} nor {SINGLE_FILE}"))));
        }
        if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".json")) { Self::open_index(path) } else { Self::open_file(path) }
    }

    fn open_file(path: &Path) -> Result<Checkpoint> {
        let shard = Shard::open(path)?;
        let index = shard.metadata.tensors().into_keys().map(|name| (name, 0)).collect();
        let lock = OnceLock::new();
        let _ = lock.set(shard);
        Ok(Checkpoint { path: path.to_path_buf(), files: vec![path.to_path_buf()], shards: vec![lock], index })
    }

    fn open_index(path: &Path) -> Result<Checkpoint> {
        let parse = |detail: String| Error::CheckpointParse { path: path.to_path_buf(), detail };
        let text = std::fs::read_to_string(path).map_err(|source| Error::CheckpointIo { path: path.to_path_buf(), source })?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| parse(format!("invalid JSON: {e}")))?;
        let map = json
            .get("weight_map")
            .and_then(|m| m.as_object())
            .ok_or_else(|| parse("expected an object with a \"weight_map\" object (tensor name → shard file)".into()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut files: Vec<PathBuf> = Vec::new();
        let mut file_ids: HashMap<&str, usize> = HashMap::new();
        let mut index = HashMap::with_capacity(map.len());
        for (name, file) in map {
            let file = file.as_str().ok_or_else(|| parse(format!("weight_map[\"{name}\"]: expected a shard file name (string), got {file}")))?;
            let relative = Path::new(file);
            if file.is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
                return Err(parse(format!(
                    "weight_map[\"{name}\"] = \"{file}\": expected a file name relative to the index's directory (no absolute path, no ..)"
                )));
            }
            let id = *file_ids.entry(file).or_insert_with(|| {
                files.push(dir.join(relative));
                files.len() - 1
            });
            index.insert(name.clone(), id);
        }
        let shards = files.iter().map(|_| OnceLock::new()).collect();
        Ok(Checkpoint { path: path.to_path_buf(), files, shards, index })
    }

    /// The path that was opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The safetensors files of the checkpoint (one, or the index's shards).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether the checkpoint (its index) has a tensor of this name.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The names of all tensors, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.index.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    fn shard(&self, id: usize) -> Result<&Shard> {
        let lock = &self.shards[id];
        if let Some(s) = lock.get() {
            return Ok(s);
        }
        let shard = Shard::open(&self.files[id])?;
        // Another thread may have won the race; either copy is equivalent.
        let _ = lock.set(shard);
        lock.get().ok_or_else(|| Error::CheckpointParse { path: self.files[id].clone(), detail: "shard could not be cached".into() })
    }

    /// Drops the mapping of the pages of an MLP's six tensors `<prefix>.{gate,up,down}_proj.
    /// {weight,weight_scale_inv}` ([`Shard::release`]; best effort, shards not yet mapped are
    /// skipped).
    fn release_mlp(&self, prefix: &str) {
        for linear in ["gate_proj", "up_proj", "down_proj"] {
            for suffix in ["weight", "weight_scale_inv"] {
                let name = format!("{prefix}.{linear}.{suffix}");
                if let Some(shard) = self.index.get(&name).and_then(|&id| self.shards[id].get()) {
                    shard.release(&name);
                }
            }
        }
    }

    /// A tensor's dtype, shape and bytes (borrowed from the memory map).
    fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        let missing = |path: &Path| Error::MissingTensor { tensor: name.to_string(), path: path.to_path_buf() };
        let &id = self.index.get(name).ok_or_else(|| missing(&self.path))?;
        let shard = self.shard(id)?;
        match shard.tensor(name) {
            None => Err(missing(&self.files[id])),
            Some(Ok(view)) => Ok(view),
            Some(Err(detail)) => Err(Error::CheckpointParse { path: self.files[id].clone(), detail: format!("tensor `{name}`: {detail}") }),
        }
    }

    /// Reads one FP8 linear layer, `<prefix>.weight` (`F8_E4M3 [N, K]`) with
    /// `<prefix>.weight_scale_inv` (`F32 [⌈N/128⌉, ⌈K/128⌉]`), converted to `F` (see the
    /// [module docs](self)). Any `N` and `K` (also not multiples of 128).
    pub fn linear<F: CheckpointFormat>(&self, prefix: &str) -> Result<QuantizedWeights<F>> {
        self.read_linear(prefix, None)
    }

    /// [`Self::linear`] with the weight's shape required to be `expected = ([N, K], why)`.
    fn read_linear<F: CheckpointFormat>(&self, prefix: &str, expected: Option<([usize; 2], &str)>) -> Result<QuantizedWeights<F>> {
        let wname = format!("{prefix}.weight");
        let sname = format!("{prefix}.weight_scale_inv");
        let w = self.tensor(&wname)?;
        if w.dtype() != Dtype::F8_E4M3 {
            return Err(Error::TensorDtype { tensor: wname, expected: "F8_E4M3", actual: format!("{:?}", w.dtype()) });
        }
        let &[n, k] = w.shape() else {
            return Err(Error::TensorShape { tensor: wname, expected: "[N, K] (rank 2)".into(), actual: w.shape().to_vec() });
        };
        if let Some((shape, why)) = expected
            && shape != [n, k]
        {
            return Err(Error::TensorShape { tensor: wname, expected: format!("[{}, {}] ({why})", shape[0], shape[1]), actual: vec![n, k] });
        }
        let s = self.tensor(&sname)?;
        if s.dtype() != Dtype::F32 {
            return Err(Error::TensorDtype { tensor: sname, expected: "F32", actual: format!("{:?}", s.dtype()) });
        }
        let grid = [blocks(n), blocks(k)];
        if s.shape() != grid {
            return Err(Error::ScaleGrid { tensor: sname, expected: grid, weight: [n, k], actual: s.shape().to_vec() });
        }

        // The bytes: E4M3FN → F through a table (`None`: NaN), in parallel; on a NaN the first
        // one is located serially, so the error is deterministic.
        let table: [Option<F>; 256] = std::array::from_fn(|b| F::from_e4m3fn(E4M3Fn::from_bits(b as u8)));
        let converted: Option<Vec<F>> = w.data().par_iter().map(|&b| table[b as usize]).collect();
        let Some(data) = converted else {
            let (i, &bits) = w.data().iter().enumerate().find(|&(_, &b)| table[b as usize].is_none()).unwrap_or((0, &0));
            return Err(Error::Fp8Nan { tensor: wname, index: [i / k.max(1), i % k.max(1)], bits });
        };
        let mut scales = Vec::with_capacity(grid[0] * grid[1]);
        for (i, chunk) in s.data().chunks_exact(4).enumerate() {
            let value = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let converted = value * F::SCALE_FACTOR;
            if !tile::scale_supported(converted) {
                return Err(Error::CheckpointScale { tensor: sname, index: [i / grid[1].max(1), i % grid[1].max(1)], value, converted, format: F::NAME });
            }
            scales.push(converted);
        }
        QuantizedWeights::from_parts(data, scales, n, k).map_err(Error::from)
    }

    /// Reads an MLP `<prefix>.{gate_proj,up_proj,down_proj}` (gate, up `[I, H]`, down `[H, I]`)
    /// as gate ‖ up fused `[2·I, H]` and down `[H, I]` in format `F`; `hidden` and
    /// `intermediate`, if given, are required. `I` must be a multiple of 128 (see the
    /// [module docs](self#fusing-gate-and-up)).
    pub fn mlp<F: CheckpointFormat>(&self, prefix: &str, hidden: Option<usize>, intermediate: Option<usize>) -> Result<MlpWeights<F>> {
        let gate = self.read_linear::<F>(&format!("{prefix}.gate_proj"), None)?;
        let (i, h) = (gate.n, gate.k);
        let gname = format!("{prefix}.gate_proj.weight");
        if let Some(hd) = hidden
            && hd != h
        {
            return Err(Error::TensorShape { tensor: gname, expected: format!("[I, {hd}] (the layer's hidden size)"), actual: vec![i, h] });
        }
        if let Some(id) = intermediate
            && id != i
        {
            return Err(Error::TensorShape { tensor: gname, expected: format!("[{id}, H] (the intermediate size of expert 0)"), actual: vec![i, h] });
        }
        check_fusable(&gname, i, h)?;
        let up = self.read_linear::<F>(&format!("{prefix}.up_proj"), Some(([i, h], "the shape of gate_proj")))?;
        let down = self.read_linear::<F>(&format!("{prefix}.down_proj"), Some(([h, i], "[H, I] for gate_proj's [I, H]")))?;
        let mut gu_data = gate.data;
        gu_data.extend_from_slice(&up.data);
        let mut gu_scales = gate.scales;
        gu_scales.extend_from_slice(&up.scales);
        let gate_up = QuantizedWeights::from_parts(gu_data, gu_scales, 2 * i, h)?;
        Ok(MlpWeights { hidden: h, intermediate: i, gate_up, down })
    }

    /// The number of routed experts of layer `layer`: one more than the largest `E` of any
    /// tensor named `model.layers.{layer}.mlp.experts.{E}.…` (0 if there is none).
    pub fn num_experts(&self, layer: usize) -> usize {
        let prefix = format!("model.layers.{layer}.mlp.experts.");
        self.index
            .keys()
            .filter_map(|name| name.strip_prefix(&prefix)?.split('.').next()?.parse::<usize>().ok())
            .map(|e| e.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// The routed expert count of layer `layer` ([`Self::num_experts`]), after checking that the
    /// checkpoint names all six tensors of every expert `0..count` ([`Error::MissingTensor`]
    /// for the first one missing; also when there is no expert at all).
    fn moe_experts(&self, layer: usize) -> Result<usize> {
        let experts = self.num_experts(layer);
        if experts == 0 {
            return Err(Error::MissingTensor { tensor: format!("{}.gate_proj.weight", expert_prefix(layer, 0)), path: self.path.clone() });
        }
        // Every expert's six tensors must be named by the checkpoint before anything is read or
        // sized from `experts` (which a stray name such as `experts.99999999.…` could inflate;
        // the loop stops at the first missing name, so it is bounded by the number of names).
        for e in 0..experts {
            for linear in ["gate_proj", "up_proj", "down_proj"] {
                for suffix in ["weight", "weight_scale_inv"] {
                    let name = format!("{}.{linear}.{suffix}", expert_prefix(layer, e));
                    if !self.contains(&name) {
                        return Err(Error::MissingTensor { tensor: name, path: self.path.clone() });
                    }
                }
            }
        }
        Ok(experts)
    }

    /// The shared expert of layer `layer` in format `F`, if the checkpoint names any tensor under
    /// its prefix (then all six must be there, and its hidden size must be `hidden`).
    fn shared_expert<F: CheckpointFormat>(&self, layer: usize, hidden: usize) -> Result<Option<MlpWeights<F>>> {
        let shared_prefix = shared_expert_prefix(layer);
        let shared_dot = format!("{shared_prefix}.");
        if self.index.keys().any(|n| n.starts_with(&shared_dot)) { Ok(Some(self.mlp::<F>(&shared_prefix, Some(hidden), None)?)) } else { Ok(None) }
    }

    /// Reads MoE layer `layer`: every routed expert `0..`[`Self::num_experts`] (each must be
    /// complete and of the same shape) fused into grouped weights, and the shared expert if the
    /// checkpoint has one, all in format `F` (see the [module docs](self)).
    ///
    /// This stages the whole layer on the host (for DeepSeek-V3, ≈ 11 GB); to put a layer on
    /// the device with one expert on the host at a time, use [`DeviceMoeWeights::load`].
    pub fn moe_layer<F: CheckpointFormat>(&self, layer: usize) -> Result<MoeWeights<F>> {
        let experts = self.moe_experts(layer)?;
        let first = self.mlp::<F>(&expert_prefix(layer, 0), None, None)?;
        let (h, i) = (first.hidden, first.intermediate);
        // The sizes are bounded by the files (safetensors checks each tensor's extent against
        // its file), so these products do not overflow for any layer that exists on disk.
        let per = (2 * i * h, 2 * blocks(i) * blocks(h), h * i, blocks(h) * blocks(i));
        let mut gu_data = Vec::with_capacity(experts.saturating_mul(per.0));
        let mut gu_scales = Vec::with_capacity(experts.saturating_mul(per.1));
        let mut d_data = Vec::with_capacity(experts.saturating_mul(per.2));
        let mut d_scales = Vec::with_capacity(experts.saturating_mul(per.3));
        let mut push = |m: MlpWeights<F>| {
            gu_data.extend_from_slice(&m.gate_up.data);
            gu_scales.extend_from_slice(&m.gate_up.scales);
            d_data.extend_from_slice(&m.down.data);
            d_scales.extend_from_slice(&m.down.scales);
        };
        push(first);
        for e in 1..experts {
            push(self.mlp::<F>(&expert_prefix(layer, e), Some(h), Some(i))?);
        }
        let gate_up = GroupedQuantizedWeights::from_parts(gu_data, gu_scales, experts, 2 * i, h)?;
        let down = GroupedQuantizedWeights::from_parts(d_data, d_scales, experts, h, i)?;
        let shared = self.shared_expert::<F>(layer, h)?;
        Ok(MoeWeights { hidden: h, intermediate: i, gate_up, down, shared })
    }
}

fn check_fusable(gate: &str, i: usize, h: usize) -> Result<()> {
    if i == 0 || !i.is_multiple_of(BLOCK) {
        return Err(Error::TensorShape {
            tensor: gate.to_string(),
            expected: format!(
                "[I, H] with I a positive multiple of {BLOCK} (gate and up are fused into one [2·I, H] weight whose 128×128 scale blocks must not straddle the gate/up boundary)"
            ),
            actual: vec![i, h],
        });
    }
    Ok(())
}

/// `model.layers.{layer}.mlp.experts.{expert}`: the prefix of a routed expert's linears.
pub fn expert_prefix(layer: usize, expert: usize) -> String {
    format!("model.layers.{layer}.mlp.experts.{expert}")
}

/// `model.layers.{layer}.mlp.shared_experts`: the prefix of a layer's shared expert's linears.
pub fn shared_expert_prefix(layer: usize) -> String {
    format!("model.layers.{layer}.mlp.shared_experts")
}

/// An MLP's FP8 weights on the host: gate ‖ up fused and down.
#[derive(Debug, Clone)]
pub struct MlpWeights<F> {
    /// Hidden size `H`.
    pub hidden: usize,
    /// Intermediate size `I`.
    pub intermediate: usize,
    /// `[2·I, H]`: the `I` gate rows, then the `I` up rows.
    pub gate_up: QuantizedWeights<F>,
    /// `[H, I]`.
    pub down: QuantizedWeights<F>,
}

/// An MoE layer's FP8 weights on the host, as [`Checkpoint::moe_layer`] reads them.
#[derive(Debug, Clone)]
pub struct MoeWeights<F> {
    /// Hidden size `H`.
    pub hidden: usize,
    /// The routed experts' intermediate size `I`.
    pub intermediate: usize,
    /// `[G, 2·I, H]`: per expert its `I` gate rows, then its `I` up rows.
    pub gate_up: GroupedQuantizedWeights<F>,
    /// `[G, H, I]`.
    pub down: GroupedQuantizedWeights<F>,
    /// The shared expert, if the layer has one (its intermediate size may differ from `I`).
    pub shared: Option<MlpWeights<F>>,
}

/// An MLP's FP8 weights on the device (the shared expert's, for the dense GEMM).
pub struct DeviceMlpWeights<F> {
    /// `[2·I, H]` gate ‖ up.
    pub gate_up: DeviceWeights<F>,
    /// `[H, I]`.
    pub down: DeviceWeights<F>,
}

impl<F: Fp8Format> DeviceMlpWeights<F> {
    /// Uploads host-side MLP weights ([`DeviceWeights::upload`]).
    pub fn upload(ctx: &Context, w: &MlpWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, w, WeightLayout::Logical)
    }
    /// Uploads host-side MLP weights in `layout` ([`DeviceWeights::upload_with_layout`]; the
    /// pre-shuffled layout needs `H` and `I` multiples of 128).
    pub fn upload_with_layout(ctx: &Context, w: &MlpWeights<F>, layout: WeightLayout) -> Result<Self> {
        Ok(DeviceMlpWeights {
            gate_up: DeviceWeights::upload_with_layout(ctx, &w.gate_up, layout)?,
            down: DeviceWeights::upload_with_layout(ctx, &w.down, layout)?,
        })
    }
    /// `(gate_up, down)`, the shared-expert pair [`MoeLayer::new`] takes.
    pub fn into_pair(self) -> (DeviceWeights<F>, DeviceWeights<F>) {
        (self.gate_up, self.down)
    }
}

/// An MoE layer's FP8 weights on the device, in the layout the m-grouped GEMMs read.
pub struct DeviceMoeWeights<F> {
    /// Hidden size `H`.
    pub hidden: usize,
    /// The routed experts' intermediate size `I`.
    pub intermediate: usize,
    /// `[G, 2·I, H]` gate ‖ up per expert.
    pub gate_up: DeviceGroupedWeights<F>,
    /// `[G, H, I]`.
    pub down: DeviceGroupedWeights<F>,
    /// The shared expert, if any.
    pub shared: Option<DeviceMlpWeights<F>>,
}

impl<F: CheckpointFormat> DeviceMoeWeights<F> {
    /// Uploads host-side MoE weights ([`DeviceGroupedWeights::upload`]); setup time: allocates
    /// and copies synchronously.
    pub fn upload(ctx: &Context, w: &MoeWeights<F>) -> Result<Self> {
        Self::upload_with_layout(ctx, w, WeightLayout::Logical)
    }

    /// [`Self::upload`] into `layout` (routed and shared experts alike; see
    /// [`crate::layout`]).
    pub fn upload_with_layout(ctx: &Context, w: &MoeWeights<F>, layout: WeightLayout) -> Result<Self> {
        check_format::<F>(ctx, "weights")?;
        Ok(DeviceMoeWeights {
            hidden: w.hidden,
            intermediate: w.intermediate,
            gate_up: DeviceGroupedWeights::upload_with_layout(ctx, &w.gate_up, layout)?,
            down: DeviceGroupedWeights::upload_with_layout(ctx, &w.down, layout)?,
            shared: w.shared.as_ref().map(|s| DeviceMlpWeights::upload_with_layout(ctx, s, layout)).transpose()?,
        })
    }

    /// Reads MoE layer `layer` of `ckpt` in format `F` and puts it on the device **expert by
    /// expert**: the grouped weights are allocated once ([`DeviceGroupedWeights::alloc`]), then
    /// each expert is read from the memory map, converted, checked (exactly as
    /// [`Checkpoint::moe_layer`] does) and copied into its group
    /// ([`DeviceGroupedWeights::upload_group`]) before the next is read, so the host holds one
    /// expert's converted weights at a time (DeepSeek-V3: ≈ 44 MB of FP8 per expert rather than
    /// ≈ 11 GB per layer). The result is byte-for-byte what [`Self::upload`] of
    /// [`Checkpoint::moe_layer`] gives. Setup time: returns after the copies have completed.
    ///
    /// `F` must be the format of `ctx`'s architecture ([`E4M3Fnuz`] on gfx942, [`E4M3Fn`] on
    /// gfx950; [`Error::Format`] otherwise, checked before anything is read). Every expert's
    /// tensors must be named by the checkpoint ([`Error::MissingTensor`], checked before
    /// anything is allocated); a malformed expert (shape, dtype, scale grid, an E4M3FN NaN
    /// byte, a scale out of range) is the same typed error as in [`Checkpoint::moe_layer`],
    /// naming its tensor (and so the expert), and frees what was allocated.
    pub fn load(ctx: &Context, ckpt: &Checkpoint, layer: usize) -> Result<Self> {
        Self::load_with_layout(ctx, ckpt, layer, WeightLayout::Logical)
    }

    /// [`Self::load`] into `layout`: with [`WeightLayout::Preshuffled`] every expert is shuffled
    /// on the host as it is copied into its group ([`DeviceGroupedWeights::upload_group`] on
    /// weights from [`DeviceGroupedWeights::alloc_preshuffled`], in chunks of whole 16-row
    /// stripes of at most 4 MiB), so the load still streams expert by expert and the host
    /// holds one expert plus one bounded chunk; the shared expert is uploaded pre-shuffled too.
    /// The result downloads to exactly what [`Self::load`] gives. The pre-shuffled layout needs
    /// `H` and `I` multiples of 128 ([`Error::Shape`], argument `k`, before anything is read
    /// past expert 0).
    pub fn load_with_layout(ctx: &Context, ckpt: &Checkpoint, layer: usize, layout: WeightLayout) -> Result<Self> {
        check_format::<F>(ctx, "weights")?;
        let experts = ckpt.moe_experts(layer)?;
        // Expert 0 fixes H and I; every other expert must match them.
        let first = ckpt.mlp::<F>(&expert_prefix(layer, 0), None, None)?;
        let (h, i) = (first.hidden, first.intermediate);
        let mut gate_up = DeviceGroupedWeights::alloc_with_layout(ctx, experts, 2 * i, h, layout)?;
        let mut down = DeviceGroupedWeights::alloc_with_layout(ctx, experts, h, i, layout)?;
        let stream = Stream::new(ctx)?;
        let mut expert = Some(first);
        for e in 0..experts {
            let prefix = expert_prefix(layer, e);
            let m = match expert.take() {
                Some(m) => m,
                None => ckpt.mlp::<F>(&prefix, Some(h), Some(i))?,
            };
            // Converted: the file's pages of this expert are not needed any more.
            ckpt.release_mlp(&prefix);
            // At most one expert's copy in flight: the previous expert's copy ran while this one
            // was read and converted; wait for it before queueing this one. (`upload_group`
            // returns once it has read `m`, but a runtime may stage a queued copy of pageable
            // memory in a buffer of its own — the emulator does — which lives until the copy
            // has run; without this wait the whole layer could be staged in the queue.)
            stream.synchronize()?;
            gate_up.upload_group(&stream, e, &m.gate_up)?;
            down.upload_group(&stream, e, &m.down)?;
            // `m` is dropped here.
        }
        let shared = ckpt.shared_expert::<F>(layer, h)?.map(|s| DeviceMlpWeights::upload_with_layout(ctx, &s, layout)).transpose()?;
        stream.synchronize()?;
        Ok(DeviceMoeWeights { hidden: h, intermediate: i, gate_up, down, shared })
    }

    /// The [`MoeLayer`] of these weights ([`MoeLayer::new`], which checks the shapes the
    /// kernels need; weights in either layout run, the pre-shuffled ones on the bs kernels).
    pub fn into_layer(self, ctx: &Context, options: MoeOptions) -> Result<MoeLayer<F>> {
        MoeLayer::new(ctx, self.gate_up, self.down, self.shared.map(DeviceMlpWeights::into_pair), options)
    }
}

/// Writes FP8 linears to one safetensors file in DeepSeek's format: for each `(prefix, w)`,
/// `<prefix>.weight` (`F8_E4M3 [n, k]`, `w.data`'s bytes) and `<prefix>.weight_scale_inv`
/// (`F32 [⌈n/128⌉, ⌈k/128⌉]`, `w.scales`). The file is replaced atomically.
pub fn write_fp8_linears(path: &Path, linears: &[(&str, &QuantizedWeights<E4M3Fn>)]) -> Result<()> {
    let tensors = linears.iter().map(|(p, w)| linear_tensors(p, w)).collect::<Result<Vec<_>>>()?;
    write_file(path, tensors.iter().flatten())
}

/// A named tensor to write: dtype, shape, little-endian bytes.
struct OwnedTensor {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

fn linear_tensors(prefix: &str, w: &QuantizedWeights<E4M3Fn>) -> Result<[OwnedTensor; 2]> {
    let shape_err = |arg, what: String, len: usize| Error::Shape { arg, expected: what, actual: format!("{len} elements") };
    if Some(w.data.len()) != w.n.checked_mul(w.k) {
        return Err(shape_err("w.data", format!("n · k = {} · {} values", w.n, w.k), w.data.len()));
    }
    if Some(w.scales.len()) != w.n_blocks().checked_mul(w.k_blocks()) {
        return Err(shape_err("w.scales", format!("⌈n/128⌉ · ⌈k/128⌉ = {} · {} scales", w.n_blocks(), w.k_blocks()), w.scales.len()));
    }
    Ok([
        OwnedTensor { name: format!("{prefix}.weight"), dtype: Dtype::F8_E4M3, shape: vec![w.n, w.k], bytes: crate::fp8::as_bits(&w.data).to_vec() },
        OwnedTensor {
            name: format!("{prefix}.weight_scale_inv"),
            dtype: Dtype::F32,
            shape: vec![w.n_blocks(), w.k_blocks()],
            bytes: w.scales.iter().flat_map(|s| s.to_le_bytes()).collect(),
        },
    ])
}

fn write_file<'a>(path: &Path, tensors: impl Iterator<Item = &'a OwnedTensor>) -> Result<()> {
    let parse = |detail: String| Error::CheckpointParse { path: path.to_path_buf(), detail };
    let views = tensors
        .map(|t| TensorView::new(t.dtype, t.shape.clone(), &t.bytes).map(|v| (t.name.clone(), v)))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| parse(format!("building a tensor view: {e}")))?;
    safetensors::serialize_to_file(views, None, path).map_err(|e| match e {
        safetensors::SafeTensorError::IoError(source) => Error::CheckpointIo { path: path.to_path_buf(), source },
        e => parse(format!("serializing: {e}")),
    })
}

/// An MLP's `f32` weights (row-major): gate and up `[intermediate, hidden]`, down
/// `[hidden, intermediate]` — one expert of an MoE layer, for [`write_deepseek_moe`].
#[derive(Debug, Clone)]
pub struct MlpF32 {
    /// Hidden size `H`.
    pub hidden: usize,
    /// Intermediate size `I`.
    pub intermediate: usize,
    /// `[I, H]`.
    pub gate: Vec<f32>,
    /// `[I, H]`.
    pub up: Vec<f32>,
    /// `[H, I]`.
    pub down: Vec<f32>,
}

/// An MoE layer's `f32` weights: routed experts and an optional shared expert.
#[derive(Debug, Clone)]
pub struct MoeLayerF32 {
    /// The routed experts, expert `e` at index `e`.
    pub experts: Vec<MlpF32>,
    /// The shared expert.
    pub shared: Option<MlpF32>,
}

/// Writes MoE layer `layer` as a DeepSeek-format checkpoint into directory `dir` (created if
/// needed): each linear quantized to E4M3FN per 128×128 block ([`QuantizedWeights::quantize`],
/// scale `amax / 448`) under the names of the [module docs](self). With `shards == 1` the
/// file is `dir/model.safetensors`; with more, the tensors (sorted by name) are split into
/// `shards` files `model-0000s-of-0000S.safetensors` plus `dir/model.safetensors.index.json`
/// (a weight and its `weight_scale_inv` may land in different shards, as in real
/// checkpoints). Returns the files written.
pub fn write_deepseek_moe(dir: &Path, layer: usize, moe: &MoeLayerF32, shards: usize) -> Result<Vec<PathBuf>> {
    if shards == 0 {
        return Err(Error::Shape { arg: "shards", expected: "at least 1".into(), actual: "0".into() });
    }
    let mut tensors = Vec::new();
    let mlps = moe.experts.iter().enumerate().map(|(e, m)| (expert_prefix(layer, e), m));
    for (prefix, m) in mlps.chain(moe.shared.iter().map(|m| (shared_expert_prefix(layer), m))) {
        let (h, i) = (m.hidden, m.intermediate);
        let n = i.checked_mul(h);
        for (what, len) in [("gate", m.gate.len()), ("up", m.up.len()), ("down", m.down.len())] {
            if Some(len) != n {
                return Err(Error::Shape {
                    arg: "moe",
                    expected: format!("{prefix}: {what} of intermediate · hidden = {i} · {h} values"),
                    actual: format!("{len} values"),
                });
            }
        }
        let gate = QuantizedWeights::<E4M3Fn>::quantize(&m.gate, i, h)?;
        let up = QuantizedWeights::<E4M3Fn>::quantize(&m.up, i, h)?;
        let down = QuantizedWeights::<E4M3Fn>::quantize(&m.down, h, i)?;
        for (name, w) in [("gate_proj", &gate), ("up_proj", &up), ("down_proj", &down)] {
            tensors.extend(linear_tensors(&format!("{prefix}.{name}"), w)?);
        }
    }
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    std::fs::create_dir_all(dir).map_err(|source| Error::CheckpointIo { path: dir.to_path_buf(), source })?;
    if shards == 1 {
        let path = dir.join(SINGLE_FILE);
        write_file(&path, tensors.iter())?;
        return Ok(vec![path]);
    }
    let per = tensors.len().div_ceil(shards).max(1);
    let mut files = Vec::with_capacity(shards);
    let mut weight_map = BTreeMap::new();
    for s in 0..shards {
        let name = format!("model-{:05}-of-{shards:05}.safetensors", s + 1);
        let part = tensors.get((s * per).min(tensors.len())..((s + 1) * per).min(tensors.len())).unwrap_or(&[]);
        for t in part {
            weight_map.insert(t.name.clone(), serde_json::Value::String(name.clone()));
        }
        let path = dir.join(&name);
        write_file(&path, part.iter())?;
        files.push(path);
    }
    let total: usize = tensors.iter().map(|t| t.bytes.len()).sum();
    let index = serde_json::json!({ "metadata": { "total_size": total }, "weight_map": weight_map });
    let path = dir.join(INDEX_FILE);
    let text = serde_json::to_string_pretty(&index).map_err(|e| Error::CheckpointParse { path: path.clone(), detail: e.to_string() })?;
    std::fs::write(&path, text).map_err(|source| Error::CheckpointIo { path: path.clone(), source })?;
    files.push(path);
    Ok(files)
}
