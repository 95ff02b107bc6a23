//! Emulated device (global) memory: a set of live allocations at 64-bit device addresses.
//!
//! Every access names an address and a length and must fall entirely inside one live allocation;
//! anything else is a [`MemError`] (the memcheck finding the executor reports with kernel, pc and
//! lane). Storage is `AtomicU32` words accessed with relaxed ordering, so workgroups running on
//! several host threads can touch memory concurrently without undefined behaviour in the emulator,
//! even when the emulated kernel itself races (its result is then merely unspecified, as on
//! hardware).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

/// First device address handed out: 16 TiB, non-zero, 4 KiB aligned, and far below where Linux
/// x86-64 places host mappings (top-down from 0x7fff_ffff_ffff; PIE images near 0x5555_xxxx_xxxx),
/// so a host pointer is never mistaken for a device address. Addresses are never reused (a freed
/// range stays invalid, which keeps use-after-free detectable); the window up to 0x5000_0000_0000
/// holds 64 TiB of cumulative allocations.
const BASE_ADDRESS: u64 = 0x0000_1000_0000_0000;
/// End of the device address window (see [`BASE_ADDRESS`]).
const END_ADDRESS: u64 = 0x0000_5000_0000_0000;
/// Allocation alignment and the unmapped guard gap between allocations.
const ALIGN: u64 = 4096;

/// A memory access error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// `[addr, addr + len)` is not inside one live allocation.
    #[error("access of {len} bytes at {addr:#x} is outside every live allocation{near}")]
    OutOfBounds {
        /// Start address.
        addr: u64,
        /// Length in bytes.
        len: u64,
        /// Description of the nearest allocation, if any (for the report).
        near: String,
    },
    /// `free` of an address that is not the start of a live allocation.
    #[error("free of {addr:#x}, which is not the start of a live allocation")]
    InvalidFree {
        /// The address.
        addr: u64,
    },
    /// Size 0 or too large.
    #[error("cannot allocate {size} bytes")]
    BadSize {
        /// Requested size.
        size: u64,
    },
    /// The host could not provide the backing storage, or the device address window is used up.
    #[error("out of memory allocating {size} bytes")]
    OutOfMemory {
        /// Requested size.
        size: u64,
    },
}

/// One live allocation.
#[derive(Debug)]
pub struct Allocation {
    base: u64,
    len: u64,
    words: Box<[AtomicU32]>,
}

impl Allocation {
    /// Device address of the first byte.
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether the allocation is empty (never true: zero-size allocations are refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Whether `[addr, addr + len)` lies inside this allocation.
    #[inline]
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base && addr.checked_add(len).is_some_and(|end| end <= self.base + self.len)
    }

    /// Reads `out.len()` bytes at device address `addr`; the caller has checked [`Self::contains`].
    #[inline]
    pub fn read(&self, addr: u64, out: &mut [u8]) {
        debug_assert!(self.contains(addr, out.len() as u64));
        let off = (addr - self.base) as usize;
        if off.is_multiple_of(4) && out.len().is_multiple_of(4) {
            for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
                chunk.copy_from_slice(&self.words[off / 4 + i].load(Relaxed).to_le_bytes());
            }
        } else {
            for (i, b) in out.iter_mut().enumerate() {
                let o = off + i;
                *b = (self.words[o / 4].load(Relaxed) >> (8 * (o % 4))) as u8;
            }
        }
    }

    /// Writes `data` at device address `addr`; the caller has checked [`Self::contains`].
    #[inline]
    pub fn write(&self, addr: u64, data: &[u8]) {
        debug_assert!(self.contains(addr, data.len() as u64));
        let off = (addr - self.base) as usize;
        if off.is_multiple_of(4) && data.len().is_multiple_of(4) {
            for (i, chunk) in data.chunks_exact(4).enumerate() {
                let w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                self.words[off / 4 + i].store(w, Relaxed);
            }
        } else {
            for (i, &b) in data.iter().enumerate() {
                let o = off + i;
                let shift = 8 * (o % 4);
                let w = &self.words[o / 4];
                w.fetch_and(!(0xffu32 << shift), Relaxed);
                w.fetch_or(u32::from(b) << shift, Relaxed);
            }
        }
    }

    /// Sets every byte in `[addr, addr + len)` to `value`; the caller has checked the range.
    pub fn fill(&self, addr: u64, len: u64, value: u8) {
        let buf = vec![value; len as usize];
        self.write(addr, &buf);
    }
}

/// All live device allocations. `Sync`: shared by every workgroup of a launch and by the HIP layer.
#[derive(Debug)]
pub struct DeviceMemory {
    inner: RwLock<Inner>,
}

#[derive(Debug)]
struct Inner {
    next: u64,
    live: BTreeMap<u64, Arc<Allocation>>,
    bytes_live: u64,
}

