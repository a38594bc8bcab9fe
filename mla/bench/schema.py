"""The one result schema: one row per (case, backend, formats, config) with every timing mode,
the correctness verdict, bytes and bandwidth, and provenance. Written by ``python -m mla bench``
under ``data/measured/<device-slug>/``; read back with :func:`load_results`.

Rule the loader enforces: a row whose status is not 'ok' has no times (NaN), and an 'ok' row
passed its check. Numbers from a failed check never reach a notebook.
"""

from __future__ import annotations

import glob as _glob
import json
import math
import os
from pathlib import Path

import pandas as pd

from .timers import MODES

STATUSES = (
    "ok",          # checked and timed
    "failed",      # ran, but the output failed mla.check: no times reported
    "error",       # raised while planning or running: no times
    "unsupported", # the backend refused the request (format, config): ValueError
    "unavailable", # the backend cannot run on this machine: BackendUnavailable / module missing
)

TIME_STATS = ("median_us", "min_us", "iqr_us", "n")
TIME_COLUMNS = tuple(f"{m}_{s}" for m in MODES for s in TIME_STATS)
GBS_COLUMNS = tuple(f"{m}_gbs" for m in MODES) + tuple(f"{m}_pct_read_bw" for m in MODES)

# name -> pandas dtype (object = str / JSON / nullable bool)
COLUMNS: dict[str, str] = {
    # what ran
    "run_id": "object", "timestamp_utc": "object",
    "case": "object", "bs": "int64", "kv": "int64", "q_seq_len": "int64", "heads": "int64",
    "ragged": "bool", "total_kv": "int64", "seed": "int64", "check_seed": "int64",
    "backend": "object", "variant": "object", "kv_format": "object", "q_format": "object",
    "config": "object",  # JSON: the config as requested (the sweep axes live here)
    "plan_config": "object",  # JSON: what the plan resolved (e.g. num_splits chosen for "auto")
    # verdict
    "status": "object", "message": "object",
    "check_ok": "object",  # True / False / None (never checked)
    "max_abs": "float64", "rel_l2": "float64", "mismatch": "float64",  # vs fp32 on bf16 KV (truth)
    "max_abs_fmt": "float64", "rel_l2_fmt": "float64",  # vs fp32 on the same KV/Q format: kernel error
    # times (microseconds); NaN unless status == 'ok' and the mode ran
    **{c: ("float64") for c in TIME_COLUMNS},
    "kernel_method": "object", "plan_s": "float64",
    # bytes and ceilings
    "io_bytes": "int64", "kv_bytes": "int64", "flops": "int64",
    "read_gbs": "float64", "copy_gbs": "float64",
    **{c: "float64" for c in GBS_COLUMNS},
    # provenance
    "device": "object", "device_slug": "object", "driver": "object", "torch": "object",
    "triton": "object", "gpu_runtime": "object", "python": "object",
    "git_commit": "object", "git_dirty": "object", "source_hash": "object",
    "command": "object",  # the command line that wrote the row
    "host_floor_us": "float64",  # this run's cost of one tiny torch op timed like a 'cold' call
    "graph_floor_us": "float64",  # this run's one-kernel CUDA-graph replay of a near-empty kernel, timed like 'cold'
    "l2_flush": "object",  # cold / kernel's L2 flush, kind:bytes (timers.L2Flush: write = zeroing, read, eval)
    "fresh_flush": "object",  # fresh's L2 flush, kind:bytes ('eval:67.1GB' = eval.py's randn)
    "kernel_read_us": "float64",  # one graph-replayed read of io_bytes, timed like 'kernel' (same flush)
    "graph_floor_kernel_us": "float64",  # graph_floor_us's near-empty kernel timed like 'kernel': its device part
    "cold_floor_us": "float64",  # graph_floor_us's graph timed like 'cold' after each of this row's cold samples
}
# columns added after the first H200 campaign: files without them still load (filled empty)
OPTIONAL_COLUMNS = {"command": None, "host_floor_us": math.nan, "graph_floor_us": math.nan,
                    **{f"fresh_{s}": math.nan for s in TIME_STATS}, "fresh_gbs": math.nan,
                    "fresh_pct_read_bw": math.nan,
                    # not recorded: every GPU run before these columns flushed by zeroing 1 GiB, fresh too
                    "l2_flush": None, "fresh_flush": None, "kernel_read_us": math.nan,
                    "graph_floor_kernel_us": math.nan, "cold_floor_us": math.nan}


def empty_row() -> dict:
    return {c: (math.nan if t == "float64" else None) for c, t in COLUMNS.items()}


# columns renamed since they were first written: old name -> name (values unchanged)
RENAMED_COLUMNS = {"cold_read_floor_us": "kernel_read_us"}  # one run's name (r36a): a reference, not a floor


