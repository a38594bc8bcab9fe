"""The program timeline: where one split-K launch's time goes, program by program.

An instrumented kernel (``TIMELINE``) writes one row of 16 int64 per program (CTA) into ``stamps``
``[num_programs, 16]``; row = the program's linear id ``pid0 + g0 * (pid1 + g1 * pid2)`` for the launch
grid ``(g0, g1, g2)`` = (head groups, splits per batch element, batch elements). The columns are
:data:`TIMELINE_COLUMNS`: five events' ``%globaltimer`` (ns; one clock for every SM, so it aligns
programs across SMs, but it may tick coarsely: 1 us on some GPUs, 32 ns on others), the same events'
``%clock64`` (the SM's cycle counter: precise within a program, meaningless across SMs), ``%smid``, the
tiles consumer 0 ran, and the second consumer's events of a warp-specialized kernel (-1 elsewhere).

* :func:`program_frame` checks a launch's stamps and turns them into one row per program (times in us
  since the launch's first program started; durations from the cycle counter);
* :func:`summarize` / :func:`summary_frame`: the launch in one row (makespan, tail, idle SMs, ...);
* :func:`decompose`: the makespan split into the last-finishing program's phases;
* :func:`csv_rows`, :func:`load_timeline_csv`, :func:`frames_from_csv`, :func:`summary_table`: the
  long CSV a probe writes (one row per program per repeat, :data:`CSV_COLUMNS`);
* :func:`steal_launch` / :func:`steal_table`: a work-stealing launch (v154) as owners and helpers.

Pure numpy / pandas: nothing here imports torch (a tensor is read through ``.cpu().numpy()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from pathlib import Path

import numpy as np
import pandas as pd

# the row a program writes (the kernels' row stride: 16 int64)
TIMELINE_COLUMNS = (
    "start_ns", "q_ready_ns", "first_tile_ns", "loop_end_ns", "end_ns",           # %globaltimer
    "start_clk", "q_ready_clk", "first_tile_clk", "loop_end_clk", "end_clk",      # %clock64 (per SM)
    "smid", "n_tiles",                                                            # where, how much
    "first_tile2_ns", "loop_end2_ns", "end2_ns", "n_tiles2",                      # consumer 1, or -1
)
COL = {name: i for i, name in enumerate(TIMELINE_COLUMNS)}
EVENTS = ("start", "q_ready", "first_tile", "loop_end", "end")  # consumer 0's events, in program order
CONSUMER1_EVENTS = ("first_tile2", "loop_end2", "end2")
TILE_TOKENS = 64  # tokens per KV tile (n_tiles counts these)
MISSING = -1  # what the caller pre-fills the buffer with: a column the kernel did not write

# the long CSV (one row per program per repeat; row order within a repeat = the program's linear id,
# or an optional "program" column)
CSV_KEY = ("case", "variant", "kv_format", "repeat")
CSV_META = ("run_id",) + CSV_KEY
GRID_COLUMNS = ("grid0", "grid1", "grid2")
CSV_COLUMNS = CSV_META + TIMELINE_COLUMNS + GRID_COLUMNS

PHASES = ("prologue", "first_wait", "loop", "epilogue")  # the plot's segments (program_timeline)


# --- one launch ----------------------------------------------------------------------------------------
def _as_array(stamps) -> np.ndarray:
    if hasattr(stamps, "cpu"):  # a torch tensor (any device), read without importing torch
        stamps = stamps.cpu().numpy()
    a = np.asarray(stamps)
    if a.ndim != 2 or a.shape[1] != len(TIMELINE_COLUMNS):
        raise ValueError(f"timeline stamps must have shape [num_programs, {len(TIMELINE_COLUMNS)}], got {a.shape}")
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(a == np.round(a)):
            a = a.astype(np.int64)  # (a CSV read through a float column: whole numbers only)
        else:
            raise ValueError(f"timeline stamps must be integers, got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


def _check_grid(grid, programs: int) -> tuple[int, int, int]:
    g = tuple(int(x) for x in grid)
    if len(g) != 3 or min(g) < 1:
        raise ValueError(f"grid must be three positive sizes (head groups, splits, batch elements), got {grid!r}")
    if g[0] * g[1] * g[2] != programs:
        raise ValueError(f"grid {g} has {g[0] * g[1] * g[2]} programs but stamps have {programs} rows")
    return g


def _rows_text(mask: np.ndarray) -> str:
    rows = np.flatnonzero(mask)
    return f"{len(rows)} program(s) (rows {', '.join(map(str, rows[:5]))}{', ...' if len(rows) > 5 else ''})"


def _check_stamps(a: np.ndarray) -> None:
    """The ValueErrors of :func:`program_frame` (a bad row is a bug in the kernel or the caller: say so,
    never drop it, since a dropped program would shorten the makespan it is meant to explain)."""
    c = {k: a[:, i] for k, i in COL.items()}
    missing = c["start_ns"] == MISSING
    if missing.any():
        raise ValueError(f"{int(missing.sum())} of {len(a)} programs have no stamps (start_ns == -1): the program "
                         f"never ran or the kernel was not built with the timeline; {_rows_text(missing)}")
    if (c["smid"] < 0).any():
        raise ValueError(f"negative smid in {_rows_text(c['smid'] < 0)}")
    if (c["n_tiles"] < 0).any():
        raise ValueError(f"negative n_tiles in {_rows_text(c['n_tiles'] < 0)}")
    # every consumer-0 event is written, but the first tile's: a program with no tiles never reaches it
    for ev in EVENTS:
        for unit in ("ns", "clk"):
            v = c[f"{ev}_{unit}"]
            bad = (v < 0) & ~((ev == "first_tile") & (v == MISSING) & (c["n_tiles"] == 0))
            if bad.any():
                raise ValueError(f"{ev}_{unit} missing or negative in {_rows_text(bad)}")
    # consumer 1: all four columns -1 (one consumer) or written (its first tile only if it had tiles)
    two = c["n_tiles2"] != MISSING
    if (c["n_tiles2"] < MISSING).any():
        raise ValueError(f"negative n_tiles2 in {_rows_text(c['n_tiles2'] < MISSING)}")
    for ev in CONSUMER1_EVENTS:
        v = c[f"{ev}_ns"]
        stray = ~two & (v != MISSING)
        if stray.any():
            raise ValueError(f"{ev}_ns written but n_tiles2 == -1 (no consumer 1) in {_rows_text(stray)}")
        absent = two & (v < 0) & ~((ev == "first_tile2") & (v == MISSING) & (c["n_tiles2"] == 0))
        if absent.any():
            raise ValueError(f"{ev}_ns missing or negative for a consumer 1 with n_tiles2 set in {_rows_text(absent)}")
    # program order, per clock (equal allowed: a coarse %globaltimer gives equal stamps); a skipped event
    # (no first tile) is left out of the chain
    chains = [[f"{ev}_{unit}" for ev in EVENTS] for unit in ("ns", "clk")]
    chains.append(["start_ns", "q_ready_ns"] + [f"{ev}_ns" for ev in CONSUMER1_EVENTS])  # consumer 1 starts after Q
    for chain in chains:
        prev_name = np.full(len(a), chain[0], dtype=object)
        prev = c[chain[0]].copy()
        for name in chain[1:]:
            v = c[name]
            present = v != MISSING
            bad = present & (v < prev)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"events out of order: {name} < {prev_name[i]} in {_rows_text(bad)} "
                                 f"(row {i}: {int(v[i])} < {int(prev[i])})")
            prev = np.where(present, v, prev)
            prev_name = np.where(present, name, prev_name)


def program_frame(stamps, grid, *, clock: str | float = "launch") -> pd.DataFrame:
    """One row per program of one launch, from its ``stamps`` [num_programs, 16] and launch ``grid``
    (g0, g1, g2). Raises ValueError for a wrong shape, a grid that does not match the rows, programs
    without stamps (start_ns == -1), a negative smid or events out of order within a row.

    Columns: ``program`` (the row), ``head_group, split, b`` (decoded from the row: ``program = head_group
    + g0 * (split + g1 * b)``; under the balanced work list the middle axis is a work item and b is 0),
    ``sm``, ``n_tiles``, ``n_tiles2`` (NaN: one consumer), ``consumers`` (1 or 2);
    times in us since the launch's earliest start_ns (%globaltimer: aligns programs across SMs):
    ``start_us, q_ready_us, first_tile_us, loop_end_us, end_us``, consumer 1's ``first_tile2_us,
    loop_end2_us, end2_us`` (NaN where not written) and ``finish_us`` (the later of the consumers' ends);
    ``clock_ghz``: the program's own SM clock, (end_clk - start_clk) / (end_ns - start_ns), NaN where
    end_ns == start_ns (a coarse timer); durations in us from %clock64 (precise: the timer may tick in
    1 us steps), converted at the clock ``clock`` names (below):
    ``prologue_us`` (start -> Q ready), ``first_wait_us`` (start -> first tile ready), ``loop_us``
    (first tile ready -> last tile's MMAs waited for), ``per_tile_us`` (loop_us / (n_tiles - 1), NaN for
    n_tiles <= 1; with two consumers it is consumer 0's tile, i.e. every other tile of the program),
    ``epilogue_us`` (loop end -> stores issued), ``duration_us`` (start -> end; with two consumers the
    later end, consumer 1's part from its ns stamps since it has no cycle stamps). The phases of a
    program without tiles are NaN.

    ``clock``: "launch" (the default: one clock for every program, the launch's cycles over its ns summed
    over the programs - the SMs share one clock, and the sum averages out a coarse %globaltimer's ticks, which
    a program's own span of a few ticks does not), "program" (each program's own, the median where its own is
    NaN), "median" (the median of the programs' own) or a number (GHz).
    """
    a = _as_array(stamps)
    g0, g1, g2 = _check_grid(grid, len(a))
    _check_stamps(a)
    c = {k: a[:, i] for k, i in COL.items()}
    pid = np.arange(len(a))
    t0 = int(c["start_ns"].min())

    def rel_us(col: str) -> np.ndarray:  # ns stamps -> us since the launch's first start; -1 -> NaN
        v = c[col]
        return np.where(v == MISSING, np.nan, (v - t0) / 1e3)

    span_ns = (c["end_ns"] - c["start_ns"]).astype(float)
    span_clk = (c["end_clk"] - c["start_clk"]).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where((span_ns > 0) & (span_clk > 0), span_clk / span_ns, np.nan)  # cycles per ns = GHz
    median = float(np.nanmedian(own)) if np.isfinite(own).any() else np.nan
    ok = (span_ns > 0) & (span_clk > 0)
    pooled = float(span_clk[ok].sum() / span_ns[ok].sum()) if ok.any() else np.nan
    if clock == "launch":
        ghz = np.full(len(a), pooled)
    elif clock == "program":
        ghz = np.where(np.isfinite(own), own, median)
    elif clock == "median":
        ghz = np.full(len(a), median)
    elif isinstance(clock, Real) and not isinstance(clock, bool) and clock > 0:
        ghz = np.full(len(a), float(clock))
    else:
        raise ValueError(f"clock must be 'launch', 'program', 'median' or a clock in GHz, got {clock!r}")

    def clk_us(frm: str, to: str) -> np.ndarray:  # cycles between two events of the program -> us
        lo, hi = c[f"{frm}_clk"], c[f"{to}_clk"]
        ok = (lo != MISSING) & (hi != MISSING)
        return np.where(ok, (hi - lo) / (ghz * 1e3), np.nan)

    n_tiles = c["n_tiles"]
    two = c["n_tiles2"] != MISSING
    f = pd.DataFrame({
        "program": pid,
        "head_group": pid % g0, "split": (pid // g0) % g1, "b": pid // (g0 * g1),
        "sm": c["smid"], "n_tiles": n_tiles, "n_tiles2": np.where(two, c["n_tiles2"], np.nan),
        "consumers": np.where(two, 2, 1),
        **{f"{ev}_us": rel_us(f"{ev}_ns") for ev in EVENTS + CONSUMER1_EVENTS},
    })
    f["finish_us"] = np.fmax(f["end_us"].to_numpy(), f["end2_us"].to_numpy())
    f["clock_ghz"] = own
    f["prologue_us"] = clk_us("start", "q_ready")
    f["first_wait_us"] = clk_us("start", "first_tile")
    f["loop_us"] = clk_us("first_tile", "loop_end")
    with np.errstate(divide="ignore", invalid="ignore"):
        f["per_tile_us"] = np.where(n_tiles > 1, f["loop_us"].to_numpy() / (n_tiles - 1), np.nan)
    f["epilogue_us"] = clk_us("loop_end", "end")
    end2 = np.where(two, (c["end2_ns"] - c["start_ns"]) / 1e3, np.nan)
    f["duration_us"] = np.fmax(clk_us("start", "end"), end2)
    return f


# --- a launch in one row -------------------------------------------------------------------------------
MEDIAN_OF = ("prologue_us", "first_wait_us", "loop_us", "per_tile_us", "epilogue_us", "duration_us")
CRITICAL_FIELDS = ("program", "b", "split", "head_group", "sm", "n_tiles", "start_us", "finish_us") + MEDIAN_OF


def _busy_us(frame: pd.DataFrame) -> float:
    """SM-time covered by programs: per SM the union of [start, start + duration] (co-resident programs
    on one SM overlap; counting them twice would make busy time exceed the SM's time)."""
    total = 0.0
    for _, g in frame.groupby("sm", sort=False):
        lo = g["start_us"].to_numpy()
        hi = lo + g["duration_us"].fillna(g["finish_us"] - g["start_us"]).to_numpy()
        order = np.argsort(lo, kind="stable")
        cur_lo, cur_hi = lo[order[0]], hi[order[0]]
        for i in order[1:]:
            if lo[i] > cur_hi:
                total += cur_hi - cur_lo
                cur_lo, cur_hi = lo[i], hi[i]
            else:
                cur_hi = max(cur_hi, hi[i])
        total += cur_hi - cur_lo
    return float(total)


def _max_co_resident(frame: pd.DataFrame) -> int:
    """The most programs one SM held at the same moment (2 = two CTAs co-resident, not two waves)."""
    best = 0
    for _, g in frame.groupby("sm", sort=False):
        ev = sorted([(s, 1) for s in g["start_us"]] + [(e, -1) for e in g["finish_us"]], key=lambda t: (t[0], t[1]))
        now = 0
        for _, d in ev:  # (an end before a start at the same time: back-to-back programs do not overlap)
            now += d
            best = max(best, now)
    return best


def summarize(frame: pd.DataFrame, sm_count: int | None = None) -> dict:
    """One launch's program frame (:func:`program_frame`) in one dict (times in us):

    * ``programs``, ``sms_used`` (distinct smid), ``programs_per_sm`` (the most on one SM),
      ``max_co_resident`` (the most on one SM at once: tells two waves from two co-resident CTAs);
    * ``makespan_us``: last finish - first start (what the split kernel took, seen from inside);
    * ``launch_spread_us``: spread of the first start on each SM (how long the block scheduler took to
      put the first wave on the SMs);
    * ``median_<phase>_us`` for prologue, first_wait, loop, per_tile, epilogue, duration (the typical
      program, against which the critical one is read);
    * ``tail_us``: last finish - median finish (how long the launch waits for its stragglers);
    * ``end_spread_us``: last finish - mean finish: what the launch would save if its programs, doing the same
      total work, all ended together (an upper bound: the schedule's share of the makespan, rounds 48 / 50);
    * ``idle_sm_fraction``: 1 - busy / (sms_available x makespan), sms_available = ``sm_count`` (the
      device's SMs: an SM no program ran on counts as idle) or sms_used; busy = per SM the union of its
      programs' [start, start + duration] (equals the sum of durations unless programs share an SM at once);
    * ``sm_clock_ghz``: the median of the programs' own clocks (cycles / ns between start and end);
    * ``critical_program``: the program finishing last: its program, b, split, head_group, sm, n_tiles,
      start_us, finish_us and phases (what :func:`decompose` splits);
    * ``sm_count`` as given (None: not known).
    """
    if not len(frame):
        raise ValueError("an empty program frame has nothing to summarize")
    sms_used = int(frame["sm"].nunique())
    if sm_count is not None and sm_count < sms_used:
        raise ValueError(f"sm_count={sm_count} but programs ran on {sms_used} distinct SMs")
    start0 = float(frame["start_us"].min())
    last = float(frame["finish_us"].max())
    makespan = last - start0
    first_per_sm = frame.groupby("sm")["start_us"].min()
    crit = int(np.argmax(frame["finish_us"].to_numpy()))  # (a position: column by column keeps ints ints)
    available = sm_count or sms_used
    out = {
        "programs": int(len(frame)),
        "sms_used": sms_used,
        "programs_per_sm": int(frame.groupby("sm").size().max()),
        "max_co_resident": _max_co_resident(frame),
        "makespan_us": makespan,
        "launch_spread_us": float(first_per_sm.max() - first_per_sm.min()),
        **{f"median_{k}": float(frame[k].median()) for k in MEDIAN_OF},
        "tail_us": float(last - frame["finish_us"].median()),
        "end_spread_us": float(last - frame["finish_us"].mean()),
        "idle_sm_fraction": 1.0 - _busy_us(frame) / (available * makespan) if makespan > 0 else float("nan"),
        "sm_clock_ghz": float(frame["clock_ghz"].median()),
        "sm_count": sm_count,
        "critical_program": {k: frame[k].iloc[crit].item() for k in CRITICAL_FIELDS},
    }
    for k in ("start_us", "finish_us"):  # (relative to the first start, as makespan is)
        out["critical_program"][k] -= start0
    return out


def summary_frame(summary: dict) -> pd.DataFrame:
    """:func:`summarize`'s dict as a one-row DataFrame (the critical program's fields as ``critical_<field>``)."""
    row = {k: v for k, v in summary.items() if k != "critical_program"}
    row.update({f"critical_{k}": v for k, v in summary["critical_program"].items()})
    return pd.DataFrame([row])


DECOMPOSE_PARTS = (
    "launch offset (its start - first start)",
    "prologue (Q load / quantize)",
    "first tile wait beyond the prologue",
    "tile loop",
    "epilogue (output / partial stores)",
    "rest (consumer 1 ending later, timer rounding)",
)
OUTSIDE_PART = "outside the split kernel (launch, reduce, graph)"


def decompose(summary: dict, kernel_us: float | None = None) -> pd.DataFrame:
    """Where the makespan goes, read along the last-finishing program: its launch offset, prologue, the
    first tile's wait beyond the prologue, the tile loop, the epilogue, and the rest (makespan minus
    those: consumer 1 finishing after consumer 0, or %globaltimer rounding against the cycle counts),
    so the parts add up to the makespan. With ``kernel_us`` (the same plan's kernel-mode time from the
    harness) one more part, kernel_us - makespan: what the split kernel's programs do not see (the
    launch, the reduce kernel, graph overhead; negative when the instrumented kernel ran slower than
    the timed one). Columns: part, us, share (of kernel_us if given, else of the makespan)."""
    cp = summary["critical_program"]

    def us(k: str) -> float:  # (NaN: a program without tiles has no first wait and no loop)
        v = cp[k]
        return 0.0 if v is None or v != v else float(v)

    had_tiles = cp["first_wait_us"] == cp["first_wait_us"]
    wait_beyond = us("first_wait_us") - us("prologue_us") if had_tiles else 0.0
    parts = [us("start_us"), us("prologue_us"), wait_beyond, us("loop_us"), us("epilogue_us")]
    makespan = float(summary["makespan_us"])
    parts.append(makespan - sum(parts))
    names = list(DECOMPOSE_PARTS)
    total = makespan
    if kernel_us is not None:
        names.append(OUTSIDE_PART)
        parts.append(float(kernel_us) - makespan)
        total = float(kernel_us)
    t = pd.DataFrame({"part": names, "us": parts})
    t["share"] = t["us"] / total if total > 0 else np.nan
    return t


# --- the long CSV ------------------------------------------------------------------------------------------
def csv_rows(stamps, grid, *, run_id: str, case: str, variant: str, kv_format: str, repeat: int) -> pd.DataFrame:
    """One launch's stamps as rows of the long CSV (:data:`CSV_COLUMNS`), in program order; what a probe
    writes (append the repeats, then ``to_csv(index=False)``). Checked like :func:`program_frame`."""
    a = _as_array(stamps)
    g = _check_grid(grid, len(a))
    _check_stamps(a)
    df = pd.DataFrame(a, columns=list(TIMELINE_COLUMNS))
    for k, v in zip(CSV_META, (run_id, case, variant, kv_format, int(repeat))):
        df.insert(CSV_META.index(k), k, v)
    for k, v in zip(GRID_COLUMNS, g):
        df[k] = v
    return df


def _require_columns(df: pd.DataFrame) -> None:
    missing = [c for c in CSV_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"not a timeline CSV: it lacks column(s) {', '.join(missing)} (expected: "
                         f"{', '.join(CSV_COLUMNS)})")


def load_timeline_csv(path) -> pd.DataFrame:
    """Read a timeline CSV and check that it has every column of :data:`CSV_COLUMNS` (ValueError naming
    the missing ones). Row order is kept: within a repeat it is the program's linear id."""
    if not Path(path).is_file():
        raise ValueError(f"no timeline CSV at {str(path)!r} (scripts/probes/timeline_probe.py OUT_DIR writes "
                         "OUT_DIR/timeline.csv, on an sm90 GPU)")
    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:  # (a README, a binary)
        raise ValueError(f"{path} is not a timeline CSV ({str(e).strip().splitlines()[0]}); expected "
                         f"scripts/probes/timeline_probe.py's columns: {', '.join(CSV_COLUMNS)}") from None
    _require_columns(df)
    return df


def frames_from_csv(df: pd.DataFrame, *, clock: str | float = "launch") -> dict[tuple, pd.DataFrame]:
    """{(case, variant, kv_format, repeat): program frame} from the long CSV's rows. Within a key the rows
    are one launch in program order (or sorted by an optional ``program`` column); ValueError where a key
    mixes runs (filter by run_id first) or grids, or where its stamps fail :func:`program_frame`."""
    _require_columns(df)
    out = {}
    for key, g in df.groupby(list(CSV_KEY), sort=False):
        key = tuple(k.item() if hasattr(k, "item") else k for k in key)
        if g["run_id"].nunique() > 1:
            runs = ", ".join(map(str, g["run_id"].unique()))
            raise ValueError(f"{key}: rows from {g['run_id'].nunique()} runs ({runs}); select one run_id first")
        grids = g[list(GRID_COLUMNS)].drop_duplicates()
        if len(grids) != 1:
            raise ValueError(f"{key}: rows with {len(grids)} different grids")
        if "program" in g.columns:
            g = g.sort_values("program", kind="stable")
            if not np.array_equal(g["program"].to_numpy(), np.arange(len(g))):
                raise ValueError(f"{key}: the program column is not 0 .. {len(g) - 1}")
        try:
            out[key] = program_frame(g[list(TIMELINE_COLUMNS)].to_numpy(), grids.iloc[0].tolist(), clock=clock)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return out


def sm_end_ratio(frames: Mapping, *, kv_format: str | None = None) -> pd.DataFrame:
    """Per SM (rows) and case (columns): when the SM's last program ended, over the median of those ends in the
    same launch, then the median over the repeats. Below 1: the SM finished its equal share early (it streamed
    faster). ``frames``: :func:`frames_from_csv`'s {(case, variant, kv_format, repeat): frame}; ``kv_format``
    keeps one format (None: all the frames, which must then not mix two formats of one case). The columns of two
    cases correlate where the same SMs are fast in both (rounds 48 / 50: per-SM bandwidth, not the work)."""
    per_case: dict = {}
    for key, f in frames.items():
        if kv_format is not None and key[2] != kv_format:
            continue
        ends = f.groupby("sm")["finish_us"].max()
        per_case.setdefault((key[0], key[2]), []).append(ends / ends.median())
    if not per_case:
        raise ValueError(f"no frames{'' if kv_format is None else f' of kv_format {kv_format!r}'}")
    cases = [c for c, _ in per_case]
    if len(set(cases)) != len(cases):
        raise ValueError("frames of two formats of one case: pass kv_format")
    return pd.DataFrame({c: pd.concat(v, axis=1).median(axis=1) for (c, _), v in per_case.items()}).sort_index()


def _kernel_us_for(kernel_us, key: tuple) -> float:
    if kernel_us is None:
        return np.nan
    if isinstance(kernel_us, Real):
        return float(kernel_us)
    if isinstance(kernel_us, pd.DataFrame):
        col = next((c for c in ("kernel_us", "kernel_median_us") if c in kernel_us.columns), None)
        if col is None or any(c not in kernel_us.columns for c in CSV_KEY[:3]):
            raise ValueError("a kernel_us table needs case, variant, kv_format and kernel_us (or kernel_median_us)")
        k = kernel_us
        hit = k[(k["case"] == key[0]) & (k["variant"] == key[1]) & (k["kv_format"] == key[2])]
        if len(hit) > 1:
            raise ValueError(f"{key}: {len(hit)} kernel_us rows; pass one per (case, variant, kv_format)")
        return float(hit[col].iloc[0]) if len(hit) else np.nan
    if isinstance(kernel_us, Mapping):
        return float(kernel_us.get(key, np.nan))
    raise ValueError(f"kernel_us must be None, a number, a mapping or a DataFrame, got {type(kernel_us).__name__}")


def summary_table(df: pd.DataFrame, kernel_us=None, *, sm_count: int | None = None,
                  clock: str | float = "launch") -> pd.DataFrame:
    """One row per (case, variant, kv_format) of the long CSV: :func:`summary_frame`'s numbers as the
    median over the repeats (``repeats``: how many), the critical program's identity (b, split,
    head_group, sm) as its most frequent value over the repeats. ``kernel_us`` (None, one number, a
    {(case, variant, kv_format): us} mapping, or a table with those columns and kernel_us or the
    harness's kernel_median_us) adds ``kernel_us`` and ``outside_us`` = kernel_us - makespan_us.
    ``sm_count`` (for idle_sm_fraction): as given, else the CSV's ``sm_count`` column (the probe writes
    the device's), else the SMs used."""
    frames = frames_from_csv(df, clock=clock)
    # the device's SM count: as given, else the probe's sm_count column where the CSV has one
    sms = {} if sm_count is not None or "sm_count" not in df.columns else \
        df.groupby(list(CSV_KEY), sort=False)["sm_count"].max().to_dict()
    per_repeat = []
    for key, f in frames.items():
        n = sms.get(key, sm_count)
        row = summary_frame(summarize(f, sm_count=None if n is None or n != n else int(n)))
        for k, v in zip(CSV_KEY, key):
            row[k] = v
        per_repeat.append(row)
    allrep = pd.concat(per_repeat, ignore_index=True)
    ident = [f"critical_{k}" for k in ("program", "b", "split", "head_group", "sm")]
    rows = []
    for key, g in allrep.groupby(list(CSV_KEY[:3]), sort=False):
        row = dict(zip(CSV_KEY[:3], key), repeats=len(g))
        for c in g.columns:
            if c in CSV_KEY:
                continue
            row[c] = g[c].mode().iloc[0] if c in ident else float(g[c].median())
        if kernel_us is not None:
            row["kernel_us"] = _kernel_us_for(kernel_us, tuple(key))
            row["outside_us"] = row["kernel_us"] - row["makespan_us"]
        rows.append(row)
    return pd.DataFrame(rows)


# --- the CLI: python -m mla timeline ---------------------------------------------------------------------
REPORT_COLUMNS = ("programs", "sms_used", "max_co_resident", "makespan_us", "launch_spread_us", "median_prologue_us",
                  "median_first_wait_us", "median_per_tile_us", "median_epilogue_us", "tail_us", "end_spread_us",
                  "idle_sm_fraction", "sm_clock_ghz", "kernel_us", "outside_us")


def _kernel_us_from_cost(cost: pd.DataFrame) -> dict:
    """{(case, variant, kv_format): us} from the probe's cost CSV: the instrumented plan's kernel-mode time (the
    makespan was measured with the instrument on; its cost is the ratio beside it)."""
    missing = [c for c in ("case", "variant", "kv_format", "kernel_on_median_us") if c not in cost.columns]
    if missing:
        raise ValueError(f"the cost CSV lacks columns {missing} (scripts/probes/timeline_probe.py writes them)")
    ok = cost[cost.get("status", "ok").fillna("ok") == "ok"] if "status" in cost.columns else cost
    return {(r.case, r.variant, r.kv_format): float(r.kernel_on_median_us) for r in ok.itertuples()}


def report(df: pd.DataFrame, cost: pd.DataFrame | None = None) -> str:
    """The text ``python -m mla timeline`` prints: the summary table (medians over repeats), then per (case,
    variant, kv_format) the decomposition of its median-makespan repeat."""
    kernel = _kernel_us_from_cost(cost) if cost is not None else None
    table = summary_table(df, kernel_us=kernel)
    cols = ["case", "kv_format", "variant", "repeats"] + [c for c in REPORT_COLUMNS if c in table.columns]
    lines = [table[cols].to_string(index=False, float_format=lambda x: f"{x:.3g}" if abs(x) < 1 else f"{x:.1f}"), ""]
    frames = frames_from_csv(df)
    sms = df.groupby(list(CSV_KEY), sort=False)["sm_count"].max().to_dict() if "sm_count" in df.columns else {}
    by_key: dict = {}
    for key, f in frames.items():
        n = sms.get(key)
        by_key.setdefault(key[:3], []).append(summarize(f, sm_count=None if n is None or n != n else int(n)))
    for key, sums in by_key.items():
        mid = sorted(sums, key=lambda s: s["makespan_us"])[len(sums) // 2]
        k_us = kernel.get(key) if kernel else None
        parts = decompose(mid, kernel_us=k_us)
        lines.append(f"{key[0]} {key[2]} {key[1]}: the median repeat's last program "
                     f"(b {mid['critical_program']['b']}, split {mid['critical_program']['split']}, "
                     f"sm {mid['critical_program']['sm']}, {mid['critical_program']['n_tiles']} tiles)")
        lines.append(parts.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        lines.append("")
    return "\n".join(lines)


# --- work stealing (v154: the grid's last rows are helper programs) ---------------------------------------
STEAL_FIELDS = ("makespan_us", "owner_end_mean_us", "owner_end_min_us", "owner_end_max_us", "owner_spread_us",
                "owner_tiles_min", "helpers_working", "tiles_stolen", "helper_start_median_us",
                "helper_start_last_us", "idle_helper_end_last_us")


def steal_launch(frame: pd.DataFrame, helper_programs: int) -> dict:
    """One launch of a work-stealing plan in one row: ``helper_programs`` (the plan's ``steal_helper_programs``) are the
    frame's last rows. The owners' ends (mean, min, max; ``owner_spread_us`` = last owner end - mean owner end:
    round 50's ``end_spread_us`` over the owners), the fewest tiles an owner kept, the helpers that took a piece
    (their tiles, their start times: median and last) and the last end of a helper that found nothing. Every
    tile is counted once: ``total_tiles`` is the owners' and helpers' n_tiles summed (ValueError for a negative
    helper count or one past the frame)."""
    if not 0 <= helper_programs < len(frame):
        raise ValueError(f"helper_programs must be in [0, {len(frame)}) for a launch of {len(frame)} programs, "
                         f"got {helper_programs}")
    owners = frame.iloc[:len(frame) - helper_programs]
    helpers = frame.iloc[len(frame) - helper_programs:]
    working = helpers[helpers["n_tiles"] > 0]
    idle = helpers[helpers["n_tiles"] <= 0]
    nan = float("nan")
    return {
        "makespan_us": float(frame["finish_us"].max()),
        "owner_end_mean_us": float(owners["finish_us"].mean()),
        "owner_end_min_us": float(owners["finish_us"].min()),
        "owner_end_max_us": float(owners["finish_us"].max()),
        "owner_spread_us": float(owners["finish_us"].max() - owners["finish_us"].mean()),
        "owner_tiles_min": int(owners["n_tiles"].min()),
        "helpers_working": int(len(working)),
        "tiles_stolen": int(working["n_tiles"].sum()),
        "helper_start_median_us": float(working["start_us"].median()) if len(working) else nan,
        "helper_start_last_us": float(working["start_us"].max()) if len(working) else nan,
        "idle_helper_end_last_us": float(idle["finish_us"].max()) if len(idle) else nan,
        "total_tiles": int(frame["n_tiles"].clip(lower=0).sum()),
    }


def steal_table(df: pd.DataFrame, cost: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per probe run (``run_id``: one plan, e.g. v153, or v154 at some ``steal_helper_programs``) and case, the
    median over its repeats of :func:`steal_launch` (v153-style plans have 0 helpers), with the run's kernel-mode
    time (instrument off) from ``cost`` where given."""
    _require_columns(df)
    rows = []
    for run, g in df.groupby("run_id", sort=False):
        helpers = int(g["steal_helper_programs"].max()) if "steal_helper_programs" in g.columns else 0
        helpers = 0 if helpers != helpers else helpers  # (NaN: a run without the column's value)
        for key, f in frames_from_csv(g).items():
            rows.append(dict(run_id=run, case=key[0], variant=key[1], kv_format=key[2], repeat=key[3],
                             helper_programs=helpers, programs=len(f), **steal_launch(f, helpers)))
    per = pd.DataFrame(rows)
    keys = ["run_id", "case", "variant", "kv_format", "helper_programs", "programs"]
    out = per.groupby(keys, sort=False)[list(STEAL_FIELDS) + ["total_tiles"]].median().reset_index()
    out["repeats"] = per.groupby(keys, sort=False).size().to_numpy()
    if cost is not None and "run_id" in cost.columns:
        k = cost.set_index(["run_id", "case"])["kernel_off_median_us"]
        out["kernel_us"] = [k.get((r, c), float("nan")) for r, c in zip(out["run_id"], out["case"])]
    return out


def register(sub) -> None:
    p = sub.add_parser("timeline", help="the program timeline of a probe run: where each launch's time goes",
                       description="Summarize scripts/probes/timeline_probe.py's CSV: per case, variant and KV "
                                   "format the makespan, the typical program's phases, the tail, idle SMs, and the "
                                   "last program's decomposition (with --cost: against the kernel-mode time).")
    p.add_argument("csv", help="timeline.csv (one row per program per repeat)")
    p.add_argument("--cost", help="timeline-cost.csv from the same run (kernel-mode times, instrument on / off)")
    p.add_argument("--case", help="only these cases, comma-separated")
    p.add_argument("--steal", action="store_true",
                   help="work stealing (v154): per probe run, the owners' ends and the helpers' pieces (steal_table)")
    p.set_defaults(func=_cmd_timeline)


def _cmd_timeline(args) -> int:
    df = load_timeline_csv(args.csv)
    if args.case:
        df = df[df["case"].isin(args.case.split(","))]
        if not len(df):
            raise ValueError(f"no rows for cases {args.case!r} in {args.csv}")
    if args.cost and not Path(args.cost).is_file():
        raise ValueError(f"--cost: no file at {args.cost!r}")
    cost = pd.read_csv(args.cost) if args.cost else None
    if args.steal:
        t = steal_table(df, cost)
        cols = ["case", "variant", "helper_programs", "repeats"] + (["kernel_us"] if "kernel_us" in t else []) + \
            list(STEAL_FIELDS)
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(t[cols].to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        return 0
    print(report(df, cost))
    return 0
