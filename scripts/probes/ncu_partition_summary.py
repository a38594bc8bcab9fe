#!/usr/bin/env python3
"""Stall samples and shared-memory wavefronts per tile loop of a warp-specialized kernel, from
``ncu -i REP --page source --csv --print-source sass`` (the SourceCounters section): each innermost
backward-branch loop longer than ~100 instructions (a partition's tile loop: consumers hold warpgroup
MMAs, decoders do not) with its share of all samples, its stall reasons (share of its own samples, those
over 2%), and its L1 shared wavefronts (ideal / excessive) per executed warp instruction.

    python3 scripts/probes/ncu_partition_summary.py r38d-src-v143.csv
"""
import re
import sys

import pandas as pd

path = sys.argv[1]
with open(path) as f:  # (the page may start with a "Kernel Name",NAME line)
    skip = 1 if f.readline().startswith('"Kernel Name"') else 0
d = pd.read_csv(path, thousands=",", skiprows=skip)
d["addr"] = d["Address"].apply(lambda a: int(str(a), 16))
src = d["Source"].astype(str)
stalls = [c for c in d.columns if c.startswith("stall_") and "Not Issued" not in c]
main = next(c for c in d.columns if "Sampling (All" in c)
wf = [c for c in d.columns if c.startswith("L1 Wavefronts Shared")]
for c in stalls + [main, "Instructions Executed"] + wf:
    d[c] = pd.to_numeric(d[c], errors="coerce").fillna(0)
edges = []
for a, s in zip(d.addr, src):
    if "BRA" in s:
        t = re.search(r"0x([0-9a-f]+)", s.split("BRA", 1)[1])
        if t and int(t.group(1), 16) < a:
            edges.append((int(t.group(1), 16), a))
edges = [e for e in edges if e[1] - e[0] > 0x600]  # (> ~100 instructions: not the mbarrier retry spins)
loops = sorted(e for e in edges if not any(c >= e[0] and x <= e[1] and (c, x) != e for c, x in edges))
total = d[main].sum()
print(f"{path}: {total:.0f} samples")
inside = pd.Series(False, index=d.index)
for a, b in loops:
    m = (d.addr >= a) & (d.addr <= b)
    inside |= m
    s = d[m]
    n = s[main].sum()
    kind = "consumer" if s["Source"].astype(str).str.contains("GMMA").any() else "decoder"
    reasons = {c.replace("stall_", ""): round(float(s[c].sum() / n), 3) for c in stalls if n and s[c].sum() / n > 0.02}
    wfs = {c.replace("L1 Wavefronts Shared", "wavefronts").strip(): int(s[c].sum()) for c in wf}
    print(f"{a:#x}-{b:#x} {kind}: {m.sum()} SASS lines, {n / total:.3f} of the samples, "
          f"{s['Instructions Executed'].sum():.0f} warp instructions, {wfs}")
    print("   ", reasons)
print(f"outside the loops: {d[~inside][main].sum() / total:.3f} of the samples")
