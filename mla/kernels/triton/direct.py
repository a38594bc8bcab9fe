"""A compiled Triton / Gluon kernel launched without the JIT's per-call dispatch.

``kernel[grid](*args, **constexprs)`` binds every argument, builds the specialization key, looks the
binary up and checks the kernel's globals on every call. On the H200's host that dispatch is most of
a plain launch (docs/notes-harness.md, "The direct launch"), and plain launches are what the call
pays whenever its inputs are new (the leaderboard's harness makes them fresh every call, so no CUDA
graph applies). :class:`DirectLaunch` keeps the binary the JIT returned for each *specialization*
of the arguments and calls its launcher straight away:

    launch = DirectLaunch(kernel, grid, constexprs)
    launch(*args)          # the first call per specialization goes through kernel[grid](...)

The specialization is recomputed here from the arguments, finer than Triton's own (so it can only
miss, never reuse a binary built for other arguments): a tensor's dtype and whether its address is
16-byte aligned, an int's exact value, a float's or bool's type, None, a TMA descriptor's dtype, block
shape, shape and strides; and the current device (a binary is loaded per device). Anything else (an argument type this does not know) takes the JIT path every call.
Under ``TRITON_INTERPRET=1`` (no compiled binary) every call is the JIT path.
"""

from __future__ import annotations

import inspect
import os
from collections import OrderedDict

import torch

try:  # triton >= 3.4 (the H200's 3.6 and CI's 3.9 both have it)
    from triton import knobs as _knobs
except ImportError:  # pragma: no cover - an older triton: the JIT path only
    _knobs = None


def _raw_stream(device: int) -> int:
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what triton's driver calls
    return get(device) if get is not None else torch.cuda.current_stream(device).cuda_stream


class _Unknown(Exception):
    """An argument whose specialization this module does not model."""


def _spec(a):
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.data_ptr() % 16 == 0)
    if a is None:
        return None
    t = type(a)
    if t is bool:
        return ("b", a)
    if t is int:
        return ("i", a)
    if t is float:
        return "f"
    block = getattr(a, "block_shape", None)
    base = getattr(a, "base", None)
    if block is not None and isinstance(base, torch.Tensor):  # a host TMA descriptor (Triton's / Gluon's)
        return (t.__name__, base.dtype, tuple(block), tuple(a.shape), tuple(a.strides))
    raise _Unknown(t.__name__)


def specialization_key(args) -> tuple:
    """The key a compiled binary is reused under (see the module docstring); raises _Unknown."""
    return tuple(_spec(a) for a in args)


class DirectLaunch:
    """``kernel[grid](*args, **constexprs)`` with the compiled binary reused per specialization."""

    def __init__(self, kernel, grid, constexprs: dict):
        self.kernel, self.constexprs = kernel, dict(constexprs)
        g = tuple(grid) + (1,) * (3 - len(grid))
        self.grid = g
        self._binaries: dict[tuple, object] = {}
        self._tail: tuple | None = None  # the constexpr parameters' values, in signature order
        self._n_args: int | None = None
        self.direct_calls = 0
        self.jit_calls = 0

    def _signature_tail(self, n_args: int) -> tuple:
        """Values of the parameters after the first n_args, as the JIT's binder passes them on: the
        constexprs given, else the parameter's default."""
        fn = getattr(self.kernel, "fn", None)
        params = list(inspect.signature(fn).parameters.values())[n_args:] if fn is not None else []
        # (keys of constexprs that are not parameters are compile options, num_warps, maxnreg, ...: fixed here)
        missing = [p.name for p in params if p.name not in self.constexprs and p.default is inspect.Parameter.empty]
        if fn is None or missing:
            raise _Unknown(f"parameters without a value: {missing}")
        return tuple(self.constexprs.get(p.name, p.default) for p in params)

    def _jit(self, args, key):
        self.jit_calls += 1
        binary = self.kernel[self.grid](*args, **self.constexprs)
        if key is not None and hasattr(binary, "run") and hasattr(binary, "packed_metadata") and _knobs is not None:
            try:
                if self._tail is None:
                    self._tail, self._n_args = self._signature_tail(len(args)), len(args)
                self._binaries[(torch.cuda.current_device(), key)] = binary
            except _Unknown:
                pass
        return binary

    def __call__(self, *args):
        try:
            key = specialization_key(args)
        except _Unknown:
            key = None
        if key is None or not self._binaries or len(args) != self._n_args:
            return self._jit(args, key)
        device = torch.cuda.current_device()
        binary = self._binaries.get((device, key))
        if binary is None:
            return self._jit(args, key)
        self.direct_calls += 1
        full = args + self._tail
        stream = _raw_stream(device)  # the stream the JIT would take (capture included)
        rt = _knobs.runtime
        g = self.grid
        binary.run(g[0], g[1], g[2], stream, binary.function, binary.packed_metadata,
                   binary.launch_metadata(g, stream, *full), rt.launch_enter_hook, rt.launch_exit_hook, *full)
        return binary


