"""The code-object launcher (mla/kernels/hip/launcher.py).

CPU: the argument table's C-ABI layout and the packed bytes. CUDA GPU (the H200): the CUDA twin of
the launcher loads the clang-built PTX (prebuilt/twin_affine.sm_90.ptx) with cuModuleLoadData and
launches on torch's current stream, on a side stream and inside a CUDA graph capture; a bad launch
raises LaunchError naming the driver's error. With $MLA_TEST_OUT set the GPU tests write what they
measured to $MLA_TEST_OUT/hip-launcher-twin.csv. The HIP driver itself is not run here (no ROCm GPU).
"""

from __future__ import annotations

import csv
import ctypes
import os
import platform
import struct
import time
from pathlib import Path

import pytest
import torch

from mla.kernels.hip import build as B
from mla.kernels.hip.launcher import (MLA_KERNELS, TWIN_KERNELS, Arg, ArgBuffer, CudaDriver, HipDriver, LaunchError,
                                      ModuleLauncher, _dims, layout)

CUDA = torch.cuda.is_available() and torch.version.hip is None
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs an NVIDIA GPU (the CUDA twin)")


def test_layout_pads_like_the_c_abi():
    offsets, size = layout(TWIN_KERNELS["twin_affine"])
    assert offsets == [0, 8, 16, 24, 28] and size == 32  # the pointer after the int is padded to 16
    offsets, size = layout(MLA_KERNELS["mla_mxfp4_partial"])
    assert offsets == [0, 8, 16, 24, 32, 40, 48, 56, 60, 64, 68, 72] and size == 76
    assert layout(MLA_KERNELS["mla_lse_reduce"]) == ([0, 8, 16, 24, 28], 32)


def test_pack_writes_each_argument_at_its_offset():
    x = torch.zeros(4)
    buf = ArgBuffer(TWIN_KERNELS["twin_affine"]).pack((x, 7, 0x1234_5678_9ABC, 1.5, -2.0))
    raw = buf.raw()
    assert len(raw) == 32
    assert struct.unpack_from("<Q", raw, 0)[0] == x.data_ptr()
    assert struct.unpack_from("<i", raw, 8)[0] == 7
    assert struct.unpack_from("<Q", raw, 16)[0] == 0x1234_5678_9ABC
    assert struct.unpack_from("<ff", raw, 24) == (1.5, -2.0)
    addr = ctypes.addressof(buf.buf)
    buf.pack((x, 8, 0, 0.0, 0.0))  # repacking rewrites the same memory
    assert struct.unpack_from("<i", buf.raw(), 8)[0] == 8 and ctypes.addressof(buf.buf) == addr


@pytest.mark.parametrize("values, match", [
    ((1, 2, 3, 4.0), "expected 5 arguments"),
    ((1.0, 2, 3, 4.0, 5.0), "pointer"),
    ((1, 2.5, 3, 4.0, 5.0), "i32"),
    ((1, 1 << 31, 3, 4.0, 5.0), "does not fit"),
    ((1, 2, 3, "a", 5.0), "f32"),
    ((1, True, 3, 4.0, 5.0), "i32"),
])
def test_pack_refuses_wrong_arguments(values, match):
    with pytest.raises(ValueError, match=match):
        ArgBuffer(TWIN_KERNELS["twin_affine"]).pack(values)


def test_arg_kind_and_dims_checked():
    with pytest.raises(ValueError, match="kind"):
        Arg("x", "f64")
    assert _dims(5, "grid") == (5, 1, 1) and _dims((2, 3), "grid") == (2, 3, 1)
    with pytest.raises(ValueError, match="block"):
        _dims((0,), "block")


@pytest.mark.skipif(torch.version.hip is not None, reason="checks the refusal off ROCm")
def test_hip_driver_refuses_without_rocm():
    with pytest.raises(LaunchError, match="ROCm"):
        HipDriver()


# ---- the CUDA twin on a GPU -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def twin():
    return ModuleLauncher(B.TWIN_PTX.read_bytes(), TWIN_KERNELS, CudaDriver())


def _expect(x, a, b):
    rows = torch.arange(x.shape[0], device=x.device, dtype=torch.float32)[:, None]
    return a * x + b + rows


