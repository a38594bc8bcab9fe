"""The summary table printed at the end of a bench run (and by ``python -m mla report``):
per-case median times, % of the measured read bandwidth, and per-variant geomeans."""

from __future__ import annotations

import math

import pandas as pd

from .stats import geomean
from .timers import MODES

GROUP = ["backend", "variant", "kv_format", "q_format", "config"]


def modes_present(df: pd.DataFrame) -> list[str]:
    return [m for m in MODES if df[f"{m}_median_us"].notna().any()]


def summary_frame(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per_row, per_variant). per_variant has the geomean over the cases that passed, with
    ``cases_ok`` / ``cases`` so geomeans over different case sets are not compared blindly."""
    modes = modes_present(df)
    cols = ["case"] + GROUP + ["status"]
    rows = df[cols].copy()
    for m in modes:
        rows[f"{m}_us"] = df[f"{m}_median_us"]
        rows[f"{m}_%bw"] = df[f"{m}_pct_read_bw"]
    groups = []
    for key, g in df.groupby(GROUP, sort=False, dropna=False):
        ok = g[g["status"] == "ok"]
        rec = dict(zip(GROUP, key), cases_ok=len(ok), cases=len(g))
        for m in modes:
            rec[f"{m}_geomean_us"] = geomean(ok[f"{m}_median_us"])
            rec[f"{m}_mean_%bw"] = float(ok[f"{m}_pct_read_bw"].mean()) if len(ok) else math.nan
        groups.append(rec)
    return rows, pd.DataFrame(groups)


def _fmt(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.1f}" if abs(v) < 1e4 else f"{v:.3g}"
    return str(v)


def print_summary(df: pd.DataFrame, console=None) -> None:
    """Rich tables (plain text where rich is missing), compact enough that a device call's output
    tail holds them; rows that are not 'ok' are listed once per variant with the first message."""
    def drop_constant(frame):  # a column with one value says nothing per row
        return frame.drop(columns=[c for c in ("q_format", "config") if frame[c].nunique(dropna=False) <= 1])

    per_row, per_var = (drop_constant(f) for f in summary_frame(df))
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a declared dependency
        print(per_row.to_string(index=False))
        print(per_var.to_string(index=False))
        return
    console = console or Console(width=180)
    for title, frame in (("per case: median us; %bw = io_bytes / time / measured read bandwidth", per_row),
                         ("per variant: geomean over the cases that passed", per_var)):
        t = Table(title=title, box=box.SIMPLE, pad_edge=False)
        for c in frame.columns:
            t.add_column(c, justify="right" if frame[c].dtype.kind in "fi" else "left", overflow="fold")
        for rec in frame.itertuples(index=False):
            t.add_row(*[_fmt(v) for v in rec])
        console.print(t)
    bad = df[df["status"] != "ok"]
    for key, g in bad.groupby(GROUP + ["status"], sort=False, dropna=False):
        rec = dict(zip(GROUP + ["status"], key))
        console.print(f"[{rec['status']}] {rec['backend']} kv={rec['kv_format']} q={rec['q_format']} "
                      f"{rec['config']} on {len(g)} case(s) ({', '.join(g['case'][:3])}"
                      f"{', ...' if len(g) > 3 else ''}): {g['message'].iloc[0]}", markup=False, highlight=False)
    if len(df):
        r = df.iloc[0]
        console.print(f"device {r['device']} | driver {r['driver']} | torch {r['torch']} | triton {r['triton']} | "
                      f"read {r['read_gbs']:.0f} GB/s, copy {r['copy_gbs']:.0f} GB/s | host floor "
                      f"{r.get('host_floor_us', float('nan')):.1f} us | run {r['run_id']}",
                      markup=False, highlight=False)
