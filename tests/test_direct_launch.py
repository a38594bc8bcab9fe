"""The direct launch (mla/kernels/triton/direct.py): the compiled binary reused per specialization of the
arguments, the JIT's dispatch only on a new one. CPU: the specialization key, the parameter tail and the
reuse rule on a stand-in kernel; GPU: the same outputs as the JIT path for every generation's default, and a
new binary (not a reused one) for a misaligned input."""
from __future__ import annotations

import pytest
import torch

import mla
from mla.kernels.triton import TritonDecodePlan
from mla.kernels.triton import direct
from mla.kernels.triton.direct import DirectLaunch, specialization_key


def test_key_separates_what_triton_specializes_on():
    a = torch.zeros(64, dtype=torch.bfloat16)
    assert specialization_key((a, 16, 1.5, None)) == specialization_key((torch.ones(64, dtype=torch.bfloat16), 16,
                                                                            2.5, None))
    assert specialization_key((a,)) != specialization_key((a[1:],))  # 2-byte offset: not 16-byte aligned
    assert specialization_key((a,)) != specialization_key((a.float(),))  # dtype
    assert specialization_key((16,)) != specialization_key((1,)) != specialization_key((17,))  # ints: exact value
    assert specialization_key((True,)) != specialization_key((1,))
    with pytest.raises(direct._Unknown):
        specialization_key(([1, 2],))


class _Binary:
    """Stands in for triton's CompiledKernel: records the launcher's arguments."""

    def __init__(self):
        self.function, self.packed_metadata, self.calls = object(), object(), []

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, g0, g1, g2, stream, function, meta, launch_meta, enter, exit_, *args):
        self.calls.append(((g0, g1, g2), stream, args))


class _Kernel:
    """Stands in for a JITFunction: ``kernel[grid](*args, **kw)`` compiles (counted) and returns the binary."""

    def __init__(self):
        def fn(x, n, BLOCK, FLAG=False):
            pass
        self.fn, self.compiles, self.binaries = fn, [], []

    def __getitem__(self, grid):
        def call(*args, **kw):
            self.compiles.append((grid, args, kw))
            b = _Binary()
            self.binaries.append(b)
            return b
        return call


@pytest.fixture
def no_cuda_stream(monkeypatch):
    monkeypatch.setattr(direct, "_raw_stream", lambda device: 7)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


def test_second_call_reuses_the_binary_with_the_constexpr_tail(no_cuda_stream):
    k = _Kernel()
    launch = DirectLaunch(k, (4, 2), dict(BLOCK=64, num_warps=4))
    x = torch.zeros(32)
    launch(x, 5)
    launch(x, 5)
    assert len(k.compiles) == 1 and k.compiles[0][0] == (4, 2, 1) and k.compiles[0][2] == dict(BLOCK=64, num_warps=4)
    (grid, stream, args), = k.binaries[0].calls
    # the launcher gets every parameter in signature order: the call's, then BLOCK, then FLAG's default
    assert grid == (4, 2, 1) and stream == 7 and args[1:] == (5, 64, False) and args[0] is x
    assert (launch.jit_calls, launch.direct_calls) == (1, 1)


def test_a_new_specialization_goes_through_the_jit(no_cuda_stream):
    k = _Kernel()
    launch = DirectLaunch(k, (1,), dict(BLOCK=64))
    x = torch.zeros(32)
    launch(x, 5)
    launch(x, 6)  # another int value: a new key
    launch(x[1:], 5)  # misaligned: a new key
    launch([1], 5)  # an argument type the key does not model: the JIT every time
    launch([1], 5)
    assert len(k.compiles) == 5 and launch.direct_calls == 0
    launch(x, 6)
    assert launch.direct_calls == 1 and len(k.binaries[1].calls) == 1


def test_another_device_gets_its_own_binary(no_cuda_stream, monkeypatch):
    k = _Kernel()
    launch = DirectLaunch(k, (1,), dict(BLOCK=64))
    x = torch.zeros(32)
    launch(x, 5)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)  # a binary is loaded per device
    launch(x, 5)
    assert len(k.compiles) == 2 and launch.direct_calls == 0
    launch(x, 5)
    assert launch.direct_calls == 1 and len(k.binaries[1].calls) == 1


