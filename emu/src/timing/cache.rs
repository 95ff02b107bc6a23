//! Line-granular cache models for the timing model: a set-associative LRU cache (vector L1,
//! L2; the L2 also tracks when each line's fill arrives, so a request that hits a line still
//! being fetched waits for it) and a large first-touch cache with FIFO eviction (the Infinity
//! Cache / MALL, which tracks its fills the same way).

use std::collections::{HashMap, VecDeque};

/// A set-associative cache of 128-byte lines with true LRU replacement.
pub(crate) struct SetAssoc {
    sets: u64,
    ways: usize,
    /// `tags[set * ways + way]`: line number + 1 (0 = empty).
    tags: Vec<u64>,
    /// Last-use stamp per way.
    stamp: Vec<u64>,
    /// Per way: when its line's data is present (a fill still in flight is later than now).
    ready: Vec<f64>,
    clock: u64,
}

/// The way a [`SetAssoc::lookup`] miss allocated, to state its fill's arrival with
/// [`SetAssoc::filled`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Way(usize);

/// What [`SetAssoc::lookup`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Lookup {
    /// The line is present from this time (later than the caller's while its fill is in
    /// flight).
    Hit(f64),
    /// The line was allocated in this way; its data arrives when the caller's fetch does.
    Miss(Way),
}

impl SetAssoc {
    /// A cache of `bytes` bytes with `ways` ways (at least one set).
    pub(crate) fn new(bytes: u64, ways: u32) -> SetAssoc {
        let ways = ways.max(1) as usize;
        let lines = (bytes / 128).max(ways as u64);
        let sets = (lines / ways as u64).max(1);
        let n = sets as usize * ways;
        SetAssoc { sets, ways, tags: vec![0; n], stamp: vec![0; n], ready: vec![0.0; n], clock: 0 }
    }

    /// Looks `line` up with its fill time tracked: a miss allocates it (evicting the least
    /// recently used way), and the caller states with [`Self::filled`] when its data arrives.
    pub(crate) fn lookup(&mut self, line: u64) -> Lookup {
        match self.touch(line) {
            (true, slot) => Lookup::Hit(self.ready[slot]),
            (false, slot) => Lookup::Miss(Way(slot)),
        }
    }

    /// The data of the line a [`Self::lookup`] miss allocated in `way` is present from `t`.
    pub(crate) fn filled(&mut self, way: Way, t: f64) {
        self.ready[way.0] = t;
    }

    /// Looks `line` up; a miss allocates it (evicting the least recently used way), its data
    /// present at once (no fill time tracked). Returns whether it hit.
    #[cfg(test)]
    pub(crate) fn access(&mut self, line: u64) -> bool {
        let (hit, slot) = self.touch(line);
        if !hit {
            self.ready[slot] = 0.0;
        }
        hit
    }

    /// Looks `line` up (allocating it on a miss): whether it hit, and its way's slot.
    fn touch(&mut self, line: u64) -> (bool, usize) {
        self.clock += 1;
        // Spread lines over sets (hardware hashes the address bits; its function is not
        // published): consecutive lines go to consecutive sets, and the bits above the low 11
        // select a pseudo-random offset (a multiplicative mix), so runs of lines a large
        // power-of-two stride apart (the K blocks of neighbouring B columns) land on unrelated
        // sets instead of overlapping bands.
        let mix = (line >> 11).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
        let set = (line ^ mix) % self.sets;
        let base = set as usize * self.ways;
        let tag = line + 1;
        let ways = &mut self.tags[base..base + self.ways];
        if let Some(w) = ways.iter().position(|&t| t == tag) {
            self.stamp[base + w] = self.clock;
            return (true, base + w);
        }
        let victim = (0..self.ways).min_by_key(|&w| self.stamp[base + w]).unwrap_or(0);
        self.tags[base + victim] = tag;
        self.stamp[base + victim] = self.clock;
        (false, base + victim)
    }
}

/// A large cache modelled by residency: a line is present from its first touch until
/// `capacity` newer lines have been brought in (FIFO eviction).
pub(crate) struct Fifo {
    capacity: usize,
    /// Present lines and when their data arrives (a fill in flight is later than now).
    present: HashMap<u64, f64>,
    order: VecDeque<u64>,
}

