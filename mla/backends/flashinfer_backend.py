"""flashinfer: FlashInfer's ``BatchMLAPagedAttentionWrapper`` (page size 1) on CUDA sm90.

plan: a 128 MiB float workspace, the wrapper, ``wrapper.plan(...)`` (host scheduling and, on first
use per dtype, the JIT build of the MLA module: ~20 s on the H200), kv_indices = arange(total_kv),
an output buffer. run, two call forms, picked once per plan from the wrapper's signatures:

- structural (FlashInfer >= 0.7.2, which deprecates the others): ``plan(metadata=MLAPlanMetadata.csr(...),
  ..., query_layout="packed", kv_cache_layout="packed")`` by keyword, and ``run(query=q, kv_cache=kv,
  out=...)`` on the call's own packed [T, H, 576] q and [N, 1, 576] cache. FlashInfer's fa2/fa3 split
  them itself into ``x[..., :512], x[..., 512:]``: the same views, kernel and arguments as the legacy
  call, so no copy and no numerical change.
- legacy: positional ``plan(...)`` and ``run(q_nope, q_pe, ckv, kpe, out=...)`` on views of q and of
  the one KV row (ckv = dims 0..511, kpe = 512..575; the kernel takes strides, so no copies).

fp8 KV (fa3 backend, bf16 Q): ``run`` takes the per-tensor scale as a Python float
(``ckv_scale`` = ``kpe_scale`` = the cache's scale, as the anchors ran it). Reading that float
from the device costs a sync, so it is read once per scale tensor and reused while the same,
unmodified tensor comes back (checked by identity and torch's version counter); fresh inputs
are re-read. A FlashInfer whose ``run`` has no ``ckv_scale`` is refused for fp8 rather than
folded in some other way.
"""

from __future__ import annotations

import importlib.util
import inspect
import math

import torch

from .. import problem as P
from .base import Backend, BackendUnavailable, Plan

WORKSPACE_BYTES = 128 << 20  # FlashInfer's recommended float workspace
FOLD_BLOCK = 1024

