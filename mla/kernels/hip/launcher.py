"""Launch clang-built code objects through the driver's module API, from Python, via ctypes.

No compiler and no extension build at run time: a code object (gfx950 ELF, or PTX on NVIDIA) is
loaded with ``hipModuleLoadData`` / ``cuModuleLoadData`` and its kernels are launched with
``hipModuleLaunchKernel`` / ``cuLaunchKernel`` on torch's current stream (so the launches order
with torch's own work, and are captured by CUDA/HIP graphs), every return code checked.

Arguments are packed into one buffer from an argument table (:class:`Arg`), passed through the
launch's ``extra`` (``*_LAUNCH_PARAM_BUFFER_POINTER``) parameter. The offsets follow the C ABI
(each argument aligned to its size); ``tests/test_hip_codeobject.py`` checks them against the
kernel-argument metadata clang wrote into the gfx950 code object.

Two drivers with one interface:
  HipDriver   the ``libamdhip64`` that the ROCm torch already loaded (found in /proc/self/maps,
              so ctypes gets the same library, not a second copy)
  CudaDriver  ``libcuda`` (the CUDA twin: same launcher class, PTX built by clang; run on the H200)
NOT RUN ON ROCm HERE (no AMD GPU in this project); the CUDA twin runs on the H200.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

ARG_KINDS = {"ptr": ("Q", 8), "i32": ("i", 4), "u32": ("I", 4), "f32": ("f", 4)}


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # "ptr" | "i32" | "u32" | "f32"

    def __post_init__(self):
        if self.kind not in ARG_KINDS:
            raise ValueError(f"argument {self.name!r}: kind must be one of {sorted(ARG_KINDS)}, got {self.kind!r}")

    @property
    def size(self) -> int:
        return ARG_KINDS[self.kind][1]


def layout(args: tuple[Arg, ...]) -> tuple[list[int], int]:
    """(offset of each argument, total size): C ABI, each argument aligned to its own size, the
    total rounded to the largest alignment (what clang writes as kernarg offsets)."""
    offsets, off, align = [], 0, 1
    for a in args:
        off = (off + a.size - 1) // a.size * a.size
        offsets.append(off)
        off += a.size
        align = max(align, a.size)
    return offsets, off


# The gfx950 kernels of mla_mxfp4_decode.hip, argument by argument (the C signatures).
MLA_KERNELS: dict[str, tuple[Arg, ...]] = {
    "mla_mxfp4_partial": (
        Arg("q", "ptr"), Arg("kv_nib", "ptr"), Arg("kv_scale", "ptr"), Arg("qo_indptr", "ptr"),
        Arg("kv_indptr", "ptr"), Arg("part_o", "ptr"), Arg("part_lse", "ptr"), Arg("total_q", "i32"),
        Arg("num_splits", "i32"), Arg("nib_stride", "i32"), Arg("scale_stride", "i32"),
        Arg("qk_scale_log2", "f32")),
    "mla_lse_reduce": (
        Arg("part_o", "ptr"), Arg("part_lse", "ptr"), Arg("out", "ptr"), Arg("total_q", "i32"),
        Arg("num_splits", "i32")),
}
# The CUDA twin's test kernel (twin_affine.cu): a pointer after an int, so the table must pad.
TWIN_KERNELS: dict[str, tuple[Arg, ...]] = {
    "twin_affine": (Arg("x", "ptr"), Arg("n", "i32"), Arg("y", "ptr"), Arg("a", "f32"), Arg("b", "f32")),
}


class LaunchError(RuntimeError):
    """A driver call returned an error; the message names the call and the driver's error name."""


