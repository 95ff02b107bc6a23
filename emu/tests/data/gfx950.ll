; Test kernels for the gfx950 instructions (emulator fixtures; tests/exec_gfx950.rs).
; gfx950.hsaco is built from this file with the pinned toolchain's tools
; (B=$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin):
;   $B/llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx950 -O3 -filetype=obj --amdhsa-code-object-version=5 gfx950.ll -o gfx950.o
;   $B/rust-lld -flavor gnu -shared gfx950.o -o gfx950.hsaco
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32(<8 x i32>, <8 x i32>, <4 x float>, i32, i32, i32, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v4i32.v4i32(<4 x i32>, <4 x i32>, <4 x float>, i32, i32, i32, i32, i32, i32)
declare <16 x float> @llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v8i32(<8 x i32>, <8 x i32>, <16 x float>, i32, i32, i32, i32, i32, i32)
declare <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3))
declare <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3))
declare void @llvm.amdgcn.global.load.lds(ptr addrspace(1), ptr addrspace(3), i32, i32, i32)
declare <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16>, float, float, float, i1)
declare <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32, float, i1)

@lds_tr = internal addrspace(3) global [512 x i32] poison, align 16
@lds_dma = internal addrspace(3) global [256 x i32] poison, align 16
@lds_big = internal addrspace(3) global [25600 x i32] poison, align 16

; out[l*4 + r] = D register r of lane l; A/B: 8 dwords per lane at a/b + 32*l; C = 0;
; scales sa (byte 0 of the i32) and sb.
define amdgpu_kernel void @mfma16(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b, i32 %sa, i32 %sb) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <8 x i32>, ptr addrspace(1) %a, i32 %l
  %pb = getelementptr <8 x i32>, ptr addrspace(1) %b, i32 %l
  %va = load <8 x i32>, ptr addrspace(1) %pa
  %vb = load <8 x i32>, ptr addrspace(1) %pb
  %d = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32(<8 x i32> %va, <8 x i32> %vb, <4 x float> zeroinitializer, i32 0, i32 1, i32 0, i32 %sa, i32 0, i32 %sb)
  %po = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %l
  store <4 x float> %d, ptr addrspace(1) %po
  ret void
}

define amdgpu_kernel void @mfma16_fp4(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <4 x i32>, ptr addrspace(1) %a, i32 %l
  %pb = getelementptr <4 x i32>, ptr addrspace(1) %b, i32 %l
  %va = load <4 x i32>, ptr addrspace(1) %pa
  %vb = load <4 x i32>, ptr addrspace(1) %pb
  %d = call <4 x float> @llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v4i32.v4i32(<4 x i32> %va, <4 x i32> %vb, <4 x float> zeroinitializer, i32 4, i32 4, i32 0, i32 127, i32 0, i32 127)
  %po = getelementptr <4 x float>, ptr addrspace(1) %out, i32 %l
  store <4 x float> %d, ptr addrspace(1) %po
  ret void
}

define amdgpu_kernel void @mfma32(ptr addrspace(1) %out, ptr addrspace(1) %a, ptr addrspace(1) %b) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pa = getelementptr <8 x i32>, ptr addrspace(1) %a, i32 %l
  %pb = getelementptr <8 x i32>, ptr addrspace(1) %b, i32 %l
  %va = load <8 x i32>, ptr addrspace(1) %pa
  %vb = load <8 x i32>, ptr addrspace(1) %pb
  %d = call <16 x float> @llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v8i32(<8 x i32> %va, <8 x i32> %vb, <16 x float> zeroinitializer, i32 0, i32 0, i32 0, i32 127, i32 0, i32 127)
  %po = getelementptr <16 x float>, ptr addrspace(1) %out, i32 %l
  store <16 x float> %d, ptr addrspace(1) %po
  ret void
}

