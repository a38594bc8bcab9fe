"""triton 3.6 (H200 image) Gluon miscompile, kept as evidence: an fp8 value converted back to fp32 before
it is stored to shared memory gives a wrong residual (lo max diff 568 on the H200, 2026-12-01);
storing it first (ORDER 1) is right. Run: python3 scripts/probes/gluon36_fp8_roundtrip.py"""
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

@gluon.jit
def qk(q_ptr, hi_ptr, lo_ptr, ORDER: gl.constexpr, num_warps: gl.constexpr):
    blk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    sl: gl.constexpr = gl.NVMMASharedLayout.get_default_for([16, 64], gl.float8e4nv)
    r = gl.arange(0, 16, layout=gl.SliceLayout(1, blk)); c = gl.arange(0, 64, layout=gl.SliceLayout(0, blk))
    off = r[:, None] * 64 + c[None, :]
    n = gl.load(q_ptr + off)
    hs = gl.allocate_shared_memory(gl.float8e4nv, [16, 64], sl)
    ls = gl.allocate_shared_memory(gl.float8e4nv, [16, 64], sl)
    hi = n.to(gl.float8e4nv)
    if ORDER == 0:
        lo = ((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv)
        hs.store(hi); ls.store(lo)
    elif ORDER == 1:
        hs.store(hi); ls.store(((n - hi.to(gl.float32)) * 16.0).to(gl.float8e4nv))
    else:
        lo = ((n - hi.to(gl.float16).to(gl.float32)) * 16.0).to(gl.float8e4nv)
        hs.store(hi); ls.store(lo)
    gl.store(hi_ptr + off, hs.load(blk).to(gl.float32))
    gl.store(lo_ptr + off, ls.load(blk).to(gl.float32))

q = torch.randn(16, 64, device="cuda") * 100
q = q.clamp(-440, 440)
hr = q.to(torch.float8_e4m3fn).float(); lr = ((q - hr) * 16).to(torch.float8_e4m3fn).float()
for order in range(3):
    h = torch.empty_like(q); l = torch.empty_like(q)
    qk[(1,)](q, h, l, order, num_warps=4); torch.cuda.synchronize()
    print("order", order, "hi ok", torch.equal(h, hr), "lo ok", torch.equal(l, lr),
          "hi max diff", (h - hr).abs().max().item(), "lo max diff", (l - lr).abs().max().item(),
          "hi vs pair-swapped", torch.equal(h, hr.view(16, 32, 2).flip(-1).reshape(16, 64)))