def test_a_kernel_without_binaries_stays_on_the_jit_path(no_cuda_stream):
    class Interpreted(_Kernel):  # TRITON_INTERPRET=1: the call returns no compiled binary
        def __getitem__(self, grid):
            def call(*args, **kw):
                self.compiles.append(args)
            return call
    k = Interpreted()
    launch = DirectLaunch(k, (1,), dict(BLOCK=64))
    for _ in range(3):
        launch(torch.zeros(4), 1)
    assert len(k.compiles) == 3 and launch.direct_calls == 0


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@gpu
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
@pytest.mark.parametrize("shape", [(4, 1024), (64, 8192), (3, 333)])
def test_gpu_direct_launch_matches_the_jit_path(kv_format, shape):
    bs, kv = shape
    data = mla.generate_input(bs, 1, kv, seed=21, device="cuda")
    plan = TritonDecodePlan(data, kv_format=kv_format, graph=False)
    plan.out.fill_(float("nan"))
    first = plan.run(data).clone()  # the JIT path (a new specialization)
    plan.out.fill_(float("nan"))
    again = plan.run(data)  # the direct path
    torch.cuda.synchronize()
    assert plan.direct.direct_calls >= 1
    assert torch.equal(first, again)
    ok, msg = mla.check(data, again, reference_output=mla.reference(data, kv_format=kv_format))
    assert ok, msg
    fresh = mla.generate_input(bs, 1, kv, seed=22, device="cuda")  # new tensors, same plan: direct again
    plan.out.fill_(float("nan"))
    out = plan.run(fresh)
    torch.cuda.synchronize()
    assert plan.direct.direct_calls >= 2
    ok, msg = mla.check(fresh, out, reference_output=mla.reference(fresh, kv_format=kv_format))
    assert ok, msg


@gpu
def test_gpu_misaligned_query_gets_its_own_binary():
    data = mla.generate_input(4, 1, 1024, seed=23, device="cuda")
    plan = TritonDecodePlan(data, kv_format="bf16", graph=False)
    plan.run(data)
    q = data[0]
    buf = torch.empty(q.numel() + 1, dtype=q.dtype, device="cuda")[1:].view_as(q)  # 2-byte offset
    buf.copy_(q)
    shifted = (buf, *data[1:])
    jit_before = plan.direct.jit_calls
    plan.out.fill_(float("nan"))
    out = plan.run(shifted)
    torch.cuda.synchronize()
    assert plan.direct.jit_calls == jit_before + 1
    ok, msg = mla.check(shifted, out, reference_output=mla.reference(shifted, kv_format="bf16"))
    assert ok, msg


@gpu
@pytest.mark.parametrize("variant", ["v133_n64_w4_s2_gl_mx_ws4_tma", "v143_n64_w4_s2_gl_mx_ws4_tma_ldsm_ed"])
def test_gpu_ws_kernel_on_new_cache_addresses_reuses_descriptor_fields(variant):
    """The warp-specialized MXFP4 kernel's TMA descriptors for a new cache tensor are copies re-based on it
    (gluon_sm90.ws_tma_descriptors): every new address set must read its own cache, alternating as eval.py's
    A B A B, with the plain launch (graph=False) on the direct path."""
    from mla.kernels.triton import gluon_sm90

    from triton.backends.nvidia import driver as nvidia_driver

    sets = [mla.generate_input(2, 1, 4096, seed=40 + 13 * i, device="cuda") for i in range(3)]
    plan = TritonDecodePlan(sets[0], kv_format="mxfp4", variant=variant, graph=False)
    memo = nvidia_driver.make_tensordesc_arg
    assert getattr(memo, "mla_memoized", False)  # (direct.install_tensordesc_encode_cache)
    plan.run(sets[0])
    encodes = memo.encodes
    for d in sets + sets[:2]:
        plan.out.fill_(float("nan"))
        out = plan.run(d)
        torch.cuda.synchronize()
        lat, _ = plan._tma
        assert lat.base is d[1]["mxfp4"][0]
        ok, msg = mla.check(d, out, reference_output=mla.reference(d, kv_format="mxfp4"))
        assert ok, msg
    assert plan.direct.direct_calls >= 4
    assert memo.encodes - encodes <= 4  # at most two maps for each of the two new addresses, none for repeats
    assert (sets[0][1]["mxfp4"][0].shape[0], sets[0][1]["mxfp4"][0].stride(0)) in gluon_sm90._WS_TMA_FIELDS


