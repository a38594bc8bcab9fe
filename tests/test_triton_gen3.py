"""Generation 3 of the Triton family (the Gluon sm90 fp8 / MXFP4 kernel, mla/kernels/triton/gluon_sm90.py).

Gluon kernels have no interpreter, so on a CPU machine this file checks what can be checked without
a GPU: the plan refuses every request the kernel does not implement (with a ValueError naming the
alternative), and the kernel compiles offline for sm90 (triton's bundled ptxas) into the SASS the
design says it is (QGMMA e4m3 for QK^T, HGMMA for PV, no byte-wide shared loads, no spills). On an
sm90 GPU it runs every variant through the same gates as generations 1 and 2: NaN-poisoned outputs,
ragged batches with lengths that divide no tile, q_seq_len 2 and 4, 32 heads, split-K, own-format
rel_l2 < 1e-2 against the fp64 reference and the leaderboard rule.
"""

from __future__ import annotations

import collections
import functools
import os
import re

import pytest
import torch

import mla
from mla.kernels.triton import TritonDecodePlan
from mla.kernels.triton.variants import HOPPER_DEFAULT, VARIANTS

GEN3 = sorted(n for n, v in VARIANTS.items() if v.family == "gluon")
SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 and not torch.version.hip


def test_generation_3_is_registered_as_one_format_gluon_variants():
    assert len(GEN3) >= 3
    for name in GEN3:
        v = VARIANTS[name]
        assert v.kv_formats == (v.gluon_kv,) and v.gluon_kv in ("fp8", "mxfp4"), name
        assert v.block_n == 64 and v.num_warps == 4 * v.gluon_warpgroups, name
    mx = [n for n in GEN3 if VARIANTS[n].gluon_kv == "mxfp4"]
    assert mx and all(VARIANTS[n].gluon_pv_reg and VARIANTS[n].gluon_qk_pairs for n in mx)


def test_every_gluon_field_reaches_a_kernel_constexpr():
    """launch.py and offline.py both build the kernel's variant constexprs from GLUON_CONSTEXPRS: a
    Variant field missing there would be silently ignored (the kernel would take its default)."""
    import dataclasses

    from mla.kernels.triton.gluon_sm90 import GLUON_IMPORT_ERROR
    from mla.kernels.triton.variants import GLUON_CONSTEXPRS, STEAL_CONSTEXPRS, Variant, gluon_constexprs

    # (gluon_kv picks the kernel's KV format, gluon_maxnreg is a compiler option: gluon_launch_options)
    fields = {f.name for f in dataclasses.fields(Variant)
              if f.name.startswith("gluon_") and f.name not in ("gluon_kv", "gluon_maxnreg")}
    # (the work-stealing kernel's own table; gluon_steal_helpers sizes the grid, not the kernel)
    fields -= set(STEAL_CONSTEXPRS) | {"gluon_steal_helpers"}
    assert fields <= set(GLUON_CONSTEXPRS), sorted(fields - set(GLUON_CONSTEXPRS))
    assert len(set(GLUON_CONSTEXPRS.values())) == len(GLUON_CONSTEXPRS)
    v = VARIANTS["v119_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ow"]
    assert gluon_constexprs(v)["MX_OWN"] is True and gluon_constexprs(v)["STAGES"] == v.num_stages
    if GLUON_IMPORT_ERROR is None:  # (the kernel object needs Gluon in the installed triton)
        from mla.kernels.triton.gluon_sm90 import mla_decode_gluon_sm90_kernel, mla_decode_gluon_sm90_ws_kernel

        # (one table serves both kernels: each must take every name, r30 launched v116 / v117 with one missing)
        from mla.kernels.triton.gluon_steal import mla_decode_gluon_sm90_steal_kernel

        for kernel in (mla_decode_gluon_sm90_kernel, mla_decode_gluon_sm90_ws_kernel, mla_decode_gluon_sm90_steal_kernel):
            assert set(GLUON_CONSTEXPRS.values()) <= set(kernel.arg_names), kernel
        assert set(STEAL_CONSTEXPRS.values()) <= set(mla_decode_gluon_sm90_steal_kernel.arg_names)
        steal = VARIANTS["v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_st"]
        assert gluon_constexprs(steal)["STEAL"] is True and "STEAL" not in gluon_constexprs(v)


@pytest.mark.skipif(SM90, reason="the refusal of a non-sm90 device is tested where there is none")
def test_plan_refuses_without_an_sm90_gpu():
    if torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1":
        data = mla.generate_input(2, 1, 100, seed=1, device="cuda" if torch.cuda.is_available() else "cpu")
        with pytest.raises(ValueError, match="Gluon.*cannot run here.*v75"):
            TritonDecodePlan(data, kv_format="fp8", variant="v96_n64_w4_s2_gl_qp_r2")
        with pytest.raises(ValueError, match="Gluon.*cannot run here.*v86"):
            TritonDecodePlan(data, kv_format="mxfp4", variant="v100_n64_w4_s2_gl_mx")
    else:
        pytest.skip("CPU plans need TRITON_INTERPRET=1")


