"""``python -m mla info | bench | report``.

    python -m mla info
    python -m mla bench --cases smoke --backend torch --kv-format bf16,fp8,mxfp4          # CPU
    python -m mla bench --cases leaderboard --backend torch,flashinfer --kv-format bf16,fp8 \\
        --mode cold,warm,kernel --out data/measured/h200/lb.csv
    python -m mla bench --cases bs64-kv8192-q1-h16 --backend triton --sweep num_splits=1,2,4,8
    python -m mla report data/measured/h200/*.csv
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import torch

from ..argtypes import DefaultsHelpFormatter, csv_list, positive_float, positive_floats
from .stats import StoppingRule


# --- info --------------------------------------------------------------------------------------
def backend_table() -> list[dict]:
    """Like mla.list_backends(), but a backend whose module is missing or fails to import is
    listed as unavailable with the reason instead of ending the listing."""
    from ..backends import _BACKEND_MODULES, get_backend

    rows = []
    for name in _BACKEND_MODULES:
        try:
            b = get_backend(name)
            ok, why = b.availability()
            status = "yes" if ok else "no"
            if ok and "cuda" not in b.devices and not torch.cuda.is_available():
                ok, status, why = False, "no", f"runs on {'/'.join(b.devices)}; no GPU here"
            elif ok and name == "triton" and not torch.cuda.is_available():
                # every triton call on a CPU runs in the interpreter, which must be on before import
                interp = os.environ.get("TRITON_INTERPRET") == "1"
                status = "interpreter" if interp else "interpreter only"
                why = "interpreter only (set TRITON_INTERPRET=1)" + (": set" if interp else "")
            rows.append(dict(name=name, available=ok, status=status, reason=why, kv_formats=",".join(b.kv_formats),
                             q_formats=",".join(b.q_formats), description=b.description))
        except Exception as e:  # ImportError for a module not written yet, or a broken import
            rows.append(dict(name=name, available=False, status="no",
                             reason=f"cannot import: {type(e).__name__}: {e}", kv_formats="", q_formats="",
                             description=""))
    return rows


def info_lines() -> list[str]:
    from . import provenance as prov

    v = prov.versions()
    commit, dirty = prov.git_state()
    lines = [f"platform  {platform.platform()} ({platform.machine()}), python {v['python']}",
             f"torch     {v['torch']} (GPU runtime: {v['gpu_runtime']}), triton {v['triton']}",
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
        lines.append("device    no CUDA/ROCm device: CPU only (bench mode 'cpu'; torch, and triton under its interpreter)")
    return lines


def cmd_info(args) -> int:
    for line in info_lines():
        print(line)
    rows = backend_table()
    for r in rows:  # the notes that decide what a command can do here, as plain lines
        if r["status"] != "yes":
            print(f"{r['name']}: {r['reason']}")
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title="backends")
        for c in ("name", "available", "kv_formats", "q_formats", "reason / description"):
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(r["name"], r["status"], r["kv_formats"], r["q_formats"],
                      r["description"] if r["status"] == "yes" else
                      f"{r['reason']}; {r['description']}" if r["status"].startswith("interp") else r["reason"])
        Console(width=160).print(t)
    except ImportError:  # pragma: no cover
        for r in rows:
            print(r)
    return 0


# --- bench -------------------------------------------------------------------------------------
def default_out(device: torch.device, run_id: str, write: bool = False) -> Path:
    """Where a run's CSV goes without --out: the git-ignored scratch folder out/measured/<slug>/,
    or data/measured/<slug>/ (tracked) with --write."""
    from . import provenance as prov

    return prov.output_root(write) / "measured" / prov.device_slug(device) / f"{run_id}.csv"


# peak host bytes per KV token of one case on CPU: two input sets (timing + check) in every format
# (2 x (1152 + 576 + 312) B) plus the transient fp32 dequantized copies a reference / torch call
# makes (~3 x 2304 B). bs256-kv8192 comes to ~23 GB, the size that was killed at 24.3 GB.
CPU_BYTES_PER_KV_TOKEN = 11_000


def _mem_available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def cpu_memory_budget(max_gb: float | None) -> int | None:
    """The host bytes one case's inputs may take on CPU: ``--max-gb``, else half of MemAvailable
    (None: unknown, no cap). bench and smoke share it."""
    if max_gb is not None:
        return int(max_gb * 1e9)
    avail = _mem_available_bytes()
    return avail // 2 if avail else None


def too_big_here(case, device: torch.device, max_bytes: int | None) -> str:
    """Why ``case``'s inputs would not fit ``max_bytes`` on this CPU ('' when they fit, or on a GPU)."""
    need = case.total_kv * CPU_BYTES_PER_KV_TOKEN
    if device.type == "cpu" and max_bytes is not None and need > max_bytes:
        return f"its inputs need ~{need / 1e9:.1f} GB on CPU, over the {max_bytes / 1e9:.1f} GB budget (--max-gb)"
    return ""


