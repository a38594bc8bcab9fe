"""Issues 9 and 10's speed targets, evaluated on the manifest's leaderboard rows.

Issues 9 (quantized KV at the speed of its bytes) and 10 (small and medium shapes at the floor) each
end in a list of targets stated on benchmark rows. Every campaign used to restate them by hand in the
notes; this module computes them from the rows instead, so README's scoreboard, ``python -m mla
report --targets`` and the notes cannot disagree (``tests/test_targets.py`` holds README to it).

One :class:`Item` per measured quantity: the case and KV format it belongs to, the timing mode, the
value, the limit and whether it is met. A target's status is ``met`` when every item is, ``missed``
when none is, else ``partial``. The definitions, as the issues state them and the notes measured them:

- *read probe*: each row's own run's ``read_gbs`` (``kernel_pct_read_bw`` is kernel time against it);
- *memory floor*: ``io_bytes`` over that bandwidth; *launch floor*: the run's ``graph_floor_us`` (a
  one-kernel graph replay of a near-empty kernel);
- *default call*: the rows of the backend's default config (:func:`measured.default_rows`); *best
  format per shape*: the fastest of a backend's KV formats on each of the 8 shapes, in that mode.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass

import pandas as pd

from . import measured

KV8192 = ("bs4-kv8192-q1-h16", "bs32-kv8192-q1-h16", "bs64-kv8192-q1-h16", "bs256-kv8192-q1-h16")
SMALL = ("bs4-kv8192-q1-h16", "bs32-kv1024-q1-h16", "bs64-kv1024-q1-h16")
MEDIUM = ("bs32-kv8192-q1-h16", "bs64-kv8192-q1-h16")
BIG = "bs256-kv8192-q1-h16"
TINY = "bs4-kv1024-q1-h16"
# issue 10's small shapes, bs4-kv1024 (its own target) with SMALL: the four leaderboard shapes of fewest bytes,
# where the host's share of a call is largest (notebook 05 section 3 reads them)
SMALL_SHAPES = (TINY, *SMALL)
FORMATS = ("bf16", "fp8", "mxfp4")
JUDGED_BACKENDS = ("triton", "flashinfer")  # the backends :func:`items` reads (FlashInfer beside the geomean)
ISSUES_DEVICE = "NVIDIA H200"  # the device the issues state their targets on
ITEM_COLUMNS = ("issue", "target", "case", "kv_format", "mode", "value", "op", "limit", "unit", "met", "run_id",
                "git_commit", "floor_us", "probe_gbs", "lowest", "paired")


@dataclass(frozen=True)
class Target:
    issue: int
    key: str
    text: str  # the issue's words, shortened
    per: str = "item"  # what the status counts: "item" (each comparison) or "case" (a shape meets when all its items do)


TARGETS = (
    Target(9, "fp8-bs256", "bs256-kv8192 fp8 kernel time <= 330 us and >= 85% of the read probe"),
    Target(9, "mxfp4-bs256", "bs256-kv8192 MXFP4 kernel time <= 250 us and >= 60% of the read probe"),
    Target(9, "order-kv8192", "every kv8192 shape: MXFP4 <= fp8 <= bf16 (kernel time)", per="case"),
    Target(9, "accuracy", "every quantized row: own-format rel_l2 < 1e-2, the leaderboard check passed"),
    Target(10, "bs4-kv1024", "bs4-kv1024, every format: default call <= 1.3x graph_floor_us (cold and fresh)"),
    Target(10, "small-kernel", "bs4-kv8192, bs32-kv1024, bs64-kv1024: kernel <= 2x (memory floor + launch floor)"),
    Target(10, "read-share", "bs32-kv8192 and bs64-kv8192: >= 75% of the read probe (kernel time)"),
    Target(10, "geomean", "geomean of the default call, best format per shape, <= 40 us (cold and fresh)"),
)


def _f(r, col: str) -> float:
    """A row's number, NaN where the column is absent or empty (an older schema, a mode not run)."""
    v = r.get(col) if r is not None else None
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def cold_lowest_us(r) -> float:
    """The least a 'cold' call of this row could take, NaN where the run did not measure
    ``graph_floor_kernel_us``. The cold mode synchronizes before its start event, so the host's work until the
    launch and the device's work run one after the other: a call that replays a graph whose device time is
    ``kernel_median_us`` costs at least the graph floor's host part (``graph_floor_us`` less its kernel's device
    time, ``graph_floor_kernel_us``) plus that device time. Any Python on top of a bare replay only adds. An
    estimate, not a proof: it takes the device time of both graphs from the kernel mode, where the launch overlaps
    the flush, and so assumes a launch that meets an idle GPU (the cold order) costs both graphs alike."""
    return _f(r, "graph_floor_us") - _f(r, "graph_floor_kernel_us") + _f(r, "kernel_median_us")


