"""The ISA parsers on small hand-written inputs (no compiler needed)."""

import pytest

from mla.analysis.isa import (AmdKernelStats, classify_amd, parse_amdgpu_asm, parse_ptx, parse_ptxas_info,
                              parse_sass)

ASM = """\
	.text
	.globl	kern
	.type	kern,@function
kern:
	s_load_dwordx2 s[0:1], s[4:5], 0x0
	v_mov_b32 v0, 0
.LBB0_1:
	global_load_dwordx4 v[4:7], v[0:1], off
	s_waitcnt vmcnt(0)
	v_mfma_scale_f32_16x16x128_f8f6f4 v[0:3], v[4:7], v[8:11], v[0:3], v12, v13 op_sel_hi:[0,0,0] cbsz:4 blgp:4
	; iglp_opt mask(0x00000001)
	ds_read_b64_tr_b8 v[14:15], v16
	v_mfma_f32_16x16x32_fp8_fp8 v[0:3], v[14:15], v[14:15], v[0:3]
	v_max_f32_dpp v1, v1, v1 row_mirror row_mask:0xf bank_mask:0xf
	s_barrier
	s_cbranch_scc1 .LBB0_1
	ds_write_b128 v0, v[4:7]
	s_endpgm
.Lfunc_end0:
	.size	kern, .Lfunc_end0-kern
; Kernel info:
; codeLenInByte = 120
; TotalNumSgprs: 20
; NumVgprs: 17
; NumAgprs: 4
; TotalNumVgprs: 24
; ScratchSize: 0
; LDSByteSize: 40960 bytes/workgroup (compile time only)
; Occupancy: 8
	.amdgpu_metadata
amdhsa.kernels:
  - .agpr_count:     4
    .group_segment_fixed_size: 40960
    .max_flat_workgroup_size: 256
    .name:           kern
    .private_segment_fixed_size: 0
    .sgpr_spill_count: 0
    .vgpr_spill_count: 3
amdhsa.target:   amdgcn-amd-amdhsa--gfx950
	.end_amdgpu_metadata
"""


def test_amd_resources_and_mix():
    (k,) = parse_amdgpu_asm(ASM)
    assert (k.kernel, k.vgpr, k.agpr, k.vgpr_total, k.sgpr) == ("kern", 17, 4, 24, 20)
    assert (k.lds_bytes, k.scratch_bytes, k.vgpr_spill, k.workgroup_size, k.code_bytes) == (40960, 0, 3, 256, 120)
    assert k.mix["mfma"] == 2 and k.mix["mfma_scaled"] == 1 and k.mix["mfma_fp8"] == 1
    assert k.mix["ds_read_tr"] == 1 and k.mix["ds_read"] == 1 and k.mix["ds_write"] == 1
    assert k.mix["global_load"] == 1 and k.mix["s_waitcnt"] == 1 and k.mix["s_barrier"] == 1
    assert k.mix["dpp"] == 1 and k.mix["sched_hint"] == 1
    # the loop is .LBB0_1 .. s_cbranch: the ds_write after it is outside
    assert k.loop_mix["mfma"] == 2 and k.loop_mix["ds_write"] == 0
    assert k.mfma_kinds == {"v_mfma_scale_f32_16x16x128_f8f6f4": 1, "v_mfma_f32_16x16x32_fp8_fp8": 1}


def test_occupancy_breakdown():
    # 40 KB LDS per 4-wave workgroup: 4 workgroups per 160 KB CU = 16 waves = 4 per SIMD
    k = AmdKernelStats("k", vgpr_total=120, lds_bytes=40960, workgroup_size=256)
    assert k.occupancy() == dict(waves_by_vgpr=4, waves_by_lds=4, waves_per_simd=4, limiter="vgpr=lds")
    k = AmdKernelStats("k", vgpr_total=130, lds_bytes=0, workgroup_size=256)  # 136 allocated -> 3
    assert k.occupancy()["waves_per_simd"] == 3 and k.occupancy()["limiter"] == "vgpr"
    k = AmdKernelStats("k", vgpr_total=24, lds_bytes=0, workgroup_size=64)
    assert k.occupancy()["limiter"] == "max"


def test_no_kernel_is_an_error():
    with pytest.raises(ValueError, match="no kernels"):
        parse_amdgpu_asm("\t.text\n")


def test_classify_edge_cases():
    assert "mfma_bf16_f16" in classify_amd("v_mfma_f32_32x32x16_bf16")
    assert "ds_read_tr" not in classify_amd("ds_read_b128")
    assert classify_amd("s_nop") == ["instructions"]


def test_nvidia_parsers():
    ptx = """
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%r1}, {%r2}, {%r3}, {%r1};
    wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 1;
    @%p1 cp.async.cg.shared.global [%r4], [%rd5], 16;
    ex2.approx.f32 %f2, %f3;
    bar.sync 0;
    """
    m = parse_ptx(ptx)
    assert (m["mma"], m["wgmma"], m["cp_async"], m["ex2"], m["bar_sync"]) == (1, 1, 1, 1, 1)
    sass = """
        /*0010*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
        /*0020*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0030*/              @!P0 LDGSTS.E.BYPASS.128 [R2], desc[UR6][R4.64] ;
        /*0040*/                   MUFU.EX2 R3, R3 ;
    """
    s = parse_sass(sass)
    assert (s["mma"], s["wgmma"], s["cp_async"], s["ex2"], s["instructions"]) == (1, 1, 1, 1, 4)
    info = parse_ptxas_info("ptxas info    : Used 168 registers, 16 bytes stack frame, 8 bytes spill stores, "
                            "8 bytes spill loads\nptxas info : 1024 bytes smem")
    assert info == dict(registers=168, smem_bytes=1024, spill_stores_bytes=8, spill_loads_bytes=8, stack_bytes=16)
