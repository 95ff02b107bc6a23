//! Kernel argument structs, `#[repr(C)]`, shared verbatim by host and device. The bytes of one of
//! these structs are the kernel's whole kernarg segment (see `amdgpu-builder`).

use core::marker::PhantomData;
use core::num::NonZeroU32;

use crate::tile::FastDiv;

/// A device (global-memory) address of `T` elements, 8 bytes, usable on both sides.
#[repr(transparent)]
#[derive(Debug)]
pub struct GlobalPtr<T> {
    addr: u64,
    _elem: PhantomData<fn() -> T>,
}

impl<T> Clone for GlobalPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalPtr<T> {}

impl<T> GlobalPtr<T> {
    /// Wraps a device address.
    pub const fn new(addr: u64) -> Self {
        GlobalPtr { addr, _elem: PhantomData }
    }
    /// The device address.
    pub const fn addr(self) -> u64 {
        self.addr
    }
    /// The address as a raw pointer (meaningful only on the device).
    pub const fn as_ptr(self) -> *const T {
        self.addr as usize as *const T
    }
    /// The address as a raw mutable pointer (meaningful only on the device).
    pub const fn as_mut_ptr(self) -> *mut T {
        self.addr as usize as *mut T
    }
}

/// Arguments of `add_one_f32` ([`crate::test_kernels::ADD_ONE_F32`]): `out[i] = inp[i] + 1` for `i < n`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AddOneArgs {
    /// Input, `n` floats.
    pub inp: GlobalPtr<f32>,
    /// Output, `n` floats.
    pub out: GlobalPtr<f32>,
    /// Element count.
    pub n: u32,
}

/// Arguments of `register_pressure` ([`crate::test_kernels::REGISTER_PRESSURE`]), a kernel that keeps 48 MFMA
/// accumulators live (used to prove the launch bound reaches the register allocator).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RegisterPressureArgs {
    /// FP8 A fragments: `iters * 64` u64 per wave lane set.
    pub a: GlobalPtr<u64>,
    /// FP8 B fragments, same size.
    pub b: GlobalPtr<u64>,
    /// Output: 48 × 4 floats per lane.
    pub out: GlobalPtr<f32>,
    /// Loop trip count.
    pub iters: u32,
}

/// Arguments of the dense FP8 GEMM kernels ([`crate::dense`], symbols `fp8_gemm_nt_bm*_bn*`):
/// `D[i,j] = bf16( Σ_kb SFA[i,kb] · SFB[j/128,kb] · Σ_{k in block kb} A[i,k] · B[j,k] )`.
///
/// All tensors are row-major: `A` is `m × k` FP8 (E4M3FNUZ on gfx942, OCP E4M3FN on gfx950) with
/// rows `lda ≥ k` bytes apart, `B` is `n × k` FP8 (contiguous), `SFA` is `m × ⌈k/128⌉` f32, `SFB`
/// is `⌈n/128⌉ × ⌈k/128⌉` f32 (contiguous), `D` is `m × n` bf16 with rows `ldd ≥ n` elements
/// apart. Requirements (checked by the host before launch): `m ≥ 1`, `n % 4 == 0`,
/// `k % 128 == 0`, `k ≥ 128`, `lda % 16 == 0`, `ldd % 4 == 0`, every tensor and
/// `(m + 128)·lda`, `(n + 128)·k`, `(m + 128)·ldd·2` below [`crate::tile::MAX_TENSOR_BYTES`]. The grid is 1-D with
/// `⌈m/BM⌉·⌈n/BN⌉` workgroups of 256 work-items and the launch's dynamic LDS is the tile's
/// [`crate::tile::DenseTile::lds_bytes`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DenseGemmArgs {
    /// A, `m × k` FP8 bytes, rows `lda` bytes apart.
    pub a: GlobalPtr<u8>,
    /// B, `n × k` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `m × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `m × n` bf16 (as raw `u16` bits), rows `ldd` elements apart.
    pub d: GlobalPtr<u16>,
    /// Rows of A and D.
    pub m: u32,
    /// Rows of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Row stride of A in bytes (`≥ k`, a multiple of 16).
    pub lda: u32,
    /// Row stride of D in elements (`≥ n`, a multiple of 4).
    pub ldd: u32,
    /// Reserved, must be 0 (keeps the struct a multiple of 8 bytes).
    pub reserved: u32,
}

impl DenseGemmArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: DenseGemmArgs is repr(C) made of five u64 wrappers followed by six u32, so it
        // has no padding (64 bytes, checked by the const assertion below) and every byte is
        // initialized; the slice borrows `self` and cannot outlive it.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<DenseGemmArgs>() == 64);