def _row(d: pd.DataFrame, case: str, fmt: str):
    hit = d[(d["case"] == case) & (d["kv_format"] == fmt)]
    return hit.iloc[0] if len(hit) else None


def _item(t: Target, r, mode: str, value: float, op: str, limit: float, unit: str, case=None, fmt=None) -> dict | None:
    """One comparison, or None where the row lacks the value or the limit (a mode or floor it did not measure:
    that item is not counted)."""
    if value != value or limit != limit:  # NaN
        return None
    met = value <= limit if op == "<=" else value >= limit if op == ">=" else value < limit
    return dict(issue=t.issue, target=t.key, case=case if case is not None else r["case"],
                kv_format=fmt if fmt is not None else r["kv_format"], mode=mode, value=float(value), op=op,
                limit=float(limit), unit=unit, met=bool(met), run_id=None if r is None else r.get("run_id"),
                git_commit=None if r is None else r.get("git_commit"))


def _geomean_best(d: pd.DataFrame, mode: str) -> tuple[float, int]:
    from ..bench.stats import geomean

    if f"{mode}_median_us" not in d:
        return float("nan"), 0
    best = d.dropna(subset=[f"{mode}_median_us"]).groupby("case")[f"{mode}_median_us"].min()
    return geomean(best), int(best.index.isin(measured.LEADERBOARD_CASES).sum())


def leaderboard_default(rows: pd.DataFrame) -> pd.DataFrame:
    """The Triton leaderboard rows of the default config, bf16 Q, of any status (latest per run key)."""
    d = measured.latest_runs(rows)
    d = d[(d["backend"] == "triton") & (d["q_format"] == "bf16") & d["case"].isin(measured.LEADERBOARD_CASES)]
    if "purpose" in d:
        d = d[d["purpose"] == "leaderboard"]
    return d[measured._default_config(d)]