impl Fifo {
    /// A cache of `bytes` bytes of 128-byte lines.
    pub(crate) fn new(bytes: u64) -> Fifo {
        Fifo { capacity: (bytes / 128).max(1) as usize, present: HashMap::new(), order: VecDeque::new() }
    }

    /// When the data of `line` is present (`None`: not in the cache); later than the caller's
    /// time while the fill that brought it is in flight.
    pub(crate) fn ready(&self, line: u64) -> Option<f64> {
        self.present.get(&line).copied()
    }

    /// Brings `line` (not present) in, its data present from `t`, evicting the oldest line at
    /// capacity.
    pub(crate) fn insert(&mut self, line: u64, t: f64) {
        debug_assert!(!self.present.contains_key(&line), "line {line} is already present");
        if self.order.len() == self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.present.remove(&old);
        }
        self.present.insert(line, t);
        self.order.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_keeps_the_recent_lines_of_a_set() {
        // One set of 4 ways: lines 0..4 fill it, touching 0 makes 1 the LRU victim of line 4.
        let mut c = SetAssoc::new(4 * 128, 4);
        for l in 0..4 {
            assert!(!c.access(l));
        }
        assert!(c.access(0));
        assert!(!c.access(4));
        assert!(c.access(0));
        assert!(!c.access(1), "line 1 was the least recently used and must have been evicted");
    }

    #[test]
    fn blocks_a_power_of_two_stride_apart_do_not_conflict() {
        // The L2 of an XCD (4 MiB, 16 ways) under the pattern of 18 B columns of a long-K GEMM:
        // column `c`'s K block `j` is 128 consecutive lines at `c · 2^14 + j · 128` (columns
        // 2 MiB apart), and the workgroups sharing a column trail each other by up to 3 blocks.
        // The live blocks (18 × 4 × 16 KiB = 1.1 MiB) fit with room to spare, so every line
        // must miss exactly once. A set index that maps neighbouring columns' blocks onto
        // overlapping bands of sets (an XOR fold of fixed bit fields) lost a third of them to
        // conflicts and made such launches depend on where their buffers landed.
        let mut c = SetAssoc::new(4 << 20, 16);
        let (mut misses, mut lines) = (0u64, 0u64);
        for j in 0..64u64 {
            for lag in 0..4 {
                let Some(jj) = j.checked_sub(lag) else { continue };
                for col in 0..18u64 {
                    for l in 0..128 {
                        let line = (1 << 30) + col * (1 << 14) + jj * 128 + l;
                        misses += u64::from(!c.access(line));
                        lines += u64::from(lag == 0);
                    }
                }
            }
        }
        assert_eq!(misses, lines, "{} conflict misses over {lines} lines", misses - lines);
    }

    #[test]
    fn a_hit_during_a_fill_waits_for_it() {
        // Line 5 misses and its data arrives at t = 900: a second request that hits while the
        // fill is in flight gets the line at 900, not at its own hit latency; an untracked
        // access (`access`) leaves lines present at once.
        let mut c = SetAssoc::new(64 * 128, 4);
        let Lookup::Miss(way) = c.lookup(5) else { panic!("line 5 is not in an empty cache") };
        c.filled(way, 900.0);
        assert_eq!(c.lookup(5), Lookup::Hit(900.0));
        assert!(!c.access(6));
        assert_eq!(c.lookup(6), Lookup::Hit(0.0));
    }

    #[test]
    fn fifo_evicts_the_oldest_line_at_capacity() {
        let mut c = Fifo::new(2 * 128);
        assert_eq!(c.ready(7), None);
        c.insert(7, 10.0);
        assert_eq!(c.ready(8), None);
        c.insert(8, 20.0);
        assert_eq!(c.ready(7), Some(10.0), "a hit returns when the fill that brought the line arrives");
        assert_eq!(c.ready(9), None);
        c.insert(9, 30.0);
        assert_eq!(c.ready(7), None, "7 was the oldest of three lines in a two-line cache");
    }
}
