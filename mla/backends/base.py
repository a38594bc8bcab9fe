"""What every backend is: a ``plan`` step (allocations, metadata, compilation; cached per shape and
outside any timed region) that returns a :class:`Plan` whose ``run(data)`` is the lean call.

The split follows FlashInfer's ``plan()/run()``: the harness times only ``Plan.run``; a plan is
valid for inputs of the same shape (batch, lengths, heads, formats), not for one set of tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..problem import KV_FORMATS, Q_FORMATS


class BackendUnavailable(RuntimeError):
    """Raised when a backend cannot run on this machine; the message says why."""


@dataclass
class Plan:
    """A ready-to-call decode for one shape.

    run:      ``run(data) -> (total_q, H, 512) bf16``; may return a buffer it owns.
    outputs:  buffers ``run`` writes (the harness poisons them with NaN before a checked call).
    config:   the resolved configuration (e.g. the num_splits a heuristic picked), recorded in results.
    check_new_inputs: ``check_new_inputs(data)`` raises ValueError where the plan cannot take these inputs
              for a reason of its own beyond mla.validate's (e.g. a kernel's range of MXFP4 scales, checked
              at build); mla.decode's guard runs it on every input set the plan has not validated. None: none.
    """

    backend: str
    kv_format: str
    q_format: str
    run: Callable[[tuple], torch.Tensor]
    outputs: list[torch.Tensor] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    check_new_inputs: Callable[[tuple], None] | None = None

    def __call__(self, data) -> torch.Tensor:
        return self.run(data)

    def poison(self) -> None:
        for t in self.outputs:
            t.fill_(float("nan"))


class Backend:
    """Subclass and register in ``mla.backends``. ``plan`` must raise ValueError for configs or
    formats it does not support, and BackendUnavailable when this machine cannot run it; configs
    go through ``check_config`` first."""

    name: str = ""
    description: str = ""
    kv_formats: tuple[str, ...] = KV_FORMATS
    q_formats: tuple[str, ...] = ("bf16",)
    devices: tuple[str, ...] = ("cpu", "cuda")  # torch device types it runs on ("cuda" covers ROCm)

    def availability(self) -> tuple[bool, str]:
        """(available, reason). The reason says what is missing, e.g. 'needs ROCm and aiter'."""
        return True, ""

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:  # pragma: no cover
        raise NotImplementedError

    def check_config(self, config: dict) -> None:
        """ValueError for a config key this backend does not take, or a value no input could make
        valid. It needs no inputs, so ``bench`` refuses a typo before it builds any; ``plan`` calls it
        too. What depends on the inputs (a variant for another format, say) is left to ``plan``.
        This default takes no keys; a backend with keys overrides it."""
        if config:
            raise ValueError(f"backend {self.name!r} takes no config keys, got {sorted(config)}")

    # shared argument checks, so every backend refuses bad requests the same way
    def check_request(self, data, kv_format: str, q_format: str) -> None:
        if kv_format not in KV_FORMATS:
            raise ValueError(f"unknown kv_format {kv_format!r}; choose from {KV_FORMATS}")
        if q_format not in Q_FORMATS:
            raise ValueError(f"unknown q_format {q_format!r}; choose from {Q_FORMATS}")
        if kv_format not in self.kv_formats:
            raise ValueError(f"backend {self.name!r} does not support kv_format {kv_format!r} "
                             f"(supports {self.kv_formats})")
        if q_format not in self.q_formats:
            raise ValueError(f"backend {self.name!r} does not support q_format {q_format!r} "
                             f"(supports {self.q_formats})")
        ok, why = self.availability()
        if not ok:
            raise BackendUnavailable(f"backend {self.name!r} is not available here: {why}")
        dev = data[0].device.type
        if dev not in self.devices:
            raise BackendUnavailable(f"backend {self.name!r} runs on {self.devices}, inputs are on {dev!r}")
