; Test kernels exercising many gfx942 instruction classes (disassembler and executor fixtures).
; classes.hsaco is built from this file with the pinned toolchain's tools
; (B=$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin):
;   $B/llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -O3 -filetype=obj --amdhsa-code-object-version=5 classes.ll -o classes.o
;   $B/rust-lld -flavor gnu -shared classes.o -o classes.hsaco
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workitem.id.y()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare void @llvm.amdgcn.s.barrier()
declare i32 @llvm.amdgcn.readfirstlane.i32(i32)
declare i32 @llvm.amdgcn.readlane.i32(i32, i32)
declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)
declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64, i64, <4 x float>, i32, i32, i32)
declare <16 x float> @llvm.amdgcn.mfma.f32.32x32x16.bf8.fp8(i64, i64, <16 x float>, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16>, <4 x i16>, <4 x float>, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half>, <4 x half>, <4 x float>, i32, i32, i32)
declare float @llvm.amdgcn.cvt.f32.fp8(i32, i32)
declare i32 @llvm.amdgcn.cvt.pk.fp8.f32(float, float, i32, i1)
declare <2 x float> @llvm.amdgcn.cvt.pk.f32.bf8(i32, i1)
declare <4 x i32> @llvm.amdgcn.raw.buffer.load.v4i32(<4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.i32(i32, <4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.raw.buffer.load.i32(<4 x i32>, i32, i32, i32)
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.sqrt.f32(float)
declare float @llvm.exp2.f32(float)
declare i32 @llvm.umin.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.ctlz.i32(i32, i1)
declare i32 @llvm.cttz.i32(i32, i1)
declare i32 @llvm.bitreverse.i32(i32)
declare i32 @llvm.fshr.i32(i32, i32, i32)
declare float @llvm.floor.f32(float)
declare float @llvm.maxnum.f32(float, float)

define amdgpu_kernel void @int_ops(ptr addrspace(1) %out, ptr addrspace(1) %in, i32 %n, i32 %s) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %gid = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = shl i32 %gid, 8
  %i = add i32 %base, %tid
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %i
  %a = load i32, ptr addrspace(1) %p, align 4
  %b = mul i32 %a, %s
  %c = udiv i32 %b, 7
  %d = sdiv i32 %a, %n
  %e = lshr i32 %a, %s
  %f = ashr i32 %b, 3
  %g = xor i32 %e, %f
  %h = call i32 @llvm.umin.i32(i32 %g, i32 %c)
  %k = call i32 @llvm.smax.i32(i32 %h, i32 %d)
  %pc = call i32 @llvm.ctpop.i32(i32 %k)
  %lz = call i32 @llvm.ctlz.i32(i32 %k, i1 false)
  %tz = call i32 @llvm.cttz.i32(i32 %a, i1 false)
  %br = call i32 @llvm.bitreverse.i32(i32 %a)
  %fs = call i32 @llvm.fshr.i32(i32 %a, i32 %b, i32 %s)
  %m1 = add i32 %pc, %lz
  %m2 = add i32 %m1, %tz
  %m3 = xor i32 %m2, %br
  %m4 = add i32 %m3, %fs
  %w = zext i32 %a to i64
  %w2 = mul i64 %w, 1234567891011
  %w3 = lshr i64 %w2, 17
  %w4 = trunc i64 %w3 to i32
  %m5 = add i32 %m4, %w4
  %cmp = icmp sgt i32 %a, 100
  %sel = select i1 %cmp, i32 %m5, i32 %b
  %bf = lshr i32 %sel, 5
  %bf2 = and i32 %bf, 1023
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %i
  store i32 %bf2, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @float_ops(ptr addrspace(1) %out, ptr addrspace(1) %in, float %x) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %a = load float, ptr addrspace(1) %p, align 4
  %b = fmul float %a, %x
  %c = call float @llvm.fma.f32(float %a, float %b, float 1.0)
  %d = fdiv float %c, %a
  %e = call float @llvm.sqrt.f32(float %d)
  %f = call float @llvm.exp2.f32(float %e)
  %g = call float @llvm.floor.f32(float %f)
  %h = call float @llvm.maxnum.f32(float %g, float 0.5)
  %i = fptosi float %h to i32
  %j = sitofp i32 %i to float
  %k = fptrunc float %j to half
  %l = fadd half %k, 0xH3C00
  %m = fpext half %l to float
  %bb = fptrunc float %m to bfloat
  %bc = fpext bfloat %bb to float
  %cmp = fcmp olt float %bc, 3.0
  %r = select i1 %cmp, float %bc, float %b
  %u = fptoui float %r to i32
  %v = uitofp i32 %u to float
  %q = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %v, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @lds_barrier(ptr addrspace(1) %out, ptr addrspace(1) %in) #1 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %a = load i32, ptr addrspace(1) %p, align 4
  %l = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %tid
  store i32 %a, ptr addrspace(3) %l, align 4
  call void @llvm.amdgcn.s.barrier()
  %rev = sub i32 255, %tid
  %l2 = getelementptr inbounds [256 x i32], ptr addrspace(3) @lds, i32 0, i32 %rev
  %b = load i32, ptr addrspace(3) %l2, align 4
  %l3 = getelementptr inbounds i64, ptr addrspace(3) @lds64, i32 %tid
  %b64 = zext i32 %b to i64
  store i64 %b64, ptr addrspace(3) %l3, align 8
  call void @llvm.amdgcn.s.barrier()
  %nx = xor i32 %tid, 1
  %l4 = getelementptr inbounds i64, ptr addrspace(3) @lds64, i32 %nx
  %c = load i64, ptr addrspace(3) %l4, align 8
  %c32 = trunc i64 %c to i32
  %lv = getelementptr inbounds <4 x i32>, ptr addrspace(3) @lds128, i32 %tid
  %vec = insertelement <4 x i32> poison, i32 %c32, i32 0
  %vec1 = insertelement <4 x i32> %vec, i32 %b, i32 1
  %vec2 = insertelement <4 x i32> %vec1, i32 %a, i32 2
  %vec3 = insertelement <4 x i32> %vec2, i32 %tid, i32 3
  store <4 x i32> %vec3, ptr addrspace(3) %lv, align 16
  call void @llvm.amdgcn.s.barrier()
  %lv2 = getelementptr inbounds <4 x i32>, ptr addrspace(3) @lds128, i32 %nx
  %w = load <4 x i32>, ptr addrspace(3) %lv2, align 16
  %w0 = extractelement <4 x i32> %w, i32 0
  %w3 = extractelement <4 x i32> %w, i32 3
  %sum = add i32 %w0, %w3
  %old = atomicrmw add ptr addrspace(3) @lds, i32 %sum seq_cst
  %sum2 = add i32 %sum, %old
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %sum2, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @lane_ops(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %a = load i32, ptr addrspace(1) %p, align 4
  %f = call i32 @llvm.amdgcn.readfirstlane.i32(i32 %a)
  %r = call i32 @llvm.amdgcn.readlane.i32(i32 %a, i32 5)
  %idx = xor i32 %tid, 3
  %addr = shl i32 %idx, 2
  %bp = call i32 @llvm.amdgcn.ds.bpermute(i32 %addr, i32 %a)
  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)
  %mb = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)
  %s1 = add i32 %f, %r
  %s2 = add i32 %s1, %bp
  %s3 = add i32 %s2, %mb
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %s3, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @mfma_ops(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i64, ptr addrspace(1) %in, i32 %tid
  %a = load i64, ptr addrspace(1) %p, align 8
  %p2 = getelementptr inbounds i64, ptr addrspace(1) %p, i32 64
  %b = load i64, ptr addrspace(1) %p2, align 8
  %c = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64 %a, i64 %b, <4 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %c2 = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8(i64 %b, i64 %a, <4 x float> %c, i32 0, i32 0, i32 0)
  %d = call <16 x float> @llvm.amdgcn.mfma.f32.32x32x16.bf8.fp8(i64 %a, i64 %b, <16 x float> zeroinitializer, i32 0, i32 0, i32 0)
  %av = bitcast i64 %a to <4 x i16>
  %bv = bitcast i64 %b to <4 x i16>
  %e = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16bf16.1k(<4 x i16> %av, <4 x i16> %bv, <4 x float> %c2, i32 0, i32 0, i32 0)
  %ah = bitcast i64 %a to <4 x half>
  %bh = bitcast i64 %b to <4 x half>
  %g = call <4 x float> @llvm.amdgcn.mfma.f32.16x16x16f16(<4 x half> %ah, <4 x half> %bh, <4 x float> %e, i32 0, i32 0, i32 0)
  %d0 = extractelement <16 x float> %d, i32 0
  %d15 = extractelement <16 x float> %d, i32 15
  %g0 = extractelement <4 x float> %g, i32 0
  %g3 = extractelement <4 x float> %g, i32 3
  %s1 = fadd float %d0, %d15
  %s2 = fadd float %g0, %g3
  %s = fadd float %s1, %s2
  %q = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %s, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @fp8_cvt(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %a = load i32, ptr addrspace(1) %p, align 4
  %f0 = call float @llvm.amdgcn.cvt.f32.fp8(i32 %a, i32 0)
  %f2 = call float @llvm.amdgcn.cvt.f32.fp8(i32 %a, i32 2)
  %pk = call <2 x float> @llvm.amdgcn.cvt.pk.f32.bf8(i32 %a, i1 true)
  %x0 = extractelement <2 x float> %pk, i32 0
  %x1 = extractelement <2 x float> %pk, i32 1
  %s = fadd float %f0, %f2
  %t = fadd float %x0, %x1
  %r = call i32 @llvm.amdgcn.cvt.pk.fp8.f32(float %s, float %t, i32 0, i1 false)
  %r2 = call i32 @llvm.amdgcn.cvt.pk.fp8.f32(float %t, float %s, i32 %r, i1 true)
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %r2, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @buffer_ops(ptr addrspace(1) %out, <4 x i32> %rsrc, <4 x i32> %rsrc2) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %off = shl i32 %tid, 4
  %v = call <4 x i32> @llvm.amdgcn.raw.buffer.load.v4i32(<4 x i32> %rsrc, i32 %off, i32 0, i32 0)
  %off2 = shl i32 %tid, 2
  %w = call i32 @llvm.amdgcn.raw.buffer.load.i32(<4 x i32> %rsrc, i32 %off2, i32 16, i32 0)
  %v0 = extractelement <4 x i32> %v, i32 0
  %v3 = extractelement <4 x i32> %v, i32 3
  %s = add i32 %v0, %v3
  %s2 = add i32 %s, %w
  call void @llvm.amdgcn.raw.buffer.store.i32(i32 %s2, <4 x i32> %rsrc2, i32 %off2, i32 0, i32 0)
  ret void
}

define amdgpu_kernel void @loop_2d(ptr addrspace(1) %out, ptr addrspace(1) %in, i32 %n) #2 {
entry:
  %tx = call i32 @llvm.amdgcn.workitem.id.x()
  %ty = call i32 @llvm.amdgcn.workitem.id.y()
  %gy = call i32 @llvm.amdgcn.workgroup.id.y()
  %row = add i32 %ty, %gy
  %cmp0 = icmp sgt i32 %n, 0
  br i1 %cmp0, label %loop, label %done
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %idx = mul i32 %k, %row
  %idx2 = add i32 %idx, %tx
  %idx3 = and i32 %idx2, 1023
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i32 %idx3
  %x = load float, ptr addrspace(1) %p, align 4
  %acc1 = call float @llvm.fma.f32(float %x, float 2.0, float %acc)
  %k1 = add nuw nsw i32 %k, 1
  %c = icmp slt i32 %k1, %n
  br i1 %c, label %loop, label %done
done:
  %r = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %o = mul i32 %row, 64
  %o2 = add i32 %o, %tx
  %q = getelementptr inbounds float, ptr addrspace(1) %out, i32 %o2
  store float %r, ptr addrspace(1) %q, align 4
  ret void
}

define amdgpu_kernel void @lds_reverse_1024(ptr addrspace(1) %out, ptr addrspace(1) %in) #3 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %a = load i32, ptr addrspace(1) %p, align 4
  %l = getelementptr inbounds [1024 x i32], ptr addrspace(3) @lds1k, i32 0, i32 %tid
  store i32 %a, ptr addrspace(3) %l, align 4
  call void @llvm.amdgcn.s.barrier()
  %rev = sub i32 1023, %tid
  %l2 = getelementptr inbounds [1024 x i32], ptr addrspace(3) @lds1k, i32 0, i32 %rev
  %b = load i32, ptr addrspace(3) %l2, align 4
  %q = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %b, ptr addrspace(1) %q, align 4
  ret void
}

