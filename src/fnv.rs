//! FNV-1a, 64 bits: a hash stable across toolchains (the standard library's hasher is not
//! promised to be), shared by `build.rs` (the launch sources' hash) and [`crate::time_cache`]
//! (the fingerprint of cached times), enough to tell two builds apart.

/// The FNV-1a offset basis: the hash of no bytes.
pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// `h` extended by `bytes`.
pub fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
