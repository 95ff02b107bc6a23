#!/usr/bin/env bash
# Builds this consumer crate on the stable toolchain from scratch (its own target directory),
# runs its GEMM on the emulator and checks that the binary exports no HIP symbol.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CARGO_TARGET_DIR="${CONSUMER_TARGET_DIR:-$here/../../target/consumer}"
rm -rf "$CARGO_TARGET_DIR"
start=$(date +%s)
cargo +stable build --manifest-path "$here/Cargo.toml"
echo "consumer: clean stable debug build in $(( $(date +%s) - start )) s ($(rustc +stable --version))"
bin="$CARGO_TARGET_DIR/debug/fp8gemm-consumer"
"$bin"
exported=$(nm -D --defined-only "$bin" | awk '$3 ~ /^hip/ { print $3 }')
if [ -n "$exported" ]; then
    echo "consumer: the binary exports HIP symbols:"; echo "$exported"; exit 1
fi
echo "consumer: no hip* symbol exported"
# The `rocm` feature as a consumer sets it up (README, "The ROCm backend"): rocm-rs's shipped
# bindings (SKIP_BINDGEN=1), compiled on stable; linking needs libamdhip64, which this machine lacks.
SKIP_BINDGEN=1 cargo +stable check --manifest-path "$here/Cargo.toml" --features rocm
echo "consumer: --features rocm compiles on stable"
