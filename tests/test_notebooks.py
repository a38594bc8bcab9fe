"""Every notebook executes in replay mode on the CPU (through mla.reproduce) and writes its figures.

Two passes:
* the committed data/ tree, as a user's ``make reproduce`` sees it (notebooks 02-05 must cope with
  no measured CSVs yet and say so);
* a synthetic data tree (tmp, schema-valid rows with made-up times, never committed) so the code
  paths that plot measured, swept, static and published rows run before the H200 campaign does.

Figures go to a temporary folder (MLA_FIGURES_DIR) and notebooks are executed from copies, so the
test leaves figures/ and notebooks/ untouched.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")

from mla import problem as P  # noqa: E402
from mla import reproduce  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# figures each notebook must write whatever data exist (placeholders say "no data yet")
REQUIRED = {
    "00": ["00_bytes_per_case", "00_intensity_vs_ridge", "00_splitk_merge_weights", "00_weight_absorption",
           "00_tiling_schematic"],
    "01": ["01_error_grid", "01_tolerance_margin", "01_error_hist", "01_scale_rule", "01_mxfp4_block"],
    "02": ["02_floors_per_case", "02_roofline_h200", "02_roofline_mi355x", "02_pct_read_bw_h200", "02_bandwidth_in_flight",
           "02_first_row_transient"],
    "03": ["03_ctas_vs_sms", "03_splitk_heatmap_bf16", "03_splitk_heatmap_fp8", "03_splitk_heatmap_mxfp4",
           "03_heuristic_vs_best", "03_splitk_heatmap_anchor_seed003_fp8"],
    "04": ["04_gfx950_hip_resources", "04_gfx950_hip_loop_mix", "04_gfx950_triton_resources",
           "04_gfx950_triton_knobs", "04_sm90_triton_resources", "04_h200_variants", "04_sm90_static_vs_time",
           "04_ablation_chain", "04_h100_variants_r71"],
    "05": ["05_shootout_times", "05_geomean", "05_cold_vs_kernel", "05_vs_flashinfer", "05_tiny_cold_vs_floor"],
}


def _run_all(tmp_path: Path, monkeypatch, data_dir: Path | None, only: tuple[str, ...] | None = None) -> dict:
    figs = tmp_path / "figures"
    monkeypatch.setenv("MLA_FIGURES_DIR", str(figs))
    if data_dir is not None:
        monkeypatch.setenv("MLA_DATA_DIR", str(data_dir))
    else:
        monkeypatch.delenv("MLA_DATA_DIR", raising=False)
    times = {}
    for nb in reproduce.notebook_paths():
        if only and nb.name[:2] not in only:
            continue
        copy = tmp_path / nb.name
        shutil.copy(nb, copy)
        t0 = time.perf_counter()
        reproduce.run_notebook(copy, mode="replay", timeout=600)  # raises CellExecutionError on any failing cell
        times[nb.name] = time.perf_counter() - t0
    return times


def _assert_figures(figs: Path, only=None):
    for nb, names in REQUIRED.items():
        if only and nb not in only:
            continue
        for n in names:
            for ext in ("png", "svg"):
                p = figs / f"{n}.{ext}"
                assert p.exists() and p.stat().st_size > 1000, f"notebook {nb} did not write {p.name}"
    for p in figs.glob("*.png"):
        assert (figs / f"{p.stem}.svg").exists(), f"{p.name} has no .svg twin"


def test_notebooks_exist_and_are_parameterised():
    import nbformat

    paths = reproduce.notebook_paths()
    assert [p.name[:2] for p in paths] == sorted(REQUIRED), [p.name for p in paths]
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        first = nb.cells[0]
        assert first.cell_type == "markdown" and "reproduce" in first.source, f"{p.name}: first cell must say how to re-run"
        params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1 and 'MODE = "replay"' in params[0].source, p.name
        mode_cells = [c for c in nb.cells if c.cell_type == "code" and re.search(r"^MODE\s*=", c.source, re.M)]
        assert mode_cells == params, f"{p.name}: one MODE cell (the parameters cell), found {len(mode_cells)}"
        for c in nb.cells:
            if c.cell_type == "code":
                assert "class " not in c.source, f"{p.name}: engine code belongs in mla/, not notebooks"
                for name, n in _function_lengths(c.source):
                    assert n <= 15, f"{p.name}: function {name} is {n} lines; move it to mla/plots.py or mla/analysis"
                assert "load_measured(" not in c.source, f"{p.name}: read measured rows through mla.analysis.manifest"


def test_notebook_02_binds_its_h200_frames_once():
    """Notebook 02's H200 frames (section 3's rows, the best-config and whole-call points, the probe) are bound in
    one cell each: an H100 section that rebound one (round 51's rows as `ok`, round 52's as `best`) would feed H100
    data to sections 3-5 when they are re-run by hand."""
    import ast

    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "02_roofline.ipynb", as_version=4)
    cells = {name: [] for name in ("df", "ok", "best", "calls", "read_bw")}
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        stored = {n.id for n in ast.walk(ast.parse(c.source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for name in cells.keys() & stored:
            cells[name].append(i)
    assert all(len(v) == 1 for v in cells.values()), cells


def _function_lengths(source: str):
    """(name, lines) of every function a cell defines (lambdas are expressions, not counted)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: no functions to count
        return []
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_notebooks_replay_committed_data(tmp_path, monkeypatch):
    t0 = time.perf_counter()
    times = _run_all(tmp_path, monkeypatch, None)
    total = time.perf_counter() - t0
    print("notebook times (s):", {k: round(v, 1) for k, v in times.items()}, "total", round(total, 1))
    _assert_figures(tmp_path / "figures")
    assert total < 300, f"replay of all notebooks took {total:.0f}s; keep it under ~4 minutes on 2 CPU cores"


