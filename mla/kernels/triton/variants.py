"""Named kernel variants (llm.c style): each is one unit with a one-line "what changed", chosen by
name through :data:`VARIANTS` and run by the one launcher in :mod:`mla.kernels.triton.launch`.

A variant fixes the compile-time shape of the program (BLOCK_N, warps, pipeline stages, heads per
program); ``num_splits`` is chosen per shape by the split heuristic unless given explicitly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class Variant:
    name: str
    block_n: int  # KV tokens per tile
    num_warps: int
    num_stages: int  # software-pipeline depth of the KV loads (cp.async ring on sm90)
    heads_per_prog: int  # query heads per program (M = q_seq_len x this); 0 = all heads
    what_changed: str
    mx_decode: int = 0  # MXFP4 decode: 0 fp16-bits x fp32 scale, 1 integer exponent -> bf16 bits,
    #                     2 int32 words -> e4m3 bytes -> cvt f16x2 pairs x fp16 scale (needs dot_f16),
    #                     3 = 2 with the pairs returned as f16x2 registers; for fp8 KV, >= 2 = int32 words
    #                     of e4m3 converted by PTX pairs, 4 = that asm marked pure
    dot_f16: bool = False  # fp16 dot operands (fp8 KV only)
    prefetch: bool = False  # register double buffer of the raw KV tile (for fp8 / MXFP4 decode paths)
    tile_reduce: bool = False  # split reduce: all splits of a (query, head, d-block) as one tile (no split loop)
    # generation 2 (mla/kernels/triton/swapab.py): QK^T swap-AB on fp8 tensor cores, fp8 / MXFP4 KV only
    family: str = "split"  # "split" = generation 1 (kernels.py), "swapab" = generation 2, "gluon" = generation 3
    q_terms: int = 2  # swapab: fp8 terms of Q (hi + lo = 2; 1 = a single e4m3 term)
    pv_swap: bool = False  # swapab: PV as acc^T = V^T P^T (warpgroup MMA, M = 512) instead of P V (mma.sync)
    pv_f16: bool = True  # swapab: P and V in fp16 (10 mantissa bits for P) instead of bf16
    v_path: int = 0  # swapab, fp8 KV: 0 compiler-placed V conversion; 2 the tile as int32 words (K = their bytes)
    lat_chunks: int = 1  # swapab: latent dims cut into 1 / 2 / 4 chunks (own loads, QK partials, PV accumulators)
    qk_f16: bool = False  # swapab: QK^T on fp16 (Q one fp16 term, K = the fp16 V tile) instead of e4m3
    fused_reduce: bool = False  # split reduce inside the split kernel (last program per group merges): 1 launch
    balanced: bool = False  # work list: equal-token splits across batch elements (needs fused_reduce)
    partial_bf16: bool = False  # partial O stored in bf16 (half the partial bytes; LSE stays fp32)
    gluon_qk_pairs: bool = False  # gluon: Q hi + lo as one N = 2R operand, columns interleaved (K read once)
    gluon_pv_reg: bool = False  # gluon: V^T as register A operands read once by 16-byte loads (no fp16 V tile)
    gluon_epi_natural: bool = False  # gluon, with gluon_pv_reg: output rows re-ordered in registers, whole-row stores
    gluon_v_slots: int = 8  # gluon: fp16 V in smem as the whole tile (8 slices of 64 dims) or a ring of 2 / 4
    gluon_kv: str = "fp8"  # gluon: the KV format the kernel is built for ("mxfp4": packed ring + table decode)
    gluon_row_perm: bool = False  # gluon: tile rows hold tokens in a bit-swapped order (bank-conflict-free V loads)
    gluon_lazy_sum: bool = False  # gluon: softmax sums kept per thread, reduced across warps once after the loop
    gluon_lazy_rescale: bool = False  # gluon: output rescaled only when the running max grows by > 2**8
    gluon_pv_fp8: bool = False  # gluon: PV on e4m3 QGMMA, V^T registers unconverted, P as e4m3 hi + lo
    gluon_qk_cat: bool = False  # gluon: QK_PAIRS' Q operand as [hi; lo] (the accumulator halves need no shuffles)
    gluon_pv_promote: int = 0  # gluon (PV_FP8): each tile's PV in a fresh MMA accumulator, summed in fp32 (2: serial)
    gluon_v_cf: bool = False  # gluon (PV_FP8): V^T fragment loads with bank-conflict-free lanes
    gluon_cp_rows: bool = False  # gluon (fp8): the tile's cp.async by 8 consecutive rows per quarter warp
    gluon_mx_own: bool = False  # gluon (MXFP4): the packed tile copied in the decode's layout (shared address math)
    gluon_warpgroups: int = 1  # gluon: 2 = two warpgroups (num_warps 8) split QK's rows and PV's output dims
    gluon_ws: int = 0  # gluon: warp-specialized, 2 consumers fed by decoder partitions (MXFP4) or a TMA loader (fp8,
    #                    v149+) through a ring of N K tiles
    gluon_ws_consumer_regs: int = 232  # gluon_ws: registers per thread of the worker consumer (the default gets the rest)
    gluon_ws_decoder_regs: int = 40  # gluon_ws: registers per thread of the decoder partition
    gluon_ws_decoders: int = 1  # gluon_ws: decoder partitions (2: each decodes half of every tile)
    gluon_ws_halves: bool = False  # gluon_ws (2 decoders): each copies its half with its scales by cp.async, decodes it in one op
    gluon_ws_tma: bool = False  # gluon_ws_halves: the packed bytes by TMA (one thread, the entry's mbarrier), scales by cp.async
    gluon_ws_loader: bool = False  # gluon_ws_tma: a 1-warp loader partition issues every copy; the decoders only decode
    gluon_mx_lut2: bool = False  # gluon (MXFP4): each block's two table words by one PTX block (_MX_LUT2_PTX, same words)
    gluon_v_ldsm: bool = False  # gluon_pv_fp8 + gluon_v_cf: V^T's fragments by ldmatrix.trans on byte pairs + 1 PRMT a register
    gluon_epi_direct: bool = False  # gluon_ws + gluon_v_ldsm: partials stored from the accumulator registers (no conversion)
    gluon_early_tma: bool = False  # gluon_epi_direct: the first tiles' TMA loads issued before the Q prologue
    gluon_kv_first: bool = False  # gluon (one warpgroup): the KV range and the first tiles' copies pinned before Q's loads
    gluon_uniform_ranges: bool = False  # gluon (one warpgroup): a uniform batch's Q / KV ranges from the launch's arguments, no indptr loads
    gluon_scale_first: bool = False  # gluon (one warpgroup, fp8): the per-tensor KV scale loaded at the program's start
    gluon_q_first: bool = False  # gluon (one warpgroup): Q's loads before the first tiles' copies, its quantization after
    gluon_cp_one: bool = False  # gluon (one warpgroup, fp8): a tile as two copies (latent, rope): no barriers between
    gluon_issue_late: bool = False  # gluon (one warpgroup): the next tile's cp.async below this tile's proxy fence
    gluon_kv_tma: bool = False  # gluon (one warpgroup, fp8): the tiles by TMA on a barrier a stage instead of cp.async
    gluon_ws_pair_merge: bool = False  # gluon_epi_direct: consumer 0 merges consumer 1's state: one partial a program
    gluon_maxnreg: int = 0  # gluon: register cap per thread (the launch option maxnreg; 0 = the compiler's choice)
    coop_merge: bool = False  # gluon (one warpgroup): the splits merge the output together, one launch (cooperative grid)
    # gluon (v154+, gluon_steal.py, steal_protocol.py): owners claim their range from the front, helper programs take
    # pieces from the back of the range with the most left; only stolen ranges write (and merge) partials
    gluon_steal: bool = False
    gluon_steal_chunk: int = 4  # tiles an owner claims at a time (one claim ahead: its latency hides behind them)
    gluon_steal_slots: int = 8  # pieces a range may lose (its partial slots past the owner's)
    gluon_steal_max: int = 8  # tiles a helper takes at most (and at most half of what is unclaimed)
    gluon_steal_helpers: float = 1.0  # helper programs per owner (the grid's extra programs; idle ones exit at once)
    gluon_steal_wait: bool = False  # helpers wait until some owner has ended (none beside the owners from the start)
    gluon_steal_rotate: bool = False  # helpers that tie on a victim spread by their own index (no race for one word)

    @property
    def kv_formats(self) -> tuple[str, ...]:
        """The KV formats this variant takes (generation 2 is an fp8-QK design: quantized KV only)."""
        if self.family == "gluon":
            return (self.gluon_kv,)
        return ("fp8", "mxfp4") if self.family == "swapab" else ("bf16", "fp8", "mxfp4")

    def as_dict(self) -> dict:
        return asdict(self)


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("v1_n32_w4_s2", 32, 4, 2, 0, "baseline: all heads per program, 32-token tiles, 2-stage pipeline"),
    Variant("v2_n64_w4_s2", 64, 4, 2, 0, "64-token tiles: twice the bytes in flight per load, half the loop trips"),
    Variant("v3_n64_w8_s2", 64, 8, 2, 0, "8 warps: more threads to issue loads and the MXFP4 decode ALU work"),
    Variant("v4_n32_w4_s3", 32, 4, 3, 0, "3-stage pipeline on 32-token tiles: deeper prefetch, same smem as v2"),
    Variant("v5_n16_w4_s4", 16, 4, 4, 0, "16-token tiles, 4 stages: small smem per stage, more CTAs per SM"),
    Variant("v6_n32_w8_s2_h16", 32, 8, 2, 16, "16 heads per program: splits 32-head / 4-query M over two programs"),
    Variant("v7_n32_w8_s1", 32, 8, 1, 0, "8 warps on 32-token tiles: half the registers per thread of v1"),
    Variant("v8_n16_w4_s1", 16, 4, 1, 0, "16-token tiles: fewest registers, most resident CTAs per SM"),
    Variant("v9_n64_w4_s2_intmx", 64, 4, 2, 0, "v2 + MXFP4 decoded by integer exponent arithmetic (no cvt/mul)",
            mx_decode=1),
    Variant("v10_n32_w4_s2_intmx", 32, 4, 2, 0, "v1 + integer-exponent MXFP4 decode", mx_decode=1),
    Variant("v11_n64_w4_s2_f16", 64, 4, 2, 0, "v2 + fp16 dots for fp8 KV (one cvt per pair of e4m3)",
            dot_f16=True),
    Variant("v12_n32_w8_s2_f16", 32, 8, 2, 0, "v7 + fp16 dots for fp8 KV, 2 stages", dot_f16=True),
    Variant("v13_n64_w8_s2_f16", 64, 8, 2, 0, "v3 + fp16 dots for fp8 KV", dot_f16=True),
    # not yet measured on a GPU (added after the 2026-11-30 probe showed fp8/MXFP4 loads unpipelined)
    Variant("v14_n32_w4_s2_pf", 32, 4, 2, 0, "v1 + register prefetch of the next raw tile during decode",
            prefetch=True),
    Variant("v15_n64_w8_s2_f16_pf", 64, 8, 2, 0, "v13 + register prefetch of the next raw fp8 tile",
            dot_f16=True, prefetch=True),
    Variant("v16_n64_w8_s2_pf", 64, 8, 2, 0, "v3 + register prefetch of the next raw tile", prefetch=True),
    # 2026-11-30 (second pass): MXFP4 decoded a 32-bit word (8 nibbles) at a time
    Variant("v17_n32_w4_s2_mxw", 32, 4, 2, 0, "v1 + MXFP4 word decode: shifts -> e4m3 bytes, cvt f16x2 pairs, "
            "fp16x2 scale multiply, fp16 dots", mx_decode=2, dot_f16=True),
    Variant("v18_n64_w8_s2_mxw", 64, 8, 2, 0, "v17 on 64-token tiles with 8 warps", mx_decode=2, dot_f16=True),
    Variant("v20_n32_w4_s2_mxp", 32, 4, 2, 0, "v17 + the asm returns f16x2 pairs of adjacent elements (no 16-bit "
            "repacking after it)", mx_decode=3, dot_f16=True),
    Variant("v21_n64_w8_s2_mxp", 64, 8, 2, 0, "v20 on 64-token tiles with 8 warps", mx_decode=3, dot_f16=True),
    Variant("v22_n64_w8_s2_f16w", 64, 8, 2, 0, "v13 + fp8 read as int32 words, cvt e4m3x2 pairs by inline PTX "
            "(impure: decoded once, not per dot)", mx_decode=2, dot_f16=True),
    Variant("v23_n32_w4_s2_f16w", 32, 4, 2, 0, "v22 on 32-token tiles with 4 warps", mx_decode=2, dot_f16=True),
    Variant("v24_n32_w4_s3_f16w", 32, 4, 3, 0, "v23 with a 3-stage cp.async ring", mx_decode=2, dot_f16=True),
    Variant("v25_n64_w4_s2_f16w", 64, 4, 2, 0, "v22 with 4 warps", mx_decode=2, dot_f16=True),
    Variant("v27_n32_w4_s3_mxw", 32, 4, 3, 0, "v17 with a 3-stage cp.async ring", mx_decode=2, dot_f16=True),
    Variant("v28_n32_w4_s3_tr", 32, 4, 3, 0, "v4 + tile reduce: every split's partial in one load, grid over "
            "(query, head, d-block)", tile_reduce=True),
    Variant("v29_n32_w4_s2_f16w_tr", 32, 4, 2, 0, "v23 + tile reduce", mx_decode=2, dot_f16=True, tile_reduce=True),
    Variant("v30_n32_w4_s2_mxw_tr", 32, 4, 2, 0, "v17 + tile reduce", mx_decode=2, dot_f16=True, tile_reduce=True),
    Variant("v31_n64_w4_s2_mxw", 64, 4, 2, 0, "v17 on 64-token tiles: the per-iteration Q operand reload "
            "(16 x 576 from smem) spread over twice the tokens", mx_decode=2, dot_f16=True),
    Variant("v32_n32_w4_s2_f16wp", 32, 4, 2, 0, "v23 with the pair-convert asm pure: re-run per dot instead of a "
            "second smem copy of the tile (fp8 only)", mx_decode=4, dot_f16=True),
    Variant("v33_n64_w4_s2_f16wp", 64, 4, 2, 0, "v32 on 64-token tiles", mx_decode=4, dot_f16=True),
    Variant("v34_n32_w4_s3_f16wp", 32, 4, 3, 0, "v32 with a 3-stage cp.async ring", mx_decode=4, dot_f16=True),
    Variant("v35_n32_w4_s2_f16wp_tr", 32, 4, 2, 0, "v32 + tile reduce", mx_decode=4, dot_f16=True, tile_reduce=True),
    # not yet measured: the split kernels measured fastest at bs256/bs32-kv8192 (v34, v27) + tile reduce
    Variant("v36_n32_w4_s3_f16wp_tr", 32, 4, 3, 0, "v34 + tile reduce", mx_decode=4, dot_f16=True, tile_reduce=True),
    Variant("v37_n32_w4_s3_mxw_tr", 32, 4, 3, 0, "v27 + tile reduce", mx_decode=2, dot_f16=True, tile_reduce=True),
    # generation 2, 2026-12-01: swap-AB QK^T (tokens = M of a warpgroup MMA, fp8 Q as hi + lo terms)
    Variant("v38_n64_w4_s3_sab", 64, 4, 3, 0, "swap-AB: S^T = K Qcat^T on e4m3 warpgroup MMA straight from the "
            "smem tile (Q hi + lo, built once), PV on mma.sync in fp16, V converted once", family="swapab",
            tile_reduce=True),
    Variant("v39_n64_w4_s2_sab", 64, 4, 2, 0, "v38 with 2 stages", family="swapab", tile_reduce=True),
    Variant("v40_n64_w4_s4_sab", 64, 4, 4, 0, "v38 with 4 stages", family="swapab", tile_reduce=True),
    Variant("v41_n64_w8_s3_sab", 64, 8, 3, 0, "v38 with 8 warps (half the accumulator registers per thread)",
            family="swapab", tile_reduce=True),
    Variant("v42_n64_w4_s3_sab_pvs", 64, 4, 3, 0, "v38 + PV swapped too: acc^T = V^T P^T on warpgroup MMA (M = 512)",
            family="swapab", pv_swap=True, tile_reduce=True),
    Variant("v43_n64_w8_s3_sab_pvs", 64, 8, 3, 0, "v42 with 8 warps", family="swapab", pv_swap=True,
            tile_reduce=True),
    Variant("v44_n64_w4_s3_sab_q1", 64, 4, 3, 0, "v38 with Q as one e4m3 term (accuracy ablation: half the QK MMA)",
            family="swapab", q_terms=1, tile_reduce=True),
    Variant("v45_n128_w8_s3_sab", 128, 8, 3, 0, "v41 on 128-token tiles", family="swapab", tile_reduce=True),
    Variant("v46_n64_w4_s3_sab_bf", 64, 4, 3, 0, "v38 with P and V in bf16 (accuracy / speed ablation of fp16 PV)",
            family="swapab", pv_f16=False, tile_reduce=True),
    Variant("v47_n64_w4_s3_sab_pvs_w", 64, 4, 3, 0, "v49 + PV swapped (acc^T = V^T P^T on warpgroup MMA)",
            family="swapab", pv_swap=True, v_path=2, tile_reduce=True),
    Variant("v48_n64_w4_s2_sab_w", 64, 4, 2, 0, "v49 with 2 stages (less smem per CTA)", family="swapab", v_path=2,
            tile_reduce=True),
    Variant("v49_n64_w4_s3_sab_w", 64, 4, 3, 0, "v38 with the tile loaded as int32 words: K = their bytes as e4m3, "
            "V = the impure pair-convert asm, so V is converted once in the loaded layout",
            family="swapab", v_path=2, tile_reduce=True),
    # generation 2b, 2026-12-01: the latent dims in chunks, so one chunk of V is live at a time (registers,
    # occupancy); numbers v70+ (v50-v69 are the fused-reduce / balanced family)
    Variant("v70_n64_w4_s3_sab_c4", 64, 4, 3, 0, "v38 with the latent dims in 4 chunks of 128 (own loads, QK partial "
            "dots, PV accumulators)", family="swapab", lat_chunks=4, tile_reduce=True),
    Variant("v71_n64_w4_s3_sab_pvs_c4", 64, 4, 3, 0, "v42 with 4 latent chunks", family="swapab", pv_swap=True,
            lat_chunks=4, tile_reduce=True),
    Variant("v72_n64_w4_s3_sab_w_c4", 64, 4, 3, 0, "v49 with 4 latent chunks", family="swapab", v_path=2, lat_chunks=4,
            tile_reduce=True),
    Variant("v73_n64_w4_s3_sab_pvs_w_c4", 64, 4, 3, 0, "v47 with 4 latent chunks", family="swapab", pv_swap=True,
            v_path=2, lat_chunks=4, tile_reduce=True),
    Variant("v74_n64_w4_s2_sab_pvs_c4", 64, 4, 2, 0, "v71 with 2 stages", family="swapab", pv_swap=True,
            lat_chunks=4, tile_reduce=True),
    Variant("v75_n64_w4_s3_sab_pvs_c2", 64, 4, 3, 0, "v42 with 2 latent chunks of 256", family="swapab",
            pv_swap=True, lat_chunks=2, tile_reduce=True),
    Variant("v76_n64_w8_s3_sab_pvs_c4", 64, 8, 3, 0, "v71 with 8 warps", family="swapab", pv_swap=True,
            lat_chunks=4, tile_reduce=True),
    Variant("v77_n64_w4_s3_sab_pvs_w_c2", 64, 4, 3, 0, "v75 with the tile as int32 words (v49's V path)",
            family="swapab", pv_swap=True, v_path=2, lat_chunks=2, tile_reduce=True),
    Variant("v78_n128_w8_s2_sab_pvs_c2", 128, 8, 2, 0, "v75 on 128-token tiles, 8 warps (two warpgroups), 2 stages",
            family="swapab", pv_swap=True, lat_chunks=2, tile_reduce=True),
    Variant("v79_n128_w8_s3_sab_pvs_c4", 128, 8, 3, 0, "v71 on 128-token tiles, 8 warps, 3 stages", family="swapab",
            pv_swap=True, lat_chunks=4, tile_reduce=True),
    Variant("v80_n64_w4_s3_sab_pvs_c2_h", 64, 4, 3, 0, "v75 with QK^T in fp16: Q one fp16 term, K = the fp16 V "
            "tile (MXFP4: one decode feeds both dots, no e4m3 re-rounding)", family="swapab", pv_swap=True,
            lat_chunks=2, qk_f16=True, tile_reduce=True),
    Variant("v81_n64_w4_s4_sab_pvs_c2", 64, 4, 4, 0, "v75 with 4 stages (MXFP4 tiles are half the bytes)",
            family="swapab", pv_swap=True, lat_chunks=2, tile_reduce=True),
    Variant("v82_n64_w4_s4_sab_pvs_c2_h", 64, 4, 4, 0, "v80 with 4 stages", family="swapab", pv_swap=True,
            lat_chunks=2, qk_f16=True, tile_reduce=True),
    Variant("v83_n64_w4_s2_sab_pvs_w_c2", 64, 4, 2, 0, "v77 with 2 stages (two CTAs per SM fit in smem)",
            family="swapab", pv_swap=True, v_path=2, lat_chunks=2, tile_reduce=True),
    Variant("v84_n64_w4_s2_sab_pvs_w_c4", 64, 4, 2, 0, "v83 with 4 latent chunks", family="swapab", pv_swap=True,
            v_path=2, lat_chunks=4, tile_reduce=True),
    Variant("v85_n64_w4_s4_sab_pvs_c4", 64, 4, 4, 0, "v71 with 4 stages (MXFP4 tiles are half the bytes)",
            family="swapab", pv_swap=True, lat_chunks=4, tile_reduce=True),
    Variant("v86_n64_w4_s3_sab_pvs_c4_mxp", 64, 4, 3, 0, "v71 + MXFP4 decode returning f16x2 pairs (generation 1's "
            "mx_decode 3: no 16-bit repacking)", family="swapab", pv_swap=True, lat_chunks=4, mx_decode=3,
            tile_reduce=True),
    # generation 2 + the one-launch epilogue of v50-v55 (fused reduce, balanced work list)
    Variant("v87_n64_w4_s3_sab_pvs_c2_fr", 64, 4, 3, 0, "v75 + fused reduce: one launch per call", family="swapab",
            pv_swap=True, lat_chunks=2, fused_reduce=True),
    Variant("v88_n64_w4_s3_sab_pvs_c4_mxp_fr", 64, 4, 3, 0, "v86 + fused reduce: one launch per call",
            family="swapab", pv_swap=True, lat_chunks=4, mx_decode=3, fused_reduce=True),
    Variant("v89_n64_w4_s3_sab_pvs_c2_frb", 64, 4, 3, 0, "v87 + balanced work list", family="swapab", pv_swap=True,
            lat_chunks=2, fused_reduce=True, balanced=True),
    Variant("v90_n64_w4_s3_sab_pvs_c4_mxp_frb", 64, 4, 3, 0, "v88 + balanced work list", family="swapab",
            pv_swap=True, lat_chunks=4, mx_decode=3, fused_reduce=True, balanced=True),
    # generation 3 (mla/kernels/triton/gluon_sm90.py, Gluon, sm90 only, fp8 KV): what generation 2's
    # Nsight Compute reports named, under explicit control - cp.async ring into swizzled smem, V
    # converted to fp16 once by 16-byte vector loads into an MN-major HGMMA operand, PV in flight
    # while the next tile's QK^T is issued
    Variant("v91_n64_w4_s3_gl", 64, 4, 3, 0, "Gluon: v75's math with V fp8 -> fp16 once into a swizzled smem tile "
            "read MN-major by HGMMA, PV of tile j overlapping QK of tile j + 1, 3-stage cp.async ring",
            family="gluon", pv_swap=True, tile_reduce=True),
    Variant("v92_n64_w4_s2_gl", 64, 4, 2, 0, "v91 with a 2-stage ring (156 KB smem instead of 192)", family="gluon",
            pv_swap=True, tile_reduce=True),
    # (v93 / v94, Q hi and lo as one N = 32 operand, measured 488 us but own-format rel_l2 1.4e-1 on the
    # H200: removed, docs/notes-triton.md "Generation 3")
    Variant("v95_n64_w4_s2_gl_r2", 64, 4, 2, 0, "v92 with V through a ring of two 64-dim fp16 slices: 108 KB smem, "
            "two CTAs per SM (PV issued slice by slice, waited each tile)", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_v_slots=2),
    Variant("v96_n64_w4_s2_gl_qp_r2", 64, 4, 2, 0, "v95 with Q hi and lo as one N = 32 operand, columns "
            "interleaved (2r hi, 2r + 1 lo): 9 QGMMA m64n32k32 per tile, the K tile read once by the MMAs",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_v_slots=2, gluon_qk_pairs=True),
    Variant("v97_n64_w4_s2_gl_pvr", 64, 4, 2, 0, "v95 with V^T as register A operands of PV: the latent dims "
            "relabelled so one 16-byte load per token gives each thread its wgmma fragments (no fp16 V tile in "
            "smem: ~140 instead of ~270 KB of shared traffic per tile), 92 KB smem", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True),
    Variant("v98_n64_w4_s2_gl_pvr_qp", 64, 4, 2, 0, "v97 with v96's interleaved one-operand QK (the K tile read "
            "once by the MMAs)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True),
    # (measured in gen3-r6) v98's epilogue stores
    # each output row in the relabelled dim order (2- / 4-byte scattered stores), which is where v98
    # loses to v96 on the split shapes (gen3-r5); this undoes the relabelling in registers first
    Variant("v99_n64_w4_s2_gl_pvr_qp_en", 64, 4, 2, 0, "v98 with the output rows put back in dim order in "
            "registers (joins + one layout conversion), then whole-row stores", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True),
    # MXFP4 in generation 3 (measured in gen3-r6): v99's kernel fed by a packed ring; each element
    # decoded once, by table lookup into the e4m3 K tile that QGMMA reads and V^T's fragments come from
    Variant("v100_n64_w4_s2_gl_mx", 64, 4, 2, 0, "v99 for MXFP4: a 2-stage ring of packed tiles (18 KB each), "
            "each MX block decoded once into the e4m3 K tile by a PRMT table lookup + a PRMT sign gather per 4 "
            "elements (block scale in the exponent, exact for E8M0 122..133), scales by register prefetch", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4"),
    Variant("v101_n64_w4_s3_gl_mx", 64, 4, 3, 0, "v100 with a 3-stage ring (111 KB smem: still two CTAs per SM)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4"),
    # (measured in gen3-r7) gen3-r6's Nsight Compute named shared memory (v99: mio_throttle 1.85 +
    # short_scoreboard 1.21 of ~7 stall cycles per instruction; v100 short_scoreboard 2.63, L1/TEX 76%);
    # by the swizzle model (mla/analysis/smem_banks.py) the V^T fragment loads of v97-v101 are 4-way
    # bank-conflicted, and so are v100's decode stores (measured: only the latter mattered - because
    # v102's row order did not change which rows the V^T loads read: their conflicts stayed until v116)
    Variant("v102_n64_w4_s2_gl_en_rp", 64, 4, 2, 0, "v99 with the tile's rows in a bit-swapped token order "
            "(row r holds token r with bits 0<->4, 2<->5), meant to make the V^T fragment LDS.128 conflict-free "
            "(it did not: they read rows; see v116)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_row_perm=True),
    Variant("v103_n64_w4_s2_gl_mx_rp", 64, 4, 2, 0, "v100 with v102's row order and the decode by 8 consecutive "
            "rows per quarter warp (swizzled ring): its LDS / STS conflict-free", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_row_perm=True),
    # r6 / r7's ncu put ~0.6 stall cycles per instruction on barriers and the largest share on the
    # MIO pipe; the per-tile softmax sum is one of the two cross-warp reductions (shuffles + a shared
    # exchange + a barrier) per tile and is needed only at the end (measured in gen3-r8)
    Variant("v104_n64_w4_s2_gl_en_ls", 64, 4, 2, 0, "v99 with the softmax sums kept per thread (rescaled like "
            "the output) and summed across warps once after the loop: one cross-warp reduction per tile, not two",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True),
    Variant("v105_n64_w4_s2_gl_mx_rp_ls", 64, 4, 2, 0, "v103 with v104's once-per-program softmax sum",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True),
    # the output rescale is 64 FMUL per thread per tile of v104's ~750 instructions per warp per tile;
    # with the max rarely growing by 2**8 after the first tiles most tiles skip it (FlashAttention-4's
    # conditional rescaling). Measured in gen3-r10: no faster (fp8 432 vs 431 us, MXFP4 581 vs 575)
    Variant("v106_n64_w4_s2_gl_en_ls_lr", 64, 4, 2, 0, "v104 with P against the running max and the output "
            "rescaled only when a column's max grows by more than 2**8 (a uniform branch)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_lazy_sum=True, gluon_lazy_rescale=True),
    Variant("v107_n64_w4_s2_gl_mx_ls_lr", 64, 4, 2, 0, "v105 with v106's conditional rescale", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_lazy_rescale=True),
    # v104's loop is 747 instructions per warp per tile, 260 of them the fp8 -> fp16 conversion of V
    # (128 F2FP + 128 PRMT, offline SASS): PV on e4m3 tensor cores takes V as it is (a byte transpose
    # into the A layout) and P as two e4m3 terms at 256 P (hi + lo: rel_l2 2.4-4.7e-4, fp16 P 0.8-1.5e-4,
    # both far under the bf16 output's ~1.7e-3: data/accuracy/p8-model.csv, a CPU model). Same QGMMA
    # count as HGMMA (2 x k32 vs 4 x k16)
    Variant("v108_n64_w4_s2_gl_en_ls_p8", 64, 4, 2, 0, "v104 with PV on e4m3 QGMMA: V^T fragments only "
            "byte-permuted, no fp16 conversion; P^T as e4m3 hi + lo (256 P) in two K-major B tiles",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True),
    Variant("v109_n64_w4_s2_gl_mx_rp_ls_p8", 64, 4, 2, 0, "v105 with v108's e4m3 PV: the decoded K tile "
            "feeds both dots with no conversion", family="gluon", pv_swap=True, tile_reduce=True,
            gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True,
            gluon_lazy_sum=True, gluon_pv_fp8=True),
    # r11's ncu source counters on v104: 16 SHFL.IDX per tile (QK_PAIRS' interleaved accumulator put
    # back into the m64nRk32 layout) and the FMNMX waiting on them ~20% of the stall samples
    Variant("v110_n64_w4_s2_gl_en_ls_p8_qc", 64, 4, 2, 0, "v108 with Q's terms concatenated ([hi; lo]) in the "
            "QK operand: the accumulator's halves are the softmax layout as they are (no SHFL.IDX)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True),
    Variant("v111_n64_w4_s2_gl_mx_rp_ls_p8_qc", 64, 4, 2, 0, "v109 with v110's concatenated Q terms",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True),
    Variant("v112_n64_w4_s2_gl_en_ls_qc", 64, 4, 2, 0, "v104 with v110's concatenated Q terms (fp16 PV): "
            "the two changes of v110 one at a time", family="gluon", pv_swap=True, tile_reduce=True,
            gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_lazy_sum=True, gluon_qk_cat=True),
    # r12: v108 - v111's rel_l2 at bs256-kv8192 (128 tiles per program) was 2x v104's (3.7e-3 vs 1.8e-3),
    # at bs4-kv1024 within 3%: e4m3 QGMMA accumulates with fewer bits than fp32 (DeepSeek-V3 3.3.2),
    # and v108's PV accumulator runs across every tile. Promoted: the MMA sums 64 tokens, fp32 the rest
    Variant("v113_n64_w4_s2_gl_en_ls_p8_qc_pp", 64, 4, 2, 0, "v110 with each tile's PV in a fresh QGMMA "
            "accumulator added to the fp32 output by the rescale's FFMA (acc = acc * alpha + tile)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1),
    Variant("v114_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp", 64, 4, 2, 0, "v111 with v113's promoted PV accumulation",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1),
    Variant("v115_n64_w4_s2_gl_mx_rp_ls_p8_qc_ps", 64, 4, 2, 0, "v114 with each PV slice waited for as soon as "
            "it is issued: one fresh accumulator live, not two (v114 spills at 255 registers)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=2),
    # r13's ncu source counters on v113: the V^T fragment loads (LDS.128) took 4x their ideal shared
    # wavefronts (lanes on tile rows 0 / 16 / 32 / 48 share banks; ROW_PERM never changed which rows a
    # load reads, so v102 / v103 kept them), and the PRMTs that wait on them held 26% of the samples
    Variant("v116_n64_w4_s2_gl_en_ls_p8_qc_pp_cf", 64, 4, 2, 0, "v113 with the V^T fragment loads' lanes on tile "
            "rows 1 and 4 apart (not 16 and 32): conflict-free LDS.128", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True),
    Variant("v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf", 64, 4, 2, 0, "v114 with v116's conflict-free V^T loads",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True),
    # r14's ncu source counters on v116: the V^T loads now at their ideal wavefronts, the fp8 tile's
    # cp.async (LDGSTS) still at 2x (9.4M excessive of 18.9M)
    Variant("v118_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_cr", 64, 4, 2, 0, "v116 with the tile's cp.async by 8 "
            "consecutive rows of one 16-byte column per quarter warp (kv_blk put 2 rows x 4 columns there)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_cp_rows=True),
    # v117's loop: 1175 instructions per warp per tile; the packed tile's copy and its decode each
    # computed their own addresses (different layouts)
    Variant("v119_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ow", 64, 4, 2, 0, "v117 with the packed tile copied in the "
            "decode's own layout: one address computation, 1124 instructions per warp per tile (offline)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_mx_own=True),
    # gen3-r16 / r17: v119 415 / 416 us at bs256-kv8192 against v117's 417 / 417 in the same runs (4% fewer
    # instructions, the same time); the packed ring is 18 KB a stage: a third still fits 2 CTAs per SM
    # (111 KB each); r17: v120 420 us, no faster on any kv8192 shape (not memory latency either)
    Variant("v120_n64_w4_s3_gl_mx_rp_ls_p8_qc_pp_cf_ow", 64, 4, 3, 0, "v119 with a 3-stage packed ring (two "
            "tiles in flight)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_mx_own=True),
    # the model after r17 (docs/notes-triton.md, "Rounds 16-17"): v117's ALU pipe is ~42% busy at 2 warps
    # per scheduler (255 registers, 2 CTAs x 4 warps per SM); the same work on twice the warps needs each
    # thread to hold half of it: two warpgroups per CTA, QK's query rows and PV's output dims split between
    # them (no work duplicated), at <= 128 registers so that 2 CTAs x 8 warps fit an SM
    Variant("v121_n64_w8_s2_gl_en_ls_p8_qc_pp_cf_wg2", 64, 8, 2, 0, "v116 on two warpgroups: each its 8 query "
            "rows' softmax and 256 of PV's 512 output dims, V^T by conflict-free LDS.64, 128 registers (16 "
            "warps per SM)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True, gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_warpgroups=2, gluon_maxnreg=128),
    Variant("v122_n64_w8_s2_gl_mx_rp_ls_p8_qc_pp_cf_wg2", 64, 8, 2, 0, "v117 on v121's two warpgroups (the decode "
            "by all 8 warps)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_warpgroups=2,
            gluon_maxnreg=128),
    # gen3-r22: v121 361 / v122 513 us at bs256-kv8192 against v116 348 / v117 418 in the same run (v122
    # issues 31% more instructions per tile than v117 on triton 3.6: LDS.64, the per-warp wgmma
    # descriptors, 12 local reloads at 128 registers; ncu: 14.4 warps per SM, issue 0.44 per scheduler)
    Variant("v125_n64_w8_s2_gl_mx_rp_ls_p8_qc_pp_cf_wg2_ow", 64, 8, 2, 0, "v122 with v119's packed copy in the "
            "decode's layout (702 instructions per warp per tile offline, v122 733)", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4",
            gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_warpgroups=2, gluon_mx_own=True, gluon_maxnreg=128),
    Variant("v126_n64_w8_s2_gl_mx_rp_ls_p8_qc_pp_cf_wg2_nr", 64, 8, 2, 0, "v122 without the register cap (no "
            "spills, one CTA = 8 warps per SM): what the cap costs against what the second CTA buys", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_warpgroups=2),
    # rounds 22-23's reading (docs/notes-triton.md): at a fixed warp count the time follows the
    # instruction count of the one stream that both decodes and runs the fp8 loop; so take the decode
    # out of that stream. One CTA per SM = 3 partitions (12 warps, maxnreg 168): two consumers running
    # v116's loop on alternate tiles (8 warps per SM, as v116's 2 CTAs) and a decoder (4 warps, 40
    # registers) filling a ring of decoded tiles; mbarriers between them; each consumer its own partial
    Variant("v127_n64_w4_s2_gl_mx_ws3", 64, 4, 2, 0, "MXFP4 warp-specialized: a decoder partition fills a "
            "3-slot ring of e4m3 K tiles for two consumer partitions running v116's loop on alternate tiles",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=168),
    # gen3-r24: v127 523 us at bs256-kv8192 (v117 414), every check passed: the decoder (one warp per
    # scheduler) waited each tile on its scale loads, issued in the tile's own iteration, and on a
    # packed ring one tile deep
    Variant("v128_n64_w4_s3_gl_mx_ws3_sp", 64, 4, 3, 0, "v127 with a 3-stage packed ring and the scales loaded "
            "one tile ahead (56 decoder registers, 224 per consumer)", family="gluon", pv_swap=True, tile_reduce=True,
            gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=168,
            gluon_ws_consumer_regs=224, gluon_ws_decoder_regs=56),
    # gen3-r25 / r25b: v128 488 us; PC samples: the consumers spent 40% of all samples waiting on the
    # full barrier (the decoder's one warp per scheduler issues ~0.19 per cycle); the decoder rarely waited
    Variant("v129_n64_w4_s3_gl_mx_ws3_d2", 64, 4, 3, 0, "v128 with two decoder partitions, each decoding half of "
            "every tile (16 warps, maxnreg 128: 208 registers per consumer, 48 per decoder)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=128, gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48,
            gluon_ws_decoders=2),
    # gen3-r26 / r26b: v129 390 us (v117 417 in the same run), issue 0.51 per scheduler; PC samples: the
    # consumers wait on the full barrier 10% of the samples, the decoders on the empty one 5%
    Variant("v130_n64_w4_s2_gl_mx_ws4_d2", 64, 4, 2, 0, "v129 with 4 decoded K tiles in the ring (the packed ring "
            "back to 2 stages to fit: 207 KB)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=128,
            gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48, gluon_ws_decoders=2),
    # gen3-r26b's PC samples: the decoder with the rope (5 blocks a thread, 378 instructions a tile) set the
    # pace, and ~6% of its samples waited on a scale byte loaded in the same iteration (the one-tile-ahead
    # register prefetch was undone by the loop's copy); ~45% of its instructions were address math,
    # masks, and 5 barriers a tile. So: the scales through the ring, the halves equal, one op per copy
    Variant("v131_n64_w4_s2_gl_mx_ws4_h", 64, 4, 2, 0, "v130 with equal decoder halves (8 latent blocks of every "
            "token + the rope of 32 tokens each), the scale bytes copied by cp.async into the packed ring, one copy "
            "and one decode op per half, the copies' addresses computed once", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4",
            gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True,
            gluon_ws=4, gluon_maxnreg=128, gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48, gluon_ws_decoders=2,
            gluon_ws_halves=True),
    Variant("v132_n64_w4_s3_gl_mx_ws3_h", 64, 4, 3, 0, "v131 with a 3-stage packed ring and 3 K slots (two tiles "
            "of copies in flight)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True,
            gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=128,
            gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48, gluon_ws_decoders=2, gluon_ws_halves=True),
    # gen3-r30: v131 486 us, v132 503 (v130 391 in the same run), every check passed. PC samples (r30-src): the
    # consumers waited on full 41-46% of the time; the decoders stalled on their own copies - spill reloads of
    # the loop-invariant copy offsets (48 registers) and the 4 cp.async a thread holding their address registers
    # (long scoreboard on the next tile's address adds). So the packed bytes by TMA: nothing per copy per thread
    Variant("v133_n64_w4_s2_gl_mx_ws4_tma", 64, 4, 2, 0, "v131 with each decoder's packed half (latent [64, 128 B], "
            "rope [32, 32 B]) by two TMA loads on the ring entry's mbarrier; only the scale bytes by cp.async",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=128, gluon_ws_consumer_regs=208,
            gluon_ws_decoder_regs=48, gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True),
    Variant("v134_n64_w4_s3_gl_mx_ws3_tma", 64, 4, 3, 0, "v133 with a 3-stage packed ring and 3 K slots",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=128, gluon_ws_consumer_regs=208,
            gluon_ws_decoder_regs=48, gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True),
    # gen3-r31: v133 373 us (v130 393, v117 418 in the same run; fp8 v116 317), v134 377; v133 beats v117 from 32
    # tiles per program (bs64-kv8192 111.8 vs 117.0) and loses at 16 (bs32-kv8192 70.0 vs 66.3). PC samples: the
    # consumers wait on full 13-19%, decoder 0 on empty 12%, no spills
    # v133's decoder tile: ~60 of its 336 instructions and 3 of its 5 barriers issue and wait for copies
    Variant("v136_n64_w4_s2_gl_mx_ws4_ld", 64, 4, 2, 0, "v133 with a one-warp loader partition issuing every copy "
            "(4 TMA loads, the scale bytes by cp.async tracked on the stage's mbarrier): the decoders only wait, "
            "decode and arrive (20 warps: the loader's warpgroup holds 3 idle ones; maxnreg 96 = 184 / 192 registers "
            "for the consumers, 40 for the decoders)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=96, gluon_ws_consumer_regs=192, gluon_ws_decoder_regs=40,
            gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True, gluon_ws_loader=True),
    # gen3-r32: v136 410 us (v133 372 in the same run): its decoders waited on the stage's ready barrier 21-23%
    # of their samples, the loader on free 75%: with 2 stages the loader refills a stage only after both
    # decoders freed it, one tile ahead; and the consumers' 184 / 192 registers spill
    Variant("v137_n64_w4_s3_gl_mx_ws3_ld", 64, 4, 3, 0, "v136 with a 3-stage packed ring (two tiles ahead) and 3 K "
            "slots (to fit)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True,
            gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=3, gluon_maxnreg=96, gluon_ws_consumer_regs=192,
            gluon_ws_decoder_regs=40, gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True, gluon_ws_loader=True),
    # campaign 10's sweep: v137 439.4 us at bs256-kv8192, 236.6 at bs128-kv8192 (v133 370.0 / 200.5): slower still
    # issue 9 / round 33 (compiled offline, not run on a GPU): the table words of each MX block cost 8 integer
    # instructions (VIADD, LOP3 0xff: LLVM's 8-bit range check, 2 ISETP, 2 SEL, 2 IMAD), ~36 of the 336 of
    # v133's decoder tile (4.5 blocks a thread); _MX_LUT2_PTX gives the same words in 7 (no LOP3: a 32-bit
    # range check, d folded into the IMAD constants). Predicted ~1% of the decoder's issue slots, <= 0.5% of
    # the kernel time (v133 370-373 us at bs256-kv8192): within noise
    Variant("v138_n64_w4_s2_gl_mx_ws4_tma_lut", 64, 4, 2, 0, "v133 with each block's table words by one PTX block "
            "(the same words, one integer instruction fewer a block)", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4",
            gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True,
            gluon_ws=4, gluon_maxnreg=128, gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48, gluon_ws_decoders=2,
            gluon_ws_halves=True, gluon_ws_tma=True, gluon_mx_lut2=True),
    Variant("v139_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_lut", 64, 4, 2, 0, "v117 with v138's table words (one PTX block "
            "a block)", family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_mx_lut2=True),
    # issue 9 / round 33 (compiled offline, not run on a GPU): the consumers' V^T fragments by ldmatrix.trans
    # on byte pairs (V_LDSM; scripts/probes/vt_ldmatrix_probe.py: the layout model and its SASS). Offline SASS
    # (3.6): the PRMTs of a consumer tile 136 -> 72 a warp, LDS.128 -> LDSM. Predicted: v140 -3..-5% against
    # v133 (the consumers pace the tile: they waited on full only 13-19% in r31), v141 / v142 -3..-6% against
    # v116 / v117 (one partition does everything there)
    Variant("v140_n64_w4_s2_gl_mx_ws4_tma_ldsm", 64, 4, 2, 0, "v133 with the consumers' V^T fragments by "
            "ldmatrix.trans on byte pairs + one PRMT a register", family="gluon", pv_swap=True, tile_reduce=True,
            gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=128,
            gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48, gluon_ws_decoders=2, gluon_ws_halves=True,
            gluon_ws_tma=True, gluon_v_ldsm=True),
    # issue 9 / round 38 (compiled offline first): v140 loses to v133 below 64 KV tiles a program (+6% at 32, +13% at
    # 16, r33 / r34). Its epilogue converts the 8 output slices one by one through shared memory (16 partition
    # barriers; the [R, 512] conversion v133 uses does not fit beside V_LDSM's ring). v143 stores each slice
    # from its accumulator registers at its dims. Predicted: v143 within 1% of v140 at 128 tiles, and at 16-64
    # tiles at or below v133 (v140's -3.5% loop gain no longer paid back by the epilogue)
    Variant("v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed", 64, 4, 2, 0, "v140 with the partials stored straight from "
            "the accumulator registers (no layout conversion, no partition barrier in the epilogue)", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=128, gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48,
            gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True, gluon_v_ldsm=True, gluon_epi_direct=True),
    # v144: v143 with the first tile's two TMA loads issued by the default warps before they load and quantize
    # Q (the scale bytes stay with the decoders: a cp.async group is per thread). Predicted: -0.5..-1 us a
    # program (one HBM latency no longer after the prologue), so -1..-3% at 16-32 tiles, nothing at 128
    Variant("v144_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_et", 64, 4, 2, 0, "v143 with the first tile's TMA loads issued "
            "before the Q prologue", family="gluon",
            pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True,
            gluon_kv="mxfp4", gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=128, gluon_ws_consumer_regs=208, gluon_ws_decoder_regs=48,
            gluon_ws_decoders=2, gluon_ws_halves=True, gluon_ws_tma=True, gluon_v_ldsm=True, gluon_epi_direct=True,
            gluon_early_tma=True),
    Variant("v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm", 64, 4, 2, 0, "v116 with v140's ldmatrix V^T fragments",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_v_ldsm=True),
    # issue 10 / round 39 (offline SASS first): v141's prologue asks for the first KV tile only after Q is loaded and
    # quantized - the compiler sinks the kv_indptr loads that the copies' addresses need below Q's 9 loads and
    # the quantization, so the KV bytes are ~3 HBM latencies behind the launch instead of ~2 (qo_indptr -> Q ->
    # kv_indptr -> tile). v145 / v146 pin the range and the copies first with one CTA barrier. Predicted: -1..-1.5
    # us a program (one to two latencies at cold L2), so -5..-10% at bs4-kv1024, nothing measurable at bs256-kv8192.
    # gen3-r39a: within -1.2..+0.8% of v141 / v117 on every shape (two rounds): triton 3.6 already orders v141's copies
    # first, and moving v117's moved no time. Not defaults
    Variant("v145_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_kf", 64, 4, 2, 0, "v141 with the KV range and the first "
            "tile's copies issued before Q is loaded (a barrier pins the order)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_v_ldsm=True, gluon_kv_first=True),
    Variant("v146_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_kf", 64, 4, 2, 0, "v117 with the KV range, the first tile's "
            "copies and its scales issued before Q is loaded", family="gluon", pv_swap=True, tile_reduce=True,
            gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True,
            gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True,
            gluon_kv_first=True),
    # issue 10 / round 40: the tile reduce is the second kernel of every split call (Nsight Compute, r39b: 3.6-5.6 us
    # alone after a flush, 40% of bs4-kv1024's split kernel). The last-program merge (FUSED_REDUCE) lost wherever one
    # program merged many partials (r16: bs4-kv8192 20.9 -> 43.9 us). v147 / v148 merge inside the split kernel with
    # every split taking a column slice once all have arrived (gluon_sm90._coop_merge), the grid launched
    # cooperatively (all programs resident: at most one per SM, the plan lowers the splits to that). Predicted -2..-4
    # us at the split shapes; r40a (issue10/coop-r40a.csv): +4..+15% at equal splits, +72..+82% at bs4-kv8192 - the
    # PDL-overlapped tile reduce costs ~2 us inside a graph, the merge's serial tail ~3.5. Not defaults
    Variant("v147_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_cm", 64, 4, 2, 0, "v141 with the splits merging the output "
            "together in the split kernel (cooperative grid, no reduce kernel)",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, gluon_v_ldsm=True, coop_merge=True),
    Variant("v148_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_cm", 64, 4, 2, 0, "v117 with the splits merging the output "
            "together in the split kernel (cooperative grid, no reduce kernel)", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_kv="mxfp4",
            gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1,
            gluon_v_cf=True, coop_merge=True),
    # issue 9 / round 41: fp8 has run on the one-warpgroup kernel (v141: two CTAs per SM, each issuing its own
    # cp.async one tile ahead) while MXFP4 went warp-specialized. v149 / v150 are v143's two consumers fed by a
    # one-warp TMA loader (no decoders): the producer / consumer split of FlashMLA's and FlashInfer's sm90 decode,
    # one CTA per SM with 4 / 5 tiles in flight or in use (v141: ~2 a CTA). Predicted: HBM-bound where programs
    # are long, -3..-7% against v141 at bs128 / bs256-kv8192 (307 us -> ~285-297); at 16 tiles a program or fewer
    # the one CTA per SM and the second partial lose, as they did for MXFP4. gen3-r41a / r41b (two rounds, opposite
    # order; v141 in its slow mode both times, 358 us at bs256-kv8192): bs64-kv8192 96.5 / 96.3 vs 99.8 / 99.8,
    # bs256-kv8192 349.1 / 349.1 vs 358.1 / 358.7, bs128-kv8192 162.9 / 181.2 vs 174.0 / 175.0, bs32-kv8192 a tie,
    # bs256-kv4096 +5% (two waves of one-per-SM programs). Not a default: -2.5..-3.5% where it is steady, one
    # shape unsteady, and v141's fast mode (307 us in campaign 19) not matched by v149 in any of its 8 runs there
    Variant("v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed", 64, 4, 2, 0, "fp8 warp-specialized: v143's two consumers fed by "
            "a one-warp loader that TMA-loads each fp8 tile into a 4-slot ring (no decoders; 12 warps, maxnreg 168: "
            "248 / 232 registers for the consumers, 24 for the loader)", family="gluon", pv_swap=True,
            tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True, gluon_epi_natural=True, gluon_lazy_sum=True,
            gluon_pv_fp8=True, gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_ws=4, gluon_maxnreg=168,
            gluon_ws_consumer_regs=232, gluon_ws_decoder_regs=24, gluon_ws_decoders=0, gluon_ws_tma=True,
            gluon_ws_loader=True, gluon_v_ldsm=True, gluon_epi_direct=True),
    # (v150, v149 with a 5-slot ring: measured in r41a / r41b, then removed - it faulted ("unspecified launch failure")
    # within 700 calls at bs256 / bs128-kv8192 under scripts/probes/ws_stress.py, where v149 ran 9000 clean. Why: with
    # an odd ring a slot alternates between the consumers, and TMA completes tiles out of order, so a consumer can
    # reach tile j + 5's parity wait on a barrier still in tile j's phase and pass it (a parity names a phase only
    # one phase apart). The fp8 kernel now asserts an even ring: each slot then belongs to one consumer, which has
    # waited for that slot's previous phase itself. docs/notes-triton.md "Round 41")
    Variant("v142_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ldsm", 64, 4, 2, 0, "v117 with v140's ldmatrix V^T fragments",
            family="gluon", pv_swap=True, tile_reduce=True, gluon_pv_reg=True, gluon_qk_pairs=True,
            gluon_epi_natural=True, gluon_kv="mxfp4", gluon_row_perm=True, gluon_lazy_sum=True, gluon_pv_fp8=True,
            gluon_qk_cat=True, gluon_pv_promote=1, gluon_v_cf=True, gluon_v_ldsm=True),
    Variant("v19_n32_w4_s2_mxw_pf", 32, 4, 2, 0, "v17 + register prefetch of the next raw tile", mx_decode=2,
            dot_f16=True, prefetch=True),
    # v38..v49: reserved for the warpgroup-MMA generation. v50..: one launch per call (issue 10; not yet
    # measured on a GPU): the split kernel merges its own partials (the last program of each group)
    Variant("v50_n32_w4_s3_fr", 32, 4, 3, 0, "v28's split kernel + fused reduce: one launch, partials "
            "merged by the last program of each (batch element, head group)", fused_reduce=True),
    Variant("v51_n32_w4_s2_f16wp_fr", 32, 4, 2, 0, "v35's split kernel + fused reduce", mx_decode=4, dot_f16=True,
            fused_reduce=True),
    Variant("v52_n32_w4_s2_mxw_fr", 32, 4, 2, 0, "v30's split kernel + fused reduce", mx_decode=2, dot_f16=True,
            fused_reduce=True),
    Variant("v53_n32_w4_s3_frb", 32, 4, 3, 0, "v50 + balanced work list: equal-token splits over the batch",
            fused_reduce=True, balanced=True),
    Variant("v54_n32_w4_s2_f16wp_frb", 32, 4, 2, 0, "v51 + balanced work list", mx_decode=4, dot_f16=True,
            fused_reduce=True, balanced=True),
    Variant("v55_n32_w4_s2_mxw_frb", 32, 4, 2, 0, "v52 + balanced work list", mx_decode=2, dot_f16=True,
            fused_reduce=True, balanced=True),
    Variant("v56_n32_w4_s3_frb16", 32, 4, 3, 0, "v53 + bf16 partial O (half the partial bytes)",
            fused_reduce=True, balanced=True, partial_bf16=True),
    Variant("v57_n32_w4_s2_f16wp_frb16", 32, 4, 2, 0, "v54 + bf16 partial O", mx_decode=4, dot_f16=True,
            fused_reduce=True, balanced=True, partial_bf16=True),
    Variant("v58_n32_w4_s2_mxw_frb16", 32, 4, 2, 0, "v55 + bf16 partial O", mx_decode=2, dot_f16=True,
            fused_reduce=True, balanced=True, partial_bf16=True),
    Variant("v59_n32_w4_s3_f16wp_frb", 32, 4, 3, 0, "v36's split kernel (3 stages, bs32/bs256 fp8 winner) + "
            "fused reduce + balanced work list", mx_decode=4, dot_f16=True, fused_reduce=True, balanced=True),
    Variant("v60_n32_w4_s3_mxw_frb", 32, 4, 3, 0, "v37's split kernel (3 stages) + fused reduce + balanced work "
            "list", mx_decode=2, dot_f16=True, fused_reduce=True, balanced=True),
)}


def _plus(base: str, name: str, what: str, **changes) -> Variant:
    """A variant that is ``base`` with ``changes`` (the registry's usual one-line "what changed")."""
    return replace(VARIANTS[base], name=name, what_changed=what, **changes)


# issue 10 / round 46: every one-warpgroup program starts with one global round trip for its ranges
# (qo_indptr[b], kv_indptr[b], kv_indptr[b + 1]) before Q's loads and the first KV copies can be issued - both
# chains that round 39 found equally long on the short programs begin with it, and after the flush the
# indptr lines sit in DRAM. For a uniform batch the validated indptrs are b x q_seq_len and b x kv_len
# (mla.validate), so v151 / v152 compute the ranges from a launch argument (uniform_kv_len, read from the
# kernel's parameter space) and load nothing first; a ragged batch (uniform_kv_len 0) loads them as before.
# Predicted: one DRAM latency (~0.5-0.9 us) off every short program: -4..-7% at bs4-kv1024, -2..-4% at
# bs4-kv8192 / bs32-kv1024 / bs64-kv1024, within noise at bs256-kv1024
for _v in (
        _plus("v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm", "v151_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur",
              "v141 with a uniform batch's Q and KV ranges computed from the launch's arguments (no indptr loads "
              "before the first copies)", gluon_uniform_ranges=True),
        _plus("v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf", "v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur",
              "v117 with a uniform batch's Q and KV ranges computed from the launch's arguments (no indptr loads "
              "before the first copies)", gluon_uniform_ranges=True),
        # r46a (issue10/uniform-r46a.csv, two rounds): MXFP4 v152 -6.5% at bs4-kv1024 and -3.8% at bs32-kv1024 against
        # v117, fp8 v151 only -2% / -1.1% against v141. fp8 has one more global load on its path: the per-tensor scale,
        # loaded after Q's quantization and needed by the first softmax. v153 loads it first. Predicted: fp8 takes
        # MXFP4's gain, -0.5..-0.8 us against v141 at bs4-kv1024 and bs32-kv1024
        _plus("v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm", "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf",
              "v151 with the fp8 KV scale loaded at the program's start (not after Q's quantization)",
              gluon_uniform_ranges=True, gluon_scale_first=True)):
    VARIANTS[_v.name] = _v
del _v
# round 51 (docs/notes-triton.md): round 50's timeline (H100) showed the large shapes end with their slowest programs
# (equal tokens, unequal time: the same SMs finish early at every shape). v154 is v153 with the work-stealing schedule
# (steal_protocol.py): owners claim 4 tiles at a time from the front, helper programs (one per owner) take up to 8
# from the back of the range with the most left, and only stolen ranges write partials. Predicted in the notes.
VARIANTS["v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_st"] = _plus(
    "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf", "v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_st",
    "v153 with work stealing: owners claim their range from the front, helper programs take pieces from the back "
    "of the range with the most left; only stolen ranges write partials", gluon_steal=True)
# round 51's r51b / r51c: v154 lost on every shape; half of its pieces ran from the launch on (helpers in the slots
# v153 leaves empty) and helpers that started together raced for one range's word. v156 is v154 with helpers that
# wait until an owner has ended and spread over tied victims by their own index. Prediction in
# scripts/h200_session_r51.sh (r51d); not run yet
VARIANTS["v156_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_stw"] = _plus(
    "v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_st", "v156_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_stw",
    "v154 with helpers that start stealing only once an owner has ended, and spread over tied victims by their index",
    gluon_steal_wait=True, gluon_steal_rotate=True)
# v157: v156 with the owners claiming 2 tiles at a time (at most 4 claimed ahead instead of 8, so a slow range keeps
# more to give away), at one chunk-end read every 2 tiles instead of 4; not run yet (r51d)
VARIANTS["v157_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_stw2"] = _plus(
    "v156_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_stw", "v157_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_stw2",
    "v156 with owners claiming 2 tiles at a time (at most 4 claimed ahead: more of a slow range left to take)",
    gluon_steal_chunk=2)

# round 52 (docs/notes-triton.md): round 50's timeline (H100) put fp8's Q prologue at 3.4 us at bs4-kv1024 against
# MXFP4's 2.3 (4.97 / 2.50 at bs32-kv1024): on triton 3.6 v153 issues the first tile's copies (37 KB) before Q's
# loads (18 KB), v152 issues its (smaller) tile after Q's quantization (test_offline_sm90_sass_of_kv_first_...). v158 /
# v159 ask for Q first, then the tile, then quantize Q while the tile streams. Prediction in
# scripts/h200_session_r52.sh
VARIANTS["v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf"] = _plus(
    "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf", "v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf",
    "v153 with Q's loads issued before the first tile's copies and its quantization after them", gluon_q_first=True)
VARIANTS["v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf"] = _plus(
    "v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur", "v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf",
    "v152 with Q's loads issued before the first tile's copies and its quantization after them", gluon_q_first=True)
# v160: v158 with the fp8 tile issued as two copies instead of nine (8 bar.sync + 24 dummy LDS fewer per tile in the
# SASS: triton's hazard pass puts a barrier between copies into slices of one buffer). Prediction in
# scripts/h200_session_r52.sh (r52c)
VARIANTS["v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1"] = _plus(
    "v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf", "v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1",
    "v158 with each fp8 tile's cp.async as two copies (latent, rope) instead of nine: no barrier between them",
    gluon_cp_one=True)

# round 53: a deeper ring for the short programs. Where the default call runs one program an SM (bs4-kv8192,
# bs32-kv1024, fp8 bs64-kv1024: 4-8 tiles a program) the 2-stage ring has one tile in flight while one is consumed:
# round 48's timeline at bs4-kv8192 spent ~2.1 us a tile after the first, where the grid's 4.7 MB a tile-wave takes
# ~1.5 us at the read rate. One program an SM has the shared memory for 3-5 stages (37 KB an fp8 tile, 18 KB packed
# MXFP4). Prediction in scripts/h200_session_r53.sh (r53b). Measured (H100, issue10/stages-r53b.csv, two rounds at the
# default counts): slower everywhere, fp8 +2..+4% at one tile a program and +4..+14% at 4-8, MXFP4 +7..+49%; the
# four tiles land together late and their compute follows the last byte (timeline-r53c)
for _base, _stem, _fmt in (("v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1", "gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1",
                            "fp8"),
                           ("v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf", "gl_mx_rp_ls_p8_qc_pp_cf_ur_qf", "mxfp4")):
    for _num, _stages in ((("v161", 3), ("v162", 4), ("v163", 5)) if _fmt == "fp8" else (("v164", 3), ("v165", 5))):
        _name = f"{_num}_n64_w4_s{_stages}_{_stem}"
        VARIANTS[_name] = _plus(_base, _name, f"{_base.split('_')[0]} with a {_stages}-stage ring ({_stages - 1} tiles "
                                f"in flight ahead of the one consumed)", num_stages=_stages)
# round 53 (r53b / r53c, H100): every deeper ring was slower, and the timeline of v163 (5 stages) put Q ready at 7.5 us,
# when all four tiles had landed, though Q's loads were asked for first. The SASS shows why: fence_async_shared()
# (before QK's wgmma, for the tile's cp.async data, and before PV's, for P^T's stores) is MEMBAR.ALL.CTA +
# FENCE.VIEW.ASYNC.S, and the MEMBAR waits for this thread's outstanding cp.async, the ones just issued included. So
# v160's loop issues tile j + 1 and then waits for it at tile j's fence: no load overlaps compute. v166 / v167 issue
# tile j + 1 below tile j's fence (after the barrier that ends every warp's reading of its stage); PV's fence then
# waits for it, so the load overlaps QK and the softmax. Prediction in scripts/h200_session_r53.sh (r53d). Measured
# (H100, issue10/fence-r53d.csv, two rounds): v166 +2..+7% at one to eight tiles, -2.1% at bs256-kv1024 / -kv8192;
# MXFP4 v167 -0.2..-1.4% at 4+ tiles, +1.6% at one (one round). Not defaults
VARIANTS["v166_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1_il"] = _plus(
    "v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1", "v166_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1_il",
    "v160 with the next tile's copies issued below this tile's proxy fence (whose MEMBAR waits for cp.async)",
    gluon_issue_late=True)
VARIANTS["v167_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf_il"] = _plus(
    "v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf", "v167_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf_il",
    "v159 with the next packed tile's copies issued below the decoded tile's proxy fence", gluon_issue_late=True)
# v168 / v169: the fp8 tiles by TMA (async proxy, completion on an mbarrier a stage), so no proxy fence waits for a load
# in flight and the ring overlaps whole tiles; v169 with 3 stages (2 tiles ahead), which cp.async's fences made useless.
# Measured (fence-r53d.csv): v168 -1.6..-2.9% at 4-8 tiles (fresh -1.4..+0.3%), +8% at one tile, -1.3% at
# bs256-kv1024, -2.6% at bs256-kv8192 (one round); v169 -3.7% there, slower at the short shapes. Its timeline keeps
# v160's ~2.2 us a tile: the fence was not what bound the short programs. r53e / r53f (tma-long-r53e.csv,
# ws-vs-tma-r53f.csv, two rounds each): at bs256-kv8192 v169 -4.9% against v160 and -5.3% against v149, v168 -3.4%.
# Not defaults yet: no campaign has run them (docs/notes-triton.md, Round 53; scripts/h200_session_r54.sh)
VARIANTS["v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt"] = _plus(
    "v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf", "v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt",
    "v158 with each tile as nine TMA loads on a barrier a stage (no cp.async: no proxy fence waits for a load)",
    gluon_kv_tma=True)
VARIANTS["v169_n64_w4_s3_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt"] = _plus(
    "v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt", "v169_n64_w4_s3_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt",
    "v168 with a 3-stage ring (2 tiles ahead)", num_stages=3)
# v170: v143 with one partial a program. r54c found v149's two partials a program (the same two-consumer structure)
# cost 2.0 us outside the split kernel at bs32-kv8192 (the reduce merging 8 partials an element against 4). Here
# consumer 1 hands its unnormalized accumulators, l and m to consumer 0 through the ring entries only its tiles use
# (an even ring: j odd), consumer 0 merges them into its own and stores one partial - or, with one program an element
# (bs256-kv8192's default), the bf16 output itself, with no reduce launch. Costs: a 32 KB shared round trip and the
# merge on consumer 0's epilogue (~1 us), consumer 0 waiting for consumer 1's last tile.
# Prediction (before any run): kernel time -2..-4% against v143 at bs32 / bs64-kv8192 (8 / 4 partials an element -> 4 /
# 2), -2..-4% at bs256-kv8192 (16 MB of fp32 partials written and read back, and the reduce launch, gone).
# Measured (round 55, H100, data/measured/h100/issue10/pair-merge-r55a.csv, two rounds in opposite order, every row
# checked): -2.8 / -2.5 / -3.0% kernel (fresh -1.9 / -2.2 / -3.4%) at bs32 / bs64 / bs256-kv8192; MXFP4's
# HOPPER_WS_DEFAULT since
VARIANTS["v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm"] = _plus(
    "v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed", "v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm",
    "v143 with the two consumers' partials merged in shared memory: one partial a program (none with one program)",
    gluon_ws_pair_merge=True)

DEFAULT_VARIANT = {  # per KV format (docs/notes-triton.md; data/measured/h200/)
    "bf16": "v28_n32_w4_s3_tr",  # = v4's split kernel; tile reduce: bs4-kv1024 19.2 -> 13.4 us, bs4-kv8192 50.9 -> 25.4
    "fp8": "v75_n64_w4_s3_sab_pvs_c2",  # generation 2: bs256-kv8192 1083 (v35) -> 489 us (gen2/)
    "mxfp4": "v86_n64_w4_s3_sab_pvs_c4_mxp",  # generation 2: bs256-kv8192 1348 (v30) -> 888 us (gen2/)
}


MXFP4_E4M3_EXACT = (119, 133)  # E8M0 range where every e2m1 x 2**(e - 127) is an e4m3 value
MXFP4_GLUON_EXACT = (122, 133)  # ... and a normal e4m3 value (generation 3's table decode: exponent-field add)
MXFP4_F16_EXACT = (104, 136)  # ... an fp16 value (the word decode's fp16 multiply)

# the default when the format's DEFAULT_VARIANT cannot take a request (generation 2 takes bf16 Q and
# MXFP4 scales in [119, 133] only): generation 1's measured defaults, then v1 (exact for any E8M0)
FALLBACK_VARIANT = {"bf16": "v28_n32_w4_s3_tr", "fp8": "v35_n32_w4_s2_f16wp_tr", "mxfp4": "v30_n32_w4_s2_mxw_tr"}
EXACT_MXFP4_VARIANT = "v1_n32_w4_s2"


# on an sm90 GPU with Gluon (generation 3, Hopper only), H200 2026-12-01, data/measured/h200/gen3-r6.csv
# and gen3-r7.csv (one run each, every row checked): fp8 v99 is at or below v96 / v98 on all 8
# leaderboard shapes (bs256-kv8192 438 / 441 us vs v98 450, v96 497; bs64-kv8192 123 vs 137); v102
# (conflict-free V loads) measured the same within 1%. MXFP4 v103 beat generation 2's v86 on every
# shape (bs256-kv8192 590 vs 906 us, bs4-kv1024 14.1 vs 20.2) and v100 (625) at kv8192; it needs
# E8M0 scales in MXFP4_GLUON_EXACT, else the default stays generation 2 (default_variant)
# gen3-r8.csv: v104 / v105 (the softmax sum once per program) at or within noise of v99 / v103 on
# every shape, faster at bs256-kv8192 (429 vs 439 us; 565 vs 593)
# (gen3-r10: v106 / v107, the conditional rescale, measured no faster - 432 vs 431 us, 581 vs 575 -
# and are not defaults)
# gen3-r13.csv (rounds 11-13: PV on e4m3 QGMMA, Q's terms concatenated, the PV accumulation promoted
# to fp32 per tile): v113 / v114 at or below v104 / v105 on all 8 shapes (bs256-kv8192 389 vs 433 us,
# 540 vs 576; bs64-kv8192 116 vs 122, 150 vs 158) with rel_l2 within 4% of theirs. (v108 - v111 were
# faster still for MXFP4 but lost accuracy over long sequences: not defaults.)
# gen3-r14.csv: v116 / v117 (the V^T fragment loads without bank conflicts) below v113 / v114 on all 8
# shapes (bs256-kv8192 317 vs 394 us, 419 vs 545; bs64-kv8192 99 vs 115, 117 vs 150), same rel_l2
# gen3-r33 / r34 (2026-12-02): v141 (v116 + V^T fragments by ldmatrix.trans) at or below v116 on 8 of the 9 shapes
# measured, +0.1% at bs4-kv8192 (bs256-kv8192 305.8 vs 317.7 us, bs128-kv8192 172.5 vs 174.9), same rel_l2
# round 46 (issue10/uniform-r46a.csv, issue10/scale-first-r46b.csv; two rounds each, opposite variant order, at the
# default call's split counts): a uniform batch's ranges from the launch argument, no indptr round trip first. MXFP4
# v152 against v117 at bs4-kv1024 / bs32-kv1024 / bs4-kv8192 / bs64-kv1024 / bs256-kv1024: 12.02 / 18.45 / 21.01 /
# 26.90 / 63.47 vs 12.85 / 19.17 / 21.14 / 27.06 / 63.49 us (kernel); fp8 v153 (the same + its scale loaded first)
# against v141: 12.06 / 17.81 / 20.02 / 25.15 / 57.26 vs 12.26 / 18.10 / 20.46 / 25.39 / 57.22. So v153 / v152
# round 52 (H100, data/measured/h100/issue10/qfirst-r52a.csv, two rounds in opposite order, same rel_l2; the bench's
# split count for a named kernel, two programs an SM): Q's loads before the first tile's copies. fp8 v158 against
# v153 at bs4-kv1024 / bs4-kv8192 / bs32-kv1024 / bs64-kv1024 / bs256-kv1024: -10.4 / +0.5 / -2.8 / -5.2 / -2.0%
# (kernel); MXFP4 v159 against v152: +0.6 / -9.2 / -9.8 / -7.0 / -1.4%. At the default call's own counts (one program
# an SM at bs4-kv8192, bs32-kv1024, fp8 bs64-kv1024) only across sessions (measured.q_first_default_splits): fp8
# -6..-10% on every short shape, MXFP4 within the sessions' drift except bs64-kv1024 (-7%) and bs4-kv1024 (+3%).
# The same code runs on the H200 (the mechanism, 37 KB of tile queued ahead of Q, is the memory system's, not the
# card's). r52c (issue10/cpone-r52c.csv, two rounds): fp8 v160 (v158 + the tile as two copies) against v158 -0.1 /
# -0.9 / -0.5 / -0.6 / -1.0% at those shapes and -1.2% (-5.2 us) at bs256-kv8192
HOPPER_DEFAULT = {"fp8": "v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1",
                  "mxfp4": "v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf"}
# A ragged batch gains nothing from UNIFORM_RANGES (the plan passes 0: its indptrs are loaded), and the default
# call's ragged schedule (the balanced work list) has run on the H200 with v141 / v117 only: ragged batches keep them
HOPPER_RAGGED_DEFAULT = {"fp8": "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm", "mxfp4": "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf"}
# gen3-r27 / r28: the warp-specialized MXFP4 kernel against v117, by KV tiles per program (at v117's split
# count): bs256-kv8192 (128 tiles) 387 vs 418 us, bs128-kv8192 208 vs 219, bs256-kv4096 (64) 212 vs 216;
# bs64-kv8192 (32) a tie, bs256-kv1024 / bs32-kv8192 (16) +14% / +10%, bs4-kv8192 +42%. The default call
# takes it from 64 tiles per program (one CTA per SM, two partials each: it pays only on long programs).
# gen3-r31: v133 (its decoders' packed halves by TMA) below v130 on every shape and below v117 from 32 tiles
# per program: bs256-kv8192 373 vs 418 us, bs256-kv4096 199 vs 216, bs64-kv8192 (32) 111.8 vs 117.0; not at
# 16 (bs32-kv8192 70.0 vs 66.3). So v133 from 32 tiles
# gen3-r33 / r34: v140 (v133 + V^T by ldmatrix.trans) paid only on the longest programs (128 tiles 357.8 vs 370.4
# us; +6% at 32 tiles, +13% at 16): its epilogue converted the output slice by slice. gen3-r38a (gen3-r38a.csv,
# two rounds in opposite order): v143 (v140, partials stored from the accumulators) against v133 / v140 at 16 tiles
# 72.0 / 71.7 vs 71.1 / 71.1 and 80.3 / 79.8 us (bs32-kv8192, 8 splits), 32 tiles 58.9 / 58.4 vs 59.6 / 59.3 and 63.3
# / 63.3, 64 tiles 99.3 / 98.0 vs 103.0 / 101.6 and 103.7 / 103.7 (bs64-kv8192), 128 tiles 179.5 / 178.3 vs 190.1 /
# 187.3 and 183.5 / 182.6 (bs128-kv8192), 348.9 / 347.3 vs 372.4 / 370.6 and 355.1 / 354.8 (bs256-kv8192). So v143
# from 32 tiles (16 tiles: v117's rule, the warp-specialized kernels tie there at best)
# gen3/ws-fp8-settled-r43a.csv (round 43, every row past the first row's slow phase, v141 and v149 alternated in
# the same processes twice, kernel us): v149 (fp8 warp-specialized, TMA ring) at one program per SM against v141,
# the default call: bs32-kv8192 (32 tiles a program) 60.5 / 60.5 vs 60.4 / 60.5, bs64-kv8192 (64) 96.4 / 96.2 vs
# 99.2 / 99.5, bs128-kv8192 (128) 164.3 / 163.0 vs 173.5 / 173.8, bs256-kv8192 (128 tiles, two waves of programs)
# 314.1 / 313.6 vs 312.7 / 312.4; round 41: bs256-kv4096 (64 tiles, two waves) 178.0 / 178.6 vs 168.7 / 170.1.
# So v149 from 32 tiles where its programs fit one wave (HOPPER_WS_ONE_WAVE: with two waves the second runs on
# one CTA per SM where v141 keeps two)
# round 55: MXFP4's kernel is v170 (v143 with one partial a program: -2.5..-3.0% at 32-128 tiles, both rounds)
HOPPER_WS_DEFAULT = {"mxfp4": "v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm", "fp8": "v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed"}
HOPPER_WS_MIN_TILES = 32
HOPPER_WS_ONE_WAVE = frozenset({"fp8"})
# round 54 (H100: data/measured/h100/issue10/tma-long-r54a.csv, tma-rule-edges-r54e.csv; two rounds each in opposite
# order, every row checked, same rel_l2; kernel us at the default call's split counts): the fp8 tiles by TMA (v168; v169
# with 3 stages, 132 KB: one program an SM) against the kernels the default took. bs32-kv8192 (32 tiles a program, 4
# splits, one wave): v168 69.3 vs v149 77.1 (-10.1%); bs64-kv8192 (64, 2 splits): v168 120.1 vs v149 127.6 (-5.9%; v160
# 122.1, v169 122.5); bs128-kv8192 (128, one split, one wave): v168 215.9 vs v149 227.4 (-5.1%; v160 220.8, v169 219.6);
# bs256-kv8192 (128, one split, 256 programs): v169 420.8 vs v160 441.9 (-4.8%; v168 427.1, v149 443.0; r53e / r53f
# the same within 0.5%); bs256-kv4096 (64, 256 programs): v169 222.5, v168 224.3, v160 231.9. So v169 only where the
# programs outnumber the SMs (v168 would run two an SM; v169 runs one, in two waves) and run >= 128 tiles, v168 from
# 32 tiles otherwise. Not taken: v169 at 64 tiles (-0.8% against v168), v168 at 16 (bs256-kv1024 -2.0 / -2.0%, r53d
# -1.3%) and at 4-8 (r53d: -1.6..-2.9% kernel, fresh -1.4..+0.3%). The default call with / without it
# (tma-default-r54b.csv): -10.1 / -6.2 / -4.9% kernel, -11.2 / -6.1 / -4.6% fresh at bs32 / bs64 / bs256-kv8192.
# Applied at the split count the rules above chose (v149's one program an SM where it applied):
# launch.tma_default_variant; kv_tma=False is the control (round 53's default). H100 evidence: the H200 has not run
# v168 / v169.
HOPPER_TMA_DEFAULT = {"fp8": (  # (min KV tiles a program, only where programs > SMs, variant), first match wins
    (128, True, "v169_n64_w4_s3_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt"),
    (32, False, "v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt"))}


def default_variant(kv_format: str, q_format: str = "bf16", mxfp4_scale_range: tuple[int, int] | None = None,
                    hopper_gluon: bool = False, ragged: bool = False) -> str:
    """The variant a plan uses when none is named: HOPPER_DEFAULT where it applies (``hopper_gluon``:
    an sm90 GPU whose triton has Gluon, bf16 Q; HOPPER_RAGGED_DEFAULT for a ``ragged`` batch), else
    DEFAULT_VARIANT, unless it cannot take this request (quantized Q, or MXFP4 scales outside what its
    decode represents exactly), then FALLBACK_VARIANT, then the exact MXFP4 decode."""
    lo, hi = mxfp4_scale_range or (127, 127)
    if hopper_gluon and q_format == "bf16" and kv_format in HOPPER_DEFAULT:
        if kv_format != "mxfp4" or MXFP4_GLUON_EXACT[0] <= lo <= hi <= MXFP4_GLUON_EXACT[1]:
            return (HOPPER_RAGGED_DEFAULT if ragged else HOPPER_DEFAULT)[kv_format]
    name = DEFAULT_VARIANT[kv_format]
    v = VARIANTS[name]
    if v.family == "swapab":
        exact = MXFP4_F16_EXACT if v.qk_f16 else MXFP4_E4M3_EXACT
        if q_format != "bf16" or (kv_format == "mxfp4" and not exact[0] <= lo <= hi <= exact[1]):
            name = FALLBACK_VARIANT[kv_format]
    if kv_format == "mxfp4" and VARIANTS[name].mx_decode >= 2 and hi > MXFP4_F16_EXACT[1]:
        name = EXACT_MXFP4_VARIANT
    return name


def is_hopper_default(name: str, kv_format: str) -> bool:
    """Whether ``name`` is the default call's one-warpgroup generation-3 variant for this format (uniform or
    ragged batch): the variant the default call's split and kernel rules apply to (campaign 22's and earlier
    leaderboard rows ran v141 / v117, today's ragged default, under the same rules)."""
    return name in (HOPPER_DEFAULT.get(kv_format), HOPPER_RAGGED_DEFAULT.get(kv_format))


GEN2_DEFAULT = {  # the fastest generation-2 variant per quantized format at bs256-kv8192 (H200, 2026-12-01,
    # data/measured/h200/gen2/: fp8 v75 489 us vs generation 1's v35 1083 us; MXFP4 v86 888 us vs v30 1348 us)
    "fp8": "v75_n64_w4_s3_sab_pvs_c2",
    "mxfp4": "v86_n64_w4_s3_sab_pvs_c4_mxp",
}


# Notebook 04's ablation chain: from generation 1's default to generation 2's, one step per row
# (docs/notes-triton.md "Generation 2" has the predictions and the measured reason of each step)
ABLATION_CHAIN = {
    "fp8": ("v35_n32_w4_s2_f16wp_tr", "v38_n64_w4_s3_sab", "v42_n64_w4_s3_sab_pvs", "v71_n64_w4_s3_sab_pvs_c4",
            "v75_n64_w4_s3_sab_pvs_c2"),
    "mxfp4": ("v30_n32_w4_s2_mxw_tr", "v38_n64_w4_s3_sab", "v40_n64_w4_s4_sab", "v71_n64_w4_s3_sab_pvs_c4",
              "v86_n64_w4_s3_sab_pvs_c4_mxp"),
}


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"unknown triton variant {name!r}; choose from {sorted(VARIANTS)}")
    return VARIANTS[name]