def items(rows: pd.DataFrame | None) -> pd.DataFrame | None:
    """Every target's items on ``rows`` (the manifest's rows: :func:`mla.analysis.manifest.rows`), or
    None when they hold no default-config Triton leaderboard rows. FlashInfer's best-format geomean is
    added beside the geomean target (``target`` = "geomean", ``kv_format`` = "flashinfer best"; never
    counted in the status)."""
    tri = measured.default_rows(rows, "triton") if rows is not None else None
    if tri is None:
        return None
    out = []
    T = {t.key: t for t in TARGETS}

    for fmt, us, pct in (("fp8", 330.0, 85.0), ("mxfp4", 250.0, 60.0)):
        t = T[f"{fmt}-bs256"]
        r = _row(tri, BIG, fmt)
        if r is not None:
            out.append(_item(t, r, "kernel", _f(r, "kernel_median_us"), "<=", us, "us"))
            out.append(_item(t, r, "kernel", _f(r, "kernel_pct_read_bw"), ">=", pct, "% read"))

    t = T["order-kv8192"]
    for case in KV8192:
        r = {f: _row(tri, case, f) for f in FORMATS}
        if any(v is None for v in r.values()):
            continue
        us = {f: _f(r[f], "kernel_median_us") for f in FORMATS}
        out.append(_item(t, r["mxfp4"], "kernel", us["mxfp4"], "<=", us["fp8"], "us vs fp8", fmt="mxfp4"))
        out.append(_item(t, r["fp8"], "kernel", us["fp8"], "<=", us["bf16"], "us vs bf16", fmt="fp8"))

    t = T["accuracy"]
    every = leaderboard_default(rows)  # every status: a failed check or an error is a miss here
    for fmt in ("fp8", "mxfp4"):
        q = every[every["kv_format"] == fmt]
        if not len(q):
            continue
        good = q[(q["status"] == "ok")]
        if len(good) == len(measured.LEADERBOARD_CASES) == len(q):
            worst = good.loc[good["rel_l2_fmt"].idxmax()]
            out.append(_item(t, worst, "check", worst["rel_l2_fmt"], "<", 1e-2, "rel_l2 (worst shape)"))
        else:  # a shape that failed, errored or is missing
            bad = q[q["status"] != "ok"]
            r = bad.iloc[0] if len(bad) else q.iloc[0]
            out.append(_item(t, r, "check", float("inf"), "<", 1e-2, "rel_l2 (worst shape)"))

    t = T["bs4-kv1024"]
    for fmt in FORMATS:
        r = _row(tri, TINY, fmt)
        if r is None:
            continue
        for mode in ("cold", "fresh"):
            item = _item(t, r, mode, _f(r, f"{mode}_median_us") / _f(r, "graph_floor_us"), "<=", 1.3, "x graph floor")
            lowest = cold_lowest_us(r) / _f(r, "graph_floor_us") if mode == "cold" else float("nan")
            paired = _f(r, "cold_median_us") / _f(r, "cold_floor_us") if mode == "cold" else float("nan")
            out.append(None if item is None else dict(item, floor_us=_f(r, "graph_floor_us"), lowest=lowest,
                                                      paired=paired))

    t = T["small-kernel"]
    for case in SMALL:
        for fmt in FORMATS:
            r = _row(tri, case, fmt)
            if r is None:
                continue
            floor = _f(r, "io_bytes") / (_f(r, "read_gbs") * 1e3) + _f(r, "graph_floor_us")
            out.append(_item(t, r, "kernel", _f(r, "kernel_median_us"), "<=", 2 * floor, "us"))

    t = T["read-share"]
    for case in MEDIUM:
        for fmt in FORMATS:
            r = _row(tri, case, fmt)
            if r is not None:  # (the share moves with the run's probe: round 63 saw it move 2.9% between runs)
                item = _item(t, r, "kernel", _f(r, "kernel_pct_read_bw"), ">=", 75.0, "% read")
                out.append(None if item is None else dict(item, probe_gbs=_f(r, "read_gbs")))

    t = T["geomean"]
    for mode in ("cold", "fresh", "kernel"):
        g, n = _geomean_best(tri, mode)
        if n == len(measured.LEADERBOARD_CASES):
            r = tri.iloc[0]
            out.append(_item(t, r, mode, g, "<=", 40.0, "us", case="8 shapes", fmt="triton best"))
    fi = measured.default_rows(rows, "flashinfer")
    if fi is not None:
        for mode in ("cold", "fresh", "kernel"):
            g, n = _geomean_best(fi, mode)
            if n == len(measured.LEADERBOARD_CASES):
                item = _item(t, fi.iloc[0], mode, g, "<=", 40.0, "us", case="8 shapes", fmt="flashinfer best")
                if item is not None:
                    out.append(dict(item, met=None))  # beside the target, not part of it
    return pd.DataFrame([o for o in out if o is not None], columns=list(ITEM_COLUMNS))


