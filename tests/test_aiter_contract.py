"""The aiter backend's calls against AITER's real signatures, release by release (CPU, no aiter).

``tests/data/aiter/contract.json`` was recorded from AITER's source by
``scripts/record_aiter_contract.py`` (signatures of the three functions we call, the gfx950 assembly
kernel table, and the outputs of AITER's pure-Python ``get_mla_metadata_info_v1`` for our calls,
computed by running that function from each tag). Here stand-ins with exactly those signatures take
the backend's calls: every call must bind (inspect.Signature.bind), every annotated argument must
have the annotated type, and the work buffers must be the sizes AITER's sizing returned.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import types
from pathlib import Path

import pytest
import torch

import mla
from mla.backends import BackendUnavailable
from mla.backends import aiter_backend as AB

DATA = json.loads((Path(__file__).parent / "data" / "aiter" / "contract.json").read_text())
VERSIONS = {v["tag"]: v for v in DATA["versions"]}
SUPPORTED = [t for t in VERSIONS if t == "main" or AB.parse_version(t) >= AB.MIN_AITER]
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float8_e4m3fn: "fp8"}


class _SourceDefault:
    """A default that is not a literal (e.g. ``MlaVersion.V32.value``): bound as an opaque object."""

    def __init__(self, src):
        self.src = src

    def __repr__(self):
        return self.src


def signature(tag: str, fn: str) -> inspect.Signature:
    params = []
    for p in VERSIONS[tag]["signatures"][fn]["params"]:
        default = inspect.Parameter.empty
        if p["default"] is not None:
            try:
                default = ast.literal_eval(p["default"])
            except ValueError:
                default = _SourceDefault(p["default"])
        params.append(inspect.Parameter(p["name"], getattr(inspect.Parameter, p["kind"]), default=default,
                                        annotation=p["annotation"] or inspect.Parameter.empty))
    return inspect.Signature(params)


def check_annotation(fn: str, name: str, ann: str, value) -> None:
    optional = "Optional" in ann or "None" in ann
    if value is None:
        assert optional, f"{fn}({name}=None) but AITER annotates it {ann!r}"
        return
    base = ann.replace("Optional[", "").replace("]", "").replace("| None", "").strip()
    expect = {"int": int, "bool": bool, "float": (int, float), "torch.Tensor": torch.Tensor,
              "torch.dtype": torch.dtype}.get(base)
    if expect is not None:
        assert isinstance(value, expect), f"{fn}({name}={value!r}): AITER annotates {ann!r}"


def fake_aiter(tag: str, calls: list):
    """Stand-ins for aiter / aiter.mla with the recorded signatures of ``tag``."""
    info_rows = {tuple(r["args"]) + (r["num_kv_splits"],): r["buffers"] for r in VERSIONS[tag]["info_v1"]}

    def stand_in(fn, body):
        sig = signature(tag, fn)

        def call(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)  # TypeError, exactly like the real function
            for name, value in bound.arguments.items():
                ann = sig.parameters[name].annotation
                if ann is not inspect.Parameter.empty:
                    check_annotation(fn, name, ann, value)
            bound.apply_defaults()
            calls.append((fn, bound.arguments))
            return body(bound.arguments)
        call.__signature__ = sig  # what inspect.signature (the backend's version check) sees
        return call

    def info(a):
        key = (a["batch_size"], a["max_seqlen_qo"], a["num_head_qo"], DTYPE_NAME[a["q_dtype"]],
               DTYPE_NAME[a["kv_dtype"]], a["num_kv_splits"])
        assert a["is_sparse"] is False and a["fast_mode"] is False and a["intra_batch_mode"] is True
        assert key in info_rows, f"info_v1 call {key} was not recorded; add it to INFO_CASES and re-record"
        dt = {"uint64": torch.uint64, "int32": torch.int32}
        return [(tuple(shape), dt[d]) for shape, d in info_rows[key]]

    aiter = types.SimpleNamespace(
        dtypes=types.SimpleNamespace(fp8=torch.float8_e4m3fn, bf16=torch.bfloat16),
        get_mla_metadata_info_v1=stand_in("get_mla_metadata_info_v1", info),
        get_mla_metadata_v1=stand_in("get_mla_metadata_v1", lambda a: None),
    )
    mla_mod = types.SimpleNamespace(mla_decode_fwd=stand_in("mla_decode_fwd", lambda a: None))
    return aiter, mla_mod


CASES = [(kv, q, mode) for kv, q, mode in
         [("bf16", "bf16", "persistent"), ("bf16", "bf16", "nonpersistent"), ("fp8", "bf16", "persistent"),
          ("fp8", "fp8", "persistent"), ("fp8", "fp8", "nonpersistent")]]


@pytest.fixture(scope="module")
def data():
    return mla.generate_input(4, 1, 64, seed=0)


@pytest.mark.parametrize("tag", SUPPORTED)
@pytest.mark.parametrize("kv_format, q_format, mode", CASES)
def test_every_call_binds_to_the_recorded_signature(tag, kv_format, q_format, mode, data):
    calls = []
    aiter, mla_mod = fake_aiter(tag, calls)
    AB.check_aiter(aiter, mla_mod, tag.lstrip("v") if tag != "main" else None)
    plan = AB.build_plan(aiter, mla_mod, data, kv_format=kv_format, q_format=q_format, arch="gfx950", mode=mode)
    plan.run(data)
    names = [c[0] for c in calls]
    persistent = mode == "persistent"
    assert names == (["get_mla_metadata_info_v1", "get_mla_metadata_v1"] if persistent else []) + ["mla_decode_fwd"]
    fwd = calls[-1][1]
    bs = data[4]["batch_size"]
    assert fwd["page_size"] == 1 and fwd["nhead_kv"] == 1 and fwd["max_seqlen_q"] == 1
    assert fwd["kv_buffer"].shape == (bs * 64, 1, 1, 576)
    assert fwd["kv_last_page_lens"].tolist() == [1] * bs  # one token per page: the last page holds 1
    assert fwd["kv_indices"].tolist() == list(range(bs * 64))
    assert (fwd["q_scale"] is not None) == (q_format == "fp8")
    assert (fwd["kv_scale"] is not None) == (kv_format == "fp8")
    if persistent:
        meta, info_args = calls[1][1], calls[0][1]
        assert fwd["num_kv_splits"] == info_args["num_kv_splits"] == meta["max_split_per_batch"] == 32
        assert meta["kv_last_page_lens"] is fwd["kv_last_page_lens"]
        # buffers passed where AITER expects them (positions 6..11 of get_mla_metadata_v1)
        assert meta["work_metadata_ptrs"] is fwd["work_meta_data"]
        assert meta["work_info_set"] is fwd["work_info_set"] and meta["work_indptr"] is fwd["work_indptr"]
        assert fwd["work_info_set"].shape == (bs * 32, 8) and fwd["work_meta_data"].dtype == torch.uint64
    else:
        assert fwd["work_meta_data"] is None and fwd["num_kv_splits"] is None


def test_old_default_reproduces_aiters_type_error(data):
    """The bug this backend had: persistent mode with num_kv_splits=None. AITER's own sizing raised
    TypeError on it in every recorded version; the stand-in's annotation check catches it statically
    (AITER annotates the parameter ``int``); the backend now refuses it at config time."""
    for v in DATA["versions"]:
        assert v["info_v1_num_kv_splits_none"]["raises"] == "TypeError", v["tag"]
        assert "NoneType" in v["info_v1_num_kv_splits_none"]["message"]
    aiter, mla_mod = fake_aiter("main", [])
    with pytest.raises(AssertionError, match="annotates it 'int'"):
        aiter.get_mla_metadata_info_v1(4, 1, 16, torch.bfloat16, torch.bfloat16, is_sparse=False,
                                       fast_mode=False, num_kv_splits=None, intra_batch_mode=True)
    with pytest.raises(ValueError, match="num_kv_splits"):
        AB.build_plan(aiter, mla_mod, data, kv_format="bf16", q_format="bf16", arch="gfx950",
                      mode="persistent", num_kv_splits=None)


def test_version_before_0_1_11_is_rejected_and_would_not_bind(data):
    calls = []
    aiter, mla_mod = fake_aiter("v0.1.10", calls)
    lack = AB.missing_params(aiter, mla_mod)
    assert "page_size" in lack["get_mla_metadata_v1"] and "nhead_kv" in lack["mla_decode_fwd"]
    with pytest.raises(BackendUnavailable, match="0.1.11"):
        AB.check_aiter(aiter, mla_mod, "0.1.10.post3")
    with pytest.raises(BackendUnavailable, match="lacks parameters"):
        AB.check_aiter(aiter, mla_mod, None)
    with pytest.raises(TypeError):  # and the calls themselves would fail on it
        AB.build_plan(aiter, mla_mod, data, kv_format="bf16", q_format="bf16", arch="gfx950")


def test_required_params_present_in_every_supported_version():
    for tag in SUPPORTED:
        for fn, need in AB.REQUIRED_PARAMS.items():
            have = {p["name"] for p in VERSIONS[tag]["signatures"][fn]["params"]}
            assert set(need) <= have, (tag, fn, set(need) - have)


def test_a16w8_table_matches_gfx950_kernels_of_every_version():
    for tag in SUPPORTED:
        rows = VERSIONS[tag]["gfx950_asm"]["rows"]
        assert rows, tag
        have = {(int(r["Gqa"]), r["ps"] == "1", int(r["qSeqLen"])): r["knl_name"] for r in rows
                if r["qType"] == "bf16" and r["kvType"] == "fp8" and r["prefill"] == "0"}
        assert set(have) == set(AB.GFX950_A16W8), tag
        for key, kernel in AB.GFX950_A16W8.items():
            assert kernel in have[key], (tag, key, have[key])


@pytest.mark.parametrize("heads, mode, s, ok", [(16, "persistent", 1, True), (16, "persistent", 4, True),
                                                (16, "nonpersistent", 1, False), (32, "persistent", 1, False),
                                                (16, "persistent", 8, False)])
def test_a16w8_routing(heads, mode, s, ok):
    if ok:
        AB.check_formats("fp8", "bf16", mode, heads, s, "gfx950:sramecc+:xnack-")
    else:
        with pytest.raises(ValueError, match="no a16w8"):
            AB.check_formats("fp8", "bf16", mode, heads, s, "gfx950:sramecc+:xnack-")
    AB.check_formats("fp8", "fp8", mode, heads, s, "gfx950")  # a8w8 is left to aiter


def test_config_errors():
    with pytest.raises(ValueError, match="does not take"):
        AB.parse_config({"splits": 4})
    with pytest.raises(ValueError, match="mode"):
        AB.parse_config({"mode": "fast"})
    with pytest.raises(ValueError, match="positive int"):
        AB.parse_config({"num_kv_splits": 0})
    assert AB.parse_config({}) == ("persistent", 32, 6.0)
    assert AB.parse_config({"mode": "nonpersistent"})[1] is None


def test_parse_version():
    assert AB.parse_version("0.1.11") == (0, 1, 11)
    assert AB.parse_version("0.1.12.dev5+gabc") == (0, 1, 12)
    assert AB.parse_version("v0.1.10.post2") == (0, 1, 10)
    assert AB.parse_version("unknown") is None


@pytest.mark.skipif(not os.environ.get("AITER_SRC"), reason="set AITER_SRC=<aiter clone> to re-run AITER's sizing")
def test_info_v1_rerun_from_source_matches_record():
    """Runs AITER's get_mla_metadata_info_v1 from a local clone (at a recorded commit) for real."""
    spec = importlib.util.spec_from_file_location(
        "rec", Path(__file__).parents[1] / "scripts" / "record_aiter_contract.py")
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    repo = Path(os.environ["AITER_SRC"])
    for tag in SUPPORTED:
        fresh = rec.record(repo, tag)
        assert fresh["info_v1"] == VERSIONS[tag]["info_v1"], tag


def test_packaging_never_depends_on_the_unrelated_pypi_aiter():
    import re
    import tomllib

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"]) + [r for group in meta["optional-dependencies"].values() for r in group]
    assert not [r for r in reqs if re.match(r"^(amd-)?aiter\b", r)], reqs
    env = (Path(__file__).parents[1] / "environment.yml").read_text()
    assert "github.com/ROCm/aiter" in env and not re.search(r"^\s*-\s*(amd-)?aiter\b", env, re.M)
