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
DEVICE_COLORS = {"h200": "#76B900", "h100": "#4A7A00", "mi355x": "#ED1C24"}  # h100: a darker NVIDIA green
SCALE_RULE_STYLES = {"even": "-", "floor": "--", "none": ":"}
# a program's phases (program_timeline): waiting is grey, the tile loop the kernels' blue
PHASE_COLORS = {"prologue": "#F0E442", "first_wait": "#BBBBBB", "loop": "#0072B2", "epilogue": "#D55E00"}
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


def tbps(gbs: float) -> str:
    """A bandwidth in TB/s as a datasheet prints it: one decimal unless it needs two (4.8, 8.0, 3.35)."""
    tb = gbs / 1000
    return f"{tb:.1f}" if round(tb, 1) == round(tb, 2) else f"{tb:.2f}"


def roofline_ceilings(ax, device, extra_bandwidth: tuple[float, str] | None = None, x_range=(1, 1e4)) -> None:
    """Draw a device's roofline on log-log axes: the datasheet bandwidth slope up to the highest
    matrix peak, one dotted line per format's matrix peak, and optionally a second (measured)
    bandwidth slope. ``device`` is a :class:`mla.analysis.roofline.DeviceSpec`; one without matrix
    peaks (``roofline.probe_spec``: no datasheet entry) gets no datasheet line, only ``extra_bandwidth``."""
    import numpy as np

    xs = np.logspace(np.log10(x_range[0]), np.log10(x_range[1]), 200)
    top = max(device.matrix_tflops.values()) * 1e12 if device.matrix_tflops else np.inf
    if device.matrix_tflops:
        ax.plot(xs, np.minimum(xs * device.hbm_gbs * 1e9, top) / 1e12, color="k", lw=1,
                label=f"datasheet {tbps(device.hbm_gbs)} TB/s")
    if extra_bandwidth:
        ax.plot(xs, np.minimum(xs * extra_bandwidth[0] * 1e9, top) / 1e12, color="k", lw=1, ls="--",
                label=extra_bandwidth[1])
    for f, t in device.matrix_tflops.items():
        ax.axhline(t, color=color(f), lw=0.8, ls=":")
        ax.text(x_range[0] * 1.1, t * 1.08, f"{f} matrix peak {t:.0f} TFLOP/s", fontsize=7, color=color(f))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*x_range)
    from matplotlib.ticker import NullFormatter
    ax.xaxis.set_minor_formatter(NullFormatter())  # a narrow x range would label every minor tick
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


# --- tables as pictures ------------------------------------------------------------------------------
def heatmap(ax, table, *, rel: str = "row_min", vmax: float = 3.0, fmt: str = "{:.0f}", frames=None,
            underlined=(), cbar_label: str = "time / best time for the row", fontsize: float = 9):
    """A case x setting table of times as a heatmap: color = value / the row's best (log scale,
    1 = best, marked *), the value written in each cell; ``frames`` {row: column} outlines one
    cell per row (e.g. the heuristic's pick); ``underlined`` {(row, column)} marks cells that came
    from another run. Returns the image (its colorbar is drawn)."""
    import numpy as np
    from matplotlib.colors import LogNorm

    r = table.div(table.min(axis=1), axis=0) if rel == "row_min" else table
    top = max(1.05, min(vmax, float(np.nanmax(r.values))))
    im = ax.imshow(r.values, cmap="magma_r", norm=LogNorm(vmin=1.0, vmax=top), aspect="auto")
    for i, row in enumerate(table.index):
        for j, col in enumerate(table.columns):
            v, q = table.iloc[i, j], r.iloc[i, j]
            if v != v:
                continue
            dark = q > top ** 0.6
            ax.text(j, i, fmt.format(v) + ("*" if q == 1.0 else ""), ha="center", va="center", fontsize=fontsize,
                    color="w" if dark else "k", fontweight="bold" if q == 1.0 else None)
            if (row, col) in set(underlined):
                ax.plot([j - 0.3, j + 0.3], [i + 0.3, i + 0.3], color="w" if dark else "k", lw=0.9)
        if frames and row in frames and frames[row] in list(table.columns):
            j = list(table.columns).index(frames[row])
            ax.add_patch(plt.Rectangle((j - 0.47, i - 0.47), 0.94, 0.94, fill=False, ec="#0072B2", lw=2.2))
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns])
    ax.set_yticks(range(table.shape[0]), table.index)
    ax.grid(False)
    ax.figure.colorbar(im, ax=ax, label=cbar_label + " (log)")
    return im


def hbars(ax, values, *, top: int | None = None, colors=None, xlabel: str = "", fmt: str = "{:.0f}",
          smallest_first: bool = True, log: bool = False, approx=()):
    """Horizontal bars of a labelled Series, the ``top`` smallest (or largest) first, each bar
    labelled with its value: readable where a grid of cells is mostly empty. Labels in ``approx``
    (values their source gives as "~N") get a "~" before their value."""
    s = values.dropna().sort_values(ascending=smallest_first)
    if top:
        s = s.iloc[:top]
    cols = [colors.get(k, "#777777") for k in s.index] if isinstance(colors, dict) else (colors or color("triton"))
    ax.barh(range(len(s)), s.values, color=cols)
    ax.set_yticks(range(len(s)), [str(k) for k in s.index])
    ax.invert_yaxis()
    for i, (k, v) in enumerate(s.items()):
        ax.text(v, i, (" ~" if k in approx else " ") + fmt.format(v), va="center", fontsize=8)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.grid(axis="y", visible=False)
    return s