@pytest.mark.parametrize("variant, kw, match", [
    ("v95_n64_w4_s2_gl_r2", dict(kv_format="mxfp4"), "takes kv_format 'fp8'.*v86"),
    ("v95_n64_w4_s2_gl_r2", dict(kv_format="bf16"), "takes kv_format 'fp8'"),
    ("v95_n64_w4_s2_gl_r2", dict(kv_format="fp8", q_format="fp8"), "q_format 'bf16'"),
    ("v95_n64_w4_s2_gl_r2", dict(kv_format="fp8", fused_reduce=True, partial_dtype="bf16"), "fp32 partials"),
    ("v100_n64_w4_s2_gl_mx", dict(kv_format="fp8"), "takes kv_format 'mxfp4'.*v75"),
])
def test_plan_refuses_what_generation_3_does_not_implement(variant, kw, match):
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("CPU plans need TRITON_INTERPRET=1")
    data = mla.generate_input(2, 1, 100, seed=1, device="cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=match):
        TritonDecodePlan(data, variant=variant, **kw)


@pytest.mark.parametrize("byte", [121, 134])
def test_mxfp4_plan_refuses_scales_the_table_decode_cannot_represent(byte):
    """E8M0 121 makes 0.5 x 2**-6 an e4m3 subnormal, 134 makes 6 x 2**7 overflow e4m3: the table decode
    (an exponent-field add) would be wrong, so the plan refuses them, naming the range."""
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("CPU plans need TRITON_INTERPRET=1")
    data = mla.generate_input(2, 1, 100, seed=1, device="cuda" if torch.cuda.is_available() else "cpu")
    data[1]["mxfp4"][1][7, 3] = byte
    with pytest.raises(ValueError, match=r"E8M0 scales in \[122, 133\]"):
        TritonDecodePlan(data, kv_format="mxfp4", variant="v100_n64_w4_s2_gl_mx")


def _run_ptx(asm: str, regs: dict) -> dict:
    """A tiny interpreter for the integer PTX of the table decode (mov / and / shr / shl / prmt / lop3,
    32-bit; for MX_LUT2's table words also sub / mad.lo / setp.lt|eq.u32 / selp): enough to check the
    string the kernel compiles against the format's definition."""
    def val(x):
        x = x.strip()
        return int(x, 16) if x.startswith("0x") else int(x) if x.isdigit() else regs[x]

    for line in asm.splitlines():
        line = line.strip().rstrip(";")
        if not line or line[0] in "{}." or line.startswith(".reg"):
            continue
        op, rest = line.split(None, 1)
        dst, *src = [a.strip() for a in rest.split(",")]
        a = [val(x) for x in src]
        if op == "mov.b32":
            r = a[0]
        elif op == "and.b32":
            r = a[0] & a[1]
        elif op == "shr.b32":
            r = a[0] >> a[1]
        elif op == "shl.b32":
            r = a[0] << a[1]
        elif op == "prmt.b32":
            pool = [(a[0] >> 8 * i) & 0xFF for i in range(4)] + [(a[1] >> 8 * i) & 0xFF for i in range(4)]
            r = 0
            for i in range(4):
                sel = (a[2] >> 4 * i) & 0xF
                byte = pool[sel & 7]
                if sel & 8:  # sign-replicate mode
                    byte = 0xFF if byte & 0x80 else 0
                r |= byte << 8 * i
        elif op == "lop3.b32":
            r = 0
            for bit in range(32):
                idx = (((a[0] >> bit) & 1) << 2) | (((a[1] >> bit) & 1) << 1) | ((a[2] >> bit) & 1)
                r |= ((a[3] >> idx) & 1) << bit
        elif op == "sub.u32":
            r = a[0] - a[1]
        elif op == "mad.lo.u32":
            r = a[0] * a[1] + a[2]
        elif op in ("setp.lt.u32", "setp.eq.u32"):  # (a predicate: a Python bool in regs)
            regs[dst] = a[0] < a[1] if op == "setp.lt.u32" else a[0] == a[1]
            continue
        elif op == "selp.b32":
            r = a[0] if a[2] else a[1]
        else:
            raise AssertionError(f"unexpected PTX op {op}")
        regs[dst] = r & 0xFFFFFFFF
    return regs


def test_mxfp4_table_decode_ptx_matches_the_format():
    """The PTX string of the generation-3 MXFP4 decode (4 packed bytes + the block's two table words ->
    8 e4m3 bytes), run by a small interpreter on random codes for every admitted scale and on all-zero
    blocks (scale byte 0), equals quant.dequantize_mxfp4 exactly."""
    from mla.kernels.triton import gluon_sm90
    from mla.quant import dequantize_mxfp4

    if gluon_sm90.gl is None:
        pytest.skip(f"no Gluon in this triton: {gluon_sm90.GLUON_IMPORT_ERROR}")
    asm = gluon_sm90._E2M1_E4M3_PTX.value
    gen = torch.Generator().manual_seed(3)
    for scale in [0, *range(122, 134)]:
        d = 0 if scale == 0 else scale - 127
        lo, hi = (0x3C383000 + d * 0x08080800) & 0xFFFFFFFF, (0x4C484440 + d * 0x08080808) & 0xFFFFFFFF
        packed = torch.randint(0, 256, (64, 16), dtype=torch.uint8, generator=gen)
        if scale == 0:
            packed &= 0x88  # an all-zero block: codes 0 / 8 (+-0)
        out = torch.empty(64, 32, dtype=torch.uint8)
        for r in range(64):
            for w in range(4):
                word = int.from_bytes(bytes(packed[r, 4 * w:4 * w + 4].tolist()), "little")
                regs = _run_ptx(asm, {"$2": word, "$3": lo, "$7": hi})
                out[r, 8 * w:8 * w + 8] = torch.tensor(list((regs["$0"] | regs["$1"] << 32).to_bytes(8, "little")),
                                                       dtype=torch.uint8)
        got = out.view(torch.float8_e4m3fn).float()
        ref = dequantize_mxfp4(packed, torch.full((64, 1), scale, dtype=torch.uint8))
        if scale == 0:
            ref = torch.zeros_like(ref)
        assert torch.equal(got, ref), scale


def _mx_table_words(sc: int) -> tuple[int, int]:
    """_mx_to_e4m3's table words (MX_LUT2 off) for E8M0 byte ``sc``, as its int32 Triton expression computes
    them: the range check on (sc - 122) as uint32, d = sc - 127, 0 for byte 0, e4m3 NaN bytes otherwise."""
    ok = ((sc - 122) & 0xFFFFFFFF) <= 11
    d = sc - 127
    other = 0 if sc == 0 else 0x7F7F7F7F
    lo = (0x3C383000 + d * 0x08080800) & 0xFFFFFFFF if ok else other
    hi = (0x4C484440 + d * 0x08080808) & 0xFFFFFFFF if ok else other
    return lo, hi


def test_mx_lut2_table_words_equal_the_expression_for_every_scale_byte():
    """MX_LUT2 (v138 / v139): the PTX string that builds a block's two table words, run by the interpreter,
    gives _mx_to_e4m3's words for every E8M0 byte 0..255 (the kernel's scales are loaded bytes, zero-extended),
    so the table decode gives the same e4m3 byte for every code of every block: checked too, through
    _E2M1_E4M3_PTX, on words holding every byte value (every code at every nibble position); in-range scales
    equal the format, byte 0 gives +-0, every other byte NaN for every code (the out-of-range guard)."""
    from mla.kernels.triton import gluon_sm90
    from mla.quant import dequantize_mxfp4

    if gluon_sm90.gl is None:
        pytest.skip(f"no Gluon in this triton: {gluon_sm90.GLUON_IMPORT_ERROR}")
    lut2 = gluon_sm90._MX_LUT2_PTX.value
    dec = gluon_sm90._E2M1_E4M3_PTX.value
    assert "0x403C3800" in lut2 and "0x504C4848" in lut2  # d = sc - 127 folded into the IMAD constants
    words = [b * 0x01010101 for b in range(256)]  # byte b at every position: codes b & 15, b >> 4
    packed = torch.tensor([[b] * 16 for b in range(256)], dtype=torch.uint8)  # 4 such words = one block each
    seen = set()
    for sc in range(256):
        regs = _run_ptx(lut2, {"$2": sc})
        new = (regs["$0"], regs["$1"])
        assert new == _mx_table_words(sc), (sc, [hex(x) for x in new], [hex(x) for x in _mx_table_words(sc)])
        seen.add(new)
        out = []
        for w in words:
            r_old = _run_ptx(dec, {"$2": w, "$3": _mx_table_words(sc)[0], "$7": _mx_table_words(sc)[1]})
            r_new = _run_ptx(dec, {"$2": w, "$3": new[0], "$7": new[1]})
            assert (r_new["$0"], r_new["$1"]) == (r_old["$0"], r_old["$1"]), (sc, hex(w))
            out.append(list((r_new["$0"] | r_new["$1"] << 32).to_bytes(8, "little")) * 4)  # the block's 32
        got = torch.tensor(out, dtype=torch.uint8).view(torch.float8_e4m3fn).float()  # [256 blocks, 32]
        if 122 <= sc <= 133:
            ref = dequantize_mxfp4(packed, torch.full((256, 1), sc, dtype=torch.uint8))
            assert torch.equal(got, ref), sc
        elif sc == 0:
            assert torch.equal(got, torch.zeros_like(got)), sc  # (+-0: the sign bits stay)
        else:
            assert torch.isnan(got).all(), sc
    assert len(seen) == 14  # 12 scales, zero, NaN


def test_pv_fp8_byte_transpose_ptx_is_four_4x4_transposes():
    """PV_FP8's V^T operands: the PTX (16 registers in, 16 out) turns registers r = 4 t + g (token t,
    dims 4 g .. 4 g + 3) into registers g + 4 d holding dim 4 g + d of tokens 0..3, run by the
    interpreter on random bytes."""
    from mla.kernels.triton import gluon_sm90

    if gluon_sm90.gl is None:
        pytest.skip(f"no Gluon in this triton: {gluon_sm90.GLUON_IMPORT_ERROR}")
    asm = gluon_sm90._BYTE_T4_PTX.value
    gen = torch.Generator().manual_seed(5)
    for _ in range(4):
        b = torch.randint(0, 256, (4, 16), dtype=torch.uint8, generator=gen)  # [token, dim]
        regs = {f"${16 + r}": int.from_bytes(bytes(b[r // 4, 4 * (r % 4):4 * (r % 4) + 4].tolist()), "little")
                for r in range(16)}
        out = _run_ptx(asm, regs)
        for g in range(4):
            for d in range(4):
                got = list(out[f"${g + 4 * d}"].to_bytes(4, "little"))
                assert got == b[:, 4 * g + d].tolist(), (g, d)


@functools.lru_cache(maxsize=None)  # (several tests read the same variant's SASS: one compile each)
def _sass(variant, num_splits=1):
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton.offline import compile_offline

    k = compile_offline(GPUTarget("cuda", 90, 32), variant=variant, kv_format=VARIANTS[variant].gluon_kv,
                        num_splits=num_splits)
    import subprocess
    import tempfile

    import triton
    nv = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"])
        f.flush()
        return k, subprocess.run([nv, "-sass", f.name], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("variant, qgmma", [("v91_n64_w4_s3_gl", "QGMMA.64x16x32.F32.E4M3.E4M3"),
                                            ("v95_n64_w4_s2_gl_r2", "QGMMA.64x16x32.F32.E4M3.E4M3")])
def test_offline_sm90_sass_is_the_designed_kernel(variant, qgmma):
    k, sass = _sass(variant)
    assert qgmma in sass, "QK^T must be e4m3 warpgroup MMA with K straight from shared memory"
    assert "HGMMA.64x16x16.F32" in sass, "PV must be fp16 warpgroup MMA (V^T MN-major from shared memory)"
    assert "mma.sync" not in k.asm["ptx"] and not re.search(r"\bHMMA\b", sass), "no mma.sync left"
    assert not re.search(r"LDS\.U8|LDS\.S8", sass), "V must not be read byte by byte"
    import triton
    # (on triton 3.6 v91 / v92 keep a few bytes of stack: the spill check holds on 3.9 for them)
    if variant.endswith("_r2") or tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 9):
        assert not re.search(r"\bSTL\b|\bLDL\b", sass), "no register spills"
    smem = k.metadata["shared"]
    if variant.endswith("_r2"):  # the V ring is what lets two CTAs share an SM (228 KB)
        assert 2 * (smem + 1024) <= 228 * 1024, smem


ONE_WG = [n for n in GEN3 if VARIANTS[n].gluon_warpgroups == 1 and not VARIANTS[n].gluon_ws]
WS = [n for n in GEN3 if VARIANTS[n].gluon_ws and VARIANTS[n].gluon_kv == "mxfp4"]  # (decoder partitions)
WS_FP8 = [n for n in GEN3 if VARIANTS[n].gluon_ws and VARIANTS[n].gluon_kv == "fp8"]  # (a TMA loader, v149+)
TWO_WG = [n for n in GEN3 if VARIANTS[n].gluon_warpgroups == 2]


@pytest.mark.parametrize("variant", [n for n in ONE_WG if VARIANTS[n].gluon_kv == "mxfp4"])
def test_offline_sm90_sass_of_the_mxfp4_kernel(variant):
    """MXFP4: QK^T still e4m3 QGMMA from the (decoded) shared-memory tile, PV fp16 HGMMA on register
    A operands; the decode is the table lookup (PRMT), 16-byte shared loads and stores, no spills, and
    two CTAs per SM fit in shared memory (one for a 5-stage ring)."""
    k, sass = _sass(variant)
    pv = "QGMMA.64x16x32.F32.E4M3.E4M3" if VARIANTS[variant].gluon_pv_fp8 else "HGMMA.64x16x16.F32"
    assert "QGMMA.64x32x32.F32.E4M3.E4M3" in sass and pv in sass
    assert len(re.findall(r"\bPRMT\b", sass)) >= 144, "36 words x 4 table / sign PRMTs per tile per thread"
    assert re.search(r"LDS\.128", sass) and re.search(r"STS\.128", sass)
    assert not re.search(r"LDS\.U8|LDS\.S8", sass)
    # at 255 registers ptxas keeps some values on the stack (v105: 32 bytes, two reloads per tile;
    # v114 / v115's promoted PV: 18 reloads per tile, measured in gen3-r13); a spill of the tile's
    # fragments or accumulators would be far more local traffic per trip of the loop than this
    from mla.analysis.isa import sass_functions, sass_hottest_loop

    loop = sass_hottest_loop(sass)
    local = [i for f in sass_functions(sass).values() for i in f
             if loop.start_addr <= i.addr <= loop.end_addr and i.op.split(".")[0] in ("STL", "LDL")]
    assert len(local) <= 24, len(local)
    # (v165's 5-stage ring is for one program an SM, the short programs' split counts: one CTA must fit)
    ctas = 1 if VARIANTS[variant].num_stages >= 5 else 2
    assert ctas * (k.metadata["shared"] + 1024) <= 228 * 1024, k.metadata["shared"]


def test_v116_loads_are_the_layout_the_bank_model_calls_conflict_free():
    """The model's V_CF entry is the kernel's v_load8_cf, read from the source (lanes as written)."""
    import inspect

    from mla.analysis import smem_banks as sb
    from mla.kernels.triton import gluon_sm90

    if gluon_sm90.gl is None:
        pytest.skip(f"no Gluon in this triton: {gluon_sm90.GLUON_IMPORT_ERROR}")
    src = inspect.getsource(gluon_sm90)
    m = re.search(r"v_load8_cf: gl.constexpr = gl.DistributedLinearLayout\(.*?lane_bases=(\[\[.*?\]\]),", src, re.S)
    lanes = eval(m.group(1))  # noqa: S307 - a literal list from our own source
    lanes_cf, warps, address, regs = sb.GEN3_ACCESSES["V^T fragment loads, V_CF (v116+: lanes on rows 1 / 4 apart)"]
    assert sb._tile_rows(lanes) == lanes_cf
    m = re.search(r"v_load8: gl.constexpr = gl.DistributedLinearLayout\(.*?lane_bases=(\[\[.*?\]\]),", src, re.S)
    assert sb.wavefronts(sb._tile_rows(eval(m.group(1))), warps, address) == 4  # noqa: S307


@pytest.mark.parametrize("variant", [n for n in ONE_WG if VARIANTS[n].gluon_pv_fp8])
def test_offline_sm90_sass_of_the_e4m3_pv(variant):
    """PV_FP8: both dots on e4m3 QGMMA, no HGMMA, V^T never converted (the only e4m3 -> fp16
    conversions left are P's residual, 4 per thread per tile), P^T stored as 2-byte words, V read by
    16-byte loads; the fragment transposes are 2 PRMT per register, not the generic conversion's 3."""
    from mla.analysis.isa import sass_functions, sass_hottest_loop

    k, sass = _sass(variant)
    loop = sass_hottest_loop(sass)
    assert "QGMMA.64x16x32.F32.E4M3.E4M3" in sass and "QGMMA.64x32x32.F32.E4M3.E4M3" in sass
    assert "HGMMA" not in sass
    # the loop over KV tiles, one trip (the Q preparation before it converts too)
    body = "\n".join(f"{i.op} {i.operands}" for f in sass_functions(sass).values() for i in f
                     if loop.start_addr <= i.addr <= loop.end_addr)
    assert body.count("QGMMA.64x16x32") == 32, "8 slices x (hi, lo) x 2 k-steps"
    assert len(re.findall(r"F2FP\.F16\.E4M3\.UNPACK_B", body)) <= 4, "V^T must not be converted to fp16"
    assert re.search(r"STS\.U16", body) and not re.search(r"STS\.U8", body), "P^T as 2-byte words"
    assert not re.search(r"LDS\.U8|LDS\.S8", body)
    if VARIANTS[variant].gluon_qk_cat:
        assert "SHFL.IDX" not in body, "QK_CAT: the accumulator halves are the softmax layout, no shuffles"
    if VARIANTS[variant].gluon_kv == "fp8":  # (MXFP4's decode adds its own PRMTs)
        assert len(re.findall(r"\bPRMT\b", body)) <= 160, "64 registers x 2 PRMT + a few"
        assert not re.search(r"\bSTL\b|\bLDL\b", body), "no register spills in the loop"


@pytest.mark.parametrize("variant", TWO_WG)
def test_offline_sm90_sass_of_the_two_warpgroup_kernel(variant):
    """WARPGROUPS = 2 (v121 / v122): 8 warps at <= 128 registers, so that two CTAs (16 warps) share an SM;
    each warpgroup's QK is m64n16 (its 8 query rows' two Q terms) and its PV 4 slices x (hi, lo) x 2
    k-steps of m64n16 (its 256 output dims), so the QGMMA per warp per tile drop from 50 to 34; the
    V^T fragments come by LDS.64 (8 dims per token: the model's conflict-free half-warp pattern),
    the byte transposes are 2 PRMT per register on half of v116's registers."""
    from mla.analysis import smem_banks as sb
    from mla.analysis.isa import sass_functions, sass_hottest_loop
    from mla.analysis.isa_triton import _cuobjdump

    k, sass = _sass(variant)
    assert k.metadata["num_warps"] == 8
    regs = _cuobjdump(k.asm["cubin"])[0]["registers"]
    if VARIANTS[variant].gluon_maxnreg:  # the cap is what lets a second CTA (8 more warps) on the SM
        assert regs <= VARIANTS[variant].gluon_maxnreg == 128, regs
    else:  # (v126: uncapped, one CTA per SM, no spills)
        assert 128 < regs <= 255 and not re.search(r"\bSTL\b", sass), regs
    assert 2 * (k.metadata["shared"] + 1024) <= 228 * 1024, k.metadata["shared"]
    loop = sass_hottest_loop(sass)
    body = [i for f in sass_functions(sass).values() for i in f if loop.start_addr <= i.addr <= loop.end_addr]
    ops = [i.op for i in body]
    assert sum(op.startswith("QGMMA.64x16x32.F32.E4M3.E4M3") for op in ops) == 34, "18 QK + 16 PV"
    assert not any(op.startswith("HGMMA") or op.startswith("QGMMA.64x32") for op in ops)
    assert sum(op.startswith("LDS.64") for op in ops) >= 16, "V^T: 16 LDS.64 per thread per tile"
    prmt = sum(op.split(".")[0] == "PRMT" for op in ops)
    if VARIANTS[variant].gluon_kv == "fp8":
        assert prmt <= 80, "32 registers x 2 PRMT + a few"
    else:
        assert prmt <= 80 + 90, "the transposes + half of the tile's decode (9 per 8 elements, 72 words / 8 warps)"
    assert sum(op.split(".")[0] in ("LDL", "STL") for op in ops) <= 24, "a few reloads, no spilled fragments"
    assert not any(op.startswith("LDS.U8") or op.startswith("LDS.S8") for op in ops)
    # the load layout the kernel uses (read from its source) is the one the bank model calls
    # conflict-free at 8 bytes a lane (v116's lanes would be 2-way there)
    import inspect

    from mla.kernels.triton import gluon_sm90

    src = inspect.getsource(gluon_sm90)
    m = re.search(r"v_load8_wg2: gl.constexpr = gl.DistributedLinearLayout\(.*?lane_bases=(\[\[.*?\]\]),\s*"
                  r"warp_bases=(\[\[.*?\]\]),", src, re.S)
    spec = sb.GEN3_ACCESSES_8BYTE["V^T fragment loads, two warpgroups (v121+)"]
    assert sb._tile_rows(eval(m.group(1))) == spec[0] and sb._tile_rows(eval(m.group(2))) == spec[1]  # noqa: S307
    assert sb.wavefronts_8byte(*spec) == 1
    assert sb.wavefronts_8byte(*sb.GEN3_ACCESSES_8BYTE["V^T fragment loads, two warpgroups with V_CF's lanes"]) == 2


@pytest.mark.parametrize("variant", WS)
def test_offline_sm90_sass_of_the_warp_specialized_kernel(variant):
    """WS_SLOTS (v127+): 12 warps = three 4-warp partitions with their own register counts (setmaxnreg,
    the variant's: v127 232 for each consumer, 40 for the decoder), partition-local named barriers, mbarrier waits in every
    loop; the consumers' loops are v116's (50 e4m3 QGMMA per tile, the 136 V^T transposes), the
    decoder's loop copies by cp.async and decodes by PRMT with no MMA; one CTA per SM in shared memory."""
    import collections

    k, sass = _sass(variant)
    v = VARIANTS[variant]
    # (v136's one-warp loader takes a whole warpgroup: setmaxnreg works per warpgroup)
    assert k.metadata["num_warps"] == 4 * (2 + v.gluon_ws_decoders + (1 if v.gluon_ws_loader else 0))
    # the launch's register pool fits the SM (allocated in units of 8 per thread)
    assert k.metadata["num_warps"] * 32 * (-(-(v.gluon_maxnreg or 255) // 8) * 8) <= 65536
    assert k.metadata["shared"] + 1024 <= 228 * 1024, k.metadata["shared"]
    regs = set(re.findall(r"USETMAXREG\.\w+\.CTAPOOL (?:UP0, )?0x([0-9a-f]+)", sass))
    v = VARIANTS[variant]
    assert {f"{v.gluon_ws_consumer_regs:x}", f"{v.gluon_ws_decoder_regs:x}"} <= regs, regs  # (v127: 232 and 40)
    # each partition syncs its own 128 threads on its own named barrier
    assert len(set(re.findall(r"BAR\.SYNC\.DEFER_BLOCKING 0x([0-9a-f]+), 0x80", sass))) >= 3
    from mla.analysis.isa import sass_functions

    loops = []
    for body in sass_functions(sass).values():
        for i in body:
            m = re.search(r"0x([0-9a-f]+)", i.operands) if i.op.startswith("BRA") else None
            if m and int(m.group(1), 16) < i.addr:
                seg = [x.op.split(".")[0] for x in body if int(m.group(1), 16) <= x.addr <= i.addr]
                # the tile loops (not a partition's whole region, which holds its EXIT / setmaxnreg)
                if 50 < len(seg) < 1000 and "EXIT" not in seg and "USETMAXREG" not in seg:  # (v136's loader: ~110)
                    loops.append(collections.Counter(seg))
    consumers = [c for c in loops if c["QGMMA"]]
    decoders = [c for c in loops if c["PRMT"] and not c["QGMMA"]]
    assert len(consumers) == 2 and len(decoders) == v.gluon_ws_decoders, loops
    # (v127-v135: the decoders copy; v136's decoders only decode, its one-warp loader copies)
    assert all(d["LDGSTS"] for d in decoders) != v.gluon_ws_loader, decoders
    for c in consumers:
        # (triton 3.9 spills 19 (v127, 232 registers), 34 (v128, 224) or 46 (v129, 208) values per tile, 3.6 -
        # the H200's - at most 6: a spilled fragment set or accumulator would be 64 or more)
        # (v136's consumers at 184 / 192 registers: 3.9 spills 79 a tile, 3.6 9)
        limit = 48 if v.gluon_ws_consumer_regs >= 200 else 96
        assert c["QGMMA"] == 50 and c["SYNCS"] >= 1 and c["LDL"] + c["STL"] <= limit, c
    assert sum(d["PRMT"] for d in decoders) >= 144 and all(d["SYNCS"] >= 1 for d in decoders), decoders
    # the static report's tile (isa.sass_ws_tile): each consumer loop at 1/2, every decoder loop at 1
    from mla.analysis.isa import sass_ws_tile

    tile = sass_ws_tile(sass)
    # (v127-v132 copy every packed byte by cp.async: >= 9 a tile; v133+ (WS_TMA) 2 TMA + the scales per decoder;
    # v136's loader 4 TMA + 10 cp.async, counted 1/4: one warp)
    copies = tile.mix["tma"] + tile.mix["cp_async"] if v.gluon_ws_tma else tile.mix["cp_async"]
    assert tile.mix["wgmma"] == 50 and copies >= (3 if v.gluon_ws_loader else 8 if v.gluon_ws_tma else 9), tile.mix
    loader = sum(sum(c.values()) for c in loops if c["UTMALDG"] and not c["PRMT"]) / 4
    assert tile.mix["instructions"] == pytest.approx(sum(sum(c.values()) for c in consumers) / 2
                                                     + sum(sum(d.values()) for d in decoders) + loader, abs=1)


@pytest.mark.parametrize("variant", WS_FP8)
def test_offline_sm90_sass_of_the_warp_specialized_fp8_kernel(variant):
    """v149+: two consumer partitions (v143's loop: 50 e4m3 QGMMA, 16 LDSM a tile, no cp.async) and a one-warp
    loader whose loop issues the tile's nine TMA loads and nothing else of the tile (no PRMT, no MMA, no
    shared stores); 12 warps (the loader's warpgroup), the variant's register split, one CTA per SM, no spills
    in the consumers beyond 3.6's few; the static report's tile = the two consumer loops at 1/2 + the loader's at 1/4."""
    k, sass = _sass(variant)
    v = VARIANTS[variant]
    assert k.metadata["num_warps"] == 12
    assert k.metadata["num_warps"] * 32 * (-(-v.gluon_maxnreg // 8) * 8) <= 65536
    assert k.metadata["shared"] + 1024 <= 228 * 1024, k.metadata["shared"]
    assert k.metadata["shared"] >= v.gluon_ws * 64 * 576, "the ring's K tiles"
    regs = set(re.findall(r"USETMAXREG\.\w+\.CTAPOOL (?:UP0, )?0x([0-9a-f]+)", sass))
    assert {f"{v.gluon_ws_consumer_regs:x}", f"{v.gluon_ws_decoder_regs:x}"} <= regs, regs
    import collections

    loops = [collections.Counter(x.op.split(".")[0] for x in seg) for seg in _tile_loops(sass)]
    consumers = [c for c in loops if c["QGMMA"]]
    loaders = [c for c in loops if c["UTMALDG"]]
    assert len(consumers) == 2 and len(loaders) == 1, loops
    for c in consumers:
        assert c["QGMMA"] == 50 and c["LDSM"] == 16 and not c["LDGSTS"] and not c["UTMALDG"], c
        assert c["LDL"] + c["STL"] <= 16, c
    (ld,) = loaders
    assert ld["UTMALDG"] == 9 and not ld["PRMT"] and not ld["QGMMA"] and not ld["STS"] and ld["SYNCS"] >= 1, ld
    from mla.analysis.isa import sass_ws_tile

    tile = sass_ws_tile(sass)
    assert tile.mix["wgmma"] == 50 and tile.mix["tma"] == pytest.approx(9 / 4, abs=0.1), tile.mix
    assert tile.mix["instructions"] == pytest.approx(sum(sum(c.values()) for c in consumers) / 2
                                                     + sum(ld.values()) / 4, abs=1)


def _sass_ops(sass, prefixes):
    import collections

    ops = collections.Counter(m.group(1) for m in re.finditer(
        r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+(?:\.[A-Z0-9_]+)*)", sass))
    return {o: c for o, c in ops.items() if o.startswith(prefixes)}


def test_offline_sm90_sass_of_the_pair_merge():
    """v170 (v143 + WS_PAIR_MERGE): consumer 1 hands its 8 accumulator slices, l and m (40 8-byte shared stores a
    thread) to consumer 0 (40 8-byte shared loads), on one more mbarrier arrival and wait, and only consumer 0 stores
    to global memory: half v143's fp32 stores. With one program an element (num_splits 1) the kernel writes the bf16
    output itself: no fp32 store at all."""
    _, base = _sass("v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed", 2)
    _, merged = _sass("v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm", 2)
    _, single = _sass("v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm", 1)
    keys = ("STG", "STS.64", "LDS.64", "SYNCS.ARRIVE", "SYNCS.PHASECHK")
    b, m, s = (_sass_ops(x, keys) for x in (base, merged, single))
    assert b["STG.E"] == 2 * m["STG.E"] and m["STG.E"] >= 64, (b, m)  # (64 O values + the lse a thread)
    # (40 each way by the design; the compilers place a couple elsewhere: 3.9 +40 / +40, 3.6 +40 / +38)
    assert 36 <= m.get("STS.64", 0) - b.get("STS.64", 0) <= 42, (b, m)
    assert 36 <= m.get("LDS.64", 0) - b.get("LDS.64", 0) <= 42, (b, m)
    arrive = sum(c for o, c in m.items() if o.startswith("SYNCS.ARRIVE"))
    assert arrive == sum(c for o, c in b.items() if o.startswith("SYNCS.ARRIVE")) + 1, (b, m)
    assert m["SYNCS.PHASECHK.TRANS64.TRYWAIT"] > b["SYNCS.PHASECHK.TRANS64.TRYWAIT"], (b, m)  # (a wait, maybe unrolled)
    assert "STG.E" not in s and s.get("STG.E.U16", 0) == 64, s  # (the bf16 output, 64 values a thread)


def test_the_pair_merge_refuses_an_odd_ring():
    """v170's consumer 1 writes its state into the ring entries only its own tiles use, which holds for an even
    ring only (tile j in entry j % WS_SLOTS): the kernel asserts it, and the one-warpgroup kernel refuses the flag."""
    import subprocess
    import sys

    code = """
import dataclasses
from triton.backends.compiler import GPUTarget
from mla.kernels.triton.offline import compile_offline
from mla.kernels.triton.variants import VARIANTS
base = VARIANTS["v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm"]
for name, change in (("odd", dict(gluon_ws=3)), ("onewg", dict(gluon_ws=0, gluon_ws_decoders=1, gluon_ws_halves=False,
                     gluon_ws_tma=False, gluon_epi_direct=False))):
    VARIANTS[name] = dataclasses.replace(base, name=name, **change)
    try:
        compile_offline(GPUTarget("cuda", 90, 32), variant=name, kv_format="mxfp4", num_splits=2)
        print(name, "compiled")
    except Exception as e:
        print(name, "refused", "WS_PAIR_MERGE" in str(e))
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert "odd refused True" in r.stdout and "onewg refused True" in r.stdout, r.stdout + r.stderr[-3000:]


def test_the_fp8_loader_refuses_an_odd_ring():
    """v150 (v149 with 5 slots) faulted on the H200 (round 41): with an odd ring a slot alternates between the two
    consumers and TMA lands tiles out of order, so a parity wait can pass a barrier still in an older phase. The
    kernel asserts an even ring; this compiles a 3-slot v149 offline (in a clean process: the suite may run under
    the interpreter) and expects that assertion."""
    import subprocess
    import sys

    code = f"""
import dataclasses
from triton.backends.compiler import GPUTarget
from mla.kernels.triton.offline import compile_offline
from mla.kernels.triton.variants import VARIANTS
VARIANTS["odd_ring_probe"] = dataclasses.replace(VARIANTS[{WS_FP8[0]!r}], name="odd_ring_probe", gluon_ws=3)
try:
    compile_offline(GPUTarget("cuda", 90, 32), variant="odd_ring_probe", kv_format="fp8", num_splits=1)
except Exception as exc:
    print("REFUSED", exc)
"""
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert "REFUSED" in r.stdout and "even number of slots" in r.stdout + r.stderr, (r.stdout[-2000:], r.stderr[-2000:])


def _triton_version():
    import triton

    return tuple(int(x) for x in triton.__version__.split(".")[:2])


def _tile_loops(sass):
    """The innermost backward-branch loops of a kernel's SASS without EXIT / setmaxnreg (a warp-specialized
    kernel's tile loops, as test_offline_sm90_sass_of_the_warp_specialized_kernel finds them), each as its
    list of instructions, in address order."""
    from mla.analysis.isa import sass_functions

    loops = []
    for body in sass_functions(sass).values():
        for i in body:
            m = re.search(r"0x([0-9a-f]+)", i.operands) if i.op.startswith("BRA") else None
            if m and int(m.group(1), 16) < i.addr:
                seg = [x for x in body if int(m.group(1), 16) <= x.addr <= i.addr]
                ops = [x.op.split(".")[0] for x in seg]
                if 50 < len(seg) < 2000 and "EXIT" not in ops and "USETMAXREG" not in ops:
                    loops.append(seg)
    return loops


# the non-uniform integer ALU ops of a decode (the table words' and the PRMT lookups')
_INT_OPS = {"IMAD", "IADD3", "VIADD", "LOP3", "ISETP", "SEL", "SHF", "LEA", "SGXT", "IMNMX", "VIMNMX", "PRMT", "BMSK"}
# LLVM's 8-bit range check of the old table expression ((sc - 122) & 0xff) u<= 11, one per block
_BYTE_MASK = re.compile(r"^R\d+, R\d+, 0xff, RZ, 0xc0, !PT$")


@pytest.mark.parametrize("variant, base", [("v138_n64_w4_s2_gl_mx_ws4_tma_lut", "v133_n64_w4_s2_gl_mx_ws4_tma"),
                                           ("v139_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_lut",
                                            "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf")])
def test_offline_sm90_sass_of_the_mx_lut2_table_words(variant, base):
    """MX_LUT2 (v138 / v139, compiled offline, not run on a GPU): the kernel compiles _MX_LUT2_PTX, and the
    decode costs fewer integer instructions per tile than its base's (v133 / v117: the variants differ only
    there): v138's decoder tiles (each of the two partitions) lose the 8-bit range check's mask (one LOP3 per
    block, triton 3.6: 336 / 334 -> 333 / 330 instructions), v139's loop its byte masks too (1164 -> 1146);
    the consumer loops are unchanged, no spills in a decoder (triton 3.6; 3.9: v133's few reloads), none added
    in v117's loop."""
    k_new, new = _sass(variant)
    k_old, old = _sass(base)
    assert "0x504C4848" in k_new.asm["ptx"] and "0x504C4848" not in k_old.asm["ptx"], "MX_LUT2's PTX block"

    def mix(seg):
        ops = [x.op.split(".")[0] for x in seg]
        return dict(n=len(seg), int=sum(op in _INT_OPS for op in ops), local=sum(op in ("LDL", "STL") for op in ops),
                    mask=sum(x.op.startswith("LOP3") and bool(_BYTE_MASK.match(x.operands.strip().rstrip(" ;")))
                             for x in seg))

    if VARIANTS[variant].gluon_ws:
        def parts(sass):
            loops = _tile_loops(sass)
            ops = [[x.op.split(".")[0] for x in seg] for seg in loops]
            return ([mix(seg) for seg, o in zip(loops, ops) if "PRMT" in o and "QGMMA" not in o],
                    [len(seg) for seg, o in zip(loops, ops) if "QGMMA" in o])

        dec_new, cons_new = parts(new)
        dec_old, cons_old = parts(old)
        assert len(dec_new) == len(dec_old) == 2 and cons_new == cons_old and len(cons_new) == 2, (dec_new, dec_old)
        for a, b in zip(dec_new, dec_old):  # (the two decoder partitions, in address order)
            assert a["n"] < b["n"] and a["int"] < b["int"], (a, b)
            assert b["mask"] >= 4 and a["mask"] == 0, (a, b)  # (>= 4.5 blocks a thread a tile)
            # (triton 3.6, the H200's: no local traffic; 3.9 reloads 2 loop invariants a tile in both)
            assert a["local"] <= b["local"] and (a["local"] == 0 or _triton_version() >= (3, 9)), (a, b)
    else:
        from mla.analysis.isa import sass_functions, sass_hottest_loop

        def hot(sass):
            loop = sass_hottest_loop(sass)
            return mix([i for f in sass_functions(sass).values() for i in f
                        if loop.start_addr <= i.addr <= loop.end_addr])

        a, b = hot(new), hot(old)
        # 9 blocks a thread a tile: at least one instruction fewer each
        assert a["n"] <= b["n"] - 9 and a["int"] <= b["int"] - 9 and a["mask"] < b["mask"], (a, b)
        assert a["local"] <= b["local"], (a, b)


def _vt_probe():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "probes" / "vt_ldmatrix_probe.py"
    spec = importlib.util.spec_from_file_location("vt_ldmatrix_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_v_ldsm_layouts_are_the_ones_the_model_checks():
    """V_LDSM (v140 - v142): the kernel's load layout, PRMT selectors and both relabelling permutes are the
    constants scripts/probes/vt_ldmatrix_probe.py's model verifies element by element (every byte of the
    8192 A registers of a tile where wgmma reads it, P^T's k order unchanged, 8 distinct bank groups per
    ldmatrix phase, the epilogue back in dim order); the model runs here."""
    from mla.kernels.triton import gluon_sm90

    if gluon_sm90.gl is None:
        pytest.skip(f"no Gluon in this triton: {gluon_sm90.GLUON_IMPORT_ERROR}")
    probe = _vt_probe()
    assert probe.model_check(verbose=False) and probe.epilogue_check(verbose=False)
    layout = gluon_sm90._V_LDSM
    assert (layout.reg_bases, layout.lane_bases, layout.warp_bases) == (probe.LDSM_REG, probe.LDSM_LANE,
                                                                          probe.LDSM_WARP)
    assert gluon_sm90._PAIR_PTX.value == (f"prmt.b32 $0, $2, $3, {probe.PAIR_SEL[0]:#x}; "
                                          f"prmt.b32 $1, $2, $3, {probe.PAIR_SEL[1]:#x};")
    assert f"(0, 1, 14, 11, 12, 13, 3, 4, 6, 8, 5, 7, 2, 9, 10)" == str(probe.PERM_LDSM)
    assert str(probe.PERM_LDSM) in gluon_sm90._v_fragments8_ldsm.src
    assert str(probe.NATURAL_PERM_LDSM) in gluon_sm90._natural_rows_ldsm.src
    # the warp-specialized consumers store slice by slice (_ldsm_slice_dims): the same dims as that permute
    # (axes m5..m0, R, then s0 s1 s2: each gl.join adds a last axis -> R, then the 9 dim bits, highest first)
    perm = probe.NATURAL_PERM_LDSM
    for m in range(64):
        for sl in range(8):
            src = [(m >> (5 - i)) & 1 for i in range(6)] + [0] + [(sl >> i) & 1 for i in range(3)]
            dim = sum(src[perm[j]] << (9 - j) for j in range(1, 10))
            assert gluon_sm90._ldsm_slice_dims.fn(m, sl) == dim, (m, sl)


@pytest.mark.parametrize("variant, base", [("v140_n64_w4_s2_gl_mx_ws4_tma_ldsm", "v133_n64_w4_s2_gl_mx_ws4_tma"),
                                           ("v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm",
                                            "v116_n64_w4_s2_gl_en_ls_p8_qc_pp_cf"),
                                           ("v142_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ldsm",
                                            "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf")])
def test_offline_sm90_sass_of_the_ldmatrix_v_fragments(variant, base):
    """V_LDSM (compiled offline, not run on a GPU): in each consumer loop (v140: both consumer partitions;
    v141 / v142: the one loop) V^T's 16 LDS.128 a tile become 16 LDSM.16.MT88.4 (ldmatrix.x4.trans.b16) and
    the byte transposes' 128 PRMT become 64 (triton 3.6: v133's consumer tile 609 / 596 -> 545 / 529
    instructions, v116's 681 -> 616, v117's 1164 -> 1102). Decoders unchanged. No local traffic added in
    the loop, except v142's (v117 is at 255 registers: 7 reloads and 1 spill a tile on 3.6)."""
    k_new, new = _sass(variant)
    k_old, old = _sass(base)

    def mix(seg):
        ops = [x.op for x in seg]
        return dict(n=len(seg), ldsm=sum(o.startswith("LDSM.16.MT88") for o in ops),
                    lds128=sum(o.startswith("LDS.128") for o in ops), prmt=sum(o.startswith("PRMT") for o in ops),
                    local=sum(o.split(".")[0] in ("LDL", "STL") for o in ops))

    if VARIANTS[variant].gluon_ws:
        def consumers(sass):
            return [mix(seg) for seg in _tile_loops(sass) if any(x.op.startswith("QGMMA") for x in seg)]

        def decoders(sass):
            return [len(seg) for seg in _tile_loops(sass) if not any(x.op.startswith("QGMMA") for x in seg)
                    and any(x.op.startswith("PRMT") for x in seg)]

        pairs = list(zip(consumers(new), consumers(old)))
        assert len(pairs) == 2 and decoders(new) == decoders(old), (pairs, decoders(new), decoders(old))
    else:
        from mla.analysis.isa import sass_functions, sass_hottest_loop

        def hot(sass):
            loop = sass_hottest_loop(sass)
            return mix([i for f in sass_functions(sass).values() for i in f
                        if loop.start_addr <= i.addr <= loop.end_addr])

        pairs = [(hot(new), hot(old))]
    for a, b in pairs:
        assert a["ldsm"] == 16 and b["ldsm"] == 0, (a, b)
        assert a["lds128"] == b["lds128"] - 16 and a["prmt"] <= b["prmt"] - 64, (a, b)
        assert a["n"] <= b["n"] - 60, (a, b)
        if not variant.startswith("v142"):
            assert a["local"] <= b["local"], (a, b)


@pytest.mark.parametrize("variant, base", [("v145_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_kf",
                                            "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm"),
                                           ("v146_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_kf",
                                            "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf")])
def test_offline_sm90_sass_of_kv_first_asks_for_the_tile_before_q(variant, base):
    """KV_FIRST (compiled offline): the first tile's cp.async (LDGSTS) comes before Q's 16-byte loads, on any
    triton. Without the pin the order is the compiler's: triton 3.9 (CI) puts every LDGSTS of v141 / v117 after
    Q's loads and quantization (v141: after the kv_indptr loads it sank there too); triton 3.6 (the H200) does so
    for v117 only (round 39, where neither pin measured faster). The tile loop is the same instructions."""
    from mla.analysis.isa import sass_functions, sass_hottest_loop

    def order(sass):
        body = [i for f in sass_functions(sass).values() for i in f]
        first = {k: next(n for n, i in enumerate(body) if i.op.startswith(k)) for k in ("LDGSTS", "LDG.E.128")}
        loop = sass_hottest_loop(sass)
        return first, sum(loop.start_addr <= i.addr <= loop.end_addr for i in body)

    (new, n_new), (old, n_old) = order(_sass(variant)[1]), order(_sass(base)[1])
    assert new["LDGSTS"] < new["LDG.E.128"], new
    import triton
    if tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 9):
        assert old["LDGSTS"] > old["LDG.E.128"], old
    assert abs(n_new - n_old) <= 8, (n_new, n_old)


Q_FIRST = {"v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf": "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf",
           "v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf": "v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur"}


@pytest.mark.parametrize("variant, base", sorted(Q_FIRST.items()))
def test_offline_sm90_sass_of_q_first_asks_for_q_then_the_tile_then_quantizes(variant, base):
    """Q_FIRST (compiled offline, 16 splits): Q's nine 16-byte loads come before the first tile's cp.async (LDGSTS),
    and the first instruction that uses Q (the row maxima, FMNMX) after the last of those copies, on any triton.
    Without the zeros read back from shared memory ptxas hoists the quantization above the barrier and with it
    the wait for Q's loads (seen on 3.6: the copies then left after Q had landed). The tile loop is unchanged."""
    from mla.analysis.isa import sass_functions, sass_hottest_loop

    def order(sass):
        ops = [i.op for f in sass_functions(sass).values() for i in f]
        q = [n for n, op in enumerate(ops) if op == "LDG.E.128"][:9]
        first_cp = next(n for n, op in enumerate(ops) if op.startswith("LDGSTS"))
        last_cp = max(n for n in range(first_cp, first_cp + 300) if ops[n].startswith("LDGSTS"))
        first_use = next(n for n, op in enumerate(ops) if op.startswith("FMNMX"))
        loop = sass_hottest_loop(sass)
        body = [i for f in sass_functions(sass).values() for i in f]
        return q, first_cp, last_cp, first_use, sum(loop.start_addr <= i.addr <= loop.end_addr for i in body)

    q, first_cp, last_cp, first_use, n_new = order(_sass(variant, 16)[1])
    assert len(q) == 9 and q[-1] < first_cp, (q, first_cp)
    assert first_use > last_cp, (first_use, last_cp)
    assert abs(n_new - order(_sass(base, 16)[1])[-1]) <= 8


def test_offline_sm90_sass_of_cp_one_drops_the_barriers_between_a_tiles_copies():
    """CP_ONE (v160, compiled offline): the tile as two copies. Triton 3.6 (the device's) puts a bar.sync and three
    dummy shared loads between every two of v158's nine copies into one buffer, in the prologue and in the loop;
    v160's loop has at least 6 barriers fewer there. Triton 3.9 (CI) emits none between them: no more than v158."""
    import collections

    import triton

    from mla.analysis.isa import sass_functions, sass_hottest_loop

    def loop_ops(variant):
        sass = _sass(variant, 16)[1]
        loop = sass_hottest_loop(sass)
        body = [i for f in sass_functions(sass).values() for i in f]
        return collections.Counter(i.op.split(".")[0] for i in body if loop.start_addr <= i.addr <= loop.end_addr)

    new, old = loop_ops("v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1"), loop_ops(
        "v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf")
    assert new["LDGSTS"] == old["LDGSTS"] == 18, (new, old)  # the same bytes: 9 x 2 16-byte copies per thread
    if tuple(int(x) for x in triton.__version__.split(".")[:2]) < (3, 9):
        assert new["BAR"] <= old["BAR"] - 6, (new["BAR"], old["BAR"])
    else:
        assert new["BAR"] <= old["BAR"], (new["BAR"], old["BAR"])


def _loop_body(variant, num_splits=16):
    """The hottest loop's instructions (isa.SassInstruction: addr, op, ...) of a variant compiled offline."""
    from mla.analysis.isa import sass_functions, sass_hottest_loop

    sass = _sass(variant, num_splits)[1]
    loop = sass_hottest_loop(sass)
    return [i for f in sass_functions(sass).values() for i in sorted(f, key=lambda i: i.addr)
            if loop.start_addr <= i.addr <= loop.end_addr]


@pytest.mark.parametrize("variant, base", [("v166_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1_il",
                                            "v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1")])
def test_offline_sm90_sass_of_issue_late_copies_below_the_fence(variant, base):
    """ISSUE_LATE (round 53): fence_async_shared() is MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S, and the MEMBAR waits for
    the thread's cp.async in flight. v160's loop issues the next tile's copies before tile j's fence (so the fence
    waits for them); v166's issues them after it and before QK's first QGMMA, as many copies."""
    def order(v):
        body = _loop_body(v)
        first = lambda name: next(k for k, i in enumerate(body) if i.op.startswith(name))  # noqa: E731
        return first("MEMBAR"), first("LDGSTS"), first("QGMMA"), sum(i.op.startswith("LDGSTS") for i in body)

    m, c, q, n = order(variant)
    assert m < c < q, (m, c, q)
    m0, c0, q0, n0 = order(base)
    assert c0 < m0 < q0 and n == n0, (m0, c0, q0, n, n0)


def test_offline_sm90_sass_of_kv_tma_waits_on_a_barrier_not_on_copies():
    """KV_TMA (v168): the loop loads tiles with UTMALDG (nine a tile) and waits on the stage's mbarrier; no cp.async,
    so the MEMBARs left in it (PV's proxy fence; the zeroing of a partial last tile's rows) wait for no load."""
    body = _loop_body("v168_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_kt")
    ops = [i.op.split(".")[0] for i in body]
    assert "LDGSTS" not in ops and ops.count("UTMALDG") == 9, collections.Counter(ops)
    assert any(i.op.startswith("SYNCS.PHASECHK") for i in body)


UNIFORM = {"v151_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur": "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm",
           "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf": "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm",
           "v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur": "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf",
           "v158_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf": "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm",
           "v159_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_qf": "v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf"}


@pytest.mark.parametrize("variant, base", sorted(UNIFORM.items()))
def test_offline_sm90_ptx_of_uniform_ranges_skips_the_indptr_loads(variant, base):
    """UNIFORM_RANGES (compiled offline, 16 splits): the program's first global loads (qo_indptr[b], kv_indptr[b],
    kv_indptr[b + 1]) sit behind a branch on the launch argument uniform_kv_len, whose uniform side (the
    fall-through up to the branch target) loads nothing; the kernel it is built on loads them unconditionally."""
    def prologue(ptx):
        body = ptx[ptx.index(".entry"):]
        return body, body.index("ld.global")

    body, first_ld = prologue(_sass(variant, 16)[0].asm["ptx"])
    m = re.search(r"@(%p\d+) bra\s+(\$L__BB\d+_\d+);", body[:first_ld])
    assert m, "no branch before the first global load"
    uniform_side = body[m.end():body.index(m.group(2) + ":")]
    assert "ld.global" not in uniform_side and "ld.param" not in uniform_side.replace("ld.param.b64", "")
    assert body.index(m.group(2) + ":") < first_ld  # the loads are the branch target's (ragged) side
    base_body, base_first = prologue(_sass(base, 16)[0].asm["ptx"])
    assert not re.search(r"@%p\d+ bra", base_body[:base_first]), "the base kernel loads its ranges first"


@pytest.mark.parametrize("variant", sorted(UNIFORM))
def test_uniform_ranges_compile_with_the_work_list_of_ragged_batches(variant):
    """The default call takes the balanced work list (fused reduce) for a ragged batch, on the default variant:
    UNIFORM_RANGES must build there too (the plan passes uniform_kv_len 0, so the indptrs are loaded; campaign
    23's default-rule tests caught a compile-time assertion that refused the pair)."""
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton.offline import compile_offline

    k = compile_offline(GPUTarget("cuda", 90, 32), variant=variant, kv_format=VARIANTS[variant].gluon_kv,
                        num_splits=4, fused_reduce=True, balanced=True)
    assert "ld.global" in k.asm["ptx"]


COOP = sorted(n for n, v in VARIANTS.items() if v.coop_merge)


@pytest.mark.parametrize("variant", COOP)
def test_offline_sm90_ptx_of_the_coop_merge(variant):
    """COOP_MERGE (compiled offline, 16 splits): the launch is cooperative; after its partial store each program
    arrives once (a release add), polls the counter with acquire loads in a loop, reads the partials at L2
    (ld.global.cg), leaves with one relaxed add and may reset the counter with one exchange. The tile-reduce
    kernel it is built on has none of those."""
    k = _sass(variant, 16)[0]
    ptx = k.asm["ptx"]
    assert k.metadata["launch_cooperative_grid"] is True
    # (the spelling varies with the triton: 3.9 writes red.global.gpu.release.add and ld.global.gpu.acquire)
    ops = [ln.strip().split(" ", 1)[-1] if ln.strip().startswith("@") else ln.strip() for ln in ptx.splitlines()]
    atomics = [op.split()[0] for op in ops if re.match(r"(red|atom)\.", op)]
    ordered = lambda op, *sems: any(f".{m}" in op for m in sems)  # noqa: E731
    adds = [op for op in atomics if ".add" in op]
    assert len([op for op in adds if ordered(op, "release", "acq_rel")]) == 1, ("one arrival", atomics)
    assert any(re.match(r"(ld|atom)\.", op) and ".acquire" in op.split()[0] for op in ops), "the poll"
    assert len([op for op in adds if not ordered(op, "release", "acq_rel", "acquire")]) == 1, ("one departure", atomics)
    assert len([op for op in atomics if ".exch" in op]) == 1, ("the reset", atomics)
    assert "ld.global.cg" in ptx
    base = _sass(variant.replace("v147", "v141").replace("v148", "v117").rsplit("_cm", 1)[0], 16)[0]
    assert base.metadata["launch_cooperative_grid"] is False
    assert not re.search(r"gpu\.acquire|gpu\.release", base.asm["ptx"])


def test_coop_merge_split_counts_keep_every_program_resident():
    """coop_num_splits: a heuristic count that would put more programs than SMs on the grid is lowered to one
    program per SM with the same tiles per split (no empty split); one that fits is kept; a given one that
    does not fit is refused by name."""
    from mla.kernels.triton.launch import coop_num_splits

    assert coop_num_splits(16, 4, 1024, 1, 132, 64) == 16  # bs4-kv1024: 64 programs fit
    assert coop_num_splits(64, 4, 8192, 1, 132, 64) == 32  # 128 tiles: 4 a split, not 33 splits with one empty
    assert coop_num_splits(8, 32, 1024, 1, 132, 64) == 4
    assert coop_num_splits(4, 64, 1024, 1, 132, 64) == 2
    assert coop_num_splits(8, 32, 8192, 1, 132, 64) == 4
    assert coop_num_splits(4, 4, 8192, 2, 132, 64) == 4  # 32 heads: two head groups per element
    assert coop_num_splits(40, 4, 8192, 1, 132, 64) == 32
    for splits, bs, kv, groups in ((16, 4, 1024, 1), (64, 4, 8192, 1), (8, 32, 8192, 1), (33, 8, 8192, 1)):
        n = coop_num_splits(splits, bs, kv, groups, 132, 64)
        assert n * bs * groups <= 132 and (n - 1) * -(-(-(-kv // n)) // 64) * 64 < kv, (splits, bs, kv, n)
    with pytest.raises(ValueError, match="resident at once.*at most 4 splits"):
        coop_num_splits(8, 32, 1024, 1, 132, 64, given=True)
    from mla.kernels.triton.launch import coop_constexprs  # what the plan and the offline compile pass

    assert coop_constexprs(16) == (dict(COOP_MERGE=True, SPLITS_P2=16), dict(launch_cooperative_grid=True))
    assert coop_constexprs(3) == (dict(COOP_MERGE=True, SPLITS_P2=4), dict(launch_cooperative_grid=True))
    assert coop_constexprs(1) == (dict(COOP_MERGE=False, SPLITS_P2=2), {})  # one split: the single pass, plain launch


def test_coop_merge_is_refused_where_it_is_not_built():
    """The knob on a kernel without the coop epilogue (generation 1 here, on CPU) is a ValueError naming it."""
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("generation 1 on CPU runs under TRITON_INTERPRET=1")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    data = mla.generate_input(2, 1, 128, seed=3, device=dev)
    with pytest.raises(ValueError, match="coop_merge=True.*one-warpgroup generation-3"):
        TritonDecodePlan(data, kv_format="fp8", variant="v28_n32_w4_s3_tr", coop_merge=True)
    with pytest.raises(ValueError, match="coop_merge must be True, False or None"):
        TritonDecodePlan(data, kv_format="fp8", coop_merge="yes")


# -- on an sm90 GPU: the gates every variant passes -------------------------------------------------
gpu = pytest.mark.skipif(not SM90, reason="Gluon kernels run on sm90 only (no interpreter)")


def _checked(data, variant, num_splits=None, plan=None, **kw):
    from test_triton_kernels import format_reference  # the fp64 own-format reference

    fmt = VARIANTS[variant].gluon_kv
    if plan is None:
        plan = TritonDecodePlan(data, kv_format=fmt, variant=variant, num_splits=num_splits, graph=False, **kw)
    for t in plan.outputs:
        t.fill_(float("nan"))
    out = plan.run(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all(), "unwritten (NaN-poisoned) or non-finite outputs"
    cpu = (data[0].cpu(), {k: (v.cpu() if torch.is_tensor(v) else tuple(t.cpu() for t in v))
                           for k, v in data[1].items()}, data[2].cpu(), data[3].cpu(), data[4])
    m = mla.accuracy_metrics(out.cpu(), format_reference(cpu, fmt, "bf16"))
    assert m["rel_l2"] < 1e-2, (variant, m)
    ok, msg = mla.check(data, out, reference_output=mla.reference(data, kv_format=fmt))
    assert ok, msg
    return plan


@gpu
@pytest.mark.parametrize("variant", [n for n in GEN3 if not VARIANTS[n].gluon_steal])  # (v154: uniform only)
@pytest.mark.parametrize("num_splits", [None, 3])
def test_ragged_lengths_that_divide_no_tile(variant, num_splits):
    data = mla.generate_input(4, 1, 333, seed=11, device="cuda", kv_lens=(1, 65, 130, 333))
    _checked(data, variant, num_splits)


@gpu
@pytest.mark.parametrize("variant", GEN3)
@pytest.mark.parametrize("q_seq_len, num_heads", [(2, 16), (4, 16), (1, 32), (4, 32)])
def test_multi_token_queries_and_32_heads(variant, q_seq_len, num_heads):
    data = mla.generate_input(3, q_seq_len, 517, seed=5, device="cuda", num_heads=num_heads)
    _checked(data, variant, 2)


@gpu
@pytest.mark.parametrize("variant", GEN3)
def test_many_splits_and_a_long_sequence(variant):
    data = mla.generate_input(2, 1, 8192, seed=7, device="cuda")
    _checked(data, variant, 64)
    _checked(data, variant, 1)


@gpu
@pytest.mark.parametrize("variant", [HOPPER_DEFAULT["fp8"], *WS_FP8])
def test_fp8_rows_past_a_program_end_never_reach_its_output(variant):
    """A tile that ends inside the next element's rows: the one-warpgroup kernel's masked cp.async zero-fills
    them, the TMA loader (v149+) copies them and its consumer zeroes them. NaN bytes there (e4m3fn 0x7F) must
    leave element 0 exact - V x P = NaN x 0 would not - while element 1's own NaN rows make its output NaN."""
    data = mla.generate_input(2, 1, 100, seed=31, device="cuda", kv_lens=(100, 100))
    ref = mla.reference(data, kv_format="fp8")
    data[1]["fp8"][0][100:128].view(torch.uint8).fill_(0x7F)  # element 1's first 28 rows: tile 1 of element 0
    plan = TritonDecodePlan(data, kv_format="fp8", variant=variant, num_splits=1, graph=False)
    for t in plan.outputs:
        t.fill_(float("nan"))
    out = plan.run(data)
    torch.cuda.synchronize()
    assert torch.isfinite(out[0]).all(), "rows past element 0's end reached its output"
    assert torch.isnan(out[1]).any(), "element 1 reads its own NaN rows"
    err = (out[0].float() - ref[0].float()).norm() / ref[0].float().norm()
    assert err < 1e-2, float(err)


# the fused reduce is one epilogue for every EPI_NATURAL variant: the defaults and the newest carry it here
FUSED = sorted({*HOPPER_DEFAULT.values(), "v119_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ow", *TWO_WG})


def _graph_replays_on_new_values(variant, seed, **kw):
    """A graph=True plan at bs8-kv2048 (4 splits), captured on its first call and then replayed on new values
    copied into the same tensors, each output checked and the one-launch reduce's counters back at 0."""
    data = mla.generate_input(8, 1, 2048, seed=seed, device="cuda")
    graphed = TritonDecodePlan(data, kv_format=VARIANTS[variant].gluon_kv, variant=variant, num_splits=4, graph=True,
                               **kw)
    for s in (seed + 1, seed + 2, seed + 3):
        fresh = mla.generate_input(8, 1, 2048, seed=s, device="cuda")
        for dst, src in ((data[0], fresh[0]), *((data[1][k], fresh[1][k]) for k in data[1])):
            for d, t in zip(dst if isinstance(dst, tuple) else (dst,), src if isinstance(src, tuple) else (src,)):
                d.copy_(t)
        _checked(data, variant, plan=graphed)
        assert int(graphed.counters.abs().sum()) == 0
    return graphed


@gpu
@pytest.mark.parametrize("variant", FUSED)
def test_fused_reduce_is_one_launch_and_right_on_every_call(variant):
    """FUSED_REDUCE: the last program of each (batch element, head group) merges the partials. Ragged
    lengths (some splits empty), 4-token queries with 32 heads, and repeated calls and graph replays
    on new inputs in place: the counters must be back at 0 after every call."""
    data = mla.generate_input(4, 1, 333, seed=21, device="cuda", kv_lens=(1, 65, 130, 333))
    plan = _checked(data, variant, 5, fused_reduce=True)
    assert plan.launches == 1 and plan.config["fused_reduce"] is True
    assert int(plan.counters.abs().sum()) == 0, "counters not reset"
    _checked(mla.generate_input(3, 4, 517, seed=22, device="cuda", num_heads=32), variant, 3, fused_reduce=True)
    _graph_replays_on_new_values(variant, 23, fused_reduce=True)


@gpu
@pytest.mark.parametrize("variant", FUSED)
def test_balanced_work_list_on_ragged_batches(variant):
    """WORK_LIST (+ the fused reduce): equal-token splits across the batch, so a long element gets
    more programs; elements that fit one split write the output directly (no partial). Checked on a
    batch with 1-token to 8192-token elements, 4-token queries, and 32 heads."""
    lens = (1, 7, 33, 1000, 8192, 4096, 2048, 513)
    data = mla.generate_input(8, 1, 8192, seed=31, device="cuda", kv_lens=lens)
    plan = _checked(data, variant, None, fused_reduce=True, balanced=True)
    assert plan.balanced and plan.launches == 1 and plan.chunk_tokens % 64 == 0
    splits = plan.work[:, 2].tolist()
    assert max(splits) > 1 and min(splits) == 1, "long elements split, short ones whole"
    assert int(plan.counters.abs().sum()) == 0
    data = mla.generate_input(4, 4, 3000, seed=32, device="cuda", num_heads=32, kv_lens=(5, 3000, 700, 64))
    _checked(data, variant, 6, fused_reduce=True, balanced=True)


def test_balanced_default_rule_follows_round_18():
    """The default call on generation 3 takes the work list + fused reduce for a ragged batch whose
    schedule splits no element more than 8 ways (gen3-r18.csv: bs64 ragged -13% / -25%), not where
    one program would merge 64 partials (bs8 ragged: 1.9x slower), not for uniform batches."""
    from mla.kernels.triton.launch import balanced_by_default

    g3 = VARIANTS[HOPPER_DEFAULT["fp8"]]
    bs8, bs64 = (next(c for c in mla.problem.EXTENDED if c.name == n)
                 for n in ("bs8-kv8192-q1-h16+ragged", "bs64-kv4077-q1-h16+ragged"))
    target = 2 * 132  # one wave of the H200 for one head group
    assert balanced_by_default(g3, bs64.kv_lens, 64, target)
    assert balanced_by_default(VARIANTS[HOPPER_DEFAULT["mxfp4"]], bs64.kv_lens, 64, target)
    assert not balanced_by_default(g3, bs8.kv_lens, 64, target)  # its 8192-token element in 64 splits
    assert not balanced_by_default(g3, [4077] * 64, 64, target)  # uniform
    assert not balanced_by_default(VARIANTS["v75_n64_w4_s3_sab_pvs_c2"], bs64.kv_lens, 64, target)  # gen 2's rule


def test_ws_default_rule_follows_rounds_27_31():
    """The default MXFP4 call takes the warp-specialized kernel (HOPPER_WS_DEFAULT, v133 since round 31)
    exactly where rounds 27-31 measured it faster than v117: programs of >= 32 KV tiles at v117's split
    count (bs256-kv8192, bs128-kv8192, bs256-kv4096, bs64-kv8192), not the losses at 16 tiles
    (bs256-kv1024, bs32-kv8192) or bs4; never for a ragged batch, nor for fp8 with splits given (its rule,
    round 43's, needs the split count it picks itself: test_ws_default_takes_v149_for_fp8_in_one_wave)."""
    from mla.kernels.triton.launch import MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, ws_by_default

    def rule(bs, kv, fmt="mxfp4", lens=None):
        ns = choose_num_splits(bs, kv, 1, 132, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
        return ws_by_default(fmt, lens or [kv] * bs, ns, 64)

    assert [rule(256, 8192), rule(128, 8192), rule(256, 4096), rule(64, 8192)] == [True] * 4
    assert not any(rule(bs, kv) for bs, kv in ((256, 1024), (32, 8192), (4, 8192), (4, 1024)))
    assert not rule(256, 8192, "fp8")
    assert not rule(256, 8192, lens=[8192] * 255 + [100])


def test_ws_default_takes_v143s_kernel_from_32_tiles():
    """Round 38 (gen3-r38a.csv): v143 (v140 with the partials stored from the accumulators) at or below
    v133 and v140 from 32 KV tiles a program (bs32-kv8192 at 4 splits 58.4-58.9 us against 59.3-59.6 / 63.3,
    bs64-kv8192 at 2 splits 98.0-99.3 against 101.6-103.7, bs256-kv8192 347-349 against 371-372 / 355): one
    warp-specialized default from 32 tiles; at 16 it tied v133 at best, so v117's rule stays there."""
    from mla.kernels.triton.launch import MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, ws_default_variant
    from mla.kernels.triton.variants import HOPPER_WS_DEFAULT

    def pick(bs, kv, splits=None):
        ns = splits or choose_num_splits(bs, kv, 1, 132, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
        return ws_default_variant("mxfp4", [kv] * bs, ns, 64)

    ws = HOPPER_WS_DEFAULT["mxfp4"]  # (round 55: v170 = v143 with one partial a program, -2.3..-3.1% at 32-128 tiles)
    assert ws == "v170_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed_pm"
    assert [pick(256, 8192), pick(128, 8192), pick(256, 4096), pick(64, 8192), pick(32, 8192, 4)] == [ws] * 5
    assert pick(32, 8192, 8) is None and pick(4, 1024) is None  # 16 tiles, 1 tile
    v = VARIANTS[ws]
    assert v.gluon_ws_halves and v.gluon_v_ldsm and v.gluon_epi_direct and v.gluon_kv == "mxfp4"


def test_ws_default_choice_runs_one_program_per_sm():
    """r35's split sweep: the warp-specialized kernel at one program per SM beat the split count chosen for
    v117's two per SM (bs32-kv8192: v133 at 4 splits 59.2 us, v117 at 8 66.1; bs64-kv8192: v133 at 2 splits
    102.3, at 4 110.9). The default choice takes that split count, and the kernel from 32 tiles a program."""
    from mla.kernels.triton.launch import MAX_SPLITS, ws_default_choice, ws_num_splits
    from mla.kernels.triton.variants import HOPPER_WS_DEFAULT

    ws = HOPPER_WS_DEFAULT["mxfp4"]

    def choice(bs, kv, fmt="mxfp4", lens=None):
        return ws_default_choice(fmt, lens or [kv] * bs, 1, 132, 64)

    assert choice(32, 8192) == (ws, 4)  # 32 programs x 4 = 128 <= 132 SMs; 2048 tokens = 32 tiles
    assert choice(64, 8192) == (ws, 2)
    assert choice(128, 8192) == (ws, 1)  # 128 tiles a program
    assert choice(256, 8192) == (ws, 1)
    assert choice(256, 4096) == (ws, 1)
    assert choice(32, 4096) == (None, None)  # 4 splits of 1024 tokens: 16 tiles, v117's rule instead
    assert choice(4, 8192) == (None, None) and choice(256, 1024) == (None, None)
    assert choice(32, 8192, lens=[8192] * 31 + [100]) == (None, None)  # ragged: the work list instead
    assert ws_num_splits(1, 1 << 20, 1, 132, 64) == MAX_SPLITS // 2  # two partials a program
    assert ws_num_splits(2, 64, 1, 132, 64) == 1  # never a split shorter than one tile


def test_short_programs_run_one_per_sm_in_the_default_call():
    """r36b's split sweep (issue10/splits-r36b.csv): where choose_num_splits' two programs per SM leave every
    split short, one per SM is faster (fp8 below 1024 tokens a split, MXFP4 at <= 2 tiles); the count is
    lowered to the fewest splits with the same tiles per split. Plans resolve it only for the default call."""
    from mla.kernels.triton.launch import MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, one_per_sm_splits

    def rule(fmt, bs, kv):
        two = choose_num_splits(bs, kv, 1, 132, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
        return two, one_per_sm_splits(fmt, two, bs, kv, 1, 132, 64)

    assert rule("fp8", 4, 8192) == (64, 32)  # 19.8 us against 20.5
    assert rule("fp8", 4, 4096) == (64, 32)  # 16.2 against 17.5
    assert rule("fp8", 8, 8192) == (33, 16)  # 26.8 against 29.1 (33 programs' worth of tiles: 8 a split)
    assert rule("fp8", 32, 1024) == (8, 4) and rule("fp8", 64, 1024) == (4, 2)
    assert rule("fp8", 32, 8192) == (8, 8) and rule("fp8", 64, 8192) == (4, 4)  # 1024+ tokens: two per SM
    assert rule("fp8", 256, 1024) == (1, 1) and rule("fp8", 4, 1024) == (16, 16)  # 1 tile a split already
    assert rule("mxfp4", 4, 8192) == (64, 32) and rule("mxfp4", 32, 1024) == (8, 4)
    assert rule("mxfp4", 8, 8192) == (33, 33) and rule("mxfp4", 64, 1024) == (4, 4)  # 4 tiles: two per SM
    assert one_per_sm_splits("bf16", 64, 4, 8192, 1, 132, 64) == 64  # the portable kernels keep their rule
    data = mla.generate_input(32, 1, 1024, seed=3)
    default = TritonDecodePlan(data, kv_format="fp8", graph=False)
    named = TritonDecodePlan(data, kv_format="fp8", variant=default.variant.name, graph=False)
    if default.variant.name == HOPPER_DEFAULT["fp8"]:  # (an sm90 GPU; elsewhere the portable default)
        assert (default.num_splits, named.num_splits) == (4, 8)


def test_ws_default_takes_v149_for_fp8_in_one_wave():
    """Round 43 (gen3/ws-fp8-settled-r43a.csv, every row past the first row's slow phase, alternated twice in
    the same processes): v149 at one program per SM against v141's default, bs32-kv8192 (32 tiles) 60.5 / 60.5 vs
    60.4 / 60.5 us, bs64-kv8192 (64) 96.4 / 96.2 vs 99.2 / 99.5, bs128-kv8192 (128) 164.3 / 163.0 vs 173.5 / 173.8;
    with two waves of programs it did not pay (bs256-kv8192 314.1 / 313.6 vs 312.7 / 312.4; round 41's
    bs256-kv4096 178.0 / 178.6 vs 168.7 / 170.1). So the fp8 default takes v149 from 32 tiles a program where
    its programs fit one wave, at ws_num_splits' count; else v141 at its own."""
    from mla.kernels.triton.launch import ws_default_choice
    from mla.kernels.triton.variants import HOPPER_WS_DEFAULT, HOPPER_WS_ONE_WAVE

    ws = HOPPER_WS_DEFAULT["fp8"]
    assert ws == "v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed" and "fp8" in HOPPER_WS_ONE_WAVE
    v = VARIANTS[ws]
    assert v.gluon_ws and v.gluon_kv == "fp8"

    def choice(bs, kv, lens=None, sms=132):
        return ws_default_choice("fp8", lens or [kv] * bs, 1, sms, 64)

    assert choice(32, 8192) == (ws, 4) and choice(64, 8192) == (ws, 2) and choice(128, 8192) == (ws, 1)
    assert choice(256, 8192) == (None, None) and choice(256, 4096) == (None, None)  # 256 programs: two waves
    assert choice(128, 8192, sms=120) == (None, None)  # the same batch on a GPU of fewer SMs: two waves
    assert choice(32, 4096) == (None, None) and choice(4, 8192) == (None, None)  # 16 tiles, 4 tiles a program
    assert choice(64, 8192, lens=[8192] * 63 + [100]) == (None, None)  # ragged: the work list instead
    # the MXFP4 rule keeps its second wave (rounds 27-38 measured it there)
    assert ws_default_choice("mxfp4", [8192] * 256, 1, 132, 64) == (HOPPER_WS_DEFAULT["mxfp4"], 1)


def test_tma_default_takes_v168_from_32_tiles_and_v169_from_128_in_two_waves():
    """Round 54 (H100, data/measured/h100/issue10/tma-long-r54a.csv, tma-rule-edges-r54e.csv, two rounds each): the
    fp8 tiles by TMA against the default's kernels at its split counts - v168 -10% against v149 at 32 tiles a program
    (bs32-kv8192), -6% at 64 (bs64-kv8192), -5% at 128 in one wave (bs128-kv8192, where v169 is 1.7% slower than
    v168); v169 -4.8% against v160 at 128 tiles where the 256 programs outnumber the SMs (bs256-kv8192). Not taken:
    v168 at 16 tiles (-1.3..-2.0%), v169 at 64 (-0.8% against v168). The rule: by KV tiles a program at the split
    count already chosen, v169 only where the programs outnumber the SMs; uniform fp8 batches only."""
    from mla.kernels.triton.launch import tma_default_variant
    from mla.kernels.triton.variants import HOPPER_TMA_DEFAULT

    (t169, over169, v169), (t168, over168, v168) = HOPPER_TMA_DEFAULT["fp8"]
    assert (t169, over169, t168, over168) == (128, True, 32, False)
    assert (VARIANTS[v168].gluon_kv_tma, VARIANTS[v168].num_stages) == (True, 2)
    assert (VARIANTS[v169].gluon_kv_tma, VARIANTS[v169].num_stages) == (True, 3)

    def tma(bs, kv, splits, fmt="fp8", lens=None, sms=132):
        return tma_default_variant(fmt, lens or [kv] * bs, splits, 64, 1, sms)

    assert tma(32, 8192, 4) == v168 and tma(64, 8192, 2) == v168 and tma(4, 32 * 64, 1) == v168  # 32 / 64 / 32 tiles
    assert tma(4, 31 * 64, 1) is None and tma(256, 1024, 1) is None and tma(32, 8192, 8) is None  # 31 / 16 / 16 tiles
    assert tma(4, 31 * 64 + 1, 1) == v168  # a partial last tile counts: 32 tiles
    assert tma(256, 8192, 1) == v169 and tma(256, 127 * 64 + 1, 1) == v169 and tma(256, 127 * 64, 1) == v168
    assert tma(128, 8192, 1) == v168 and tma(132, 8192, 1) == v168 and tma(133, 8192, 1) == v169  # one wave or two
    assert tma(128, 8192, 1, sms=120) == v169  # the same batch on a GPU of fewer SMs: two waves
    assert tma(256, 4096, 1) == v168  # 64 tiles in two waves
    assert tma(256, 8192, 1, "mxfp4") is None and tma(256, 8192, 1, "bf16") is None  # fp8 only
    assert tma(4, 8192, 1, lens=[8192, 8192, 8192, 100]) is None  # ragged: the work list


def test_default_kernel_choice_on_the_leaderboard_shapes():
    """The default call's kernel swap (launch.default_kernel_choice, the rule TritonDecodePlan applies on sm90),
    offline for a 132-SM GPU at the heuristic's split count: the fp8 TMA-tile kernels where round 54 measured them
    faster, at the split counts the rules chose before; kv_tma=False is round 53's default (v149 in one wave, v160
    else); MXFP4 unchanged; a ragged batch never."""
    from mla.kernels.triton.launch import MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, default_kernel_choice
    from mla.kernels.triton.variants import HOPPER_TMA_DEFAULT, HOPPER_WS_DEFAULT

    v169, v168 = (name for _, _, name in HOPPER_TMA_DEFAULT["fp8"])
    v149, v143 = HOPPER_WS_DEFAULT["fp8"], HOPPER_WS_DEFAULT["mxfp4"]

    def choice(fmt, bs, kv, **kw):
        ns = choose_num_splits(bs, kv, 1, 132, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
        name, one_wg_splits, splits = default_kernel_choice(fmt, [kv] * bs, ns, True, 1, 132, 64, **kw)
        return (name, splits) if name else (None, one_wg_splits)

    assert choice("fp8", 4, 1024) == (None, 16) and choice("fp8", 4, 8192) == (None, 32)
    assert choice("fp8", 32, 1024) == (None, 4) and choice("fp8", 64, 1024) == (None, 2)
    assert choice("fp8", 256, 1024) == (None, 1)  # 16 tiles a program
    assert choice("fp8", 32, 8192) == (v168, 4) and choice("fp8", 64, 8192) == (v168, 2)  # v149's one wave
    assert choice("fp8", 256, 8192) == (v169, 1) and choice("fp8", 128, 8192) == (v168, 1)
    assert choice("fp8", 32, 8192, kv_tma=False) == (v149, 4) and choice("fp8", 64, 8192, kv_tma=False) == (v149, 2)
    assert choice("fp8", 256, 8192, kv_tma=False) == (None, 1)
    # without the warp-specialized swap the TMA rule reads the one-warpgroup count: 4 splits of 32 tiles
    assert choice("fp8", 64, 8192, warp_specialized=False) == (v168, 4)
    assert choice("fp8", 64, 8192, warp_specialized=False, kv_tma=False) == (None, 4)
    assert choice("mxfp4", 32, 8192) == (v143, 4) and choice("mxfp4", 256, 8192) == (v143, 1)
    assert choice("mxfp4", 4, 8192) == (None, 32)
    ragged = default_kernel_choice("fp8", [8192] * 63 + [8000], 4, True, 1, 132, 64, ragged=True)
    assert ragged[0] is None
    # splits given (not the heuristic's): the TMA rule by tiles at that count; fp8's warp-specialized rule never
    assert default_kernel_choice("fp8", [8192] * 64, 2, False, 1, 132, 64) == (v168, 2, 2)
    assert default_kernel_choice("fp8", [8192] * 64, 8, False, 1, 132, 64) == (None, 8, None)


def test_num_splits_kernel_gives_each_kernel_the_default_calls_count():
    """num_splits="kernel" (launch.kernel_rule_splits): a named kernel at the split count the default call's rules give
    it. Round 70's variant sweep ran every kernel at the bench's two programs an SM instead: v170 at 8 splits of
    bs32-kv8192 (two waves of a one-CTA-an-SM kernel) 68.4 us against the default call's 58.1 at 4. Offline, for a
    132-SM GPU: the default call's own kernel at "kernel" is the default call on every leaderboard shape (the same
    rules that sm90_default_call evaluates), and each family takes its own rule."""
    from mla.analysis.measured import sm90_default_call
    from mla.kernels.triton.launch import MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, kernel_rule_splits
    from mla.kernels.triton.variants import GEN2_DEFAULT, get_variant

    def splits(name, fmt, bs, kv, lens=None):
        two = choose_num_splits(bs, kv, 1, 132, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
        return kernel_rule_splits(get_variant(name), fmt, lens or [kv] * bs, two, 1, 132, ragged=lens is not None)

    for case in mla.get_cases("leaderboard"):
        for fmt in ("fp8", "mxfp4"):
            d = sm90_default_call(case.name, fmt)
            assert splits(d["variant"], fmt, case.batch_size, case.kv_seq_len) == d["splits"], (case.name, fmt, d)
    by_name = {n.split("_")[0]: n for n in VARIANTS}
    v143, v149, v159, v160, v168, v169, v170 = (by_name[k] for k in ("v143", "v149", "v159", "v160", "v168", "v169",
                                                                     "v170"))
    # bs32-kv8192: two per SM is 8 splits; the warp-specialized and TMA-tile kernels run one program an SM (4)
    assert [splits(v, "mxfp4", 32, 8192) for v in (v143, v159, v170)] == [4, 8, 4]
    assert [splits(v, "fp8", 32, 8192) for v in (v149, v160, v168, v169)] == [4, 8, 4, 4]
    # short splits: the one-warpgroup kernels one program an SM (bs4-kv8192: 32 splits of 4 tiles, not 64 of 2)
    assert splits(v160, "fp8", 4, 8192) == 32 and splits(v159, "mxfp4", 4, 8192) == 32
    assert splits(v170, "mxfp4", 4, 8192) == 32  # (ws_num_splits: 132 // 4 = 33, at most MAX_SPLITS // 2 = 32)
    assert [splits(v, "fp8", 256, 8192) for v in (v149, v160, v168, v169)] == [1, 1, 1, 1]
    # the portable generations keep two programs an SM
    assert splits(GEN2_DEFAULT["fp8"], "fp8", 32, 8192) == 8 and splits(GEN2_DEFAULT["mxfp4"], "mxfp4", 4, 8192) == 64
    # a ragged batch: no TMA swap in the chain, so a TMA kernel gets the one-warpgroup count
    assert splits(v168, "fp8", 32, 8192, lens=[8192] * 31 + [4000]) == 8


def test_num_splits_kernel_is_a_config_choice():
    from mla.backends.triton_backend import BACKEND

    BACKEND.check_config({"num_splits": "kernel"})
    BACKEND.check_config({"num_splits": "kernel", "variant": HOPPER_DEFAULT["fp8"]})
    with pytest.raises(ValueError, match="'auto', 'kernel' or 'race'"):
        BACKEND.check_config({"num_splits": "kernels", "variant": HOPPER_DEFAULT["fp8"]})
    data = mla.generate_input(2, 1, 64, seed=1)
    with pytest.raises(ValueError, match="'auto', 'kernel' or 'race'"):
        TritonDecodePlan(data, kv_format="fp8", num_splits="kernels")
    if not SM90:  # (CPU: the portable default under the interpreter, at its two-per-SM count either way)
        pytest.importorskip("triton")
        if os.environ.get("TRITON_INTERPRET") == "1":
            big = mla.generate_input(4, 1, 2048, seed=1)
            auto = TritonDecodePlan(big, kv_format="fp8", graph=False)
            kern = TritonDecodePlan(big, kv_format="fp8", graph=False, num_splits="kernel",
                                    variant=auto.variant.name)
            assert kern.num_splits == auto.num_splits


@gpu
@pytest.mark.parametrize("key", ["v170", "v143", "v159", "v168", "v160"])
def test_num_splits_kernel_plan_runs_at_the_rules_count_and_checks(key):
    """On the GPU: a named kernel with num_splits="kernel" resolves kernel_rule_splits' count on this GPU's SMs (bs16-
    kv4096 on 132 SMs: two per SM gives 16 splits of 4 tiles; the rules give 8 of 8 tiles to every kernel here but v159,
    whose 256-token splits keep two per SM) and its NaN-poisoned output passes the own-format and leaderboard checks
    (_checked)."""
    from mla.kernels.triton.launch import (MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits, device_sm_count,
                                           kernel_rule_splits)

    name = next(n for n in VARIANTS if n.split("_")[0] == key)
    v = VARIANTS[name]
    data = mla.generate_input(16, 1, 4096, seed=71, device="cuda")
    plan = _checked(data, name, num_splits="kernel")
    sms = device_sm_count(data[0].device)
    two = choose_num_splits(16, 4096, 1, sms, 64, MIN_SPLIT_TOKENS_TILE_REDUCE)
    per_program = 2 if v.gluon_ws and not v.gluon_ws_pair_merge else 1
    assert plan.num_splits == kernel_rule_splits(v, v.gluon_kv, [4096] * 16, two, 1, sms) * per_program
    assert plan.config["num_splits"] == plan.num_splits


def test_kv_tma_takes_none_or_false():
    data = mla.generate_input(2, 1, 64, seed=1)
    with pytest.raises(ValueError, match="kv_tma"):
        TritonDecodePlan(data, kv_format="fp8", kv_tma=True)
    from mla.backends.triton_backend import CONFIG_KEYS

    assert "kv_tma" in CONFIG_KEYS


def test_warp_specialized_takes_none_or_false():
    data = mla.generate_input(2, 1, 64, seed=1)
    with pytest.raises(ValueError, match="warp_specialized"):
        TritonDecodePlan(data, kv_format="fp8", warp_specialized=True)
    from mla.backends.triton_backend import CONFIG_KEYS

    assert "warp_specialized" in CONFIG_KEYS


@gpu
def test_default_fp8_call_takes_the_tma_tiles_on_long_programs_and_its_controls():
    """bs64-kv8192: the default takes v168 (TMA tiles) at 2 splits (128 programs, 2 partials), and is right;
    kv_tma=False is round 53's default, v149 at the same 2 splits (4 partials), right; with warp_specialized=False
    too, v160 at the one-warpgroup count (4 splits at 1024+ tokens: two per SM), right. bs256-kv8192 takes v169 at one
    split."""
    from mla.kernels.triton.variants import HOPPER_TMA_DEFAULT

    v169, v168 = (name for _, _, name in HOPPER_TMA_DEFAULT["fp8"])
    data = mla.generate_input(64, 1, 8192, seed=11, device="cuda")
    plan = TritonDecodePlan(data, kv_format="fp8", graph=False)
    assert plan.variant.name == v168 and plan.num_splits == 2 and plan.config["variant"] == v168
    _checked(data, plan.variant.name, plan=plan)
    ws = TritonDecodePlan(data, kv_format="fp8", graph=False, kv_tma=False)
    assert ws.variant.name == "v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed" and ws.num_splits == 2 * 2
    _checked(data, ws.variant.name, plan=ws)
    control = TritonDecodePlan(data, kv_format="fp8", graph=False, warp_specialized=False, kv_tma=False)
    assert control.variant.name == HOPPER_DEFAULT["fp8"] and control.num_splits == 4
    _checked(data, control.variant.name, plan=control)
    big = TritonDecodePlan(mla.generate_input(256, 1, 8192, seed=12, device="cuda"), kv_format="fp8", graph=False)
    assert big.variant.name == v169 and big.num_splits == 1  # (checked at this shape by every bench row of r53 / r54)


def test_ws_default_needs_scale_rows_its_copies_can_read():
    """v133 copies each token's scale bytes 0..19 in 4-byte pieces: the generator's padded rows (24 bytes)
    suit it; unpadded 18-byte rows (a valid input) make the default keep v117 instead of failing."""
    from mla.kernels.triton.launch import ws_scales_fit

    data = mla.generate_input(2, 1, 64, seed=1)
    assert data[1]["mxfp4"][1].stride(0) == 24 and ws_scales_fit(data, "mxfp4")
    packed, scales = data[1]["mxfp4"]
    unpadded = (data[0], dict(data[1], mxfp4=(packed, scales[:, :18].contiguous())), *data[2:])
    assert not ws_scales_fit(unpadded, "mxfp4")
    assert ws_scales_fit(unpadded, "fp8")  # (only the MXFP4 default has the rule)


@gpu
def test_default_mxfp4_call_takes_the_warp_specialized_kernel_on_long_programs():
    data = mla.generate_input(256, 1, 4096, seed=9, device="cuda")
    plan = TritonDecodePlan(data, kv_format="mxfp4", graph=False)
    assert plan.variant.gluon_ws and plan.config["variant"] == plan.variant.name
    _checked(data, plan.variant.name, plan=plan)
    small = TritonDecodePlan(mla.generate_input(4, 1, 1024, seed=9, device="cuda"), kv_format="mxfp4", graph=False)
    assert not small.variant.gluon_ws


@gpu
def test_default_ws_call_at_its_own_split_count_is_right():
    """bs32-kv8192: the default takes v133 at 4 splits (one program per SM, 8 partials), not v117 at 8; an
    explicit num_splits keeps the kernel-by-length rule at that count."""
    from mla.kernels.triton.variants import HOPPER_WS_DEFAULT

    data = mla.generate_input(32, 1, 8192, seed=10, device="cuda")
    plan = TritonDecodePlan(data, kv_format="mxfp4", graph=False)
    assert plan.variant.name == HOPPER_WS_DEFAULT["mxfp4"] and plan.num_splits == plan.partials_per_program * 4
    assert plan.grid[0] * plan.grid[1] * plan.grid[2] <= torch.cuda.get_device_properties(0).multi_processor_count
    _checked(data, plan.variant.name, plan=plan)
    given = TritonDecodePlan(data, kv_format="mxfp4", graph=False, num_splits=8)
    assert not given.variant.gluon_ws and given.num_splits == 8


@gpu
@pytest.mark.parametrize("kv_format", ["fp8", "mxfp4"])
def test_default_call_balances_a_ragged_batch(kv_format):
    case = next(c for c in mla.problem.EXTENDED if c.name == "bs64-kv4077-q1-h16+ragged")
    data = mla.generate_input(case.batch_size, 1, case.kv_seq_len, seed=33, device="cuda", kv_lens=case.kv_lens)
    plan = TritonDecodePlan(data, kv_format=kv_format, graph=False)
    assert plan.variant.family == "gluon" and plan.balanced and plan.fused_reduce and plan.launches == 1
    _checked(data, plan.variant.name, plan=plan)


# e4m3 QGMMA accumulates with fewer bits than fp32: a PV accumulator carried across every tile (v108 -
# v111) loses accuracy with the tiles per program (gen3-r12: rel_l2 3.7e-3 at 128 tiles, 1.9e-3 at 2);
# the others stay at the bf16 output's rounding (~1.8e-3) however long the sequence
LONG_ACCURATE = [n for n in GEN3 if not VARIANTS[n].gluon_pv_fp8 or VARIANTS[n].gluon_pv_promote]


@gpu
@pytest.mark.parametrize("variant", LONG_ACCURATE)
def test_accuracy_does_not_degrade_over_a_long_single_split(variant):
    from test_triton_kernels import format_reference

    fmt = VARIANTS[variant].gluon_kv
    data = mla.generate_input(2, 1, 8192, seed=17, device="cuda")
    plan = TritonDecodePlan(data, kv_format=fmt, variant=variant, num_splits=1, graph=False)
    out = plan.run(data)
    cpu = (data[0].cpu(), {k: (v.cpu() if torch.is_tensor(v) else tuple(t.cpu() for t in v))
                           for k, v in data[1].items()}, data[2].cpu(), data[3].cpu(), data[4])
    m = mla.accuracy_metrics(out.cpu(), format_reference(cpu, fmt, "bf16"))
    assert m["rel_l2"] < 2.5e-3, (variant, m)


def test_default_on_hopper_is_generation_3():
    from mla.kernels.triton.variants import DEFAULT_VARIANT, HOPPER_DEFAULT, default_variant

    assert default_variant("fp8", "bf16", hopper_gluon=True) == HOPPER_DEFAULT["fp8"]
    assert default_variant("fp8", "bf16", hopper_gluon=False) == "v75_n64_w4_s3_sab_pvs_c2"  # portable
    assert default_variant("fp8", "fp8", hopper_gluon=True) != HOPPER_DEFAULT["fp8"]  # quantized Q: gen 1
    assert default_variant("mxfp4", "bf16", (124, 127), hopper_gluon=True) == HOPPER_DEFAULT["mxfp4"]
    # scales the table decode cannot represent: generation 2 (exact for E8M0 >= 119)
    assert default_variant("mxfp4", "bf16", (120, 127), hopper_gluon=True) == DEFAULT_VARIANT["mxfp4"]
    for fmt, name in HOPPER_DEFAULT.items():
        assert VARIANTS[name].family == "gluon" and VARIANTS[name].kv_formats == (fmt,)


def test_v99_stores_whole_rows_where_v98_scatters():
    """v99 undoes v98's dim relabelling in registers: its partial / output stores are vectors
    (STG.E.128 / .64), v98's one element each (static; v99 is not yet measured on a GPU)."""
    _, v98 = _sass("v98_n64_w4_s2_gl_pvr_qp", num_splits=4)
    _, v99 = _sass("v99_n64_w4_s2_gl_pvr_qp_en", num_splits=4)
    assert len(re.findall(r"STG\.E\.128", v99)) >= 16 and not re.findall(r"STG\.E\.128", v98)
    assert len(re.findall(r"\bSTG\.E\b(?!\.)", v98)) >= 64



@gpu
@pytest.mark.parametrize("variant", [n for n in GEN3 if VARIANTS[n].gluon_kv == "mxfp4"])
def test_mxfp4_scales_out_of_range_after_the_plan_give_nan_rows_not_wrong_values(variant):
    """The plan checks the E8M0 range once, at build; a later call's scales are not read on the host.
    A block outside 122..133 then decodes to NaN: the rows of that batch element are NaN (never a
    silently wrong value), the other elements' rows stay exact."""
    data = mla.generate_input(3, 1, 300, seed=4, device="cuda")
    plan = TritonDecodePlan(data, kv_format="mxfp4", variant=variant, num_splits=2, graph=False)
    scales = data[1]["mxfp4"][1]
    scales[310, 5] = 121  # batch element 1 (tokens 300..599)
    out = plan.run(data).float()
    torch.cuda.synchronize()
    assert torch.isnan(out[1]).all() and torch.isfinite(out[0]).all() and torch.isfinite(out[2]).all()
    ref = mla.reference(data, kv_format="mxfp4").float()
    err = (out[[0, 2]] - ref[[0, 2]]).abs().max().item()
    assert err < 0.05, err


def test_bank_model_names_the_conflicts_v103_and_v116_remove():
    """The swizzle model behind v103 / v116 (mla/analysis/smem_banks.py): the V^T loads before v116
    and v100's decode stores are 4-way, v116's loads and v103's stores conflict-free, and the model
    itself sees a plain row-contiguous 128-byte access as one wavefront and 8 rows 4 KB apart in one
    bank group as 8."""
    from mla.analysis import smem_banks as sb

    r = sb.report()
    assert r["V^T fragment loads, v97-v115 (lanes on rows 16 / 32 apart)"] == 4
    assert r["V^T fragment loads, V_CF (v116+: lanes on rows 1 / 4 apart)"] == 1
    assert r["MXFP4 decode stores, v100 / v101"] == 4 and r["MXFP4 decode stores, ROW_PERM (v103+)"] == 1
    assert r["MXFP4 ring loads, ROW_PERM (v103+)"] == 1 and r["fp8 tile cp.async"] == 1
    flat = lambda row, col: row * 4096 + col  # noqa: E731
    assert sb.wavefronts([[0, 16], [0, 32], [0, 64], [1, 0], [2, 0]], [], flat, num_warps=1) == 1
    assert sb.wavefronts([[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]], [], flat, num_warps=1) == 8
    with pytest.raises(ValueError, match="5 lane bases"):
        sb.wavefronts([[1, 0]], [], flat)


def test_bank_model_takes_8_byte_accesses_by_half_warps():
    """LDS.64: a half warp that reads 16 distinct 8-byte bank pairs of a line is one wavefront; the same
    lanes with a 16-byte stride put two lanes on each pair (2-way); widths other than 8 / 16 are refused."""
    from mla.analysis import smem_banks as sb

    flat = lambda r, c: r * 128 + c  # noqa: E731 - rows of 128 bytes, no swizzle
    lanes_8 = [[0, 8], [0, 16], [0, 32], [0, 64], [1, 0]]  # lanes 0-15 cover one row's 128 bytes
    lanes_16 = [[0, 16], [0, 32], [0, 64], [1, 0], [2, 0]]  # lanes 0-15: 8 columns x 2 rows, 8 B each
    assert sb.wavefronts_8byte(lanes_8, [], flat, num_warps=1) == 1
    assert sb.wavefronts_8byte(lanes_16, [], flat, num_warps=1) == 2
    assert sb.wavefronts(lanes_16, [], flat, num_warps=1) == 1  # at 16 B a lane the quarter warp fills its line
    with pytest.raises(ValueError, match="bytes_per_lane"):
        sb.wavefronts(lanes_8, [], flat, num_warps=1, bytes_per_lane=4)



@gpu
@pytest.mark.parametrize("variant", COOP)
def test_coop_merge_is_one_launch_and_right_on_every_call(variant):
    """COOP_MERGE: every split merges a column slice once all splits of its group have stored their partials.
    Ragged lengths (empty splits), 4-token queries with 32 heads (two head groups), a heuristic count lowered
    to one program per SM, repeated calls and graph replays on new inputs in place (the counters back at 0
    after every call), and the same output as the tile reduce of the kernel it is built on (within rounding)."""
    base = variant.replace("v147", "v141").replace("v148", "v117").rsplit("_cm", 1)[0]
    data = mla.generate_input(4, 1, 333, seed=41, device="cuda", kv_lens=(1, 65, 130, 333))
    plan = _checked(data, variant, 5)
    assert plan.launches == 1 and plan.config["coop_merge"] is True and plan.pdl is False
    assert int(plan.counters.abs().sum()) == 0, "counters not reset"
    for _ in range(3):
        _checked(data, variant, plan=plan)
        assert int(plan.counters.abs().sum()) == 0
    _checked(mla.generate_input(3, 4, 517, seed=42, device="cuda", num_heads=32), variant, 3)
    data = mla.generate_input(4, 1, 8192, seed=43, device="cuda")
    plan = _checked(data, variant, None)  # the heuristic's 64 splits lowered to one program per SM
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert 1 < plan.num_splits and plan.num_splits * 4 <= sms, plan.num_splits
    ref = _checked(data, base, plan.num_splits).out.float()
    assert (plan.out.float() - ref).abs().max() <= 2e-2 * ref.abs().max(), "coop merge vs tile reduce"
    with pytest.raises(ValueError, match="resident at once"):
        TritonDecodePlan(data, kv_format=VARIANTS[variant].gluon_kv, variant=variant, num_splits=64)
    graphed = _graph_replays_on_new_values(variant, 44)
    assert graphed.call_paths["replay"] >= 1 or graphed.call_paths["capture"] >= 1


@gpu
@pytest.mark.parametrize("variant", sorted(UNIFORM))
def test_uniform_ranges_read_the_launch_argument_and_ragged_batches_the_indptrs(variant):
    """v151 / v152: on a uniform batch the plan passes the KV length and the kernel computes the ranges from it,
    shown by a launch whose indptr tensors hold garbage (the validation would refuse them; plan.launch does not
    validate) still giving the right output; a ragged batch passes 0 and reads its indptrs. Both through the
    gates of every generation-3 variant (q_seq_len 2 with 32 heads, split-K, NaN-poisoned outputs)."""
    fmt = VARIANTS[variant].gluon_kv
    for q_seq_len, heads, splits in ((1, 16, 4), (2, 32, 3)):
        data = mla.generate_input(8, q_seq_len, 1000, seed=7, device="cuda", num_heads=heads)
        plan = _checked(data, variant, splits)
        assert plan.uniform_kv_len == 1000
        q, kv_data, qo, kv, cfg = data
        for t in plan.outputs:
            t.fill_(float("nan"))
        out = plan.launch((q, kv_data, torch.full_like(qo, 10**6), torch.full_like(kv, -(10**6)), cfg))
        ok, msg = mla.check(data, out, reference_output=mla.reference(data, kv_format=fmt))
        assert ok, msg
    ragged = mla.generate_input(5, 1, 777, seed=3, device="cuda", kv_lens=(777, 64, 300, 1, 513))
    plan = _checked(ragged, variant, 3)
    assert plan.uniform_kv_len == 0


def test_default_variant_takes_the_uniform_ranges_kernels_for_uniform_batches_only():
    """Round 46: the default call's one-warpgroup kernels are v153 (fp8) / v152 (MXFP4) for a uniform batch and
    v141 / v117 for a ragged one (the plan would pass uniform_kv_len 0 there, and the balanced work list the
    default takes for ragged batches ran on the H200 with those); the split and kernel rules apply to both."""
    from mla.kernels.triton.variants import (HOPPER_RAGGED_DEFAULT, default_variant, is_hopper_default)

    for fmt in ("fp8", "mxfp4"):
        uniform = default_variant(fmt, hopper_gluon=True)
        ragged = default_variant(fmt, hopper_gluon=True, ragged=True)
        assert uniform == HOPPER_DEFAULT[fmt] and VARIANTS[uniform].gluon_uniform_ranges
        assert ragged == HOPPER_RAGGED_DEFAULT[fmt] and not VARIANTS[ragged].gluon_uniform_ranges
        assert is_hopper_default(uniform, fmt) and is_hopper_default(ragged, fmt)
        assert not is_hopper_default(HOPPER_DEFAULT[fmt], "bf16")
        assert default_variant(fmt, hopper_gluon=False) == default_variant(fmt, hopper_gluon=False, ragged=True)
    assert VARIANTS[HOPPER_DEFAULT["fp8"]].gluon_scale_first
    assert all(VARIANTS[name].gluon_q_first for name in HOPPER_DEFAULT.values())  # round 52


# -- the program timeline (TIMELINE: an instrument, off in every named variant) -------------------------------
TIMELINE_KERNELS = (HOPPER_DEFAULT["fp8"], HOPPER_DEFAULT["mxfp4"], "v149_n64_w4_s2_gl_en_ws4_tma_ldsm_ed",
                    "v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed")


@pytest.mark.parametrize("variant", TIMELINE_KERNELS)
def test_offline_sm90_timeline_stamps_only_when_asked(variant):
    """compile_offline(timeline=True): the one-warpgroup kernel reads %globaltimer and %clock64 at its five events
    (start, Q ready, the first tile, the loop's end, the end) and %smid once; the warp-specialized kernel reads
    both clocks at start and Q ready in its default warps, then each consumer %globaltimer at its three events
    (consumer 0 %clock64 too): 8 and 5. Without it not one of those reads is compiled, in the PTX or the SASS
    (the pointer is passed, unused)."""
    from triton.backends.compiler import GPUTarget

    from mla.analysis.isa_triton import _cuobjdump
    from mla.kernels.triton.offline import compile_offline

    fmt = VARIANTS[variant].gluon_kv
    ws = VARIANTS[variant].gluon_ws
    builds = {on: compile_offline(GPUTarget("cuda", 90, 32), variant=variant, kv_format=fmt, num_splits=8,
                                  timeline=on) for on in (False, True)}
    count = lambda k, reg: len(re.findall(rf"mov\.u\d+\s+%\w+,\s*{reg};", k.asm["ptx"]))  # noqa: E731
    assert [count(builds[True], r) for r in ("%globaltimer", "%clock64", "%smid")] == ([8, 5, 1] if ws else [5, 5, 1])
    assert [count(builds[False], r) for r in ("%globaltimer", "%clock64", "%smid")] == [0, 0, 0]
    _, sass_off = _cuobjdump(builds[False].asm["cubin"])
    _, sass_on = _cuobjdump(builds[True].asm["cubin"])
    assert "SR_GLOBALTIMER" not in sass_off and "SR_CLOCK" not in sass_off  # (how cuobjdump spells the reads)
    assert "SR_GLOBALTIMER" in sass_on.replace("SR_GLOBALTIMERLO", "SR_GLOBALTIMER")


def test_timeline_is_refused_outside_generation_3_and_takes_bools_only():
    """timeline=True names the kernels that have the instrument; a non-bool is refused by name."""
    if not (torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"):
        pytest.skip("CPU plans need TRITON_INTERPRET=1")
    data = mla.generate_input(2, 1, 100, seed=1, device="cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="timeline=True .* generation-3 .*v1_n32_w4_s2"):
        TritonDecodePlan(data, kv_format="fp8", variant="v1_n32_w4_s2", timeline=True)
    with pytest.raises(ValueError, match="timeline must be True or False, got 1"):
        TritonDecodePlan(data, kv_format="fp8", variant="v1_n32_w4_s2", timeline=1)
    plan = TritonDecodePlan(data, kv_format="fp8", variant="v1_n32_w4_s2")
    assert plan.timeline is None  # (off: nothing to read)


@gpu
@pytest.mark.parametrize("fmt", ["fp8", "mxfp4"])
@pytest.mark.parametrize("case", [(4, 1024, None), (32, 8192, None), (5, 777, (777, 64, 300, 1, 513))])
def test_timeline_rows_cover_every_program_in_order_and_leave_the_output_alone(fmt, case):
    """The default call's plan with timeline=True (the one-warpgroup kernel at bs4-kv1024 and on a ragged batch,
    the warp-specialized one at bs32-kv8192): every program writes its row, its events in order on both clocks,
    its SM inside the GPU, its tiles summing to the batch's; the output is bit for bit the uninstrumented plan's,
    which passes the checks of every generation-3 variant."""
    from mla.analysis.timeline import program_frame

    bs, kv, lens = case
    data = mla.generate_input(bs, 1, kv, seed=11, device="cuda", kv_lens=lens)
    plain = mla.plan(data, backend="triton", kv_format=fmt, graph=False)
    stamped = mla.plan(data, backend="triton", kv_format=fmt, graph=False, timeline=True)
    kp = stamped.kernel_plan
    assert kp.variant.name == plain.kernel_plan.variant.name and kp.grid == plain.kernel_plan.grid
    _checked(data, kp.variant.name, plan=plain.kernel_plan)
    for p in (plain, stamped):
        p.poison()
    ref_out = plain.run(data).clone()
    out = stamped.run(data)
    torch.cuda.synchronize()
    assert torch.equal(out, ref_out)
    rows = kp.timeline.cpu()
    g = kp.grid
    assert rows.shape == (g[0] * g[1] * g[2], 16) and (rows[:, 0] > 0).all()
    # a program with no tiles (an empty split of a ragged batch) never reaches its first tile: that stamp, and
    # only that one, stays -1 there (the H100 run of round 48 found such programs in the ragged case)
    # (the events' order on both clocks is program_frame's check, below)
    no_tiles = rows[:, 11] == 0
    assert ((rows[:, 2] == -1) == no_tiles).all() and ((rows[:, 7] == -1) == no_tiles).all()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert ((rows[:, 10] >= 0) & (rows[:, 10] < sms)).all()
    # split boundaries are whole 64-token tiles (uniform splits and the work list alike), so each element's
    # tiles add up to ceil(len / 64) per head group, however it was split (consumer 1's column: -1 or its tiles)
    tiles = rows[:, 11] + rows[:, 15].clamp(min=0)
    assert int(tiles.sum()) == g[0] * sum(-(-n // 64) for n in (lens or (kv,) * bs))
    frame = program_frame(rows.numpy(), g)
    assert len(frame) == len(rows) and (frame["end_us"] >= frame["start_us"]).all()


# -- work stealing (v154: gluon_steal.py, steal_protocol.py) --------------------------------------------
STEAL = [n for n in GEN3 if VARIANTS[n].gluon_steal]


@pytest.mark.parametrize("seed", range(60))
def test_steal_protocol_computes_every_tile_once_in_any_interleaving(seed):
    """The counter word's protocol, stepped in random interleavings of owners and helpers (steal_protocol.simulate
    keeps the kernel's order: the owner reads each claim's answer a chunk later, a helper's compare-and-swap can
    lose to a program that moved in between): every tile is computed exactly once, the pieces of a range add up
    to its tiles, the slots a range's pieces use are 0 .. k (no gap, none twice), and the owner ends knowing k -
    what decides whether it stores the output itself or its slot 0 for the merge."""
    from mla.kernels.triton import steal_protocol as sp

    rng = __import__("random").Random(seed)
    n = [rng.choice([0, 1, 2, 3, 5, 16, 17, 64, 128]) for _ in range(rng.randint(1, 6))]
    slots, chunk, max_steal = rng.randint(1, 8), rng.randint(2, 6), rng.randint(2, 9)
    res = sp.simulate(n, chunk=chunk, slots=slots, max_steal=max_steal, helpers=rng.randint(0, 16), seed=seed)
    for r, tiles in enumerate(n):
        assert res["done"][r] == [1] * tiles, (r, res["done"][r])
        assert sum(t for _, t, _ in res["pieces"][r]) == tiles
        assert sorted(s for _, _, s in res["pieces"][r]) == list(range(1 + res["steals"][r]))
        assert res["owner_k"][r] == res["steals"][r] <= slots
        # a helper's piece is never the range's first two tiles (the owner prefetches its next tile unclaimed)
        assert all(first >= min(2, tiles) for first, _, s in res["pieces"][r] if s > 0)


def test_steal_protocol_takes_at_most_half_of_what_is_left():
    from mla.kernels.triton import steal_protocol as sp

    word = 10 | (20 << sp.B_SHIFT) | (3 << sp.K_SHIFT)  # owner claimed 10, helpers took 20, 3 pieces
    assert sp.steal_size(word, 128, 8, 64) == (128 - 30) // 2
    assert sp.steal_size(word, 128, 8, 8) == 8
    assert sp.steal_size(word, 128, 3, 8) == 0, "no slot left"
    assert sp.steal_size(word, 33, 8, 8) == 0, "3 tiles left: under MIN_LEFT"
    new, first, tiles, slot = sp.helper_steal(word, 128, 8, 8)
    assert (first, tiles, slot) == (128 - 20 - 8, 8, 4) and sp.unpack(new) == (10, 28, 4)
    assert sp.owner_claim(word, 128, 4)[1:] == (14, 3)
    assert sp.owner_claim(word, 30, 4)[1] == 10, "nothing left past the back: the owner stops where it is"


@pytest.mark.parametrize("kw, match", [(dict(chunk=1), "steal chunk"), (dict(slots=16), "steal slots"),
                                       (dict(max_steal=1), "max_steal"), (dict(tiles=9000), "13 bits"),
                                       (dict(ranges=5000), "at most 4096 ranges")])
def test_steal_plan_refuses_what_the_word_cannot_hold(kw, match):
    from mla.kernels.triton import steal_protocol as sp

    args = dict(ranges=256, tiles=128, chunk=4, slots=8, max_steal=8) | kw
    with pytest.raises(ValueError, match=match):
        sp.check_plan(args["ranges"], args["tiles"], args["chunk"], args["slots"], args["max_steal"])
    sp.check_plan(256, 128, 4, 8, 8)


@pytest.mark.parametrize("variant", STEAL)
def test_offline_sm90_ptx_of_work_stealing(variant):
    """The protocol's atomics as designed: the owner's claims are relaxed adds (the first, and one in the loop
    into the same register, read at a chunk's last tile), the helper's steal one compare-and-swap, the done and
    exit counters acquire-release adds, the reset one exchange; the helpers' scan and the merge read L2 (.cg)."""
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton.offline import compile_offline

    k = compile_offline(GPUTarget("cuda", 90, 32), variant=variant, kv_format="fp8", num_splits=1)
    ptx = k.asm["ptx"]
    claims = re.findall(r"atom\.global\.gpu\.relaxed\.add\.u32 (%r\d+)", ptx)
    assert len(claims) == 2 and claims[0] == claims[1], claims
    assert len(re.findall(r"atom\.global\.\S*cas\.b32", ptx)) == 1
    assert len(re.findall(r"atom\.global\.gpu\.acq_rel\.add", ptx)) == 2
    assert len(re.findall(r"atom\.global\.gpu\.relaxed\.exch", ptx)) == 1
    assert re.search(r"ld\.global\.cg", ptx)
    assert k.metadata["shared"] <= 116 * 1024, "two CTAs an SM, as v153"


@gpu
@pytest.mark.parametrize("variant", STEAL)
def test_work_stealing_is_right_where_helpers_take_most_of_the_tiles(variant):
    """4 owners of 128 tiles on a GPU of >= 114 SMs: the helpers start at once and take pieces of every range
    until each has lost its slots, so stolen ranges, the merge and the exit counter's reset are all exercised.
    Checked on every call (the words must be back at 0 after each launch) and through a graph replay; the
    timeline's tile counts add up to the batch's tiles, and helpers ran some of them - except where helpers wait
    for an owner's end (v156 / v157, STEAL_WAIT): 4 equal owners end together with every tile claimed, so those
    helpers may find nothing (r51d on an H100: none here; 565 tiles at bs256-kv8192, every output checked)."""
    data = mla.generate_input(4, 1, 8192, seed=23, device="cuda")
    plan = TritonDecodePlan(data, kv_format="fp8", variant=variant, num_splits=1, graph=False, timeline=True)
    owners = plan.grid[0] * plan.grid[1] * 4
    for _ in range(3):
        plan.timeline.fill_(-1)
        _checked(data, variant, plan=plan)
        assert int(plan.steal_words.abs().sum()) == 0, "the last program leaves every word at 0"
        tiles = plan.timeline[:, 11].cpu()
        assert int(tiles.clamp(min=0).sum()) == 4 * 8192 // 64
        if not VARIANTS[variant].gluon_steal_wait:
            assert int(tiles[owners:].clamp(min=0).sum()) > 0, "no helper took a piece"
    graphed = TritonDecodePlan(data, kv_format="fp8", variant=variant, num_splits=1, graph=True)
    for _ in range(3):
        _checked(data, variant, plan=graphed)


@gpu
@pytest.mark.parametrize("variant", STEAL)
@pytest.mark.parametrize("bs, q_seq_len, num_heads, kv, splits", [
    (2, 1, 16, 1000, 3), (3, 2, 16, 517, 2), (2, 4, 32, 4097, 2), (16, 1, 16, 2048, None), (256, 1, 16, 1024, 1)])
def test_work_stealing_on_splits_multi_token_queries_and_32_heads(variant, bs, q_seq_len, num_heads, kv, splits):
    """Stolen ranges of split partials (the tile reduce merges the splits after the ranges merged their
    pieces), the last split shorter than the rest, decode-causal rows that see fewer tokens, two head groups."""
    data = mla.generate_input(bs, q_seq_len, kv, seed=29, device="cuda", num_heads=num_heads)
    for _ in range(2):
        _checked(data, variant, splits)


@gpu
@pytest.mark.parametrize("variant", STEAL)
def test_work_stealing_refuses_ragged_batches(variant):
    data = mla.generate_input(2, 1, 300, seed=3, device="cuda", kv_lens=(100, 300))
    with pytest.raises(ValueError, match="uniform batches only"):
        TritonDecodePlan(data, kv_format="fp8", variant=variant)