def test_notebooks_replay_synthetic_campaign(tmp_path, monkeypatch):
    """02-05 against a fixture tree shaped like the H200 campaign's output."""
    data = tmp_path / "data"
    make_fixture_tree(data)
    _run_all(tmp_path, monkeypatch, data, only=("02", "03", "04", "05"))
    _assert_figures(tmp_path / "figures", only=("02", "03", "04", "05"))


# --- a synthetic campaign (schema-valid, made-up times; lives in tmp only) -----------------------
def _row(case: P.Case, backend: str, kv_format: str, config: dict, t_us: float, read_gbs: float = 4300.0,
         variant: str | None = None, plan_config: dict | None = None, command: str = "python -m mla bench --fixture",
         modes=("cold", "warm", "kernel")) -> dict:
    from mla.bench.schema import empty_row
    from mla.bench.timers import MODES

    r = empty_row()
    r.update(run_id="fixture", timestamp_utc="2026-01-01T00:00:00Z", case=case.name, bs=case.batch_size,
             kv=case.kv_seq_len, q_seq_len=case.q_seq_len, heads=case.num_heads, ragged=False,
             total_kv=case.total_kv, seed=case.seed, check_seed=case.seed + 1, backend=backend,
             variant=variant or config.get("variant", backend), kv_format=kv_format, q_format="bf16",
             plan_config=json.dumps(plan_config or {}, sort_keys=True), command=command, host_floor_us=9.0,
             config=json.dumps(config, sort_keys=True), status="ok", message="fixture", check_ok=True,
             max_abs=0.01, rel_l2=0.01, mismatch=0.0, max_abs_fmt=0.001, rel_l2_fmt=0.001,
             io_bytes=P.io_bytes(case, kv_format), kv_bytes=P.kv_bytes(case, kv_format), flops=P.flops(case),
             read_gbs=read_gbs, copy_gbs=4280.0, device="NVIDIA H200", device_slug="h200", driver="fixture",
             torch="fixture", triton="fixture", gpu_runtime="fixture", python="3", git_commit="fixture",
             git_dirty=False, source_hash="fixture", kernel_method="graph-replay-cold", plan_s=0.1)
    for m, scale in (("cold", 1.0), ("warm", 0.9), ("kernel", 0.75)):
        if m not in modes:
            continue
        r[f"{m}_median_us"], r[f"{m}_min_us"], r[f"{m}_iqr_us"], r[f"{m}_n"] = t_us * scale, t_us * scale * 0.97, 1.0, 20
    for m in MODES:
        t = r[f"{m}_median_us"]
        r[f"{m}_gbs"] = r["io_bytes"] / (t * 1e-6) / 1e9 if t == t else math.nan
        r[f"{m}_pct_read_bw"] = 100 * r[f"{m}_gbs"] / read_gbs if t == t else math.nan
    return r


