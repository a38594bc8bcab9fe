"""What the notebooks read: measured result CSVs (through :func:`mla.bench.load_results`),
published MI355X numbers and static ISA tables, plus the campaign commands that make them.

Replay mode reads whatever matching CSVs exist; where none do, the loaders return ``None`` and
:func:`no_data` prints the command that would make them, so a notebook runs before a campaign does.
Live mode (a GPU) runs the commands first, then reads only the files they wrote.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from .. import problem as P

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("MLA_DATA_DIR") or ROOT / "data")  # override: tests replay a fixture tree

# The H200 campaign has ONE source of truth: scripts/h200_campaign.sh (its main bench steps) and
# scripts/campaign_sweeps.txt (one bench argument line per sweep). campaign(name) reads them, so the
# commands shown and run here are the ones the device runs. Static ISA tables are made here, not there.
CAMPAIGN_SCRIPT = ROOT / "scripts" / "h200_campaign.sh"
CAMPAIGN_SWEEPS = ROOT / "scripts" / "campaign_sweeps.txt"
STATIC = {"static_gfx950": "python -m mla isa --target gfx950 --write",  # --write: data/static/ (else out/static)
          "static_sm90": "python -m mla isa --target sm90 --write"}
# which sweep lines belong to which figure family (by the swept axis)
SWEEP_KINDS = {"splits": "--sweep num_splits=", "variants": "--sweep variant=", "graph": "--sweep graph="}


def _script_defaults(text: str) -> dict:
    return dict(re.findall(r"^(\w+)=\$\{\1:-([^}]*)\}", text, flags=re.M))


def _expand(words: str, env: dict) -> list[str]:
    """Expand a line of the campaign script: "${MLA[@]}" / "${BENCH[@]}" arrays and $VARs."""
    out = []
    for w in shlex.split(words):
        if w == "${MLA[@]}":
            out += ["python", "-m", "mla"]
        elif w == "${BENCH[@]}":
            out += env["BENCH"]
        else:
            out.append(re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), w))
    return out


def campaign_commands(script: Path | str | None = None, sweep_file: Path | str | None = None) -> dict[str, list[str]]:
    """The campaign's bench commands, read from the script and the sweep file: ``{"leaderboard":
    [one per main step], "splits": [...], "variants": [...], "graph": [...], "sweeps": [all sweep
    lines]}``. ``$OUT`` becomes ``data/measured/h200``; environment defaults come from the script."""
    text = Path(script or CAMPAIGN_SCRIPT).read_text()
    env = _script_defaults(text)
    env["OUT"] = "data/measured/h200"
    m = re.search(r"^BENCH=\((.*)\)\s*$", text, flags=re.M)
    env["BENCH"] = _expand(m.group(1), env) if m else ["python", "-m", "mla", "bench"]
    out: dict[str, list[str]] = {"leaderboard": [], "sweeps": []}
    for line in text.splitlines():
        st = re.match(r"^\s*(?:has\s+\S+\s+&&\s+)?step\s+(\S+)\s+\d+\s+(.*)$", line)
        if st and "BENCH[@]" in st.group(2):
            out["leaderboard"].append(shlex.join(_expand(st.group(2), env)))
    sweep_lines = [ln.strip().strip('"') for ln in re.findall(r"^\s*\"(--[^\n]*)\"\s*$", text, flags=re.M)]
    sf = Path(sweep_file or CAMPAIGN_SWEEPS)
    if sf.exists():
        sweep_lines += [ln.strip() for ln in sf.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    prefix = ["python", "-m", "mla", "bench", "--mode", env.get("MODES", "cold,warm,kernel"),
              "--max-seconds", env.get("MAX_SECONDS", "0.5"), "--no-progress", "--out", f"{env['OUT']}/sweeps.csv", "--append"]
    for ln in sweep_lines:
        cmd = shlex.join(prefix + shlex.split(ln))
        out["sweeps"].append(cmd)
        for kind, axis in SWEEP_KINDS.items():
            if axis in ln:
                out.setdefault(kind, []).append(cmd)
    return out


def campaign(name: str) -> list[str]:
    """The commands of one campaign family, as the campaign runs them: ``leaderboard`` (the main
    steps of scripts/h200_campaign.sh), ``splits`` / ``variants`` / ``graph`` / ``sweeps`` (lines of
    scripts/campaign_sweeps.txt), ``static_gfx950`` / ``static_sm90`` (`python -m mla isa`)."""
    if name in STATIC:
        return [STATIC[name]]
    cmds = campaign_commands()
    if name not in cmds and name not in SWEEP_KINDS:
        raise ValueError(f"unknown campaign entry {name!r}; choose from {sorted(set(cmds) | set(SWEEP_KINDS) | set(STATIC))}")
    return cmds.get(name, [])


def short_command(cmd: str, max_value: int = 48) -> str:
    """A footer-sized form of a recorded command: ``--out``/``--append``/``--no-progress`` dropped,
    a flag given twice kept at its last (effective) value, long comma lists cut to their first two
    items and a count. The full line stays in the CSV's ``command`` column."""
    try:
        w = shlex.split(str(cmd))
    except ValueError:
        return str(cmd)
    flags, order, head = {}, [], []
    i = 0
    while i < len(w):
        t = w[i]
        if t.startswith("--"):
            val = w[i + 1] if i + 1 < len(w) and not w[i + 1].startswith("--") else None
            i += 2 if val is not None else 1
            if t in ("--out", "--append", "--no-progress"):
                continue
            if t in ("--sweep", "--config"):  # repeatable: keep each
                order.append((t, val))
                continue
            if t in flags:
                order = [(k, v) for k, v in order if k != t]
            flags[t] = val
            order.append((t, val))
        else:
            if not order:
                head.append(t)
            i += 1
    parts = list(head)
    for k, v in order:
        if v is not None and len(v) > max_value and "," in v:
            pre, _, lst = v.rpartition("=") if "=" in v.split(",")[0] else ("", "", v)
            items = lst.split(",")
            v = (pre + "=" if pre else "") + ",".join(items[:2]) + f",...(+{len(items) - 2})"
        parts += [k] + ([v] if v is not None else [])
    return " ".join(parts)


def commands(df: pd.DataFrame | None, fallback: str | list[str] | None = None, limit: int = 6) -> list[str]:
    """The unique recorded ``command`` values of the rows a figure plots, shortened for a footer
    (:func:`short_command`); ``fallback`` where the rows carry none (older files, or no rows)."""
    cmds = []
    if df is not None and "command" in df:
        for c in df["command"].dropna().astype(str):
            c = short_command(c)
            if c and c not in cmds:
                cmds.append(c)
    if not cmds:
        fb = [fallback] if isinstance(fallback, str) else list(fallback or [])
        return [f"(documented, rows carry no command) {c}" for c in fb] if df is not None and fb else fb
    if len(cmds) > limit:
        cmds = cmds[:limit] + [f"... and {len(cmds) - limit} more (see the `command` column)"]
    return cmds


def _rel(f: Path) -> str:
    f = Path(f).resolve()
    return str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f)


def no_data(what: str, command: str | list[str]) -> str:
    """The message a notebook shows instead of a plot when no rows exist yet (also returned)."""
    cmds = [command] if isinstance(command, str) else list(command)
    msg = f"no {what} yet: run\n" + "\n".join(f"    {c}" for c in cmds)
    print(msg)
    return msg


# --- measured (schema rows) --------------------------------------------------------------------
def measured_files(device_slug: str = "h200") -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(DATA / "measured" / device_slug / "*.csv")))


def load_measured(device_slug: str = "h200", files=None) -> pd.DataFrame | None:
    """Validated rows of every CSV (or ``files``), with ``source_csv`` (path from the repo root)
    and the config JSON expanded into ``cfg_<key>`` columns. ``None`` when there are none."""
    from ..bench.schema import load_results

    from ..bench.schema import COLUMNS

    files = [Path(f) for f in files] if files is not None else measured_files(device_slug)
    frames = []
    for f in files:
        header = pd.read_csv(f, nrows=0).columns.tolist()
        if "status" not in header or len(set(COLUMNS) & set(header)) < len(COLUMNS) // 2:
            # another tool's table (a probe log, a decision cache): not result rows, so not read here
            print(f"[mla] skipping {_rel(f)}: not a result-schema CSV (mla/bench/schema.py)")
            continue
        df = load_results(str(f))  # a schema CSV that fails validation is an error, never skipped
        if len(df):
            df["source_csv"] = _rel(f)
            frames.append(df)
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    cfg = df["config"].map(json.loads)
    keys = sorted({k for c in cfg for k in c})
    for k in keys:
        df[f"cfg_{k}"] = cfg.map(lambda c, k=k: c.get(k))
    return df


LEADERBOARD_CASES = tuple(c.name for c in P.LEADERBOARD)


def ok_rows(df: pd.DataFrame | None, *, leaderboard_only: bool = True, **where) -> pd.DataFrame | None:
    """Rows with status 'ok' matching ``where`` (column=value or column=[values]); None if empty.
    By default only the 8 leaderboard shapes (the extended cases - ragged, 4 queries, 32 heads -
    are measured too but not part of these plots)."""
    if df is None:
        return None
    df = latest_runs(df)
    m = df["status"] == "ok"
    if leaderboard_only:
        m &= df["case"].isin(LEADERBOARD_CASES)
    for col, val in where.items():
        if col not in df:
            return None
        m &= df[col].isin(val) if isinstance(val, (list, tuple, set)) else (df[col] == val)
    out = df[m]
    return out if len(out) else None


RUN_KEY = ["backend", "kv_format", "q_format", "variant", "config", "case"]


