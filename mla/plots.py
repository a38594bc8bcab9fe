"""The one plotting helper and style.

Every figure in figures/ is made by :func:`save`, which

* writes ``figures/<name>.png`` and ``figures/<name>.svg`` (``MLA_FIGURES_DIR`` overrides the
  folder; the notebook test points it at a temporary directory);
* stamps a footer naming the notebook, the data it read (CSV paths, or "computed live from mla")
  and the command that regenerates that data, so a figure leads back to its source in one step.

Colors are fixed per backend, per KV format and per device, so the same thing has the same color
in every notebook. Names follow ``NN_<what>[_<case or format>]`` with NN the notebook number.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path
from typing import Iterable

import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent

# --- colors (Okabe-Ito, color-blind safe) -------------------------------------------------------
BACKEND_COLORS = {
    "torch": "#999999",
    "triton": "#0072B2",
    "flashinfer": "#009E73",
    "aiter": "#D55E00",
    "hip": "#CC79A7",
    "published": "#000000",
}
FORMAT_COLORS = {"bf16": "#56B4E9", "fp8": "#E69F00", "mxfp4": "#CC79A7"}
DEVICE_COLORS = {"h200": "#76B900", "mi355x": "#ED1C24"}
SCALE_RULE_STYLES = {"even": "-", "floor": "--", "none": ":"}
FORMAT_ORDER = ("bf16", "fp8", "mxfp4")
BACKEND_ORDER = tuple(BACKEND_COLORS)

NAME_RE = re.compile(r"^\d\d_[a-z0-9][a-z0-9_.+-]*$")


def color(key: str) -> str:
    """The color of a backend, format or device slug (grey for anything unknown)."""
    for table in (BACKEND_COLORS, FORMAT_COLORS, DEVICE_COLORS):
        if key in table:
            return table[key]
    return "#777777"


def style() -> None:
    """The house style: one call at the top of each notebook."""
    plt.rcParams.update({
        "figure.dpi": 110, "savefig.dpi": 130, "figure.figsize": (7.5, 4.2),
        "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
        "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8, "legend.frameon": False,
        "xtick.labelsize": 8, "ytick.labelsize": 8, "font.family": "DejaVu Sans",
        "svg.hashsalt": "mla", "svg.fonttype": "none",
    })


def figures_dir() -> Path:
    d = Path(os.environ.get("MLA_FIGURES_DIR") or ROOT / "figures")
    d.mkdir(parents=True, exist_ok=True)
    return d


def rel(path) -> str:
    """A path relative to the repository root when it lies inside it (footers stay short)."""
    p = Path(path)
    if not p.is_absolute():
        return str(p)  # already relative to the repository root (the convention for data paths)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def footer_text(name: str, sources: Iterable[str] | str, command: Iterable[str] | str, note: str = "") -> str:
    sources = [sources] if isinstance(sources, str) else list(sources)
    command = [command] if isinstance(command, str) else list(command)
    nbs = sorted((ROOT / "notebooks").glob(f"{name[:2]}_*.ipynb"))
    nb = f"notebooks/{nbs[0].name}" if nbs else f"notebooks/{name[:2]}_*.ipynb"
    src = ", ".join(rel(s) if ("/" in str(s) or str(s).endswith(".csv")) else str(s) for s in sources) or "-"
    lines = textwrap.wrap(f"figures/{name}.{{png,svg}}  |  {nb}  |  data: {src}", width=150, subsequent_indent="    ",
                          break_on_hyphens=False)
    for c in command:
        lines += textwrap.wrap(f"made by: {c}", width=150, subsequent_indent="    ", break_on_hyphens=False)
    if note:
        lines.append(note)
    return "\n".join(lines)


def save(fig, name: str, *, sources, command, note: str = "") -> list[Path]:
    """Add the provenance footer and write figures/<name>.png and .svg. Returns the two paths.

    ``sources``: CSV paths the figure read (or a phrase such as "computed live from mla");
    ``command``: the command(s) that regenerate those sources."""
    if not NAME_RE.match(name):
        raise ValueError(f"figure name {name!r} must look like 'NN_what_case' (lowercase, NN = notebook)")
    text = footer_text(name, sources, command, note)
    n_lines = text.count("\n") + 1
    foot = 0.115 * n_lines + 0.12  # inches of footer (6.5 pt monospace lines)
    h = fig.get_figheight()
    fig.set_figheight(h + foot)  # the footer gets its own room: the axes keep the height they were drawn for
    fig.tight_layout(rect=(0, foot / (h + foot), 1, 1))
    fig.text(0.005, 0.005, text, ha="left", va="bottom", fontsize=6.5, color="#444444", family="monospace")
    out = figures_dir()
    paths = [out / f"{name}.png", out / f"{name}.svg"]
    fig.savefig(paths[0], metadata={"Software": None})
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mla"}):  # text stays text: greppable
        fig.savefig(paths[1], metadata={"Date": None, "Creator": None, "Description": text})
    return paths


def placeholder(name: str, message: str, command, *, sources="no rows yet") -> list[Path]:
    """A figure that says there is no data yet and which command makes it (same file name as the
    real figure, so links stay valid and the notebook test sees every figure written)."""
    fig, ax = plt.subplots(figsize=(10, 2.8))
    ax.axis("off")
    ax.text(0.5, 0.7, "NO DATA YET", ha="center", va="center", fontsize=16, color="#B00020", weight="bold")
    body = "\n".join(textwrap.fill(line, 110, break_on_hyphens=False) for line in message.splitlines())
    ax.text(0.5, 0.3, body, ha="center", va="center", fontsize=8.5)
    paths = save(fig, name, sources=sources, command=command)
    plt.close(fig)
    return paths


def roofline_ceilings(ax, device, extra_bandwidth: tuple[float, str] | None = None, x_range=(1, 1e4)) -> None:
    """Draw a device's roofline on log-log axes: the datasheet bandwidth slope up to the highest
    matrix peak, one dotted line per format's matrix peak, and optionally a second (measured)
    bandwidth slope. ``device`` is a :class:`mla.analysis.roofline.DeviceSpec`."""
    import numpy as np

    xs = np.logspace(np.log10(x_range[0]), np.log10(x_range[1]), 200)
    top = max(device.matrix_tflops.values()) * 1e12
    ax.plot(xs, np.minimum(xs * device.hbm_gbs * 1e9, top) / 1e12, color="k", lw=1,
            label=f"datasheet {device.hbm_gbs / 1000:.1f} TB/s")
    if extra_bandwidth:
        ax.plot(xs, np.minimum(xs * extra_bandwidth[0] * 1e9, top) / 1e12, color="k", lw=1, ls="--",
                label=extra_bandwidth[1])
    for f, t in device.matrix_tflops.items():
        ax.axhline(t, color=color(f), lw=0.8, ls=":")
        ax.text(x_range[0] * 1.1, t * 1.08, f"{f} matrix peak {t:.0f} TFLOP/s", fontsize=7, color=color(f))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x_range)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOP/s")


def no_data_box(ax, message: str, xy=(0.5, 0.5)) -> None:
    """A red-framed note on an axes (axes coordinates ``xy``): what is missing, which command makes it."""
    ax.text(*xy, message, transform=ax.transAxes, ha="center", va="center", fontsize=7, color="#B00020",
            bbox=dict(fc="w", ec="#B00020"))


def short(text: str, n: int = 42) -> str:
    """A legend-sized label: ``text`` cut to ``n`` characters with an ellipsis."""
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def legend_outside(ax, **kw) -> None:
    kw.setdefault("fontsize", 7)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), **kw)