def test_ws_descriptors_are_rebased_copies_that_hold_no_earlier_cache():
    """ws_tma_descriptors keeps per-(rows, stride) fields, never a tensor: the first cache can be freed, a new
    one gets descriptors equal to the checked constructor's but for the base; a misaligned cache is refused."""
    import gc
    import weakref

    gluon_sm90 = pytest.importorskip("mla.kernels.triton.gluon_sm90")
    hopper = pytest.importorskip("triton.experimental.gluon.nvidia.hopper")
    first = torch.zeros(100, 304, dtype=torch.uint8)
    gluon_sm90.ws_tma_descriptors(first, 304)
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None  # the field cache holds no tensor
    second = torch.zeros(100, 304, dtype=torch.uint8)
    got = gluon_sm90.ws_tma_descriptors(second, 304)
    for w, d in zip(("lat", "rope"), got):
        want = hopper.TensorDescriptor(second, [100, 288], [304, 1], gluon_sm90.WS_TMA_BLOCKS[w],
                                       gluon_sm90.ws_tma_layout(w))
        assert d.base is second and vars(d).keys() == vars(want).keys()
        assert all(vars(d)[k] == vars(want)[k] for k in vars(want) if k != "base")
    got[0].shape[0] = -1  # the copies do not share the kept lists
    assert gluon_sm90.ws_tma_descriptors(second, 304)[0].shape[0] == 100
    with pytest.raises(ValueError, match="16-byte"):
        gluon_sm90.ws_tma_descriptors(torch.zeros(100 * 304 + 1, dtype=torch.uint8)[1:].view(100, 304), 304)


def test_tma_encode_memo_is_exact_per_address_and_fields():
    """direct.memoized_tensordesc_arg: one encode per (metadata, address, dtype, shape, strides, padding); a new
    address, shape or metadata encodes again; entries beyond the cache size are dropped; untiled or metadata-
    less descriptors are never memoized; callers get their own lists."""
    from types import SimpleNamespace

    calls = []

    def encode(arg, metadata, *rest):
        calls.append((arg.base.data_ptr(), tuple(arg.shape), metadata["swizzle"] if metadata else None))
        return [("map", arg.base.data_ptr(), tuple(arg.shape)), *arg.shape, *arg.strides]

    memo = direct.memoized_tensordesc_arg(encode, size=2)
    a, b = torch.zeros(64, 288, dtype=torch.uint8), torch.zeros(64, 288, dtype=torch.uint8)
    meta, other = {"swizzle": 128}, {"swizzle": 64}

    def desc(t, shape=(64, 288), mode="tiled"):
        return SimpleNamespace(base=t, shape=list(shape), strides=[288, 1], padding="zero", mode=mode,
                               round_f32_to_tf32=False)

    first = memo(desc(a), meta)
    again = memo(desc(a), meta, "ignored")
    assert first == again and first is not again and len(calls) == 1
    again.append("x")
    assert memo(desc(a), meta) == first  # the kept value is not the caller's list
    memo(desc(b), meta)
    memo(desc(a, (32, 288)), meta)
    memo(desc(a), other)
    assert len(calls) == 4 and memo.encodes == 4 and len(memo.cache) == 2
    memo(desc(b), meta)  # dropped by the size-2 cache: encoded again
    assert len(calls) == 5
    memo(desc(a, mode="im2col"), meta)
    memo(desc(a, mode="im2col"), meta)
    memo(desc(a), None)
    assert len(calls) == 8


def test_tma_encode_memo_installs_once_and_can_be_turned_off():
    import subprocess
    import sys

    code = ("import mla.kernels.triton.launch as L; from mla.kernels.triton import direct; "
            "from triton.backends.nvidia import driver as d; "
            "print(L.TMA_ENCODE_CACHED, getattr(d.make_tensordesc_arg, 'mla_memoized', False), "
            "direct.install_tensordesc_encode_cache())")
    env = {k: v for k, v in __import__("os").environ.items() if k != "MLA_TMA_ENCODE_CACHE"}
    on = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert on.stdout.split() == ["True", "True", "True"]
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(env, MLA_TMA_ENCODE_CACHE="0"))
    assert off.stdout.split() == ["False", "False", "False"]
