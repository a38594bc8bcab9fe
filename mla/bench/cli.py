"""``python -m mla info | bench | report``.

    python -m mla info
    python -m mla bench --cases smoke --backend torch --kv-format bf16,fp8,mxfp4          # CPU
    python -m mla bench --cases leaderboard --backend torch,flashinfer --kv-format bf16,fp8 \\
        --mode cold,warm,kernel --out data/measured/h200/lb.csv
    python -m mla bench --cases bs64-kv8192-q1-h16 --backend triton --sweep num_splits=1,2,4,8
    python -m mla report data/measured/h200/*.csv
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

import torch


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


# --- info --------------------------------------------------------------------------------------
def backend_table() -> list[dict]:
    """Like mla.backends.backends(), but a backend whose module is missing or fails to import is
    listed as unavailable with the reason instead of ending the listing."""
    from ..backends import _BACKEND_MODULES, get_backend

    rows = []
    for name in _BACKEND_MODULES:
        try:
            b = get_backend(name)
            ok, why = b.availability()
            rows.append(dict(name=name, available=ok, reason=why, kv_formats=",".join(b.kv_formats),
                             q_formats=",".join(b.q_formats), description=b.description))
        except Exception as e:  # ImportError for a module not written yet, or a broken import
            rows.append(dict(name=name, available=False, reason=f"cannot import: {type(e).__name__}: {e}",
                             kv_formats="", q_formats="", description=""))
    return rows


def info_lines() -> list[str]:
    from . import provenance as prov

    v = prov.versions()
    commit, dirty = prov.git_state()
    lines = [f"platform  {platform.platform()} ({platform.machine()}), python {v['python']}",
             f"torch     {v['torch']} ({v['gpu_runtime']}), triton {v['triton']}",
             f"source    commit {commit}{' (dirty)' if dirty else ''}, source_hash {prov.source_hash()}"]
    if torch.cuda.is_available():
        lines.append(f"driver    {prov.driver_version()}")
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            cap = f"sm_{p.major}{p.minor}" if not torch.version.hip else getattr(p, "gcnArchName", "?")
            l2 = getattr(p, "L2_cache_size", 0) / 2**20
            lines.append(f"device {i}  {p.name} [{cap}] {p.total_memory / 2**30:.0f} GiB, "
                         f"{p.multi_processor_count} SMs/CUs, L2 {l2:.0f} MiB -> slug {prov.device_slug(f'cuda:{i}')}")
    else:
        lines.append("device    no CUDA/ROCm device: CPU only (bench mode 'cpu', torch backend)")
    return lines


def cmd_info(args) -> int:
    for line in info_lines():
        print(line)
    rows = backend_table()
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title="backends")
        for c in ("name", "available", "kv_formats", "q_formats", "reason / description"):
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(r["name"], "yes" if r["available"] else "no", r["kv_formats"], r["q_formats"],
                      r["reason"] if not r["available"] else r["description"])
        Console(width=160).print(t)
    except ImportError:  # pragma: no cover
        for r in rows:
            print(r)
    return 0


# --- bench -------------------------------------------------------------------------------------
def default_out(device: torch.device, run_id: str) -> Path:
    from . import provenance as prov

    return prov.REPO_ROOT / "data" / "measured" / prov.device_slug(device) / f"{run_id}.csv"


def cmd_bench(args) -> int:
    import pandas as pd

    from . import provenance as prov
    from .harness import expand_configs, iter_bench, parse_assignments, resolve_cases
    from .report import print_summary
    from .schema import COLUMNS, rows_to_frame, validate
    from .stats import StoppingRule

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cases = resolve_cases(_csv_list(args.cases))
    configs = expand_configs(parse_assignments(args.config, multi=False), parse_assignments(args.sweep, multi=True))
    rule = StoppingRule(min_runs=args.min_runs, max_runs=args.max_runs, max_seconds=args.max_seconds,
                        rel_sem=args.rel_sem)
    run_id = prov.new_run_id(device)
    out = Path(args.out) if args.out else default_out(device, run_id)
    if out.exists() and not args.append:
        raise ValueError(f"{out} exists; pass --append to add rows, or choose another --out")
    if out.exists():
        header = pd.read_csv(out, nrows=0).columns.tolist()
        if header != list(COLUMNS):
            raise ValueError(f"{out} has another schema's header; write a new file")
    out.parent.mkdir(parents=True, exist_ok=True)
    backends = _csv_list(args.backend)
    kv_formats, q_formats = _csv_list(args.kv_format), _csv_list(args.q_format)
    modes = _csv_list(args.mode) if args.mode else None
    total = len(cases) * len(backends) * len(kv_formats) * len(q_formats) * len(configs)
    bandwidth = None
    if args.bandwidth_gbs:
        r, c = (float(x) for x in args.bandwidth_gbs.split(","))
        bandwidth = dict(read_gbs=r, copy_gbs=c)
    print(f"run {run_id}: {total} rows -> {out}", flush=True)

    from tqdm import tqdm

    rows = []
    bar = tqdm(total=total, unit="row", file=sys.stderr, disable=args.no_progress)
    for row in iter_bench(cases, backends, kv_formats, q_formats, configs, modes=modes, device=device,
                          rule=rule, run_id=run_id, bandwidth=bandwidth):
        rows.append(row)
        frame = validate(pd.DataFrame([row], columns=list(COLUMNS)))
        # one row at a time: a run killed at its time limit keeps what it measured
        frame.to_csv(out, mode="a", header=not out.exists(), index=False)
        bar.set_postfix_str(f"{row['case']} {row['backend']} {row['kv_format']} {row['status']}")
        bar.update(1)
    bar.close()
    df = rows_to_frame(rows)
    print_summary(df)
    print(f"wrote {len(df)} rows to {out}")
    n_bad = int((df["status"].isin(["failed", "error"])).sum())
    return 1 if n_bad and args.strict else 0


def cmd_report(args) -> int:
    from .report import print_summary
    from .schema import load_results

    import glob

    import pandas as pd

    frames = []
    for pattern in args.files:  # a file that does not validate is named and skipped, not fatal
        for f in sorted(glob.glob(pattern)) or [pattern]:
            try:
                frames.append(load_results(f))
            except (ValueError, OSError) as e:
                print(f"skipping {f}: {e}")
    if not frames:
        raise ValueError(f"no readable result files in {args.files}")
    df = pd.concat(frames, ignore_index=True)
    if args.case:
        df = df[df["case"].isin(_csv_list(args.case))]
    print_summary(df)
    return 0


def register(sub) -> None:
    p = sub.add_parser("info", help="platform, devices, versions, backends and why any is unavailable")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("bench", help="check then time backends on cases; write schema rows to CSV",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--cases", default="smoke",
                   help="case sets (leaderboard, tests, extended, smoke) and/or case names, comma-separated")
    p.add_argument("--backend", default="torch", help="backends, comma-separated (python -m mla info lists them)")
    p.add_argument("--kv-format", default="fp8", help="bf16,fp8,mxfp4")
    p.add_argument("--q-format", default="bf16", help="bf16,fp8 (fp8: the backend quantizes Q inside the call)")
    p.add_argument("--mode", default=None,
                   help="cold,warm,kernel,fresh on a GPU (default all four; fresh = new inputs before every "
                        "call, as the leaderboard's eval.py); cpu on CPU (default)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="fixed backend config, repeatable (e.g. mode=persistent)")
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2",
                   help="sweep axis, repeatable; axes combine as a cartesian product (e.g. num_splits=1,2,4,8)")
    p.add_argument("--device", default=None, help="cuda, cuda:1 or cpu (default: cuda if present)")
    p.add_argument("--out", default=None,
                   help="CSV path (default data/measured/<device-slug>/<run_id>.csv); never overwritten")
    p.add_argument("--append", action="store_true", help="add rows to an existing --out of the same schema")
    p.add_argument("--min-runs", type=int, default=10)
    p.add_argument("--max-runs", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=1.0, help="sampling time cap per mode per row")
    p.add_argument("--rel-sem", type=float, default=1e-3, help="stop when SEM/mean falls below this")
    p.add_argument("--bandwidth-gbs", default=None, metavar="READ,COPY",
                   help="skip the bandwidth probe and use these GB/s (e.g. from an earlier run)")
    p.add_argument("--strict", action="store_true", help="exit 1 if any row failed its check or errored")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("report", help="summary tables of result CSVs (validated by load_results)")
    p.add_argument("files", nargs="+", help="CSV paths or globs")
    p.add_argument("--case", default=None, help="only these case names, comma-separated")
    p.set_defaults(func=cmd_report)
