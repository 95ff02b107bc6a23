//! gfx942 emulator (see the crate description).
