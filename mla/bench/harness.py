"""The one timing harness: check, then time, one (case, backend, formats, config) at a time.

For each case it generates two input sets on the device: the timing set (the case's seed) and a
fresh check set (another seed). Per row:
  1. plan (cached per shape; its first-build time, compilation included, is ``plan_s``);
  2. gate: outputs poisoned with NaN, one call on the check set, ``mla.check`` against the fp32
     reference (bf16 truth); a failure ends the row with status 'failed' and no times;
  3. time each mode on the timing set (see timers.py), then poison and check the timing set's
     output once more, so the numbers reported come from calls that computed the right thing.
     The 'fresh' mode makes new inputs before every call instead (seed + 13 per repeat, as the
     leaderboard's eval.py) and checks every output it times.
Errors never abort a run: they become rows ('error', 'unsupported', 'unavailable') with a message.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import time
import traceback
from typing import Callable, Iterable, Iterator

import torch

from .. import problem as P
from ..backends import _BACKEND_MODULES, BackendUnavailable, clear_plans, decode, get_backend
from ..backends import plan as get_plan
from ..check import accuracy_metrics, check
from ..inputs import generate_case
from ..reference import reference
from . import provenance as prov
from .bandwidth import measure_bandwidth, measure_graph_floor_kernel, measure_kernel_read
from .schema import TIME_COLUMNS, empty_row, rows_to_frame
from .stats import StoppingRule, summarize
from .timers import (FRESH_SEED_STEP, L2_FLUSH_KINDS, MODES, L2Flush, capture_graph, default_modes, time_cpu,
                     time_events, time_events_paired, time_fresh,
                     time_kernel, validate_modes)

CHECK_SEED_OFFSET = 1_000_003  # check inputs: a different seed than any case's timing seed


# --- configs and sweeps ------------------------------------------------------------------------
def parse_value(text: str):
    """CLI value -> int, float, bool, None or str ('8' -> 8, 'true' -> True, 'none' -> None)."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_assignments(items: Iterable[str], *, multi: bool) -> dict:
    """['num_splits=1,2,4'] -> {'num_splits': [1, 2, 4]} (multi) or ['mode=persistent'] ->
    {'mode': 'persistent'}."""
    out = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"expected key=value, got {item!r}")
        key, _, val = item.partition("=")
        key = key.strip()
        if not key.isidentifier():
            raise ValueError(f"config key {key!r} is not an identifier")
        if key in out:
            raise ValueError(f"config key {key!r} given twice")
        if multi:
            vals = [parse_value(v) for v in val.split(",") if v.strip() != ""]
            if not vals:
                raise ValueError(f"sweep {key!r} has no values")
            out[key] = vals
        else:
            out[key] = parse_value(val)
    return out


def expand_configs(fixed: dict | None = None, sweeps: dict | None = None) -> list[dict]:
    """The cartesian product of the sweep axes, each merged over the fixed config."""
    fixed, sweeps = dict(fixed or {}), dict(sweeps or {})
    both = set(fixed) & set(sweeps)
    if both:
        raise ValueError(f"keys both fixed and swept: {sorted(both)}")
    keys = list(sweeps)
    return [{**fixed, **dict(zip(keys, combo))} for combo in itertools.product(*(sweeps[k] for k in keys))]


def resolve_cases(spec: Iterable[str] | str) -> list[P.Case]:
    """Case-set names ('leaderboard', 'smoke', ...) and/or case names ('bs4-kv1024-q1-h16')."""
    if isinstance(spec, str):
        spec = [s for s in spec.split(",") if s]
    cases: list[P.Case] = []
    for item in spec:
        if item in P.CASE_SETS:
            cases += P.get_cases(item)
            continue
        try:
            cases.append(P.case_from_name(item))
        except ValueError as e:  # a misspelt set name reads as a bad case name: name the sets too
            if not str(e).startswith("cannot parse"):  # (a name that parsed: its value is what is wrong)
                raise
            raise ValueError(f"{e}, or a case set: {', '.join(P.CASE_SETS)}") from None
    if not cases:
        raise ValueError("no cases selected")
    return cases


