"""Lead-level CLI commands: ``smoke`` (a CPU pass over the named cases) and ``reproduce``
(execute the notebooks in order; the README's main command)."""

from __future__ import annotations

import functools
import os
import sys
import time

import torch

from . import problem as P
from .argtypes import DefaultsHelpFormatter, csv_list, positive_float, positive_int
from .backends import list_backends
from .backends import decode
from .check import accuracy_metrics, check
from .inputs import generate_case
from .reference import reference


def smoke(case_set="smoke", backends=None, device: str = "cpu", print_fn=print,
          max_bytes: int | None = None) -> list[dict]:
    """Every case x KV format: the reference on quantized KV against the bf16 truth, and each
    requested backend through ``mla.check``. ``case_set``: case-set and/or case names, as bench's --cases.
    Returns the rows, each printed as it is checked; a failed check does not raise (the row says FAIL),
    so a smoke run shows the whole picture. A requested backend that is unknown or cannot run here is a
    ValueError before anything runs (never a quiet reference-only pass). On CPU a case whose inputs would
    not fit ``max_bytes`` is skipped with a line saying so (bench's --max-gb rule)."""
    from .bench.cli import too_big_here
    from .bench.harness import resolve_cases

    avail = {b["name"]: b for b in list_backends()}
    names = list(backends) if backends is not None else ["torch"]
    if not names:
        raise ValueError("smoke: no backend named (backends=[]); name one, or pass None for torch")
    for name in names:  # every requested backend must run here: no silent reference-only pass
        b = avail.get(name)
        if b is None:
            raise ValueError(f"smoke: unknown backend {name!r}; choose from {list(avail)}")
        if not b["available"]:
            raise ValueError(f"smoke: backend {name!r} is not available here: {b['reason']}")
        why = runs_here(name, device)
        if why:
            raise ValueError(f"smoke: backend {name!r} cannot run on {device}: {why}")
    cases = resolve_cases(case_set)  # (an unknown name is a ValueError before any case runs)

    def show(r):
        print_fn(f"{r['case']:28s} {r['kv_format']:6s} {r['impl']:10s} {'PASS' if r['ok'] else 'FAIL'} "
                 f"max_abs={r['max_abs']:.3g} rel_l2={r['rel_l2']:.3g} mismatch={r['mismatch']:.2%}")

    rows = []
    for case in cases:
        too_big = too_big_here(case, torch.device(device), max_bytes)
        if too_big:  # (the leaderboard's bs256-kv8192 needs ~23 GB: killed, not failed, without this)
            print_fn(f"skip {case.name}: {too_big}")
            continue
        data = generate_case(case, device=device)
        truth = reference(data)
        for fmt in P.KV_FORMATS:
            m = accuracy_metrics(reference(data, kv_format=fmt).bfloat16(), truth)
            rows.append(dict(case=case.name, kv_format=fmt, impl="reference", ok=m["mismatch"] <= 0.05, **m))
            show(rows[-1])
            for name in names:
                b = avail.get(name)
                if b is None or not b["available"] or fmt not in b["kv_formats"]:
                    continue
                t0 = time.perf_counter()
                out = decode(data, backend=name, kv_format=fmt)
                dt = time.perf_counter() - t0
                ok, msg = check(data, out, reference_output=truth)
                rows.append(dict(case=case.name, kv_format=fmt, impl=name, ok=ok, seconds=dt,
                                 **accuracy_metrics(out, truth)))
                show(rows[-1])
    return rows


def runs_here(name: str, device: str) -> str:
    """Why backend ``name`` cannot run on ``device`` here ('' when it can)."""
    from .backends import get_backend

    b = get_backend(name)
    dev = torch.device(device).type
    if dev not in b.devices:
        return f"it runs on {'/'.join(b.devices)}"
    if name == "triton" and dev == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        return TRITON_CPU_NOTE
    return ""


TRITON_CPU_NOTE = "interpreter only (set TRITON_INTERPRET=1)"


def _enable_triton_interpreter(backends, device) -> None:
    """``smoke --backend triton`` on a CPU: switch the interpreter on, which only works before
    triton is first imported (this process has not imported it yet when the CLI starts)."""
    if backends and "triton" in backends and torch.device(device).type == "cpu" \
            and os.environ.get("TRITON_INTERPRET") != "1" and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
        print("smoke: CPU run, triton under its interpreter (TRITON_INTERPRET=1 set for this process)", flush=True)


def _cmd_smoke(args) -> int:
    from .bench.cli import check_device, cpu_memory_budget

    device = str(check_device(args.device))
    backends = args.backend  # (None: smoke's default, torch)
    _enable_triton_interpreter(backends, device)
    rows = smoke(args.cases, backends, device, print_fn=functools.partial(print, flush=True),
                 max_bytes=cpu_memory_budget(args.max_gb))
    if not rows:  # every case skipped for memory: nothing was checked, which is not a pass
        print("note: nothing checked: every case is too big for this machine (see the skip lines)", file=sys.stderr)
        return 1
    bad = [r for r in rows if not r["ok"]]
    print(f"{len(rows) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


def _cmd_reproduce(args) -> int:
    from .reproduce import run_notebooks

    if args.mode == "live" and not torch.cuda.is_available():  # before anything is run or written
        raise ValueError("reproduce --mode live re-measures on a GPU; this machine has no CUDA/ROCm device "
                         f"(torch {torch.__version__}). Use --mode replay (the default on a CPU).")
    return run_notebooks(mode=args.mode, only=args.only, timeout=args.timeout)


def register(sub) -> None:
    p = sub.add_parser("smoke", help="CPU smoke: reference + available backends on a case set, checked",
                       formatter_class=DefaultsHelpFormatter)
    p.add_argument("--cases", default="smoke", type=csv_list,
                   help=f"case sets ({', '.join(P.CASE_SETS)}) and/or case names, comma-separated; "
                        "leaderboard and extended are GPU-sized (minutes and tens of GB on a CPU)")
    p.add_argument("--backend", default=None, type=csv_list, help="comma list of backends (default: torch)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present, else cpu)")
    p.add_argument("--max-gb", type=positive_float, default=None,
                   help="CPU: skip cases whose inputs need more host memory than this (default: half of "
                        "MemAvailable), as bench's --max-gb")
    p.set_defaults(func=_cmd_smoke)
    p = sub.add_parser("reproduce", help="execute notebooks/ in order, regenerating figures/",
                       formatter_class=DefaultsHelpFormatter)
    p.add_argument("--mode", choices=("replay", "live"), default="replay",
                   help="replay: plot committed data/ (CPU); live: re-measure through mla first (GPU)")
    p.add_argument("--only", default=None,
                   help="run only notebooks whose name contains one of these comma-separated parts, e.g. 03,05 "
                        "(default: every notebook)")
    p.add_argument("--timeout", type=positive_int, default=1200, help="seconds per notebook cell")
    p.set_defaults(func=_cmd_reproduce)
