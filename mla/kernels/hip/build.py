"""Build the gfx950 HIP kernels with clang: to assembly (the ISA lab) or to code objects (what the
``hip`` backend loads through the HIP module API; :mod:`.launcher`). Any machine with clang >= 19
(+ lld for code objects) builds both; no ROCm SDK, no hipcc, no torch extension.

Offline mode is what the ISA lab uses: ``clang -x hip --cuda-device-only -nogpuinc -nogpulib
--offload-arch=gfx950 -S`` with ``-DMLA_OFFLINE_COMPAT`` so ``mla_compat.h`` stands in for the
ROCm headers. The resulting ``.s`` carries the register/LDS/occupancy metadata that
:mod:`mla.analysis.isa` parses.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .launcher import MLA_KERNELS, HipDriver, ModuleLauncher
from .variants import VARIANTS, Variant, get_variant

KERNEL_DIR = Path(__file__).resolve().parent
SOURCE = KERNEL_DIR / "mla_mxfp4_decode.hip"
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
    rocm = os.path.join(os.environ.get("ROCM_PATH", "/opt/rocm"), "llvm", "bin", "clang")
    if env:
        if not shutil.which(env):
            raise ToolchainMissing(f"MLA_CLANG={env!r} is not an executable")
        return shutil.which(env)
    for name in _CLANG_NAMES:
        path = shutil.which(name)
        if path and clang_major(path) >= 19:
            return path
    if os.access(rocm, os.X_OK) and clang_major(rocm) >= 19:  # ROCm's own clang (no hipcc needed)
        return rocm
    raise ToolchainMissing("no clang >= 19 on PATH (gfx950 needs LLVM 19+); on Debian: "
                           "apt-get install -y --no-install-recommends clang-22")


def clang_version(clang: str) -> str:
    """First line of ``clang --version``, e.g. 'Debian clang version 22.1.8 (...)'."""
    out = subprocess.run([clang, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0].strip()


def llvm_tool(clang: str, name: str) -> str | None:
    """Path of the LLVM tool ``name`` (e.g. "ld.lld", "llvm-readelf") that goes with ``clang``: Debian's
    ``name-NN`` of clang's major version, else the one beside clang, else ``name`` on PATH; None if none."""
    major = clang_major(clang)
    for cand in (f"{name}-{major}", str(Path(clang).resolve().parent / name), name):
        if shutil.which(cand):
            return shutil.which(cand)
    return None


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


# --- code objects: what the hip backend loads (no compiler, no ROCm SDK needed at run time) -----
CODE_OBJECT_VERSION = 5
CODE_OBJECT_FLAGS = ("-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", "-O3", "-std=c++17",
                     "-DMLA_OFFLINE_COMPAT", "--no-gpu-bundle-output",
                     f"-mcode-object-version={CODE_OBJECT_VERSION}",
                     "-fuse-cuid=none")  # no per-build __hip_cuid_<hash> symbol: byte-identical rebuilds
SOURCES = (SOURCE, KERNEL_DIR / "mla_compat.h")
TWIN_SOURCE = KERNEL_DIR / "twin_affine.cu"
TWIN_ARCH = "sm_90"
PREBUILT_DIR = KERNEL_DIR / "prebuilt"
TWIN_PTX = PREBUILT_DIR / f"twin_affine.{TWIN_ARCH}.ptx"
TWIN_FLAGS = ("-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib", f"--cuda-gpu-arch={TWIN_ARCH}",
              "-O3", "-Wno-unknown-cuda-version", "-S")