declare i32 @llvm.amdgcn.update.dpp.i32(i32, i32, i32, i32, i32, i1)
declare float @llvm.amdgcn.update.dpp.f32(float, float, i32, i32, i32, i1)

define amdgpu_kernel void @dpp_ops(ptr addrspace(1) %out, ptr addrspace(1) %in) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i32, ptr addrspace(1) %in, i32 %tid
  %a = load i32, ptr addrspace(1) %p, align 4
  %q1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 0, i32 %a, i32 27, i32 15, i32 15, i1 true)
  %r1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 273, i32 15, i32 15, i1 false)
  %r2 = call i32 @llvm.amdgcn.update.dpp.i32(i32 0, i32 %a, i32 258, i32 15, i32 15, i1 true)
  %r3 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 292, i32 15, i32 15, i1 false)
  %w1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 7, i32 %a, i32 312, i32 15, i32 15, i1 false)
  %m1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 320, i32 15, i32 15, i1 false)
  %m2 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 321, i32 15, i32 15, i1 false)
  %b1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 322, i32 10, i32 15, i1 false)
  %b2 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 323, i32 12, i32 15, i1 false)
  %k1 = call i32 @llvm.amdgcn.update.dpp.i32(i32 %a, i32 %a, i32 273, i32 15, i32 5, i1 false)
  %s1 = add i32 %q1, %r1
  %s2 = xor i32 %s1, %r2
  %s3 = add i32 %s2, %r3
  %s4 = xor i32 %s3, %w1
  %s5 = add i32 %s4, %m1
  %s6 = xor i32 %s5, %m2
  %s7 = add i32 %s6, %b1
  %s8 = xor i32 %s7, %b2
  %s9 = add i32 %s8, %k1
  %o = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %tid
  store i32 %s9, ptr addrspace(1) %o, align 4
  %f = bitcast i32 %a to float
  %fd = call float @llvm.amdgcn.update.dpp.f32(float 0.0, float %f, i32 177, i32 15, i32 15, i1 true)
  %fs = fadd float %fd, %f
  %o2 = getelementptr inbounds float, ptr addrspace(1) %out, i32 64
  %o3 = getelementptr inbounds float, ptr addrspace(1) %o2, i32 %tid
  store float %fs, ptr addrspace(1) %o3, align 4
  ret void
}