# -- the host TMA descriptors' encoding, memoized ----------------------------------------------------------
# Triton's launcher turns every host TensorDescriptor argument into a CUtensorMap on every launch
# (make_tensordesc_arg -> cuTensorMapEncodeTiled). The map depends only on the base address, dtype, shape,
# strides, padding and the kernel's block / swizzle metadata, never on the tensor object, so the same map
# for the same fields is exact, whichever tensor now lives at that address. In eval.py's order (fresh inputs,
# the L2 flush not awaited) each driver call of a launch cost tens of us of host time on the H200 (gap probe
# 5), and the warp-specialized MXFP4 kernel encodes two maps a launch.
TMA_ENCODE_CACHE_SIZE = 16


def memoized_tensordesc_arg(encode, size: int = TMA_ENCODE_CACHE_SIZE):
    """``encode`` (Triton's make_tensordesc_arg: (arg, metadata[, ignored])) with its result kept for the last
    ``size`` distinct (metadata, address, dtype, shape, strides, padding, tf32) keys. Tiled descriptors over
    tensors only; anything else (no metadata, im2col, another base type) is encoded every call."""
    cache: OrderedDict = OrderedDict()

    def wrapped(arg, metadata, *rest):
        base = getattr(arg, "base", None)
        if (metadata is None or not isinstance(base, torch.Tensor) or getattr(arg, "mode", "tiled") != "tiled"
                or (isinstance(metadata, dict) and metadata.get("is_im2col"))):
            return encode(arg, metadata, *rest)
        key = (id(metadata), base.data_ptr(), base.dtype, tuple(arg.shape), tuple(arg.strides),
               getattr(arg, "padding", None), bool(getattr(arg, "round_f32_to_tf32", False)))
        hit = cache.get(key)
        if hit is not None and hit[0] is metadata:
            cache.move_to_end(key)
            return list(hit[1])
        out = encode(arg, metadata, *rest)
        cache[key] = (metadata, list(out))  # (metadata held: its id stays unique while the entry lives)
        if len(cache) > size:
            cache.popitem(last=False)
        wrapped.encodes += 1
        return out

    wrapped.encodes = 0
    wrapped.cache = cache
    wrapped.mla_memoized = True
    return wrapped


def install_tensordesc_encode_cache() -> bool:
    """Put memoized_tensordesc_arg in place of the NVIDIA driver's make_tensordesc_arg (before launchers are
    built: triton 3.9 binds it then, 3.6 looks it up per launch). ``MLA_TMA_ENCODE_CACHE=0`` leaves Triton as it
    is. True when the memo is in place."""
    if os.environ.get("MLA_TMA_ENCODE_CACHE", "1") == "0":
        return False
    try:
        from triton.backends.nvidia import driver as nvidia_driver
    except Exception:  # pragma: no cover - a triton without the NVIDIA backend
        return False
    encode = getattr(nvidia_driver, "make_tensordesc_arg", None)
    if encode is None:
        return False
    if getattr(encode, "mla_memoized", False):
        return True
    params = list(inspect.signature(encode).parameters)
    if params[:2] != ["arg", "metadata"] or any(p != "_" for p in params[2:]):  # only a signature we know
        return False
    nvidia_driver.make_tensordesc_arg = memoized_tensordesc_arg(encode)
    return True