/// Arguments of the dense split-K FP8 GEMM kernels ([`crate::dense`], symbols
/// `fp8_gemm_nt_splitk_bm*_bn*`): the product of [`DenseGemmArgs`], with the K blocks of every
/// output tile divided among `splits` workgroups that reduce through a workspace.
///
/// Operands and requirements are those of [`DenseGemmArgs`], plus `1 ≤ splits ≤ k/128` and a
/// workspace of at least [`crate::tile::splitk_workspace_floats`] f32 whose first
/// [`crate::tile::SPLITK_COUNTER_FLOATS`] words (the per-tile arrival counters) are 0 when the
/// launch starts (a zeroed allocation); the kernel leaves them 0 again when it completes. At most
/// [`crate::tile::SPLITK_MAX_TILES`] output tiles (a launch of more does no work). The grid is 1-D with
/// `⌈m/BM⌉·⌈n/BN⌉·splits` workgroups (layout of the workspace and the reduction:
/// [`crate::dense`], "Split-K").
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DenseSplitKArgs {
    /// A, `m × k` FP8 bytes, rows `lda` bytes apart.
    pub a: GlobalPtr<u8>,
    /// B, `n × k` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `m × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `m × n` bf16 (as raw `u16` bits), rows `ldd` elements apart.
    pub d: GlobalPtr<u16>,
    /// Workspace: arrival counters (u32) followed by the FP32 partial tiles.
    pub ws: GlobalPtr<f32>,
    /// Rows of A and D.
    pub m: u32,
    /// Rows of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Row stride of A in bytes (`≥ k`, a multiple of 16).
    pub lda: u32,
    /// Row stride of D in elements (`≥ n`, a multiple of 4).
    pub ldd: u32,
    /// Workgroups per output tile (`1 ≤ splits ≤ k/128`), as [`FastDiv::new`]`(splits)`: the
    /// kernel divides its workgroup id and the K blocks by it.
    pub splits: FastDiv,
    /// [`FastDiv::new`]`(⌈m/BM⌉)`, the tile rows (a launch whose divisor is not the kernel's
    /// `⌈m/BM⌉` does no work).
    pub tiles_m: FastDiv,
    /// Reserved, must be 0 (keeps the struct a multiple of 8 bytes).
    pub reserved: u32,
}

impl DenseSplitKArgs {
    /// The arguments of a launch: `splits` and `block_m` give the [`FastDiv`] fields.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        a: GlobalPtr<u8>,
        b: GlobalPtr<u8>,
        sfa: GlobalPtr<f32>,
        sfb: GlobalPtr<f32>,
        d: GlobalPtr<u16>,
        ws: GlobalPtr<f32>,
        m: u32,
        n: u32,
        k: u32,
        lda: u32,
        ldd: u32,
        splits: NonZeroU32,
        block_m: NonZeroU32,
    ) -> Self {
        let tiles_m = NonZeroU32::new(m.div_ceil(block_m.get())).unwrap_or(NonZeroU32::MIN);
        DenseSplitKArgs { a, b, sfa, sfb, d, ws, m, n, k, lda, ldd, splits: FastDiv::new(splits), tiles_m: FastDiv::new(tiles_m), reserved: 0 }
    }

    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of six u64 wrappers followed by five u32, two FastDiv (four u32
        // each) and one u32: no padding (104 bytes, checked by the const assertion below),
        // every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<DenseSplitKArgs>() == 104);

/// Arguments of the m-grouped contiguous FP8 GEMM kernels ([`crate::grouped`], symbols
/// `m_grouped_fp8_gemm_nt_contiguous_bm*_bn*`; MoE prefill): row `i` of `A` is multiplied with
/// expert `m_indices[i]` of `B`.
///
/// Layouts (row-major, no padding): `A` is `m_sum × k` FP8, `SFA` `m_sum × ⌈k/128⌉` f32, `B`
/// `groups × n × k` FP8, `SFB` `groups × ⌈n/128⌉ × ⌈k/128⌉` f32, `D` `m_sum × n` bf16,
/// `m_indices` `m_sum` i32. Requirements (checked by the host before launch): the
/// [`DenseGemmArgs`] ones for `m = m_sum`, `m_sum` a multiple of the tile height, and
/// each group's `n · k` below [`crate::tile::MAX_TENSOR_BYTES`] (a group is addressed from its own
/// 64-bit base, so the whole `B` may be larger). `m_indices` is read on the device
/// only and never trusted: each `BM`-row block takes the group of its first row; a block whose
/// group is outside `0..groups` (−1 padding, or garbage) is skipped entirely, and inside a
/// computed block a row is stored only if its own entry equals the block's group. The grid is 1-D
/// with `(m_sum/BM)·⌈n/BN⌉` workgroups.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedContiguousArgs {
    /// A, `m_sum × k` FP8 bytes.
    pub a: GlobalPtr<u8>,
    /// B, `groups × n × k` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `m_sum × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `groups × ⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `m_sum × n` bf16 (as raw `u16` bits).
    pub d: GlobalPtr<u16>,
    /// Group of every row of A, `m_sum` i32 (−1: padding).
    pub m_indices: GlobalPtr<i32>,
    /// Rows of A, D and `m_indices`.
    pub m_sum: u32,
    /// Rows of each group of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Number of groups of B.
    pub groups: u32,
}

