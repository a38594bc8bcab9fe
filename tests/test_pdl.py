"""The split-K reduce by programmatic dependent launch (``pdl``, issue 10): the knob's checks on any machine,
the PTX both kernels compile to (offline, sm90), and on an sm90 GPU the same bits as the plain launch."""

from __future__ import annotations

import pytest
import torch

import mla
from mla.kernels.triton import TritonDecodePlan
from mla.kernels.triton.launch import pdl_unavailable_reason

SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9 and not torch.version.hip


def test_pdl_knob_takes_bools_and_refuses_what_the_machine_lacks():
    data = mla.generate_input(4, 1, 256, seed=1, device="cuda" if SM90 else "cpu")
    for bad in ("yes", 1, "late "):
        with pytest.raises(ValueError, match="pdl must be True, False, None, 'early' or 'late'"):
            TritonDecodePlan(data, kv_format="fp8", pdl=bad)
    reason = pdl_unavailable_reason(data[0].device)
    if reason is not None:  # CPU (the interpreter), ROCm, pre-Hopper: an explicit request is refused by name
        for pdl in (True, "early", "late"):
            with pytest.raises(ValueError, match="programmatic dependent launch"):
                TritonDecodePlan(data, kv_format="fp8", pdl=pdl)
    plan = TritonDecodePlan(data, kv_format="fp8", num_splits=4, pdl=False)
    assert plan.config["pdl"] is False and "LAUNCH_DEPENDENTS" not in plan.constexprs
    single = TritonDecodePlan(data, kv_format="fp8", num_splits=1, pdl=None)
    assert single.launches == 1 and single.config["pdl"] is False  # no reduce, nothing to launch early


def test_pdl_unavailable_in_the_interpreter_and_on_cpu(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "interpreter" in pdl_unavailable_reason(torch.device("cuda"))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert "NVIDIA" in pdl_unavailable_reason(torch.device("cpu"))


@pytest.mark.parametrize("variant,kv_format", [("v28_n32_w4_s3_tr", "bf16"),
                                               ("v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm", "fp8"),
                                               ("v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed", "mxfp4")])
def test_pdl_compiles_to_griddepcontrol_on_sm90(variant, kv_format):
    """The split kernel lets its dependents launch once (first thing its programs do); the reduce waits for
    the split grid before any load, and its binary carries the launch attribute. Without pdl: neither."""
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton.offline import compile_offline

    sm90 = GPUTarget("cuda", 90, 32)
    ptx = {pdl: compile_offline(sm90, variant=variant, kv_format=kv_format, num_splits=8, pdl=pdl).asm["ptx"]
           for pdl in (False, True, "late")}
    for pdl, split in ptx.items():
        assert split.count("griddepcontrol.launch_dependents") == int(pdl is not False)
        assert "griddepcontrol.wait" not in split
    early, late = (p.index("griddepcontrol.launch_dependents") for p in (ptx[True], ptx["late"]))
    loop = next(i for i in ("wgmma.mma_async", "mma.sync") if i in ptx[True])  # the KV loop's MMAs
    assert early < ptx[True].index(loop)  # first thing: before any tile's wait or MMA
    if "ws" not in variant:  # (the warp-specialized kernel's loops end inside its partitions: early there)
        assert late > ptx["late"].rindex(loop)  # after the KV loop's last
    for kernel in ("reduce_tile", "reduce"):
        plain = compile_offline(sm90, variant=variant, kv_format=kv_format, num_splits=8, kernel=kernel)
        red = compile_offline(sm90, variant=variant, kv_format=kv_format, num_splits=8, kernel=kernel, pdl=True)
        assert "griddepcontrol" not in plain.asm["ptx"] and not plain.metadata["launch_pdl"]
        ptx = red.asm["ptx"]
        assert ptx.count("griddepcontrol.wait") == 1 and red.metadata["launch_pdl"]
        assert ptx.index("griddepcontrol.wait") < ptx.index("ld.global")  # before the partials are read


def test_pdl_is_refused_for_gfx950():
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton.offline import compile_offline

    with pytest.raises(ValueError, match="CUDA"):
        compile_offline(GPUTarget("hip", "gfx950", 64), kv_format="bf16", kernel="reduce_tile", pdl=True)


gpu = pytest.mark.skipif(not SM90, reason="programmatic dependent launch needs an sm90+ NVIDIA GPU")


@gpu
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
@pytest.mark.parametrize("shape", [(4, 1, 1024), (4, 1, 8192), (64, 1, 1024), (32, 1, 8192), (3, 2, 777)])
@pytest.mark.parametrize("graph,trigger", [(False, "early"), (False, "late"), (True, "late")])
def test_gpu_pdl_reduce_gives_the_plain_launchs_bits(kv_format, shape, graph, trigger):
    """Fresh inputs, NaN-poisoned outputs, several calls (the reduce must see this call's partials, not the
    last call's): bitwise the plain launch's output, and the leaderboard check passes."""
    bs, q_len, kv = shape
    plain = pdl = None
    for seed in (11, 12, 13):
        data = mla.generate_input(bs, q_len, kv, seed=seed, device="cuda")
        if plain is None:
            plain = TritonDecodePlan(data, kv_format=kv_format, pdl=False, graph=graph)
            pdl = TritonDecodePlan(data, kv_format=kv_format, pdl=trigger, graph=graph)
            assert pdl.config["pdl"] == (trigger if pdl.launches == 2 else False) and pdl.num_splits == plain.num_splits
        outs = []
        for p in (plain, pdl):
            for t in p.outputs:
                t.fill_(float("nan"))
            for _ in range(2):  # graph=True captures on the first call and replays on the second
                outs.append(p.run(data).clone())
        torch.cuda.synchronize()
        assert torch.isfinite(outs[-1]).all()
        assert all(torch.equal(outs[0], o) for o in outs[1:]), (kv_format, shape, seed)
        ok, msg = mla.check(data, outs[-1])
        assert ok, (kv_format, shape, seed, msg)
