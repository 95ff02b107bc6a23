//! Per-wave instruction traces: what the timing model ([`crate::timing`]) replays.
//!
//! A traced launch records, for every wave, the instruction indices it executed in order and
//! the dynamic facts the static instruction cannot give: the LDS bank-model cycles of each DS
//! instruction and the global 128-byte lines each vector memory instruction touched. Everything
//! else the timing model needs (operands, wait counts, MFMA passes) comes from the decoded
//! instruction itself, so there is no second description of the kernel.

/// One executed instruction of a wave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceRec {
    /// Index of the instruction in the kernel's decoded program.
    pub idx: u32,
    /// DS: LDS cycles from the bank model; vector memory: the number of global lines it touched
    /// (the lines follow in [`WaveTrace::lines`] in instruction order); otherwise 0.
    pub aux: u32,
}

/// The executed instruction stream of one wave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaveTrace {
    /// Executed instructions in program order.
    pub recs: Vec<TraceRec>,
    /// Global line numbers (address / 128) of the vector memory instructions, concatenated.
    pub lines: Vec<u64>,
}