def _record(rows: list[dict]):
    out = os.environ.get("MLA_TEST_OUT")
    if not out:
        return
    path = Path(out) / "hip-launcher-twin.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["check", "ok", "value", "unit", "device", "driver", "torch", "host", "utc"])
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({"device": torch.cuda.get_device_name(), "driver": _driver_version(), "torch": torch.__version__,
                        "host": platform.node(), "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **r})


def _driver_version() -> str:
    try:
        import subprocess
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - provenance only
        return "unknown"


@needs_cuda
def test_twin_current_stream(twin):
    x = torch.randn(3, 1000, device="cuda")
    y = torch.full_like(x, float("nan"))
    twin.launch("twin_affine", (4, 3), (256,), x, 1000, y, 2.0, 0.5)
    torch.cuda.synchronize()
    ok = torch.equal(y, _expect(x, 2.0, 0.5))
    _record([dict(check="current_stream", ok=ok, value="", unit="")])
    assert ok


@needs_cuda
def test_twin_side_stream_orders_with_torch(twin):
    s = torch.cuda.Stream()
    x = torch.randn(2, 4096, device="cuda")
    y = torch.empty_like(x)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x2 = x * 3  # torch work on the side stream, then our launch on the same stream
        twin.launch("twin_affine", (16, 2), (256,), x2, 4096, y, 1.0, 0.0)
        z = y + 1  # torch work after it on the same stream sees our result
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    ok = torch.equal(z, _expect(x * 3, 1.0, 0.0) + 1)
    _record([dict(check="side_stream", ok=ok, value="", unit="")])
    assert ok


@needs_cuda
def test_twin_graph_capture_replays_the_launch(twin):
    x = torch.randn(1, 512, device="cuda")
    y = torch.zeros_like(x)
    twin.launch("twin_affine", (2,), (256,), x, 512, y, 1.0, 0.0)  # warm-up outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        twin.launch("twin_affine", (2,), (256,), x, 512, y, -1.0, 4.0)
    y.zero_()
    x.copy_(torch.randn_like(x))  # the graph reads the captured address: new contents, same pointer
    g.replay()
    torch.cuda.synchronize()
    ok = torch.equal(y, _expect(x, -1.0, 4.0))
    _record([dict(check="graph_capture", ok=ok, value="", unit="")])
    assert ok


@needs_cuda
def test_twin_bad_launch_raises(twin):
    x = torch.zeros(1, 8, device="cuda")
    with pytest.raises(LaunchError, match="cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"):
        twin.launch("twin_affine", (1,), (2048,), x, 8, x, 1.0, 0.0)  # > 1024 threads per block
    with pytest.raises(LaunchError, match="cuModuleGetFunction"):
        ModuleLauncher(B.TWIN_PTX.read_bytes(), {"no_such_kernel": TWIN_KERNELS["twin_affine"]}, twin.driver)
    with pytest.raises(LaunchError, match="cuModuleLoadData"):
        ModuleLauncher(b"this is not ptx", TWIN_KERNELS, twin.driver)
    _record([dict(check="bad_launch_raises", ok=True, value="", unit="")])


@needs_cuda
def test_twin_launch_cost(twin):
    """Host time per launch: packing every call vs a prepared argument buffer (recorded, not asserted
    beyond sanity: it depends on the host)."""
    x = torch.randn(1, 256, device="cuda")
    y = torch.empty_like(x)
    prepared = twin.prepared("twin_affine", x, 256, y, 1.0, 0.0)
    n = 2000
    for _ in range(50):
        twin.launch("twin_affine", (1,), (256,), x, 256, y, 1.0, 0.0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        twin.launch("twin_affine", (1,), (256,), x, 256, y, 1.0, 0.0)
    t1 = time.perf_counter()
    for _ in range(n):
        twin.launch("twin_affine", (1,), (256,), args=prepared)
    t2 = time.perf_counter()
    torch.cuda.synchronize()
    packing_us, prepared_us = (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6
    assert torch.equal(y, _expect(x, 1.0, 0.0))
    _record([dict(check="launch_us_packing", ok=True, value=f"{packing_us:.2f}", unit="us/launch (host)"),
             dict(check="launch_us_prepared", ok=True, value=f"{prepared_us:.2f}", unit="us/launch (host)")])
    assert 0 < prepared_us < 1000 and 0 < packing_us < 1000