def variant_panels(tabs, shapes, *, title: str, time: str = "kernel", top: int = 10, reference=None):
    """Notebook 04's variant figure: one panel per (shape, KV format), the ``top`` fastest variants of each table in
    ``tabs`` (format -> case x variant of median us, :func:`mla.analysis.measured.variant_sweep`). ``reference`` maps
    (case, format) to (us, label): a dashed line, e.g. the default call's time at that shape."""
    import pandas as pd

    fig, axes = plt.subplots(len(shapes), len(tabs), figsize=(5.2 * len(tabs), 4.2 * len(shapes)), squeeze=False)
    for row, case in zip(axes, shapes):
        for ax, (f, t) in zip(row, tabs.items()):
            g = t.loc[case] if case in t.index else pd.Series(dtype=float)  # a shape this format did not run: empty
            hbars(ax, g, top=top, colors=color(f), xlabel=f"{time} time (us)")
            n = int(g.notna().sum())
            head = f"{case}\n{f} KV: " + (f"{top} fastest of {n}" if n > top else f"all {n}")  # lines: fits the panel
            if reference and (case, f) in reference:
                us, label = reference[(case, f)]
                ax.axvline(us, color="#333333", ls="--", lw=1)
                head += f"\ndashed: {label}, {us:.0f} us"
            ax.set_title(head, fontsize=9.5)
            ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(title)
    return fig


def labelled_points(ax, xs, ys, labels, **kw) -> None:
    """Scatter with a small text label next to each point (roofline shapes)."""
    ax.scatter(xs, ys, **kw)
    for x, y, lab in zip(xs, ys, labels):
        ax.annotate(str(lab), (x, y), xytext=(4, 2), textcoords="offset points", fontsize=6.5, color=kw.get("color", "k"))


def shape_label(case: str) -> str:
    """bs256-kv8192-q1-h16 -> 'bs256/8k' (a roofline point's label)."""
    m = re.match(r"bs(\d+)-kv(\d+)", case)
    if not m:
        return case
    kv = int(m.group(2))
    return f"bs{m.group(1)}/{kv // 1024}k" if kv % 1024 == 0 else f"bs{m.group(1)}/{kv}"


def static_ceiling_lines(ax, ceil, x_range=(5, 3000)) -> list[str]:
    """Per KV format, the tightest static ceiling (TFLOP/s) from
    :func:`mla.analysis.roofline.static_ceilings`: the largest of its issue, shared-memory and
    ALU-pipe floors, drawn as one horizontal line named after the limit (three per format would
    bury each other's labels). Returns the formats that had no counts."""
    missing = []
    styles = {"issue_floor_us": ("-.", "issue"), "smem_floor_us": ((0, (1, 1)), "shared-memory"),
              "alu_floor_us": ((0, (5, 2)), "ALU-pipe")}
    for f, g in ceil.groupby("kv_format", sort=False):
        r = g.iloc[0]
        have = {c: r[c] for c in styles if c in r and r[c] == r[c] and r[c] > 0}
        if not have:
            missing.append(f)
            continue
        col = max(have, key=have.get)
        ls, what = styles[col]
        t = r["flops"] / (r[col] * 1e-6) / 1e12
        ax.hlines(t, *x_range, color=color(f), lw=1.3, ls=ls)
        ax.text(x_range[1] / 1.05, t * 1.06, f"{f} {what} ceiling ({r['variant']})", ha="right", fontsize=6.5,
                color=color(f))
    return missing


# --- teaching schematics (drawn from the model's constants, no data) -------------------------------
def _block(ax, x, y, w, h, text, fc, fontsize=8, **kw):
    ax.add_patch(plt.Rectangle((x, y), w, h, fc=fc, ec="k", lw=0.8, **kw))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def absorption_diagram():
    """Weight absorption as blocks: the per-head 128-wide q_nope folds through W_UK into a 512-wide
    latent query; with the 64 rope dims, q and the cached row are 576 wide; V is the row's first 512."""
    from .problem import QK_ROPE_HEAD_DIM as R, V_HEAD_DIM as L

    fig, ax = plt.subplots(figsize=(11, 4.6))
    ax.axis("off")
    s = 1 / 64  # drawing units per dim
    _block(ax, 0, 3.2, 128 * s, 0.7, "q_nope\n128 / head", "#DDDDDD")
    ax.annotate("", (2.9, 3.55), (2.1, 3.55), arrowprops=dict(arrowstyle="->"))
    ax.text(2.5, 3.95, "x W_UK (128 x 512)\nper head, once per query", ha="center", fontsize=7.5)
    _block(ax, 3.0, 3.2, L * s, 0.7, "q_latent = W_UK^T q_nope  (512)", color("bf16"))
    _block(ax, 3.0 + L * s, 3.2, R * s, 0.7, "rope\n64", "#F0E442")
    ax.text(3.0 + (L + R) * s / 2, 4.15, "absorbed query: 576 dims per head (16 heads = 16 rows)", ha="center", fontsize=8.5)
    _block(ax, 3.0, 1.4, L * s, 0.7, "c_kv: the compressed latent (512)", color("bf16"), alpha=0.75)
    _block(ax, 3.0 + L * s, 1.4, R * s, 0.7, "k_rope\n64", "#F0E442")
    ax.text(3.0 + (L + R) * s / 2, 2.3, "one cached KV row per token (one KV head for all 16 query heads): 576 dims",
            ha="center", fontsize=8.5)
    ax.annotate("", (3.0, 1.2), (3.0 + L * s, 1.2), arrowprops=dict(arrowstyle="<->", color=color("triton")))
    ax.text(3.0 + L * s / 2, 0.85, "V = the first 512 dims of the SAME row (W_UV folds into the output projection)",
            ha="center", fontsize=8.5, color=color("triton"))
    ax.annotate("", (3.0 + (L + R) * s + 0.1, 1.75), (3.0 + (L + R) * s + 0.1, 3.55),
                arrowprops=dict(arrowstyle="<->", color="#B00020"))
    ax.text(3.0 + (L + R) * s + 0.25, 2.65, "score = q . row\n(all 576 dims)\n= q_nope.(W_UK c) + q_rope.k_rope",
            fontsize=7.5, color="#B00020", va="center")
    ax.set_xlim(-0.1, 15.5)
    ax.set_ylim(0.6, 4.5)
    ax.set_title("Weight absorption: why q/k is 576 wide and V is the first 512 of the same row")
    return fig


