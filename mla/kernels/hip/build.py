"""Build the gfx950 HIP kernels: offline to assembly (any machine with clang >= 19) or as a
PyTorch extension (ROCm machines with a gfx950 GPU).

Offline mode is what the ISA lab uses: ``clang -x hip --cuda-device-only -nogpuinc -nogpulib
--offload-arch=gfx950 -S`` with ``-DMLA_OFFLINE_COMPAT`` so ``mla_compat.h`` stands in for the
ROCm headers. The resulting ``.s`` carries the register/LDS/occupancy metadata that
:mod:`mla.analysis.isa` parses.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .variants import Variant, get_variant

KERNEL_DIR = Path(__file__).resolve().parent
SOURCE = KERNEL_DIR / "mla_mxfp4_decode.hip"
TORCH_SOURCE = KERNEL_DIR / "mla_mxfp4_torch.hip"
ARCH = "gfx950"
# Newest first: gfx950 and its builtins need LLVM >= 19 (mfma_scale, ds_read_tr, cvt_scalef32).
_CLANG_NAMES = tuple(f"clang-{v}" for v in range(25, 18, -1)) + ("clang",)
OFFLINE_FLAGS = ("-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-O3", "-std=c++17",
                 "-DMLA_OFFLINE_COMPAT")


class ToolchainMissing(RuntimeError):
    """No clang that can target gfx950 was found; the message says what to install."""


def find_clang() -> str:
    """Path of a clang that targets gfx950: $MLA_CLANG, else the newest clang-NN on PATH."""
    env = os.environ.get("MLA_CLANG")
    if env:
        if not shutil.which(env):
            raise ToolchainMissing(f"MLA_CLANG={env!r} is not an executable")
        return shutil.which(env)
    for name in _CLANG_NAMES:
        path = shutil.which(name)
        if path and clang_major(path) >= 19:
            return path
    raise ToolchainMissing("no clang >= 19 on PATH (gfx950 needs LLVM 19+); on Debian: "
                           "apt-get install -y --no-install-recommends clang-22")


def clang_version(clang: str) -> str:
    """First line of ``clang --version``, e.g. 'Debian clang version 22.1.8 (...)'."""
    out = subprocess.run([clang, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def clang_major(clang: str) -> int:
    m = re.search(r"clang version (\d+)", clang_version(clang))
    return int(m.group(1)) if m else 0


def offline_command(variant: Variant | str, out: Path, clang: str | None = None,
                    extra: tuple[str, ...] = ()) -> list[str]:
    v = get_variant(variant) if isinstance(variant, str) else variant
    return [clang or find_clang(), *OFFLINE_FLAGS, f"--offload-arch={ARCH}", *v.defines, *extra,
            "-I", str(KERNEL_DIR), "-S", "-o", str(out), str(SOURCE)]


def compile_offline(variant: Variant | str, out_dir: Path | str, clang: str | None = None,
                    extra: tuple[str, ...] = ()) -> Path:
    """Compile one variant's device code for gfx950 to assembly; returns the ``.s`` path.

    Raises RuntimeError with the compiler's message if it fails."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{v.name}.s"
    cmd = offline_command(v, out, clang, extra)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"clang failed for variant {v.name}:\n{' '.join(cmd)}\n{res.stderr[-3000:]}")
    return out


# --- ROCm: PyTorch extension -------------------------------------------------------------------
_MODULES: dict[str, object] = {}


def load_variant(variant: Variant | str, verbose: bool = False):
    """Build (once per process; torch caches on disk) and import one variant as a torch extension.

    Only meaningful on ROCm with a gfx950 GPU; callers check availability first."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    if v.name not in _MODULES:
        from torch.utils.cpp_extension import load

        _MODULES[v.name] = load(
            name=f"mla_hip_{v.name}",
            sources=[str(TORCH_SOURCE)],
            extra_include_paths=[str(KERNEL_DIR)],
            extra_cflags=["-O3"],
            extra_cuda_cflags=["-O3", f"--offload-arch={ARCH}", "-std=c++17", *v.defines],
            verbose=verbose,
        )
    return _MODULES[v.name]
