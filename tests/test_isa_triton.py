"""Triton offline compiles for gfx950 and sm90 on this CPU machine, parsed by the ISA lab."""

import functools
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import triton
import triton.language as tl

from mla.analysis.isa import parse_amdgpu_asm, parse_ptx, parse_sass, sass_hottest_loop
from mla.analysis.isa_triton import (TritonOfflineUnavailable, _cuobjdump, gpu_target, merge_rows, triton_rows,
                                     variant_names)


def _tiny_dot(a, b, c, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i[:, None] * N + i[None, :]).to(tl.bfloat16)
    y = tl.load(b + i[:, None] * N + i[None, :]).to(tl.bfloat16)
    tl.store(c + i[:, None] * N + i[None, :], tl.dot(x, y))


def _looped_dot(a, b, c, n):  # a KV-loop-like shape: one 64x64 bf16 tile pair per trip (HGMMA on sm90)
    r = tl.arange(0, 64)
    acc = tl.zeros((64, 64), tl.float32)
    for t in range(n):
        x = tl.load(a + t * 4096 + r[:, None] * 64 + r[None, :])
        y = tl.load(b + t * 4096 + r[:, None] * 64 + r[None, :])
        acc = tl.dot(x, y, acc)
    tl.store(c + r[:, None] * 64 + r[None, :], acc)


# a compiled (not interpreted) kernel even when the CPU tests run with TRITON_INTERPRET=1
_saved = os.environ.pop("TRITON_INTERPRET", None)
try:
    _tiny_dot = triton.jit(_tiny_dot)
    _looped_dot = triton.jit(_looped_dot)
finally:
    if _saved is not None:
        os.environ["TRITON_INTERPRET"] = _saved


def _compile_here(which: str) -> dict:
    """One of the compiles below, in this process (the child of _compiles): its asm dict."""
    from triton.compiler import ASTSource

    if which == "loop":
        src = ASTSource(fn=_looped_dot, signature={"a": "*bf16", "b": "*bf16", "c": "*fp32", "n": "i32"})
        k = triton.compile(src, target=gpu_target("sm90"), options={"num_warps": 4, "num_stages": 2})
    else:
        src = ASTSource(fn=_tiny_dot, signature={"a": "*fp32", "b": "*fp32", "c": "*fp32", "N": "constexpr"},
                        constexprs={"N": 32})
        k = triton.compile(src, target=gpu_target(which), options={"num_warps": 4})
    return {key: k.asm[key] for key in ("amdgcn", "ptx", "cubin") if key in k.asm}


@functools.lru_cache(maxsize=None)
def _compiles() -> dict:
    """The three compiles, in a child process without TRITON_INTERPRET: in this process an interpreted
    kernel that ran earlier (the CPU suite's) can leave triton.language patched for the interpreter,
    and gluon imported after the variable is gone refuses the interpreter's functions; whether either
    bites depended on which tests ran before (seen 2026-12-02 on a fresh CI machine)."""
    root = Path(__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "asm.pkl"
        code = ("import pickle, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import test_isa_triton as t; "
                "pickle.dump({w: t._compile_here(w) for w in ('gfx950', 'sm90', 'loop')}, open(sys.argv[3], 'wb'))")
        r = subprocess.run([sys.executable, "-c", code, str(root.parent), str(root), str(out)], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return pickle.loads(out.read_bytes())


def test_parsers_on_a_tiny_triton_dot():
    (k,) = parse_amdgpu_asm(_compiles()["gfx950"]["amdgcn"])
    assert k.vgpr_total > 0 and k.mix["mfma"] > 0
    ptx = parse_ptx(_compiles()["sm90"]["ptx"])
    assert ptx["mma"] + ptx["wgmma"] > 0


def test_sm90_wgmma_loop_from_a_real_compile():
    asm = _compiles()["loop"]
    _, sass = _cuobjdump(asm["cubin"])
    assert parse_sass(sass)["wgmma"] > 0 and parse_ptx(asm["ptx"])["wgmma"] > 0
    loop = sass_hottest_loop(sass)
    # the 64x64x64 tile is 4 HGMMA.64x64x16 per trip, each reading 64 + 64 rows x 32 B when both come from smem
    assert loop.mix["wgmma"] == 4 and loop.mix["mma"] == 0
    assert loop.wgmma_smem_bytes in (4 * 64 * 32, 4 * 128 * 32)
    assert loop.smem_write_bytes >= 2 * 64 * 64 * 2 // 4  # each warp's share of the two tiles, stored or copied in
    assert loop.per_token(4, 64)["warp_instr_per_token"] == pytest.approx(loop.mix["instructions"] / 16, abs=0.0051)  # 2 decimals


def test_variant_names_and_merge(tmp_path):
    assert variant_names("v1_n32_w4_s2, v2_n64_w4_s2") == ["v1_n32_w4_s2", "v2_n64_w4_s2"]
    with pytest.raises(ValueError, match="v999"):
        variant_names("v1_n32_w4_s2,v999")
    with pytest.raises(ValueError, match="unknown triton variant"):
        variant_names("")
    path = tmp_path / "triton.csv"
    path.write_text("variant,kv_format,registers,git_commit\na,fp8,100,old\nb,fp8,120,old\nc,fp8,90,old\n")
    rows, kept = merge_rows(path, [dict(variant="b", kv_format="fp8", registers=80, warp_instr_per_token=50.0),
                                   dict(variant="d", kv_format="fp8", registers=70, warp_instr_per_token=40.0)],
                            dict(git_commit="new"))
    assert kept == 2
    assert [(r["variant"], r["registers"], r["git_commit"]) for r in rows] == [
        ("a", "100", "old"), ("b", 80, "new"), ("c", "90", "old"), ("d", 70, "new")]
    assert rows[0]["warp_instr_per_token"] == "" and list(rows[0]) == list(rows[1])
    rows, kept = merge_rows(tmp_path / "absent.csv", [dict(variant="a")], dict(git_commit="new"))
    assert (rows, kept) == ([dict(variant="a", git_commit="new")], 0)


def test_unknown_target():
    with pytest.raises(ValueError, match="unknown target"):
        gpu_target("gfx942")


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_triton_backend_kernel_offline(target):
    try:
        rows = triton_rows(target, variants=["v2_n64_w4_s2"], kv_formats=("mxfp4",), knob_sweep=False)
    except TritonOfflineUnavailable as e:
        pytest.skip(str(e))
    assert rows
    r = rows[0]
    if target == "gfx950":
        assert r["vgpr_total"] > 0 and r["mfma"] > 0 and r["workgroup_size"] > 0
    else:
        assert r["registers"] > 0 and r["sass_instructions"] > 0
        assert r["ptx_mma"] + r["ptx_wgmma"] > 0
        # one trip of the KV loop: BLOCK_N 64 tokens, 4 warps, every dot of it on tensor cores
        assert (r["block_n"], r["num_warps"], r["loop_inner_loops"]) == (64, 4, 0)
        assert r["loop_sass_mma"] + r["loop_sass_wgmma"] > 0
        assert r["warp_instr_per_token"] == pytest.approx(r["loop_sass_instructions"] * 4 / 64, abs=0.01)
        assert r["smem_bytes_per_token"] > 0 and r["loop_sass_instructions"] < r["sass_instructions"]