try:  # the fresh-scale fold below is one Triton kernel (triton ships with every CUDA torch this backend runs on)
    import triton
    import triton.language as tl

    @triton.jit
    def _fold_scale_kernel(q_ptr, s_ptr, out_ptr, g_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        s = tl.load(s_ptr).to(tl.float32)
        g = tl.where((s > 0) & (s < float("inf")), s, float("nan"))
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(q_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        tl.store(out_ptr + offs, (x * g).to(out_ptr.dtype.element_ty), mask=offs < n)
        tl.store(g_ptr, g, mask=pid == 0)
except ImportError:  # pragma: no cover
    triton = None


def fold_fp8_scale(q: torch.Tensor, scale: torch.Tensor, q_out: torch.Tensor, factor: torch.Tensor) -> None:
    """q_out = q * s and factor = s, in one launch with no host read, where s is the per-tensor fp8 scale or
    NaN for one the validation would refuse (<= 0, inf, NaN: NaN rows, as every fp8 path). The output's
    times-s is then ``o.mul_(factor)``: two kernels in all (as seven plain torch ops the fold cost ~19 us of
    kernel time at bs4-kv1024 on the H200, issue10/fi-fp8-r39a.csv against campaign 18)."""
    if triton is None:
        raise ValueError("fold_fp8_scale needs triton (the fp8 scale of a fresh input is folded by a Triton kernel)")
    if not (q.is_contiguous() and q_out.is_contiguous() and q_out.shape == q.shape):
        raise ValueError("fold_fp8_scale: q and q_out must be contiguous tensors of one shape")
    n = q.numel()
    _fold_scale_kernel[(triton.cdiv(n, FOLD_BLOCK),)](q, scale, q_out, factor, n, BLOCK=FOLD_BLOCK)


def call_forms(mla) -> tuple[bool, bool]:
    """(structural, takes_scale) for a ``flashinfer.mla`` module, from its wrapper's signatures (read once
    per plan, never per call). structural: ``plan`` takes ``metadata=`` (with ``MLAPlanMetadata``) and the
    layouts, and ``run`` takes ``query=`` / ``kv_cache=``; any FlashInfer short of that gets the legacy
    form. takes_scale: ``run`` takes ``ckv_scale`` (or ``**kwargs``)."""
    cls = mla.BatchMLAPagedAttentionWrapper
    run = inspect.signature(cls.run).parameters  # (FlashInfer's decorators use functools.wraps)
    plan = inspect.signature(cls.plan).parameters
    takes_scale = "ckv_scale" in run or any(p.kind is p.VAR_KEYWORD for p in run.values())
    structural = ({"query", "kv_cache"} <= run.keys() and hasattr(mla, "MLAPlanMetadata")
                  and {"metadata", "query_layout", "kv_cache_layout"} <= plan.keys())
    return structural, takes_scale


class FlashInferBackend(Backend):
    name = "flashinfer"
    description = "FlashInfer BatchMLAPagedAttentionWrapper (fa3 on sm90), page size 1"
    kv_formats = ("bf16", "fp8")
    q_formats = ("bf16",)
    devices = ("cuda",)

    def availability(self) -> tuple[bool, str]:
        if not torch.cuda.is_available() or torch.version.hip:
            return False, "needs an NVIDIA GPU (CUDA build of torch) and the flashinfer package"
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) != (9, 0):
            return False, f"wired for sm90 (Hopper); this GPU is sm_{major}{minor}"
        if importlib.util.find_spec("flashinfer") is None:
            return False, "flashinfer is not installed (pip extra 'cuda'; on the H200 see flashinfer_carry.sh)"
        return True, ""

    def check_config(self, config: dict) -> None:
        allowed = {"fi_backend"}
        unknown = set(config) - allowed
        if unknown:
            raise ValueError(f"backend 'flashinfer' does not take config {sorted(unknown)} (takes {sorted(allowed)})")
        if config.get("fi_backend", "auto") not in ("auto", "fa2", "fa3"):
            raise ValueError(f"fi_backend must be auto, fa2 or fa3, got {config['fi_backend']!r}")

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        self.check_config(config)
        fi_backend = config.get("fi_backend", "auto")
        import flashinfer

        q, kv_data, qo_indptr, kv_indptr, cfg = data
        device, heads = q.device, q.shape[1]
        s, bs = int(cfg["q_seq_len"]), int(cfg["batch_size"])
        lengths = tuple(cfg["kv_lens"]) if cfg.get("kv_lens") is not None else (int(cfg["kv_seq_len"]),) * bs
        total_kv = sum(lengths)
        kv_dtype = torch.bfloat16 if kv_format == "bf16" else kv_data["fp8"][0].dtype
        if kv_format == "fp8" and kv_dtype != torch.float8_e4m3fn:
            raise ValueError(f"flashinfer fp8 MLA takes float8_e4m3fn, the cache is {kv_dtype}")

        structural, takes_scale = call_forms(flashinfer.mla)
        if kv_format == "fp8" and not takes_scale:
            raise BackendUnavailable(f"flashinfer {flashinfer.__version__}: run() takes no ckv_scale/kpe_scale, "
                                     "so it cannot apply the fp8 cache's per-tensor scale")

        workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=device)
        wrapper = flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend=fi_backend)
        kv_indices = torch.arange(total_kv, dtype=torch.int32, device=device)
        kv_len_arr = torch.tensor(lengths, dtype=torch.int32, device=device)
        # causal = bottom-right aligned in FlashInfer, which is our decode-causal rule for s > 1
        sm_scale = float(cfg.get("sm_scale", P.SM_SCALE))
        if structural:  # (fp8 KV: FlashInfer sets scale_mode="kv-per-tensor" itself, as for the flat form)
            wrapper.plan(metadata=flashinfer.mla.MLAPlanMetadata.csr(qo_indptr, kv_indptr, kv_indices, kv_len_arr),
                         num_heads=heads, head_dim_ckv=P.KV_LORA_RANK, head_dim_kpe=P.QK_ROPE_HEAD_DIM,
                         page_size=1, causal=s > 1, sm_scale=sm_scale, q_data_type=torch.bfloat16,
                         kv_data_type=kv_dtype, query_layout="packed", kv_cache_layout="packed")
        else:
            wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, heads, P.KV_LORA_RANK, P.QK_ROPE_HEAD_DIM,
                         1, s > 1, sm_scale, torch.bfloat16, kv_dtype)
        out = torch.empty((q.shape[0], heads, P.V_HEAD_DIM), dtype=torch.bfloat16, device=device)
        scale_cache = {"tensor": None, "version": None, "value": None}
        if kv_format == "fp8":  # the device fold's buffers (fresh scale tensors): q times s, and s
            q_folded = torch.empty_like(q.contiguous())
            factor = torch.empty((), dtype=torch.float32, device=device)

        def known_scale(t: torch.Tensor) -> float | None:
            """The float of the plan's scale tensor while it comes back unmodified (read on the host once, on
            the plan's first call, which refuses a bad one); None for any other tensor or a modified one."""
            if scale_cache["tensor"] is None:
                value = float(t.item())
                if not (math.isfinite(value) and value > 0):  # (read on the host anyway: refuse it here)
                    raise ValueError(f"fp8 KV scale must be finite and > 0, got {value}")
                scale_cache.update(tensor=t, version=t._version, value=value)
            if scale_cache["tensor"] is t and scale_cache["version"] == t._version:
                return scale_cache["value"]
            return None

        def run(data):
            q, kv_data = data[0], data[1]
            folded = None
            if kv_format == "bf16":
                kv, extra = kv_data["bf16"], {}
            else:
                kv, scale = kv_data["fp8"]
                sc = known_scale(scale)
                if sc is None:  # folded on the device: no host read inside the call
                    fold_fp8_scale(q.contiguous(), scale, q_folded, factor)
                    q, folded, sc = q_folded, factor, 1.0
                extra = dict(ckv_scale=sc, kpe_scale=sc)
            if structural:  # this call's tensors, packed: nothing to build or slice here
                o = wrapper.run(query=q, kv_cache=kv, out=out, **extra)
            else:
                o = wrapper.run(q[..., : P.KV_LORA_RANK], q[..., P.KV_LORA_RANK:],
                                kv[..., : P.KV_LORA_RANK], kv[..., P.KV_LORA_RANK:], out=out, **extra)
            if folded is not None:
                o.mul_(folded)
            return o

        return Plan(backend=self.name, kv_format=kv_format, q_format=q_format, run=run, outputs=[out],
                    config={"variant": f"flashinfer-{getattr(wrapper, '_backend', fi_backend)}",
                            "fi_backend": fi_backend, "flashinfer_version": flashinfer.__version__,
                            "fi_api": "structural" if structural else "legacy",
                            "page_size": 1})


BACKEND = FlashInferBackend()
