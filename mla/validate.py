"""Input validation on the decode path: every backend, one place.

``mla.plan`` / ``mla.decode`` (mla/backends/__init__.py) call this module; backends never see an
input tuple that failed it. Every problem is a ValueError that names it.

Two parts of the check differ in cost. The **sync-free** part (structure, dtypes, shapes, strides,
devices, config lengths) reads only tensor metadata. The **contents** part (indptr values, the fp8
scale value) reads device memory; done on the host it is a device sync, and a sync inside a timed
call waits for whatever the GPU still has queued (eval.py's un-awaited L2 flush: campaign 3 saw
10x on some shapes). The indptr contents are implied by host data (config's q_seq_len and
kv_lens / kv_seq_len), so after one synchronous check per plan they can be *compared* on the device
instead of read.

``validate="auto"`` (the default of ``mla.plan`` / ``mla.decode``), per plan (:class:`CallGuard`):
  plan build        everything, contents read synchronously (one sync, outside any timed region);
                    the validated indptrs are kept as the plan's canonical copies
  known signature   (data pointer, dtype, shape, strides, device of every tensor read, the indptrs'
                    version counters, the config's lengths; the last 16 per plan): nothing re-checked
  new signature, known structure (the signature minus pointers and version counters equals one
                    already fully validated: fresh tensors of the same kind, eval.py's case):
                    no host read of device memory. The contents check is queued on a side stream
                    (indptrs == the canonical ones, fp8 scale finite and > 0): one Triton kernel
                    (mla/kernels/triton/contents_check.py) writes its verdict into a pinned host flag
                    behind a CUDA event (the torch ops of CallGuard._bad and a copy where that kernel
                    cannot run); the call itself runs on the canonical
                    indptrs (equal to the caller's whenever the input is valid, and always in bounds
                    of the validated shapes, so a bad indptr cannot make a kernel read out of bounds).
  new structure     everything again, synchronously, like a plan build.
  When a queued check fails, a ValueError naming the problem (the same message as the synchronous
  check; the indptrs are read then, on the error path only) is raised: on the same call if the
  device has already run the check when the call ends (always on CPU), else at the start of the
  next guarded call (``mla.plan`` / ``mla.decode`` of any plan; a check still running then is waited
  for: that waits for the *earlier* call's inputs, never for the current call's queued work, and in
  eval.py's loop and the harness's modes, which synchronize before every call, it never waits), or
  at :func:`wait_pending`. The output of the failing call was computed from the lengths config
  gives, and the caller gets the ValueError before any later decode.

:func:`mla.decode` also keeps a memo of its previous call: a call with the same request and inputs of
the same :func:`fingerprint` (nothing queued, no queued check failed since: ``failed_checks``) skips
the plan lookup and this guard, the inputs being the ones the guard accepted then
(docs/notes-harness.md, "The memo of the previous call").

``validate="full"``: every new signature is checked fully and synchronously (the behaviour before
issue 10; the device script scripts/h200_issue10_fresh.py times it beside "auto").

What is checked (a plan build, a new structure, or "full"):
  structure   data is the 5-tuple; config a dict with batch_size, num_heads, q_seq_len, kv_seq_len;
              batch_size / q_seq_len / kv_seq_len >= 1, num_heads in (16, 32), kv_lens consistent
  q           a tensor, bfloat16, (batch_size * q_seq_len, num_heads, 576), contiguous
  kv_data     a dict holding the requested format: bf16 (total_kv, 1, 576) bfloat16; fp8
              ((total_kv, 1, 576) fp8, one fp32 scale); mxfp4 ((total_kv, 1, 288) uint8, uint8
              scales (total_kv, >= 18) with unit column stride); rows with unit last stride and a
              row stride >= the row width (a padded or sliced cache is fine, overlapping rows are not)
  indptrs     int32, (batch_size + 1,), contiguous (kernels read them as raw arrays)
  devices     every tensor on q's device
  contents    indptr[0] = 0, strictly increasing (no zero-length sequence), qo_indptr steps of
              q_seq_len ending at q's rows, kv_indptr ending at the KV rows, every KV length
              >= q_seq_len and equal to config['kv_lens'] (or kv_seq_len for a uniform batch), the
              fp8 scale finite and > 0
  plan        a plan's own limits on input values (``Plan.check_new_inputs``; today the Triton MXFP4
              word decodes' scale range, mx_decode >= 2), at build and on every new signature (not
              inside a CUDA-graph capture): a host read, so on those plans every fresh input set costs
              a device sync

Recycled addresses: a new tensor on a freed tensor's address with version 0 has the signature of an
input already checked, so its contents are not re-read. The indptrs cannot hurt (kernels run on the
plan's canonical copies); the fp8 scale is guarded where it is used: every fp8 path (the Triton
kernels of all three generations, the torch backend) turns a scale this module would refuse into NaN
rows, and FlashInfer's backend reads the scale on the host anyway and refuses it there; generation
3's MXFP4 kernel decodes blocks with scales outside its exact range to NaN. Plan checks are skipped
there too (generation 1's word decodes overflow a scale above 136 to inf / NaN).

What is NOT checked: tensor values (NaN / inf in q or the cache, E8M0 scale bytes of 0xFF = NaN),
indptr contents written behind torch's back (a kernel or DLPack writing the same memory: the
version counter does not move), and calls made on a :class:`mla.backends.Plan` directly
(``plan.run(data)`` is the lean call the harness's kernel mode times; validate with
:func:`check_inputs` first). Inside a CUDA-graph capture the contents are neither read nor queued
(no sync and no side stream are allowed there); the sync-free checks still run.
"""

