"""One row set: ``data/manifest.toml`` names the runs behind every headline number.

README's result table, the notebooks and ``python -m mla report --manifest`` read measured rows
through this module, never by hard-coded run ids, so a new campaign changes the manifest (and
README, which ``tests/test_manifest.py`` checks against it) and nothing else.

Every row gets three columns: ``purpose`` (leaderboard / splits / variants / graph / quantized_q /
extended: the manifest's word for a listed run, else inferred from the row's ``command``),
``campaign`` and ``stale`` (True for rows of older code: a ``[[stale]]`` campaign or git commit).
Stale rows never enter best / slowest / geomean claims: :func:`rows` drops them unless asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import measured

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - python < 3.11 is not supported (pyproject)
    tomllib = None

PURPOSES = ("leaderboard", "splits", "variants", "graph", "quantized_q", "extended")
RUN_FIELDS = ("device", "run_id", "purpose", "backend", "campaign", "bandwidth")


def default_path() -> Path:
    return measured.DATA / "manifest.toml"


@dataclass
class Manifest:
    path: Path
    runs: pd.DataFrame  # one row per [[run]]: RUN_FIELDS
    stale: list[dict] = field(default_factory=list)
    ablation: pd.DataFrame = field(default_factory=pd.DataFrame)
    devices: dict = field(default_factory=dict)

    def run_ids(self, device: str = "h200", purpose: str | None = None, backend: str | None = None) -> list[str]:
        r = self.runs[self.runs.device == device]
        if purpose is not None:
            r = r[r.purpose == purpose]
        if backend is not None:
            # (bool dtype: an empty object Series would index columns, leaving no run_id column)
            r = r[r.backend.map(lambda bs: backend in str(bs).split(",")).astype(bool)]
        return list(r.run_id)

    def bandwidth_run(self, device: str = "h200") -> str | None:
        r = self.runs[(self.runs.device == device) & self.runs.bandwidth]
        return r.run_id.iloc[0] if len(r) else None


def _validate(runs: pd.DataFrame, path: Path) -> None:
    bad = sorted(set(runs.purpose) - set(PURPOSES))
    if bad:
        raise ValueError(f"{path}: unknown purpose(s) {bad}; choose from {PURPOSES}")
    dup = runs.run_id[runs.run_id.duplicated()].tolist()
    if dup:
        raise ValueError(f"{path}: run(s) listed twice: {dup}")
    many = runs[runs.bandwidth].groupby("device").size()
    if (many > 1).any():
        raise ValueError(f"{path}: more than one bandwidth = true run for {list(many[many > 1].index)}")


def load(path: str | Path | None = None) -> Manifest | None:
    """The manifest, or None when the data tree has none (a fixture tree: every row then counts)."""
    path = Path(path) if path is not None else default_path()
    if not path.exists():
        return None
    with open(path, "rb") as fh:
        raw = tomllib.loads(fh.read().decode())
    runs = pd.DataFrame([{k: r.get(k) for k in RUN_FIELDS} for r in raw.get("run", [])], columns=list(RUN_FIELDS))
    missing = runs[runs[["device", "run_id", "purpose"]].isna().any(axis=1)]
    if len(missing):
        raise ValueError(f"{path}: every [[run]] needs device, run_id and purpose; incomplete: {missing.to_dict('records')}")
    runs["bandwidth"] = runs["bandwidth"].fillna(False).astype(bool)
    runs["backend"] = runs["backend"].fillna("")
    _validate(runs, path)
    return Manifest(path, runs, raw.get("stale", []), pd.DataFrame(raw.get("ablation", [])), raw.get("device", {}))


def infer_purpose(command) -> str:
    """A row's purpose from its bench command, for runs the manifest does not list (live mode)."""
    c = str(command or "")
    for flag, purpose in (("--sweep num_splits", "splits"), ("--sweep variant", "variants"), ("--sweep graph", "graph")):
        if flag in c:
            return purpose
    if re.search(r"--q-format \S*(fp8|mxfp4)", c):
        return "quantized_q"
    return "extended" if "--cases extended" in c else "leaderboard"


def tag(df: pd.DataFrame | None, man: Manifest | None = None) -> pd.DataFrame | None:
    """``df`` with ``purpose``, ``campaign``, ``listed`` (named by a [[run]]) and ``stale``."""
    if df is None:
        return None
    df = df.copy()
    df["purpose"] = df["command"].map(infer_purpose) if "command" in df else "leaderboard"
    df["campaign"] = None
    df["listed"] = False
    df["stale"] = False
    if man is None:
        return df
    by_id = man.runs.set_index("run_id")
    hit = df["run_id"].isin(by_id.index)
    df.loc[hit, "purpose"] = df.loc[hit, "run_id"].map(by_id["purpose"])
    df.loc[hit, "campaign"] = df.loc[hit, "run_id"].map(by_id["campaign"])
    df.loc[hit, "listed"] = True
    for s in man.stale:
        m = pd.Series(True, index=df.index)
        if s.get("git_commit"):
            m &= df["git_commit"].astype(str).str.startswith(str(s["git_commit"])[:7])
        if s.get("run_id"):
            m &= df["run_id"] == s["run_id"]
        df.loc[m, "stale"] = True
        df.loc[m & df["campaign"].isna(), "campaign"] = s.get("campaign")
    return df