@dataclass(frozen=True)
class Campaign:
    """One campaign's rows, checked by :func:`campaign` for :func:`items`: the rows, the GPU and (short) commit they
    name (None where the rows name none: an older schema) and what they are (for messages)."""
    rows: pd.DataFrame
    device: str | None
    commit: str | None
    what: str

    @property
    def note(self) -> str | None:
        """The line to print beside the verdicts (stderr) where the rows ran on another GPU than the issues'."""
        if self.device is None or self.device == ISSUES_DEVICE:
            return None
        return (f"note: the issues state these targets on an H200; these rows ran on {self.device} "
                "(each floor is its own run's)")


def campaign(rows: pd.DataFrame | None, what: str = "these files", fix: str = "pass one campaign's files") -> Campaign:
    """``rows`` as one campaign the targets can judge, or ValueError: the rows of one device, of one commit (the
    latest row per key would otherwise mix, or drop, campaigns silently) and with a default-config Triton row at
    each of the 8 leaderboard shapes (an A/B or sweep file is not a campaign: its absent shapes would count as
    misses). ``what`` names the rows in the messages, ``fix`` says what to do about two commits. Both ways of
    ``python -m mla report --targets`` (campaign files, the manifest's runs: :func:`manifest_campaign`) pass here."""
    if rows is None or rows.empty:
        raise ValueError(f"--targets: no rows in {what}")
    devices = sorted(rows["device"].dropna().astype(str).unique()) if "device" in rows else []
    if len(devices) > 1:
        raise ValueError(f"--targets judges one device's rows; {what} hold {', '.join(devices)}")
    commits = sorted(rows["git_commit"].dropna().astype(str).str[:7].unique()) if "git_commit" in rows else []
    if len(commits) > 1:
        raise ValueError(f"--targets judges one campaign (one commit); {what} hold rows of "
                         f"{len(commits)} commits ({', '.join(commits)}): {fix}")
    have = set(leaderboard_default(rows)["case"])
    missing = [c for c in measured.LEADERBOARD_CASES if c not in have]
    if missing:
        raise ValueError(f"--targets judges a whole campaign: {what} have no default-config Triton row at "
                         f"{len(missing)} of the 8 leaderboard shapes ({', '.join(missing)})")
    return Campaign(rows, devices[0] if devices else None, commits[0] if commits else None, what)


def newest_campaign_files(device: str = "h200") -> str | None:
    """The glob of the newest campaign under data/measured/<device>/ (``.../campaign<N>-*.csv``) whose files
    :func:`campaign` accepts, or None: the alternative to name where the manifest lists no leaderboard run."""
    from ..bench.schema import load_results

    folder = measured.DATA / "measured" / device
    nums = sorted({int(m.group(1)) for f in folder.glob("campaign*-*.csv")
                   if (m := re.fullmatch(r"campaign(\d+)-.+\.csv", f.name))}, reverse=True)
    for n in nums:
        pattern = f"{measured._rel(folder)}/campaign{n}-*.csv"
        try:
            files = sorted(glob.glob(str(folder / f"campaign{n}-*.csv")))
            campaign(pd.concat([load_results(f) for f in files], ignore_index=True))
        except (ValueError, OSError):
            continue
        return pattern
    return None