# generation 3: which Variant field sets which constexpr of gluon_sm90's kernel (launch and offline
# compile both build the kernel's arguments from this one table)
GLUON_CONSTEXPRS = {"num_stages": "STAGES", "gluon_v_slots": "V_SLOTS", "gluon_qk_pairs": "QK_PAIRS",
                    "gluon_pv_reg": "PV_REG", "gluon_epi_natural": "EPI_NATURAL", "gluon_row_perm": "ROW_PERM",
                    "gluon_lazy_sum": "LAZY_SUM", "gluon_lazy_rescale": "LAZY_RESCALE", "gluon_pv_fp8": "PV_FP8",
                    "gluon_qk_cat": "QK_CAT", "gluon_pv_promote": "PV_PROMOTE", "gluon_v_cf": "V_CF",
                    "gluon_cp_rows": "CP_ROWS", "gluon_mx_own": "MX_OWN",
                    "gluon_warpgroups": "WARPGROUPS",
                    "gluon_ws": "WS_SLOTS",
                    "gluon_ws_consumer_regs": "WS_CONSUMER_REGS", "gluon_ws_decoder_regs": "WS_DECODER_REGS",
                    "gluon_ws_decoders": "WS_DECODERS", "gluon_ws_halves": "WS_HALVES",
                    "gluon_ws_tma": "WS_TMA", "gluon_ws_loader": "WS_LOADER", "gluon_mx_lut2": "MX_LUT2",
                    "gluon_v_ldsm": "V_LDSM", "gluon_epi_direct": "EPI_DIRECT",
                    "gluon_early_tma": "EARLY_TMA", "gluon_kv_first": "KV_FIRST",
                    "gluon_uniform_ranges": "UNIFORM_RANGES", "gluon_scale_first": "SCALE_FIRST",
                    "gluon_q_first": "Q_FIRST", "gluon_cp_one": "CP_ONE", "gluon_issue_late": "ISSUE_LATE",
                    "gluon_kv_tma": "KV_TMA", "gluon_ws_pair_merge": "WS_PAIR_MERGE"}


# the work-stealing kernel's own (gluon_steal.py; gluon_steal_helpers sizes the grid, launch.steal_grid)
STEAL_CONSTEXPRS = {"gluon_steal": "STEAL", "gluon_steal_chunk": "STEAL_CHUNK", "gluon_steal_slots": "STEAL_SLOTS",
                    "gluon_steal_max": "STEAL_MAX", "gluon_steal_wait": "STEAL_WAIT",
                    "gluon_steal_rotate": "STEAL_ROTATE"}


def gluon_constexprs(v: Variant) -> dict:
    """The gluon_sm90 kernel's variant constexprs for ``v`` (shape ones come from the launcher)."""
    out = {name: getattr(v, field) for field, name in GLUON_CONSTEXPRS.items()}
    if v.gluon_steal:
        out.update({name: getattr(v, field) for field, name in STEAL_CONSTEXPRS.items()})
    return out


def gluon_launch_options(v: Variant) -> dict:
    """Compiler options of a generation-3 variant beyond num_warps / num_stages (launch and offline)."""
    return {"maxnreg": v.gluon_maxnreg} if v.gluon_maxnreg else {}