declare i32 @llvm.amdgcn.ds.swizzle(i32, i32)
declare i32 @llvm.amdgcn.wave.reduce.umax.i32(i32, i32)
declare <2 x half> @llvm.fma.v2f16(<2 x half>, <2 x half>, <2 x half>)
declare double @llvm.fma.f64(double, double, double)
declare double @llvm.sqrt.f64(double)
declare float @llvm.fabs.f32(float)
declare float @llvm.minnum.f32(float, float)

define amdgpu_kernel void @wide_ops(ptr addrspace(1) %out, ptr addrspace(1) %in, i64 %den, i32 %idx) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds i64, ptr addrspace(1) %in, i32 %tid
  %a = load i64, ptr addrspace(1) %p, align 8
  %q = udiv i64 %a, %den
  %r = srem i64 %a, 1000003
  %s = add i64 %q, %r
  %d = uitofp i64 %a to double
  %d2 = call double @llvm.fma.f64(double %d, double 0x3FF8000000000000, double -2.5)
  %d3 = fdiv double %d2, 3.0
  %d4 = call double @llvm.sqrt.f64(double %d3)
  %di = fptoui double %d4 to i64
  %t = add i64 %s, %di
  %v2 = bitcast i32 %tid to <2 x i16>
  %h = uitofp <2 x i16> %v2 to <2 x half>
  %h2 = call <2 x half> @llvm.fma.v2f16(<2 x half> %h, <2 x half> <half 0xH4000, half 0xH3800>, <2 x half> <half 0xH3C00, half 0xH3C00>)
  %h3 = fmul <2 x half> %h2, %h2
  %hb = bitcast <2 x half> %h3 to i32
  %hz = zext i32 %hb to i64
  %t2 = xor i64 %t, %hz
  %arr = alloca [16 x i32], align 4, addrspace(5)
  %lo = trunc i64 %t2 to i32
  %x0 = xor i32 %lo, 0
  %g0 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 0
  store i32 %x0, ptr addrspace(5) %g0, align 4
  %x1 = xor i32 %lo, 1
  %g1 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 1
  store i32 %x1, ptr addrspace(5) %g1, align 4
  %x2 = xor i32 %lo, 2
  %g2 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 2
  store i32 %x2, ptr addrspace(5) %g2, align 4
  %x3 = xor i32 %lo, 3
  %g3 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 3
  store i32 %x3, ptr addrspace(5) %g3, align 4
  %x4 = xor i32 %lo, 4
  %g4 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 4
  store i32 %x4, ptr addrspace(5) %g4, align 4
  %x5 = xor i32 %lo, 5
  %g5 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 5
  store i32 %x5, ptr addrspace(5) %g5, align 4
  %x6 = xor i32 %lo, 6
  %g6 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 6
  store i32 %x6, ptr addrspace(5) %g6, align 4
  %x7 = xor i32 %lo, 7
  %g7 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 7
  store i32 %x7, ptr addrspace(5) %g7, align 4
  %x8 = xor i32 %lo, 8
  %g8 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 8
  store i32 %x8, ptr addrspace(5) %g8, align 4
  %x9 = xor i32 %lo, 9
  %g9 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 9
  store i32 %x9, ptr addrspace(5) %g9, align 4
  %x10 = xor i32 %lo, 10
  %g10 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 10
  store i32 %x10, ptr addrspace(5) %g10, align 4
  %x11 = xor i32 %lo, 11
  %g11 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 11
  store i32 %x11, ptr addrspace(5) %g11, align 4
  %x12 = xor i32 %lo, 12
  %g12 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 12
  store i32 %x12, ptr addrspace(5) %g12, align 4
  %x13 = xor i32 %lo, 13
  %g13 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 13
  store i32 %x13, ptr addrspace(5) %g13, align 4
  %x14 = xor i32 %lo, 14
  %g14 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 14
  store i32 %x14, ptr addrspace(5) %g14, align 4
  %x15 = xor i32 %lo, 15
  %g15 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 15
  store i32 %x15, ptr addrspace(5) %g15, align 4
  %ri = add i32 %tid, %idx
  %im = and i32 %ri, 15
  %e2 = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 %im
  %rd = load i32, ptr addrspace(5) %e2, align 4
  %sw = call i32 @llvm.amdgcn.ds.swizzle(i32 %lo, i32 31)
  %mx = call i32 @llvm.amdgcn.wave.reduce.umax.i32(i32 %lo, i32 0)
  %z1 = add i32 %rd, %sw
  %z2 = xor i32 %z1, %mx
  %zz = zext i32 %z2 to i64
  %t3 = add i64 %t2, %zz
  %o = getelementptr inbounds i64, ptr addrspace(1) %out, i32 %tid
  store i64 %t3, ptr addrspace(1) %o, align 8
  %old = atomicrmw add ptr addrspace(1) %out, i64 1 syncscope("agent") monotonic
  %old32 = atomicrmw umax ptr addrspace(1) %in, i64 %t3 syncscope("agent") monotonic
  ret void
}