# --- one row -----------------------------------------------------------------------------------
class _CaseInputs:
    """Timing and check inputs for one case, and their fp32 references (made on first use)."""

    def __init__(self, case: P.Case, device: torch.device):
        self.case = case
        self.check_seed = case.seed + CHECK_SEED_OFFSET
        self.timing = generate_case(case, device=device)
        self.check = generate_case(case, device=device, seed=self.check_seed)
        self._refs: dict = {}

    def ref(self, which: str, kv_format: str = "bf16", q_format: str = "bf16") -> torch.Tensor:
        key = (which, kv_format, q_format)
        if key not in self._refs:
            self._refs[key] = reference(getattr(self, which), kv_format=kv_format, q_format=q_format)
        return self._refs[key]


def _verify(plan, data, inputs: _CaseInputs, which: str, kv_format: str, q_format: str) -> dict:
    """Poison, call, check against the bf16 truth; also the error against the same-format
    reference (kernel error apart from quantization error)."""
    plan.poison()
    out = plan.run(data)
    ref = inputs.ref(which)
    ok, msg = check(data, out, reference_output=ref)
    if ok and out.dtype != torch.bfloat16:  # the contract's output is bf16; check() judges values only
        ok, msg = False, f"FAIL: output dtype {out.dtype}, the contract is torch.bfloat16"
    res = dict(check_ok=bool(ok), message=f"{which} set: {msg}")
    if isinstance(out, torch.Tensor) and out.shape == ref.shape:
        m = accuracy_metrics(out, ref)
        mf = accuracy_metrics(out, inputs.ref(which, kv_format, q_format))
        res.update(max_abs=m["max_abs"], rel_l2=m["rel_l2"], mismatch=m["mismatch"],
                   max_abs_fmt=mf["max_abs"], rel_l2_fmt=mf["rel_l2"])
    return res


def bench_one(inputs: _CaseInputs, backend: str, kv_format: str, q_format: str, config: dict, *,
              modes: tuple[str, ...], rule: StoppingRule, flush: L2Flush | None, base: dict,
              fresh_flush: L2Flush | None = None, floor: Callable[[], object] | None = None) -> dict:
    """One schema row. Status: ok | failed (check) | unsupported (plan raised ValueError) |
    unavailable (BackendUnavailable, module missing) | error (anything else raised). ``floor``: the graph floor's
    replay, timed after each cold sample (``cold_floor_us``)."""
    case = inputs.case
    on_gpu = inputs.timing[0].device.type == "cuda"
    row = empty_row()
    row.update(base)
    row.update(case=case.name, bs=case.batch_size, kv=case.kv_seq_len, q_seq_len=case.q_seq_len,
               heads=case.num_heads, ragged=case.kv_lens is not None, total_kv=case.total_kv,
               seed=case.seed, check_seed=inputs.check_seed, backend=backend, variant=backend,
               kv_format=kv_format, q_format=q_format, config=json.dumps(config, sort_keys=True),
               io_bytes=P.io_bytes(case, kv_format), kv_bytes=P.kv_bytes(case, kv_format),
               flops=P.flops(case), timestamp_utc=prov.utc_now())
    try:
        get_backend(backend)
    except ImportError as e:
        return {**row, "status": "unavailable", "message": f"backend module missing: {e}"}
    try:
        t0 = time.perf_counter()
        plan = get_plan(inputs.timing, backend=backend, kv_format=kv_format, q_format=q_format, **config)
        if on_gpu:
            torch.cuda.synchronize()
        row["plan_s"] = time.perf_counter() - t0
    except BackendUnavailable as e:
        return {**row, "status": "unavailable", "message": str(e)}
    except ValueError as e:
        return {**row, "status": "unsupported", "message": str(e)}
    except Exception as e:
        return {**row, "status": "error", "message": _describe(e)}
    row["variant"] = str(plan.config.get("variant", backend))
    row["plan_config"] = json.dumps(plan.config, sort_keys=True, default=str)
    try:
        gate = _verify(plan, inputs.check, inputs, "check", kv_format, q_format)
        row.update(gate)
        if not gate["check_ok"]:
            return {**row, "status": "failed"}

        def call():
            return decode(inputs.timing, backend=backend, kv_format=kv_format, q_format=q_format, **config)

        for mode in modes:
            if mode == "cpu":
                samples = time_cpu(call, rule)
            elif mode == "cold" and floor is not None:
                samples, floor_samples = time_events_paired(call, floor, rule, flush=flush)
                row["cold_floor_us"] = summarize(floor_samples)["median"]
            elif mode in ("cold", "warm"):
                samples = time_events(call, rule, flush=flush if mode == "cold" else None)
            elif mode == "fresh":
                samples, failure = _time_fresh(inputs, plan, backend, kv_format, q_format, config, rule,
                                               fresh_flush or flush)
                if failure:
                    _clear_times(row)
                    return {**row, "check_ok": False, "status": "failed", "message": failure}
            else:
                samples, row["kernel_method"] = time_kernel(lambda: plan.run(inputs.timing), rule, flush)
            st = summarize(samples)
            for k in ("median", "min", "iqr"):
                row[f"{mode}_{k}_us"] = st[k]
            row[f"{mode}_n"] = st["n"]
        after = _verify(plan, inputs.timing, inputs, "timing", kv_format, q_format)
        if not after["check_ok"]:
            _clear_times(row)
            return {**row, **after, "status": "failed"}
        return {**row, "status": "ok"}
    except Exception as e:  # a crash in one backend must not end the run; record it
        _clear_times(row)
        if on_gpu:
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
        return {**row, "status": "error", "message": _describe(e)}


