"""Input validation on the decode path: every backend, one place.

``mla.plan`` / ``mla.decode`` (mla/backends/__init__.py) call this module; backends never see an
input tuple that failed it. Every problem is a ValueError that names it.

When a plan is built (:func:`check_inputs`, ``deep=True``): everything below.

On every ``mla.decode`` / cached ``mla.plan`` call (:class:`CallGuard`): a signature of the input
tensors -- data pointer, dtype, shape, strides, device of q, the requested KV format's buffer and
scale, both indptrs, plus the indptrs' version counters and the config's lengths -- is compared
with the signatures already validated for this plan (the last 16). A known signature costs only
building that tuple (no device sync). A new one (new tensors, moved tensors, an indptr written in
place by a torch op) is checked fully again, indptr contents included (one device sync).

What is checked (a new signature or a new plan):
  structure   data is the 5-tuple; config a dict with batch_size, num_heads, q_seq_len, kv_seq_len;
              batch_size / q_seq_len / kv_seq_len >= 1, num_heads in (16, 32), kv_lens consistent
  q           a tensor, bfloat16, (batch_size * q_seq_len, num_heads, 576), contiguous
  kv_data     a dict holding the requested format: bf16 (total_kv, 1, 576) bfloat16; fp8
              ((total_kv, 1, 576) fp8, one fp32 scale); mxfp4 ((total_kv, 1, 288) uint8, uint8
              scales (total_kv, >= 18) with unit column stride); rows with unit last stride and a
              row stride >= the row width (a padded or sliced cache is fine, overlapping rows are not)
  indptrs     int32, (batch_size + 1,), contiguous (kernels read them as raw arrays)
  devices     every tensor on q's device
  contents    (device sync) indptr[0] = 0, strictly increasing (no zero-length sequence), qo_indptr
              steps of q_seq_len ending at q's rows, kv_indptr ending at the KV rows, every KV length
              >= q_seq_len and equal to config['kv_lens'] (or kv_seq_len for a uniform batch), the
              fp8 scale finite and > 0

What is NOT checked: tensor values (NaN / inf in q or the cache, E8M0 scale bytes of 0xFF = NaN),
indptr contents written behind torch's back (a kernel or DLPack writing the same memory: the
version counter does not move), and calls made on a :class:`mla.backends.Plan` directly
(``plan.run(data)`` is the lean call the harness's kernel mode times; validate with
:func:`check_inputs` first). Inside a CUDA-graph capture the indptr contents are not read (no sync is
allowed there); the sync-free checks still run.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from . import problem as P
from .inputs import validate_data

_SEEN_PER_PLAN = 16  # validated signatures remembered per plan (check set + timing set + a few more)


def _tensors(data, kv_format: str):
    """The tensors a decode of ``kv_format`` reads, in a fixed order (q, buffer, scale, qo, kv)."""
    q, kv_data, qo_indptr, kv_indptr, _ = data
    entry = kv_data[kv_format]
    if kv_format == "bf16":
        return q, entry, qo_indptr, kv_indptr
    buf, scale = entry
    return q, buf, scale, qo_indptr, kv_indptr


def check_layout(data, kv_format: str) -> None:
    """Strides a kernel can read (run after the dtype / shape checks of :func:`validate_data`)."""
    q, kv_data, qo_indptr, kv_indptr, _ = data
    if not q.is_contiguous():
        raise ValueError(f"q must be contiguous, got strides {q.stride()} for shape {tuple(q.shape)}")
    for name, t in (("qo_indptr", qo_indptr), ("kv_indptr", kv_indptr)):
        if t.stride(0) != 1:
            raise ValueError(f"{name} must be contiguous (kernels read it as a raw array), got stride {t.stride(0)}")
    entry = kv_data[kv_format]
    buf = entry if kv_format == "bf16" else entry[0]
    width = buf.shape[-1]
    if buf.shape[0] > 1 and (buf.stride(-1) != 1 or buf.stride(0) < width):
        raise ValueError(f"kv_data[{kv_format!r}] rows must be contiguous (last stride 1, row stride >= {width}), "
                         f"got strides {buf.stride()}")
    if buf.stride(-1) != 1:
        raise ValueError(f"kv_data[{kv_format!r}] rows must be contiguous (last stride 1), got strides {buf.stride()}")
    if kv_format == "mxfp4":
        scales = entry[1]
        if scales.shape[0] > 1 and scales.stride(0) < P.MXFP4_NUM_BLOCKS:
            raise ValueError(f"kv_data['mxfp4'] scale rows overlap: row stride {scales.stride(0)} < "
                             f"{P.MXFP4_NUM_BLOCKS} blocks")


def _check_config_lengths(config: dict, kv_lens: list[int]) -> None:
    want = config.get("kv_lens")
    if want is not None:
        want = [int(n) for n in want]
        if want != kv_lens:
            i = next((i for i, (a, b) in enumerate(zip(want, kv_lens)) if a != b), 0)
            raise ValueError(f"kv_indptr gives batch element {i} {kv_lens[i]} KV tokens, config['kv_lens'] "
                             f"says {want[i]}")
    else:
        n = int(config["kv_seq_len"])
        bad = [i for i, m in enumerate(kv_lens) if m != n]
        if bad:
            raise ValueError(f"kv_indptr gives batch element {bad[0]} {kv_lens[bad[0]]} KV tokens, config's "
                             f"kv_seq_len is {n} and config['kv_lens'] is None (a uniform batch)")


def _check_fp8_scale(kv_data) -> None:
    s = float(kv_data["fp8"][1].reshape(-1)[0])
    if not (s > 0 and s < float("inf")):
        raise ValueError(f"kv_data['fp8'] scale must be finite and > 0, got {s}")


def check_inputs(data, kv_format: str, *, deep: bool = True) -> None:
    """Validate ``data`` for a decode of ``kv_format``; ValueError naming the first problem.

    ``deep=False`` runs only the checks that need no device sync (structure, dtypes, shapes,
    devices, keys, strides, scale shapes); ``deep=True`` also reads the indptrs and the fp8 scale."""
    if kv_format not in P.KV_FORMATS:
        raise ValueError(f"unknown kv_format {kv_format!r}; choose from {P.KV_FORMATS}")
    kv_lens = validate_data(data, kv_format, deep=deep)
    check_layout(data, kv_format)
    if deep:
        _check_config_lengths(data[4], kv_lens)
        if kv_format == "fp8":
            _check_fp8_scale(data[1])


def signature(data, kv_format: str) -> tuple:
    """What a validated call depends on, read without a device sync. Raises (any exception) on a
    malformed tuple; :class:`CallGuard` then runs the checks that name the problem."""
    cfg = data[4]
    kv_lens = cfg.get("kv_lens")
    sig = [kv_format, cfg["batch_size"], cfg["num_heads"], cfg["q_seq_len"], cfg["kv_seq_len"],
           None if kv_lens is None else tuple(kv_lens), data[2]._version, data[3]._version]
    for t in _tensors(data, kv_format):
        sig += (t.data_ptr(), t.dtype, t.shape, t.stride(), t.device)
    return tuple(sig)


class CallGuard:
    """Per-plan memory of validated input signatures (see the module docstring)."""

    def __init__(self, kv_format: str):
        self.kv_format = kv_format
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self.full_checks = 0  # how many times the inputs were checked fully (tests, the cost script)

    def _remember(self, sig) -> None:
        self._seen[sig] = None
        if len(self._seen) > _SEEN_PER_PLAN:
            self._seen.popitem(last=False)

    def admit(self, data) -> None:
        """Full check of ``data`` (a new plan, or a signature not seen before), then remember it."""
        capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
        check_inputs(data, self.kv_format, deep=not capturing)
        self.full_checks += 1
        if not capturing:
            self._remember(signature(data, self.kv_format))

    def __call__(self, data) -> None:
        try:
            sig = signature(data, self.kv_format)
        except Exception:
            check_inputs(data, self.kv_format, deep=False)  # names the problem
            raise
        if sig in self._seen:
            self._seen.move_to_end(sig)
            return
        self.admit(data)


__all__ = ["CallGuard", "check_inputs", "check_layout", "signature"]