/// Arguments of the m-grouped masked FP8 GEMM kernels ([`crate::grouped`], symbols
/// `m_grouped_fp8_gemm_nt_masked_bm*_bn*`; MoE decode): for each group `g`, rows
/// `0..min(masked_m[g], m_max)` of `D[g] = A[g] · B[g]ᵀ` (a negative `masked_m[g]` counts as 0).
///
/// Layouts (row-major, no padding): `A` is `groups × m_max × k` FP8, `SFA`
/// `groups × m_max × ⌈k/128⌉` f32, `B` `groups × n × k` FP8, `SFB` `groups × ⌈n/128⌉ × ⌈k/128⌉` f32,
/// `D` `groups × m_max × n` bf16, `masked_m` `groups` i32 (read on the device only). Rows at or
/// past a group's clamped count are neither read nor written. Requirements (checked by the host):
/// the [`DenseGemmArgs`] ones for `m = m_max`, and `A`, `D` and each group of `B` below
/// [`crate::tile::MAX_TENSOR_BYTES`] (a group of `B` is addressed from its own 64-bit base).
/// The grid is 1-D with `groups·⌈m_max/BM⌉·⌈n/BN⌉` workgroups;
/// tiles past their group's row count return after one scalar load. `order` deals the tiles to
/// the XCDs ([`MASKED_ORDER_RUNS`], [`MASKED_ORDER_COLUMNS`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedMaskedArgs {
    /// A, `groups × m_max × k` FP8 bytes.
    pub a: GlobalPtr<u8>,
    /// B, `groups × n × k` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `groups × m_max × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `groups × ⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `groups × m_max × n` bf16 (as raw `u16` bits).
    pub d: GlobalPtr<u16>,
    /// Valid rows of every group, `groups` i32.
    pub masked_m: GlobalPtr<i32>,
    /// Rows per group of A and D (the capacity).
    pub m_max: u32,
    /// Rows of each group of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Number of groups.
    pub groups: u32,
    /// The grid order: [`MASKED_ORDER_RUNS`] or [`MASKED_ORDER_COLUMNS`] (any other value is
    /// read as [`MASKED_ORDER_RUNS`]).
    pub order: u32,
    /// Reserved, must be 0 (keeps the struct a multiple of 8 bytes).
    pub reserved: u32,
}

/// A masked grid order ([`MGroupedMaskedArgs::order`], [`MGroupedMaskedSplitKArgs::order`]):
/// each XCD runs a contiguous run of the logical tile order ([`crate::tile::xcd_remap`]; groups
/// outermost, M fastest), so each XCD holds whole groups and reads only their rows of A; with few
/// groups the XCD holding the largest count can run more rounds than the average.
pub const MASKED_ORDER_RUNS: u32 = 0;

/// A masked grid order: each N column of each group (its row tiles and their split pieces)
/// whole to one XCD, the columns round-robin over the XCDs ([`crate::tile::masked_xcd_order`]),
/// so the working tiles spread evenly over the XCDs whatever the counts, and every XCD reads the
/// rows of A of every group.
pub const MASKED_ORDER_COLUMNS: u32 = 1;

/// Arguments of the m-grouped masked split-K FP8 GEMM kernels ([`crate::grouped`], symbols
/// `m_grouped_fp8_gemm_nt_masked_splitk_bs_bm*_bn128`; MoE decode with few rows per group):
/// the operands and requirements of [`MGroupedMaskedArgs`] (B pre-shuffled per group), plus
/// `1 ≤ splits ≤ k/128`, at most [`crate::tile::SPLITK_MAX_TILES`] tiles
/// (`groups·⌈m_max/BM⌉·⌈n/BN⌉`; a launch of more does no work) and a workspace of at least
/// [`crate::tile::splitk_workspace_floats`] f32 for that tile count, whose arrival counters are
/// 0 when the launch starts and 0 again when it completes (the dense split-K rules,
/// [`DenseSplitKArgs`]). The grid is 1-D with `groups·⌈m_max/BM⌉·⌈n/BN⌉·splits` workgroups.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedMaskedSplitKArgs {
    /// A, `groups × m_max × k` FP8 bytes.
    pub a: GlobalPtr<u8>,
    /// B, `groups` pre-shuffled `n × k` FP8 matrices.
    pub b: GlobalPtr<u8>,
    /// SFA, `groups × m_max × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `groups × ⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `groups × m_max × n` bf16 (as raw `u16` bits).
    pub d: GlobalPtr<u16>,
    /// Valid rows of every group, `groups` i32.
    pub masked_m: GlobalPtr<i32>,
    /// Workspace: arrival counters (u32) followed by the FP32 partial tiles.
    pub ws: GlobalPtr<f32>,
    /// Rows per group of A and D (the capacity).
    pub m_max: u32,
    /// Rows of each group of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Number of groups.
    pub groups: u32,
    /// Workgroups per output tile (`1 ≤ splits ≤ k/128`).
    pub splits: u32,
    /// The grid order: [`MASKED_ORDER_RUNS`] or [`MASKED_ORDER_COLUMNS`] (any other value is
    /// read as [`MASKED_ORDER_RUNS`]).
    pub order: u32,
}

