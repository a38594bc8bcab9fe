#!/usr/bin/env python3
"""Which duty cycle keeps the kernel mode out of the board's power cap? (round 45, docs/notes-harness.md)

Round 44d: in the kernel mode's 1 s back-to-back window the H200 reaches its software power cap within ~0.4 s, and
bf16 at bs256-kv8192 (memory-bound, the most power) reads median 544 / mean 551 us where 20 ms of idle before each
sample reads 540.4; fp8 stays flat. ``StoppingRule.kernel_idle_ratio`` paces the kernel mode: after each sample the
host idles R x that sample's wall time (duty cycle 1 / (1 + R)). This probe runs the harness itself
(``mla.bench.run_bench``, kernel mode only, every row checked on fresh NaN-poisoned inputs as always) over the
leaderboard's most and least power-hungry rows at R = 0, 0.5, 1, 2, in two rounds of opposite order, beside
nvidia-smi every 200 ms (power, clocks, clock-event reasons), and writes the rows with ``idle_ratio`` and ``round``
added.

    H200:  PYTHONPATH=. python3 scripts/probes/duty_probe.py $OUT     # -> $OUT/duty-rows.csv, duty-telemetry.csv
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from mla.bench.bandwidth import measure_bandwidth
from mla.bench.harness import resolve_cases, run_bench
from mla.bench.stats import StoppingRule

RATIOS = (0.0, 0.5, 1.0, 2.0)
# (case, KV formats): bs256-kv8192 (the power cap's row: bf16 most, fp8 / MXFP4 less), bs64-kv8192 (memory-bound,
# a tenth of the work), bs4-kv1024 (launch-bound: pacing should not matter)
ROWS = (("bs256-kv8192-q1-h16", ("bf16", "fp8", "mxfp4")), ("bs64-kv8192-q1-h16", ("bf16", "fp8")),
        ("bs4-kv1024-q1-h16", ("bf16", "fp8")))


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0] if argv else "out")
    out_dir.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    bw = measure_bandwidth(dev)
    frames = []
    with open(out_dir / "duty-telemetry.csv", "w") as tel:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,"
                                "temperature.gpu,temperature.memory,clocks_event_reasons.active",
                                "--format=csv", "-lms", "200"], stdout=tel, stderr=subprocess.STDOUT)
        try:
            for rnd, ratios in ((1, RATIOS), (2, RATIOS[::-1])):
                for ratio in ratios:
                    rule = StoppingRule(kernel_idle_ratio=ratio)
                    for case, formats in ROWS:
                        t0 = time.time()
                        d = run_bench(resolve_cases([case]), ["triton"], kv_formats=formats, modes=("kernel",),
                                      device=dev, rule=rule, bandwidth=bw)
                        d["idle_ratio"], d["round"], d["t_start_unix_s"] = ratio, rnd, t0
                        frames.append(d)
                        for r in d.itertuples():
                            print(f"round {rnd} R={ratio:g} {r.case} {r.kv_format:6s} {r.status} check {r.check_ok} "
                                  f"kernel {r.kernel_median_us:8.1f} us (IQR {r.kernel_iqr_us:6.1f}, n {r.kernel_n}) "
                                  f"read ref {r.kernel_read_us:8.1f}  [{r.kernel_method}]", flush=True)
                    pd.concat(frames).to_csv(out_dir / "duty-rows.csv", index=False)  # (kept if a later step dies)
        finally:
            smi.terminate()
    d = pd.concat(frames)
    print(d.pivot_table(index=["case", "kv_format"], columns=["idle_ratio", "round"], values="kernel_median_us")
          .round(1).to_string())
    print(d.pivot_table(index=["case", "kv_format"], columns=["idle_ratio"], values="kernel_iqr_us")
          .round(1).to_string())
    return 0 if (d.status == "ok").all() and d.check_ok.all() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