def manifest_campaign(device: str = "h200", man=None) -> Campaign:
    """The campaign ``python -m mla report --targets [--device D]`` judges: the rows of the manifest's leaderboard
    runs for ``device`` of the backends the targets read (:data:`JUDGED_BACKENDS`), checked as campaign files are
    (:func:`campaign`). Where the manifest lists no such run for ``device`` this refuses, naming the newest
    campaign's files to judge instead, rather than read every current row of the device (several campaigns of
    several commits: :func:`mla.analysis.manifest.rows`' fallback, right for tables, wrong for a verdict). Without a
    manifest (a fixture tree) the device's current rows are the campaign, if they pass the same checks."""
    from . import manifest

    man = man if man is not None else manifest.load()
    if man is None:
        rows = manifest.rows(device, "leaderboard")
        what = f"the rows under data/measured/{device}/ (no manifest)"
        fix = "keep one campaign's files there, or pass one campaign's files"
    else:
        ids = list(dict.fromkeys(r for b in JUDGED_BACKENDS for r in man.run_ids(device, "leaderboard", backend=b)))
        if not ids:
            alt = newest_campaign_files(device)
            head = (f"--targets judges one campaign: the manifest's leaderboard runs of a device, and "
                    f"{measured._rel(man.path)} lists none for {device!r}")
            if alt is None:
                raise ValueError(f"{head}, nor does {measured._rel(measured.DATA / 'measured' / device)}/ hold a "
                                 "whole campaign to judge instead (campaign<N>-*.csv files of one commit with a "
                                 "default-config Triton row at all 8 leaderboard shapes)")
            raise ValueError(f"{head} (the device's rows together would mix campaigns and commits); judge one "
                             f"campaign's files instead: python -m mla report --targets {alt}")
        rows = manifest.rows(device, "leaderboard", man=man)
        rows = rows[rows["run_id"].isin(ids)].reset_index(drop=True) if rows is not None else None
        what = f"the manifest's {device} leaderboard runs ({', '.join(ids)})"
        fix = f"list one campaign's leaderboard runs for {device!r} in {measured._rel(man.path)}"
    return campaign(rows, what, fix)


def scoreboard(its: pd.DataFrame | None) -> pd.DataFrame | None:
    """One row per target: issue, target, text, status (met / partial / missed / no rows), ``met_items`` of
    counted ``items`` (or, for a target counted per case, met shapes of shapes: ``per``), and ``measured``: the
    items in one short line (the values beside their limits)."""
    if its is None:
        return None
    out = []
    for t in TARGETS:
        g = its[(its["target"] == t.key)]
        counted = g[g["met"].notna()]
        met = counted["met"].astype(bool)
        if t.per == "case":  # "every shape: a <= b <= c" holds at a shape only when both of its comparisons do
            met = met.groupby(counted["case"], sort=False).all()
        n, k = len(met), int(met.sum())
        status = "no rows" if n == 0 else "met" if k == n else "missed" if k == 0 else "partial"
        out.append(dict(issue=t.issue, target=t.key, text=t.text, status=status, met_items=k, items=n, per=t.per,
                        measured=_measured_line(t, g)))
    return pd.DataFrame(out)


def _v(x: float, unit: str) -> str:
    if unit.startswith("x"):
        return f"{x:.2f}x"
    if unit.startswith("%"):
        return f"{x:.0f}%"
    if unit.startswith("rel"):
        return f"{x:.1e}"
    return f"{x:.1f}"


def _short(case: str) -> str:
    return case.replace("-q1-h16", "")


