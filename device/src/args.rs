//! Kernel argument structs, `#[repr(C)]`, shared verbatim by host and device. The bytes of one of
//! these structs are the kernel's whole kernarg segment (see `amdgpu-builder`).

use core::marker::PhantomData;

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

/// Arguments of [`crate::test_kernels::add_one_f32`]: `out[i] = inp[i] + 1` for `i < n`.
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

/// Arguments of [`crate::test_kernels::register_pressure`], a kernel that keeps 48 MFMA
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
