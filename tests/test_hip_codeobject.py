"""The gfx950 code objects the hip backend loads, built here with clang (CI installs clang-22, lld-22,
llvm-22): their kernel-argument metadata must match the launcher's argument table exactly, with
code object version 5, the plain gfx950 target, LDS <= 160 KB and no scratch. Also: the build cache,
the committed PTX of the CUDA twin is what clang builds from its source, and the E8M0 guard."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from mla.backends.hip_backend import MAX_V_E8M0, validate_request
from mla.inputs import generate_input
from mla.kernels.hip import build as B
from mla.kernels.hip.launcher import MLA_KERNELS, TWIN_KERNELS, layout
from mla.kernels.hip.variants import VARIANTS

GFX950_LDS_BYTES = 160 * 1024


try:
    CLANG = B.find_clang()
    READELF, LLD = B.llvm_tool(CLANG, "llvm-readelf"), B.llvm_tool(CLANG, "ld.lld")
except B.ToolchainMissing:
    CLANG = READELF = LLD = None
needs_clang = pytest.mark.skipif(not (CLANG and READELF and LLD),
                                 reason="needs clang >= 19, lld and llvm-readelf (apt-get install clang-22 lld-22 llvm-22)")


def metadata(co: Path) -> dict:
    notes = subprocess.run([READELF, "--notes", str(co)], capture_output=True, text=True, check=True).stdout
    doc = notes[notes.index("---"): notes.index("...", notes.index("---")) + 3]
    return yaml.safe_load(doc)


def abi_version(co: Path) -> int:
    head = subprocess.run([READELF, "-h", str(co)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"ABI Version:\s+(\d+)", head).group(1))


@pytest.fixture(scope="module")
def code_objects(tmp_path_factory):
    out = tmp_path_factory.mktemp("co")
    return {name: B.build_code_object(name, CLANG, out) for name in VARIANTS}


@needs_clang
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_code_object_metadata_matches_the_launcher_table(code_objects, variant):
    co = code_objects[variant]
    md = metadata(co)
    assert md["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx950"  # plain gfx950: xnack / sramecc "any"
    assert md["amdhsa.version"] == [1, 2]  # code object v5
    assert abi_version(co) == 3  # ELFABIVERSION_AMDGPU_HSA_V5
    kernels = {k[".name"]: k for k in md["amdhsa.kernels"]}
    assert set(kernels) == set(MLA_KERNELS)
    for name, table in MLA_KERNELS.items():
        k = kernels[name]
        offsets, size = layout(table)
        explicit = [a for a in k[".args"] if not a[".value_kind"].startswith("hidden_")]
        assert [(a[".offset"], a[".size"]) for a in explicit] == [(o, a.size) for o, a in zip(offsets, table)], name
        kinds = ["ptr" if a[".value_kind"] == "global_buffer" else "by_value" for a in explicit]
        assert kinds == ["ptr" if a.kind == "ptr" else "by_value" for a in table], name
        hidden = [a for a in k[".args"] if a[".value_kind"].startswith("hidden_")]
        assert all(a[".offset"] >= size for a in hidden), name  # the runtime fills those after ours
        assert k[".kernarg_segment_size"] >= size and k[".kernarg_segment_align"] == 8
        assert k[".group_segment_fixed_size"] <= GFX950_LDS_BYTES, (name, k[".group_segment_fixed_size"])
        assert k[".private_segment_fixed_size"] == 0 and k[".vgpr_spill_count"] == 0  # no scratch
        assert k[".wavefront_size"] == 64
    assert kernels["mla_mxfp4_partial"][".max_flat_workgroup_size"] == VARIANTS[variant].threads
    assert kernels["mla_lse_reduce"][".max_flat_workgroup_size"] == 128


def test_prebuilt_code_objects_are_current():
    """The packaged code objects (what a ROCm machine loads without any compiler) were built from
    today's sources; otherwise: python -m mla.kernels.hip.build --prebuilt."""
    stale = [name for name in VARIANTS if B.prebuilt_code_object(name) is None]
    assert not stale, f"stale or missing prebuilt code objects {stale}: python -m mla.kernels.hip.build --prebuilt"
    assert B.code_object_for("b64w4_iglp").parent == B.PREBUILT_CO_DIR