def latest_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The newest row of each (backend, kv_format, q_format, variant, config, case) - and manifest
    ``purpose`` where rows are tagged, so a later sweep of the default config does not replace the
    leaderboard run README quotes - whatever its status: a re-run replaces an older measurement of
    the same thing (a newer failure hides an older pass: the current code's verdict counts)."""
    return latest(df, [k for k in RUN_KEY + ["purpose"] if k in df])  # a manifest purpose keeps its own rows


def latest(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The newest row (by timestamp_utc) for each combination of ``keys``: re-runs replace old rows."""
    return df.sort_values("timestamp_utc").groupby(keys, dropna=False, sort=False).tail(1).reset_index(drop=True)


def sources(df: pd.DataFrame | None) -> list[str]:
    return sorted(df["source_csv"].unique()) if df is not None and "source_csv" in df else []


REPLAY_DEVICE = "h200"  # the device of the manifest's headline runs: what replay mode plots


def rows_device(df: pd.DataFrame | None, mode: str = "replay") -> tuple[str, str]:
    """(slug, display name) of the device a notebook's rows came from, for its titles, labels and figure
    names: replay mode plots the manifest's H200 runs (``REPLAY_DEVICE``); live mode the rows it just
    measured, whose ``device_slug`` must name one device (a ValueError names them otherwise). Live mode
    with no rows at all (every command failed or was skipped) name the machine the commands ran on."""
    if mode not in ("replay", "live"):
        raise ValueError(f"unknown mode {mode!r}; choose from ('replay', 'live')")
    if mode == "replay":
        return REPLAY_DEVICE, REPLAY_DEVICE.upper()
    if df is None or not len(df):
        import torch

        from ..bench import provenance as prov

        slug = prov.device_slug("cuda" if torch.cuda.is_available() else "cpu")  # where run_live wrote
        return slug, slug.upper()
    if "device_slug" not in df:
        raise ValueError("live rows have no device_slug column: cannot tell which device measured them")
    slugs = sorted(df["device_slug"].dropna().astype(str).unique())
    if len(slugs) != 1:
        raise ValueError(f"live rows come from {len(slugs)} devices {slugs}; one notebook plots one device's rows")
    return slugs[0], slugs[0].upper()


def rows_origin(mode: str = "replay") -> str:
    """Where a notebook's rows came from, for figure notes and captions: the manifest's runs (replay) or the
    commands this execution just ran (live)."""
    if mode not in ("replay", "live"):
        raise ValueError(f"unknown mode {mode!r}; choose from ('replay', 'live')")
    return "manifest runs only" if mode == "replay" else "this execution's live runs only"


def run_live(command: str | list[str], data_dir: Path | str | None = None) -> list[Path]:
    """Run ``python -m mla bench ...`` command(s) (live mode), each with its ``--out`` replaced by a
    fresh file ``<data>/measured/<device-slug>/<run_id>-live.csv`` (CSV files are never overwritten;
    ``--append`` is dropped) and return those files. Raises if a command fails, except one whose every row cannot run
    on this device (unsupported / unavailable: a line of sm90-only variants elsewhere), whose file is kept."""
    import torch

    from ..bench import provenance as prov

    files = []
    session = os.environ.get("MLA_LIVE_SESSION")  # set by `mla reproduce --mode live`: notebooks share runs
    for cmd in ([command] if isinstance(command, str) else list(command)):
        done = _live_index(session, data_dir).get(cmd) if session else None
        if done and Path(done).exists():
            print(f"[mla] live session {session}: reusing {_rel(Path(done))} for {short_command(cmd)}")
            files.append(Path(done))
            continue
        args = shlex.split(cmd)
        if args[:1] == ["python3"]:
            args[0] = "python"
        if args[:4] != ["python", "-m", "mla", "bench"]:
            raise ValueError(f"not an mla bench command: {cmd!r}")
        if "--out" in args:
            i = args.index("--out")
            del args[i:i + 2]
        args = [a for a in args if a != "--append"]
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        if "--device" in args:
            dev = args[args.index("--device") + 1]
        out = Path(data_dir or DATA) / "measured" / prov.device_slug(dev) / f"{prov.new_run_id(dev)}-live.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, *args[1:], "--out", str(out)]
        rc = subprocess.run(argv, cwd=ROOT).returncode
        if rc and not (rc == 1 and _only_not_runnable_here(out)):  # bench's 1: no row measured (its epilog)
            raise subprocess.CalledProcessError(rc, argv)
        if rc:  # e.g. a sweep line of Gluon (sm90) variants on another GPU: its rows say why, the notebook goes on
            print(f"[mla] live: no row of {short_command(cmd)} can run on this device (kept: {_rel(out)})")
        files.append(out)
        if session:
            _live_index(session, data_dir, add={cmd: str(out)})
    return files


def _only_not_runnable_here(csv: Path) -> bool:
    """Whether a bench CSV exists and each of its rows is 'unsupported' or 'unavailable' on this machine (bench exits 1
    when no row was measured; a row that failed its check or errored is not this)."""
    try:
        status = pd.read_csv(csv, usecols=["status"])["status"]
    except (OSError, ValueError):
        return False
    return len(status) > 0 and status.isin(["unsupported", "unavailable"]).all()


def _live_index(session: str, data_dir=None, add: dict | None = None) -> dict:
    """{command: csv} of one live session (a JSON file beside the measured CSVs; not a result CSV)."""
    path = Path(data_dir or DATA) / "measured" / f".live-{session}.json"
    idx = json.loads(path.read_text()) if path.exists() else {}
    if add:
        idx.update(add)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(idx, indent=1))
    return idx


# --- published and static tables ---------------------------------------------------------------
def load_csvs(folder: Path | str, pattern: str = "*.csv") -> pd.DataFrame | None:
    """Every CSV in a folder, concatenated, with ``source_csv``; None when there are none."""
    folder = Path(folder)
    frames = []
    for f in sorted(folder.glob(pattern)):
        df = pd.read_csv(f)
        if len(df):
            df["source_csv"] = str(f.resolve().relative_to(ROOT)) if f.resolve().is_relative_to(ROOT) else str(f)
            frames.append(df)
    if not frames:
        return None
    df = pd.concat(frames, ignore_index=True)
    for c in df.columns:  # files with other columns leave NaN holes: keep whole numbers integral
        v = df[c]
        if v.dtype.kind == "f" and v.notna().any() and (v.dropna() % 1 == 0).all():
            df[c] = v.astype("Int64")
    return df


FLUSH_PROBE = "measured/h200/issue10/l2-flush-r36a.csv"  # scripts/probes/l2_flush_probe.py, commit 05e8dac
FLUSH_KERNELS = ("measured/h200/issue10/flush-write-r36a.csv", "measured/h200/issue10/flush-read-r36a.csv")


def flush_writeback(probe: str = FLUSH_PROBE, kernels=FLUSH_KERNELS) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(probe rows, kernels): the L2 flush probe's reads, and the default decode kernels of that commit (round 36's,
    not today's) timed under a zeroing flush (``write_us``) and a read flush (``read_us``) from the two runs of the
    same commit, one row per (case, kv_format), with the write run's ``device`` and ``git_commit``; None when the
    files are missing."""
    from ..bench.schema import load_results

    paths = [DATA / probe] + [DATA / k for k in kernels]
    if not all(p.exists() for p in paths):
        return None
    pr = pd.read_csv(paths[0])
    pr["source_csv"] = _rel(paths[0])
    runs = [load_results(p) for p in paths[1:]]
    keys = ["case", "kv_format"]
    cols = keys + ["io_bytes", "variant", "kernel_median_us", "kernel_read_us", "device", "git_commit"]
    w = runs[0].loc[runs[0].status == "ok", cols].rename(columns={"kernel_median_us": "write_us",
                                                                    "kernel_read_us": "write_read_us"})
    r = runs[1].loc[runs[1].status == "ok", keys + ["kernel_median_us", "kernel_read_us"]].rename(
        columns={"kernel_median_us": "read_us", "kernel_read_us": "read_read_us"})
    k = w.merge(r, on=keys)
    k["source_csv"] = ", ".join(_rel(p) for p in paths[1:])
    return pr, k


EVICT_PROBE = "measured/h200/issue10/evict-probe-r47a.csv"  # scripts/probes/evict_probe.py, round 47a


def evict_probe(path: str = EVICT_PROBE) -> pd.DataFrame | None:
    """Round 47's probe, one row per read size: the read's kernel-mode time after the write flush without and with
    the L2 evict_first hint (``write_us``, ``write_ef_us``), after the read flush (``read_us``, ``read_ef_us``), and
    the share of the write-back gap (write - read, no hint) the hint recovered (``recovered``: negative = slower);
    None when the file is missing."""
    f = DATA / path
    if not f.exists():
        return None
    d = pd.read_csv(f)
    d["key"] = d["flush"] + "_" + d["evict"].map({"normal": "us", "evict_first": "ef_us"})
    t = d.pivot_table(index=["size", "nbytes"], columns="key", values="median_us").reset_index()
    t.columns.name = None
    t = t.sort_values("nbytes").reset_index(drop=True)
    t["recovered"] = (t.write_us - t.write_ef_us) / (t.write_us - t.read_us)
    t["source_csv"] = _rel(f)
    return t[["size", "nbytes", "write_us", "write_ef_us", "read_us", "read_ef_us", "recovered", "source_csv"]]


def plain_read_gap(rows: pd.DataFrame | None, probe: str = EVICT_PROBE, *,
                   flush: str = "write") -> pd.DataFrame | None:
    """Each kernel row's time over a plain read of the same bytes: round 47's ``ld.global`` read after the write
    flush (no hint; the kernel mode's flush and timing), interpolated log-log in bytes between the probe's sizes.
    ``flush="read"`` takes the probe's read-flush column instead (for rows timed behind the read flush).

    ``rows``: bench rows (``case``, ``kv_format``, ``variant``, ``io_bytes``, ``kernel_median_us``). Returns one row
    each with ``plain_read_us`` (NaN outside the probe's sizes: no extrapolation), ``gap_us`` = kernel - plain read
    and ``ratio``, plus ``source_csv`` (the rows') and ``probe_csv``; None when either is missing. The probe ran in
    another call than the rows (same device kind, same day for campaign 23): a reference, not a same-run floor."""
    if flush not in ("write", "read"):
        raise ValueError(f"flush must be 'write' or 'read', got {flush!r}")
    t = evict_probe(probe)
    if rows is None or t is None or not len(rows):
        return None
    x, y = np.log(t.nbytes.astype(float).to_numpy()), np.log(t[f"{flush}_us"].astype(float).to_numpy())
    lb = np.log(rows.io_bytes.astype(float).to_numpy())
    read = np.where((lb >= x[0]) & (lb <= x[-1]), np.exp(np.interp(lb, x, y)), np.nan)
    cols = ["case", "kv_format", "variant", "io_bytes"] + [c for c in ("source_csv",) if c in rows.columns]
    out = rows[cols].reset_index(drop=True).copy()
    out["kernel_us"] = rows.kernel_median_us.astype(float).to_numpy()
    out["plain_read_us"] = read
    out["gap_us"] = out.kernel_us - out.plain_read_us
    out["ratio"] = out.kernel_us / out.plain_read_us
    out["probe_csv"] = t.source_csv.iloc[0]
    out["flush"] = flush
    return out


# Rounds 48 and 50 (docs/notes-triton.md, "Round 50"): the program timeline of the default call's plans on the 8
# shapes (scripts/probes/timeline_probe.py), behind the write flush and behind the read flush, and the plain read of
# the same call (scripts/probes/evict_probe.py). The device tool lent an H100 for both calls, not the H200.
TIMELINE_RUNS = {
    "write": ("measured/h100/issue10/timeline-write-r50a.csv.gz", "measured/h100/issue10/timeline-cost-write-r50a.csv"),
    "read": ("measured/h100/issue10/timeline-read-r50a.csv.gz", "measured/h100/issue10/timeline-cost-read-r50a.csv"),
}
TIMELINE_PROBE = "measured/h100/issue10/evict-probe-r50a.csv"
TIMELINE_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r50.sh r50a (on a GPU)",
                "python -m mla timeline data/measured/h100/issue10/timeline-write-r50a.csv.gz "
                "--cost data/measured/h100/issue10/timeline-cost-write-r50a.csv"]


def timeline_run(flush: str = "write", runs: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(stamps, cost) of one committed timeline run: the long per-program CSV (``load_timeline_csv``, with
    ``source_csv``) and its cost CSV (kernel-mode time with the instrument off and on, per case and format).
    ``runs`` maps the flush to the two paths (default :data:`TIMELINE_RUNS`); None when a file is missing."""
    from .timeline import load_timeline_csv

    runs = TIMELINE_RUNS if runs is None else runs
    if flush not in runs:
        raise ValueError(f"no timeline run for flush {flush!r}; have {sorted(runs)}")
    stamps_path, cost_path = (DATA / p for p in runs[flush])
    if not (stamps_path.exists() and cost_path.exists()):
        return None
    stamps = load_timeline_csv(stamps_path)
    stamps["source_csv"] = _rel(stamps_path)
    cost = pd.read_csv(cost_path)
    cost["source_csv"] = _rel(cost_path)
    return stamps, cost


# Round 51 (docs/notes-triton.md, "Round 51"): v154 (work stealing) against v153, on an H100 again: the bench A/B
# (kernel / fresh mode, python -m mla bench's schema) and the timeline of both (scripts/probes/timeline_probe.py)
STEAL_RUN = {"bench": "measured/h100/issue10/steal-r51a.csv", "stamps": "measured/h100/issue10/timeline-r51b.csv.gz",
             "cost": "measured/h100/issue10/timeline-cost-r51b.csv"}
STEAL_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r51.sh r51a; ... r51b (on a GPU)",
             "python -m mla timeline data/measured/h100/issue10/timeline-r51b.csv.gz "
             "--cost data/measured/h100/issue10/timeline-cost-r51b.csv --steal"]


READ_TIMELINE_RUN = {"stamps": "measured/h100/issue10/read-timeline-r51c.csv.gz",
                     "cost": "measured/h100/issue10/read-cost-r51c.csv",
                     "decode": "measured/h100/issue10/v153-same-run-r51c.csv"}
READ_TIMELINE_CMD = ["PYTHONPATH=. python3 scripts/probes/read_timeline_probe.py $OUT/rt --sizes 1216MB,152MB "
                     "--programs 256,528,8448 (on a GPU; scripts/h200_session_r51.sh r51c)"]


def read_timeline_table(run: Mapping | None = None) -> pd.DataFrame | None:
    """Round 51's r51c: a plain read's kernel-mode time and program ends (per probe run, size and program count:
    ``kernel_us``, ``gbs``, ``makespan_us``, ``end_mean_us``, ``spread_us`` = last end - mean end, the median of
    its stamped launches), with the same call's v153 decode row as ``decode_us`` on the 1216 MB rows. ``run``: paths
    under data/ (default :data:`READ_TIMELINE_RUN`); None when a file is missing."""
    from .timeline import load_timeline_csv, steal_table

    paths = {k: DATA / v for k, v in (READ_TIMELINE_RUN if run is None else run).items()}
    if not all(p.exists() for p in paths.values()):
        return None
    cost = pd.read_csv(paths["cost"])
    t = steal_table(load_timeline_csv(paths["stamps"]))
    t = t.rename(columns={"owner_end_mean_us": "end_mean_us", "owner_spread_us": "spread_us"})
    out = cost[["run_id", "case", "variant", "programs", "kernel_median_us", "gbs", "check_ok", "device"]].merge(
        t[["run_id", "case", "variant", "makespan_us", "end_mean_us", "spread_us"]], on=["run_id", "case", "variant"])
    out = out.rename(columns={"kernel_median_us": "kernel_us"})
    decode = pd.read_csv(paths["decode"])
    out["decode_us"] = float(decode["kernel_median_us"].iloc[0])
    out.loc[out["case"] != "read-1216MB", "decode_us"] = float("nan")
    out["source_csv"] = _rel(paths["stamps"])
    return out


def steal_run(run: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """(bench, steal table, stamps) of round 51: the bench rows (v153 / v154 / the default call, ``source_csv``
    added), :func:`mla.analysis.timeline.steal_table` of the timeline run with its kernel-mode times, and the
    timeline's long CSV. ``run`` maps "bench" / "stamps" / "cost" to paths under data/ (default :data:`STEAL_RUN`);
    None when a file is missing."""
    from .timeline import load_timeline_csv, steal_table

    paths = {k: DATA / v for k, v in (STEAL_RUN if run is None else run).items()}
    if not all(p.exists() for p in paths.values()):
        return None
    bench = pd.read_csv(paths["bench"])
    bench["source_csv"] = _rel(paths["bench"])
    stamps = load_timeline_csv(paths["stamps"])
    table = steal_table(stamps, pd.read_csv(paths["cost"]))
    table["source_csv"] = _rel(paths["stamps"])
    return bench, table, stamps


# Round 51's r51d (docs/notes-triton.md, "Round 51"; the same H100 kind, a later call): v156 = v154 with helpers that
# wait for an owner's end and spread over tied victims, v157 = v156 claiming 2 tiles at a time, each beside v153
ROUND51D_RUN = "measured/h100/issue10/steal-r51d.csv"
ROUND51D_PAIRS = (("v153", "v154"), ("v153", "v156"), ("v153", "v157"))
ROUND51D_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r51.sh r51d (on a GPU)"]


def round51d_run(path: str | None = None, mode: str = "kernel") -> pd.DataFrame | None:
    """Round 51's r51d A/B: :func:`variant_ab` of its one bench file (``mode`` "kernel" or "fresh"), v154 / v156 /
    v157 each against v153 in the same file; ``path`` under data/ (default :data:`ROUND51D_RUN`); None when the
    file is missing."""
    f = DATA / (ROUND51D_RUN if path is None else path)
    if not f.exists():
        return None
    return variant_ab(pd.read_csv(f).assign(source_csv=_rel(f)), pairs=ROUND51D_PAIRS, mode=mode)


Q_FIRST_RUN = {  # round 52 (docs/notes-triton.md, "Round 52"): same-run A/Bs, each file a pair of kernels per format
    "bench": ["measured/h100/issue10/qfirst-r52a.csv", "measured/h100/issue10/qfirst-r52b.csv",
              "measured/h100/issue10/cpone-r52c.csv"],
    "stamps": "measured/h100/issue10/timeline-r52a.csv.gz", "cost": "measured/h100/issue10/timeline-cost-r52a.csv"}
Q_FIRST_PAIRS = (("v153", "v158"), ("v152", "v159"), ("v158", "v160"))  # (base, new): round 52's three steps
Q_FIRST_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r52.sh r52a; ... r52b; ... r52c (on a GPU)",
               "python -m mla timeline data/measured/h100/issue10/timeline-r52a.csv.gz "
               "--cost data/measured/h100/issue10/timeline-cost-r52a.csv"]


def variant_ab(bench: pd.DataFrame, pairs=Q_FIRST_PAIRS, mode: str = "kernel") -> pd.DataFrame:
    """Same-run A/B of kernel pairs: for each source file, case, format and (base, new) pair that file timed both
    of, the mean of each kernel's rows (its rounds) in ``mode`` ("kernel" or "fresh"), the difference and ratio,
    the rounds, and whether the two kept the same rel_l2 (the same arithmetic). Rows that failed their check are
    left out; a file never pairs with another's rows (host and clocks move between runs)."""
    ok = bench[(bench["status"] == "ok") & bench["check_ok"].astype(bool)].assign(
        v=lambda d: d["variant"].str.split("_").str[0])
    col = f"{mode}_median_us"
    out = []
    for (src, case, fmt), g in ok.groupby(["source_csv", "case", "kv_format"], sort=False):
        for base, new in pairs:
            a, b = g[g.v == base], g[g.v == new]
            if not len(a) or not len(b):
                continue
            out.append(dict(source_csv=src, case=case, kv_format=fmt, base=base, new=new, rounds=min(len(a), len(b)),
                            base_us=a[col].mean(), new_us=b[col].mean(), delta_us=b[col].mean() - a[col].mean(),
                            ratio=b[col].mean() / a[col].mean(),
                            same_rel_l2=bool(np.allclose(a["rel_l2_fmt"].values[:1], b["rel_l2_fmt"].values[:1],
                                                         rtol=1e-6)),
                            device=g["device"].iloc[0]))
    return pd.DataFrame(out)


Q_FIRST_DEFAULT = {"new": "measured/h100/campaign24-triton.csv",  # the default call with v158 / v159 (r52b)
                   "old": "measured/h100/issue10/timeline-cost-write-r50a.csv"}  # its plan with v153 / v152 (r50a)


def q_first_default_splits(run: Mapping | None = None) -> pd.DataFrame | None:
    """Round 52's kernels at the default call's own split counts, which its A/Bs did not run: campaign 24 (the
    default call with v158 / v159, kernel mode) against round 50's timeline cost rows (the default call's plan with
    v153 / v152, ``kernel_off_median_us``: kernel mode, instrument off, behind the same write flush). Two sessions
    on two H100 units three to four hours apart: the rows whose kernel did not change (v149 / v143) are the
    control for what moved between them (``changed`` False). One row per (case, format) with the same split count
    in both; only checked rows."""
    run = Q_FIRST_DEFAULT if run is None else run
    new_p, old_p = DATA / run["new"], DATA / run["old"]
    if not (new_p.exists() and old_p.exists()):
        return None
    new = pd.read_csv(new_p)
    new = new[(new["status"] == "ok") & new["check_ok"].astype(bool) & (new["kv_format"] != "bf16")].copy()
    new["num_splits"] = [json.loads(c).get("num_splits") for c in new["plan_config"]]
    old = pd.read_csv(old_p)
    old = old[(old["status"].fillna("ok") == "ok") & old["check_off"].astype(bool)]
    m = new.merge(old, on=["case", "kv_format", "num_splits"], suffixes=("", "_old"))
    out = pd.DataFrame({"case": m["case"], "kv_format": m["kv_format"], "num_splits": m["num_splits"],
                        "old": m["variant_old"].str.split("_").str[0], "new": m["variant"].str.split("_").str[0],
                        "old_us": m["kernel_off_median_us"].astype(float), "new_us": m["kernel_median_us"]})
    out["ratio"] = out.new_us / out.old_us
    out["changed"] = out.old != out.new
    out["source_csv"] = _rel(new_p) + " / " + _rel(old_p)
    return out.reset_index(drop=True)


def q_first_run(run: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(A/B, prologue) of round 52: :func:`variant_ab` over its three bench files, and per timeline run (case,
    format, kernel) the median program's Q-ready and first-tile-ready times after its start and the launch's
    makespan (us, :func:`mla.analysis.timeline.program_frame`), with the kernel-mode time of the same call. ``run``
    maps "bench" (a list) / "stamps" / "cost" to paths under data/ (default :data:`Q_FIRST_RUN`); None when a
    file is missing."""
    from .timeline import frames_from_csv, load_timeline_csv

    run = Q_FIRST_RUN if run is None else run
    benches = [DATA / p for p in run["bench"]]
    stamps_p, cost_p = DATA / run["stamps"], DATA / run["cost"]
    if not all(p.exists() for p in [*benches, stamps_p, cost_p]):
        return None
    bench = pd.concat([pd.read_csv(p).assign(source_csv=_rel(p)) for p in benches], ignore_index=True)
    stamps = load_timeline_csv(stamps_p)
    cost = pd.read_csv(cost_p)
    rows = []
    for rid, g in stamps.groupby("run_id", sort=False):
        for (case, variant, fmt, _), f in frames_from_csv(g).items():
            rows.append(dict(run_id=rid, case=case, kv_format=fmt, variant=variant, repeat=_,
                             q_ready_us=(f.q_ready_us - f.start_us).median(),
                             first_tile_us=(f.first_tile_us - f.start_us).median(),
                             makespan_us=f.end_us.max() - f.start_us.min()))
    pro = pd.DataFrame(rows).groupby(["case", "kv_format", "variant"], sort=False)[
        ["q_ready_us", "first_tile_us", "makespan_us"]].median().reset_index()
    k = cost.set_index(["case", "kv_format", "variant"])["kernel_off_median_us"]
    pro["kernel_us"] = [k.get((c, f, v), np.nan) for c, f, v in zip(pro.case, pro.kv_format, pro.variant)]
    pro["kernel"] = pro["variant"].str.split("_").str[0]
    pro["source_csv"] = _rel(stamps_p)
    return variant_ab(bench), pro


ROUND53_RUN = {  # round 53 (docs/notes-triton.md, "Round 53"): same-run A/Bs at the default call's split counts (H100)
    "bench": ["measured/h100/issue10/qfirst-default-r53a.csv",  # v153 / v160, v152 / v159 (round 52's open A/B)
              "measured/h100/issue10/stages-r53b.csv",  # 3 / 4 / 5-stage rings: v161-v163 (fp8), v164 / v165 (MXFP4)
              "measured/h100/issue10/fence-r53d.csv",  # ISSUE_LATE (v166 / v167), KV_TMA (v168, v169 with 3 stages)
              "measured/h100/issue10/tma-long-r53e.csv",  # v160 / v168 / v169 at bs256, the second round
              "measured/h100/issue10/ws-vs-tma-r53f.csv"],  # v149 (the fp8 warp-specialized kernel) / v169, bs256-kv8192
    "timelines": [("measured/h100/issue10/timeline-r53c.csv.gz", "measured/h100/issue10/timeline-cost-r53c.csv"),
                  ("measured/h100/issue10/timeline-r53d.csv.gz", "measured/h100/issue10/timeline-cost-r53d.csv")]}
ROUND53_PAIRS = (("v153", "v160"), ("v152", "v159"), ("v160", "v161"), ("v160", "v162"), ("v160", "v163"),
                 ("v159", "v164"), ("v159", "v165"), ("v160", "v166"), ("v159", "v167"), ("v160", "v168"),
                 ("v160", "v169"), ("v168", "v169"), ("v149", "v169"))
ROUND53_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r53.sh r53a; ... r53b; ... r53c; ... r53d; "
               "... r53e (on a GPU)",
               "python -m mla timeline data/measured/h100/issue10/timeline-r53c.csv.gz "
               "--cost data/measured/h100/issue10/timeline-cost-r53c.csv"]


def round53_run(run: Mapping | None = None, mode: str = "kernel") -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(A/B, phases) of round 53: :func:`variant_ab` over its bench files (``mode`` "kernel" or "fresh"), each pair
    within one file, and :func:`mla.analysis.timeline.summary_table` of its two timeline runs (v160 / v163 at
    bs32-kv1024 / 4 splits and bs4-kv8192 / 32, v168 at bs32-kv1024 / 4 and bs64-kv1024 / 2: one program an SM, 4-8
    tiles each) with each row's kernel-mode time. ``run`` maps "bench" (a list) / "timelines" (a list of (stamps,
    cost)) to paths under data/ (default :data:`ROUND53_RUN`); None when a file is missing."""
    from .timeline import load_timeline_csv, summary_table

    run = ROUND53_RUN if run is None else run
    benches = [DATA / p for p in run["bench"]]
    tls = [(DATA / a, DATA / b) for a, b in run["timelines"]]
    if not all(p.exists() for p in [*benches, *(p for t in tls for p in t)]):
        return None
    bench = pd.concat([pd.read_csv(p).assign(source_csv=_rel(p)) for p in benches], ignore_index=True)
    phases = []
    for stamps_p, cost_p in tls:
        cost = pd.read_csv(cost_p)
        kern = {(r.case, r.variant, r.kv_format): float(r.kernel_off_median_us) for r in cost.itertuples()}
        t = summary_table(load_timeline_csv(stamps_p), kern)
        phases.append(t.assign(kernel=t["variant"].str.split("_").str[0], source_csv=_rel(stamps_p)))
    cols = ["case", "kv_format", "kernel", "programs", "median_prologue_us", "median_first_wait_us",
            "median_per_tile_us", "makespan_us", "kernel_us", "source_csv"]
    return variant_ab(bench, pairs=ROUND53_PAIRS, mode=mode), pd.concat(phases, ignore_index=True)[cols]


ROUND54_RUN = {  # round 54 (docs/notes-triton.md, "Round 54"): the fp8 TMA-tile kernels at the long programs (H100)
    "bench": ["measured/h100/issue10/tma-long-r54a.csv",  # v149 / v160 / v168 / v169 at the default's split counts
              "measured/h100/issue10/tma-default-r54b.csv",  # the default call, kv_tma=None / False (the rule's A/B)
              "measured/h100/issue10/mx-ws-vs-one-r54d.csv",  # MXFP4: v143 (warp-specialized) / v159 at 32-64 tiles
              "measured/h100/issue10/tma-rule-edges-r54e.csv"],  # bs128-kv8192 (one wave), bs256-kv4096 (64 tiles)
    "timeline": ("measured/h100/issue10/timeline-r54c.csv.gz", "measured/h100/issue10/timeline-cost-r54c.csv")}
ROUND54_PAIRS = (("v149", "v168"), ("v149", "v169"), ("v160", "v168"), ("v160", "v169"), ("v168", "v169"),
                 ("v149", "v160"), ("v143", "v159"))
ROUND54_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r54.sh r54a; ... r54b; ... r54c (on a GPU)",
               "python -m mla timeline data/measured/h100/issue10/timeline-r54c.csv.gz "
               "--cost data/measured/h100/issue10/timeline-cost-r54c.csv"]


def round54_run(run: Mapping | None = None, mode: str = "kernel") -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(A/B, phases) of round 54: :func:`variant_ab` over its bench files (``mode`` "kernel" or "fresh"), each pair
    within one file, with ``pct`` (the change in percent), and :func:`mla.analysis.timeline.summary_table` of its
    timeline run (v149 / v160 / v168 at bs32-kv8192, 4 splits: one program an SM, 32 tiles each) with each row's
    kernel-mode time. ``run`` maps "bench" (a list) / "timeline" ((stamps, cost)) to paths under data/ (default
    :data:`ROUND54_RUN`); None when a file is missing."""
    from .timeline import load_timeline_csv, summary_table

    run = ROUND54_RUN if run is None else run
    benches = [DATA / p for p in run["bench"]]
    stamps_p, cost_p = (DATA / p for p in run["timeline"])
    if not all(p.exists() for p in [*benches, stamps_p, cost_p]):
        return None
    bench = pd.concat([pd.read_csv(p).assign(source_csv=_rel(p)) for p in benches], ignore_index=True)
    ab = variant_ab(bench, pairs=ROUND54_PAIRS, mode=mode)
    cost = pd.read_csv(cost_p)
    kern = {(r.case, r.variant, r.kv_format): float(r.kernel_off_median_us) for r in cost.itertuples()}
    t = summary_table(load_timeline_csv(stamps_p), kern)
    cols = ["case", "kv_format", "kernel", "programs", "median_prologue_us", "median_first_wait_us",
            "median_per_tile_us", "median_epilogue_us", "makespan_us", "kernel_us", "outside_us", "source_csv"]
    t = t.assign(kernel=t["variant"].str.split("_").str[0], source_csv=_rel(stamps_p))
    return ab.assign(pct=100 * (ab["ratio"] - 1)), t[[c for c in cols if c in t.columns]]


ROUND55_RUN = {  # round 55 (docs/notes-triton.md, "Round 55"): MXFP4's consumers merged in shared memory (H100)
    "bench": ["measured/h100/issue10/pair-merge-r55a.csv"],  # v143 / v170 at the default's program counts
    "splits": "measured/h100/issue10/tma-splits-r55c.csv",  # fp8 v168 at the rule's split count and twice it
    "timelines": [("measured/h100/issue10/timeline-r55a.csv.gz",  # v143 / v170 at bs32-kv8192, 4 programs
                   "measured/h100/issue10/timeline-cost-r55a.csv"),
                  ("measured/h100/issue10/timeline-r55e.csv.gz",  # v143 / v170 at bs256-kv8192, one program
                   "measured/h100/issue10/timeline-cost-r55e.csv")],
    "campaigns": ("measured/h100/campaign27-triton.csv",  # the default call before v170 (r54b)
                  "measured/h100/campaign28-triton.csv")}  # with v170 the MXFP4 default from 32 tiles (r55b)
ROUND55_PAIRS = (("v143", "v170"),)
ROUND55_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r55.sh r55a (on a GPU; r55b-r55e: inline, "
               "in data/measured/h100/issue10/r55*.log)",
               "python -m mla timeline data/measured/h100/issue10/timeline-r55a.csv.gz "
               "--cost data/measured/h100/issue10/timeline-cost-r55a.csv"]


def best_format_table(paths, mode: str = "kernel") -> pd.DataFrame:
    """Per leaderboard case, each campaign file's best checked row in ``mode`` (its format, kernel and time), the
    files side by side (columns suffixed by the file's stem), and a last row ``geomean`` over the cases."""
    from ..bench.stats import geomean

    col = f"{mode}_median_us"
    out = None
    for p in paths:
        d = pd.read_csv(DATA / p)
        d = d[(d["status"] == "ok") & d["check_ok"].astype(bool) & d["case"].isin(LEADERBOARD_CASES)]
        b = d.loc[d.groupby("case")[col].idxmin(), ["case", "kv_format", "variant", col]]
        b = b.assign(variant=b["variant"].str.split("_").str[0]).set_index("case")
        tag = Path(p).name.split("-")[0]
        b.columns = [f"{c}_{tag}" for c in ("format", "kernel", "us")]
        out = b if out is None else out.join(b, how="outer")
    us = [c for c in out.columns if c.startswith("us_")]
    out = out.loc[[c for c in LEADERBOARD_CASES if c in out.index]]
    g = pd.DataFrame({c: [geomean(out[c])] if c in us else [""] for c in out.columns}, index=["geomean"])
    return pd.concat([out, g])


def round55_run(run: Mapping | None = None, mode: str = "kernel"):
    """(A/B, split counts, phases, campaigns) of round 55: :func:`variant_ab` of v143 / v170 (``pct``: the change in
    percent, ``mode`` "kernel" or "fresh"); fp8 v168's rows at the rule's split count and twice it (``pct`` against
    the rule's, the smaller count); :func:`mla.analysis.timeline.summary_table` of both timelines with each row's
    kernel-mode time with the instrument on (``kernel_us``, ``outside_us``) and off (``kernel_off_us``);
    :func:`best_format_table` of campaigns 27 and 28. ``run`` maps "bench", "splits", "timelines", "campaigns" to
    paths under data/ (default :data:`ROUND55_RUN`); None when a file is missing."""
    run = ROUND55_RUN if run is None else run
    benches = [DATA / p for p in run["bench"]]
    splits_p = DATA / run["splits"]
    tls = [(DATA / a, DATA / b) for a, b in run["timelines"]]
    camps = [DATA / p for p in run["campaigns"]]
    if not all(p.exists() for p in [*benches, splits_p, *camps, *(x for t in tls for x in t)]):
        return None
    bench = pd.concat([pd.read_csv(p).assign(source_csv=_rel(p)) for p in benches], ignore_index=True)
    ab = variant_ab(bench, pairs=ROUND55_PAIRS, mode=mode)
    sp = pd.read_csv(splits_p)
    sp = sp[(sp["status"] == "ok") & sp["check_ok"].astype(bool)]
    sp = sp.assign(kernel=sp["variant"].str.split("_").str[0],
                   programs=[json.loads(c)["num_splits"] for c in sp["config"]], us=sp[f"{mode}_median_us"])
    sp = sp.assign(pct=100 * (sp["us"] / sp.groupby("case")["us"].transform(
        lambda u: u[sp.loc[u.index, "programs"].idxmin()]) - 1))
    sp = sp[["case", "kv_format", "kernel", "programs", "us", "pct"]].assign(source_csv=_rel(splits_p))
    return (ab.assign(pct=100 * (ab["ratio"] - 1)), sp.reset_index(drop=True), _timeline_phases(tls),
            best_format_table(run["campaigns"], mode))


PHASE_COLUMNS = ["case", "kv_format", "kernel", "programs", "max_co_resident", "median_prologue_us",
                 "median_first_wait_us", "median_per_tile_us", "median_epilogue_us", "makespan_us", "kernel_us",
                 "outside_us", "kernel_off_us", "source_csv"]


def _timeline_phases(tls) -> pd.DataFrame:
    """:func:`mla.analysis.timeline.summary_table` of each (stamps, cost) pair of paths, one table: each row's
    kernel-mode time with the instrument on (``kernel_us``, ``outside_us``) and off (``kernel_off_us``)."""
    from .timeline import load_timeline_csv, summary_table

    phases = []
    for stamps_p, cost_p in tls:
        cost = pd.read_csv(cost_p)
        # (the instrumented launches' own time, as `python -m mla timeline --cost` takes it: at bs256-kv8192 the
        # stamps cost v143 16 us, v170 4 us, so the instrument-off time would put the makespan past the kernel)
        kern = {(r.case, r.variant, r.kv_format): float(r.kernel_on_median_us) for r in cost.itertuples()}
        t = summary_table(load_timeline_csv(stamps_p), kern)
        off = {(r.case, r.variant): float(r.kernel_off_median_us) for r in cost.itertuples()}
        t = t.assign(kernel=t["variant"].str.split("_").str[0], source_csv=_rel(stamps_p),
                     kernel_off_us=[off[(c, v)] for c, v in zip(t["case"], t["variant"])])
        phases.append(t[[c for c in PHASE_COLUMNS if c in t.columns]])
    return pd.concat(phases, ignore_index=True)


ROUND56_RUN = {  # round 56 (docs/notes-triton.md, "Round 56"): the default call's timeline at bs256-kv1024 (H100)
    "timeline": ("measured/h100/issue10/timeline-r56a.csv.gz",  # fp8 v160 / MXFP4 v159, 256 programs, 16 tiles
                 "measured/h100/issue10/timeline-cost-r56a.csv"),
    "one_per_sm": ("measured/h100/issue10/timeline-r54c.csv.gz",  # fp8 v160 at bs32-kv8192: one program an SM
                   "measured/h100/issue10/timeline-cost-r54c.csv")}
ROUND56_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. H100_TIMELINE=1 bash scripts/h200_session_r56.sh r56a (an H100)",
               "python -m mla timeline data/measured/h100/issue10/timeline-r56a.csv.gz "
               "--cost data/measured/h100/issue10/timeline-cost-r56a.csv"]


def round56_run(run: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(phases, read gap) of round 56's timeline: :func:`_timeline_phases` of the default call at bs256-kv1024 (two
    programs an SM) with fp8 v160's rows at bs32-kv8192 (one program an SM) beside it, and ``per_tile_per_sm_us``
    (the median time a tile over the programs an SM shares: the SM's own rate); :func:`same_run_read_gap` of the
    bs256-kv1024 rows against round 50's plain read (another H100). ``run`` maps "timeline" / "one_per_sm" to
    (stamps, cost) paths under data/ (default :data:`ROUND56_RUN`); None when a file is missing."""
    run = ROUND56_RUN if run is None else run
    tls = [tuple(DATA / p for p in run[k]) for k in ("timeline", "one_per_sm")]
    if not all(p.exists() for t in tls for p in t):
        return None
    ph = _timeline_phases(tls)
    ph = ph[(ph["case"] != "bs32-kv8192-q1-h16") | (ph["kernel"] == "v160")].reset_index(drop=True)
    ph = ph.assign(per_tile_per_sm_us=ph["median_per_tile_us"] / ph["max_co_resident"])
    return ph, same_run_read_gap(pd.read_csv(tls[0][1]))


ROUND62_RUN = {  # round 62 (docs/notes-triton.md, "Round 62"): the head's default call on an H100, FlashInfer beside it
    "before": "measured/h100/campaign28-triton.csv",  # c2e354f, round 55's defaults (r55b)
    "head": "measured/h100/campaign30-triton.csv",  # 2fee4a0: the same kernels after rounds 59-61's validation changes
    "flashinfer": "measured/h100/campaign30-flashinfer.csv"}  # the same call, same machine
ROUND62_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. OUT=$OUT bash -c 'source scripts/_device_steps.sh; session_begin r62h; "
               "install_flashinfer; session_campaign 30 330 flashinfer triton' (an H100; data/measured/h100/issue10/r62h.log)"]
ROUND62_MODES = ("kernel", "fresh", "cold")


def round62_run(run: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(same kernels, geomeans) of round 62's campaign 30 (an H100, the head's default call) against campaign 28 (round
    55's defaults, another H100 session). Same kernels: every (case, format, kernel) checked in both, its kernel-mode
    and fresh-mode times in each and ``kernel_ratio`` / ``fresh_ratio`` (30 over 28). Geomeans: per campaign and
    backend, the best-format geomean over the 8 leaderboard shapes (:func:`best_format_table`) in each of
    :data:`ROUND62_MODES`. ``run`` maps "before" / "head" / "flashinfer" to paths under data/ (default
    :data:`ROUND62_RUN`); None when a file is missing."""
    run = ROUND62_RUN if run is None else run
    if not all((DATA / p).exists() for p in run.values()):
        return None
    cols = ["case", "kv_format", "variant", "kernel_median_us", "fresh_median_us"]

    def checked(p):
        d = pd.read_csv(DATA / p)
        return d.loc[(d["status"] == "ok") & d["check_ok"].astype(bool), cols]

    same = checked(run["before"]).merge(checked(run["head"]), on=cols[:3], suffixes=("_before", "_head"))
    same = same.assign(kernel=same["variant"].str.split("_").str[0],
                       kernel_ratio=same["kernel_median_us_head"] / same["kernel_median_us_before"],
                       fresh_ratio=same["fresh_median_us_head"] / same["fresh_median_us_before"])
    geo = pd.DataFrame([{"campaign": Path(p).name.split("-")[0], "backend": Path(p).stem.split("-")[1],
                         **{m: float(best_format_table([p], m).iloc[-1, -1]) for m in ROUND62_MODES},
                         "source_csv": p} for p in (run["before"], run["head"], run["flashinfer"])])
    return same.drop(columns="variant"), geo


ROUND63_RUN = {  # round 63 (docs/notes-triton.md, "Round 63"): fp8 v168's two reduces on an H100, the probe's spread
    "ab": "measured/h100/issue10/fused-tma-r63a.csv",  # tile reduce / fused, bs32 (4 splits) / bs64 (2), two rounds
    "spread": "measured/h100/issue10/probe-spread-r63c.csv",  # the default fp8 call in 4 processes, one card
    "timelines": {"tile": ("measured/h100/issue10/timeline-r63b-tile.csv.gz",  # bs32-kv8192, 4 splits
                           "measured/h100/issue10/timeline-cost-r63b-tile.csv"),
                  "fused": ("measured/h100/issue10/timeline-r63b-fused.csv.gz",
                            "measured/h100/issue10/timeline-cost-r63b-fused.csv")}}
ROUND63_CMD = ["MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r63.sh r63a (an H100)",
               "MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r63.sh r63b (its H100 part)",
               "MLA_GIT_COMMIT=<sha> PYTHONPATH=. bash scripts/h200_session_r63.sh r63c (its H100 part)"]


def round63_run(run: Mapping | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """(A/B, phases, spread) of round 63: fp8 v168 with its splits merged by the separate tile reduce (two launches, the
    default) or by the one-launch fused reduce (each element's last program merges). A/B: one row per bench run (a
    round: both reduces, same process, same read probe) and case, with each reduce's kernel- and fresh-mode time,
    ``kernel_pct`` / ``fresh_pct`` (fused over tile, %), the run's ``read_gbs`` and the tile reduce's
    ``tile_pct_read`` (issue 10's measure). Only rows whose check passed. Phases: :func:`_timeline_phases` of the two
    timelines at bs32-kv8192, ``reduce`` naming each and ``launches`` its cost row's launch count. Spread: the default
    fp8 call's checked rows from four bench processes on one card (each its own read probe): ``run_id``, ``case``,
    kernel- and fresh-mode time, ``read_gbs``,
    ``kernel_pct_read`` / ``fresh_pct_read`` (issue 10's measure), ``graph_floor_us``. ``run`` maps "ab" / "spread" to
    paths and "timelines" to {reduce: (stamps, cost)} under data/ (default :data:`ROUND63_RUN`); None when a file is
    missing."""
    run = ROUND63_RUN if run is None else run
    tls = {k: tuple(DATA / p for p in v) for k, v in run["timelines"].items()}
    if not all((DATA / run[k]).exists() for k in ("ab", "spread")) or not all(
            p.exists() for t in tls.values() for p in t):
        return None
    d = pd.read_csv(DATA / run["ab"])
    d = d[(d["status"] == "ok") & d["check_ok"].astype(bool)]
    d = d.assign(reduce=["fused" if json.loads(c)["fused_reduce"] else "tile" for c in d["plan_config"]])
    rows = []
    for (rid, case), g in d.groupby(["run_id", "case"], sort=False):
        r = g.set_index("reduce")
        if not {"tile", "fused"} <= set(r.index):
            continue
        rows.append(dict(run_id=rid, case=case, splits=json.loads(r.loc["tile", "plan_config"])["num_splits"],
                         tile_us=r.loc["tile", "kernel_median_us"], fused_us=r.loc["fused", "kernel_median_us"],
                         kernel_pct=100 * (r.loc["fused", "kernel_median_us"] / r.loc["tile", "kernel_median_us"] - 1),
                         fresh_pct=100 * (r.loc["fused", "fresh_median_us"] / r.loc["tile", "fresh_median_us"] - 1),
                         read_gbs=r.loc["tile", "read_gbs"], tile_pct_read=r.loc["tile", "kernel_pct_read_bw"],
                         source_csv=run["ab"]))
    # (each cost row's launches says which reduce ran: 2 the tile reduce's, 1 the fused one's)
    ph = _timeline_phases(list(tls.values())).assign(
        reduce=list(tls), launches=[int(pd.read_csv(c)["launches"].iloc[0]) for _, c in tls.values()])
    sp = pd.read_csv(DATA / run["spread"])
    sp = sp[(sp["status"] == "ok") & sp["check_ok"].astype(bool)]
    sp = sp.rename(columns={"kernel_median_us": "kernel_us", "fresh_median_us": "fresh_us",
                            "kernel_pct_read_bw": "kernel_pct_read", "fresh_pct_read_bw": "fresh_pct_read"})
    sp = sp[["run_id", "case", "kernel_us", "fresh_us", "read_gbs", "kernel_pct_read", "fresh_pct_read",
             "graph_floor_us"]].assign(source_csv=run["spread"])
    return pd.DataFrame(rows), ph, sp.reset_index(drop=True)


_LIVE_H100 = "measured/h100/live-2026-12-07"
ROUND70_RUN = {  # round 70 (docs/notes-triton.md, "Round 70"): notebook 04's five variant lines, live, one H100 call
    "sweeps": tuple(f"{_LIVE_H100}/20261207T{n}-live.csv" for n in (
        "225134Z-h100-3653", "225217Z-h100-c3d7", "225325Z-h100-2dff",  # bf16 / fp8 / MXFP4, v1-v37
        "225443Z-h100-7432", "225542Z-h100-d2cc")),  # fp8 v75-v169, MXFP4 v86-v170: the default call's kernels
    "default": f"{_LIVE_H100}/20261207T162825Z-h100-bfa3-live.csv"}  # round 67's live leaderboard run, Triton
ROUND70_CMD = ["MLA_GIT_COMMIT=<sha> TOTAL_BUDGET=560 ONLY=04 PYTHONPATH=. bash scripts/h200_session_r65.sh r65a "
               "(an H100: notebook 04 in live mode, its commands in scripts/campaign_sweeps.txt)"]
ROUND71_RUN = {  # round 71 (docs/notes-triton.md, "Round 71"): the two later-generation lines again, num_splits=kernel
    "sweeps": ROUND70_RUN["sweeps"][:3] + tuple(f"measured/h100/issue10/variants-kernel-r71a-{f}.csv"
                                                 for f in ("fp8", "mxfp4")),
    "default": ROUND70_RUN["default"],
    "before": ROUND70_RUN["sweeps"][3:]}  # the same two lines at the bench's two programs an SM (round 70)
ROUND71_CMD = ["MLA_GIT_COMMIT=<sha> TOTAL_BUDGET=420 PYTHONPATH=. bash scripts/h200_session_r71.sh r71a "
               "(an H100: the lines of scripts/campaign_sweeps.txt that pass num_splits=kernel)"] + ROUND70_CMD


def h100_variant_run(run: Mapping | None = None, mode: str = "kernel") -> tuple[dict, pd.DataFrame] | None:
    """(tables, default) of notebook 04's five variant lines on H100s: by default :data:`ROUND71_RUN`, the three early
    lines (bf16 / fp8 / MXFP4 v1-v37) from round 70's live call (commit a67bcd9) and the two later-generation lines
    (swap-AB and Gluon, v75-v170) from round 71's call at ``num_splits=kernel``, each kernel at the split count the
    default call's rules give it (the early, portable kernels get the same count either way); :data:`ROUND70_RUN` is
    round 70's one call, every kernel at the bench's two programs an SM. Tables: KV format -> case x variant of
    ``mode`` times (:func:`variant_sweep`: checked rows). Default: the default call's checked rows at the same shapes
    from round 67's live leaderboard run (another H100 session, 0c673ce, the same kernels): ``case``, ``kv_format``,
    ``kernel`` (variant's short name), ``splits``, ``us``. ``run`` maps "sweeps" to paths and "default" to a path under
    data/; None when a file is missing, a ValueError when the default file has no default-call rows."""
    run = ROUND71_RUN if run is None else run
    paths = [DATA / p for p in (*run["sweeps"], run["default"])]
    if not all(p.exists() for p in paths):
        return None
    df = load_measured(files=paths[:-1])
    tabs = {f: t for f in P.KV_FORMATS if (t := variant_sweep(df, f, mode)) is not None}
    d = default_rows(load_measured(files=paths[-1:]))
    if d is None:
        raise ValueError(f"{run['default']} holds no checked default-call Triton rows (config without variant / num_splits)")
    d = d[d["case"].isin({c for t in tabs.values() for c in t.index})]
    default = pd.DataFrame({"case": d["case"], "kv_format": d["kv_format"], "kernel": d["variant"].str.split("_").str[0],
                            "splits": d["heuristic_splits"], "us": d[f"{mode}_median_us"], "source_csv": d["source_csv"]})
    return tabs, default.reset_index(drop=True)


def split_count_moves(run: Mapping | None = None, mode: str = "kernel") -> pd.DataFrame | None:
    """What ``num_splits=kernel`` changed in a variant sweep: the later-generation lines at the bench's count
    (``run["before"]``, round 70) against the same lines at the rules' count (the last two ``run["sweeps"]``, round 71),
    one row per (case, KV format, kernel) measured in both with its check passing: ``kernel`` (short name),
    ``splits_before`` / ``splits_after`` (partials a batch element, from ``plan_config``), ``us_before`` /
    ``us_after`` (``mode`` medians), ``change_pct``, ``moved`` (the split count differs), ``source_before`` /
    ``source_after``. None when a file is missing."""
    run = ROUND71_RUN if run is None else run
    parts = {"before": run["before"], "after": run["sweeps"][-len(run["before"]):]}
    if not all((DATA / p).exists() for ps in parts.values() for p in ps):
        return None
    got = {}
    for key, ps in parts.items():
        d = pd.concat([pd.read_csv(DATA / p).assign(source=p) for p in ps], ignore_index=True)
        d = d[(d["status"] == "ok") & d["check_ok"].astype(str).eq("True")]
        got[key] = pd.DataFrame({"case": d["case"], "kv_format": d["kv_format"],
                                 "kernel": d["variant"].str.split("_").str[0],
                                 "splits": d["plan_config"].map(_plan_num_splits), "us": d[f"{mode}_median_us"],
                                 "source": d["source"]})
    m = got["before"].merge(got["after"], on=["case", "kv_format", "kernel"], suffixes=("_before", "_after"))
    m["change_pct"] = 100 * (m["us_after"] / m["us_before"] - 1)
    m["moved"] = m["splits_before"] != m["splits_after"]
    m["_n"] = m["kernel"].str.extract(r"v(\d+)", expand=False).astype(int)  # (v86 before v117)
    return m.sort_values(["case", "kv_format", "_n"]).drop(columns="_n").reset_index(drop=True)


def same_run_read_gap(cost: pd.DataFrame | None, probe: str = TIMELINE_PROBE, *,
                      flush: str = "write") -> pd.DataFrame | None:
    """The timeline run's kernel-mode time with the instrument off (``kernel_off_median_us``, checked) over the same
    call's plain read of the same bytes behind the same flush (:func:`plain_read_gap`): a same-run reference, unlike
    campaign 23's against round 47's probe. Only rows whose status is ok and whose uninstrumented graph's check
    passed."""
    if cost is None or not len(cost):
        return None
    ok = cost[(cost["status"].fillna("ok") == "ok") & cost["check_off"].astype(bool)].copy()
    if not len(ok):
        return None
    ok["io_bytes"] = [P.io_bytes(P.case_from_name(c), f) for c, f in zip(ok.case, ok.kv_format)]
    ok["kernel_median_us"] = ok["kernel_off_median_us"].astype(float)
    return plain_read_gap(ok, probe, flush=flush)


TRANSIENT_RUNS = {  # round 42 (docs/notes-triton.md, "Round 42"): which timing came where in its process
    "bench": "measured/h200/gen3/rows-r42b.csv",  # one bench process, three rows of one kernel; then the read flush
    "bench_cases": "measured/h200/gen3/order-r42a.csv",  # four bench processes, bs256-kv8192 the first row of its case
    "probe_order": "measured/h200/gen3/bench-order-r42b.csv",  # the bench's order inside the probe, three repeats
    "probe_placement": "measured/h200/gen3/placement-r42a.csv",  # the KV at 11 offsets of a pool made after the refs
}
TRANSIENT_FIRST = "first timing after a case's references"
TRANSIENT_LATER = "later timing, same process and inputs"
TRANSIENT_PLACED = "placement probe (a pool allocated after the references)"
TRANSIENT_READ = "first timing after the references, read flush"


def first_row_transient(runs: dict | None = None) -> pd.DataFrame | None:
    """Round 42's bs256-kv8192 fp8 timings, one row each, labelled by where the timing sat in its process
    (``position``: TRANSIENT_FIRST / TRANSIENT_LATER / TRANSIENT_PLACED / TRANSIENT_READ), with ``variant``
    (v141 / v149), ``kernel_us``, ``source_csv``, ``git_commit``, ``timestamp_utc``. Only rows whose check
    passed. None when a file is missing."""
    runs = runs or TRANSIENT_RUNS
    paths = {k: DATA / v for k, v in runs.items()}
    if not all(p.exists() for p in paths.values()):
        return None
    out = []

    def add(d: pd.DataFrame, position, key) -> None:
        d = d[d.check_ok.astype(str) == "True"]
        out.append(pd.DataFrame(dict(position=position, variant=d.variant.str.extract(r"^(v\d+)", expand=False),
                                     kernel_us=d.kernel_median_us.astype(float), source_csv=_rel(paths[key]),
                                     git_commit=d.git_commit, timestamp_utc=d.timestamp_utc)))

    for key in ("bench", "bench_cases"):
        d = pd.read_csv(paths[key])
        d = d[d.case.str.startswith("bs256-kv8192") & (d.kv_format == "fp8")]
        first = ~d.duplicated(["run_id", "case"])  # rows are in the order they ran
        read = d.l2_flush.astype(str).str.startswith("read")
        add(d[first & ~read], TRANSIENT_FIRST, key)
        add(d[first & read], TRANSIENT_READ, key)
        add(d[~first], TRANSIENT_LATER, key)
    d = pd.read_csv(paths["probe_order"])
    first = (d.repeat == 0) & ~d.duplicated(["run_id", "repeat"])
    add(d[first], TRANSIENT_FIRST, "probe_order")
    add(d[~first], TRANSIENT_LATER, "probe_order")
    add(pd.read_csv(paths["probe_placement"]), TRANSIENT_PLACED, "probe_placement")
    return pd.concat(out, ignore_index=True)


def load_published() -> pd.DataFrame | None:
    return load_csvs(DATA / "published")


# The sm90 tables: triton.csv from the venv's newest triton (today's code as CI compiles it), triton-<ver>.csv from a
# device image's triton (3.6.0: the one the H200 / H100 timings ran with). Both hold the same kernels, so a
# concatenation would list each twice; a caller takes one compiler.
DEVICE_TRITON = {"sm90": "3.6.0"}


def load_static(target: str = "gfx950", triton: str | None = "device") -> pd.DataFrame | None:
    """The static ISA rows of ``data/static/<target>/`` (python -m mla isa --write, scripts/sm90_isa_on_device.sh).

    ``triton`` picks the Triton compiler where the folder holds more than one table of the same kernels (sm90):
    "device" (default) the device image's (``DEVICE_TRITON``: the compiler the measured times ran with), "newest"
    the venv's (``triton.csv``), or a version ("3.6.0"). A target with one Triton table (gfx950: triton.csv beside
    the HIP tables) returns every table whatever ``triton`` says."""
    folder = DATA / "static" / target
    if not any(folder.glob("triton-*.csv")):
        return load_csvs(folder)
    want = DEVICE_TRITON.get(target) if triton == "device" else triton
    if want in (None, "newest"):
        chosen = "triton.csv"
    else:
        chosen = f"triton-{want}.csv"
        if not (folder / chosen).exists():
            raise ValueError(f"no {target} static table for triton {want}: {folder} has "
                             f"{sorted(p.name for p in folder.glob('triton*.csv'))}")
    keep = [p.name for p in folder.glob("*.csv") if not p.name.startswith("triton") or p.name == chosen]
    frames = [load_csvs(folder, name) for name in sorted(keep)]
    frames = [f for f in frames if f is not None]
    return pd.concat(frames, ignore_index=True) if frames else None


def published_times(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """Published per-case latencies in one shape: ``case``, ``kv_format``, ``time_us``, ``label``,
    ``approx``, ``citation``, ``device``, ``source_csv``. Reads the two layouts of data/published/
    (see its README): wide (``latency_us``, ``impl``, ``kv_dtype``, ``approx``) and long (``metric``
    == 'latency_us', ``value``, ``config``). Rows without a case (static counts, unstated metrics)
    are skipped. None when nothing qualifies."""
    if df is None or "case" not in df:
        return None
    parts = []
    if "latency_us" in df:
        w = df[df["latency_us"].notna() & df["case"].notna()]
        if len(w):
            parts.append(pd.DataFrame(dict(
                case=w["case"], kv_format=w.get("kv_dtype", pd.Series("?", index=w.index)).fillna("?"),
                time_us=pd.to_numeric(w["latency_us"]),
                label=w.get("impl", pd.Series("published", index=w.index)).astype(str),
                approx=w.get("approx", pd.Series(0, index=w.index)).fillna(0).astype(bool),
                citation=w.get("source", pd.Series("", index=w.index)).astype(str),
                device=w.get("device", pd.Series("", index=w.index)).astype(str), source_csv=w["source_csv"])))
    if "metric" in df and "value" in df:
        m = df[(df["metric"] == "latency_us") & df["case"].notna()]
        if len(m):
            cfg = m.get("config", pd.Series("published", index=m.index)).astype(str)
            parts.append(pd.DataFrame(dict(
                case=m["case"], kv_format=cfg.map(lambda c: "mxfp4" if "mxfp4" in c.lower() else "?"),
                time_us=pd.to_numeric(m["value"]), label=cfg, approx=False,
                citation=m.get("source", pd.Series("", index=m.index)).astype(str),
                device=m.get("device", pd.Series("", index=m.index)).astype(str), source_csv=m["source_csv"])))
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True)


# --- anchors: peers' H200 numbers, cited (data/anchors/README.md) ------------------------------
ANCHOR_FILE = "anchors/h200-2026-11-30.jsonl"
ANCHOR_DEVICE = "h200"  # the peers measured on an H200: their times sit beside H200 rows only


def load_anchors(path: str | Path | None = None) -> tuple[pd.DataFrame | None, float | None]:
    """(time rows, read GB/s) from the anchors JSONL: ``case``, ``backend`` ('anchor:<variant>'),
    ``kv_format``, ``splits`` (seed 003 kernels), ``cold_us``/``warm_us``, ``io_bytes``, ``source_csv``."""
    from ..problem import Case, io_bytes

    path = Path(path) if path else DATA / ANCHOR_FILE
    if not path.exists():
        return None, None
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    bw = [r["read_gbs"] for r in recs if r.get("kind") == "bandwidth" and "read_gbs" in r]
    rows = []
    for r in recs:
        if r.get("kind") != "time":
            continue
        c = Case(int(r["bs"]), int(r["kv"]))
        v = r["variant"]
        fmt = "fp8" if "fp8" in v else "bf16"
        m = re.search(r"_s(\d+)$", v)
        rows.append(dict(case=c.name, bs=c.batch_size, kv=c.kv_seq_len, variant=v, kv_format=fmt,
                         family=v.rsplit("_s", 1)[0] if m else v, splits=int(m.group(1)) if m else None,
                         cold_us=r["cold_us"], warm_us=r.get("warm_us"), mism_lb=r.get("mism_lb"),
                         io_bytes=io_bytes(c, fmt), source_csv=str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)))
    df = pd.DataFrame(rows) if rows else None
    return df, (float(pd.Series(bw).median()) if bw else None)


# each anchor family: (our backend with the same code path, or None: seed 003 is not a backend here; KV format; entry name)
ANCHOR_FAMILIES = {
    "torch_bmm_bf16": ("torch", "bf16", "anchor: torch bmm bf16"),
    "flashinfer_bf16": ("flashinfer", "bf16", "anchor: flashinfer bf16"),
    "flashinfer_fp8": ("flashinfer", "fp8", "anchor: flashinfer fp8"),
    "seed003_fp8": (None, "fp8", "anchor: seed003 fp8 (best split)"),
}


def anchor_times(anchors: pd.DataFrame | None) -> pd.DataFrame | None:
    """One anchor time per (entry, case) in the shootout's long shape: ``entry`` (``ANCHOR_FAMILIES``' names),
    ``family``, ``kv_format``, ``case``, ``time_us`` = ``cold_us`` (the anchors' only whole-call time; seed 003:
    the fastest of its split counts, an oracle choice), ``method`` "cold", ``source_csv``. None without anchors."""
    if anchors is None:
        return None
    a = anchors[anchors["family"].isin(ANCHOR_FAMILIES)]
    a = a.groupby(["family", "kv_format", "case", "source_csv"], as_index=False).cold_us.min()
    a["entry"] = a["family"].map(lambda f: ANCHOR_FAMILIES[f][2])
    a["time_us"] = a["cold_us"]
    a["method"] = "cold"
    return a[["entry", "family", "kv_format", "case", "time_us", "cold_us", "method", "source_csv"]] if len(a) else None


# --- split-K helpers ---------------------------------------------------------------------------
def heuristic_splits(case_name: str, variant: str | None, kv_format: str, num_sms: int = 132, *,
                     default_call: bool = False) -> int | None:
    """The num_splits the Triton plan resolves for this case (H200: 132 SMs): the backend's own
    ``choose_num_splits`` with the variant's minimum split length (shorter for tile-reduce
    variants) and its head grouping for this format, as ``TritonDecodePlan`` calls it. A warp-specialized
    variant (gluon_ws) records its partials, two per program: twice the programs' split count, which the
    default call takes from ``ws_num_splits`` (one program per SM) when it swaps that kernel in.
    default_call: the row ran ``variant`` as the default call's kernel (its plan applied the default call's
    short-program rule), as a leaderboard run's default rows did even where today's default is another kernel;
    otherwise the rule applies to today's default only (``is_hopper_default``), as a plan of today's code does."""
    try:
        from ..kernels.triton.launch import (MIN_SPLIT_TOKENS, MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits,
                                             heads_per_program, one_per_sm_splits, ws_num_splits)
        from ..kernels.triton.variants import DEFAULT_VARIANT, get_variant, is_hopper_default
    except Exception:  # triton missing: no heuristic to show
        return None
    from ..problem import case_from_name

    c = case_from_name(case_name)
    v = get_variant(variant or DEFAULT_VARIANT[kv_format])
    groups = c.num_heads // heads_per_program(v, c.num_heads, c.q_seq_len, kv_format)
    min_tokens = MIN_SPLIT_TOKENS_TILE_REDUCE if v.tile_reduce else MIN_SPLIT_TOKENS
    if getattr(v, "gluon_ws", 0):
        return 2 * ws_num_splits(c.batch_size, c.kv_seq_len, groups, num_sms, v.block_n)
    splits = choose_num_splits(c.batch_size, c.kv_seq_len, groups, num_sms, v.block_n, min_tokens)
    if default_call or is_hopper_default(v.name, kv_format):  # the default call's short-program rule
        splits = one_per_sm_splits(kv_format, splits, c.batch_size, c.kv_seq_len, groups, num_sms, v.block_n)
    return splits


def occupancy_table(cases, kv_formats=("bf16", "fp8", "mxfp4"), num_sms: int = 132, num_cus: int = 256) -> pd.DataFrame | None:
    """Per case and format: the Triton default variant, its head groups, programs without split-K,
    the heuristic's num_splits, CTAs = batch x head groups x splits, and CTAs per SM (H200) / per
    CU (the MI355X analog). None where triton is not importable."""
    try:
        from ..kernels.triton.launch import heads_per_program
        from ..kernels.triton.variants import DEFAULT_VARIANT, get_variant
    except Exception:
        return None
    rows = []
    for c in cases:
        for f in kv_formats:
            v = get_variant(DEFAULT_VARIANT[f])
            groups = c.num_heads // heads_per_program(v, c.num_heads, c.q_seq_len, f)
            s = heuristic_splits(c.name, v.name, f, num_sms)
            ctas = c.batch_size * groups * s
            rows.append(dict(case=c.name, kv_format=f, variant=v.name, block_n=v.block_n, head_groups=groups,
                             programs_no_split=c.batch_size * groups, heuristic_splits=s, ctas=ctas,
                             ctas_per_sm_h200=ctas / num_sms, ctas_per_cu_mi355x=ctas / num_cus,
                             kv_tokens_per_split=-(-(-(-c.kv_seq_len // s)) // v.block_n) * v.block_n))  # the kernel's chunk
    return pd.DataFrame(rows)


def sm90_default_call(case_name: str, kv_format: str, num_sms: int = 132) -> dict | None:
    """The kernel and KV split count the default call (no variant, no num_splits) takes on an sm90 GPU with Gluon,
    computed offline from the backend's own rules in the order ``TritonDecodePlan`` applies them, for a uniform
    batch, bf16 Q, MXFP4 scales the generation-3 decode represents and scale rows TMA can copy (other inputs take
    other branches): the variant ``default_variant(hopper_gluon=True)`` names (HOPPER_DEFAULT; bf16: the portable
    DEFAULT_VARIANT), ``choose_num_splits`` (two programs an SM), then, for HOPPER_DEFAULT, ``default_kernel_choice``
    (short splits one program an SM: ``one_per_sm_splits``; the warp-specialized kernel at ``ws_num_splits``' count:
    ``ws_default_choice``; the fp8 TMA-tile kernels: ``tma_default_variant``).

    Keys: ``variant`` (the kernel that runs), ``two_per_sm`` (choose_num_splits' count for the one-warpgroup
    default), ``splits`` (KV splits a batch element = its programs), ``partials`` (partial outputs a batch element:
    two a program for a warp-specialized kernel without the pair merge), ``split_rule`` (the function that set
    ``splits``), ``kernel_rule`` (the table that named ``variant``). None where triton is not importable."""
    try:
        from ..kernels.triton.launch import (MIN_SPLIT_TOKENS, MIN_SPLIT_TOKENS_TILE_REDUCE, choose_num_splits,
                                             default_kernel_choice, heads_per_program, ws_default_choice)
        from ..kernels.triton.variants import default_variant, get_variant, is_hopper_default
    except Exception:  # triton missing: no rule to evaluate
        return None
    c = P.case_from_name(case_name)
    v = get_variant(default_variant(kv_format, hopper_gluon=True))
    groups = c.num_heads // heads_per_program(v, c.num_heads, c.q_seq_len, kv_format)
    lens = [c.kv_seq_len] * c.batch_size
    two = choose_num_splits(c.batch_size, c.kv_seq_len, groups, num_sms, v.block_n,
                            MIN_SPLIT_TOKENS_TILE_REDUCE if v.tile_reduce else MIN_SPLIT_TOKENS)
    name, splits, split_rule = v.name, two, "choose_num_splits"
    kernel_rule = "HOPPER_DEFAULT" if is_hopper_default(v.name, kv_format) else "DEFAULT_VARIANT"
    if kernel_rule == "HOPPER_DEFAULT":
        swap, splits, swap_splits = default_kernel_choice(kv_format, lens, two, True, groups, num_sms, v.block_n)
        split_rule = "one_per_sm_splits" if splits != two else split_rule
        if swap:
            ws_name, ws_splits = ws_default_choice(kv_format, lens, groups, num_sms, v.block_n)
            if ws_name and swap_splits == ws_splits:
                split_rule = "ws_num_splits"
            kernel_rule = "HOPPER_WS_DEFAULT" if swap == ws_name else "HOPPER_TMA_DEFAULT"
            name, splits = swap, swap_splits
    k = get_variant(name)
    per_program = 2 if k.gluon_ws and not k.gluon_ws_pair_merge else 1
    return dict(variant=name, two_per_sm=two, splits=splits, partials=splits * per_program,
                split_rule=split_rule, kernel_rule=kernel_rule)


def sm90_default_table(cases, kv_formats=("bf16", "fp8", "mxfp4"), num_sms: int = 132) -> pd.DataFrame | None:
    """Per case and format: the portable default (DEFAULT_VARIANT at choose_num_splits' count, what a ROCm / gfx950
    or interpreter call takes: :func:`occupancy_table`'s rows) beside the sm90 default call (:func:`sm90_default_call`),
    with the programs the sm90 call launches (batch x head groups x splits) per SM. None where triton is not
    importable."""
    occ = occupancy_table(cases, kv_formats, num_sms)
    if occ is None:
        return None
    from ..kernels.triton.launch import heads_per_program
    from ..kernels.triton.variants import get_variant

    rows = []
    for r in occ.itertuples():
        c, d = P.case_from_name(r.case), sm90_default_call(r.case, r.kv_format, num_sms)
        groups = c.num_heads // heads_per_program(get_variant(d["variant"]), c.num_heads, c.q_seq_len, r.kv_format)
        rows.append(dict(case=r.case, kv_format=r.kv_format, portable_variant=r.variant, portable_splits=r.heuristic_splits,
                         sm90_variant=d["variant"], sm90_two_per_sm=d["two_per_sm"], sm90_splits=d["splits"],
                         sm90_partials=d["partials"], sm90_programs_per_sm=c.batch_size * groups * d["splits"] / num_sms,
                         split_rule=d["split_rule"], kernel_rule=d["kernel_rule"]))
    return pd.DataFrame(rows)


# Generation 3's H200 split sweeps (docs/notes-triton.md "Round 35", "Round 36"; data/measured/h200/README.md): round
# 35 (commit daab5e0) swept the then-defaults v141 / v117 and the warp-specialized v133, round 36b (0d89d2b) v141 /
# v117 on the short-split shapes, with num_splits=auto beside the explicit counts
GEN3_SPLIT_SWEEPS = ("measured/h200/gen3-r35-sweeps.csv", "measured/h200/issue10/splits-r36b.csv")


def gen3_split_sweeps(paths=GEN3_SPLIT_SWEEPS, mode: str = "kernel") -> pd.DataFrame | None:
    """The generation-3 split sweeps as one tidy frame of their checked rows: ``source_csv``, ``run`` (the file's
    round tag, e.g. ``r35``), ``case``, ``kv_format``, ``variant``, ``v`` (its number), ``num_splits`` (KV splits a
    batch element as the bench's config set them: a warp-specialized kernel's programs, each writing two partials),
    ``auto`` (the row ran ``num_splits=auto``; its count is the one the plan resolved, from ``plan_config``, halved
    for a warp-specialized kernel), ``us`` (``mode`` median), ``git_commit``, ``timestamp_utc``, ``device``,
    ``triton``, ``command``. None when a file is missing."""
    files = [DATA / p for p in paths]
    if not all(p.exists() for p in files):
        return None
    out = []
    for p in files:
        d = pd.read_csv(p)
        d = d[(d["status"] == "ok") & d["check_ok"].astype(bool)].dropna(subset=[f"{mode}_median_us"])
        cfg = d["config"].map(lambda s: json.loads(s).get("num_splits"))
        plan = d["plan_config"].map(_plan_num_splits)
        ws = d["variant"].str.contains("_ws")
        auto = cfg.astype(str) == "auto"
        n = [int(pn) // (2 if w else 1) if a else int(cn) for cn, pn, w, a in zip(cfg, plan, ws, auto)]
        out.append(pd.DataFrame({
            "source_csv": _rel(p), "run": re.search(r"(r\d+[a-z]?)\b", p.stem.replace("-", " ")).group(1), "case": d["case"],
            "kv_format": d["kv_format"], "variant": d["variant"], "v": d["variant"].str.split("_").str[0],
            "num_splits": n, "auto": auto.values, "us": d[f"{mode}_median_us"].astype(float),
            "git_commit": d["git_commit"].astype(str).str[:7], "timestamp_utc": d["timestamp_utc"],
            "device": d["device"], "triton": d["triton"].astype(str), "command": d["command"]}))
    return pd.concat(out, ignore_index=True)


def split_best_vs_default(sweeps: pd.DataFrame, num_sms: int = 132) -> pd.DataFrame | None:
    """Per swept (run, case, format, kernel) of :func:`gen3_split_sweeps`: its fastest measured split count and time,
    the count today's sm90 default call takes for that case and format (:func:`sm90_default_call`, with the kernel it
    runs there, which may be another), this kernel's time at that count where the sweep measured it, and that time
    over the best. Explicit counts first; an ``auto`` row's time stands in for a count no explicit row measured."""
    if sweeps is None or sweeps.empty:
        return None
    out = []
    for (run, case, f, v), g in sweeps.groupby(["run", "case", "kv_format", "v"], sort=False):
        g = pd.concat([g[~g.auto], g[g.auto & ~g.num_splits.isin(g[~g.auto].num_splits)]])
        t = g.groupby("num_splits")["us"].min()
        d = sm90_default_call(case, f, num_sms) or {}
        at = t.get(d.get("splits"), float("nan"))
        out.append(dict(run=run, case=case, kv_format=f, kernel=v, measured_splits=", ".join(map(str, t.index)),
                        best_splits=int(t.idxmin()), best_us=float(t.min()), default_splits=d.get("splits"),
                        default_kernel=str(d.get("variant", "")).split("_")[0], us_at_default_splits=at,
                        at_default_over_best=at / float(t.min())))
    return pd.DataFrame(out)


def static_command(target: str, triton: str | None = "device") -> str:
    """The command that wrote the table :func:`load_static` returns for ``target`` / ``triton`` (data/static/README.md):
    ``python -m mla isa --target T --write`` for the venv's triton (without ``--write`` it writes out/static/T,
    git-ignored); for sm90's device-image table (triton 3.6.0) ``scripts/sm90_isa_on_device.sh``, run with that
    triton (on the H200, or here with it on PYTHONPATH) and its CSV copied to data/static/sm90/."""
    want = DEVICE_TRITON.get(target) if triton == "device" else triton
    if want in (None, "newest") or not (DATA / "static" / target / f"triton-{want}.csv").exists():
        return f"python -m mla isa --target {target} --write"
    return (f"PYTHONPATH=<triton {want}> OUT=<dir> bash scripts/sm90_isa_on_device.sh all; "
            f"cp <dir>/triton-{want}.csv data/static/{target}/ (data/static/README.md)")


def _plan_num_splits(plan_config) -> int | None:
    try:
        v = json.loads(plan_config).get("num_splits") if isinstance(plan_config, str) and plan_config else None
    except ValueError:
        return None
    return int(v) if v is not None else None


def _graph_ok(rows: pd.DataFrame) -> pd.Series:
    """Rows whose config does not turn CUDA graphs off (graph=true or unset)."""
    if "cfg_graph" not in rows:
        return pd.Series(True, index=rows.index)
    return rows["cfg_graph"].map(lambda g: g is not False and str(g).lower() != "false")


def _default_config(rows: pd.DataFrame) -> pd.Series:
    """Rows of what a user gets: config names neither ``num_splits`` nor ``variant``, graphs not off."""
    m = _graph_ok(rows)
    for k in ("cfg_num_splits", "cfg_variant"):
        if k in rows:
            m &= rows[k].isna()
    return m


def default_rows(df: pd.DataFrame | None, backend: str = "triton", kv_format: str | None = None,
                 variant: str | None = None) -> pd.DataFrame | None:
    """What a user gets: ok rows (latest per run key) whose config names neither ``num_splits`` nor
    ``variant`` (the backend's defaults and its split heuristic) with graphs not turned off, bf16 Q.
    Adds ``heuristic_splits`` (the num_splits the plan resolved, from ``plan_config``)."""
    where = dict(backend=backend, q_format="bf16")
    if kv_format:
        where["kv_format"] = kv_format
    rows = ok_rows(df, **where)
    if rows is None:
        return None
    m = _default_config(rows)
    if variant is not None:
        m &= rows["variant"] == variant
    if "purpose" in rows and (m & (rows["purpose"] == "leaderboard")).any():
        m &= rows["purpose"] == "leaderboard"  # the manifest's leaderboard runs, not a later sweep of the same config
    rows = rows[m]
    if rows.empty:
        return None
    rows = latest(rows, ["kv_format", "case"] + (["variant"] if variant else []))
    return rows.assign(heuristic_splits=rows["plan_config"].map(_plan_num_splits))


def split_sweep(df: pd.DataFrame | None, kv_format: str, mode: str = "cold", backend: str = "triton",
                variant: str | None = None) -> pd.DataFrame | None:
    """case x num_splits table of median times (us) from the split sweep (rows whose config sets
    ``num_splits``), for one variant: ``variant`` or the one the newest sweep rows ran (the default
    at the time). The heuristic's own pick, where the sweep lacks it, is added from the default-config
    row of the same variant (e.g. 5 or 9 splits). ``mode`` falls back to ``kernel`` when the sweep has
    no ``mode`` times. ``t.attrs``: ``mode`` (the one used), ``variant``, ``heuristic`` ({case:
    num_splits from plan_config}), ``from_default`` (cells taken from default-config rows),
    ``cases_with_sweep``. None when fewer than two split values were measured."""
    rows = ok_rows(df, backend=backend, kv_format=kv_format, q_format="bf16")
    if rows is None or "cfg_num_splits" not in rows:
        return None
    counts = pd.to_numeric(rows["cfg_num_splits"], errors="coerce")  # (a rule, "auto" / "kernel", is not a sweep point)
    sw = rows[counts.notna() & _graph_ok(rows)]
    if sw.empty:
        return None
    if variant is None:
        variant = sw.sort_values("timestamp_utc")["variant"].iloc[-1]
    sw = sw[sw["variant"] == variant]
    used = next((m for m in (mode, "kernel") if sw[f"{m}_median_us"].notna().any()), None)
    if used is None:
        return None
    sw = sw.dropna(subset=[f"{used}_median_us"])
    sw = latest(sw.assign(num_splits=sw["cfg_num_splits"].astype(int)), ["case", "num_splits"])
    if sw["num_splits"].nunique() < 2:
        return None
    t = sw.pivot(index="case", columns="num_splits", values=f"{used}_median_us")
    heur, extra = {}, set()
    d = default_rows(df, backend, kv_format, variant)
    if d is not None:
        for _, r in d.iterrows():
            h = r["heuristic_splits"]
            if h is None or h != h:
                continue
            heur[r["case"]] = int(h)
            v = r.get(f"{used}_median_us")
            if r["case"] in t.index and v == v and (int(h) not in t.columns or t.loc[r["case"]].get(int(h)) != t.loc[r["case"]].get(int(h))):
                t.loc[r["case"], int(h)] = v
                extra.add((r["case"], int(h)))
    t = t.sort_index(axis=1)
    t.columns = t.columns.astype(int)
    used_rows = pd.concat([sw, d[d["case"].isin(t.index)]] if d is not None else [sw])
    t.attrs.update(mode=used, variant=variant, heuristic=heur, from_default=extra, cases_with_sweep=sorted(sw["case"].unique()),
                   commands=list(dict.fromkeys(used_rows["command"].dropna())) if "command" in used_rows else [],
                   sources=sources(used_rows))
    return t


def heuristic_vs_best(df: pd.DataFrame | None, kv_formats=("bf16", "fp8", "mxfp4"), mode: str = "cold") -> pd.DataFrame | None:
    """Per case and format (cases of the split sweep): the heuristic's num_splits (``plan_config`` of
    the default-config row of the sweep's variant) and its time, the best measured num_splits and
    time (min over the ok rows of the sweep), their ratio, and the time mode and variant used."""
    out = []
    for f in kv_formats:
        t = split_sweep(df, f, mode)
        if t is None:
            continue
        heur = t.attrs["heuristic"]
        for case, r in t.iterrows():
            r = r.dropna()
            if r.empty:
                continue
            h = heur.get(case)
            th = float(r[h]) if h is not None and h in r.index else None
            out.append(dict(case=case, kv_format=f, variant=t.attrs["variant"], mode=t.attrs["mode"], heuristic_splits=h,
                            heuristic_us=th, best_splits=int(r.idxmin()), best_us=float(r.min()),
                            heuristic_over_best=(th / r.min()) if th is not None else None))
    return pd.DataFrame(out) if out else None


def variant_sweep(df: pd.DataFrame | None, kv_format: str, mode: str = "cold", backend: str = "triton") -> pd.DataFrame | None:
    """case x variant table of median times (us), each variant at the num_splits its heuristic picks (rows whose
    config does not set ``num_splits``) or the default call's rules give it (``num_splits=kernel``: the campaign's
    later-generation lines since round 71); graphs not turned off; latest row per cell:
    the variant sweep plus the default variant's leaderboard row. Only cases where at least two
    variants were measured. None when there are none."""
    rows = variant_sweep_rows(df, kv_format, mode, backend)
    if rows is None:
        return None
    t = rows.pivot(index="case", columns="variant", values=f"{mode}_median_us")
    t = t[t.notna().sum(axis=1) >= 2]
    if t.empty or t.shape[1] < 2:
        return None
    t = t.loc[:, t.notna().any()]
    t = t[variant_order(t.columns)]
    used = rows[rows["case"].isin(t.index) & rows["variant"].isin(t.columns)]
    t.attrs.update(mode=mode, commands=list(dict.fromkeys(used["command"].dropna())) if "command" in used else [],
                   sources=sources(used))
    return t


def variant_sweep_rows(df: pd.DataFrame | None, kv_format: str, mode: str = "cold", backend: str = "triton") -> pd.DataFrame | None:
    """The rows behind :func:`variant_sweep`'s cells (the same selection: ok rows whose config sets no split count or
    ``num_splits=kernel`` (the default call's rules for each kernel, round 71), graphs not turned off, with a ``mode``
    time, latest per case and variant): one row per cell, with its ``source_csv``, ``run_id`` and
    ``{mode}_pct_read_bw``. None when there are none."""
    rows = ok_rows(df, backend=backend, kv_format=kv_format, q_format="bf16")
    if rows is None:
        return None
    rows = rows[_graph_ok(rows)].dropna(subset=[f"{mode}_median_us"])
    if "cfg_num_splits" in rows:
        rows = rows[rows["cfg_num_splits"].isna() | (rows["cfg_num_splits"].astype(str) == "kernel")]
    return latest(rows, ["case", "variant"]) if len(rows) else None


def shootout(df: pd.DataFrame | None, mode: str | tuple[str, ...] = "cold", *, swept_only: bool = False) -> pd.DataFrame | None:
    """One time per (entry, case): each backend x KV format at its best config (min of the entry's
    method over the ok rows, latest per run key; for triton an oracle choice over every swept config of
    the default rows' commit), plus ``triton <fmt> (default)``: the default-config rows (default
    variant, the heuristic's num_splits: what a user gets).

    ``mode``: one time mode, or modes in order of preference, e.g. ``("fresh", "cold")``: each entry
    takes the first mode its rows have on every one of its shapes (``method``), so no entry mixes
    methods across shapes (torch's campaign-2 rows have no fresh mode: cold).
    ``swept_only``: a ``triton <fmt> (best config)`` entry only where the rows of that commit hold a
    config other than the default with a time in the entry's method; without one it would only copy
    ``(default)``, so it is left out.

    Long format: entry, backend, kv_format, case, method, time_us, cold_us, warm_us, kernel_us,
    fresh_us, host_floor_us, read_gbs, run_id, git_commit, variant, config, command, source_csv."""
    modes = (mode,) if isinstance(mode, str) else tuple(mode)
    rows = ok_rows(df, q_format="bf16")
    if rows is None:
        return None
    rows = rows.dropna(subset=[f"{m}_median_us" for m in modes], how="all")
    if rows.empty:
        return None

    def method(g):  # the first mode g has on every one of its shapes, and g's rows with it
        for m in modes:
            t = g.dropna(subset=[f"{m}_median_us"])
            if len(t) and t["case"].nunique() == g["case"].nunique():
                return m, t
        return None, None

    def rec(entry, b, f, case, r, m):
        return dict(entry=entry, backend=b, kv_format=f, case=case, method=m, time_us=r[f"{m}_median_us"],
                    cold_us=r["cold_median_us"], warm_us=r["warm_median_us"], kernel_us=r["kernel_median_us"],
                    fresh_us=r.get("fresh_median_us", float("nan")),
                    pct_read_bw=r.get(f"{m}_pct_read_bw", float("nan")),
                    host_floor_us=r.get("host_floor_us", float("nan")), read_gbs=r.get("read_gbs", float("nan")),
                    run_id=r.get("run_id"), git_commit=r.get("git_commit"), variant=r["variant"], config=r["config"],
                    plan_config=r.get("plan_config"), command=r.get("command"), source_csv=r.get("source_csv"))

    d = default_rows(rows, "triton")
    # the oracle "best config" only among rows of the code the default call ran (its git commit):
    # rows from older code are never mixed into a best claim
    current = set(d.git_commit.dropna()) if d is not None and "git_commit" in d else set()
    out = []
    for (b, f), g in rows.groupby(["backend", "kv_format"]):
        if b == "triton" and current and "git_commit" in g:
            g = g[g.git_commit.isin(current)]
        m, g = method(g) if len(g) else (None, None)
        if m is None or (b == "triton" and swept_only and _default_config(g).all()):
            continue
        for case, c in g.groupby("case"):
            best = c.loc[c[f"{m}_median_us"].idxmin()]
            out.append(rec(f"{b} {f}" + (" (best config)" if b == "triton" else ""), b, f, case, best, m))
    if d is not None:
        for f, g in d.groupby("kv_format"):
            m, g = method(g)
            for _, r in (g.iterrows() if m else ()):
                out.append(rec(f"triton {f} (default)", "triton", f, r["case"], r, m))
    return pd.DataFrame(out) if out else None


def host_overhead(df: pd.DataFrame | None, anchors: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """Per backend x KV format x case, for the default-config rows (what the leaderboard step ran):
    whole-call ``cold_us``, ``kernel_us`` (graph replay), ``host_us = cold - kernel`` and ``host_share``
    (host / cold, per row), ``warm_us``, ``host_floor_us`` (where the run measured it), ``launches`` (from
    plan_config, where the plan says), the peer anchor's cold time for the same backend and format
    (``anchor_cold_us``, ``ANCHOR_FAMILIES``), and what a reader needs to weigh a row: ``cold_iqr_us``,
    ``kernel_n``, ``kernel_method`` (paced or not), ``run_id``, ``git_commit``."""
    rows = ok_rows(df, q_format="bf16")
    if rows is None:
        return None
    rows = rows[_default_config(rows)].dropna(subset=["cold_median_us", "kernel_median_us"])
    if "purpose" in rows and (rows["purpose"] == "leaderboard").any():
        rows = rows[rows["purpose"] == "leaderboard"]  # the manifest's leaderboard runs
    if rows.empty:
        return None
    rows = latest(rows, ["backend", "kv_format", "case"])
    fam = {(b, f): family for family, (b, f, _) in ANCHOR_FAMILIES.items() if b}
    anc = {}
    if anchors is not None:
        anc = anchors.groupby(["family", "case"]).cold_us.min().to_dict()

    def launches(pc):
        try:
            return json.loads(pc).get("launches") if isinstance(pc, str) and pc else None
        except ValueError:
            return None

    out = pd.DataFrame(dict(
        backend=rows["backend"], kv_format=rows["kv_format"], case=rows["case"], variant=rows["variant"],
        cold_us=rows["cold_median_us"], kernel_us=rows["kernel_median_us"], warm_us=rows["warm_median_us"],
        host_floor_us=rows["host_floor_us"] if "host_floor_us" in rows else float("nan"),
        launches=rows["plan_config"].map(launches) if "plan_config" in rows else None,
        cold_iqr_us=rows.get("cold_iqr_us"), kernel_n=rows.get("kernel_n"), kernel_method=rows.get("kernel_method"),
        run_id=rows.get("run_id"), git_commit=rows.get("git_commit"),
        command=rows.get("command"), source_csv=rows.get("source_csv")))
    out["host_us"] = out.cold_us - out.kernel_us
    out["host_share"] = out.host_us / out.cold_us
    out["anchor_cold_us"] = [anc.get((fam.get((b, f)), c), float("nan")) for b, f, c in zip(out.backend, out.kv_format, out.case)]
    out["cold_over_anchor"] = out.cold_us / out.anchor_cold_us
    return out.reset_index(drop=True)


TINY_CASE = "bs4-kv1024-q1-h16"  # issue 10's one shape judged against the graph floor
# the first campaign per device whose default call is today's host path: mla.decode's memo of its previous call
# (commit a9581e9, 2026-12-01 21:41 UTC) replays the plan's graph directly; H200 campaigns 3-10 predate it
MEMO_FROM_CAMPAIGN = {"h200": 11, "h100": 24}


def tiny_cold_by_floor(devices=("h200", "h100"), since: Mapping | None = None) -> pd.DataFrame | None:
    """Issue 10's bs4-kv1024 target in the committed campaigns (``data/measured/<device>/campaign<N>-triton.csv``) from
    ``since[device]`` on (default :data:`MEMO_FROM_CAMPAIGN`: today's call path; ``{}`` for all): the default call's
    checked bs4-kv1024 row per KV format with its run's floors and times. Columns: ``device``,
    ``campaign`` (N), ``kv_format``, ``graph_floor_us``, ``host_floor_us``, ``kernel_us``, ``cold_us``,
    ``cold_ratio`` (cold / graph floor: the target's <= 1.3), ``gap_us`` = cold - graph floor - kernel (the call's
    Python over a bare graph replay less the floor's own device time, plus the host's noise: the cold mode runs host
    and device one after the other), ``graph_floor_kernel_us`` and ``lowest_ratio``
    (:func:`mla.analysis.targets.cold_lowest_us` over the floor), ``cold_floor_us`` (the floor timed beside each cold
    sample) and ``paired_ratio`` (cold over it) - these four NaN in runs from before round 72 -, ``run_id``,
    ``git_commit``, ``source_csv``. None when no campaign has such rows."""
    from ..bench.schema import load_results
    from .targets import cold_lowest_us

    since = MEMO_FROM_CAMPAIGN if since is None else since
    out = []
    for dev in devices:
        for f in sorted((DATA / "measured" / dev).glob("campaign*-triton.csv")):
            m = re.fullmatch(r"campaign(\d+)-triton\.csv", f.name)
            if not m or int(m.group(1)) < since.get(dev, 0):
                continue
            d = load_results(str(f))
            d = d[(d["backend"] == "triton") & (d["case"] == TINY_CASE) & (d["q_format"] == "bf16")
                  & (d["status"] == "ok")]
            d = d[_default_config(d)].dropna(subset=["cold_median_us", "kernel_median_us", "graph_floor_us"])
            for _, r in latest(d, ["kv_format"]).iterrows():
                out.append(dict(device=dev, campaign=int(m.group(1)), kv_format=r["kv_format"],
                                graph_floor_us=r["graph_floor_us"], host_floor_us=r["host_floor_us"],
                                kernel_us=r["kernel_median_us"], cold_us=r["cold_median_us"],
                                graph_floor_kernel_us=r["graph_floor_kernel_us"],
                                lowest_ratio=cold_lowest_us(r) / r["graph_floor_us"],
                                cold_floor_us=r["cold_floor_us"], paired_ratio=r["cold_median_us"] / r["cold_floor_us"],
                                run_id=r["run_id"], git_commit=r["git_commit"], source_csv=_rel(f)))
    if not out:
        return None
    t = pd.DataFrame(out).sort_values(["device", "campaign", "kv_format"], ignore_index=True)
    t["cold_ratio"] = t.cold_us / t.graph_floor_us
    t["gap_us"] = t.cold_us - t.graph_floor_us - t.kernel_us
    return t


def geomeans(long: pd.DataFrame, value: str = "time_us", n_cases: int = 8, modes=("fresh", "cold", "kernel")) -> pd.DataFrame:
    """Geomean of ``value`` per entry with the number of cases it covers; entries covering fewer
    than ``n_cases`` are flagged (their geomean is not comparable). Where ``long`` says so, also the
    entry's ``method`` (:func:`shootout`'s) and, per mode of ``modes`` with a ``<mode>_us`` column,
    ``<mode>_geomean_us``: NaN unless the entry has that mode on every one of its cases (a geomean that
    skipped a shape would not compare)."""
    from ..bench.stats import geomean

    g = long.groupby("entry").agg(cases=("case", "nunique"), geomean_us=(value, geomean))
    g["complete"] = g["cases"] >= n_cases
    if "method" in long:
        g["method"] = long.groupby("entry")["method"].agg(lambda m: "/".join(sorted(set(m.dropna()))))
    for m in modes:
        if f"{m}_us" in long:
            by = long.groupby("entry")[f"{m}_us"]
            g[f"{m}_geomean_us"] = by.agg(geomean).where(by.agg(lambda v: bool(v.notna().all())))
    return g.sort_values("geomean_us")


def run_summary(rows: pd.DataFrame | None, run_ids=None) -> pd.DataFrame | None:
    """One line per run (of ``run_ids``, else every run in ``rows``): what a figure that mixes runs has to
    say about each: ``backend``, ``campaign``, ``run_id``, ``commit`` (7 hex), ``first_row_utc``, the
    time ``modes`` it measured, ``kernel_method`` (paced or not), ``l2_flush`` / ``fresh_flush``,
    ``host_floor_us`` / ``graph_floor_us`` (the run's host), ``read_gbs``, ``device``, ``driver``,
    ``torch``, ``triton``, ``source_csv``. None without rows."""
    if rows is None:
        return None
    if run_ids is not None:
        rows = rows[rows["run_id"].isin(set(run_ids))]
    if rows.empty:
        return None

    def one(col, g):
        v = g[col].dropna().astype(str).unique() if col in g else []
        return ", ".join(sorted(v))

    out = []
    for rid, g in rows.groupby("run_id", sort=False):
        out.append(dict(
            backend=one("backend", g), campaign=one("campaign", g), run_id=rid, commit=one("git_commit", g)[:7],
            first_row_utc=g["timestamp_utc"].min(),
            modes=",".join(m for m in ("cold", "warm", "kernel", "fresh") if g.get(f"{m}_median_us", pd.Series()).notna().any()),
            kernel_method=one("kernel_method", g), l2_flush=one("l2_flush", g), fresh_flush=one("fresh_flush", g),
            host_floor_us=g["host_floor_us"].median() if "host_floor_us" in g else float("nan"),
            graph_floor_us=g["graph_floor_us"].median() if "graph_floor_us" in g else float("nan"),
            read_gbs=g["read_gbs"].median() if "read_gbs" in g else float("nan"),
            device=one("device", g), driver=one("driver", g), torch=one("torch", g), triton=one("triton", g),
            source_csv=one("source_csv", g)))
    return pd.DataFrame(out).sort_values("first_row_utc").reset_index(drop=True)


def variant_order(names) -> list:
    """Variant names in their natural order (v2 before v10), anything else after, alphabetically."""
    def key(n):
        m = re.match(r"v(\d+)_", str(n))
        return (0, int(m.group(1)), "") if m else (1, 0, str(n))
    return sorted(names, key=key)


def describe_run(r, short: bool = False) -> str:
    """One line of :func:`run_summary` for a footer (``short``: a title): what differs between runs (code,
    date, host, kernel-mode pacing, the modes timed)."""
    floor = f"host floor {r.host_floor_us:.1f} us" if r.host_floor_us == r.host_floor_us else "no host floor recorded"
    pace = "" if "paced" in str(r.kernel_method) else ", kernel mode unpaced"
    if short:
        return f"{r.backend} {r.campaign or r.run_id} ({r.commit}, {floor}{pace}{'' if 'fresh' in r.modes else ', no fresh mode'})"
    return (f"{r.backend}: {r.campaign or 'run'} {r.run_id} (commit {r.commit}, {str(r.first_row_utc)[:10]}, {floor}, "
            f"modes {r.modes}{pace})")


def speedups(df: pd.DataFrame | None, backend: str = "triton", ref: str = "flashinfer", modes=("kernel", "cold")) -> pd.DataFrame | None:
    """time(ref) / time(backend) per case, KV format and mode, on the default-config rows of both (the
    manifest's leaderboard runs where tagged), against two references (``vs``):

    * "fastest": ``ref``'s fastest KV format on that case in that mode (``ref_format`` names it): what a
      user of ``ref`` would run, and the only reference for a format ``ref`` lacks (FlashInfer: MXFP4);
    * "same format": ``ref``'s row of the same KV format, where it has one.

    Columns: case, kv_format, mode, vs, ref_format, pair, time_us, ref_us, speedup (> 1: ``backend``
    faster), run_id, ref_run_id, command, ref_command, source_csv, ref_source_csv. None without rows of both."""
    a, b = default_rows(df, backend), default_rows(df, ref)
    if a is None or b is None:
        return None
    out = []
    for m in modes:
        col = f"{m}_median_us"
        if col not in a or col not in b:
            continue
        bm = b.dropna(subset=[col])
        fastest = {c: g.loc[g[col].idxmin()] for c, g in bm.groupby("case")}
        same = {(r["kv_format"], r["case"]): r for _, r in bm.iterrows()}
        for _, r in a.dropna(subset=[col]).iterrows():
            for vs, q in (("fastest", fastest.get(r["case"])), ("same format", same.get((r["kv_format"], r["case"])))):
                if q is None:
                    continue
                label = "fastest" if vs == "fastest" else q["kv_format"]
                out.append(dict(case=r["case"], kv_format=r["kv_format"], mode=m, vs=vs, ref_format=q["kv_format"],
                                pair=f"{backend} {r['kv_format']} vs {ref} {label}", time_us=r[col], ref_us=q[col],
                                speedup=q[col] / r[col], run_id=r.get("run_id"), ref_run_id=q.get("run_id"),
                                command=r.get("command"), ref_command=q.get("command"),
                                source_csv=r.get("source_csv"), ref_source_csv=q.get("source_csv")))
    return pd.DataFrame(out) if out else None


# --- Nsight Compute text reports (data/measured/<device>/gen2|gen3/*-ncu-*.txt) -------------------------------------
_NCU_PIPE = re.compile(r"(\w[\w/ ]*?) is the highest-utilized pipeline \(([\d.]+)%\)")


def ncu_metrics(path: Path | str) -> pd.DataFrame | None:
    """The metric tables of an ``ncu --print-details`` text report (``Section: ...`` blocks of ``Metric Name / Unit /
    Value`` rows) as rows: ``section``, ``metric``, ``unit`` ("" where ncu prints none), ``value`` (float, thousands
    separators dropped), ``source``; plus each "<pipe> is the highest-utilized pipeline (N%)" note as the metric
    ``<pipe> pipeline (highest-utilized)`` in %. ``path``: a file, or a path inside the data tree. None when missing."""
    p = Path(path)
    p = p if p.is_absolute() or p.exists() else DATA / p
    if not p.exists():
        return None
    out, section, in_table = [], "", False
    for line in p.read_text(errors="replace").splitlines():
        s = line.strip()
        m = _NCU_PIPE.search(s)
        if m:
            out.append(dict(section=section, metric=f"{m.group(1).split()[-1]} pipeline (highest-utilized)", unit="%",
                            value=float(m.group(2))))
        if s.startswith("Section:"):
            section, in_table = s[len("Section:"):].strip(), False
        elif s.startswith("Metric Name"):
            in_table = True
        elif in_table and s and not s.startswith("-"):
            parts = re.split(r"\s{2,}", s)
            try:
                value = float(parts[-1].replace(",", ""))
            except ValueError:
                in_table = False
                continue
            out.append(dict(section=section, metric=parts[0], unit=parts[1] if len(parts) == 3 else "", value=value))
    df = pd.DataFrame(out, columns=["section", "metric", "unit", "value"])
    return df.assign(source=_rel(p))
