"""The KV copies' L2 eviction hint (round 47): variants with ``kv_evict="evict_first"`` and the PTX pass that
gives triton 3.6 (the H200 image) the instruction triton 3.9 emits (mla/kernels/triton/ptx_hints.py).

CPU: the pass on PTX and TTGIR text, and offline sm90 compiles of every kv_evict variant with whichever triton
is installed (3.9 natively, 3.6 through the pass): one evict_first policy and every cp.async hinted, the base
variant unhinted. GPU: the hint changes caching only, so each variant's output is bitwise its base's, on fresh
inputs with NaN-poisoned outputs, and the binary the plan launched carries the hint.
"""

from __future__ import annotations

import re

import pytest
import torch

import mla
from mla.kernels.triton import ptx_hints
from mla.kernels.triton.variants import VARIANTS

EVICT = {  # kv_evict variant -> the variant it is built on
    "v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_ef": "v153_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf",
    "v155_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur_ef": "v152_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf_ur",
    "v156_n32_w4_s3_tr_ef": "v28_n32_w4_s3_tr",
}
FORMAT = {"v154": "fp8", "v155": "mxfp4", "v156": "bf16"}
SM90 = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9 and not torch.version.hip

PTX_36 = """
.version 8.7
.target sm_90a
.address_size 64

.visible .entry k(
\t.param .u64 .ptr .global .align 1 k_param_0,
\t.param .u32 k_param_1
)
.reqntid 128
{
\t.reg .pred \t%p<3>;
\t.reg .b32 \t%r<9>;
\t.reg .b64 \t%rd<4>;
\tcp.async.cg.shared.global [ %r1 + 0 ], [ %rd1 + 0 ], 0x10, %r2;
\tcp.async.ca.shared.global [ %r3 + 16 ], [ %rd2 + 0 ], 0x4;
\tcp.async.commit_group;
\tcp.async.wait_group 0;
\tret;
}
"""


def test_registry_names_each_kv_evict_variant_after_its_base():
    assert {n for n, v in VARIANTS.items() if v.kv_evict} == set(EVICT)
    for name, base in EVICT.items():
        v, b = VARIANTS[name], VARIANTS[base]
        assert v.kv_evict == "evict_first" and name.endswith("_ef") and "evict_first" in v.what_changed
        assert {**v.as_dict(), "name": b.name, "what_changed": b.what_changed, "kv_evict": ""} == b.as_dict()
    assert not any(v.kv_evict for v in VARIANTS.values() if v.family == "swapab" or v.gluon_ws)


def test_pass_hints_every_copy_with_one_policy_per_entry():
    out = ptx_hints.add_evict_first(PTX_36)
    copies = [line.strip() for line in out.splitlines() if ".shared.global" in line]
    assert copies == [f"cp.async.cg.shared.global.L2::cache_hint [ %r1 + 0 ], [ %rd1 + 0 ], 0x10, %r2, "
                      f"{ptx_hints.POLICY_REG};",
                      f"cp.async.ca.shared.global.L2::cache_hint [ %r3 + 16 ], [ %rd2 + 0 ], 0x4, "
                      f"{ptx_hints.POLICY_REG};"]
    assert out.count("createpolicy.fractional.L2::evict_first.b64") == 1
    assert out.index("createpolicy") > out.index(".reqntid 128\n{") and out.index("createpolicy") < out.index("cp.async")
    assert "cp.async.commit_group;" in out and "cp.async.wait_group 0;" in out  # not copies: untouched
    assert ptx_hints.add_evict_first(out) == out  # hinted copies are left as they are (idempotent)
    no_copies = PTX_36.replace("cp.async.cg.shared.global", "ld.global.v4.b32").replace("cp.async.ca.shared.global",
                                                                                        "ld.global.b32")
    assert ptx_hints.add_evict_first(no_copies) == no_copies
    with pytest.raises(ValueError, match="no .visible .entry"):
        ptx_hints.add_evict_first("cp.async.cg.shared.global [ %r1 ], [ %rd1 ], 0x10;")


def test_pass_fires_only_when_every_async_copy_is_marked():
    marked = "%1 = ttg.async_copy_global_to_local %a, %b mask %m evictionPolicy = evict_first : tensor<64x64x!tt.ptr<f8>>"
    plain = "%2 = ttg.async_copy_global_to_local %c, %d mask %m : tensor<64x64x!tt.ptr<f8>>"
    assert ptx_hints.all_async_copies_marked(f"{marked}\n{marked}")
    assert not ptx_hints.all_async_copies_marked(f"{marked}\n{plain}")
    assert not ptx_hints.all_async_copies_marked("%3 = tt.load %p evictionPolicy = evict_first : tensor<16xf32>")


