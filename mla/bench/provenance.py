"""Where a number came from: device, driver, library versions, source revision, time, run id.

The device machine receives a copy of the working tree that may carry no ``.git``: then the commit
comes from ``MLA_GIT_COMMIT`` (set by whoever launches the run) and ``source_hash`` (a digest of
every ``mla/**/*.py``) still pins the exact code that ran.
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import hashlib
import os
import platform
import re
import secrets
import subprocess
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRATCH = REPO_ROOT / "out"  # git-ignored (/out/ in .gitignore): every command's default output
DATA = REPO_ROOT / "data"    # tracked: commands write here only when asked (--write or an explicit --out)


def output_root(write: bool) -> Path:
    """data/ when the user asked to update the tracked results (``--write``), else out/."""
    return DATA if write else SCRATCH


def _run(cmd: list[str], timeout: float = 5.0) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def device_name(device: str | torch.device) -> str:
    """The GPU's name, or for a CPU its model (from /proc/cpuinfo where there is one) and architecture:
    the CPU's vector ISA changes torch's CPU randn in the last bit, so which CPU made a row matters
    (notebook 01, section 4)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return _cpu_name()


@functools.cache
def _cpu_name() -> str:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    arch = platform.machine() or platform.processor() or "cpu"
    return f"{model} ({arch})" if model else arch


def device_slug(device: str | torch.device) -> str:
    """Short folder name for data/measured/: 'NVIDIA H200' -> 'h200', 'AMD Instinct MI355X' ->
    'mi355x'; every CPU is 'cpu' (CPU numbers only test the harness)."""
    device = torch.device(device)
    return slug_from_name(device_name(device)) if device.type == "cuda" else "cpu"


def slug_from_name(name: str) -> str:
    """The first model-like token (letters then digits): 'NVIDIA H100 80GB HBM3' -> 'h100'."""
    name = name.lower()
    for tok in re.split(r"[\s_/]+", name):
        if re.fullmatch(r"[a-z]+\d+[a-z0-9]*", tok):
            return tok
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "gpu"


@functools.cache
def driver_version() -> str:
    if torch.version.hip:
        return f"hip {torch.version.hip}"
    out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0].strip() if out else "unknown"


@functools.cache
def git_state() -> tuple[str, bool | None]:
    """(commit, dirty): the one definition every command uses (bench, isa, accuracy, info).

    dirty = the code that ran differs from the commit: a tracked file under mla/ modified, or an
    untracked one there (a kernel written but not committed is exactly the case to flag). Results
    and notebooks (data/, figures/, notebooks/) do not count: a command that wrote a CSV must not
    make the next command's rows "dirty". ``source_hash`` pins the code either way.
    $MLA_GIT_COMMIT, when set, wins (dirty unknown: None): the device machine's copy of the tree
    carries a .git that can lag behind the commit that was sent (seen 2026-12-01: it reported the
    session's base commit). Without .git and without it: "unknown"."""
    if os.environ.get("MLA_GIT_COMMIT"):
        return os.environ["MLA_GIT_COMMIT"], None
    commit = _run(["git", "rev-parse", "HEAD"])
    if commit:
        status = _run(["git", "status", "--porcelain", "--untracked-files=all", "--", "mla"])
        return commit, None if status is None else bool(status)
    return "unknown", None


@functools.cache
def source_hash() -> str:
    """sha256 (first 12 hex) over the paths and contents of mla/**/*.py, in sorted order."""
    h = hashlib.sha256()
    pkg = REPO_ROOT / "mla"
    for p in sorted(pkg.rglob("*.py")):
        h.update(str(p.relative_to(REPO_ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(device: str | torch.device) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{device_slug(device)}-{secrets.token_hex(2)}"


def versions() -> dict:
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "absent"
    return dict(torch=torch.__version__, triton=triton_version,
                gpu_runtime=(f"hip {torch.version.hip}" if torch.version.hip
                             else f"cuda {torch.version.cuda}" if torch.version.cuda else "none"),
                python=platform.python_version())


def provenance(device: str | torch.device, run_id: str) -> dict:
    """The columns every result row carries about its origin."""
    commit, dirty = git_state()
    return dict(run_id=run_id, device=device_name(device), device_slug=device_slug(device),
                driver=driver_version() if torch.device(device).type == "cuda" else "n/a",
                **versions(), git_commit=commit, git_dirty=dirty, source_hash=source_hash(),
                command=invocation())


def invocation() -> str:
    """The command line that produced the rows (``python -m mla bench ...`` when run from the CLI)."""
    import shlex
    import sys
    argv = list(sys.argv)
    if argv and argv[0].endswith(("mla/__main__.py", "mla/bench/__main__.py")):
        argv = ["python", "-m", "mla.bench" if "bench/__main__" in argv[0] else "mla", *argv[1:]]
    return shlex.join(argv)


def write_rows(path, rows: list[dict]) -> Path:
    """``rows`` (dicts with the same keys, each carrying its provenance columns) as a new CSV at ``path``
    (parents made): the probes' one writer. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path