class ArgBuffer:
    """One kernel's packed argument bytes. ``pack`` rewrites it in place (the pointer the launch
    passes stays the same), so a caller may keep one per kernel and skip re-allocating."""

    def __init__(self, args: tuple[Arg, ...]):
        self.args = args
        self.offsets, self.size = layout(args)
        self.buf = ctypes.create_string_buffer(max(self.size, 1))
        self._size = ctypes.c_size_t(self.size)
        # one struct for the whole table (explicit pad bytes): one pack_into per launch
        fmt, pos = "<", 0
        for a, off in zip(args, self.offsets):
            fmt += "x" * (off - pos) + ARG_KINDS[a.kind][0]
            pos = off + a.size
        self._struct = struct.Struct(fmt)
        assert self._struct.size == self.size

    def pack(self, values) -> "ArgBuffer":
        if len(values) != len(self.args):
            raise ValueError(f"expected {len(self.args)} arguments ({[a.name for a in self.args]}), got {len(values)}")
        out = []
        for a, v in zip(self.args, values):
            if a.kind == "ptr":
                if isinstance(v, torch.Tensor):
                    v = v.data_ptr()
                elif not isinstance(v, int) or isinstance(v, bool):
                    raise ValueError(f"argument {a.name!r} is a pointer: pass a tensor or an int address, got "
                                     f"{type(v).__name__}")
            elif a.kind in ("i32", "u32"):
                if not isinstance(v, int) or isinstance(v, bool):
                    raise ValueError(f"argument {a.name!r} is {a.kind}: got {v!r}")
                lo, hi = (-(1 << 31), (1 << 31) - 1) if a.kind == "i32" else (0, (1 << 32) - 1)
                if not lo <= v <= hi:
                    raise ValueError(f"argument {a.name!r}={v} does not fit {a.kind}")
            else:
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise ValueError(f"argument {a.name!r} is f32: got {v!r}")
                v = float(v)
            out.append(v)
        self._struct.pack_into(self.buf, 0, *out)
        return self

    def raw(self) -> bytes:
        return self.buf.raw[: self.size]


def _loaded_library(fragment: str) -> str | None:
    """Path of an already-mapped shared library whose file name contains ``fragment``."""
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 6 and fragment in Path(parts[-1]).name:
                return parts[-1]
    except OSError:
        return None
    return None


class _Driver:
    """ctypes over one GPU driver API. Subclasses name the library and the calls."""

    name = ""
    END_MARKER = 0

    def check(self, rc: int, call: str) -> None:
        if rc != 0:
            raise LaunchError(f"{call} failed: {self.error_name(rc)} ({rc})")

    def error_name(self, rc: int) -> str:  # pragma: no cover - per driver
        raise NotImplementedError

    def extra(self, args: ArgBuffer):
        """The ``extra`` array: BUFFER_POINTER, &buf, BUFFER_SIZE, &size, END."""
        arr = (ctypes.c_void_p * 5)(1, ctypes.addressof(args.buf), 2, ctypes.addressof(args._size),
                                    self.END_MARKER)
        return arr


class HipDriver(_Driver):
    name = "hip"
    END_MARKER = 3  # HIP_LAUNCH_PARAM_END

    def __init__(self):
        if getattr(torch.version, "hip", None) is None:
            raise LaunchError("HipDriver needs a ROCm (HIP) build of torch")
        torch.cuda.init()
        path = _loaded_library("libamdhip64")
        if path is None:
            raise LaunchError("torch has not loaded libamdhip64 (not found in /proc/self/maps)")
        self.path = path
        lib = self.lib = ctypes.CDLL(path)  # already mapped: dlopen returns the same library
        vp, u = ctypes.c_void_p, ctypes.c_uint
        lib.hipModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        lib.hipModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        lib.hipModuleLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        lib.hipModuleUnload.argtypes = [vp]
        lib.hipGetErrorName.argtypes = [ctypes.c_int]
        lib.hipGetErrorName.restype = ctypes.c_char_p
        for fn in ("hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel", "hipModuleUnload"):
            getattr(lib, fn).restype = ctypes.c_int

    def error_name(self, rc):
        return (self.lib.hipGetErrorName(rc) or b"?").decode()

    def load(self, image: bytes):
        mod = ctypes.c_void_p()
        self.check(self.lib.hipModuleLoadData(ctypes.byref(mod), image), "hipModuleLoadData")
        return mod

    def function(self, module, name: str):
        fn = ctypes.c_void_p()
        self.check(self.lib.hipModuleGetFunction(ctypes.byref(fn), module, name.encode()),
                   f"hipModuleGetFunction({name!r})")
        return fn

    def launch(self, fn, grid, block, shared, stream, extra):
        self.check(self.lib.hipModuleLaunchKernel(fn, *grid, *block, shared, stream, None, extra),
                   "hipModuleLaunchKernel")

    def unload(self, module):
        self.check(self.lib.hipModuleUnload(module), "hipModuleUnload")