def _time_fresh(inputs: _CaseInputs, plan, backend, kv_format, q_format, config, rule, flush):
    """(samples, failure message or None): the 'fresh' mode. Repeat i gets inputs of seed
    case.seed + 13 * i, its output poisoned first; every timed output is checked (bf16 truth)."""
    case, device = inputs.case, inputs.timing[0].device
    failures: list[str] = []
    seed = [case.seed]

    def make(i):
        seed[0] = case.seed + FRESH_SEED_STEP * i
        data = generate_case(case, device=device, seed=seed[0])
        plan.poison()
        return data

    def call(data):
        return decode(data, backend=backend, kv_format=kv_format, q_format=q_format, **config)

    def verify(data, out):
        if failures:
            return
        ok, msg = check(data, out)
        if ok and out.dtype != torch.bfloat16:
            ok, msg = False, f"output dtype {out.dtype}, the contract is torch.bfloat16"
        if not ok:
            failures.append(f"fresh inputs (seed {seed[0]}): {msg}")

    samples = time_fresh(make, call, rule, flush=flush, verify=verify)
    return samples, (failures[0] if failures else None)


def _describe(e: BaseException) -> str:
    tb = traceback.format_exc(limit=4).strip().splitlines()
    return f"{type(e).__name__}: {e} | {' / '.join(l.strip() for l in tb[-4:-1])}"[:2000]


def _clear_times(row: dict) -> None:
    for c in TIME_COLUMNS:
        row[c] = math.nan
    row["kernel_method"] = None
    row["cold_floor_us"] = math.nan


def add_bandwidth_columns(row: dict) -> dict:
    """{mode}_gbs = io_bytes / median time; {mode}_pct_read_bw = that over the measured read GB/s."""
    for m in MODES:
        t = row.get(f"{m}_median_us")
        gbs = row["io_bytes"] / (t * 1e-6) / 1e9 if t is not None and t == t and t > 0 else math.nan
        row[f"{m}_gbs"] = gbs
        rb = row.get("read_gbs")
        row[f"{m}_pct_read_bw"] = 100.0 * gbs / rb if rb and rb == rb and gbs == gbs else math.nan
    return row


# --- a run -------------------------------------------------------------------------------------
def check_names(backends, kv_formats, q_formats) -> None:
    """ValueError naming the first unknown backend / KV format / Q format of a request."""
    for b in backends:
        if b not in _BACKEND_MODULES:
            raise ValueError(f"unknown backend {b!r}; choose from {list(_BACKEND_MODULES)}")
    for f in kv_formats:
        if f not in P.KV_FORMATS:
            raise ValueError(f"unknown kv_format {f!r}; choose from {P.KV_FORMATS}")
    for f in q_formats:
        if f not in P.Q_FORMATS:
            raise ValueError(f"unknown q_format {f!r}; choose from {P.Q_FORMATS}")


def check_configs(backends, configs) -> None:
    """ValueError for the first config a backend does not take (Backend.check_config: its keys, and
    values no input could make valid), before any input is built. ``validate`` is the call's own
    option (mla.decode), for every backend. A backend whose module cannot be imported is not checked
    here (it is skipped, with the reason, before anything runs)."""
    from ..validate import VALIDATE_MODES

    for cfg in configs:
        if "validate" in cfg and cfg["validate"] not in VALIDATE_MODES:
            raise ValueError(f"config validate={cfg['validate']!r}: choose from {VALIDATE_MODES}")
    for name in backends:
        try:
            b = get_backend(name)
        except ImportError:
            continue
        for cfg in configs:
            b.check_config({k: v for k, v in cfg.items() if k != "validate"})