def cache_dir() -> Path:
    """$MLA_CACHE_DIR/hip, else ~/.cache/mla/hip."""
    root = os.environ.get("MLA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "mla")
    return Path(root) / "hip"


def code_object_command(variant: Variant | str, out: Path, clang: str | None = None) -> list[str]:
    v = get_variant(variant) if isinstance(variant, str) else variant
    return [clang or find_clang(), *CODE_OBJECT_FLAGS, f"--offload-arch={ARCH}", *v.defines,
            "-I", str(KERNEL_DIR), "-c", "-o", str(out), str(SOURCE)]


def source_key(variant: Variant | str) -> str:
    """What a code object is built from: the sources, flags and variant defines (not the compiler)."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    h = hashlib.sha256()
    for src in SOURCES:
        h.update(src.read_bytes())
    h.update(" ".join([*CODE_OBJECT_FLAGS, ARCH, *v.defines]).encode())
    return h.hexdigest()[:16]


def code_object_key(variant: Variant | str, clang: str) -> str:
    """Cache key: :func:`source_key` and the compiler's version line."""
    return hashlib.sha256(f"{source_key(variant)} {clang_version(clang)}".encode()).hexdigest()[:16]


PREBUILT_CO_DIR = PREBUILT_DIR / ARCH
PREBUILT_MANIFEST = PREBUILT_CO_DIR / "manifest.json"


def prebuilt_code_object(variant: Variant | str) -> Path | None:
    """The code object shipped in the package for this variant, if it was built from the current
    sources (``manifest.json`` records each one's :func:`source_key`), else None."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    try:
        entry = json.loads(PREBUILT_MANIFEST.read_text())["variants"][v.name]
    except (OSError, KeyError, ValueError):
        return None
    path = PREBUILT_CO_DIR / entry["file"]
    return path if entry["source_key"] == source_key(v) and path.exists() else None


def write_prebuilt(clang: str | None = None) -> Path:
    """Build every variant into prebuilt/gfx950/ with a manifest (python -m mla.kernels.hip.build --prebuilt)."""
    clang = clang or find_clang()
    PREBUILT_CO_DIR.mkdir(parents=True, exist_ok=True)
    entries = {}
    for name in VARIANTS:
        co = build_code_object(name, clang)
        dst = PREBUILT_CO_DIR / f"{name}.co"
        shutil.copyfile(co, dst)
        entries[name] = {"file": dst.name, "source_key": source_key(name), "bytes": dst.stat().st_size}
    PREBUILT_MANIFEST.write_text(json.dumps({"clang": clang_version(clang), "code_object_version": CODE_OBJECT_VERSION,
                                             "target": ARCH, "variants": entries}, indent=1) + "\n")
    return PREBUILT_MANIFEST


def code_object_for(variant: Variant | str) -> Path:
    """$MLA_HIP_CODE_OBJECT_DIR/<variant>.co, else the packaged prebuilt one (if current), else a
    clang build (cached). The first two need no compiler at all."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    pre = os.environ.get("MLA_HIP_CODE_OBJECT_DIR")
    if pre and (Path(pre) / f"{v.name}.co").exists():
        return Path(pre) / f"{v.name}.co"
    return prebuilt_code_object(v) or build_code_object(v)


def build_code_object(variant: Variant | str, clang: str | None = None, out_dir: Path | str | None = None) -> Path:
    """The gfx950 code object (ELF, code object v5, plain ``gfx950`` target) of one variant, built
    with clang once and cached by :func:`code_object_key`. Needs clang >= 19 with lld (Debian:
    clang-22 lld-22; ROCm ships both in /opt/rocm/llvm/bin); no HIP headers, no hipcc."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    clang = clang or find_clang()
    out_dir = Path(out_dir) if out_dir is not None else cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{v.name}-{ARCH}-{code_object_key(v, clang)}.co"
    if out.exists():
        return out
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    cmd = code_object_command(v, tmp, clang)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        hint = " (clang links code objects with ld.lld: install lld, e.g. lld-22)" if "link" in res.stderr else ""
        raise RuntimeError(f"clang failed for variant {v.name}{hint}:\n{' '.join(cmd)}\n{res.stderr[-3000:]}")
    os.replace(tmp, out)  # atomic: concurrent builders never see a half-written file
    return out


def build_twin_ptx(out: Path | str = TWIN_PTX, clang: str | None = None) -> Path:
    """PTX of the CUDA twin's test kernel (``twin_affine.cu``), built by clang the way the gfx950
    code objects are (device only, no vendor headers). The result is committed under prebuilt/ so
    a GPU machine without clang loads it with ``cuModuleLoadData``; tests check it is current."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [clang or find_clang(), *TWIN_FLAGS, "-o", str(out), str(TWIN_SOURCE)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"clang failed for the PTX twin:\n{' '.join(cmd)}\n{res.stderr[-3000:]}")
    return out


_LAUNCHERS: dict[str, object] = {}


def load_variant(variant: Variant | str, code_object: Path | str | None = None):
    """The variant's kernels loaded through the HIP module API (once per process): a
    :class:`~mla.kernels.hip.launcher.ModuleLauncher` over :data:`~mla.kernels.hip.launcher.MLA_KERNELS`.
    ``code_object`` overrides :func:`code_object_for`."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    if v.name not in _LAUNCHERS:
        path = code_object or code_object_for(v)
        _LAUNCHERS[v.name] = ModuleLauncher(Path(path).read_bytes(), MLA_KERNELS, HipDriver())
    return _LAUNCHERS[v.name]


def _main(argv=None) -> int:
    """python -m mla.kernels.hip.build [--twin-ptx] [--variants ...] [-o DIR]: build code objects."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m mla.kernels.hip.build", description=_main.__doc__)
    ap.add_argument("--prebuilt", action="store_true", help="rebuild prebuilt/gfx950/*.co and its manifest")
    ap.add_argument("--twin-ptx", action="store_true", help=f"rebuild {TWIN_PTX.relative_to(KERNEL_DIR.parent.parent.parent)}")
    ap.add_argument("--variants", nargs="*", default=None, help="gfx950 variants to build (default: all)")
    ap.add_argument("-o", "--out-dir", default=None, help="where to write <variant>.co (default: the cache)")
    args = ap.parse_args(argv)
    if args.twin_ptx:
        print(build_twin_ptx())
        return 0
    if args.prebuilt:
        print(write_prebuilt())
        return 0
    for name in args.variants or list(VARIANTS):
        p = build_code_object(name)
        if args.out_dir:
            dst = Path(args.out_dir) / f"{name}.co"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dst)
            p = dst
        print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