from __future__ import annotations

from collections import OrderedDict, deque

import torch

from . import problem as P
from .inputs import check_fp8_scale, check_indptr_contents, validate_data

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
            check_fp8_scale(data[1])


def signature(data, kv_format: str) -> tuple:
    """``(structure, identity)``: what a validated call depends on, read without a device sync.
    ``structure`` is what the sync-free checks look at (format, config lengths, and dtype, shape,
    strides, device of every tensor read); ``identity`` the data pointers and the indptrs' version
    counters. Raises (any exception) on a malformed tuple; :class:`CallGuard` then runs the checks
    that name the problem."""
    cfg = data[4]
    kv_lens = cfg.get("kv_lens")
    structure = [kv_format, cfg["batch_size"], cfg["num_heads"], cfg["q_seq_len"], cfg["kv_seq_len"],
                 None if kv_lens is None else tuple(kv_lens)]
    identity = [data[2]._version, data[3]._version]
    for t in _tensors(data, kv_format):
        structure += (t.dtype, t.shape, t.stride(), t.device)
        identity.append(t.data_ptr())
    return tuple(structure), tuple(identity)


# an fp32 scale is finite and > 0 iff its bits, read as int32, lie in [1, 0x7F7FFFFF]: +0 is 0, the
# smallest subnormal 1, the largest finite 0x7F7FFFFF, +inf 0x7F800000, positive NaNs above it, and
# every negative value, -0 and negative NaNs have the sign bit set (negative as int32)
_FP32_POSITIVE_FINITE_BITS = (1, 0x7F7FFFFF)


def _contents_bounds(canonical, with_fp8_scale: bool):
    """(lo, hi) int32 vectors for the queued check: ``clamp(cat(qo, kv[, scale bits]), lo, hi)`` leaves
    the vector unchanged iff the indptrs equal the canonical ones (lo = hi there) and the fp8 scale is
    finite and > 0 (:data:`_FP32_POSITIVE_FINITE_BITS`), exactly :func:`mla.inputs.check_fp8_scale`'s rule."""
    ref = torch.cat(canonical)
    if not with_fp8_scale:
        return ref, ref
    lo, hi = (torch.cat((ref, torch.full((1,), b, dtype=torch.int32, device=ref.device)))
              for b in _FP32_POSITIVE_FINITE_BITS)
    return lo, hi


def fingerprint(data, kv_format: str) -> tuple:
    """What :func:`signature` reads, as one flat tuple, for :func:`mla.decode`'s memo of its previous
    call (mla/backends/__init__.py): data pointer, shape, stride and dtype of every tensor read, the
    indptrs' version counters, and config's lengths and ``sm_scale`` (``kv_lens`` as a tuple, so a
    list edited in place reads as changed). Equal fingerprints mean an equal signature, devices aside,
    and an equal plan key. The devices are left out (a data pointer names its device: CUDA's unified
    addressing), as are nested tuples, to keep the per-call cost below ``signature``'s. Raises on a
    malformed tuple (the memo then takes the checked path, which names the problem)."""
    q, kv_data, qo, kv, cfg = data
    kv_lens = cfg.get("kv_lens")
    head = (q.data_ptr(), q.shape, q.stride(), q.dtype,
            qo.data_ptr(), qo._version, qo.shape, qo.stride(), qo.dtype,
            kv.data_ptr(), kv._version, kv.shape, kv.stride(), kv.dtype,
            cfg["batch_size"], cfg["num_heads"], cfg["q_seq_len"], cfg["kv_seq_len"], cfg.get("sm_scale"),
            None if kv_lens is None else tuple(kv_lens))
    entry = kv_data[kv_format]
    if kv_format == "bf16":
        return head + (entry.data_ptr(), entry.shape, entry.stride(), entry.dtype)
    buf, scale = entry
    return head + (buf.data_ptr(), buf.shape, buf.stride(), buf.dtype,
                   scale.data_ptr(), scale.shape, scale.stride(), scale.dtype)