def rows(device: str = "h200", purposes=None, *, include_stale: bool = False, files=None,
         man: Manifest | None = None) -> pd.DataFrame | None:
    """Measured rows through the manifest: the runs it lists for ``device`` (all current rows where
    it lists none, or where ``files`` are given, as in live mode), tagged (see :func:`tag`)."""
    man = man if man is not None else load()
    df = tag(measured.load_measured(device, files=files), man)
    if df is None:
        return None
    listed = man is not None and files is None and len(man.run_ids(device))
    keep = df["listed"] if listed else ~df["stale"]
    if include_stale:
        keep |= df["stale"]
    if purposes is not None:
        keep &= df["purpose"].isin([purposes] if isinstance(purposes, str) else list(purposes))
    out = df[keep]
    return out.reset_index(drop=True) if len(out) else None


def headline(df: pd.DataFrame | None, mode: str = "cold", n_cases: int = len(measured.LEADERBOARD_CASES)) -> pd.DataFrame | None:
    """backend x kv_format geomean (us) of ``mode`` over the leaderboard rows (purpose leaderboard,
    bf16 Q, default configs, ok, not stale); NaN where a backend did not pass all 8 shapes."""
    from ..bench.stats import geomean

    if df is None:
        return None
    lb = df[(df["purpose"] == "leaderboard") & ~df["stale"]]
    lb = measured.ok_rows(lb, q_format="bf16")
    if lb is None:
        return None
    lb = lb[measured._default_config(lb)].dropna(subset=[f"{mode}_median_us"])
    g = lb.groupby(["backend", "kv_format"])[f"{mode}_median_us"].agg(["count", geomean])
    g.loc[g["count"] < n_cases, "geomean"] = float("nan")
    return g["geomean"].unstack("kv_format")


def read_bandwidth(df: pd.DataFrame | None, man: Manifest | None = None, device: str = "h200") -> tuple[float, str] | None:
    """(read_gbs, run_id) of the run the manifest marks ``bandwidth = true`` for ``device`` (else, or
    when ``df`` does not hold that run - live rows -, the triton leaderboard run, else the median over
    the rows)."""
    if df is None or "read_gbs" not in df:
        return None
    man = man if man is not None else load()
    rid = man.bandwidth_run(device) if man is not None else None
    if rid is not None and not (df.run_id == rid).any():
        rid = None  # live rows: their own run's probe, not the manifest's run of another session
    if rid is None:
        lb = df[(df["purpose"] == "leaderboard") & (df["backend"] == "triton")]
        rid = lb.run_id.iloc[0] if len(lb) else None
    sel = df[df.run_id == rid] if rid is not None else df
    return (float(sel["read_gbs"].median()), rid or "median of the rows") if len(sel) else None


ABLATION_COUNTS = ("sass_mma", "sass_wgmma", "registers", "warp_instr_per_token", "smem_bytes_per_token")


def ablation_chain(df: pd.DataFrame | None, static: pd.DataFrame | None, man: Manifest | None = None,
                   case: str = "bs256-kv8192-q1-h16", mode: str = "kernel") -> pd.DataFrame | None:
    """The manifest's ``[[ablation]]`` steps as rows: step, kv_format, variant, what changed (the
    entry's ``changed`` or the variant's own line), its sm90 SASS counts (the columns of
    ABLATION_COUNTS that data/static/sm90 has, and the table's ``compiler``), its measured ``mode`` time at
    ``case`` (each variant at its heuristic split; NaN where no manifest run measured it), that row's
    ``source_csv`` and ``pct_read_bw`` (``{mode}_pct_read_bw``: the time against the run's read probe).
    ``static`` must hold one compiler's table (``measured.load_static`` returns one): a variant's counts
    are taken from its one row, never from whichever of two compilers' rows comes first."""
    man = man if man is not None else load()
    if man is None or man.ablation.empty:
        return None
    if static is not None and "compiler" in static and static["compiler"].nunique() > 1:
        raise ValueError(f"ablation_chain needs one compiler's static table, got {sorted(static['compiler'].unique())}: "
                         "read it with measured.load_static(target, triton=...)")
    try:
        from ..kernels.triton.variants import VARIANTS
    except Exception:  # triton missing: no registry text
        VARIANTS = {}
    out = []
    for f, steps in man.ablation.groupby("kv_format", sort=False):
        t = measured.variant_sweep(df, f, mode) if df is not None else None
        used = measured.variant_sweep_rows(df, f, mode) if t is not None else None
        for k, s in enumerate(steps.itertuples(), 1):
            v = s.variant
            changed = getattr(s, "changed", None)
            if not isinstance(changed, str):
                changed = VARIANTS[v].what_changed if v in VARIANTS else ""
            rec = dict(step=k, kv_format=f, variant=v, changed=changed, case=case,
                       kernel_us=float(t.loc[case, v]) if t is not None and case in t.index and v in t.columns else float("nan"))
            row = used[(used["case"] == case) & (used["variant"] == v)] if used is not None and rec["kernel_us"] == rec["kernel_us"] else None
            rec["source_csv"] = str(row["source_csv"].iloc[0]) if row is not None and len(row) else ""
            pct = f"{mode}_pct_read_bw"
            rec["pct_read_bw"] = float(row[pct].iloc[0]) if row is not None and len(row) and pct in row else float("nan")
            hit = None if static is None else static[(static.variant == v) & (static.kv_format == f)
                                                      & ~static.kernel.astype(str).str.contains("reduce")]
            for c in ABLATION_COUNTS:
                rec[c] = float(hit[c].iloc[0]) if hit is not None and c in hit and len(hit) and pd.notna(hit[c].iloc[0]) else float("nan")
            rec["compiler"] = str(hit["compiler"].iloc[0]) if hit is not None and "compiler" in hit and len(hit) else ""
            out.append(rec)
    return pd.DataFrame(out)