def tiling_schematic(block_n: int = 32, heads: int = 16):
    """The decode tile, two orientations: (left) heads as M (16 rows) x BLOCK_N tokens, the V tile
    is the same KV tile's first 512 columns; (right) swap-AB: S^T = K Q^T with 64 KV tokens as the
    M of warpgroup MMA and the heads as N, so no M padding."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax in axes:
        ax.axis("off")
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 7)
    a = axes[0]
    _block(a, 0.2, 4.6, 3.0, 1.2, f"Q tile\n{heads} heads (M) x 576", color("bf16"))
    _block(a, 4.0, 3.2, 1.2, 3.4, f"K tile^T\n576 x\nBLOCK_N={block_n}", "#BBBBBB")
    _block(a, 5.8, 4.6, 1.8, 1.2, f"S = Q K^T\n{heads} x {block_n}", "#F0E442")
    _block(a, 5.8, 1.2, 1.8, 2.2, f"V tile\n{block_n} x 512\n(same rows,\nfirst 512 cols)", "#BBBBBB", alpha=0.6)
    _block(a, 8.0, 2.2, 1.8, 1.2, f"O += P V\n{heads} x 512", color("triton"), alpha=0.6)
    a.text(5.0, 0.5, "online softmax per tile: m = max(m, rowmax S); O *= exp(m_old - m);\n"
           "P = exp(S - m); l = l exp(m_old - m) + rowsum P;  at the end O / l", ha="center", fontsize=8)
    a.annotate("", (4.6, 3.4), (6.0, 2.3), arrowprops=dict(arrowstyle="<-", ls="--"))
    a.set_title(f"heads as M: {heads} rows; wgmma needs M = 64 (3/4 padding), mma.sync fits 16", fontsize=9.5)
    b = axes[1]
    _block(b, 0.2, 2.8, 2.2, 3.4, "K tile\n64 tokens (M)\nx 576\nstraight from\nshared memory", "#BBBBBB")
    _block(b, 2.8, 4.6, 3.6, 1.2, f"Q^T: 576 x {heads} heads (N)\nloaded once per program", color("bf16"))
    _block(b, 6.9, 2.8, 2.4, 3.4, f"S^T = K Q^T\n64 x {heads}\n(warpgroup\nMMA,\nM=64, N={heads})", "#F0E442")
    b.text(5.0, 1.3, "swap-AB: tokens fill the M = 64 rows warpgroup MMA needs; the 16 heads are N\n"
           "(N may be 8..256 in steps of 8): no padded rows, the K tile feeds the MMA from shared memory.\n"
           "P^T then multiplies V: the same tile's first 512 columns.", ha="center", fontsize=8)
    b.set_title("swap-AB: tokens as M = 64, heads as N", fontsize=9.5)
    fig.suptitle("One program's KV loop: a tile of BLOCK_N tokens is read once and serves as K and as V")
    return fig


def splitk_merge_figure(demo: dict, kv_len: int):
    """Split-K on a skewed softmax: per chunk its LSE and its merge weight exp(lse_i - lse) for
    each head (stacked), against the chunk's share of tokens (what a naive average would use)."""
    import numpy as np

    w = demo["weights"].numpy()  # (S, H)
    lse = demo["partial_lse"].numpy()
    bounds = demo["bounds"][0]
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw=dict(width_ratios=[1, 1.6]))
    x = np.arange(len(bounds))
    a0.bar(x, lse.mean(1), color=color("triton"))
    a0.set_xticks(x, [f"chunk {i}\n{a}-{e - 1}" for i, (a, e) in enumerate(bounds)], fontsize=8)
    a0.set_ylabel("partial log-sum-exp, mean over heads")
    a0.set_title("each chunk's lse_i (written beside its partial output)", fontsize=9.5)
    bottom = np.zeros(w.shape[1])
    for i, (a, e) in enumerate(bounds):
        a1.bar(np.arange(w.shape[1]), w[i], bottom=bottom, label=f"chunk {i} ({(e - a) / kv_len:.0%} of tokens)")
        bottom += w[i]
    a1.set_xlabel("query head")
    a1.set_ylabel("merge weight exp(lse_i - lse)")
    a1.set_ylim(0, 1)
    a1.set_title(f"merge weights: far from the token shares; |merged - reference| = {demo['max_abs_diff']:.0e}", fontsize=9.5)
    legend_outside(a1)
    fig.suptitle("Split-K + LSE merge on a skewed softmax (chunk 3 holds 20 keys the queries look for)")
    return fig