VALIDATE_MODES = ("auto", "full")
_PENDING: deque = deque()  # queued contents checks of every plan, oldest first (see the module docstring)
_SIDE_STREAMS: dict = {}
failed_checks = 0  # queued checks that failed so far: mla.decode's memo is void once this moves


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


_RING = 32  # queued checks in flight per guard at most (each call first collects the earlier ones)


def _side_stream(device: torch.device):
    if device not in _SIDE_STREAMS:
        _SIDE_STREAMS[device] = torch.cuda.Stream(device)
    return _SIDE_STREAMS[device]


class _Pending:
    """One queued contents check: the flag (host memory) is valid once ``event`` has completed."""

    __slots__ = ("guard", "sig", "event", "flag", "qo", "kv", "scale", "q_rows", "total_kv", "config")

    def done(self) -> bool:
        return self.event is None or self.event.query()

    def wait(self) -> None:
        if self.event is not None:
            self.event.synchronize()


def collect_pending(wait: bool = False, earlier: bool = True) -> None:
    """Raise the ValueError of the oldest queued contents check that failed, if any has finished
    (``wait``: wait for the unfinished ones first; ``earlier``: the checks belong to earlier calls,
    which the message says). Checks that passed are dropped. Not inside a CUDA-graph capture (event
    queries are not allowed there): the next call outside it collects them."""
    if _PENDING and _capturing():
        return
    while _PENDING:
        p = _PENDING[0]
        if not p.done():
            if not wait:
                return
            p.wait()
        _PENDING.popleft()
        if bool(p.flag):
            p.guard._fail(p, earlier)


def wait_pending() -> None:
    """Finish every queued contents check now (a sync); ValueError if one failed."""
    collect_pending(wait=True)


def _device_check(canonical, with_fp8_scale: bool, data, flags):
    """The queued check as one Triton kernel (mla/kernels/triton/contents_check.py), compiled and run once
    here on the validated inputs (at plan build, outside any timed call; its verdict must be 0), or None
    where it cannot run (no triton, or that first run fails): _queue then takes the torch ops of _bad."""
    try:
        from .kernels.triton.contents_check import ContentsCheck

        check = ContentsCheck(canonical, with_fp8_scale)
        scale = data[1]["fp8"][1] if with_fp8_scale else None
        for slot in (0, 1):  # both pointer specializations the ring's flags take (16-byte aligned or not)
            flags[slot] = True
            check(data[2], data[3], scale, flags[slot])
        torch.cuda.synchronize(data[0].device)
        if bool(flags[:2].any()):
            return None
        return check
    except Exception:  # (a machine where Triton cannot launch: the torch ops are the same rule)
        return None