/// Arguments of the m-grouped contiguous split-K / gathered FP8 GEMM kernels
/// ([`crate::grouped`], symbols `m_grouped_fp8_gemm_nt_contiguous_splitk_bs_bm*_bn128`; MoE
/// decode, and the MoE layer's gate·up GEMM reading the token rows in place): the operands
/// and requirements of [`MGroupedContiguousArgs`] with B pre-shuffled per group, plus
///
/// * **split-K** (`splits ≥ 2`): the rules of [`MGroupedMaskedSplitKArgs`] (`splits ≤ k/128`,
///   at most [`crate::tile::SPLITK_MAX_TILES`] tiles `(m_sum/BM)·⌈n/128⌉`, a workspace of
///   [`crate::tile::splitk_workspace_floats`] f32 whose counters are 0 before and after);
///   `splits = 1` is the data-parallel kernel and does not touch `ws`;
/// * **gathered A** (`row_src` non-null): row `i` of the problem reads row `row_src[i]` of `A`
///   and `SFA`, which hold `a_rows` rows (`row_src` has `m_sum` i32; an entry outside
///   `0..a_rows` reads zeros). With a null `row_src`, `A` and `SFA` have `m_sum` rows and
///   `a_rows` must equal `m_sum`.
///
/// The grid is 1-D with `(m_sum/BM)·⌈n/128⌉·splits` workgroups.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedContiguousSplitKArgs {
    /// A, `a_rows × k` FP8 bytes.
    pub a: GlobalPtr<u8>,
    /// B, `groups` pre-shuffled `n × k` FP8 matrices.
    pub b: GlobalPtr<u8>,
    /// SFA, `a_rows × ⌈k/128⌉` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `groups × ⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sfb: GlobalPtr<f32>,
    /// D, `m_sum × n` bf16 (as raw `u16` bits).
    pub d: GlobalPtr<u16>,
    /// Group of every row of the problem, `m_sum` i32 (−1: padding).
    pub m_indices: GlobalPtr<i32>,
    /// Row of A of every row of the problem, `m_sum` i32, or null (row `i` is A's row `i`).
    pub row_src: GlobalPtr<i32>,
    /// Workspace: arrival counters (u32) followed by the FP32 partial tiles (split-K only).
    pub ws: GlobalPtr<f32>,
    /// The rows in use, or null (all `m_sum` rows): one i32 on the device, written by an
    /// earlier launch (the MoE route's "rows used", a multiple of the tile height). This
    /// launch's rows in use are its first `clamp(*valid_rows − valid_base, 0, m_sum)`; the rows
    /// after them are padding, and the grid's first workgroups (spread over the XCDs by the
    /// hardware's round-robin dispatch) take the tiles of the rows in use while the others
    /// return at once — not the XCDs whose id ranges happen to fall on the rows in use.
    pub valid_rows: GlobalPtr<i32>,
    /// Rows of the problem, D, `m_indices` and `row_src`.
    pub m_sum: u32,
    /// Rows of each group of B, columns of D.
    pub n: u32,
    /// Reduction length.
    pub k: u32,
    /// Number of groups.
    pub groups: u32,
    /// Workgroups per output tile (`1 ≤ splits ≤ k/128`).
    pub splits: u32,
    /// Rows of A and SFA.
    pub a_rows: u32,
    /// Row of the whole problem at which this launch's rows start (a launch of one row chunk:
    /// [`MGroupedContiguousSplitKArgs::valid_rows`] counts the whole problem's rows).
    pub valid_base: u32,
    /// Zero (keeps the struct a multiple of 8 bytes for the structs that embed it).
    pub reserved: u32,
}

impl MGroupedContiguousSplitKArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of nine u64 wrappers followed by eight u32: no padding (104 bytes,
        // checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<MGroupedContiguousSplitKArgs>() == 104);

/// The MoE scatter epilogue of the contiguous scatter kernels
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_scatter_bs_*`, [`crate::grouped`]): the MoE
/// layer's down GEMM computes `y` and, in the same launch, `out[t] = bf16(Σ_j w[t,j] ·
/// y[slot(t,j)] + shared[t])` — the unpermute of [`MoeUnpermuteArgs`], same arithmetic, same
/// bits. A workgroup stores its tile of `y` at device scope, then counts each stored row in on
/// its token's counter for the tile's columns; the workgroup that brings a token's count to
/// its number of valid slots (slots in `0..y_rows`) adds that token's rows in `j` order for
/// those columns and re-arms the counter. Tokens without a valid slot get `bf16(0 + shared)`
/// from the workgroup whose id is the token's index modulo the grid, in the launch of the first
/// row chunk (`row0 = 0`). Deterministic: the sum's
/// order is fixed, whichever workgroup does it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeScatterArgs {
    /// Output, `tokens × n` bf16 bits.
    pub out: GlobalPtr<u16>,
    /// The whole y, `y_rows × n` bf16 bits (the launch's `d` is its rows `row0 ..`).
    pub y: GlobalPtr<u16>,
    /// Token of every row of the launch (`m_sum` i32; negative or `≥ tokens`: none).
    pub row_token: GlobalPtr<i32>,
    /// Row of y of every `(t, j)`, `tokens · top_k` i32.
    pub slots: GlobalPtr<i32>,
    /// Router weight of every `(t, j)`, `tokens · top_k` f32.
    pub weights: GlobalPtr<f32>,
    /// The shared expert's output, `tokens × n` bf16 bits, or null.
    pub shared: GlobalPtr<u16>,
    /// Arrival counters, `tokens × ⌈n/128⌉` u32: 0 when the launch starts, 0 when it ends.
    pub counters: GlobalPtr<u32>,
    /// Tokens `T`.
    pub tokens: u32,
    /// Experts per token `k`.
    pub top_k: u32,
    /// Rows of the whole y.
    pub y_rows: u32,
    /// Row of y of the launch's first row.
    pub row0: u32,
}

/// The MoE activation epilogue of the contiguous silu kernels
/// (`m_grouped_fp8_gemm_nt_contiguous_splitk_silu_bs_bm*_bn128`, [`crate::grouped`]): the MoE
/// layer's gate·up GEMM (`n = 2·inter`: gate columns `0 .. inter`, up columns `inter .. 2·inter`)
/// also writes `act = FP8(silu(gate)·up)` with 1×128 scales (the recipe of the
/// `quantize_act_silu_mul` kernels, same bits). A workgroup stores its tile of `d` at device
/// scope, then counts in on the counter of its (row block, 128-column group of act) pair —
/// gate tile `j` and up tile `j + inter/128` share one; the second to arrive reads both tiles'
/// bf16 values back and writes the block's 128 act columns and scales, then re-arms the
/// counter.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeSiluArgs {
    /// FP8 output `act`, `m_sum × inter` bytes (rows of this launch).
    pub act: GlobalPtr<u8>,
    /// Its scales, `m_sum × inter/128` f32.
    pub act_sf: GlobalPtr<f32>,
    /// Pair counters, `(m_sum/BM) × inter/128` u32: 0 when the launch starts, 0 when it ends.
    pub counters: GlobalPtr<u32>,
    /// `inter` (a multiple of 128; the GEMM's `n` is twice it).
    pub inter: u32,
    /// Largest finite value of the FP8 format.
    pub fp8_max: f32,
}

/// Arguments of the contiguous silu kernels: the GEMM of [`MGroupedContiguousSplitKArgs`] and
/// the epilogue of [`MoeSiluArgs`]. The grid is the GEMM's.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedContiguousSiluArgs {
    /// The GEMM.
    pub gemm: MGroupedContiguousSplitKArgs,
    /// The activation epilogue.
    pub silu: MoeSiluArgs,
}

impl MGroupedContiguousSiluArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of two repr(C) structs without padding (104 + 32 = 136 bytes, checked
        // below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<MoeSiluArgs>() == 32);
const _: () = assert!(core::mem::size_of::<MGroupedContiguousSiluArgs>() == 136);

/// Arguments of the contiguous scatter kernels: the GEMM of [`MGroupedContiguousSplitKArgs`]
/// (its `d` is rows `row0 ..` of the scatter's `y`; `n` a multiple of 8) and the epilogue of
/// [`MoeScatterArgs`]. The grid is the GEMM's.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MGroupedContiguousScatterArgs {
    /// The GEMM.
    pub gemm: MGroupedContiguousSplitKArgs,
    /// The scatter back to tokens.
    pub scatter: MoeScatterArgs,
}

impl MGroupedContiguousScatterArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of two repr(C) structs without padding (104 + 72 = 176 bytes, checked
        // below; both end on 8-byte boundaries), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<MoeScatterArgs>() == 72);
const _: () = assert!(core::mem::size_of::<MGroupedContiguousScatterArgs>() == 176);

impl MGroupedMaskedSplitKArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of seven u64 wrappers followed by six u32: no padding (80 bytes,
        // checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<MGroupedMaskedSplitKArgs>() == 80);

impl MGroupedContiguousArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of six u64 wrappers followed by four u32: no padding (64 bytes,
        // checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

impl MGroupedMaskedArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of six u64 wrappers followed by six u32: no padding (72 bytes,
        // checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<MGroupedContiguousArgs>() == 64);
const _: () = assert!(core::mem::size_of::<MGroupedMaskedArgs>() == 72);

/// Arguments of the activation quantization kernels ([`crate::quant`], symbols
/// `quantize_act_*`): DeepGEMM's per-token (1×128) recipe on the device.
///
/// Input `x` is row-major `groups · rows` rows of `k` values (bf16 or f32 by kernel); the fused
/// `silu_mul` kernels read rows of `2·k` values (gate = first `k`, up = last `k`). Output `q` is
/// `groups · rows × k` FP8 bytes and `sf` `groups · rows × ⌈k/128⌉` f32, row-major, no padding:
/// exactly the A / SFA layout of the GEMM kernels. Dense (and contiguous) kernels: `groups = 1`,
/// `masked_m` unused. Masked kernels: `rows` is `m_max` and only rows `0..clamp(masked_m[g], 0,
/// m_max)` of each group are read and written. Requirements (checked by the host): `rows ≥ 1`,
/// `groups ≥ 1`, `k ≥ 8` and `k % 8 == 0`, `groups · rows · ⌈k/128⌉ ≤ u32::MAX − 15`, `x`, `q`,
/// `sf` 16-byte aligned. The grid is 1-D with `⌈groups · rows · ⌈k/128⌉ / 16⌉` workgroups of 256.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QuantActArgs {
    /// Input values (bf16 bits or f32, per kernel).
    pub x: GlobalPtr<u8>,
    /// Output FP8 bytes, `groups · rows × k`.
    pub q: GlobalPtr<u8>,
    /// Output scales, `groups · rows × ⌈k/128⌉` f32.
    pub sf: GlobalPtr<f32>,
    /// Valid rows of every group, `groups` i32 (masked kernels only; 0 otherwise).
    pub masked_m: GlobalPtr<i32>,
    /// Rows per group (dense: `m`; masked: `m_max`).
    pub rows: u32,
    /// Columns of the output (and of the input, except for `silu_mul`: `2·k`).
    pub k: u32,
    /// Number of groups (1 for dense).
    pub groups: u32,
    /// Largest finite value of the FP8 format (240 E4M3FNUZ, 448 E4M3FN).
    pub fp8_max: f32,
}

/// Arguments of the weight quantization kernels ([`crate::quant`], symbols `quantize_weight_*`):
/// DeepGEMM's per-block (128×128) recipe on the device.
///
/// Input `x` is row-major `n × k` (bf16 or f32 by kernel); output `q` is `n × k` FP8 bytes and
/// `sf` `⌈n/128⌉ × ⌈k/128⌉` f32 (the B / SFB layout of the GEMM kernels). Requirements (checked
/// by the host): `n ≥ 1`, `k ≥ 8`, `k % 8 == 0`, `⌈n/128⌉ · ⌈k/128⌉ ≤ u32::MAX`, pointers
/// 16-byte aligned. The grid is 1-D with one 64-work-item workgroup per 128×128 block.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct QuantWeightArgs {
    /// Input values (bf16 bits or f32, per kernel).
    pub x: GlobalPtr<u8>,
    /// Output FP8 bytes, `n × k`.
    pub q: GlobalPtr<u8>,
    /// Output scales, `⌈n/128⌉ × ⌈k/128⌉` f32.
    pub sf: GlobalPtr<f32>,
    /// Rows.
    pub n: u32,
    /// Columns.
    pub k: u32,
    /// Largest finite value of the FP8 format (240 E4M3FNUZ, 448 E4M3FN).
    pub fp8_max: f32,
    /// Reserved, must be 0 (keeps the struct a multiple of 8 bytes).
    pub reserved: u32,
}

/// Arguments of the weight pre-shuffle kernel ([`crate::layout::PRESHUFFLE_B`]): group
/// `blockIdx.y` of `dst` (`⌈n/16⌉·16·k` bytes per group, the pre-shuffled layout of
/// [`crate::tile::shuffled_b_offset`]) becomes the pre-shuffled arrangement of the same group of
/// `src` (`n · k` bytes per group, logical row-major), padding rows zero.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PreshuffleArgs {
    /// Logical FP8 weights, `G × n × k` bytes, 16-byte aligned.
    pub src: GlobalPtr<u8>,
    /// Pre-shuffled output, `G × ⌈n/16⌉·16·k` bytes, 16-byte aligned.
    pub dst: GlobalPtr<u8>,
    /// Rows per group.
    pub n: u32,
    /// Columns, a multiple of 128.
    pub k: u32,
}

const _: () = assert!(core::mem::size_of::<PreshuffleArgs>() == 24);

impl PreshuffleArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of two u64 wrappers followed by two u32: no padding (24 bytes, checked
        // by the const assertion above), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

impl QuantActArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of four u64 wrappers followed by four 4-byte fields: no padding (48
        // bytes, checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

impl QuantWeightArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of three u64 wrappers followed by four 4-byte fields: no padding (40
        // bytes, checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<QuantActArgs>() == 48);
const _: () = assert!(core::mem::size_of::<QuantWeightArgs>() == 40);

/// Arguments of the K-grouped FP8 GEMM kernels ([`crate::kgrouped`], symbols
/// `k_grouped_fp8_gemm_tn_contiguous_bm*_bn*`; MoE weight gradients):
/// `D[g] = C[g] + A_gᵀ · B_g` in f32 for every group `g`, where `A_g` is rows
/// `K_g = k_off(g) .. k_off(g) + ks[g]` of `A` and `B_g` the same rows of `B`.
///
/// Layouts (row-major, no padding, **MN-major**: the token axis K is the outer one): `A` is
/// `total_k × m` FP8, `SFA` `(total_k/128) × m` f32 (one scale per 128-token block and column of
/// A), `B` `total_k × n` FP8, `SFB` `(total_k/128) × n` f32, `C` and `D` `groups × m × n` f32
/// (`C` may be `D`: accumulate in place), `ks` `groups` i32, read on the device only.
/// Requirements (checked by the host): `m % 8 == 0`, `n % 8 == 0`, `total_k % 128 == 0`, every
/// tensor below [`crate::tile::MAX_TENSOR_BYTES`]. `ks` is never trusted: the kernel clamps each
/// entry to `0..`, the running offset to `total_k` and each group's extent to what is left of
/// `total_k`, rounded down to a multiple of 128, so no access leaves the tensors whatever `ks`
/// holds (sizes that are not multiples of 128 or do not sum to `total_k` give a defined but
/// meaningless result). The grid is 1-D with `groups·⌈m/BM⌉·⌈n/BN⌉` workgroups.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KGroupedArgs {
    /// A, `total_k × m` FP8 bytes.
    pub a: GlobalPtr<u8>,
    /// B, `total_k × n` FP8 bytes.
    pub b: GlobalPtr<u8>,
    /// SFA, `(total_k/128) × m` f32.
    pub sfa: GlobalPtr<f32>,
    /// SFB, `(total_k/128) × n` f32.
    pub sfb: GlobalPtr<f32>,
    /// C, `groups × m × n` f32 (may equal `d`).
    pub c: GlobalPtr<f32>,
    /// D, `groups × m × n` f32.
    pub d: GlobalPtr<f32>,
    /// K extent of every group, `groups` i32.
    pub ks: GlobalPtr<i32>,
    /// Columns of A, rows of every D\[g\].
    pub m: u32,
    /// Columns of B and of every D\[g\].
    pub n: u32,
    /// Rows of A and B (the host-side sum of `ks`).
    pub total_k: u32,
    /// Number of groups.
    pub groups: u32,
}

impl KGroupedArgs {
    /// The struct's bytes: the kernel's kernarg segment.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) of seven u64 wrappers followed by four u32: no padding (72 bytes,
        // checked by the const assertion below), every byte initialized; borrows `self`.
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<u8>(), core::mem::size_of::<Self>()) }
    }
}

