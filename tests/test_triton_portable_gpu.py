"""The portable Triton path (no inline PTX: the code gfx950 compiles) run on an NVIDIA GPU, every KV
format, against the reference of the same formats. MLA_TRITON_PTX=0 turns the PTX word decodes off
at plan time (mla/kernels/triton/launch.py: uses_ptx). Skipped without a CUDA GPU; on the H200 it
writes one row per check to $MLA_TEST_OUT/triton-portable.csv when that is set. The switch itself
is also tested on CPU."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import pytest
import torch

import mla

needs_cuda = pytest.mark.skipif(not (torch.cuda.is_available() and torch.version.hip is None),
                                reason="needs an NVIDIA GPU (the portable path is compiled, not interpreted)")

# each format's portable default variant (DEFAULT_VARIANT: on an sm90 GPU the fp8 and MXFP4 default calls take
# generation 3, a Hopper-only Gluon kernel, tests/test_triton_gen3.py), plus the PTX-decode variants
# whose portable branch differs most
from mla.kernels.triton.variants import DEFAULT_VARIANT  # noqa: E402

VARIANTS = [("bf16", None), ("fp8", DEFAULT_VARIANT["fp8"]), ("fp8", "v29_n32_w4_s2_f16w_tr"), ("mxfp4", DEFAULT_VARIANT["mxfp4"]),
            ("mxfp4", "v17_n32_w4_s2_mxw")]
SHAPES = {
    "ragged-bs4": dict(batch_size=4, q_seq_len=1, kv_seq_len=1000, kv_lens=(1, 7, 33, 1000)),
    "bs2-q4-h32": dict(batch_size=2, q_seq_len=4, kv_seq_len=300, num_heads=32),
    "bs64-kv1024": dict(batch_size=64, q_seq_len=1, kv_seq_len=1024),
}
MAX_ABS_OWN_FORMAT = 0.02  # the H200 audit saw <= 0.008; fp16 / fp8 dot operands, bf16 output


def _record(row: dict) -> None:
    out = os.environ.get("MLA_TEST_OUT")
    if not out:
        return
    path = Path(out) / "triton-portable.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    fields = ["shape", "kv_format", "variant", "use_ptx", "max_abs_own_format", "rel_l2_own_format",
              "check_own_format", "max_abs_vs_ptx", "device", "torch", "triton", "utc"]
    import triton

    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerow({**row, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                    "triton": triton.__version__, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


@needs_cuda
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("kv_format, variant", VARIANTS)
def test_portable_path_matches_reference(monkeypatch, kv_format, variant, shape):
    from mla.kernels.triton import TritonDecodePlan

    kw = dict(SHAPES[shape])
    data = mla.generate_input(kw.pop("batch_size"), kw.pop("q_seq_len"), kw.pop("kv_seq_len"), seed=7,
                              device="cuda", **kw)
    ref = mla.reference(data, kv_format=kv_format)
    monkeypatch.setenv("MLA_TRITON_PTX", "0")
    plan = TritonDecodePlan(data, kv_format=kv_format, variant=variant, num_splits=3)
    assert plan.constexprs["USE_PTX"] is False
    plan.out.fill_(float("nan"))
    out = plan.run(data).clone()
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    m = mla.accuracy_metrics(out, ref)
    ok, msg = mla.check(data, out, reference_output=ref)
    vs_ptx = ""
    if shape == "ragged-bs4":  # the same request with PTX on, once per variant (compiles cost device time)
        monkeypatch.setenv("MLA_TRITON_PTX", "1")
        ptx_plan = TritonDecodePlan(data, kv_format=kv_format, variant=variant, num_splits=3)
        assert ptx_plan.constexprs["USE_PTX"] is True
        ptx_out = ptx_plan.run(data)
        torch.cuda.synchronize()
        vs_ptx = f"{float((out.float() - ptx_out.float()).abs().max()):.5f}"
    _record(dict(shape=shape, kv_format=kv_format, variant=plan.variant.name, use_ptx=False,
                 max_abs_own_format=f"{m['max_abs']:.5f}", rel_l2_own_format=f"{m['rel_l2']:.2e}",
                 check_own_format=ok, max_abs_vs_ptx=vs_ptx))
    assert ok, msg
    assert m["max_abs"] < MAX_ABS_OWN_FORMAT, m


def test_switch_is_read_at_plan_time(monkeypatch):
    """CPU too: pretend to be a compiled NVIDIA run, then flip the switch."""
    from mla.kernels.triton import launch
    from mla.kernels.triton.launch import uses_ptx

    monkeypatch.setattr(launch, "interpreting", lambda: False)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setenv("MLA_TRITON_PTX", "0")
    assert uses_ptx("cuda") is False
    monkeypatch.delenv("MLA_TRITON_PTX")
    assert uses_ptx("cuda") is True
    assert uses_ptx("cpu") is False
