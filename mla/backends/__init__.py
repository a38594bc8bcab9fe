"""Backend registry and the one public entry point, :func:`decode`.

Backends live one per module and are imported lazily, so a machine without triton, flashinfer or
aiter can still list them and say why they are unavailable.

Every input goes through :mod:`mla.validate` here, for every backend: fully when a plan is built,
and per call through the plan's :class:`mla.validate.CallGuard` (``validate="auto"``: no host read
of device memory once a plan has validated inputs of the same structure; ``"full"``: every new set
of tensors checked synchronously). ``Plan.run`` itself stays the lean, unchecked call.

``mla.list_backends()`` lists the backends. This module is also callable (``mla.backends()``, the
name the function had before it was renamed) so old code keeps working; ``mla.backends`` is this
module, not a function that shadows it.
"""

from __future__ import annotations

import importlib
import sys
import types

from .. import validate as _validate
from .base import Backend, BackendUnavailable, Plan

# name -> module defining ``BACKEND`` (a Backend instance). Order = display order.
_BACKEND_MODULES = {
    "torch": "mla.backends.torch_backend",
    "triton": "mla.backends.triton_backend",
    "flashinfer": "mla.backends.flashinfer_backend",
    "aiter": "mla.backends.aiter_backend",
    "hip": "mla.backends.hip_backend",
}

_loaded: dict[str, Backend] = {}
_plans: dict[tuple, tuple[Plan, _validate.CallGuard]] = {}


def get_backend(name: str) -> Backend:
    if name not in _BACKEND_MODULES:
        raise ValueError(f"unknown backend {name!r}; choose from {list(_BACKEND_MODULES)}")
    if name not in _loaded:
        _loaded[name] = importlib.import_module(_BACKEND_MODULES[name]).BACKEND
    return _loaded[name]


def list_backends() -> list[dict]:
    """Every backend, whether it can run here, and why not: ``[{name, available, reason, ...}]``."""
    rows = []
    for name in _BACKEND_MODULES:
        try:
            b = get_backend(name)
        except Exception as e:  # a broken or missing module must not hide the other backends
            rows.append(dict(name=name, available=False, reason=f"import failed: {type(e).__name__}: {e}",
                             description="", kv_formats=(), q_formats=()))
            continue
        ok, why = b.availability()
        rows.append(dict(name=name, available=ok, reason=why, description=b.description,
                         kv_formats=b.kv_formats, q_formats=b.q_formats))
    return rows