impl Default for DeviceMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl DeviceMemory {
    /// An empty device memory.
    pub fn new() -> Self {
        DeviceMemory { inner: RwLock::new(Inner { next: BASE_ADDRESS, live: BTreeMap::new(), bytes_live: 0 }) }
    }

    /// Allocates `size` zero-filled bytes; returns the device address (4 KiB aligned, never 0,
    /// never reused while the process lives, separated from its neighbours by an unmapped gap).
    pub fn alloc(&self, size: u64) -> Result<u64, MemError> {
        if size == 0 || size > (1 << 40) {
            return Err(MemError::BadSize { size });
        }
        let words = (size as usize).div_ceil(4);
        let mut storage: Vec<AtomicU32> = Vec::new();
        storage.try_reserve_exact(words).map_err(|_| MemError::OutOfMemory { size })?;
        storage.extend((0..words).map(|_| AtomicU32::new(0)));
        let storage = storage.into_boxed_slice();
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let base = g.next;
        if base + size > END_ADDRESS {
            return Err(MemError::OutOfMemory { size });
        }
        g.next = (base + size).div_ceil(ALIGN) * ALIGN + ALIGN;
        g.live.insert(base, Arc::new(Allocation { base, len: size, words: storage }));
        g.bytes_live += size;
        Ok(base)
    }

    /// Frees the allocation starting at `addr`.
    pub fn free(&self, addr: u64) -> Result<(), MemError> {
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        match g.live.remove(&addr) {
            Some(a) => {
                g.bytes_live -= a.len;
                Ok(())
            }
            None => Err(MemError::InvalidFree { addr }),
        }
    }

    /// The live allocation containing `[addr, addr + len)`, or the memcheck error.
    pub fn find(&self, addr: u64, len: u64) -> Result<Arc<Allocation>, MemError> {
        let g = self.inner.read().unwrap_or_else(|p| p.into_inner());
        if let Some((_, a)) = g.live.range(..=addr).next_back()
            && a.contains(addr, len)
        {
            return Ok(a.clone());
        }
        Err(MemError::OutOfBounds { addr, len, near: describe_near(&g.live, addr) })
    }

    /// Reads bytes at `addr` (must lie inside one live allocation).
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.find(addr, out.len() as u64)?.read(addr, out);
        Ok(())
    }

    /// Writes bytes at `addr` (must lie inside one live allocation).
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.find(addr, data.len() as u64)?.write(addr, data);
        Ok(())
    }

    /// Fills `len` bytes at `addr` with `value`.
    pub fn fill(&self, addr: u64, len: u64, value: u8) -> Result<(), MemError> {
        self.find(addr, len)?.fill(addr, len, value);
        Ok(())
    }

    /// Bytes currently allocated.
    pub fn bytes_live(&self) -> u64 {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).bytes_live
    }
}

fn describe_near(live: &BTreeMap<u64, Arc<Allocation>>, addr: u64) -> String {
    let below = live.range(..=addr).next_back().map(|(_, a)| a);
    let above = live.range(addr..).next().map(|(_, a)| a);
    let mut best: Option<(u64, &Arc<Allocation>)> = None;
    for a in below.into_iter().chain(above) {
        let dist = if addr < a.base { a.base - addr } else { addr.saturating_sub(a.base + a.len) };
        if best.is_none_or(|(d, _)| dist < d) {
            best = Some((dist, a));
        }
    }
    match best {
        Some((_, a)) => {
            let rel = addr as i128 - a.base as i128;
            format!(" (nearest allocation: {:#x}, {} bytes; offset {rel})", a.base, a.len)
        }
        None => " (no live allocations)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_read_write_bounds() {
        let m = DeviceMemory::new();
        let a = m.alloc(10).unwrap();
        let b = m.alloc(4096).unwrap();
        assert_ne!(a, 0);
        assert!(b >= a + 10 + ALIGN, "allocations are separated by a gap");
        m.write(a + 1, &[1, 2, 3]).unwrap();
        let mut out = [0u8; 10];
        m.read(a, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3, 0, 0, 0, 0, 0, 0]);
        m.write(a, &[9, 9, 9, 9, 8, 8, 8, 8]).unwrap();
        let mut w = [0u8; 4];
        m.read(a + 4, &mut w).unwrap();
        assert_eq!(w, [8, 8, 8, 8]);
        let e = m.read(a + 8, &mut [0u8; 4]).unwrap_err();
        assert!(matches!(e, MemError::OutOfBounds { addr, len: 4, .. } if addr == a + 8));
        assert!(e.to_string().contains("offset 8"), "{e}");
        assert!(m.write(a - 1, &[0]).is_err());
        m.free(a).unwrap();
        assert!(m.read(a, &mut [0u8; 1]).is_err(), "use after free is caught");
        assert_eq!(m.free(a), Err(MemError::InvalidFree { addr: a }));
        assert_eq!(m.bytes_live(), 4096);
        assert!(matches!(m.alloc(0), Err(MemError::BadSize { size: 0 })));
    }
}
