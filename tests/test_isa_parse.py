"""The ISA parsers on small hand-written inputs (no compiler needed)."""

import pytest

from mla.analysis.isa import (SM90_LOOP_COLUMNS, AmdKernelStats, classify_amd, parse_amdgpu_asm, parse_ptx,
                              parse_ptxas_info, parse_sass, sass_functions, sass_hottest_loop, sass_smem_bytes,
                              sass_wgmma_smem_bytes, sm90_loop_row)

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
    # a spill is counted as scratch, never as a global load / store
    assert classify_amd("scratch_store_dwordx2") == ["instructions", "scratch"]
    assert classify_amd("scratch_load_dword") == ["instructions", "scratch"]


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
        /*0050*/                   QGMMA.64x32x32.F32.E4M3.E4M3 R24, gdesc[UR8], R24, gsb0 ;
        /*0060*/                   IGMMA.64x32x32.S32.S8.S8 R24, gdesc[UR8], R24 ;
        /*0070*/                   STSM.16.MT88.4 [R2], R4 ;
    """
    s = parse_sass(sass)
    assert (s["mma"], s["wgmma"], s["cp_async"], s["ex2"], s["stmatrix"], s["instructions"]) == (1, 3, 1, 1, 1, 7)
    info = parse_ptxas_info("ptxas info    : Used 168 registers, 16 bytes stack frame, 8 bytes spill stores, "
                            "8 bytes spill loads\nptxas info : 1024 bytes smem")
    assert info == dict(registers=168, smem_bytes=1024, spill_stores_bytes=8, spill_loads_bytes=8, stack_bytes=16)


# cuobjdump -sass layout: '/*addr*/ [guard] OPCODE operands ;' then the encoding, and a second
# encoding line. The loop is [0x0030, 0x0160] (its @!P0 BRA 0x30); the mbarrier retry block after
# EXIT jumps back into it (BRA 0x50): a wider backward range, but one holding EXIT, so not the loop.
SASS = """
	code for sm_90a
	.target	sm_90a

		Function : mla_decode_split_kernel
	.headerflags	@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                              /* 0x00000a00ff017b82 */
                                                                                        /* 0x000fe20000000800 */
        /*0010*/                   ISETP.GE.AND P0, PT, R0, R5, PT ;                   /* 0x000000050000720c */
                                                                                        /* 0x000fda0003f06270 */
        /*0020*/                   LDGSTS.E.BYPASS.128 [R2], desc[UR6][R4.64] ;        /* 0x0000000004027fae */
                                                                                        /* 0x000fe8000b981a06 */
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8+0x6000], R3 ;
        /*0040*/              @!P1 BRA 0x190 ;
        /*0050*/                   LDSM.16.M88.4 R8, [R20+UR4] ;
        /*0060*/                   LDSM.16.MT88.2 R12, [R21] ;
        /*0070*/                   LDS.128 R16, [R22] ;
        /*0080*/                   LDS R17, [R22+0x10] ;
        /*0090*/                   STS.64 [R23], R10 ;
        /*00a0*/                   STS.U16 [R23+0x8], R10 ;
        /*00b0*/              @!P0 LDGSTS.E.BYPASS.LTC128B.128 [R2+0x800], desc[UR6][R4.64+0x80] ;
        /*00c0*/                   LDGSTS.E.LTC128B [R2+0x900], desc[UR6][R6.64] ;
        /*00d0*/                   STSM.16.M88.4 [R24], R8 ;
        /*00e0*/                   HMMA.16816.F32.BF16 R24, R8, R12, R24 ;
        /*00f0*/                   WARPGROUP.ARRIVE ;
        /*0100*/                   HGMMA.64x32x16.F32.BF16 R40, gdesc[UR12], R40 ;
        /*0110*/                   QGMMA.64x32x32.F32.E4M3.E4M3 R56, R60, gdesc[UR16].tnspB, R56, gsb0 ;
        /*0120*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0130*/              @UP0 UTMALDG.2D [UR8], [UR4] ;
        /*0140*/                   MUFU.EX2 R3, R3 ;
        /*0150*/                   ISETP.GE.AND P0, PT, R0, R5, PT ;
        /*0160*/              @!P0 BRA 0x30 ;                                          /* 0xfffffffc00b08947 */
        /*0170*/                   STS.128 [R2], R8 ;
        /*0180*/                   EXIT ;
        /*0190*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR8+0x6000], R3 ;
        /*01a0*/              @!P1 BRA 0x190 ;
        /*01b0*/                   BRA 0x50 ;
        /*01c0*/                   BRA 0x1c0;
        ..........