def mxfp4_block_figure(tab, info: dict):
    """One MXFP4 block encoded: input values, the E2M1 grid scaled by 2**e, where each value
    lands, and the 4-bit codes; title carries amax, the rule, the E8M0 byte and the byte count."""
    import numpy as np

    fig, (a0, a1) = plt.subplots(2, 1, figsize=(12, 5.6), gridspec_kw=dict(height_ratios=[2.2, 1]))
    i = np.arange(len(tab))
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6]) * info["scale"]
    for g in np.concatenate([-grid[1:], grid]):
        a0.axhline(g, color="#CCCCCC", lw=0.6, zorder=0)
    a0.scatter(i, tab.x, color="k", s=18, label="input x (bf16)", zorder=3)
    a0.scatter(i, tab.decoded, marker="_", s=160, lw=2, color=color("mxfp4"), label="decoded: E2M1 value x 2^e", zorder=4)
    a0.vlines(i, tab.x, tab.decoded, color=color("mxfp4"), lw=0.8)
    a0.set_ylabel("value (grey lines: the E2M1 grid x 2^e)")
    a0.set_xticks(i)
    a0.legend(loc="upper right", ncol=2)
    rule = "mantissa >= 1.75: rounds up to the next power of two" if info["rounds_up"] else "mantissa < 1.75: floor(log2 amax) - 2"
    a0.set_title(f"amax = {info['amax']:.3f} (mantissa {info['amax_mantissa']:.3f}; {rule}) -> e = {info['exponent']}, "
                 f"E8M0 byte {info['e8m0_byte']} = {info['e8m0_byte']:#04x}", fontsize=9.5)
    a1.axis("off")
    codes = list(tab.code)
    for k in range(16):
        lo, hi = codes[2 * k], codes[2 * k + 1]
        a1.text(k / 16 + 0.03, 0.65, f"{hi}|{lo}", ha="center", fontsize=7.5, family="monospace")
        a1.text(k / 16 + 0.03, 0.35, f"{int(hi + lo, 2):02x}", ha="center", fontsize=8, family="monospace")
    a1.text(0.0, 0.05, f"byte k = element 2k+1 (high nibble) | element 2k (low nibble); code = sign bit + 3-bit E2M1.  "
            f"{info['bytes_mxfp4']} bytes (16 of nibbles + 1 E8M0) vs {info['bytes_bf16']} in bf16", fontsize=8.5)
    fig.suptitle("MXFP4, one 32-element block step by step (mla.quant.quantize_mxfp4)")
    return fig


def littles_law_figure(curve: dict, points=None):
    """% of bandwidth a single kernel can reach against its compulsory bytes (pipe model of
    :func:`mla.analysis.teaching.littles_law`), one curve per assumed fixed cost, with measured
    points (kernel time, % of the run's read probe) labelled by shape."""
    fig, ax = plt.subplots(figsize=(10, 4.6))
    for lab, (xs, ys) in curve.items():
        ax.plot(xs / 1e6, ys, lw=1.5, label=lab)
    if points is not None and len(points):
        for f, g in points.groupby("kv_format"):
            labelled_points(ax, g.io_bytes / 1e6, g.pct, [shape_label(c) for c in g.case], color=color(f), s=26,
                            label=f"measured, triton {f} (kernel time)", zorder=3)
    ax.set_xscale("log")
    ax.set_xlabel("compulsory bytes per call (MB, log)")
    ax.set_ylabel("% of read bandwidth")
    ax.set_ylim(0, 110)
    ax.set_title("Bandwidth in flight: a small call ends before the pipe fills (time = fixed + latency + bytes / BW)", fontsize=10)
    legend_outside(ax)
    return fig