def plan_combos(cases, backends, kv_formats, q_formats, device: torch.device, max_bytes: int | None,
                configs=({},)):
    """Split the request into what can run here and what cannot, before any input is built.

    Unknown names, and configs a backend does not take (``check_configs``), are a ValueError.
    Returns (runnable, skipped): runnable maps case -> [(backend, kv_format, q_format)];
    skipped is a list of (what, why, machine) lines. A combination is skipped when the backend cannot be
    imported, is unavailable here, does not run on this device type, (triton on CPU) the interpreter is
    off, or (CPU) the case's inputs would not fit ``max_bytes``: machine True, this machine is why; or
    when the backend does not take the format: machine False, no machine would run it."""
    import itertools
    import os

    from ..backends import get_backend

    from .harness import check_configs, check_names

    check_names(backends, kv_formats, q_formats)
    check_configs(backends, configs)
    skipped, ok_combos = [], []
    for name in backends:
        try:
            b = get_backend(name)
        except Exception as e:
            skipped.append((name, f"cannot import: {type(e).__name__}: {e}", True))
            continue
        avail, why = b.availability()
        if not avail:
            skipped.append((name, f"unavailable here: {why}", True))
            continue
        if device.type not in b.devices:
            skipped.append((name, f"runs on {'/'.join(b.devices)}, this run is on {device.type}", True))
            continue
        if name == "triton" and device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            skipped.append((name, "on CPU triton is interpreter only (set TRITON_INTERPRET=1)", True))
            continue
        for kvf, qf in itertools.product(kv_formats, q_formats):
            if kvf not in b.kv_formats:
                skipped.append((f"{name} kv={kvf}", f"{name} takes kv_format {','.join(b.kv_formats)}", False))
            elif qf not in b.q_formats:
                skipped.append((f"{name} q={qf}", f"{name} takes q_format {','.join(b.q_formats)}", False))
            else:
                ok_combos.append((name, kvf, qf))
    runnable = {}
    for case in cases:
        too_big = too_big_here(case, device, max_bytes) if ok_combos else ""
        if too_big:
            skipped.append((case.name, too_big, True))
            continue
        if ok_combos:
            runnable[case] = list(ok_combos)
    return runnable, list(dict.fromkeys(skipped))


