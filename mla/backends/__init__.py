"""Backend registry and the one public entry point, :func:`decode`.

Backends live one per module and are imported lazily, so a machine without triton, flashinfer or
aiter can still list them and say why they are unavailable.
"""

from __future__ import annotations

import importlib

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
_plans: dict[tuple, Plan] = {}


def get_backend(name: str) -> Backend:
    if name not in _BACKEND_MODULES:
        raise ValueError(f"unknown backend {name!r}; choose from {list(_BACKEND_MODULES)}")
    if name not in _loaded:
        _loaded[name] = importlib.import_module(_BACKEND_MODULES[name]).BACKEND
    return _loaded[name]


def backends() -> list[dict]:
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
    """What a plan depends on, read without a device sync (the config dict carries the lengths)."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    return (tuple(q.shape), str(q.device), q.dtype, int(kv_indptr.numel()),
            int(config["kv_seq_len"]), int(config["q_seq_len"]), config.get("kv_lens"))


def plan(data, *, backend: str, kv_format: str = "fp8", q_format: str = "bf16", **config) -> Plan:
    """The cached plan for this backend, formats, config and input shape (built on first use)."""
    key = (backend, kv_format, q_format, tuple(sorted(config.items())), shape_key(data))
    p = _plans.get(key)
    if p is None:
        b = get_backend(backend)
        b.check_request(data, kv_format, q_format)
        p = b.plan(data, kv_format=kv_format, q_format=q_format, **config)
        _plans[key] = p
    return p


def decode(data, *, backend: str, kv_format: str = "fp8", q_format: str = "bf16", **config):
    """MLA decode of ``data`` (from :func:`mla.generate_input`) -> ``(total_q, H, 512)`` bf16."""
    return plan(data, backend=backend, kv_format=kv_format, q_format=q_format, **config).run(data)


def clear_plans() -> None:
    _plans.clear()


__all__ = ["Backend", "BackendUnavailable", "Plan", "backends", "clear_plans", "decode",
           "get_backend", "plan", "shape_key"]
