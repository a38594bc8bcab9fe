"""Execute the notebooks in order (nbclient), in place, with a parameter cell override.

Each notebook has a cell tagged ``parameters`` (papermill style) that sets ``MODE = "replay"``;
we set that cell to ``MODE = <mode>`` (one MODE cell). A failing cell fails the whole run.

Re-running on unchanged data leaves the notebooks byte-identical: no execution timestamps are
recorded (``record_timing=False``), and a notebook whose normalised content did not change is not
rewritten. (What the cells print is the notebooks' own business: a cell that prints a time or an
address still changes its output.)
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def notebook_paths(only: str | None = None) -> list[pathlib.Path]:
    """The numbered notebooks in order; ``only`` keeps those whose name contains one of its comma-separated parts
    ("03,05": notebooks 03 and 05, still in order)."""
    paths = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if only is None:
        return paths
    parts = [s.strip() for s in only.split(",") if s.strip()]
    if not parts:
        raise ValueError(f"--only {only!r} names no notebook (give name parts separated by commas, e.g. 03,05)")
    return [p for p in paths if any(s in p.name for s in parts)]


def run_notebook(path: pathlib.Path, mode: str = "replay", timeout: int = 1200) -> float:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if idx is None:
        raise ValueError(f"{path.name} has no cell tagged 'parameters'")
    # one MODE cell: the parameters cell itself is set (older runs left an injected copy: dropped);
    # the saved copy keeps the replay default and says which mode produced its outputs
    doc = '  # "replay": plot committed data/ (CPU); "live": re-measure through mla first (GPU)'
    nb.cells[idx].source = f'MODE = "{mode}"' + doc
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get("tags", [])]
    t0 = time.perf_counter()
    # the kernel on local IPC sockets in a private temporary folder, not TCP on localhost: ipykernel warns that
    # TCP without CurveZMQ keys is plain text, once per notebook, and nothing here needs a network port
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="mla-kernel-") as sockets:
        cfg = Config()
        if os.name == "posix":  # zmq has no ipc transport on Windows: TCP there
            cfg.KernelManager.transport, cfg.KernelManager.ip = "ipc", os.path.join(sockets, "kernel")
        NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False, config=cfg,
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    if mode != "replay":
        nb.cells[idx].source = 'MODE = "replay"' + doc + f'\n# the outputs below were made with MODE = "{mode}" (mla.reproduce)'
    normalise(nb)
    text = nbformat.writes(nb)
    text += "" if text.endswith("\n") else "\n"  # as nbformat.write does
    if path.read_text(encoding="utf8") != text:
        path.write_text(text, encoding="utf8")
    return time.perf_counter() - t0


def normalise(nb) -> None:
    """Drop what changes between identical runs: per-cell execution timestamps (older nbclient
    versions record them regardless), the kernel's transient metadata, and the Python patch
    version (3.11.2 on Debian's python3, 3.11.7 on another build: the same outputs)."""
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    info = nb.metadata.get("language_info", {})
    if isinstance(info.get("version"), str):
        info["version"] = ".".join(info["version"].split(".")[:2])


def run_notebooks(mode: str = "replay", only: str | None = None, timeout: int = 1200) -> int:
    paths = notebook_paths(only)
    if mode == "live":  # one measurement per command across the notebooks of this run (measured.run_live)
        os.environ.setdefault("MLA_LIVE_SESSION", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    if not paths:
        print(f"no notebooks matched in {NOTEBOOKS}", file=sys.stderr)
        return 1
    for p in paths:
        print(f"[reproduce] {p.name} ({mode}) ...", flush=True)
        dt = run_notebook(p, mode, timeout)
        print(f"[reproduce] {p.name} done in {dt:.1f}s", flush=True)
    return 0