const _: () = assert!(core::mem::size_of::<KGroupedArgs>() == 72);

/// Arguments of the MoE routing kernels ([`crate::moe`]: `moe_route_count`,
/// `moe_route_offsets_{contiguous,masked}`, `moe_route_scatter_{contiguous,masked}`, launched in
/// that order with the same arguments): `topk_ids [tokens, top_k]` → a layout.
///
/// Outputs (row-major, no padding): `slots` `tokens · top_k` i32 (the layout row of every
/// `(t, j)`, −1 when skipped or dropped), `row_src` `rows` i32 (the token of every row; −1: a
/// padding row inside a used block (to be zero-filled), −2: a row nothing reads), `m_indices`
/// `rows` i32 (contiguous only: the expert of every row, −1 padding), `masked_m` `experts` i32
/// (masked only: rows per expert, at most `m_max`), `status` 4 i32 (`[0]` ids outside
/// `0..experts` other than −1, `[1]` pairs dropped past `m_max`, `[2]` rows used, `[3]` 0).
/// Work memory (i32, written before read by the same sequence): `local_rank` `tokens · top_k`,
/// `chunk_counts` `⌈tokens·top_k/256⌉ · (experts + 1)`, `offsets` `experts + 1`, `counts`
/// `experts`. Requirements (checked by the host): `1 ≤ experts ≤`
/// [`crate::moe::MAX_EXPERTS`], `top_k ≥ 1`, `tokens · top_k < 2^31`; contiguous: `align`
/// (0 = 128) at most 128, `rows ≥ tokens·top_k + (align − 1)·min(experts, tokens·top_k)`
/// rounded up to `align` (at most that many experts are non-empty), `rows < 2^31`; masked: `m_max ≥ 1`,
/// `rows = experts · m_max < 2^31`. Grids (workgroups of 256, [`crate::moe::route_lds_bytes`]
/// bytes of dynamic LDS): count `⌈tokens·top_k/256⌉` (not launched when 0), offsets 1, scatter
/// `max(⌈tokens·top_k/256⌉, ⌈rows/256⌉)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeRouteArgs {
    /// Expert of every `(t, j)`, `tokens · top_k` i32.
    pub topk_ids: GlobalPtr<i32>,
    /// Output: layout row of every `(t, j)`, `tokens · top_k` i32.
    pub slots: GlobalPtr<i32>,
    /// Output: source token of every row, `rows` i32.
    pub row_src: GlobalPtr<i32>,
    /// Output (contiguous): expert of every row, `rows` i32.
    pub m_indices: GlobalPtr<i32>,
    /// Output (masked): valid rows per expert, `experts` i32.
    pub masked_m: GlobalPtr<i32>,
    /// Output: 4 i32 of status (see the struct docs).
    pub status: GlobalPtr<i32>,
    /// Work: rank of every pair among its expert's pairs of its 256-pair chunk.
    pub local_rank: GlobalPtr<i32>,
    /// Work: per chunk, the count of every expert (and of invalid ids, column `experts`); turned
    /// in place into the exclusive prefix over chunks.
    pub chunk_counts: GlobalPtr<i32>,
    /// Work: first row of every expert, and the rows used (`experts + 1`).
    pub offsets: GlobalPtr<i32>,
    /// Work: pairs of every expert.
    pub counts: GlobalPtr<i32>,
    /// Tokens `T`.
    pub tokens: u32,
    /// Experts per token `k`.
    pub top_k: u32,
    /// Experts `E`.
    pub experts: u32,
    /// Rows of the layout (`row_src`, `m_indices`).
    pub rows: u32,
    /// Masked: rows per expert (capacity); contiguous: 0.
    pub m_max: u32,
    /// Contiguous: the row alignment of every expert's rows (each expert's block is padded to a
    /// multiple of it; 0 means 128, DeepGEMM's alignment); masked: unused (0).
    pub align: u32,
}