def shape_key(data) -> tuple:
    """What a plan depends on, read without a device sync (the config dict carries the lengths and
    ``sm_scale``, which plans bake in at build)."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv_lens = config.get("kv_lens")  # (a list is fine: the key holds a tuple)
    return (tuple(q.shape), str(q.device), q.dtype, int(kv_indptr.numel()), int(config["kv_seq_len"]),
            int(config["q_seq_len"]), None if kv_lens is None else tuple(kv_lens), config.get("sm_scale"))


def plan(data, *, backend: str, kv_format: str = "fp8", q_format: str = "bf16", validate: str = "auto",
         **config) -> Plan:
    """The cached plan for this backend, formats, config and input shape (built on first use).

    ``data`` is validated (ValueError naming the problem): fully when the plan is built, and on a
    cache hit as :func:`decode` does per call (``validate``: "auto" or "full"; mla/validate.py says
    what is checked when)."""
    return _guarded(data, backend, kv_format, q_format, validate, config)[0]


def _guarded(data, backend, kv_format, q_format, validate, config) -> tuple[Plan, tuple, _validate.CallGuard]:
    """(plan, the tuple to run it on, the plan's guard) after this call's validation."""
    if validate not in _validate.VALIDATE_MODES:
        raise ValueError(f"validate must be one of {_validate.VALIDATE_MODES}, got {validate!r}")
    try:
        key = (backend, kv_format, q_format, tuple(sorted(config.items())), shape_key(data))
    except Exception:  # a malformed tuple or config: say what is wrong instead of a bare KeyError
        _validate.check_inputs(data, kv_format, deep=False)
        raise
    hit = _plans.get(key)
    if hit is not None:
        p, guard = hit
        return p, guard(data, validate), guard
    b = get_backend(backend)
    b.check_request(data, kv_format, q_format)  # names, availability, device type
    _validate.collect_pending(wait=True)  # an earlier call's queued check: its error comes first
    guard = _validate.CallGuard(kv_format)
    guard.admit(data)
    p = b.plan(data, kv_format=kv_format, q_format=q_format, **config)
    guard.plan_check = p.check_new_inputs  # (the build itself checked these inputs)
    _plans[key] = (p, guard)
    return p, data, guard


class _LastCall:
    """:func:`decode`'s memo of its previous call: the request, the inputs' fingerprint
    (:func:`mla.validate.fingerprint`), the plan and its guard, and (Triton plans with a CUDA graph
    for these inputs) the plan's direct replay. It holds no reference to the caller's tensors."""

    __slots__ = ("request", "fingerprint", "failed_checks", "plan", "guard", "replay_for", "replay")


_last: _LastCall | None = None


def decode(data, *, backend: str, kv_format: str = "fp8", q_format: str = "bf16", validate: str = "auto",
           **config):
    """MLA decode of ``data`` (from :func:`mla.generate_input`) -> ``(total_q, H, 512)`` bf16.
    ``validate``: "auto" (default: no device sync once inputs of this structure were validated) or
    "full" (every new set of input tensors read and checked on the host: one sync each).

    A call repeating the previous one (same request, and inputs whose fingerprint - pointers, shapes,
    strides, dtypes, indptr versions, config lengths - matches: the inputs the plan's guard
    validated then) skips the plan lookup and the guard, and on a Triton plan that holds a CUDA
    graph for these inputs replays it directly: the fixed-input loop's cost is the graph replay plus
    one fingerprint (issue 10). Anything else, a queued input check still open or one that failed
    since, takes the checked path."""
    global _last
    last = _last
    request = (backend, kv_format, q_format, validate, config)
    fp = None
    if last is not None and last.request == request and not _validate._PENDING \
            and last.failed_checks == _validate.failed_checks:
        try:
            fp = _validate.fingerprint(data, kv_format)
        except Exception:  # malformed: the checked path names the problem
            fp = None
        if fp == last.fingerprint:
            if last.replay is not None:
                out = last.replay()
                if out is not None:  # (None: inside someone's capture; the plan launches plainly)
                    return out
            run_on = last.guard.trusted(data)
            out = last.plan.run(run_on)
            if last.replay is None and last.replay_for is not None:  # a graph captured by this run, say
                last.replay = last.replay_for(run_on)
            return out
    _last = None
    p, run_on, guard = _guarded(data, backend, kv_format, q_format, validate, config)
    out = p.run(run_on)
    if _validate._PENDING:
        _validate.collect_pending(earlier=False)  # finished already (always on CPU): this call raises, not the next
    m = _LastCall()  # (only after every check this call ran has passed)
    if fp is None:  # (else the one computed above: the same inputs)
        fp = _validate.fingerprint(data, kv_format)
    m.request, m.fingerprint, m.failed_checks = request, fp, _validate.failed_checks
    m.plan, m.guard = p, guard
    m.replay_for = getattr(p, "replay_for", None)  # (Triton plans: TritonDecodePlan.replay_for)
    m.replay = m.replay_for(run_on) if m.replay_for is not None else None
    _last = m
    return out


def clear_plans() -> None:
    global _last
    _plans.clear()
    _last = None


def call_guard(p: Plan) -> _validate.CallGuard | None:
    """The validation state of a cached plan (tests and the validation-cost script read it)."""
    return next((g for q, g in _plans.values() if q is p), None)


backends = list_backends  # the function's old name: ``from mla.backends import backends`` still works


class _CallableModule(types.ModuleType):
    """``mla.backends()`` keeps working after the function became :func:`list_backends`."""

    def __call__(self) -> list[dict]:
        return list_backends()


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["Backend", "BackendUnavailable", "Plan", "call_guard", "clear_plans", "decode", "get_backend",
           "list_backends", "plan", "shape_key"]
