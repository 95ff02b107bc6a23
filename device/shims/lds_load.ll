; IR shim for the direct-to-LDS buffer load (rustc rejects intrinsics with `ptr addrspace(3)`
; arguments; shared/reference/toolchain.md §4). Linked into the device module by host/build.rs.
;
; fp8gemm_buffer_load_lds_b32(rsrc, lds, voffset, soffset): `buffer_load_dword ... offen lds`.
; Each active lane reads the dword at rsrc + voffset + soffset (0 when voffset is past the
; resource's num_records: the raw buffer range check) and writes it to LDS byte address
; M0 + 4 * lane, where M0 = `lds` (a flat pointer into the launch's dynamic LDS; the cast back
; to address space 3 takes its low 32 bits). `lds` must be wave-uniform. The LDS write
; completes with vmcnt (not lgkmcnt).
target datalayout = "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
target triple = "amdgcn-amd-amdhsa"

declare void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32>, ptr addrspace(3) nocapture, i32 immarg, i32, i32, i32 immarg, i32 immarg)

define linkonce_odr hidden void @fp8gemm_buffer_load_lds_b32(<4 x i32> %rsrc, ptr %lds, i32 %voffset, i32 %soffset) #0 {
  %l = addrspacecast ptr %lds to ptr addrspace(3)
  call void @llvm.amdgcn.raw.buffer.load.lds(<4 x i32> %rsrc, ptr addrspace(3) %l, i32 4, i32 %voffset, i32 %soffset, i32 0, i32 0)
  ret void
}

attributes #0 = { alwaysinline nounwind }
