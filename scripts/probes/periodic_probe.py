#!/usr/bin/env python3
"""Is bs256-kv8192's slow fp8 mode a periodic episode of the machine rather than a transient after the references?

Round 43's one-second series (bench-order-series-r43a.csv) read slow for ~50 ms after the references, fast for
~0.8 s, then slow again at ~0.95-1.1 s, and v149's series three seconds later slow at ~4.9-5.05 s: an episode about
every second. This probe times single replays (flush, events around the replay, as time_graph) in segments, each
sample with its wall time, to measure the period, the duty cycle and the amplitude, and what they follow:

  busy-6s        v141 at bs256-kv8192 fp8 for 6 s (period, duty, amplitude)
  after-idle-3s  the same after 2.5 s of idle GPU (does idling reset the phase?)
  read-3s        torch's sum over 2 GiB of bf16 (no MLA kernel: is it the memory system?)
  bs32-2s        v141 at bs32-kv8192 fp8, its default split (a 60 us kernel: the same episodes?)
  telemetry-3s   (with --telemetry) v141 at bs256 again with nvidia-smi sampling every 20 ms beside it (do
                 clocks, power or the throttle reasons move with the episodes?). In r43c both processes' replays
                 failed in this segment ("operation not supported on global/shared address space") after the others
                 had passed: hence opt-in

Every graph's output is checked (poisoned with NaN first; leaderboard rule against the bf16 truth, own-format rel_l2
against the fp32 reference on the fp8 KV) before any of its timings.

    H200:  PYTHONPATH=. python3 scripts/probes/periodic_probe.py $OUT [--telemetry]   # -> $OUT/periodic-series.csv
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch

import mla
from mla.bench import provenance as prov
from mla.bench.bandwidth import measure_bandwidth
from mla.bench.timers import L2Flush, capture_graph
from mla.check import accuracy_metrics
from mla.kernels.triton import TritonDecodePlan

V141 = "v141_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm"
T_PROCESS = time.perf_counter()


def series(fn, flush, seconds: float, segment: str, what: str, idle_s: float = 0.0) -> list[dict]:
    """Single timed calls of fn for `seconds` of wall time, each after `idle_s` of sleep (GPU idle) and the flush."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if idle_s:
            time.sleep(idle_s)
        if flush is not None:
            flush.flush()
        start.record()
        fn()
        end.record()
        end.synchronize()
        now = time.perf_counter()
        out.append(dict(segment=segment, what=what, sample=len(out), t_segment_s=now - t0,
                        t_process_s=now - T_PROCESS, t_unix_s=time.time(), us=start.elapsed_time(end) * 1e3))
    return out


def checked_graph(case_name: str):
    """The case's inputs, its default fp8 plan on v141 captured in a graph, checked once before any timing."""
    c = mla.problem.case_from_name(case_name)
    data = mla.inputs.generate_case(c, device=torch.device("cuda"))
    plan = TritonDecodePlan(data, kv_format="fp8", variant=V141, graph=False)
    graph = capture_graph(lambda: plan.run(data))
    plan.out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    ok, msg = mla.check(data, plan.out, reference_output=mla.reference(data))
    fmt = accuracy_metrics(plan.out, mla.reference(data, kv_format="fp8"))["rel_l2"]
    print(f"{case_name} v141 split {plan.num_splits}: {msg[:60]} own rel_l2 {fmt:.2e}", flush=True)
    if not (ok and fmt < 1e-2):
        raise SystemExit(f"{case_name}: check failed, no timings ({msg})")
    return graph, plan, dict(check_ok=ok, rel_l2_fmt=fmt, num_splits=plan.num_splits)


def main(argv: list[str]) -> int:
    telemetry = "--telemetry" in argv
    argv = [a for a in argv if a != "--telemetry"]
    out_dir = Path(argv[0] if argv else "out")
    out_dir.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    bw = measure_bandwidth(dev)
    base = dict(prov.provenance(dev, prov.new_run_id(dev)), read_gbs=bw["read_gbs"])
    flush = L2Flush(dev, "write")
    rows: list[dict] = []
    try:
        measure(rows, flush, dev, out_dir, telemetry)
    finally:
        if rows:
            keys = dict.fromkeys(k for r in rows for k in r)  # the read rows carry no plan columns: blank there
            path = prov.write_rows(out_dir / "periodic-series.csv",
                                   [dict(base, **{k: r.get(k, "") for k in keys}) for r in rows])
            print(f"wrote {len(rows)} samples to {path}")
    return 0


def measure(rows: list[dict], flush, dev, out_dir: Path, telemetry: bool) -> None:
    g256, p256, chk256 = checked_graph("bs256-kv8192-q1-h16")
    meta256 = dict(case="bs256-kv8192-q1-h16", **chk256)
    rows += [dict(r, **meta256) for r in series(g256.replay, flush, 6.0, "busy-6s", "v141")]
    time.sleep(2.5)
    rows += [dict(r, **meta256) for r in series(g256.replay, flush, 3.0, "after-idle-3s", "v141")]
    x = torch.ones(1 << 30, dtype=torch.bfloat16, device=dev)  # 2 GiB, far past the L2
    acc = torch.empty((), dtype=torch.float32, device=dev)
    rows += [dict(r, case="read-2GiB") for r in
             series(lambda: torch.sum(x, dim=0, dtype=torch.float32, out=acc), None, 3.0, "read-3s", "torch.sum")]
    if abs(acc.item() / (1 << 30) - 1) > 1e-3:  # the read's own check: every element was read
        raise SystemExit(f"torch.sum over 2^30 ones gave {acc.item()}")
    del x
    g32, p32, chk32 = checked_graph("bs32-kv8192-q1-h16")
    rows += [dict(r, case="bs32-kv8192-q1-h16", **chk32) for r in series(g32.replay, flush, 2.0, "bs32-2s", "v141")]
    if not telemetry:
        return
    tel_path = out_dir / "periodic-telemetry.csv"
    with open(tel_path, "w") as tel:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
                                "temperature.gpu,temperature.memory,clocks_event_reasons.active",
                                "--format=csv", "-lms", "20"], stdout=tel, stderr=subprocess.STDOUT)
        time.sleep(0.5)
        rows += [dict(r, **meta256) for r in series(g256.replay, flush, 3.0, "telemetry-3s", "v141")]
        smi.terminate()
        smi.wait()
    print(f"telemetry in {tel_path}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
