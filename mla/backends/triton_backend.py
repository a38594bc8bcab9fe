"""triton: the portable flash-decode family in mla/kernels/triton (split-K + LSE reduce).

Config keys (all optional):
  variant      a name from mla.kernels.triton.VARIANTS (default per KV format: DEFAULT_VARIANT)
  num_splits   int in [1, 64], "auto" (heuristic from batch, KV length, SM count) or "race"
               (time candidates on these inputs; needs CUDA)
  graph        "auto" (default): on CUDA, plain launches; a CUDA graph captured when the same input
               addresses come on two consecutive calls and replayed for them after (never a stale
               graph, never a capture for inputs made fresh every call, also when the allocator hands
               address sets back in turn); True: capture on first sight; False: always launch
  split_table  CSV of saved race decisions consulted by "auto" before the heuristic
  fused_reduce True/False: override the variant's fused split reduce (one launch per call); with no
               variant named and neither knob given, the default call takes fused + balanced where
               campaign 3 measured it faster (launch.fused_by_default: fp8, 2-8 splits of >= 1024 tokens)
  balanced     True/False: override the variant's balanced work list (needs fused_reduce)
  partial_dtype "fp32" / "bf16": partial O precision (bf16 needs fused_reduce)
  pdl          False / "early" (= True) / "late": launch the split-K reduce by programmatic dependent launch
               (sm90+: its launch overlaps the split kernel, which releases it at its start or after its KV
               loop); None: launch.PDL_DEFAULT ("late", measured in round 37) where the GPU has it
  coop_merge   True/False: the splits of each (batch element, head group) merge the output together inside
               the split kernel (one launch, a cooperative grid of at most one program per SM; the one-
               warpgroup generation-3 kernels only); None: the variant's choice (v147 / v148 take it)
  warp_specialized  None (default): the default call swaps in the warp-specialized kernel where the rule says
               (launch.ws_default_choice: MXFP4 v170 on long programs; fp8 v149 where kv_tma=False); False: never
               (the control)
  kv_tma       None (default): a uniform fp8 batch's default call takes the kernels that load its tiles by TMA
               by KV tiles a program (launch.tma_default_variant: v168 from 32, v169 from 128 where the programs
               outnumber the SMs; round 54);
               False: never (the control: round 53's default, v149 / v160)
  timeline     True: an instrument, generation-3 kernels only - every program stamps five events (%globaltimer,
               %clock64) and its SM into ``plan.kernel_plan.timeline``, one int64 row per program
               (mla.analysis.timeline reads it; scripts/probes/timeline_probe.py runs it); False (default)

The fastest call: ``fn = mla.plan(data, backend="triton", ...).bind(data); fn()`` (a zero-argument
callable for these tensors: the CUDA graph's replay on CUDA; see TritonDecodePlan.bind).

On CPU it runs under Triton's interpreter (``TRITON_INTERPRET=1`` must be set before triton is
imported); on CUDA / ROCm it compiles for the device.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from .. import problem as P
from .base import Backend, BackendUnavailable, Plan

CONFIG_KEYS = ("variant", "num_splits", "graph", "split_table", "fused_reduce", "balanced", "partial_dtype", "pdl",
               "coop_merge", "warp_specialized", "kv_tma", "timeline", "steal_helpers")


@dataclass
class TritonPlan(Plan):
    """The generic Plan plus ``bind(data)``: the lowest-overhead call for one set of tensors."""

    kernel_plan: object = None

    def bind(self, data):
        return self.kernel_plan.bind(data)

    def replay_for(self, data):
        return self.kernel_plan.replay_for(data)


class TritonBackend(Backend):
    name = "triton"
    description = "Triton flash-decode, split-K + LSE reduce (fused or separate), in-kernel fp8/MXFP4 decode; CUDA graphs (auto)"
    kv_formats = P.KV_FORMATS
    q_formats = P.Q_FORMATS
    devices = ("cpu", "cuda")

    def availability(self) -> tuple[bool, str]:
        if importlib.util.find_spec("triton") is None:
            return False, "needs the triton package"
        return True, ""

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise ValueError(f"backend 'triton' does not take config keys {unknown}; it takes {CONFIG_KEYS}")
        if data[0].device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "0") != "1":
            raise BackendUnavailable("backend 'triton' on CPU inputs needs TRITON_INTERPRET=1 (set before "
                                     "importing triton)")
        from ..kernels.triton import TritonDecodePlan

        p = TritonDecodePlan(data, kv_format=kv_format, q_format=q_format, **config)
        return TritonPlan(backend=self.name, kv_format=kv_format, q_format=q_format, run=p.run, outputs=p.outputs,
                          config=dict(p.config), check_new_inputs=p.check_new_inputs, kernel_plan=p)


BACKEND = TritonBackend()