def flush_writeback_figure(probe, kernels=None, kernel_label: str = "triton default {f} (kernel time)"):
    """Left: one graph-replayed read of N bytes after a zeroing flush (dirty L2) and after a read pass
    (clean L2), against N (``scripts/probes/l2_flush_probe.py`` rows: flush, nbytes, median_us).
    Right: the difference, the write-back the zeroing leaves to the next kernel, with the default
    decode kernels' own difference (``kernels``: case, kv_format, io_bytes, write_us, read_us), each format's
    points labelled ``kernel_label.format(f=...)`` (say whose defaults they are: the kernels change by round)."""
    import numpy as np

    sweep = probe[probe["size"].str.endswith("MiB")]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.4))
    for kind, lab in (("write", "after a zeroing flush (dirty L2: eval.py's kind)"), ("read", "after a read pass (clean L2)")):
        g = sweep[sweep["flush"] == kind].sort_values("nbytes")
        ax.plot(g.nbytes / 2**20, g.median_us, marker="o", ms=3, lw=1.5, label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes read (MiB, log)")
    ax.set_ylabel("time (us, log; graph replay behind the flush)")
    ax.set_title("One torch.sum over N bytes, timed like the kernel mode", fontsize=10)
    ax.legend(fontsize=8)
    w = sweep[sweep["flush"] == "write"].set_index("nbytes").median_us
    r = sweep[sweep["flush"] == "read"].set_index("nbytes").median_us
    d = (w - r).dropna().sort_index()
    bx.plot(d.index / 2**20, d.values, marker="o", ms=3, lw=1.5, color="0.3", label="torch.sum (the probe)")
    top = max(12.0, 1.8 * float(np.nanmax(d.values)))
    if kernels is not None and len(kernels):
        for f, g in kernels.groupby("kv_format"):
            diff = g.write_us - g.read_us
            inside = diff <= top
            labelled_points(bx, g.io_bytes[inside] / 2**20, diff[inside], [shape_label(c) for c in g.case[inside]],
                            color=color(f), s=26, label=kernel_label.format(f=f), zorder=3)
            for x, v, c in zip(g.io_bytes[~inside] / 2**20, diff[~inside], g.case[~inside]):  # off the scale: say so
                bx.scatter([x], [top * 0.97], marker="^", color=color(f), s=30, zorder=3)
                bx.annotate(f"{shape_label(c)}: {v:.0f} us (off scale)", (x, top * 0.97), fontsize=7,
                            xytext=(-4, -10), textcoords="offset points", ha="right")
    bx.axhline(0, color="0.6", lw=0.8)
    bx.set_xscale("log")
    bx.set_xlabel("bytes read (MiB, log)")
    bx.set_ylabel("zeroing flush minus read flush (us)")
    bx.set_title("The write-back a dirty L2 leaves to the next kernel", fontsize=10)
    bx.set_ylim(min(-2.0, float(np.nanmin(d.values)) - 1), top)
    legend_outside(bx)
    return fig


def first_row_transient_figure(t, positions):
    """Round 42's timings of one kernel at one shape, a dot each, on one row per position in the process
    (``t``: position, variant, kernel_us; ``positions``: the rows' order, top first), the variants in the
    backends' colors; each row's median written at its right."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(11, 0.65 * len(positions) + 1.6))
    variants = sorted(t.variant.unique())
    rng = np.random.default_rng(0)  # a fixed jitter: the same picture every run
    labelled = set()
    for y, pos in enumerate(positions[::-1]):
        g = t[t.position == pos]
        for k, v in enumerate(variants):
            x = g.kernel_us[g.variant == v]
            if len(x):
                off = (k - (len(variants) - 1) / 2) * 0.18
                ax.scatter(x, y + off + rng.uniform(-0.05, 0.05, len(x)), s=22, color=f"C{k}", alpha=0.8,
                           label=None if v in labelled else v, zorder=3)
                labelled.add(v)
        if len(g):
            ax.annotate(f"median {g.kernel_us.median():.1f} us (n={len(g)})", (1.0, y),
                        xycoords=("axes fraction", "data"), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=8)
    ax.set_yticks(range(len(positions)), positions[::-1], fontsize=8)
    ax.set_xlabel("kernel time (us; graph replay behind the 1 GiB flush)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_ylim(-0.6, len(positions) - 0.4)
    return fig


def ablation_chain_figure(chain):
    """The ablation chain: one bar per step (measured kernel time, us), labelled with what changed
    and its SASS counts; steps without a measurement are drawn as an empty frame."""
    import numpy as np

    fig, ax = plt.subplots(figsize=(12, 0.55 * len(chain) + 1.6))
    y = np.arange(len(chain))
    t = chain["kernel_us"].astype(float)
    ax.barh(y, t.fillna(0), color=[color(f) for f in chain["kv_format"]])
    for i, r in enumerate(chain.itertuples()):
        counts = ", ".join(f"{k} {getattr(r, k):.0f}" for k in ("sass_mma", "sass_wgmma", "warp_instr_per_token", "registers")
                           if hasattr(r, k) and getattr(r, k) == getattr(r, k))
        txt = f" {r.kernel_us:.0f} us" if r.kernel_us == r.kernel_us else " not measured yet"
        ax.text(t.fillna(0).iloc[i], i, txt + (f"  [{counts}]" if counts else ""), va="center", fontsize=7.5)
    ax.set_yticks(y, [f"{r.kv_format} {r.step}. {r.variant}\n{short(r.changed, 70)}" for r in chain.itertuples()], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("kernel time (us, CUDA-graph replay, L2 cold)")
    ax.set_xlim(0, float(t.max()) * 2.1 if t.notna().any() else 1)  # room for the counts label
    ax.grid(axis="y", visible=False)
    return fig


def annotated_grid(ax, values, xlabels, ylabels, title: str, cbar_label: str, log: bool = True, fmt: str = "{:.2g}"):
    """A small matrix (e.g. KV format x Q format) as a colored grid with each value written in its
    cell and a colorbar; log color scale where the values span decades."""
    import numpy as np
    from matplotlib.colors import LogNorm, Normalize

    v = np.asarray(values, dtype=float)
    pos = v[v > 0]
    norm = LogNorm(vmin=pos.min(), vmax=pos.max()) if log and len(pos) else Normalize(vmin=0, vmax=np.nanmax(v))
    im = ax.imshow(v, cmap="viridis", norm=norm)
    mid = np.sqrt(pos.min() * pos.max()) if log and len(pos) else np.nanmax(v) / 2
    for i in range(v.shape[0]):
        for j in range(v.shape[1]):
            ax.text(j, i, fmt.format(v[i, j]), ha="center", va="center", fontsize=9, color="w" if v[i, j] < mid else "k")
    ax.set_xticks(range(v.shape[1]), xlabels)
    ax.set_yticks(range(v.shape[0]), ylabels)
    ax.set_title(title, fontsize=9)
    ax.grid(False)
    ax.figure.colorbar(im, ax=ax, label=cbar_label + (" (log)" if log else ""), fraction=0.046, pad=0.04)
    return im


FORMAT_MARKERS = {"bf16": "o", "fp8": "s", "mxfp4": "D"}


def roofline_points(ax, frame, time_col: str, what: str, spread: float = 0.07, **kw) -> None:
    """Measured points on a roofline: x = FLOPs / compulsory bytes, y = FLOPs / time, one marker
    per KV format, color per backend, each point labelled with its shape. All shapes of a format
    share (nearly) one intensity, so points of one (backend, format) are spread by ``spread`` in
    log x, in shape order, to keep the labels apart (the footer should say so)."""
    import numpy as np

    for (b, f), g in frame.groupby(["backend", "kv_format"], sort=False):
        g = g.dropna(subset=[time_col])
        k = np.arange(len(g)) - (len(g) - 1) / 2
        x = g.flops / g.io_bytes * (1 + spread) ** k
        y = g.flops / (g[time_col] * 1e-6) / 1e12
        labelled_points(ax, x, y, [shape_label(c) for c in g.case], marker=FORMAT_MARKERS.get(f, "o"), color=color(b),
                        s=26, label=f"{b} {f} ({what})", zorder=3, **kw)


def resource_bars(frame, cols, *, label: str = "variant", top: int | None = None, sort_by: str | None = None,
                  limits: dict | None = None, color_col: str | None = None, keep=()):
    """One horizontal-bar panel per static resource column (rows = variants), sharing the row
    order (by ``sort_by``, smallest first; the ``top`` first rows plus any ``keep`` labels), each
    bar labelled with its value; ``limits`` {col: [(value, text), ...]} draws hardware limits."""
    import numpy as np

    f = frame.sort_values(sort_by or cols[0], kind="stable")
    if top:
        f = f[(np.arange(len(f)) < top) | f[label].isin(list(keep))]
    fig, axes = plt.subplots(1, len(cols), figsize=(4.2 * len(cols) + 2.5, 0.3 * len(f) + 1.8), sharey=True, squeeze=False)
    y = np.arange(len(f))
    for ax, c in zip(axes[0], cols):
        colors = [color(v) for v in f[color_col]] if color_col else color("triton")
        ax.barh(y, f[c].astype(float), color=colors)
        for i, v in enumerate(f[c]):
            ax.text(v, i, f" {v:.0f}", va="center", fontsize=7)
        for value, text in (limits or {}).get(c, []):
            ax.axvline(value, color="#B00020", lw=1, ls="--")
            ax.text(value, -0.7, text, color="#B00020", fontsize=7, ha="right", va="bottom")
        ax.set_xlabel(c)
        ax.grid(axis="y", visible=False)
    axes[0][0].set_yticks(y, [str(v) + (f"  [{k}]" if color_col else "") for v, k in
                              zip(f[label], f[color_col] if color_col else [""] * len(f))], fontsize=7.5)
    axes[0][0].invert_yaxis()
    return fig, f


def cold_vs_kernel_figure(ho, small, title: str = "Whole call vs kernels alone, default configs"):
    """Whole call vs kernels alone for the default configs (rows of
    :func:`mla.analysis.measured.host_overhead` with an ``entry`` column): left, the ``small``
    shapes as stacked kernel + host bars with the anchors' whole call and each row's own run's host
    floor; right, every shape's cold time against its kernel time (distance above the diagonal = host).
    ``title``: the caller names the runs (they may differ in host and harness)."""
    import numpy as np

    fig, (a0, a1) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw=dict(width_ratios=[1.5, 1]))
    ents = [e for e in ["torch bf16", "torch fp8", "torch mxfp4", "flashinfer bf16", "flashinfer fp8",
                        "triton bf16", "triton fp8", "triton mxfp4"] if e in set(ho.entry)]
    xsm = np.arange(len(small))
    w = 0.85 / len(ents)
    seen = set()
    for i, e in enumerate(ents):
        g = ho[ho.entry == e].set_index("case").reindex(small)
        b, f = e.split()
        xs = xsm + (i - len(ents) / 2 + 0.5) * w
        a0.bar(xs, g.kernel_us, w, color=color(b), edgecolor=color(f), lw=1.0, label=f"{e}")
        a0.bar(xs, g.host_us, w, bottom=g.kernel_us, color=color(b), alpha=0.3, edgecolor=color(f), lw=1.0, hatch="..")
        if g.anchor_cold_us.notna().any():
            a0.scatter(xs, g.anchor_cold_us, marker="_", s=160, color="k", lw=2.2, zorder=4,
                       label=None if "a" in seen else "anchor (peer): whole call, same backend + format")
            seen.add("a")
        if g.host_floor_us.notna().any():
            a0.scatter(xs, g.host_floor_us, marker="x", s=25, color="#B00020", zorder=5,
                       label=None if "h" in seen else "host_floor_us of the row's run (1 tiny op, cold)")
            seen.add("h")
    a0.set_xticks(xsm, small)
    a0.set_ylabel("us per call (L2 cold)")
    a0.set_title(f"The {len(small)} smallest shapes: solid = kernel (graph replay), dotted = host (cold - kernel)", fontsize=9)
    a0.legend(fontsize=6.5, ncol=2, loc="upper left")
    a0.set_ylim(0, np.nanmax(ho[ho.case.isin(small)].cold_us) * 1.45)
    for e, g in ho.groupby("entry"):
        a1.scatter(g.kernel_us, g.cold_us, color=color(g.backend.iloc[0]),
                   marker={"bf16": "o", "fp8": "s", "mxfp4": "D"}.get(g.kv_format.iloc[0], "o"), s=22, label=e)
    lo, hi = ho[["kernel_us", "cold_us"]].min().min() * 0.7, ho[["kernel_us", "cold_us"]].max().max() * 1.3
    a1.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    a1.set_xscale("log"); a1.set_yscale("log")
    a1.set_xlabel("kernel-only time (us, graph replay, L2 cold)"); a1.set_ylabel("whole call (us, L2 cold)")
    a1.set_title("All 8 shapes: host overhead = distance above the diagonal", fontsize=9)
    a1.legend(fontsize=6.5, loc="upper left")
    fig.suptitle(title, fontsize=10)
    return fig


def tiny_cold_figure(t, *, least_e=(2.0, 5.0), target: float = 1.3,
                     title: str = "bs4-kv1024: the default call's cold time over its run's graph floor"):
    """Issue 10's bs4-kv1024 cold ratio (rows of :func:`mla.analysis.measured.tiny_cold_by_floor`) against the graph
    floor it is divided by: one point per campaign and format (colour: format; marker: device), the target as a
    line, and the arithmetic least a cold call of the rows' median kernel time K can reach, 1 + (K - e) / floor,
    for each floor device part e in ``least_e`` (dashed: e is assumed, not measured). Where rows measured e
    (``graph_floor_kernel_us``), their own least is drawn as an x; where they timed the floor beside each cold sample
    (``cold_floor_us``), that ratio is drawn as a ring at that floor."""
    import matplotlib.ticker as mticker
    import numpy as np

    fig, ax = plt.subplots(figsize=(9, 4.8))
    markers = {"h200": "o", "h100": "^"}
    for (dev, fmt), g in t.groupby(["device", "kv_format"], sort=False):
        ax.scatter(g.graph_floor_us, g.cold_ratio, color=color(fmt), marker=markers.get(dev, "s"), s=30,
                   alpha=0.85, edgecolor="black", linewidth=0.4, label=f"{dev.upper()} {fmt}")
    lo, hi = t.graph_floor_us.min() * 0.9, t.graph_floor_us.max() * 1.05
    x = np.linspace(lo, hi, 100)
    k = float(t.kernel_us.median())
    for e, ls in zip(least_e, ("--", ":")):
        ax.plot(x, 1 + (k - e) / x, color="#555555", ls=ls, lw=1.2,
                label=f"least for a {k:.1f}-us kernel if the floor's device part is {e:g} us (arithmetic)")
    have = t[t.lowest_ratio.notna()]
    if len(have):
        ax.scatter(have.graph_floor_us, have.lowest_ratio, color="black", marker="x", s=40,
                   label="least from the run's graph_floor_kernel_us (measured)")
    paired = t[t.paired_ratio.notna()] if "paired_ratio" in t else t.iloc[:0]
    for fmt, g in paired.groupby("kv_format", sort=False):  # (rows from round 72 on)
        ax.scatter(g.cold_floor_us, g.paired_ratio, facecolor="none", edgecolor=color(fmt), marker="o", s=60,
                   linewidth=1.2, label=f"{fmt}: cold over the floor timed beside it (cold_floor_us)")
    ax.axhline(target, color="#B00020", lw=1.2)
    ax.text(lo, target, f" target {target}x", color="#B00020", va="bottom", ha="left", fontsize=8)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_yticks([0.5, 0.75, 1, 1.3, 2, 3, 5])
    ax.set_xlabel("the floor divided by, us: the run's graph_floor_us (a one-kernel graph replay timed like cold)"
                  + ("; rings: the row's cold_floor_us" if len(paired) else ""), fontsize=9)
    ax.set_ylabel("cold median / floor")
    ax.set_title(title, fontsize=10)
    legend_outside(ax, fontsize=7)
    return fig


def geomean_figure(g, *, title: str = "Geomean over the 8 leaderboard shapes"):
    """Ranked geomeans in blocks of one method each (``g``: one row per entry with ``geomean_us``,
    ``method``, ``kind`` = measured / anchor, optional ``cold_geomean_us`` and ``kernel_geomean_us``):
    bars in the order of ``g``'s methods as they first appear, sorted within a block, never across
    (a fresh time and a cold time are different measurements); each label names its method; open
    circles mark the entry's cold geomean and bars its kernel-only geomean where they differ from the
    bar's own method."""
    import numpy as np

    order = list(dict.fromkeys(g["method"]))
    g = g.assign(_b=g["method"].map(order.index)).sort_values(["_b", "geomean_us"])
    fig, ax = plt.subplots(figsize=(9.5, 0.36 * len(g) + 1.9))
    y = np.arange(len(g))
    anchor = (g["kind"] == "anchor").to_numpy()
    cols = ["#DDDDDD" if a else color(e.split()[0]) for e, a in zip(g.index, anchor)]
    bars = ax.barh(y, g["geomean_us"], color=cols, edgecolor=["#777777" if a else "none" for a in anchor])
    for b, a in zip(bars, anchor):
        b.set_hatch("///" if a else "")
    # the value sits in the label: at the bar's end it would collide with the markers
    ax.set_yticks(y, [f"{e}  [{m} {v:.1f} us]" for e, m, v in zip(g.index, g["method"], g["geomean_us"])], fontsize=7.5)
    seen = set()
    for mode, mk, lab in (("cold", "o", "cold geomean (whole call, fixed inputs, L2 flushed)"),
                          ("kernel", "|", "kernel-only geomean (graph replay)")):
        col = f"{mode}_geomean_us"
        if col not in g:
            continue
        hit = g[col].notna() & (g["method"] != mode)
        style = dict(facecolors="none", edgecolors="k", s=40) if mk == "o" else dict(color="k", s=110)
        ax.scatter(g.loc[hit, col], y[hit.to_numpy()], marker=mk, lw=1.3, zorder=4,
                   label=None if mode in seen or not hit.any() else lab, **style)
        seen.add(mode)
    for b in range(1, len(order)):  # a rule between method blocks
        ax.axhline(int((g["_b"] < b).sum()) - 0.5, color="k", lw=0.8, ls="--")
    ax.set_ylim(len(g) - 0.5, -0.5)
    ax.set_xlabel("geomean over the 8 shapes (us); the bar: the method in brackets (hatched: peer anchors, cited)")
    ax.set_title(title, fontsize=9.5)
    if seen:
        ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="y", visible=False)
    return fig


