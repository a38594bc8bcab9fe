"""``python -m mla doctor``: what this machine can run, and for what it cannot, the exact missing piece.

One row per check: ``(check, status, detail)`` with status ``ok`` | ``missing`` | ``n/a`` (does not
apply to this machine). On ROCm it walks the chain the AMD paths need, in order: a HIP build of
torch -> a visible GPU -> gfx950 -> AMD AITER >= 0.1.11 with the parameters our calls pass -> a clang
that targets gfx950 (only if the packaged code objects are stale) -> a code object that loads
through hipModuleLoadData.
On CUDA it checks the launcher's twin (libcuda, the committed PTX loads). Everywhere: triton, the
interpreter switch, the inline-PTX switch, and every backend's own availability reason.
Nothing here times anything; ``--build`` also compiles a gfx950 code object with clang.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform

import torch

OK, MISSING, NA = "ok", "missing", "n/a"


def _row(check: str, status: str, detail: str = "") -> dict:
    return {"check": check, "status": status, "detail": detail}


def _triton_rows() -> list[dict]:
    rows = []
    if importlib.util.find_spec("triton") is None:
        return [_row("triton", MISSING, "pip install triton (>= 3.4); the triton backend needs it")]
    import triton

    rows.append(_row("triton", OK, triton.__version__))
    interp = os.environ.get("TRITON_INTERPRET", "0") == "1"
    # the interpreter ships with triton: off is a switch to set, not a missing piece
    rows.append(_row("triton interpreter", OK,
                     "TRITON_INTERPRET=1 (kernels run on the CPU)" if interp else
                     ("off: kernels compile for the GPU" if torch.cuda.is_available() else
                      "available, off: TRITON_INTERPRET is not set, and without a GPU the triton backend runs "
                      "only under the interpreter: set TRITON_INTERPRET=1 before triton is imported (smoke "
                      "--backend triton sets it itself)")))
    ptx_off = os.environ.get("MLA_TRITON_PTX", "1") == "0"
    rows.append(_row("triton inline PTX", NA if torch.version.hip or not torch.cuda.is_available() else OK,
                     "portable path forced (MLA_TRITON_PTX=0)" if ptx_off else
                     "used on NVIDIA GPUs only; MLA_TRITON_PTX=0 forces the portable path (what gfx950 compiles)"))
    return rows


def _rocm_rows(build: bool) -> list[dict]:
    rows = []
    hip = getattr(torch.version, "hip", None)
    if not hip:
        rows.append(_row("ROCm torch", NA, f"torch {torch.__version__} is not a HIP build (on an AMD machine: "
                                           f"pytorch.org's ROCm wheels or a ROCm container)"))
    else:
        rows.append(_row("ROCm torch", OK, f"torch {torch.__version__}, HIP {hip}"))
    arch = None
    if hip:
        if not torch.cuda.is_available():
            rows.append(_row("AMD GPU visible", MISSING, "torch.cuda.is_available() is False (driver, "
                                                         "HIP_VISIBLE_DEVICES, /dev/kfd permissions?)"))
        else:
            arch = torch.cuda.get_device_properties(0).gcnArchName
            rows.append(_row("AMD GPU visible", OK, f"{torch.cuda.get_device_name(0)} ({arch})"))
            rows.append(_row("gfx950 (MI355X)", OK if arch.startswith("gfx950") else MISSING,
                             arch if arch.startswith("gfx950") else f"found {arch}: the hip kernels are gfx950-only "
                             f"(the triton and aiter backends may still run)"))
    rows.append(_aiter_row(hip))
    rows.extend(_clang_rows(hip, arch, build))
    return rows


def _aiter_row(hip) -> dict:
    from .backends import aiter_backend as AB

    if importlib.util.find_spec("aiter") is None:
        return _row("AMD AITER", MISSING if hip else NA,
                    "not installed: git clone --recursive https://github.com/ROCm/aiter, git checkout v0.1.11 or newer, "
                    "pip install -e . (PyPI's 'aiter' is an unrelated package)")
    version = AB.aiter_version()
    if not hip:
        return _row("AMD AITER", NA, f"installed ({version or 'version unknown'}) but this torch has no HIP")
    try:
        import aiter
        import aiter.mla

        AB.check_aiter(aiter, aiter.mla, version)
    except Exception as e:  # noqa: BLE001 - report whatever stops it
        return _row("AMD AITER", MISSING, f"{type(e).__name__}: {e}")
    return _row("AMD AITER", OK, f"{version or 'version unknown'}; get_mla_metadata_v1 / mla_decode_fwd take our calls")


def _clang_rows(hip, arch, build: bool) -> list[dict]:
    from .kernels.hip import build as HB
    from .kernels.hip.variants import VARIANTS

    on_gfx950 = bool(hip and arch and arch.startswith("gfx950"))
    stale = [v for v in VARIANTS if HB.prebuilt_code_object(v) is None]
    rows = [_row("prebuilt gfx950 code objects", MISSING if stale else OK,
                 f"stale (sources changed): {stale}; rebuild: python -m mla.kernels.hip.build --prebuilt" if stale
                 else f"{len(VARIANTS)} variants in {HB.PREBUILT_CO_DIR}, current: no compiler needed")]
    try:
        clang = HB.find_clang()
        rows.append(_row("clang for gfx950", OK, f"{clang}: {HB.clang_version(clang)}"))
    except HB.ToolchainMissing as e:
        clang = None
        rows.append(_row("clang for gfx950", MISSING if (stale and on_gfx950) else NA,
                         f"{e}" + ("" if stale else " (not needed while the prebuilt code objects are current)")))
    if build and clang:
        try:
            co = HB.build_code_object("b64w4_iglp", clang)
            rows.append(_row("gfx950 code object build", OK, f"{co} ({co.stat().st_size} bytes)"))
        except Exception as e:  # noqa: BLE001
            rows.append(_row("gfx950 code object build", MISSING, f"{type(e).__name__}: {e}"[:500]))
    if not on_gfx950:
        rows.append(_row("code object loads (hipModuleLoadData)", NA, "not on a gfx950 GPU"))
        return rows
    try:
        from .kernels.hip.launcher import MLA_KERNELS, HipDriver, ModuleLauncher

        co = HB.code_object_for("b64w4_iglp")
        ModuleLauncher(co.read_bytes(), MLA_KERNELS, HipDriver())
        rows.append(_row("code object loads (hipModuleLoadData)", OK, f"{co.name}: both kernels found"))
    except Exception as e:  # noqa: BLE001
        rows.append(_row("code object loads (hipModuleLoadData)", MISSING, f"{type(e).__name__}: {e}"))
    return rows


def _cuda_rows() -> list[dict]:
    if not torch.cuda.is_available() or torch.version.hip:
        return [_row("CUDA twin launcher", NA, "no NVIDIA GPU")]
    try:
        from .kernels.hip import build as HB
        from .kernels.hip.launcher import TWIN_KERNELS, CudaDriver, ModuleLauncher

        launcher = ModuleLauncher(HB.TWIN_PTX.read_bytes(), TWIN_KERNELS, CudaDriver())
        x = torch.arange(256, dtype=torch.float32, device="cuda")[None]
        y = torch.empty_like(x)
        launcher.launch("twin_affine", (1,), (256,), x, 256, y, 2.0, 1.0)
        torch.cuda.synchronize()
        ok = torch.equal(y, 2 * x + 1)
        return [_row("CUDA twin launcher", OK if ok else MISSING,
                     f"PTX loaded by cuModuleLoadData from {launcher.driver.path}; result {'correct' if ok else 'WRONG'}")]
    except Exception as e:  # noqa: BLE001
        return [_row("CUDA twin launcher", MISSING, f"{type(e).__name__}: {e}")]


def diagnose(build: bool = False) -> list[dict]:
    """Every check, in order (see the module doc)."""
    from .bench.cli import backend_table

    rows = [_row("python", OK, platform.python_version()),
            _row("torch", OK, f"{torch.__version__} (CUDA {torch.version.cuda}, HIP {getattr(torch.version, 'hip', None)})")]
    if torch.cuda.is_available():
        rows.append(_row("GPU", OK, torch.cuda.get_device_name(0)))
    else:
        rows.append(_row("GPU", NA, "none visible: CPU backends and the Triton interpreter only"))
    rows += _triton_rows()
    rows += _rocm_rows(build)
    rows += _cuda_rows()
    for b in backend_table():  # what `info` says: triton on a CPU runs under the interpreter, on or off now
        usable = b["status"] in ("yes", "interpreter", "interpreter only")
        interp = {"interpreter": " (here: under Triton's interpreter)",
                  "interpreter only": " (here: under Triton's interpreter, which is off: set TRITON_INTERPRET=1; "
                                      "smoke --backend triton sets it itself)"}.get(b["status"], "")
        rows.append(_row(f"backend {b['name']}", OK if usable else MISSING,
                         b["description"] + interp if usable else b["reason"]))
    return rows


def render(rows: list[dict]) -> str:
    width = max(len(r["check"]) for r in rows)
    return "\n".join(f"{r['check']:<{width}}  {r['status']:<7}  {r['detail']}" for r in rows)


def _cmd(args) -> int:
    rows = diagnose(build=args.build)
    print(json.dumps(rows, indent=1) if args.json else render(rows))
    return 0


def register(sub) -> None:
    ap = sub.add_parser("doctor", help="what this machine can run and, if not, the missing piece",
                        description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="store_true", help="also compile a gfx950 code object (needs clang + lld)")
    ap.add_argument("--json", action="store_true", help="the rows as JSON (check, status, detail)")
    ap.set_defaults(func=_cmd)


__all__ = ["diagnose", "render"]