def _measured_line(t: Target, g: pd.DataFrame) -> str:
    if g.empty:
        return ""
    mark = {True: "", False: " (missed)", None: ""}
    if t.key in ("fp8-bs256", "mxfp4-bs256"):
        return ", ".join(f"{r.value:.1f} us{mark[bool(r.met)]}" if r.unit == "us" else
                         f"{r.value:.0f}% of read{mark[bool(r.met)]}" for r in g.itertuples())
    if t.key == "order-kv8192":
        parts = []
        for case, c in g.groupby("case", sort=False):
            if len(c) != 2:
                continue
            mx, f8 = c.iloc[0], c.iloc[1]
            sign = lambda a, b: "<=" if a <= b else ">"  # noqa: E731
            parts.append(f"{_short(case).split('-')[0]}: {mx.value:.1f} {sign(mx.value, mx.limit)} {f8.value:.1f} "
                         f"{sign(f8.value, f8.limit)} {f8.limit:.1f}")
        return "; ".join(parts)
    if t.key == "accuracy":
        return "; ".join(f"{r.kv_format} {_short(r.case)}: a shape failed its check or has no row (missed)"
                         if r.value == float("inf") else
                         f"{r.kv_format} worst {r.value:.1e} ({_short(r.case)}){mark[bool(r.met)]}"
                         for r in g.itertuples())
    if t.key == "geomean":
        parts = []
        for fmt, c in g.groupby("kv_format", sort=False):
            who = fmt.split()[0]
            parts.append(f"{who}: " + " / ".join(f"{r.mode} {r.value:.1f}" for r in c.itertuples()))
        return "; ".join(parts) + " us"
    if t.key == "small-kernel":
        worst = g.loc[(g["value"] / g["limit"]).idxmax()]
        k = int(g["met"].astype(bool).sum())
        return (f"{k} of {len(g)} under their limits; tightest {_short(worst.case)} {worst.kv_format} "
                f"{worst.value:.1f} us against {worst.limit:.1f}")
    if t.key == "read-share":
        fmt = []
        for f, c in g.groupby("kv_format", sort=False):
            fmt.append(f"{f} " + " / ".join(f"{v:.0f}" for v in c["value"]) + "%")
        cases = " / ".join(_short(c).split("-")[0] for c in dict.fromkeys(g["case"]))
        probe = ""
        if "probe_gbs" in g and g["probe_gbs"].notna().any():
            lo, hi = g["probe_gbs"].min(), g["probe_gbs"].max()
            probe = f"; probe {lo:.0f} GB/s" if round(lo) == round(hi) else f"; probes {lo:.0f}-{hi:.0f} GB/s"
        return ", ".join(fmt) + f" ({cases}-kv8192{probe})"
    if t.key == "bs4-kv1024":
        modes = []
        for mode, c in g.groupby("mode", sort=False):
            modes.append(f"{mode} " + " / ".join(f"{v:.2f}" for v in c["value"]) + "x")
        fmts = " / ".join(dict.fromkeys(g["kv_format"]))
        floor = f" of a {g['floor_us'].iloc[0]:.1f}-us floor" if "floor_us" in g and g["floor_us"].notna().any() else ""
        cold = g[(g["mode"] == "cold")]
        extra = ""  # (runs from before round 72's columns have neither: their line is unchanged)
        if "paired" in cold and len(cold) and cold["paired"].notna().all():
            extra += ("; cold against each row's interleaved floor " + " / ".join(f"{v:.2f}" for v in cold["paired"])
                      + "x")
        if "lowest" in cold and len(cold) and cold["lowest"].notna().all():
            extra += ("; cold's least with these kernels " + " / ".join(f"{v:.2f}" for v in cold["lowest"]) +
                      "x (floor's host part + kernel)")
        return ", ".join(modes) + f" ({fmts}){floor}{extra}"
    return "; ".join(f"{_short(r.case)} {r.kv_format} {_v(r.value, r.unit)}{mark[bool(r.met)]}" for r in g.itertuples())


def markdown(board: pd.DataFrame, its: pd.DataFrame, command: str = "python -m mla report --targets") -> str:
    """README's scoreboard block: one table row per target, then the rows' provenance line (``command``: what
    prints the table from them)."""
    lines = ["| issue | target | status | measured (us unless marked) |", "|---|---|---|---|"]
    for r in board.itertuples():
        status = f"**{r.status}**" if r.status == "met" else r.status
        if r.status == "partial":
            status += f" ({r.met_items} of {r.items}{' shapes' if r.per == 'case' else ''})"
        lines.append(f"| {r.issue} | {r.text} | {status} | {r.measured} |")
    runs = sorted({str(x) for x in its["run_id"].dropna()})
    commits = sorted({str(x) for x in its["git_commit"].dropna()})
    lines.append("")
    lines.append(f"Rows: runs {', '.join(runs)} (commit {', '.join(commits)}); "
                 f"`{command}` prints this table from them.")
    return "\n".join(lines)


README_BEGIN = "<!-- targets:begin (python -m mla report --targets --markdown) -->"
README_END = "<!-- targets:end -->"


def readme_block(text: str) -> str | None:
    """The scoreboard block of README's text (between the markers), or None."""
    if README_BEGIN not in text or README_END not in text:
        return None
    return text[text.index(README_BEGIN) + len(README_BEGIN):text.index(README_END)].strip()
