//! Inputs a hostile caller can build through the public API: shape products that wrap, buffer
//! lengths that overflow their byte size. Each class is a typed error naming the argument.

use fp8gemm::fp8::E4M3Fnuz;
use fp8gemm::quant::{QuantizedActivations, QuantizedWeights};
use fp8gemm::{Context, DeviceActivations, DeviceWeights, Error};
use proptest::prelude::*;

#[test]
fn upload_rejects_shapes_whose_products_wrap() {
    let ctx = Context::new().unwrap();
    // m · k = 2^63 · 2 wraps to 0 = the empty data's length.
    let a = QuantizedActivations::<E4M3Fnuz> { data: vec![], scales: vec![], m: 1 << 63, k: 2 };
    let e = DeviceActivations::upload(&ctx, &a).err().expect("m = 2^63 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "a", .. }), "{e}");
    assert!(e.to_string().contains("overflows"), "{e}");
    // n · k = 2^71 wraps; so does 2^40 · 2^40.
    let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 63, k: 256 };
    let e = DeviceWeights::upload(&ctx, &b).err().expect("n = 2^63 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "b", .. }), "{e}");
    let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: 1 << 40, k: 1 << 40 };
    assert!(matches!(DeviceWeights::upload(&ctx, &b), Err(Error::Shape { arg: "b", .. })));
}

#[test]
fn alloc_rejects_lengths_whose_byte_size_overflows() {
    let ctx = Context::new().unwrap();
    // 2^62 u32 = 2^64 bytes: used to return Ok with len() = 2^62 backed by 0 bytes.
    let e = ctx.alloc_zeroed::<u32>(1 << 62).err().expect("2^62 u32 must be rejected");
    assert!(matches!(&e, Error::Shape { arg: "len", .. }), "{e}");
    assert!(matches!(ctx.alloc_zeroed::<u8>(usize::MAX), Err(Error::Shape { arg: "len", .. })));
    assert!(matches!(ctx.alloc_zeroed::<f32>(usize::MAX / 4 + 1), Err(Error::Shape { arg: "len", .. })));
    // Representable but absurd sizes are the runtime's out-of-memory error, not a lying buffer.
    match ctx.alloc_zeroed::<u8>(1 << 60) {
        Err(Error::Hip { call: "hipMalloc", .. }) => {}
        other => panic!("2^60 bytes: expected a hipMalloc error, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any shape with empty data is rejected unless the shape really has no elements.
    #[test]
    fn empty_data_only_for_empty_shapes(m in prop_oneof![Just(0usize), 1usize..4, (40u32..64).prop_map(|e| 1usize << e)],
                                        k in prop_oneof![Just(0usize), 1usize..300, (40u32..64).prop_map(|e| 1usize << e)]) {
        let ctx = Context::new().unwrap();
        let a = QuantizedActivations::<E4M3Fnuz> { data: vec![], scales: vec![], m, k };
        let empty = m == 0 || k == 0;
        prop_assert_eq!(DeviceActivations::upload(&ctx, &a).is_ok(), empty, "m = {}, k = {}", m, k);
        let b = QuantizedWeights::<E4M3Fnuz> { data: vec![], scales: vec![], n: m, k };
        prop_assert_eq!(DeviceWeights::upload(&ctx, &b).is_ok(), empty, "n = {}, k = {}", m, k);
    }
}
