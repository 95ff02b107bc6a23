//! Line-granular cache models for the timing model: a set-associative LRU cache (vector L1,
//! L2) and a large first-touch cache with FIFO eviction (the Infinity Cache / MALL).

use std::collections::{HashSet, VecDeque};

/// A set-associative cache of 128-byte lines with true LRU replacement.
pub(crate) struct SetAssoc {
    sets: u64,
    ways: usize,
    /// `tags[set * ways + way]`: line number + 1 (0 = empty).
    tags: Vec<u64>,
    /// Last-use stamp per way.
    stamp: Vec<u64>,
    clock: u64,
}

impl SetAssoc {
    /// A cache of `bytes` bytes with `ways` ways (at least one set).
    pub(crate) fn new(bytes: u64, ways: u32) -> SetAssoc {
        let ways = ways.max(1) as usize;
        let lines = (bytes / 128).max(ways as u64);
        let sets = (lines / ways as u64).max(1);
        SetAssoc { sets, ways, tags: vec![0; sets as usize * ways], stamp: vec![0; sets as usize * ways], clock: 0 }
    }

    /// Looks `line` up; a miss allocates it (evicting the least recently used way). Returns
    /// whether it hit.
    pub(crate) fn access(&mut self, line: u64) -> bool {
        self.clock += 1;
        // Spread consecutive lines over sets (hardware hashes the address bits).
        let set = (line ^ (line >> 11) ^ (line >> 19)) % self.sets;
        let base = set as usize * self.ways;
        let tag = line + 1;
        let ways = &mut self.tags[base..base + self.ways];
        if let Some(w) = ways.iter().position(|&t| t == tag) {
            self.stamp[base + w] = self.clock;
            return true;
        }
        let victim = (0..self.ways).min_by_key(|&w| self.stamp[base + w]).unwrap_or(0);
        self.tags[base + victim] = tag;
        self.stamp[base + victim] = self.clock;
        false
    }
}

/// A large cache modelled by residency: a line is present from its first touch until
/// `capacity` newer lines have been brought in (FIFO eviction).
pub(crate) struct Fifo {
    capacity: usize,
    present: HashSet<u64>,
    order: VecDeque<u64>,
}

impl Fifo {
    /// A cache of `bytes` bytes of 128-byte lines.
    pub(crate) fn new(bytes: u64) -> Fifo {
        Fifo { capacity: (bytes / 128).max(1) as usize, present: HashSet::new(), order: VecDeque::new() }
    }

    /// Looks `line` up; a miss brings it in. Returns whether it hit.
    pub(crate) fn access(&mut self, line: u64) -> bool {
        if self.present.contains(&line) {
            return true;
        }
        if self.order.len() == self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.present.remove(&old);
        }
        self.present.insert(line);
        self.order.push_back(line);
        false
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
    fn fifo_evicts_the_oldest_line_at_capacity() {
        let mut c = Fifo::new(2 * 128);
        assert!(!c.access(7));
        assert!(!c.access(8));
        assert!(c.access(7));
        assert!(!c.access(9));
        assert!(!c.access(7), "7 was the oldest of three lines in a two-line cache");
    }
}