def _fmt(variant: str) -> str:
    ef = variant if variant in EVICT else next(k for k, b in EVICT.items() if b == variant)
    return FORMAT[ef.split("_")[0]]


def _ptx(variant: str, num_splits: int = 8) -> str:
    from triton.backends.compiler import GPUTarget

    from mla.kernels.triton import compile_offline

    return compile_offline(GPUTarget("cuda", 90, 32), variant=variant, kv_format=_fmt(variant),
                           num_splits=num_splits).asm["ptx"]


def _launched_ptx(plan) -> list[str]:
    """The PTX of the split kernel binaries a plan launched (its direct launcher's, else the JIT's cache)."""
    binaries = list(plan.direct._binaries.values())
    if not binaries:
        for cache in plan.kernel.device_caches.values():
            binaries += list(cache[0].values())
    return [b.asm["ptx"] for b in binaries]


@pytest.mark.parametrize("variant", sorted(EVICT))
def test_offline_sm90_ptx_hints_every_kv_copy(variant):
    """With the installed triton (CI: 3.9, whose lowering emits the hint; the H200's 3.6 through the pass), every
    cp.async of the kv_evict variant carries one evict_first policy, and its base's carry none."""
    ptx, base = _ptx(variant), _ptx(EVICT[variant])
    hinted = re.findall(r"cp\.async\.c[ag]\.shared\.global\.L2::cache_hint [^;]*, (%[\w]+);", ptx)
    policy = re.findall(r"createpolicy\.fractional\.L2::evict_first\.b64 (%[\w]+), 1\.0;", ptx)
    assert hinted and not re.search(r"cp\.async\.c[ag]\.shared\.global\s", ptx)
    assert set(hinted) <= set(policy), (set(hinted), policy)
    assert len(hinted) == len(re.findall(r"cp\.async\.c[ag]\.shared\.global\s", base))  # the same copies
    assert "L2::cache_hint" not in base and "createpolicy" not in base


def test_pass_gives_the_instruction_triton_3_9_emits():
    """The pass applied to v154's PTX with the hints taken out (triton 3.6's form) gives the same copies as the
    installed triton's, operands and all, but the policy register's name."""
    ptx = _ptx("v154_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_ef")
    native = re.search(r"createpolicy\.fractional\.L2::evict_first\.b64 (%[\w]+), 1\.0;", ptx).group(1)
    stripped = re.sub(r"\s*createpolicy\.fractional\.L2::evict_first\.b64 %[\w]+, 1\.0;", "", ptx)
    stripped = re.sub(r"\.L2::cache_hint( [^;]*), %[\w]+;", r"\1;", stripped)
    redone = ptx_hints.add_evict_first(stripped)

    def copies(text, reg):
        return [line.strip().replace(reg, "POLICY") for line in text.splitlines() if "cp.async.cg" in line]

    assert copies(redone, ptx_hints.POLICY_REG) == copies(ptx, native) and copies(ptx, native)


gpu = pytest.mark.skipif(not SM90, reason="needs an sm90 GPU (Hopper) with Gluon")


@gpu
@pytest.mark.parametrize("variant", sorted(EVICT))
@pytest.mark.parametrize("shape", [dict(batch_size=4, kv_seq_len=1000, kv_lens=(1, 65, 999, 1000)),
                                   dict(batch_size=8, kv_seq_len=4096)])
def test_evict_first_changes_caching_only(variant, shape):
    """Fresh inputs, NaN-poisoned outputs: the kv_evict variant's output is bitwise its base's (and passes the
    leaderboard check), at the split count the plan chooses and at 3; the binary it launched carries the hint."""
    from mla.kernels.triton import TritonDecodePlan

    fmt = _fmt(variant)
    for seed, splits in ((3, None), (4, 3)):
        data = mla.generate_input(shape["batch_size"], 1, shape["kv_seq_len"], seed=seed, device="cuda",
                                  kv_lens=shape.get("kv_lens"))
        outs = []
        for name in (variant, EVICT[variant]):
            plan = TritonDecodePlan(data, kv_format=fmt, variant=name, num_splits=splits, graph=False)
            plan.out.fill_(float("nan"))
            outs.append(plan.run(data).clone())
            if name == variant:
                ptx = _launched_ptx(plan)
                assert ptx and all("createpolicy.fractional.L2::evict_first" in p for p in ptx), name
        assert torch.equal(outs[0], outs[1]), (variant, seed, splits)
        ok, msg = mla.check(data, outs[0], reference_output=mla.reference(data, kv_format=fmt))
        assert ok, msg