"""


def test_sass_hottest_loop_and_its_shared_memory_bytes():
    loop = sass_hottest_loop(SASS)
    assert loop.function == "mla_decode_split_kernel"
    assert (loop.start_addr, loop.end_addr, loop.inner_loops) == (0x30, 0x160, 0)
    assert loop.other_loop_instructions == 2  # the try-wait retry after EXIT
    assert loop.mix["instructions"] == 20  # 0x30..0x160 step 16: not the prologue, not the STS.128 after it
    assert loop.alu_pipe == 1  # the ISETP at 0x150 (the prologue's ISETP is outside the loop)
    assert (loop.mix["mma"], loop.mix["wgmma"], loop.mix["ldmatrix"], loop.mix["stmatrix"]) == (1, 2, 2, 1)
    assert (loop.mix["ld_shared"], loop.mix["st_shared"], loop.mix["cp_async"], loop.mix["tma"]) == (2, 2, 2, 1)
    # per warp: LDSM .x4 512 + .x2 256, LDS.128 16x32, LDS 4x32
    assert loop.smem_read_bytes == 512 + 256 + 512 + 128
    # STS.64 8x32, STS.U16 2x32, LDGSTS .128 16x32 (LTC128B is a cache hint, not a width), LDGSTS 4x32, STSM .x4
    assert loop.smem_write_bytes == 256 + 64 + 512 + 128 + 512
    # HGMMA: A and B from shared memory (64 + 32 rows x 32 B); QGMMA: A from registers, B 32 rows x 32 B
    assert loop.wgmma_smem_bytes == (64 + 32) * 32 + 32 * 32
    t = loop.per_token(num_warps=8, block_n=64)
    assert t["warp_instr_per_token"] == 20 * 8 / 64
    assert t["smem_bytes_per_token"] == (1408 + 1472) * 8 / 64
    assert t["smem_read_bytes_per_token"] + t["smem_write_bytes_per_token"] == t["smem_bytes_per_token"]
    assert t["smem_wgmma_bytes_per_token"] == 4096 * 2 / 64  # two warpgroups, each reads its operands once
    assert t["wgmma_per_token"] == pytest.approx(2 * 2 / 64, abs=1e-3)
    assert t["mma_per_token"] == 8 / 64
    # the whole-kernel mix counts every instruction once, loop or not (the trap BRA too)
    assert parse_sass(SASS)["instructions"] == 29 and parse_sass(SASS)["st_shared"] == 3


def test_sm90_loop_row_columns():
    row = sm90_loop_row(sass_hottest_loop(SASS), 4, 32)
    assert list(row) == list(SM90_LOOP_COLUMNS)
    assert row["loop_addr"] == "0x0030-0x0160" and row["loop_sass_mma"] == 1 and row["warp_instr_per_token"] == 2.5
    blank = sm90_loop_row(None, 4, 32)
    assert blank["block_n"] == 32 and blank["warp_instr_per_token"] == "" and blank["loop_sass_mma"] == ""


NVDISASM = """
	.text.kern:
        /*0000*/                   MOV R0, RZ ;
.L_x_0:
        /*0010*/                   LDS.64 R2, [R0] ;
.L_x_1:
        /*0020*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0030*/              @P0 BRA `(.L_x_1) ;
        /*0040*/                   STS [R0], R2 ;
        /*0050*/              @P1 BRA `(.L_x_0) ;
        /*0060*/                   EXIT ;
.L_x_2:
        /*0070*/                   BRA `(.L_x_2);
"""


def test_sass_labels_and_nested_loops():
    (body,) = sass_functions(NVDISASM).values()
    assert body[3].operands == "0x20"  # the label became its address
    loop = sass_hottest_loop(NVDISASM)
    assert (loop.start_addr, loop.end_addr, loop.inner_loops, loop.other_loop_instructions) == (0x10, 0x50, 1, 0)
    assert (loop.smem_read_bytes, loop.smem_write_bytes) == (256, 128)


def test_sass_bad_input_is_an_error():
    with pytest.raises(ValueError, match="no SASS instructions"):
        sass_hottest_loop("Function : k\n")
    with pytest.raises(ValueError, match="no SASS function 'other'"):
        sass_hottest_loop(SASS, function="other")
    assert sass_hottest_loop("        /*0000*/   EXIT ;\n        /*0010*/   BRA 0x10;\n") is None  # trap only
    with pytest.raises(ValueError, match="LDSM shape"):
        sass_smem_bytes("LDSM.16.M816.4")
    with pytest.raises(ValueError, match="K=32 is not a dense HGMMA"):
        sass_wgmma_smem_bytes("HGMMA.64x32x32.F32.BF16", "R24, gdesc[UR4], R24")
    with pytest.raises(ValueError, match="operands"):
        sass_wgmma_smem_bytes("QGMMA.64x32x32.F32.E4M3.E4M3", "R24, R8, R24")
    with pytest.raises(ValueError, match="positive"):
        sass_hottest_loop(SASS).per_token(0, 32)
    assert sass_smem_bytes("LDSM.16.M88") == ("read", 128) and sass_smem_bytes("LDG.E.128") is None
    assert sass_wgmma_smem_bytes("HMMA.16816.F32.BF16", "R24, R8, R12, R24") == 0


def test_two_disjoint_loops_are_flagged():
    # a producer loop (3 instructions) and a consumer loop (4), as a warp-specialized kernel has
    lines = ["ISETP.NE.AND P0, PT, R0, RZ, PT", "@P0 BRA 0x50",
             "UTMALDG.2D [UR8], [UR4]", "IADD3 R1, R1, 0x1, RZ", "@P1 BRA 0x20",  # 0x20..0x40
             "LDS.128 R4, [R2]", "HMMA.16816.F32.BF16 R8, R4, R4, R8", "IADD3 R1, R1, 0x1, RZ",
             "@P1 BRA 0x50", "EXIT"]  # 0x50..0x80
    text = "".join(f"        /*{16 * i:04x}*/   {ln} ;\n" for i, ln in enumerate(lines))
    loop = sass_hottest_loop(text)
    assert (loop.start_addr, loop.mix["instructions"], loop.other_loop_instructions) == (0x50, 4, 3)