@needs_clang
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_prebuilt_code_object_metadata(variant):
    md = metadata(B.prebuilt_code_object(variant))
    assert md["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx950" and md["amdhsa.version"] == [1, 2]
    for k in md["amdhsa.kernels"]:
        table = MLA_KERNELS[k[".name"]]
        offsets, size = layout(table)
        explicit = [a for a in k[".args"] if not a[".value_kind"].startswith("hidden_")]
        assert [(a[".offset"], a[".size"]) for a in explicit] == [(o, a.size) for o, a in zip(offsets, table)]
        assert k[".group_segment_fixed_size"] <= GFX950_LDS_BYTES and k[".private_segment_fixed_size"] == 0


@needs_clang
def test_prebuilt_code_objects_are_what_this_clang_builds(tmp_path):
    """Builds are deterministic: with the manifest's compiler, a fresh build is the shipped file."""
    manifest = json.loads(B.PREBUILT_MANIFEST.read_text())
    if manifest["clang"] != B.clang_version(CLANG):
        pytest.skip(f"prebuilt with {manifest['clang']!r}, this is {B.clang_version(CLANG)!r}")
    for name in ("b64w4_iglp", "b128w4_pf"):
        assert B.build_code_object(name, CLANG, tmp_path).read_bytes() == B.prebuilt_code_object(name).read_bytes()


@needs_clang
def test_build_cache_reuses_and_keys_on_defines(tmp_path):
    a = B.build_code_object("b64w4_plain", CLANG, tmp_path)
    mtime = a.stat().st_mtime_ns
    assert B.build_code_object("b64w4_plain", CLANG, tmp_path) == a and a.stat().st_mtime_ns == mtime
    b = B.build_code_object("b64w4_iglp", CLANG, tmp_path)
    assert b != a and b.read_bytes() != a.read_bytes()
    assert not list(tmp_path.glob("*.tmp*"))


@needs_clang
def test_twin_ptx_is_current_and_matches_its_table(tmp_path):
    fresh = B.build_twin_ptx(tmp_path / "twin.ptx", CLANG)
    committed = B.TWIN_PTX.read_text()
    assert fresh.read_text() == committed, "rebuild with: python -m mla.kernels.hip.build --twin-ptx"
    params = re.findall(r"\.param \.(u64|u32|f32)\b", committed)
    kind = {"u64": "ptr", "u32": "i32", "f32": "f32"}
    assert [kind[p] for p in params] == [a.kind for a in TWIN_KERNELS["twin_affine"]]
    assert ".target sm_90" in committed


def test_twin_ptx_committed():
    text = B.TWIN_PTX.read_text()
    assert ".visible .entry twin_affine(" in text


def test_v_scale_guard():
    data = generate_input(2, 1, 64, 0)
    validate_request(data, "mxfp4", "bf16", {})
    q, kv, qo, kvi, cfg = data
    packed, scales = kv["mxfp4"]
    rope_only = scales.clone()
    rope_only[3, 16] = 200  # a rope block (K only, consumed as FP4 with its scale): allowed
    validate_request((q, {**kv, "mxfp4": (packed, rope_only)}, qo, kvi, cfg), "mxfp4", "bf16", {})
    hot = scales.clone()
    hot[5, 7] = MAX_V_E8M0 + 1
    with pytest.raises(ValueError, match="E8M0 scale 134"):
        validate_request((q, {**kv, "mxfp4": (packed, hot)}, qo, kvi, cfg), "mxfp4", "bf16", {})
    edge = scales.clone()
    edge[5, 7] = MAX_V_E8M0
    validate_request((q, {**kv, "mxfp4": (packed, edge)}, qo, kvi, cfg), "mxfp4", "bf16", {})
    if hasattr(torch, "float8_e8m0fnu"):  # the leaderboard's dtype: the same bytes
        validate_request((q, {**kv, "mxfp4": (packed, edge.view(torch.float8_e8m0fnu))}, qo, kvi, cfg),
                         "mxfp4", "bf16", {})