def program_timeline(ax, frame, *, title: str | None = None, legend: bool = True):
    """One launch's programs as a Gantt chart (``frame``: :func:`mla.analysis.timeline.program_frame`):
    a row per SM (sorted by id), each program a bar from start_us to end_us in four segments, prologue /
    waiting for the first tile / tile loop / epilogue, placed by the %globaltimer stamps (one clock for
    all SMs; a coarse timer rounds the edges). Programs one SM holds at once get a lane each; a second
    consumer's end is a black tick; the dashed line is the last end (the makespan). Returns the ax."""
    import numpy as np

    f = frame.sort_values(["sm", "start_us"], kind="stable").reset_index(drop=True)
    sms = np.sort(f["sm"].unique())
    row_of = {sm: i for i, sm in enumerate(sms)}
    lane = np.zeros(len(f), dtype=int)  # greedy lanes: a program takes the first lane free at its start
    lanes_on = {}
    for sm, g in f.groupby("sm", sort=False):
        ends: list[float] = []  # per lane, when its last program ended
        for i, st, en in zip(g.index, g["start_us"], g["finish_us"]):
            free = next((j for j, e in enumerate(ends) if e <= st), len(ends))
            if free == len(ends):
                ends.append(en)
            ends[free] = en
            lane[i] = free
        lanes_on[sm] = len(ends)
    n_lanes = f["sm"].map(lanes_on).to_numpy()
    height = 0.8 / n_lanes
    y = f["sm"].map(row_of).to_numpy() - 0.4 + (lane + 0.5) * height
    q_ready = f["q_ready_us"].to_numpy()
    first = f["first_tile_us"].fillna(f["q_ready_us"]).to_numpy()  # (no tiles: no wait)
    edges = [f["start_us"].to_numpy(), q_ready, first, f["loop_end_us"].to_numpy(), f["end_us"].to_numpy()]
    labels = {"prologue": "prologue (Q ready)", "first_wait": "waiting for the first tile", "loop": "tile loop",
              "epilogue": "epilogue (stores)"}
    for k, phase in enumerate(("prologue", "first_wait", "loop", "epilogue")):
        ax.barh(y, edges[k + 1] - edges[k], left=edges[k], height=height * 0.9, color=PHASE_COLORS[phase],
                lw=0, label=labels[phase])
    two = f["end2_us"].notna().to_numpy()
    if two.any():
        ax.scatter(f["end2_us"].to_numpy()[two], y[two], marker="|", s=30, color="k", lw=1, zorder=3,
                   label="consumer 1 ends")
    last = float(f["finish_us"].max())
    ax.axvline(last, color="k", lw=0.8, ls="--", label=f"last end: {last:.1f} us")
    step = max(1, int(np.ceil(len(sms) / 24)))  # at most ~24 labels on the SM axis
    ax.set_yticks(range(0, len(sms), step), [str(s) for s in sms[::step]])
    ax.set_ylim(len(sms) - 0.5, -0.5)  # SM 0 at the top, as a table reads
    ax.set_xlim(left=min(0.0, float(f["start_us"].min())))
    ax.set_xlabel("us since the first program started")
    ax.set_ylabel(f"SM (%smid; {len(sms)} used)")
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title, fontsize=10)
    if legend:  # the phases first, in program order (matplotlib would list the lines first)
        handles, names = ax.get_legend_handles_labels()
        order = sorted(range(len(names)), key=lambda i: (names[i] not in labels.values(), i))
        legend_outside(ax, handles=[handles[i] for i in order], labels=[names[i] for i in order])
    return ax