; 64 lanes: LDS[0..2048) = in[0..2048) bytes, then each lane transposing-reads 8 bytes at 8*l
; (tr16 into out16[l], tr8 into out8[l]).
define amdgpu_kernel void @tr(ptr addrspace(1) %out16, ptr addrspace(1) %out8, ptr addrspace(1) %in) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pi = getelementptr <8 x i32>, ptr addrspace(1) %in, i32 %l
  %v = load <8 x i32>, ptr addrspace(1) %pi
  %pl = getelementptr <8 x i32>, ptr addrspace(3) @lds_tr, i32 %l
  store <8 x i32> %v, ptr addrspace(3) %pl
  call void @llvm.amdgcn.s.barrier()
  %pr = getelementptr <2 x i32>, ptr addrspace(3) @lds_tr, i32 %l
  %t16 = call <4 x i16> @llvm.amdgcn.ds.read.tr16.b64.v4i16(ptr addrspace(3) %pr)
  %t8 = call <2 x i32> @llvm.amdgcn.ds.read.tr8.b64.v2i32(ptr addrspace(3) %pr)
  %po16 = getelementptr <4 x i16>, ptr addrspace(1) %out16, i32 %l
  store <4 x i16> %t16, ptr addrspace(1) %po16
  %po8 = getelementptr <2 x i32>, ptr addrspace(1) %out8, i32 %l
  store <2 x i32> %t8, ptr addrspace(1) %po8
  ret void
}

; LDS DMA of 16 bytes per lane: lane l's in[4l..4l+4) dwords land at LDS 16*l; out = LDS.
define amdgpu_kernel void @dma(ptr addrspace(1) %out, ptr addrspace(1) %in) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %pi = getelementptr <4 x i32>, ptr addrspace(1) %in, i32 %l
  call void @llvm.amdgcn.global.load.lds(ptr addrspace(1) %pi, ptr addrspace(3) @lds_dma, i32 16, i32 0, i32 0)
  call void @llvm.amdgcn.s.barrier()
  %pl = getelementptr <4 x i32>, ptr addrspace(3) @lds_dma, i32 %l
  %v = load <4 x i32>, ptr addrspace(3) %pl
  %po = getelementptr <4 x i32>, ptr addrspace(1) %out, i32 %l
  store <4 x i32> %v, ptr addrspace(1) %po
  ret void
}

; out[l] = pk fp8 of (x[2l], x[2l+1]) / scale; back[2l..] = that pair * scale.
define amdgpu_kernel void @cvt(ptr addrspace(1) %out, ptr addrspace(1) %back, ptr addrspace(1) %x, float %scale) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %px = getelementptr <2 x float>, ptr addrspace(1) %x, i32 %l
  %v = load <2 x float>, ptr addrspace(1) %px
  %a = extractelement <2 x float> %v, i32 0
  %b = extractelement <2 x float> %v, i32 1
  %pk = call <2 x i16> @llvm.amdgcn.cvt.scalef32.pk.fp8.f32(<2 x i16> zeroinitializer, float %a, float %b, float %scale, i1 false)
  %pki = bitcast <2 x i16> %pk to i32
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %l
  store i32 %pki, ptr addrspace(1) %po
  %bk = call <2 x float> @llvm.amdgcn.cvt.scalef32.pk.f32.fp8(i32 %pki, float %scale, i1 false)
  %pb = getelementptr <2 x float>, ptr addrspace(1) %back, i32 %l
  store <2 x float> %bk, ptr addrspace(1) %pb
  ret void
}

; 100 KiB of static LDS (more than gfx942's 64 KiB): out[l] = l + 1 round-tripped through the
; last KiB.
define amdgpu_kernel void @big_lds(ptr addrspace(1) %out) {
  %l = call i32 @llvm.amdgcn.workitem.id.x()
  %i = add i32 %l, 25344
  %pl = getelementptr i32, ptr addrspace(3) @lds_big, i32 %i
  %v = add i32 %l, 1
  store i32 %v, ptr addrspace(3) %pl
  call void @llvm.amdgcn.s.barrier()
  %r = load i32, ptr addrspace(3) %pl
  %po = getelementptr i32, ptr addrspace(1) %out, i32 %l
  store i32 %r, ptr addrspace(1) %po
  ret void
}