def validate(df: pd.DataFrame, source: str = "results") -> pd.DataFrame:
    """Check columns, statuses and the no-times-without-a-passed-check rule; coerce dtypes."""
    df = df.rename(columns={k: v for k, v in RENAMED_COLUMNS.items() if k in df.columns})
    df = df.assign(**{c: v for c, v in OPTIONAL_COLUMNS.items() if c not in df.columns})
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        shown = missing if len(missing) <= 8 else [*missing[:5], f"... {len(missing) - 5} more"]
        raise ValueError(f"{source}: missing columns {shown} of the result schema's {len(COLUMNS)} "
                         "(not a result CSV? see mla/bench/schema.py)")
    extra = [c for c in df.columns if c not in COLUMNS]
    if extra:
        raise ValueError(f"{source}: unknown columns {extra} (schema changed? see mla/bench/schema.py)")
    bad = sorted(set(df["status"]) - set(STATUSES))
    if bad:
        raise ValueError(f"{source}: unknown status values {bad}; allowed {STATUSES}")
    df = df[list(COLUMNS)].copy()
    for c, t in COLUMNS.items():
        if t == "float64":
            df[c] = pd.to_numeric(df[c], errors="raise").astype("float64")
        elif t == "int64":
            if df[c].isna().any():
                raise ValueError(f"{source}: column {c!r} has empty values")
            df[c] = df[c].astype("int64")
        elif t == "bool":
            df[c] = df[c].map(_to_bool).astype("bool")
        elif c in ("check_ok", "git_dirty"):
            df[c] = df[c].map(_to_opt_bool).astype("object")
        else:  # text: missing is None whether it came from Python or from an empty CSV cell
            df[c] = df[c].astype("object").where(df[c].notna(), None)
    timed = df[[f"{m}_median_us" for m in MODES]].notna().any(axis=1)
    leaked = df.index[timed & (df["status"] != "ok")]
    if len(leaked):
        raise ValueError(f"{source}: rows {list(leaked)} carry times but status is not 'ok'")
    unchecked = df.index[(df["status"] == "ok") & (df["check_ok"] != True)]  # noqa: E712
    if len(unchecked):
        raise ValueError(f"{source}: rows {list(unchecked)} are 'ok' without a passed check")
    for c in ("config", "plan_config"):
        for i, v in df[c].items():
            if v is None and c == "plan_config":  # rows whose plan was never built
                continue
            try:
                json.loads(v)
            except (TypeError, json.JSONDecodeError) as e:
                raise ValueError(f"{source}: row {i} column {c!r} is not JSON: {v!r}") from e
    return df.reset_index(drop=True)


def _to_bool(v) -> bool:
    if isinstance(v, str):
        if v not in ("True", "False"):
            raise ValueError(f"expected True/False, got {v!r}")
        return v == "True"
    return bool(v)


def _to_opt_bool(v):
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
        return None
    return _to_bool(v)


def rows_to_frame(rows: list[dict]) -> pd.DataFrame:
    return validate(pd.DataFrame(rows, columns=list(COLUMNS)))


def load_results(paths) -> pd.DataFrame:
    """Read one CSV, a glob ('data/measured/h200/*.csv') or a list of either; validate; concat.
    ``config`` / ``plan_config`` stay JSON strings; ``config_dict(df, column)`` parses them."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[str] = []
    for p in paths:
        hits = sorted(_glob.glob(str(p)))
        if not hits:
            raise ValueError(f"no result files match {str(p)!r}")
        files += hits
    # every text column read as text: a source_hash such as '2e4251836778' must not become a float
    text = {c: str for c, t in COLUMNS.items() if t == "object"}
    frames = [validate(pd.read_csv(f, keep_default_na=False, na_values=[""], dtype=text), f) for f in files]
    return pd.concat(frames, ignore_index=True)


def config_dict(df: pd.DataFrame, column: str = "config") -> pd.Series:
    """Parse a JSON column ('config' as requested, 'plan_config' as resolved) into dicts."""
    return df[column].map(lambda v: json.loads(v) if isinstance(v, str) else {})


def write_results(df: pd.DataFrame, path, *, append: bool = False) -> Path:
    """Write validated rows. An existing file is never overwritten: with ``append`` the rows are
    added (its header must match this schema), otherwise ValueError."""
    path = Path(path)
    df = validate(df)
    if path.exists():
        if not append:
            raise ValueError(f"{path} exists; pass append=True (--append) or choose a new --out")
        header = pd.read_csv(path, nrows=0).columns.tolist()
        if header != list(COLUMNS):
            raise ValueError(f"{path} has a different header than this schema; write a new file")
        df.to_csv(path, mode="a", header=False, index=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(path, index=False)
    return path
