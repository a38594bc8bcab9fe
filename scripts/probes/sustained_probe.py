#!/usr/bin/env python3
"""Does a sustained 1 s kernel-mode window read bs256-kv8192 bf16 slower than a short one, and why?

Since round 43 the kernel mode samples for >= 1 s (`StoppingRule.kernel_min_seconds`). Its bf16 bs256-kv8192 rows
read 564-582 us with an IQR of 41-44 us (r43e, campaign 21), where ten samples read 539 with an IQR of 1.4
(campaign 19); fp8 and MXFP4 kept IQRs of 1-7 us. This probe times single replays (flush, events around the replay,
as time_graph) back to back and paced, each sample with its wall time, beside nvidia-smi telemetry every 200 ms
(power, SM and memory clocks, temperatures, clock-event reasons), to see whether the time drifts with the load:

  bf16-busy-3s    the default bf16 plan (v28) back to back for 3 s
  bf16-paced-3s   the same with 20 ms of idle GPU before every sample (a low duty cycle, like eval.py's loop
                  behind its 62 GB flush)
  fp8-busy-3s     the default fp8 plan (v141 at this shape) back to back for 3 s
  read-busy-3s    torch's sum over the bf16 cache's bytes (2.4 GB), flushed as the others, 3 s

Every graph's output is checked (poisoned with NaN first; leaderboard rule against the bf16 truth, own-format rel_l2
against the fp32 reference of its format) before any of its timings.

    H200:  PYTHONPATH=. python3 scripts/probes/sustained_probe.py $OUT     # -> $OUT/sustained-series.csv, -telemetry.csv
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from periodic_probe import series  # noqa: E402  (the same sample loop: idle, flush, events, wall time)

import mla  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.bench.bandwidth import measure_bandwidth  # noqa: E402
from mla.bench.timers import L2Flush, capture_graph  # noqa: E402
from mla.check import accuracy_metrics  # noqa: E402
from mla.kernels.triton import TritonDecodePlan  # noqa: E402

CASE = "bs256-kv8192-q1-h16"


def checked_graph(data, kv_format: str):
    """The default plan of this format (no variant named) captured in a graph, checked once before any timing."""
    plan = TritonDecodePlan(data, kv_format=kv_format, graph=False)
    graph = capture_graph(lambda: plan.run(data))
    plan.out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    ok, msg = mla.check(data, plan.out, reference_output=mla.reference(data))
    fmt = accuracy_metrics(plan.out, mla.reference(data, kv_format=kv_format))["rel_l2"]
    print(f"{CASE} {kv_format} {plan.variant.name} split {plan.num_splits}: {msg[:60]} own rel_l2 {fmt:.2e}", flush=True)
    if not (ok and fmt < 1e-2):
        raise SystemExit(f"{CASE} {kv_format}: check failed, no timings ({msg})")
    return graph, dict(case=CASE, kv_format=kv_format, variant=plan.variant.name, check_ok=ok, rel_l2_fmt=fmt,
                       num_splits=plan.num_splits)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0] if argv else "out")
    out_dir.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    bw = measure_bandwidth(dev)
    base = dict(prov.provenance(dev, prov.new_run_id(dev)), read_gbs=bw["read_gbs"])
    flush = L2Flush(dev, "write")
    data = mla.inputs.generate_case(mla.problem.case_from_name(CASE), device=dev)
    g16, m16 = checked_graph(data, "bf16")
    g8, m8 = checked_graph(data, "fp8")
    rows: list[dict] = []
    tel_path = out_dir / "sustained-telemetry.csv"
    with open(tel_path, "w") as tel:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
                                "temperature.gpu,temperature.memory,clocks_event_reasons.active",
                                "--format=csv", "-lms", "200"], stdout=tel, stderr=subprocess.STDOUT)
        try:
            time.sleep(1.0)
            rows += [dict(r, **m16) for r in series(g16.replay, flush, 3.0, "bf16-busy-3s", "v28")]
            time.sleep(1.0)
            rows += [dict(r, **m16) for r in series(g16.replay, flush, 3.0, "bf16-paced-3s", "v28", idle_s=0.02)]
            time.sleep(1.0)
            rows += [dict(r, **m8) for r in series(g8.replay, flush, 3.0, "fp8-busy-3s", "v141")]
            time.sleep(1.0)
            x = data[1]["bf16"]  # the bf16 cache: the bytes the bf16 kernel reads
            acc = torch.empty((), dtype=torch.float32, device=dev)
            want = float(torch.sum(x, dtype=torch.float64))
            rows += [dict(r, case="read-bf16-kv") for r in
                     series(lambda: torch.sum(x.view(-1), dim=0, dtype=torch.float32, out=acc), flush, 3.0, "read-busy-3s", "torch.sum")]
            if abs(acc.item() - want) > 1e-3 * max(1.0, abs(want)) + 1e-2 * x.numel() ** 0.5:
                raise SystemExit(f"torch.sum over the cache gave {acc.item()}, fp64 {want}")
            time.sleep(0.5)
        finally:
            smi.terminate()
            smi.wait()
            if rows:
                keys = dict.fromkeys(k for r in rows for k in r)
                path = prov.write_rows(out_dir / "sustained-series.csv",
                                       [dict(base, **{k: r.get(k, "") for k in keys}) for r in rows])
                print(f"wrote {len(rows)} samples to {path}; telemetry in {tel_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