def check_device(text: str | None) -> torch.device:
    """The device a command runs on; a GPU request on a machine without one is one clear error."""
    try:
        device = torch.device(text or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError:  # torch's own message lists every device type it knows, tpu and xla included
        raise ValueError(f"--device {text}: use cpu, cuda or cuda:N") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {text}: this machine has no CUDA/ROCm device (torch {torch.__version__}, "
                             "CPU build or no GPU visible); use --device cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"--device {text}: only {torch.cuda.device_count()} GPU(s) here")
    elif device.type != "cpu":
        raise ValueError(f"--device {text}: use cpu, cuda or cuda:N")
    return device


def cmd_bench(args) -> int:
    import pandas as pd

    from . import provenance as prov
    from .bandwidth import measure_bandwidth
    from .harness import expand_configs, iter_bench, parse_assignments, resolve_cases
    from .report import print_summary
    from .schema import COLUMNS, rows_to_frame, validate
    from .timers import default_modes, validate_modes

    device = check_device(args.device)
    cases = resolve_cases(args.cases)
    configs = expand_configs(parse_assignments(args.config, multi=False), parse_assignments(args.sweep, multi=True))
    rule = StoppingRule(min_runs=args.min_runs, max_runs=args.max_runs, max_seconds=args.max_seconds,
                        rel_sem=args.rel_sem, settle_seconds=args.settle_seconds,
                        kernel_min_seconds=args.kernel_min_seconds, kernel_idle_ratio=args.kernel_idle_ratio)
    modes = validate_modes(args.mode or default_modes(device), device)
    backends, kv_formats, q_formats = args.backend, args.kv_format, args.q_format
    max_bytes = cpu_memory_budget(args.max_gb)
    runnable, skipped = plan_combos(cases, backends, kv_formats, q_formats, device, max_bytes, configs)
    for what, why, _ in skipped:
        print(f"skip {what}: {why}", flush=True)
    total = sum(len(c) for c in runnable.values()) * len(configs)
    if not total and not all(machine for _, _, machine in skipped):  # a backend/format pair that runs nowhere
        raise ValueError("nothing to run: every requested (backend, format, case) is skipped, and some because "
                         "a backend does not take the format (see the skip lines)")
    if not total:  # a valid request this machine cannot run: the epilog's "none measured", not a bad request
        print("note: nothing measured: this machine cannot run any requested row (" +
              "; ".join(f"{what}: {why}" for what, why, _ in skipped) + ")", file=sys.stderr)
        return 1

    run_id = prov.new_run_id(device)
    out = Path(args.out) if args.out else default_out(device, run_id, args.write)
    if out.exists() and not args.append:
        raise ValueError(f"{out} exists; pass --append to add rows, or choose another --out")
    if out.exists():
        header = pd.read_csv(out, nrows=0).columns.tolist()
        if header != list(COLUMNS):
            raise ValueError(f"{out} has another schema's header; write a new file")
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.bandwidth_gbs:
        r, c = args.bandwidth_gbs
        bandwidth = dict(read_gbs=r, copy_gbs=c)
    else:
        bandwidth = measure_bandwidth(device)  # once per run, not once per case
    print(f"run {run_id}: {total} rows over {len(runnable)} case(s) -> {out}", flush=True)

    from tqdm import tqdm

    rows = []
    bar = tqdm(total=total, unit="row", file=sys.stderr, disable=args.no_progress)
    for case, combos in runnable.items():
        names = list(dict.fromkeys(b for b, _, _ in combos))
        kvfs = list(dict.fromkeys(k for _, k, _ in combos))
        qfs = list(dict.fromkeys(q for _, _, q in combos))
        wanted = set(combos)
        bar.set_description_str(f"{case.name}: building inputs ({case.total_kv:,} KV tokens)")
        bar.refresh()
        for row in iter_bench([case], names, kvfs, qfs, configs, modes=modes, device=device, rule=rule,
                              run_id=run_id, bandwidth=bandwidth, l2_flush=args.l2_flush,
                              fresh_flush=args.fresh_flush):
            if (row["backend"], row["kv_format"], row["q_format"]) not in wanted:
                continue  # declared skipped above (a backend that does not take this format)
            rows.append(row)
            frame = validate(pd.DataFrame([row], columns=list(COLUMNS)))
            # one row at a time: a run killed at its time limit keeps what it measured
            frame.to_csv(out, mode="a", header=not out.exists(), index=False)
            bar.set_description_str(f"{case.name}: timing")
            bar.set_postfix_str(f"{row['backend']} {row['kv_format']} {row['status']}")
            bar.update(1)
    bar.close()
    df = rows_to_frame(rows)
    print_summary(df)
    print(f"wrote {len(df)} rows to {out}")
    return _bench_status(df, args.strict)


def _bench_status(df, strict: bool) -> int:
    """bench's exit status (its help's epilog): 1 when no row was measured, or with --strict when a row
    failed its check or errored; else 0. Rows that cannot run here (unsupported / unavailable) are kept."""
    if not (df["status"] == "ok").any():
        counts = ", ".join(f"{n} {s}" for s, n in df["status"].value_counts().items())
        print(f"error: no row was measured ({counts}); see the messages above", file=sys.stderr)
        return 1
    return 1 if strict and df["status"].isin(["failed", "error"]).any() else 0


def cmd_report(args) -> int:
    """Compact case x entry tables of result rows: ``files`` (paths or globs), or with none (or
    ``--manifest``) the rows data/manifest.toml names; ``--run`` keeps only those run ids."""
    from .report import print_compact, print_summary
    from .schema import load_results

    import glob

    import pandas as pd

    if args.markdown and not args.targets:
        raise ValueError("--markdown goes with --targets (README's scoreboard block)")
    if args.device is not None and args.files and not args.manifest:
        raise ValueError("--device picks the manifest's folder under data/measured/; with files it does nothing: "
                         "drop it (the files' rows name their device)")
    args.device = args.device or "h200"
    if args.manifest or not args.files:  # before the manifest is read: a typo would end as "no rows"
        _check_measured_device(args.device)
    if args.purpose:  # before any file is read: a typo would otherwise end as "no rows left"
        from ..analysis.manifest import PURPOSES

        bad = [x for x in args.purpose if x not in PURPOSES]
        if bad:
            raise ValueError(f"unknown --purpose {', '.join(map(repr, bad))}; choose from {', '.join(PURPOSES)}")
    if args.targets:
        return _report_targets(args)
    if args.manifest or not args.files:
        from ..analysis import manifest  # the CLI sits on top: the manifest loader is analysis-level

        df = manifest.rows(args.device, include_stale=args.include_stale)
        if df is None:
            raise ValueError(f"no rows for device {args.device!r} through {manifest.default_path()}")
    else:
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
    if args.run:
        want = args.run
        hit = df["run_id"].map(lambda r: any(str(r).endswith(w) for w in want))
        if not hit.any():
            raise ValueError(f"no rows of run(s) {want}; runs present: {sorted(df['run_id'].unique())}")
        df = df[hit]
    if args.purpose:
        if "purpose" not in df:
            raise ValueError("--purpose needs rows read through the manifest (--manifest)")
        df = df[df["purpose"].isin(args.purpose)]
    if args.case:
        df = df[df["case"].isin(args.case)]
    if df.empty:
        raise ValueError("no rows left after the selection")
    if args.long:
        print_summary(df)
    else:
        print_compact(df, modes=args.mode)
    return 0


def _check_measured_device(device: str) -> None:
    """A ValueError naming the devices measured (data/measured/<device>/ folders with CSVs) unless
    ``device`` is one of them."""
    from ..analysis.measured import DATA

    root = DATA / "measured"
    have = sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.csv"))) if root.is_dir() else []
    if device not in have:
        raise ValueError(f"--device {device}: no results in {root / device}; devices measured: "
                         f"{', '.join(have) or 'none'}")


def _report_targets(args) -> int:
    """Issues 9 and 10's targets on the manifest's leaderboard rows (mla.analysis.targets), or on the campaign
    files given (one device's: a campaign on another GPU, judged by the same rules and its own run's floors)."""
    import glob

    import pandas as pd

    from ..analysis import targets
    from .schema import load_results

    if args.run or args.purpose or args.case or args.mode or args.long or args.include_stale or (
            args.files and args.manifest):
        raise ValueError("--targets reads whole campaigns: the manifest's leaderboard runs, or the campaign files "
                         "given; drop --run, --purpose, --case, --mode, --long, --include-stale (and --manifest "
                         "with files)")
    command = "python -m mla report --targets"
    if args.files:
        frames = []
        for f in args.files:
            if not glob.glob(f):
                raise ValueError(f"no files match {f!r}")
            try:
                frames.append(load_results(f))
            except (ValueError, OSError) as e:  # pandas' parser errors are ValueErrors too
                msg = str(e).strip()
                raise ValueError(msg if msg.startswith(f) else f"{f}: not a result CSV ({msg})") from None
        # one device, one commit, all 8 shapes: the same checks as the manifest's runs below (targets.campaign)
        camp = targets.campaign(pd.concat(frames, ignore_index=True))
        command += " " + " ".join(args.files)
    else:  # the manifest's leaderboard runs of the device, or a refusal naming a campaign's files to pass instead
        camp = targets.manifest_campaign(args.device)
        if args.device != "h200":
            command += f" --device {args.device}"
    its = targets.items(camp.rows)
    if its is None:
        raise ValueError(f"no default-config Triton leaderboard rows in {camp.what}")
    if camp.note:  # another GPU than the issues': on every path
        print(camp.note, file=sys.stderr)
    board = targets.scoreboard(its)
    if args.markdown:
        print(targets.markdown(board, its, command))
        return 0
    for r in board.itertuples():
        k = f" ({r.met_items} of {r.items})" if r.status == "partial" else ""
        print(f"issue {r.issue:<3} {r.status + k:<17} {r.text}")
        print(f"{'':<28}{r.measured}")
    runs = ", ".join(sorted({str(x) for x in its["run_id"].dropna()}))
    print(f"rows: {runs}")
    return 0


BENCH_EPILOG = ("Before anything runs, an unknown case, backend or format, or a --config / --sweep key or value "
                "a backend does not take, is an error (exit 2); a backend or case that cannot run on this "
                "machine, or a format a backend does not take, is a 'skip' line. Exit status: 0 when at least "
                "one row was measured; 1 when none was (every row skipped because of this machine, unsupported "
                "for its case, failed its check or errored), or with --strict when any row failed or errored; "
                "2 for a bad request (also when every row is skipped and a skip is a format its backend does "
                "not take).")


def register(sub) -> None:
    p = sub.add_parser("info", help="platform, devices, versions, backends and why any is unavailable")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("bench", help="check then time backends on cases; write schema rows to CSV",
                       formatter_class=DefaultsHelpFormatter, epilog=BENCH_EPILOG)
    p.add_argument("--cases", default="smoke", type=csv_list,
                   help="case sets (leaderboard, tests, extended, smoke) and/or case names, comma-separated")
    p.add_argument("--backend", default="torch", type=csv_list,
                   help="backends, comma-separated (python -m mla info lists them)")
    p.add_argument("--kv-format", default="fp8", type=csv_list, help="bf16,fp8,mxfp4")
    p.add_argument("--q-format", default="bf16", type=csv_list,
                   help="bf16,fp8 (fp8: the backend quantizes Q inside the call)")
    p.add_argument("--mode", default=None, type=csv_list,
                   help="cold,warm,kernel,fresh on a GPU (default all four; fresh = new inputs before every "
                        "call, as the leaderboard's eval.py); cpu on CPU (default)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="fixed backend config, repeatable; every backend of the run must take the key "
                        "(e.g. triton: graph=true, variant=NAME; aiter: mode=persistent; validate=full for any)")
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2",
                   help="sweep axis, repeatable; axes combine as a cartesian product (e.g. num_splits=1,2,4,8)")
    p.add_argument("--device", default=None, help="cuda, cuda:1 or cpu (default: cuda if present, else cpu)")
    p.add_argument("--out", default=None,
                   help="CSV path (default out/measured/<device-slug>/<run_id>.csv, git-ignored); never overwritten")
    p.add_argument("--write", action="store_true",
                   help="without --out: write into data/measured/<device-slug>/ (tracked) instead of out/")
    p.add_argument("--max-gb", type=positive_float, default=None,
                   help="CPU: skip cases whose inputs need more host memory than this (default: half of MemAvailable)")
    p.add_argument("--append", action="store_true", help="add rows to an existing --out of the same schema")
    p.add_argument("--l2-flush", default="write", choices=("write", "read", "eval"),
                   help="how cold/kernel evict the L2: 'write' zeroes 1 GiB (dirty lines the timed call writes "
                        "back), 'read' sums it (clean lines), 'eval' is eval.py's 62.5 GiB randn")
    p.add_argument("--fresh-flush", default="eval", choices=("write", "read", "eval"),
                   help="the fresh mode's flush (default eval.py's own, a ~60 GB randn: host work under it is hidden)")
    p.add_argument("--min-runs", type=int, default=StoppingRule.min_runs,
                   help="samples per mode per row before the stopping rule may stop (>= 2)")
    p.add_argument("--max-runs", type=int, default=StoppingRule.max_runs,
                   help="samples per mode per row at most (>= --min-runs)")
    p.add_argument("--max-seconds", type=float, default=1.0, help="sampling time cap per mode per row")
    p.add_argument("--kernel-min-seconds", type=float, default=StoppingRule.kernel_min_seconds,
                   help="kernel mode: the shortest sampling window per row, over --max-runs, --max-seconds and "
                        "--rel-sem (a shorter one can end inside the first row's slow phase; docs/notes-harness.md)")
    p.add_argument("--kernel-idle-ratio", type=float, default=StoppingRule.kernel_idle_ratio, metavar="R",
                   help="kernel mode: after each sample idle R x its wall time (duty cycle 1 / (1 + R)), so a "
                        "sustained window does not run into the board's power cap (kernel_method "
                        "records it; docs/notes-harness.md, \"Pacing the kernel mode\")")
    p.add_argument("--rel-sem", type=float, default=1e-3, help="stop when SEM/mean falls below this")
    p.add_argument("--settle-seconds", type=float, default=0.0,
                   help="kernel mode: replay the captured call behind the flush, untimed, this long before sampling "
                        "(the first row of a case can read a transient; kernel_method records it)")
    p.add_argument("--bandwidth-gbs", default=None, metavar="READ,COPY", type=positive_floats(2),
                   help="skip the bandwidth probe and use these GB/s (e.g. from an earlier run)")
    p.add_argument("--strict", action="store_true", help="also exit 1 if any row failed its check or errored")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_bench)

    from ..analysis.manifest import PURPOSES

    p = sub.add_parser("report", help="compact tables of result rows: CSV files, or the runs data/manifest.toml names")
    p.add_argument("files", nargs="*", help="CSV paths or globs (none: the manifest's runs)")
    p.add_argument("--manifest", action="store_true", help="the runs data/manifest.toml names (the default without files)")
    p.add_argument("--device", default=None,
                   help="device folder under data/measured/ for the manifest's rows (default h200; not with files)")
    p.add_argument("--include-stale", action="store_true", help="also rows the manifest flags as older code")
    p.add_argument("--run", default=None, type=csv_list,
                   help="only these run ids (or their endings, e.g. 9bf7), comma-separated")
    p.add_argument("--purpose", default=None, type=csv_list,
                   help=f"only runs of these manifest purposes, comma-separated ({', '.join(PURPOSES)})")
    p.add_argument("--case", default=None, type=csv_list, help="only these case names, comma-separated")
    p.add_argument("--mode", default=None, type=csv_list,
                   help="time modes to tabulate, comma-separated (default: all present)")
    p.add_argument("--long", action="store_true", help="the per-row tables of a bench run instead")
    p.add_argument("--targets", action="store_true",
                   help="issues 9 and 10's speed targets on the manifest's leaderboard rows, or on the campaign "
                        "files given (one device's): met / partial / missed")
    p.add_argument("--markdown", action="store_true", help="with --targets: README's scoreboard block")
    p.set_defaults(func=cmd_report)
