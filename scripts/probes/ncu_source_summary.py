#!/usr/bin/env python3
"""Stall samples per SASS opcode from ``ncu -i REP --page source --csv --print-source sass`` (the
SourceCounters section's PC sampling): which instructions the warps were waiting at, and for what.

    python3 scripts/probes/ncu_source_summary.py r11-src-v104.csv [top]

The column names differ between Nsight Compute versions, so the sample columns are found by name
("Sampl" in the header) and every such column is summed per opcode (the first word of the SASS text,
without its modifiers) over the whole kernel."""
import gzip
import sys

import pandas as pd

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:  # (may start with "Kernel Name",NAME)
    skip = 1 if f.readline().startswith('"Kernel Name"') else 0
d = pd.read_csv(path, thousands=",", skiprows=skip)
src = next((c for c in d.columns if c.strip().lower() in ("source", "sass")), None)
if src is None:
    sys.exit(f"no Source column in {path}: {list(d.columns)[:20]}")
samples = [c for c in d.columns if "sampl" in c.lower() or (c.startswith("stall_") and "Not Issued" not in c)]
for c in samples:
    d[c] = pd.to_numeric(d[c], errors="coerce").fillna(0)
text = d[src].astype(str).str.strip().str.replace(r"^@!?U?P\w+\s+", "", regex=True)
d["opcode"] = text.str.split().str[0].str.split(".").str[0]
d["op_full"] = text.str.split().str[0]
print("sample columns:", samples)
main = next((c for c in samples if "all" in c.lower()), samples[0] if samples else None)
if main is None:
    sys.exit("no sample columns")
total = d[main].sum()
print(f"{main}: {total:.0f} samples in {len(d)} SASS lines")
g = d.groupby("opcode")[samples].sum().sort_values(main, ascending=False)
g.insert(0, "share", (g[main] / total).round(3))
with pd.option_context("display.width", 250, "display.max_columns", 40):
    print(g.head(top).to_string())
    h = d.groupby("op_full")[main].sum().sort_values(ascending=False)
    print((h / total).round(3).head(top).to_string())