/// Arguments of the MoE gather kernel ([`crate::moe`], `moe_gather_quantize_bf16`): row `r` of
/// the FP8 output is token `row_src[r]` of `x`, quantized with the activation recipe
/// ([`crate::quant`], 1×128 scales); `row_src[r] = −1` writes the recipe's all-zero row (zeros,
/// scale `1e-4 / fp8_max`), any other value outside `0..tokens` leaves the row untouched.
/// `x` is `tokens × k` bf16, `q` `rows × k` FP8, `sf` `rows × ⌈k/128⌉` f32, `row_src` `rows`
/// i32. Requirements (checked by the host): `k ≥ 8`, `k % 8 == 0`, `rows · ⌈k/128⌉ ≤ u32::MAX −
/// 15`, pointers 16-byte aligned. The grid is `⌈rows · ⌈k/128⌉ / 16⌉` workgroups of 256. The activation kernel (`moe_silu_mul_quantize_bf16`)
/// takes the same arguments with `x` the `rows × 2k` bf16 `[gate | up]` rows and reads row `r`
/// itself where `row_src[r]` is a token.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeGatherArgs {
    /// Hidden states, `tokens × k` bf16 bits.
    pub x: GlobalPtr<u8>,
    /// Source token of every row, `rows` i32.
    pub row_src: GlobalPtr<i32>,
    /// Output FP8 bytes, `rows × k`.
    pub q: GlobalPtr<u8>,
    /// Output scales, `rows × ⌈k/128⌉` f32.
    pub sf: GlobalPtr<f32>,
    /// Rows of the output.
    pub rows: u32,
    /// Columns (hidden size).
    pub k: u32,
    /// Rows of `x`.
    pub tokens: u32,
    /// Largest finite value of the FP8 format (240 E4M3FNUZ, 448 E4M3FN).
    pub fp8_max: f32,
}

/// Arguments of the MoE unpermute kernel ([`crate::moe`], `moe_unpermute_bf16`):
/// `out[t, :] = bf16(Σ_j weights[t,j] · y[slots[t,j], :] (+ shared[t, :]))`, accumulated in
/// f32 in `j` order (slots outside `0..rows` skipped), the shared term added last.
/// `y` is `rows × hidden` bf16, `slots`/`weights` `tokens · top_k`, `shared` (or 0) and `out`
/// `tokens × hidden` bf16. Requirements (checked by the host): `hidden % 8 == 0`,
/// `tokens · hidden / 8 ≤ u32::MAX − 255`, pointers 16-byte aligned. The grid is
/// `⌈tokens · hidden / 8 / 256⌉` workgroups of 256.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeUnpermuteArgs {
    /// Expert outputs, `rows × hidden` bf16 bits.
    pub y: GlobalPtr<u16>,
    /// Layout row of every `(t, j)`, `tokens · top_k` i32.
    pub slots: GlobalPtr<i32>,
    /// Router weight of every `(t, j)`, `tokens · top_k` f32.
    pub weights: GlobalPtr<f32>,
    /// The shared expert's output `tokens × hidden` bf16 bits, or address 0 for none.
    pub shared: GlobalPtr<u16>,
    /// Output, `tokens × hidden` bf16 bits.
    pub out: GlobalPtr<u16>,
    /// Tokens `T`.
    pub tokens: u32,
    /// Experts per token `k`.
    pub top_k: u32,
    /// Hidden size.
    pub hidden: u32,
    /// Rows of `y`.
    pub rows: u32,
}

const _: () = assert!(core::mem::size_of::<MoeRouteArgs>() == 104);
const _: () = assert!(core::mem::size_of::<MoeGatherArgs>() == 48);
const _: () = assert!(core::mem::size_of::<MoeUnpermuteArgs>() == 56);
