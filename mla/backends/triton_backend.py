"""triton: the portable flash-decode family in mla/kernels/triton (split-K + LSE reduce).

Config keys (all optional):
  variant      a name from mla.kernels.triton.VARIANTS (default per KV format: DEFAULT_VARIANT)
  num_splits   int in [1, 64], "auto" (heuristic from batch, KV length, SM count: two programs an SM, and with
               no variant named the default call's own rules on sm90), "kernel" (the count the default call's
               rules give the named kernel, e.g. one program an SM for a warp-specialized one:
               launch.kernel_rule_splits; what a variant sweep should compare) or "race" (time candidates on
               these inputs; needs CUDA)
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

import difflib
import importlib.util
import os
from dataclasses import dataclass

from .. import problem as P
from .base import Backend, BackendUnavailable, Plan

CONFIG_KEYS = ("variant", "num_splits", "graph", "split_table", "fused_reduce", "balanced", "partial_dtype", "pdl",
               "coop_merge", "warp_specialized", "kv_tma", "timeline", "steal_helpers")
# the values each enumerated key takes (the module doc; TritonDecodePlan checks them again, with the inputs:
# test_triton_kernels.py::test_backend_config_choices_agree_with_the_plan keeps the two in step)
CONFIG_CHOICES = {"graph": (True, False, "auto"), "fused_reduce": (None, True, False), "balanced": (None, True, False),
                  "coop_merge": (None, True, False), "partial_dtype": (None, "fp32", "bf16"),
                  "pdl": (None, False, True, "early", "late"), "warp_specialized": (None, False),
                  "kv_tma": (None, False), "timeline": (False, True)}


def _is_one_of(value, choices) -> bool:
    return any(type(value) is type(c) and value == c for c in choices)  # (1 is not True here)


def variant_suggestion(name, names) -> str:
    """'unknown triton variant ...' with the names it is close to, not all ~170 of them."""
    text = str(name)
    near = [n for n in names if text and n.startswith(text)][:5]
    near += [n for n in difflib.get_close_matches(text, list(names), n=5, cutoff=0.6) if n not in near]
    hint = f"close matches: {', '.join(near[:5])}" if near else "no close match"
    return f"unknown triton variant {name!r}; {hint} ({len(names)} variants in mla.kernels.triton.VARIANTS)"


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

    def check_config(self, config: dict) -> None:
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise ValueError(f"backend 'triton' does not take config keys {unknown}; it takes {CONFIG_KEYS}")
        for key, choices in CONFIG_CHOICES.items():
            if key in config and not _is_one_of(config[key], choices):
                raise ValueError(f"triton config {key}={config[key]!r}: choose from {choices}")
        helpers = config.get("steal_helpers")
        if helpers is not None and (isinstance(helpers, bool) or not isinstance(helpers, (int, float)) or helpers <= 0):
            raise ValueError(f"triton config steal_helpers={helpers!r}: a number > 0, or None")
        variant, ns = config.get("variant"), config.get("num_splits")
        if (variant is None and _is_one_of(ns, (None, "auto", "kernel", "race"))) or not self.availability()[0]:
            return  # (the names below live beside the kernels: importing them imports triton)
        from ..kernels.triton.launch import MAX_SPLITS
        from ..kernels.triton.variants import VARIANTS

        if variant is not None and variant not in VARIANTS:
            raise ValueError(variant_suggestion(variant, VARIANTS))
        if not (_is_one_of(ns, (None, "auto", "kernel", "race")) or (type(ns) is int and 1 <= ns <= MAX_SPLITS)):
            raise ValueError(f"triton config num_splits={ns!r}: an int in [1, {MAX_SPLITS}], 'auto', 'kernel' or "
                             "'race'")

    def plan(self, data, *, kv_format: str, q_format: str, **config) -> Plan:
        if data[0].device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "0") != "1":
            raise BackendUnavailable("backend 'triton' on CPU inputs needs TRITON_INTERPRET=1 (set before "
                                     "importing triton)")
        self.check_config(config)  # (after the interpreter check: it may import triton)
        from ..kernels.triton import TritonDecodePlan

        p = TritonDecodePlan(data, kv_format=kv_format, q_format=q_format, **config)
        return TritonPlan(backend=self.name, kv_format=kv_format, q_format=q_format, run=p.run, outputs=p.outputs,
                          config=dict(p.config), check_new_inputs=p.check_new_inputs, kernel_plan=p)


BACKEND = TritonBackend()
