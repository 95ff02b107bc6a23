; Fixture kernels with planted bugs for the emulator's checking modes (and their corrected
; twins). checks.hsaco is built from this file with the pinned toolchain's tools
; (B=$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin):
;   $B/llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -O3 -filetype=obj --amdhsa-code-object-version=5 checks.ll -o checks.o
;   $B/rust-lld -flavor gnu -shared checks.o -o checks.hsaco
; Inline assembly places instructions exactly (LLVM does not insert wait states or s_waitcnt
; inside an asm block).
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()

@lds = internal addrspace(3) global [256 x i32] undef, align 16

; mfma-hazard: a VALU read of a 4-pass MFMA result after 6 wait states (s_nop 5); gfx942 needs 7.
define amdgpu_kernel void @mfma_hazard_short(ptr addrspace(1) %out) #0 {
  %v = call i32 asm sideeffect "v_mov_b32 v4, 0\0Av_mov_b32 v5, 0\0Av_mov_b32 v6, 0\0Av_mov_b32 v7, 0\0As_nop 1\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], 0\0As_nop 5\0Av_mov_b32 $0, v0", "=v,~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7}"()
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; The same with s_nop 6 (7 wait states): clean.
define amdgpu_kernel void @mfma_hazard_ok(ptr addrspace(1) %out) #0 {
  %v = call i32 asm sideeffect "v_mov_b32 v4, 0\0Av_mov_b32 v5, 0\0Av_mov_b32 v6, 0\0Av_mov_b32 v7, 0\0As_nop 1\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], 0\0As_nop 6\0Av_mov_b32 $0, v0", "=v,~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7}"()
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; late-arrival: the loaded register is used without an s_waitcnt.
define amdgpu_kernel void @late_load_no_wait(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %v = call i32 asm sideeffect "global_load_dword $0, $1, off\0Av_add_u32 $0, $0, $0", "=&v,v"(ptr addrspace(1) %q)
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; The same with s_waitcnt vmcnt(0) before the use: clean, out[i] = 2 * in[i].
define amdgpu_kernel void @late_load_waited(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %q = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %v = call i32 asm sideeffect "global_load_dword $0, $1, off\0As_waitcnt vmcnt(0)\0Av_add_u32 $0, $0, $0", "=&v,v"(ptr addrspace(1) %q)
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; racecheck: 128 work-items (2 waves); each writes lds[tid] and reads lds[(tid + 64) % 128],
; the other wave's word, without a barrier in between.
define amdgpu_kernel void @lds_race(ptr addrspace(1) %out) #1 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %w = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %tid, ptr addrspace(3) %w, align 4
  %o = add i32 %tid, 64
  %o2 = and i32 %o, 127
  %r = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %o2
  %v = load i32, ptr addrspace(3) %r, align 4
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; The same with the barrier: clean, out[i] = (i + 64) % 128.
define amdgpu_kernel void @lds_exchange(ptr addrspace(1) %out) #1 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %w = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %tid, ptr addrspace(3) %w, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %o = add i32 %tid, 64
  %o2 = and i32 %o, 127
  %r = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %o2
  %v = load i32, ptr addrspace(3) %r, align 4
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; uninit-lds: one wave writes lds[tid] and reads lds[tid + 1]. LLVM issues the read first (the
; addresses differ), so lane 0 already reads byte 4 before anything is written.
define amdgpu_kernel void @lds_uninit(ptr addrspace(1) %out) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %w = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %tid, ptr addrspace(3) %w, align 4
  %o = add i32 %tid, 1
  %r = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %o
  %v = load i32, ptr addrspace(3) %r, align 4
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; Bank-conflict counters: 64 lanes each ds_read_b128 at lane * stride (bytes, a kernel argument)
; and write the first dword back, one wave.
define amdgpu_kernel void @lds_read128_stride(ptr addrspace(1) %out, i32 %stride) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %w = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %tid, ptr addrspace(3) %w, align 4
  %w2 = add i32 %tid, 64
  %wp2 = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %w2
  store i32 %w2, ptr addrspace(3) %wp2, align 4
  %w3 = add i32 %tid, 128
  %wp3 = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %w3
  store i32 %w3, ptr addrspace(3) %wp3, align 4
  %w4 = add i32 %tid, 192
  %wp4 = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %w4
  store i32 %w4, ptr addrspace(3) %wp4, align 4
  %off = mul i32 %tid, %stride
  %off7 = and i32 %off, 1008
  %base = ptrtoint ptr addrspace(3) @lds to i32
  %a = add i32 %base, %off7
  %ap = inttoptr i32 %a to ptr addrspace(3)
  %v = load <4 x i32>, ptr addrspace(3) %ap, align 16
  %x = extractelement <4 x i32> %v, i32 0
  %y = extractelement <4 x i32> %v, i32 3
  %s = add i32 %x, %y
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %s, ptr addrspace(1) %p, align 4
  ret void
}

; mfma-hazard: a second MFMA reads the first one's result as SrcA after 6 wait states (needs 7).
define amdgpu_kernel void @mfma_srca_hazard(ptr addrspace(1) %out) #0 {
  %v = call i32 asm sideeffect "v_mov_b32 v4, 0\0Av_mov_b32 v5, 0\0Av_mov_b32 v6, 0\0Av_mov_b32 v7, 0\0As_nop 1\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], 0\0As_nop 5\0Av_mfma_f32_16x16x32_fp8_fp8 v[8:11], v[0:1], v[6:7], 0\0As_nop 7\0Av_mov_b32 $0, v8", "=v,~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7},~{v8},~{v9},~{v10},~{v11}"()
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; Back-to-back accumulation into the same registers (SrcC = the previous result exactly): clean.
define amdgpu_kernel void @mfma_chain_ok(ptr addrspace(1) %out) #0 {
  %v = call i32 asm sideeffect "v_mov_b32 v4, 0\0Av_mov_b32 v5, 0\0Av_mov_b32 v6, 0\0Av_mov_b32 v7, 0\0As_nop 1\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], 0\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[0:3]\0As_nop 7\0Av_mov_b32 $0, v0", "=v,~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7}"()
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; mfma-hazard: a VALU write of a register the MFMA still reads as SrcC right after it (a 4-pass
; XDL MFMA needs 3 wait states before such a write).
define amdgpu_kernel void @mfma_srcc_war(ptr addrspace(1) %out) #0 {
  %v = call i32 asm sideeffect "v_mov_b32 v4, 0\0Av_mov_b32 v5, 0\0Av_mov_b32 v6, 0\0Av_mov_b32 v7, 0\0Av_mov_b32 v8, 0\0Av_mov_b32 v9, 0\0Av_mov_b32 v10, 0\0Av_mov_b32 v11, 0\0As_nop 1\0Av_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[4:5], v[6:7], v[8:11]\0Av_mov_b32 v8, 1\0As_nop 7\0Av_mov_b32 $0, v0", "=v,~{v0},~{v1},~{v2},~{v3},~{v4},~{v5},~{v6},~{v7},~{v8},~{v9},~{v10},~{v11}"()
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

; late-arrival with two LDS reads in flight: lgkmcnt(1) guarantees the first (LDS returns in
; order) but not the second. @lgkm_partial_first uses the first: clean; @lgkm_partial_second
; uses the second: a finding. Launched with 512 bytes of dynamic LDS.
define amdgpu_kernel void @lgkm_partial_first(ptr addrspace(1) %out) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %a = shl i32 %tid, 3
  %v = call i32 asm sideeffect "ds_write_b64 $1, v[0:1]\0As_waitcnt lgkmcnt(0)\0Ads_read_b32 v2, $1\0Ads_read_b32 v3, $1 offset:4\0As_waitcnt lgkmcnt(1)\0Av_mov_b32 $0, v2\0As_waitcnt lgkmcnt(0)", "=v,v,~{v0},~{v1},~{v2},~{v3}"(i32 %a)
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

define amdgpu_kernel void @lgkm_partial_second(ptr addrspace(1) %out) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %a = shl i32 %tid, 3
  %v = call i32 asm sideeffect "ds_write_b64 $1, v[0:1]\0As_waitcnt lgkmcnt(0)\0Ads_read_b32 v2, $1\0Ads_read_b32 v3, $1 offset:4\0As_waitcnt lgkmcnt(1)\0Av_mov_b32 $0, v3\0As_waitcnt lgkmcnt(0)", "=v,v,~{v0},~{v1},~{v2},~{v3}"(i32 %a)
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %v, ptr addrspace(1) %p, align 4
  ret void
}

attributes #0 = { nounwind "amdgpu-flat-work-group-size"="64,64" }
attributes #1 = { nounwind "amdgpu-flat-work-group-size"="128,128" }
