//! Shared bandwidth servers of the timing model (L2, fabric link, MALL, HBM).
//!
//! A server moves at most `bytes_per_cycle` bytes per cycle. Requests reach it in the order
//! the simulator *issues* them, which is not the order of their *arrival* at the server: a
//! request issued earlier may arrive later (it queued longer upstream, e.g. behind another
//! XCD's L2). A single "free at" pointer (FIFO in call order) would make such a late request
//! reserve the server ahead of time and push every earlier-arriving request behind it, idling
//! the server in the gap; the delay it adds grows with the number of independent request
//! streams (8 XCDs against the shared MALL/HBM), which made the all-XCD simulation of a launch
//! slower than its one-XCD share by up to 15 %. Here time is cut into buckets of
//! [`BUCKET_CYCLES`] cycles, each with `bytes_per_cycle · BUCKET_CYCLES` bytes of capacity; a
//! request takes capacity from the first bucket at or after its arrival that has room, so
//! idle capacity before a far-future reservation is used, and no bucket ever moves more than
//! the server's bandwidth allows.

/// Granularity of the capacity calendar, cycles. Small against every latency of the
/// hierarchy (≥ 60 cycles), large enough that a 128-byte line fits every server's bucket.
pub(crate) const BUCKET_CYCLES: f64 = 32.0;

/// A bandwidth server with a capacity calendar.
pub(crate) struct Server {
    bytes_per_cycle: f64,
    capacity: f64,
    /// Bytes already granted in bucket `i` (grown on demand).
    used: Vec<f64>,
    /// Every bucket before this one is full.
    first_open: usize,
}

impl Server {
    /// A server moving `bytes_per_cycle` bytes per cycle.
    pub(crate) fn new(bytes_per_cycle: f64) -> Server {
        let bytes_per_cycle = bytes_per_cycle.max(1e-9);
        Server { bytes_per_cycle, capacity: bytes_per_cycle * BUCKET_CYCLES, used: Vec::new(), first_open: 0 }
    }

    /// Grants `bytes` arriving at cycle `t`; returns the cycle its transfer starts (`t` when
    /// the server has room then, later when earlier requests filled the capacity).
    pub(crate) fn serve(&mut self, t: f64, bytes: f64) -> f64 {
        let t = t.max(0.0);
        let mut b = ((t / BUCKET_CYCLES) as usize).max(self.first_open);
        loop {
            if b >= self.used.len() {
                self.used.resize(b + 64, 0.0);
            }
            let before = self.used[b];
            // A request larger than a bucket (cannot happen for 128-byte lines) takes an empty one.
            if before + bytes <= self.capacity || before == 0.0 {
                self.used[b] = before + bytes;
                // Within the bucket the granted bytes are served back to back from its start.
                let start = (b as f64 * BUCKET_CYCLES + before / self.bytes_per_cycle).max(t);
                while self.first_open < self.used.len() && self.used[self.first_open] + 1e-9 >= self.capacity {
                    self.first_open += 1;
                }
                return start;
            }
            b += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturated_server_moves_exactly_its_bandwidth() {
        // 4 B/clk: 128 lines of 128 bytes take 4096 cycles however they arrive at t = 0.
        let mut s = Server::new(4.0);
        let starts: Vec<f64> = (0..128).map(|_| s.serve(0.0, 128.0)).collect();
        for (i, &x) in starts.iter().enumerate() {
            assert_eq!(x, i as f64 * 32.0, "line {i}");
        }
    }

    #[test]
    fn an_early_arrival_uses_capacity_before_a_later_reservation() {
        let mut s = Server::new(4.0);
        // A request arriving at cycle 1000 is granted first; one arriving at 10 still goes at 10.
        assert_eq!(s.serve(1000.0, 128.0), 1000.0);
        assert_eq!(s.serve(10.0, 128.0), 10.0);
        // The bucket of cycle 10 (0..32) holds one line at 4 B/clk; the next line waits for the
        // following bucket.
        assert_eq!(s.serve(10.0, 128.0), 32.0);
    }

    #[test]
    fn full_buckets_are_skipped() {
        let mut s = Server::new(8.0); // 256 bytes per bucket
        assert_eq!(s.serve(0.0, 128.0), 0.0);
        assert_eq!(s.serve(0.0, 128.0), 16.0);
        assert_eq!(s.serve(0.0, 128.0), 32.0);
        assert_eq!(s.serve(5.0, 128.0), 48.0);
    }
}