def make_fixture_tree(root: Path) -> None:
    from mla.bench.schema import rows_to_frame
    from mla.analysis.measured import heuristic_splits
    from mla.kernels.triton.variants import DEFAULT_VARIANT, VARIANTS

    h200 = root / "measured" / "h200"
    h200.mkdir(parents=True)
    lb, splits, variants = [], [], []
    for c in P.LEADERBOARD:
        base = 20 + P.io_bytes(c, "bf16") / 3.5e12 * 1e6
        # shaped like the campaign: the leaderboard step (triton: --config graph=true, the plan resolves variant
        # and num_splits), a kernel-only split sweep, a kernel-only variant sweep (scripts/campaign_sweeps.txt)
        for b, fmts, k in (("torch", P.KV_FORMATS, 3.0), ("triton", P.KV_FORMATS, 1.0), ("flashinfer", ("bf16", "fp8"), 0.9)):
            for f in fmts:
                t = k * (20 + P.io_bytes(c, f) / 3.5e12 * 1e6)
                if b == "triton":
                    pc = dict(variant=DEFAULT_VARIANT[f], num_splits=heuristic_splits(c.name, None, f), launches=2)
                    lb.append(_row(c, b, f, dict(graph=True), t, variant=DEFAULT_VARIANT[f], plan_config=pc,
                                   command="python -m mla bench --cases leaderboard --backend triton --config graph=true"))
                else:
                    lb.append(_row(c, b, f, {}, t, command=f"python -m mla bench --cases leaderboard --backend {b}"))
        for f in P.KV_FORMATS:
            for s in (1, 2, 4, 8, 16, 32, 64):
                t = (20 + P.io_bytes(c, f) / 3.5e12 * 1e6) * (1 + 0.3 * abs(math.log2(s) - 3)) + 2 * s
                splits.append(_row(c, "triton", f, dict(graph=True, num_splits=s), t, variant=DEFAULT_VARIANT[f],
                                   modes=("kernel",), command="python -m mla bench --mode kernel --sweep num_splits=1,2,4,8,16,32,64"))
        for f in ("fp8", "mxfp4"):
            for i, v in enumerate(VARIANTS.values()):
                variants.append(_row(c, "triton", f, dict(graph=True, variant=v.name), base * (1 + 0.05 * i), modes=("kernel",),
                                     command="python -m mla bench --mode kernel --sweep variant=" + ",".join(VARIANTS)))
    for name, rows in (("leaderboard", lb), ("splitk_sweep", splits), ("variant_sweep", variants)):
        rows_to_frame(rows).to_csv(h200 / f"{name}.csv", index=False)
    # another tool's table in the same folder (the Triton probe's log): skipped, not an error
    pd.DataFrame([dict(device="NVIDIA H200", case="bs4-kv1024", us=1.0)]).to_csv(h200 / "probe-log.csv", index=False)
    # a failed row must be ignored by every notebook
    bad = dict(lb[0])
    bad.update(status="failed", check_ok=False, **{k: math.nan for k in bad if k.endswith("_us") or k.endswith("_gbs") or k.endswith("_pct_read_bw")})
    rows_to_frame([bad]).to_csv(h200 / "failed.csv", index=False)

    # static gfx950 / sm90 rows shaped like mla.analysis.isa_hip / isa_triton output
    from mla.analysis.isa import AMD_MIX_KEYS, NV_MIX_KEYS

    st = root / "static" / "gfx950"
    st.mkdir(parents=True)
    hip = []
    for i, (n, bn, iglp, pf) in enumerate((("b64w4_plain", 64, 0, 0), ("b64w4_iglp", 64, 1, 0), ("b64w4_pf", 64, 0, 1),
                                           ("b128w4_plain", 128, 0, 0), ("b128w4_pf", 128, 0, 1))):
        r = dict(source="hip", target="gfx950", variant=n, kernel="mla_mxfp4_partial", block_n=bn, num_warps=4,
                 schedule="", iglp=iglp, prefetch=pf, what_changed="fixture", compiler="fixture",
                 vgpr=100 + 20 * i, agpr=0, vgpr_total=128 + 24 * i, sgpr=40, lds_bytes=bn * 640, scratch_bytes=0,
                 vgpr_spill=0, sgpr_spill=0, occupancy_compiler=4 - i // 2, workgroup_size=256, code_bytes=9000,
                 waves_by_vgpr=4, waves_by_lds=4, waves_per_simd=4 - i // 2, limiter="vgpr", mfma_kinds="x:1")
        for k in AMD_MIX_KEYS:
            r[k], r["loop_" + k] = 10 + i, 3 + i
        hip.append(r)
    pd.DataFrame(hip).to_csv(st / "hip.csv", index=False)
    tri = []
    for f in ("fp8", "mxfp4"):
        for i, v in enumerate(VARIANTS):
            for knobs in ([("", "", "")] if i else [("", "", ""), (0, 16, 1), (1, 16, 1), (2, 32, 2)]):
                r = dict(source="triton", target="gfx950", variant=v, kv_format=f, kernel="mla_decode_split_kernel",
                         waves_per_eu=knobs[0], matrix_instr_nonkdim=knobs[1], kpack=knobs[2], compiler="fixture",
                         vgpr=90 + 10 * i, agpr=0, vgpr_total=96 + 16 * i, sgpr=50, lds_bytes=32768 * (1 + i % 2),
                         scratch_bytes=0, vgpr_spill=0, sgpr_spill=0, occupancy_compiler=4, workgroup_size=256,
                         code_bytes=8000, waves_by_vgpr=4, waves_by_lds=4, waves_per_simd=4, limiter="vgpr", mfma_kinds="")
                for k in AMD_MIX_KEYS:
                    r[k], r["loop_" + k] = 5 + i, 2 + i
                tri.append(r)
    pd.DataFrame(tri).to_csv(st / "triton.csv", index=False)
    sm = root / "static" / "sm90"
    sm.mkdir(parents=True)
    rows = []
    for f in P.KV_FORMATS:
        for i, v in enumerate(VARIANTS):
            r = dict(source="triton", target="sm90", variant=v, kv_format=f, kernel="mla_decode_split_kernel",
                     compiler="fixture", registers=128 + 8 * i, smem_bytes=40000 + 1000 * i, local_bytes=0, spills=0,
                     warp_instr_per_token=60.0 + i, smem_bytes_per_token=6000.0 + 50 * i)  # the issue-9 ISA columns
            for k in NV_MIX_KEYS:
                r[f"ptx_{k}"], r[f"sass_{k}"] = i, 2 * i
            rows.append(r)
    pd.DataFrame(rows).to_csv(sm / "triton.csv", index=False)
    pub = root / "published"
    pub.mkdir(parents=True)
    # the two layouts of data/published/ (see its README)
    pd.DataFrame([dict(case=c.name, impl="fixture a8w8", q_dtype="fp8", kv_dtype="fp8", latency_us=10 + c.total_kv / 1e4,
                       approx=1, device="AMD Instinct MI355X", source="fixture") for c in P.LEADERBOARD]
                 ).to_csv(pub / "wide.csv", index=False)
    pd.DataFrame([dict(source="fixture", device="AMD Instinct MI355X", case="bs256-kv8192-q1-h16", config="HIP MXFP4 kernel",
                       metric="latency_us", value=240, unit="us"),
                  dict(source="fixture", device="AMD Instinct MI355X", case=None, config="b64", metric="vgpr", value=168,
                       unit="registers")]).to_csv(pub / "long.csv", index=False)
    anchors = root / "anchors"
    anchors.mkdir(parents=True)
    shutil.copy(ROOT / "data" / "anchors" / "h200-2026-11-30.jsonl", anchors / "h200-2026-11-30.jsonl")


# --- a simulated live session on an H100 (the committed campaign 30 rows stand in for what it measured) ---------
def _h100_live_session(tmp_path: Path, monkeypatch, session: str = "h100-sim") -> Path:
    """What `reproduce --mode live` on an H100 would hand notebooks 02 and 05: a session index (measured.run_live's
    `.live-<session>.json`) mapping every campaign command to a CSV, so nothing is run. The leaderboard's triton and
    flashinfer steps get campaign 30's H100 files, every other command a header-only CSV (no rows). The data tree is
    tmp_path/data: links to data/'s entries, so the index lands in tmp_path, not in data/measured."""
    from mla.analysis import measured

    data = tmp_path / "data"
    (data / "measured").mkdir(parents=True)
    for p in (ROOT / "data").iterdir():
        if p.name != "measured":
            (data / p.name).symlink_to(p)
    for p in (ROOT / "data" / "measured").iterdir():
        (data / "measured" / p.name).symlink_to(p)
    h100 = ROOT / "data" / "measured" / "h100"
    empty = tmp_path / "empty.csv"
    pd.DataFrame(columns=pd.read_csv(h100 / "campaign30-triton.csv", nrows=0).columns).to_csv(empty, index=False)
    index = {}
    for kind in ("leaderboard", "splits", "variants", "graph", "sweeps"):
        for cmd in measured.campaign(kind):
            backend = next((b for b in ("triton", "flashinfer") if f"--backend {b} " in cmd), None)
            index[cmd] = str(h100 / f"campaign30-{backend}.csv") if kind == "leaderboard" and backend else str(empty)
    measured._live_index(session, data, add=index)
    monkeypatch.setenv("MLA_DATA_DIR", str(data))
    monkeypatch.setenv("MLA_LIVE_SESSION", session)
    monkeypatch.setenv("MLA_FIGURES_DIR", str(tmp_path / "figures"))
    return data


def _svg_text(path: Path) -> str:
    """The text elements of an SVG (svg.fonttype none keeps text as text), entities unescaped."""
    import html

    return html.unescape(" ".join(re.findall(r"<text[^>]*>(.*?)</text>", path.read_text(), flags=re.S)))


def test_live_mode_names_the_measuring_device_h100(tmp_path, monkeypatch):
    """Live mode on an H100 labels, names and scales its figures by the H100: the roofline's datasheet line is the
    H100's 3.35 TB/s (not the H200's 4.8), the figure files carry h100, and the peers' H200 anchors stay out."""
    import nbformat

    _h100_live_session(tmp_path, monkeypatch)
    out = {}
    for nb in reproduce.notebook_paths():
        if nb.name[:2] in ("02", "05"):
            copy = tmp_path / nb.name
            shutil.copy(nb, copy)
            reproduce.run_notebook(copy, mode="live", timeout=600)  # raises CellExecutionError on any failing cell
            out[nb.name[:2]] = "\n".join(o.get("text", "") for c in nbformat.read(copy, as_version=4).cells
                                         if c.cell_type == "code" for o in c.get("outputs", []))
    figs = tmp_path / "figures"
    names = {p.name for p in figs.iterdir()}
    assert {"02_roofline_h100.svg", "02_pct_read_bw_h100.svg"} <= names, sorted(names)
    assert not names & {"02_roofline_h200.svg", "02_pct_read_bw_h200.svg"}, sorted(names)
    roof = _svg_text(figs / "02_roofline_h100.svg")
    assert "datasheet 3.35 TB/s" in roof and "4.8 TB/s" not in roof
    assert "anchor" not in roof  # no peer anchor points beside the H100's
    assert re.search(r"H100 read bandwidth: \d+ GB/s = \d+% of the 3350 GB/s datasheet", out["02"])  # the rows' own probe
    for nb in ("02", "05"):
        assert "peer anchors left out: measured on the H200, these rows on the H100" in out[nb]
    gm = _svg_text(figs / "05_geomean.svg")
    title = gm[gm.index("Geomean over"):][:200]
    assert "H100" in title and "H200" not in title, title
    assert "anchor:" not in gm and "H200" not in gm  # no anchor entries ranked beside the H100 rows
    for name in ("05_shootout_times", "05_cold_vs_kernel", "05_vs_flashinfer"):
        assert "H200" not in _svg_text(figs / f"{name}.svg"), name


def test_run_notebook_sets_the_one_mode_cell_and_saves_the_replay_default(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('MODE = "replay"')
    params.metadata["tags"] = ["parameters"]
    old = nbformat.v4.new_code_cell('MODE = "replay"  # injected by an older mla.reproduce')
    old.metadata["tags"] = ["injected-parameters"]
    nb.cells = [params, old, nbformat.v4.new_code_cell("print('mode is', MODE)")]
    path = tmp_path / "99_tiny.ipynb"
    nbformat.write(nb, path)
    reproduce.run_notebook(path, mode="live", timeout=60)
    out = nbformat.read(path, as_version=4)
    assert len(out.cells) == 2 and "mode is live" in out.cells[1].outputs[0]["text"]
    assert out.cells[0].source.startswith('MODE = "replay"') and 'made with MODE = "live"' in out.cells[0].source


def test_run_notebook_talks_to_its_kernel_over_private_ipc_sockets_not_tcp(tmp_path):
    """ipykernel warns, once per notebook, that TCP without CurveZMQ keys is plain text: the kernel listens on IPC
    sockets in a temporary folder instead, and the folder is gone when the notebook ends."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('MODE = "replay"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import json\nfrom ipykernel import get_connection_info\ninfo = json.loads(get_connection_info())\n"
        "print(info['transport'], info['ip'])")]
    path = tmp_path / "99_ipc.ipynb"
    nbformat.write(nb, path)
    reproduce.run_notebook(path, timeout=60)
    transport, ip = nbformat.read(path, as_version=4).cells[1].outputs[0]["text"].split()
    assert transport == "ipc" and Path(ip).name == "kernel" and Path(ip).parent.name.startswith("mla-kernel-")
    assert not Path(ip).parent.exists(), "the sockets' folder outlived the notebook"


def test_normalise_keeps_what_identical_runs_share_and_drops_what_they_do_not():
    """An unchanged re-run must leave a notebook byte-identical on any machine: the execution timestamps,
    papermill's and widgets' metadata and the Python patch version go; the cells and the minor version stay."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1")
    cell.metadata["execution"] = {"iopub.execute_input": "2026-12-06T00:00:00Z"}
    cell.metadata["tags"] = ["parameters"]
    nb.cells = [cell]
    nb.metadata.update(papermill={"duration": 1.0}, widgets={}, language_info={"name": "python", "version": "3.11.7"})
    reproduce.normalise(nb)
    assert "execution" not in nb.cells[0].metadata and nb.cells[0].metadata["tags"] == ["parameters"]
    assert "papermill" not in nb.metadata and "widgets" not in nb.metadata
    assert nb.metadata["language_info"] == {"name": "python", "version": "3.11"}
    other = nbformat.v4.new_notebook()
    other.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    reproduce.normalise(other)
    assert other.metadata["language_info"]["version"] == nb.metadata["language_info"]["version"]


def test_only_takes_comma_separated_name_parts_in_order():
    """`mla reproduce --only 05,03` runs notebooks 03 and 05, in the repo's order; an empty filter is refused."""
    names = [p.name[:2] for p in reproduce.notebook_paths("05, 03")]
    assert names == ["03", "05"]
    assert [p.name[:2] for p in reproduce.notebook_paths("roofline")] == ["02"]
    assert reproduce.notebook_paths("99") == []
    with pytest.raises(ValueError, match="names no notebook"):
        reproduce.notebook_paths(" , ")