define amdgpu_kernel void @quant_like(ptr addrspace(1) %out, ptr addrspace(1) %in, ptr addrspace(1) %scale) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i32 %tid
  %x = load float, ptr addrspace(1) %p, align 4
  %ax = call float @llvm.fabs.f32(float %x)
  %bits = bitcast float %ax to i32
  %mb = call i32 @llvm.amdgcn.wave.reduce.umax.i32(i32 %bits, i32 1)
  %amax = bitcast i32 %mb to float
  %cl = call float @llvm.maxnum.f32(float %amax, float 0x3E80000000000000)
  %sc = fdiv float %cl, 240.0
  %inv = fdiv float 1.0, %sc
  %y = fmul float %x, %inv
  %yc = call float @llvm.minnum.f32(float %y, float 240.0)
  %yc2 = call float @llvm.maxnum.f32(float %yc, float -240.0)
  %pk = call i32 @llvm.amdgcn.cvt.pk.fp8.f32(float %yc2, float %yc2, i32 0, i1 false)
  %b = trunc i32 %pk to i8
  %o = getelementptr inbounds i8, ptr addrspace(1) %out, i32 %tid
  store i8 %b, ptr addrspace(1) %o, align 1
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %w, label %done
w:
  store float %sc, ptr addrspace(1) %scale, align 4
  br label %done
done:
  ret void
}

@lds1k = internal addrspace(3) global [1024 x i32] poison, align 16
@lds = internal addrspace(3) global [256 x i32] poison, align 16
@lds64 = internal addrspace(3) global [256 x i64] poison, align 16
@lds128 = internal addrspace(3) global [256 x <4 x i32>] poison, align 16

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
attributes #1 = { "amdgpu-flat-work-group-size"="256,256" }
attributes #2 = { "amdgpu-flat-work-group-size"="1,1024" }
attributes #3 = { "amdgpu-flat-work-group-size"="1024,1024" }
