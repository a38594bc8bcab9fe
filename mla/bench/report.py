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


# --- compact report (``python -m mla report``): case x entry pivots, one per time mode -------------
ENTRY_PARTS = ["backend", "kv_format", "q_format", "variant", "config"]


def entry_labels(df: pd.DataFrame) -> pd.Series:
    """One short label per row: ``backend kv_format`` plus the parts of ENTRY_PARTS that tell apart
    rows of one case within that backend and format (e.g. ``triton fp8 num_splits: 4``), so a sweep
    stays apart. A part that varies only from case to case (the default call's kernel, which it picks
    per shape) is left out: the default call is one entry, as the README's table counts it."""
    key = ["backend", "kv_format", "case"]
    extra = [c for c in ENTRY_PARTS[2:] if c in df
             and (df.groupby(key)[c].nunique(dropna=False) > 1).any()]
    lab = df[["backend", "kv_format"] + extra].astype(str).agg(" ".join, axis=1)
    lab = lab.str.replace(r'[{}"]', "", regex=True).str.replace(r"graph: true,? ?", "", regex=True)
    return lab.str.replace(r"\s*,?\s*$", "", regex=True)


def compact_frame(df: pd.DataFrame, mode: str = "cold") -> pd.DataFrame:
    """case x entry median times (us) of ``mode`` for the ok rows (newest row per cell), with a last
    row ``geomean (n/8)``: the geomean over the cases the entry passed and how many those are."""
    col = f"{mode}_median_us"
    if col not in df:
        raise ValueError(f"no column {col!r}: mode must be one of {MODES}")
    ok = df[(df["status"] == "ok") & df[col].notna()].copy()
    if ok.empty:
        return pd.DataFrame()
    ok["entry"] = entry_labels(ok)
    entries = list(dict.fromkeys(ok.sort_values(["backend", "kv_format"], kind="stable")["entry"]))  # run order within
    ok = ok.sort_values("timestamp_utc").groupby(["case", "entry"], sort=False).tail(1)
    order = list(dict.fromkeys(df["case"]))
    t = ok.pivot(index="case", columns="entry", values=col)
    t = t.reindex(index=[c for c in order if c in set(ok["case"])], columns=entries)
    gm = {e: f"{geomean(t[e].dropna()):.1f} ({t[e].notna().sum()}/{len(t)})" for e in t.columns}
    out = t.map(_fmt).astype(object)
    out.loc["geomean (cases)"] = pd.Series(gm)
    return out


def print_compact(df: pd.DataFrame, modes=None, console=None, max_cols: int = 8) -> None:
    """The compact report: per time mode, case x entry tables of at most ``max_cols`` entries,
    then one provenance line per run (device, versions, commit, read probe)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=180)
    for m in modes or modes_present(df):
        t = compact_frame(df, m)
        for k in range(0, t.shape[1], max_cols):
            part = t.iloc[:, k:k + max_cols]
            tab = Table(title=f"{m} median us (geomean over the cases that passed)", box=box.SIMPLE, pad_edge=False)
            tab.add_column("case", no_wrap=True)
            for c in part.columns:
                tab.add_column(c, justify="right")
            for case, rec in part.iterrows():
                tab.add_row(case, *[str(v) if v == v else "-" for v in rec])
            console.print(tab)
    for rid, g in df.groupby("run_id", sort=False):
        r = g.iloc[0]
        bad = int((g["status"] != "ok").sum())
        console.print(f"run {rid}: {len(g)} rows{f' ({bad} not ok)' if bad else ''} | {r['device']} | torch {r['torch']} "
                      f"| triton {r['triton']} | commit {str(r['git_commit'])[:7]} | read {r['read_gbs']:.0f} GB/s"
                      + (f" | purpose {r['purpose']}" if "purpose" in g else ""), markup=False, highlight=False)