class CudaDriver(_Driver):
    name = "cuda"
    END_MARKER = 0  # CU_LAUNCH_PARAM_END

    def __init__(self, device=None):
        if not torch.cuda.is_available() or getattr(torch.version, "hip", None) is not None:
            raise LaunchError("CudaDriver needs an NVIDIA GPU and a CUDA build of torch")
        torch.cuda.init()
        path = _loaded_library("libcuda.so") or "libcuda.so.1"
        self.path = path
        lib = self.lib = ctypes.CDLL(path)
        vp, u = ctypes.c_void_p, ctypes.c_uint
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        lib.cuLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, ctypes.POINTER(vp), ctypes.POINTER(vp)]
        lib.cuModuleUnload.argtypes = [vp]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(vp)]
        for fn in ("cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuModuleUnload",
                   "cuGetErrorName", "cuCtxGetCurrent"):
            getattr(lib, fn).restype = ctypes.c_int
        # torch's runtime made the device's primary context current on this thread; the driver
        # API uses the same one (a module loads into the current context)
        dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
        torch.empty(1, device=dev)
        ctx = ctypes.c_void_p()
        self.check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise LaunchError("no current CUDA context after torch initialised the device")

    def error_name(self, rc):
        s = ctypes.c_char_p()
        if self.lib.cuGetErrorName(rc, ctypes.byref(s)) != 0 or not s.value:
            return "?"
        return s.value.decode()

    def load(self, image: bytes):
        if not image.endswith(b"\0"):
            image = image + b"\0"  # PTX is read as a NUL-terminated string
        mod = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
        return mod

    def function(self, module, name: str):
        fn = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()),
                   f"cuModuleGetFunction({name!r})")
        return fn

    def launch(self, fn, grid, block, shared, stream, extra):
        self.check(self.lib.cuLaunchKernel(fn, *grid, *block, shared, stream, None, extra), "cuLaunchKernel")

    def unload(self, module):
        self.check(self.lib.cuModuleUnload(module), "cuModuleUnload")


def default_driver() -> _Driver:
    return HipDriver() if getattr(torch.version, "hip", None) is not None else CudaDriver()


class ModuleLauncher:
    """One loaded module and its kernels' argument tables.

        launcher = ModuleLauncher(image, MLA_KERNELS)          # driver: HIP on ROCm, CUDA otherwise
        launcher.launch("mla_lse_reduce", grid, (128, 1, 1), part_o, part_lse, out, total_q, splits)

    ``launch`` packs the arguments into the kernel's :class:`ArgBuffer` and launches on torch's
    current stream (or ``stream``). ``prepared(name, ...)`` returns a packed buffer to pass as
    ``args=`` for launches whose arguments do not change (no packing per call)."""

    def __init__(self, image: bytes, kernels: dict[str, tuple[Arg, ...]], driver: _Driver | None = None):
        self.driver = driver or default_driver()
        self.kernels = dict(kernels)
        self.module = self.driver.load(bytes(image))
        self.functions = {name: self.driver.function(self.module, name) for name in self.kernels}
        self._buffers = {name: ArgBuffer(args) for name, args in self.kernels.items()}

    def prepared(self, name: str, *values) -> tuple[ArgBuffer, object]:
        buf = ArgBuffer(self.kernels[name]).pack(values)
        return buf, self.driver.extra(buf)

    def launch(self, name: str, grid, block, *values, shared: int = 0, stream=None, args=None) -> None:
        if name not in self.functions:
            raise ValueError(f"unknown kernel {name!r}; this module has {sorted(self.functions)}")
        grid, block = _dims(grid, "grid"), _dims(block, "block")
        if args is None:
            buf = self._buffers[name].pack(values)
            extra = self.driver.extra(buf)
        else:
            extra = args[1]
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        elif isinstance(stream, torch.cuda.Stream):
            stream = stream.cuda_stream
        self.driver.launch(self.functions[name], grid, block, int(shared), ctypes.c_void_p(stream), extra)


def _dims(d, what: str) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(d) <= 3 or any(not isinstance(x, int) or x < 1 for x in d):
        raise ValueError(f"{what} must be 1 to 3 positive ints, got {d!r}")
    return d + (1,) * (3 - len(d))


__all__ = ["Arg", "ArgBuffer", "CudaDriver", "HipDriver", "LaunchError", "MLA_KERNELS", "ModuleLauncher",
           "TWIN_KERNELS", "default_driver", "layout"]