class CallGuard:
    """Per-plan memory of validated input signatures and structures (see the module docstring)."""

    def __init__(self, kv_format: str):
        self.kv_format = kv_format
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self._structures: set = set()  # structures with one fully validated signature
        self.canonical = None  # (qo_indptr, kv_indptr): device copies of the first validated ones
        self.full_checks = 0  # synchronous full checks (tests, the cost and device scripts read these)
        self.queued_checks = 0  # contents checks queued on the device instead
        self._ring = None  # (pinned flags, events) for queued checks, made at the first full check on CUDA
        self._bounds = None  # (lo, hi) int32 vectors the queued check compares against (with canonical)
        self._check = None  # the one-kernel queued check (CUDA with triton), else the torch ops of _bad
        self.plan_check = None  # the plan's own check of a new input set (Plan.check_new_inputs), or None

    def _remember(self, sig) -> None:
        self._seen[sig] = None
        if len(self._seen) > _SEEN_PER_PLAN:
            self._seen.popitem(last=False)

    def admit(self, data) -> None:
        """Full check of ``data`` (a new plan, a new structure, or validate="full"), then remember it."""
        capturing = _capturing()
        check_inputs(data, self.kv_format, deep=not capturing)
        self.full_checks += 1
        if not capturing:
            sig = signature(data, self.kv_format)
            self._remember(sig)
            self._structures.add(sig[0])
            if self.canonical is None:
                self.canonical = (data[2].clone(), data[3].clone())
                self._bounds = _contents_bounds(self.canonical, self.kv_format == "fp8")
            if self._ring is None and data[0].is_cuda:  # made here, outside any timed call
                self._ring = (torch.zeros(_RING, dtype=torch.bool, pin_memory=True),
                              [torch.cuda.Event() for _ in range(_RING)])
                self._check = _device_check(self.canonical, self.kv_format == "fp8", data, self._ring[0])

    def __call__(self, data, validate: str = "auto"):
        """Validate ``data`` for a call; returns the tuple the backend should run: ``data`` itself,
        or (``validate="auto"``) ``data`` with the plan's canonical indptrs in place of the caller's."""
        if _PENDING:
            collect_pending(wait=True)  # an earlier call's queued check: its error comes first
        try:
            sig = signature(data, self.kv_format)
        except Exception:
            check_inputs(data, self.kv_format, deep=False)  # names the problem
            raise
        if sig in self._seen:
            self._seen.move_to_end(sig)
            return data if validate == "full" else self.trusted(data)
        if validate != "full" and sig[0] in self._structures and self.canonical is not None and self._queue(data, sig):
            self._remember(sig)  # dropped again if the queued check fails
        else:
            self.admit(data)
        if self.plan_check is not None and not _capturing():  # after the generic checks: their messages first
            try:
                self.plan_check(data)  # (a host read: a device sync where the plan has such a check)
            except ValueError:
                self._seen.pop(sig, None)
                raise
        return data if validate == "full" else self.trusted(data)

    def trusted(self, data):
        """``data`` with the canonical indptrs (equal in value to the caller's once validated)."""
        if self.canonical is None:
            return data
        return data[0], data[1], self.canonical[0], self.canonical[1], data[4]

    def _queue(self, data, sig) -> bool:
        """Queue the contents check of ``data`` on the device (no host read); False where it cannot be
        queued (inside a CUDA-graph capture): the caller then checks synchronously."""
        q, kv_data, qo, kv, cfg = data
        scale = kv_data["fp8"][1] if self.kv_format == "fp8" else None
        p = _Pending()
        p.guard, p.sig, p.qo, p.kv, p.scale, p.config = self, sig, qo, kv, scale, cfg
        p.q_rows, p.total_kv = q.shape[0], _tensors(data, self.kv_format)[1].shape[0]
        if q.device.type == "cuda":
            if _capturing():
                return False
            side = _side_stream(q.device)
            side.wait_stream(torch.cuda.current_stream(q.device))  # the inputs' producers first
            # pinned flags and events from a ring made once per guard: a pinned allocation inside
            # the call (cudaHostAlloc) synchronizes the device, which in eval.py's order waits for the
            # un-awaited L2 flush (H200: +280 us per new input set at bs64-kv8192, issue10-fresh.csv)
            if self._ring is None:
                self._ring = (torch.zeros(_RING, dtype=torch.bool, pin_memory=True),
                              [torch.cuda.Event() for _ in range(_RING)])
            slot = self.queued_checks % _RING
            with torch.cuda.stream(side):
                p.flag = self._ring[0][slot]
                if self._check is not None:  # one launch that writes the pinned flag itself
                    self._check(qo, kv, scale, p.flag)
                else:
                    p.flag.copy_(self._bad(qo, kv, scale), non_blocking=True)
                p.event = self._ring[1][slot]
                p.event.record(side)
        else:  # CPU (or another synchronous device): computed now, read when collected
            p.flag, p.event = self._bad(qo, kv, scale), None
        self.queued_checks += 1
        _PENDING.append(p)
        return True

    def _bad(self, qo, kv, scale):
        """A 0-d bool tensor on the inputs' device: True if the contents fail (device ops only).
        Four launches for every format (cat, clamp, ne_, any; see :func:`_contents_bounds`): the
        indptrs and the fp8 scale's bits in one vector, out of bounds anywhere = bad. (It was two
        compares, two reductions and an or, plus six more ops for the fp8 scale: 5 / 11 launches.)"""
        parts = (qo, kv) if scale is None else (qo, kv, scale.reshape(-1).view(torch.int32))
        vals = torch.cat(parts)
        lo, hi = self._bounds
        return torch.clamp(vals, lo, hi).ne_(vals).any()

    def _fail(self, p: _Pending, earlier: bool) -> None:
        """A queued check failed: forget its signature (and void mla.decode's memo, which may hold it) and
        raise the synchronous check's message."""
        global failed_checks
        failed_checks += 1
        self._seen.pop(p.sig, None)
        where = " (inputs of an earlier call, checked on the device: validate='auto')" if earlier else ""
        try:
            kv_lens = check_indptr_contents(p.qo.tolist(), p.kv.tolist(), p.q_rows, p.total_kv,
                                            int(p.config["q_seq_len"]))
            _check_config_lengths(p.config, kv_lens)
            if p.scale is not None:
                check_fp8_scale({"fp8": (None, p.scale)})
        except ValueError as e:
            raise ValueError(f"{e}{where}") from None
        raise ValueError("qo_indptr / kv_indptr differ from the ones config's lengths imply" + where)


__all__ = ["CallGuard", "VALIDATE_MODES", "check_inputs", "check_layout", "collect_pending", "fingerprint", "signature",
           "wait_pending"]