def iter_bench(cases, backends, kv_formats=("fp8",), q_formats=("bf16",), configs=({},), *,
               modes=None, device=None, rule: StoppingRule | None = None, run_id: str | None = None,
               bandwidth: dict | None = None, progress: Callable[[dict], None] | None = None,
               l2_flush: str = "write", fresh_flush: str = "eval") -> Iterator[dict]:
    """Yield one schema row per (case x backend x kv_format x q_format x config), case-major so
    each case's inputs are made once. ``bandwidth`` skips the probe (tests, replays). ``l2_flush``:
    how the cold and kernel modes evict the L2 (timers.L2Flush: 'write', 'read' or 'eval'); ``fresh_flush``:
    the fresh mode's flush ('eval', eval.py's own, by default).
    With the 'kernel' mode each row also gets ``kernel_read_us``, one read of its ``io_bytes``
    timed the same way (measured once per byte count), and ``graph_floor_kernel_us``, the graph floor's
    near-empty kernel timed the same way (once per run and flush: kept in ``bandwidth``)."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    modes = validate_modes(modes or default_modes(device), device)
    rule = rule or StoppingRule()
    check_names(backends, kv_formats, q_formats)
    for name, kind in (("l2_flush", l2_flush), ("fresh_flush", fresh_flush)):
        if kind not in L2_FLUSH_KINDS:
            raise ValueError(f"unknown {name} {kind!r}; choose from {L2_FLUSH_KINDS}")
    run_id = run_id or prov.new_run_id(device)
    bw = bandwidth if bandwidth is not None else measure_bandwidth(device)
    base = dict(prov.provenance(device, run_id), read_gbs=bw["read_gbs"], copy_gbs=bw["copy_gbs"],
                host_floor_us=bw.get("host_floor_us", float("nan")),
                graph_floor_us=bw.get("graph_floor_us", float("nan")))
    on_gpu = device.type == "cuda"
    flush = L2Flush(device, l2_flush) if on_gpu and {"cold", "kernel"} & set(modes) else None
    fresh = L2Flush(device, fresh_flush) if on_gpu and "fresh" in modes else None
    if flush is not None:
        base["l2_flush"] = flush.label
    if fresh is not None:
        base["fresh_flush"] = fresh.label
    if flush is not None and "kernel" in modes:  # (before the cases allocate, as the read probe is)
        # once per run and flush: the CLI passes one ``bandwidth`` dict to each case's call
        by_flush = bw.setdefault("graph_floor_kernel_by_flush", {})
        if flush.label not in by_flush:
            try:  # a reference column: a failed capture leaves it empty rather than ending the run
                by_flush[flush.label] = measure_graph_floor_kernel(device, flush, rule)
            except RuntimeError:
                by_flush[flush.label] = float("nan")
        base["graph_floor_kernel_us"] = by_flush[flush.label]
    floor = None
    if on_gpu and "cold" in modes:  # graph_floor_us's graph, replayed after each cold sample (cold_floor_us)
        floor_x = torch.zeros(1, device=device)
        try:
            floor = capture_graph(lambda: floor_x.add_(1)).replay
        except RuntimeError:  # (as above: the rows then carry no cold_floor_us)
            floor = None
    read_refs: dict[int, float] = {}
    for case in cases:
        inputs = _CaseInputs(case, device)
        for backend, kvf, qf, cfg in itertools.product(backends, kv_formats, q_formats, configs):
            row = add_bandwidth_columns(bench_one(inputs, backend, kvf, qf, dict(cfg), modes=modes,
                                                  rule=rule, flush=flush, base=base, fresh_flush=fresh,
                                                  floor=floor))
            if flush is not None and "kernel" in modes and row["status"] == "ok":
                nbytes = int(row["io_bytes"])
                if nbytes not in read_refs:
                    read_refs[nbytes] = measure_kernel_read(device, nbytes, flush, rule)
                row["kernel_read_us"] = read_refs[nbytes]
            if progress:
                progress(row)
            yield row
        del inputs
        clear_plans()  # plans hold buffers and workspaces sized for this case
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()


def run_bench(*args, **kwargs):
    """:func:`iter_bench` collected into a validated DataFrame."""
    return rows_to_frame(list(iter_bench(*args, **kwargs)))
