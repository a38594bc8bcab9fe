"""``python -m mla doctor``: the checks it reports here, and the exact missing piece it names when
the machine looks like a ROCm box missing a part (simulated by patching torch's build info)."""

from __future__ import annotations

import json

import pytest
import torch

from mla import doctor
from mla.cli import main
from mla.kernels.hip import build as HB


def _by_check(rows):
    return {r["check"]: r for r in rows}


def test_rows_on_this_machine():
    rows = _by_check(doctor.diagnose())
    assert rows["python"]["status"] == "ok" and rows["torch"]["status"] == "ok"
    for name in ("torch", "triton", "flashinfer", "aiter", "hip"):
        assert f"backend {name}" in rows
    assert all(r["status"] in ("ok", "missing", "n/a") for r in rows.values())
    if not torch.version.hip:
        assert rows["ROCm torch"]["status"] == "n/a" and "not a HIP build" in rows["ROCm torch"]["detail"]
        assert rows["backend hip"]["status"] == "missing" and "gfx950" in rows["backend hip"]["detail"]


def test_rocm_without_gpu_names_the_gpu(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.4.0", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rows = _by_check(doctor._rocm_rows(build=False))
    assert rows["ROCm torch"]["status"] == "ok"
    assert rows["AMD GPU visible"]["status"] == "missing" and "is_available() is False" in rows["AMD GPU visible"]["detail"]
    assert rows["AMD AITER"]["status"] == "missing" and "github.com/ROCm/aiter" in rows["AMD AITER"]["detail"]


def test_rocm_wrong_arch_is_named(monkeypatch):
    class Props:
        gcnArchName = "gfx942:sramecc+:xnack-"

    monkeypatch.setattr(torch.version, "hip", "6.4.0", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props())
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "AMD Instinct MI300X")
    rows = _by_check(doctor._rocm_rows(build=False))
    assert rows["gfx950 (MI355X)"]["status"] == "missing" and "found gfx942" in rows["gfx950 (MI355X)"]["detail"]


def _no_clang(monkeypatch):
    monkeypatch.setattr(HB, "find_clang", lambda: (_ for _ in ()).throw(HB.ToolchainMissing("no clang >= 19 on PATH")))


def test_missing_clang_matters_only_when_the_prebuilt_objects_are_stale(monkeypatch):
    _no_clang(monkeypatch)
    rows = _by_check(doctor._clang_rows(None, None, build=False))
    assert rows["prebuilt gfx950 code objects"]["status"] == "ok"
    assert rows["clang for gfx950"]["status"] == "n/a" and "not needed" in rows["clang for gfx950"]["detail"]
    monkeypatch.setattr(HB, "prebuilt_code_object", lambda v: None)  # as after a kernel edit
    rows = _by_check(doctor._clang_rows("6.4.0", "gfx950", build=False))
    assert rows["prebuilt gfx950 code objects"]["status"] == "missing"
    assert "--prebuilt" in rows["prebuilt gfx950 code objects"]["detail"]
    assert rows["clang for gfx950"]["status"] == "missing" and rows["clang for gfx950"]["detail"].startswith(
        "no clang >= 19 on PATH")


def test_build_flag_compiles_a_code_object():
    """With clang >= 19 and its lld on PATH (CI installs clang-22 and lld-22: .ci/run) the build must work."""
    try:
        clang = HB.find_clang()
    except HB.ToolchainMissing:
        pytest.skip("no clang >= 19 here (CI installs clang-22)")
    if HB.llvm_tool(clang, "ld.lld") is None:
        pytest.skip(f"no ld.lld for {clang} here (CI installs lld-22)")
    row = _by_check(doctor._clang_rows(None, None, build=True))["gfx950 code object build"]
    assert row["status"] == "ok", row["detail"]


def test_cli_json(capsys):
    assert main(["doctor", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"check", "status", "detail"} <= set(rows[0])
