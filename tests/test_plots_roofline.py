"""The notebooks' engine code: roofline floors, the plotting helper, the split-K illustration, the
accuracy study and the loaders that turn data/ rows into tables."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import torch

import mla
from mla import problem as P
from mla.analysis import accuracy, measured, roofline, teaching


# --- roofline ------------------------------------------------------------------------------------
def test_device_specs_have_sources_and_ridges():
    h, m = roofline.get_device("h200"), roofline.get_device("mi355x")
    assert (h.hbm_gbs, h.memory_gb, h.compute_units, h.matrix_tflops["bf16"]) == (4800, 141, 132, 989)
    assert (m.hbm_gbs, m.memory_gb, m.compute_units) == (8000, 288, 256)
    assert m.matrix_tflops["mxfp4"] == pytest.approx(2 * m.matrix_tflops["fp8"], rel=1e-3)
    assert m.matrix_tflops["fp8"] == pytest.approx(2 * m.matrix_tflops["bf16"], rel=1e-3)
    assert h.ridge("bf16") == pytest.approx(989e12 / 4.8e12)
    for d in (h, m):
        assert d.sources and all(len(s) > 20 for s in d.sources)
    assert "mxfp4" not in h.matrix_tflops  # no FP4 tensor cores on Hopper
    specs = roofline.specs_frame()
    assert set(specs.device) == {"h200", "mi355x"} and specs.sources.str.len().min() > 40


def test_h100_spec_is_the_sxm5_datasheet_and_shows_only_when_named():
    h = roofline.get_device("h100")
    assert (h.hbm_gbs, h.memory_gb, h.compute_units, h.unit_name, h.mma_min_m) == (3350, 80, 132, "SM", 64)
    assert h.matrix_tflops == {"bf16": 989.4, "fp8": 1978.9}  # dense; no FP4 tensor cores on Hopper
    assert h.sources and all(len(s) > 20 for s in h.sources)
    assert h.ridge("bf16") == pytest.approx(989.4e12 / 3.35e12)
    # the default table stays the target and the manifest's device (notebook 00 prints it); h100 by name
    assert list(roofline.specs_frame(["mi355x", "h100"]).device) == ["mi355x", "h100"]
    with pytest.raises(ValueError, match="unknown device 'b200'"):
        roofline.specs_frame(["b200"])


def test_the_sm90_issue_model_names_the_hopper_entries_only():
    """Notebook 02 draws the sm_90 static ceilings only for these devices' rows (not a live MI355X run's)."""
    assert roofline.SM90_DEVICES == {"h100", "h200"}
    for slug in roofline.SM90_DEVICES:
        d = roofline.get_device(slug)
        assert (d.unit_name, d.compute_units) == ("SM", roofline.SM90_ISSUE.sms)
    assert "mi355x" not in roofline.SM90_DEVICES and roofline.get_device("mi355x").unit_name == "CU"


def test_probe_spec_stands_in_for_a_device_without_a_datasheet():
    d = roofline.probe_spec("b200", 6000.0)
    fl = roofline.floors(P.LEADERBOARD, d)
    c = P.LEADERBOARD[-1]
    r = fl[(fl.case == c.name) & (fl.kv_format == "fp8")].iloc[0]
    assert r.mem_floor_us == pytest.approx(P.io_bytes(c, "fp8") / 6000e9 * 1e6)
    assert r.floor_us == r.mem_floor_us and r.bound == "memory"  # no matrix peak: the memory floor alone
    assert fl.compute_floor_us.isna().all() and fl.ridge.isna().all()
    assert roofline.dot_format("mxfp4", "bf16", d) == "bf16"
    with pytest.raises(ValueError, match="positive read bandwidth for 'b200'"):
        roofline.probe_spec("b200", None)


def test_rows_device_is_the_live_rows_one_device_and_h200_in_replay():
    rows = pd.DataFrame({"device_slug": ["h100", "h100"], "case": ["a", "b"]})
    assert measured.rows_device(rows, "live") == ("h100", "H100")
    assert measured.rows_device(rows, "replay") == ("h200", "H200")  # replay plots the manifest's H200 runs
    assert measured.rows_device(None, "replay") == ("h200", "H200")
    with pytest.raises(ValueError, match=r"2 devices \['h100', 'h200'\]"):
        measured.rows_device(rows.assign(device_slug=["h200", "h100"]), "live")
    with pytest.raises(ValueError, match="no device_slug column"):
        measured.rows_device(rows.drop(columns="device_slug"), "live")
    with pytest.raises(ValueError, match="unknown mode 'measure'"):
        measured.rows_device(rows, "measure")


def test_rows_origin_names_the_manifest_in_replay_and_this_execution_in_live():
    """Figure notes say where their rows came from: a live figure must not claim manifest runs."""
    assert measured.rows_origin("replay") == "manifest runs only"
    assert "manifest" not in measured.rows_origin("live") and "live" in measured.rows_origin("live")
    with pytest.raises(ValueError, match="unknown mode 'measure'"):
        measured.rows_origin("measure")


def test_read_bandwidth_is_the_live_rows_own_run_not_the_manifests():
    """Live rows hold none of the manifest's runs: their own triton leaderboard run's probe, not the H200's."""
    from mla.analysis import manifest

    man = manifest.load()
    rid = man.bandwidth_run("h200")
    live = pd.DataFrame({"run_id": ["live-t", "live-t", "live-f"], "purpose": ["leaderboard"] * 3,
                         "backend": ["triton", "triton", "flashinfer"], "read_gbs": [3100.0, 3140.0, 2900.0]})
    assert manifest.read_bandwidth(live, man, device="h100") == (3120.0, "live-t")
    assert manifest.read_bandwidth(live, man, device="h200") == (3120.0, "live-t")
    listed = pd.concat([live, pd.DataFrame({"run_id": [rid], "purpose": ["leaderboard"], "backend": ["triton"],
                                            "read_gbs": [4300.0]})], ignore_index=True)
    assert manifest.read_bandwidth(listed, man) == (4300.0, rid)  # replay: the manifest's bandwidth run


def test_dot_format_widens_to_what_the_device_has():
    h, m = roofline.get_device("h200"), roofline.get_device("mi355x")
    assert roofline.dot_format("mxfp4", "bf16", h) == "bf16"
    assert roofline.dot_format("mxfp4", "mxfp4", h) == "fp8"
    assert roofline.dot_format("mxfp4", "mxfp4", m) == "mxfp4"
    assert roofline.dot_format("fp8", "mxfp4", m) == "fp8"
    with pytest.raises(ValueError):
        roofline.dot_format("int4", "bf16", h)


def test_floors_match_bytes_over_bandwidth_and_flops_over_rate():
    fl = roofline.floors(P.LEADERBOARD, "h200", bandwidth_gbs=4000.0)
    assert len(fl) == len(P.LEADERBOARD) * 3
    r = fl[(fl.case == "bs256-kv8192-q1-h16") & (fl.kv_format == "mxfp4")].iloc[0]
    c = P.LEADERBOARD[-1]
    assert r.io_bytes == P.io_bytes(c, "mxfp4") and r.flops == P.flops(c)
    assert r.mem_floor_us == pytest.approx(P.io_bytes(c, "mxfp4") / 4000e9 * 1e6)
    assert r.compute_floor_us == pytest.approx(P.flops(c) / 989e12 * 1e6)
    assert r.compute_floor_m_us == pytest.approx(4 * r.compute_floor_us)  # 16 of 64 wgmma rows used
    assert r.bandwidth_source == "measured read"
    assert (fl.bound == "memory").all()  # decode is memory-bound on every leaderboard shape
    assert (fl.intensity < fl.ridge).all()
    mi = roofline.floors(P.LEADERBOARD, "mi355x")
    assert (mi.bandwidth_source == "datasheet").all() and (mi.bandwidth_gbs == 8000).all()


def test_measured_read_gbs_is_the_median_of_rows():
    assert roofline.measured_read_gbs(None) is None
    assert roofline.measured_read_gbs(pd.DataFrame({"read_gbs": [4000.0, 4300.0, 4400.0]})) == 4300.0


# --- plots ---------------------------------------------------------------------------------------
def test_save_writes_png_and_svg_with_footer(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from mla import plots

    monkeypatch.setenv("MLA_FIGURES_DIR", str(tmp_path))
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], color=plots.color("triton"))
    paths = plots.save(fig, "09_test_figure_bs4-kv1024-q1-h16", sources=["data/measured/h200/x.csv"],
                       command="python -m mla bench --cases leaderboard")
    plt.close(fig)
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.exists() for p in paths)
    svg = paths[1].read_text()
    assert "data/measured/h200/x.csv" in svg and "python -m mla bench --cases leaderboard" in svg
    with pytest.raises(ValueError):
        plots.save(plt.figure(), "Bad Name", sources="x", command="y")
    p = plots.placeholder("09_empty", "no rows yet", "python -m mla bench")
    assert p[0].exists() and "NO DATA YET" in p[1].read_text()


def test_variant_panels_keep_the_suptitle_rank_the_fastest_and_draw_the_reference():
    """plots.variant_panels (notebook 04's variant figures): the figure title is the caller's (not the last panel's),
    each panel holds the ``top`` fastest variants of its shape, fastest first, a (case, format) reference adds a dashed
    line at its time and names it in the panel title, and a shape a format did not run is an empty panel."""
    import matplotlib.pyplot as plt

    from mla import plots

    fp8 = pd.DataFrame({"v1": [30.0, 300.0], "v2": [20.0, 310.0], "v3": [25.0, None]}, index=["a", "b"])
    bf16 = pd.DataFrame({"v1": [50.0], "v2": [40.0]}, index=["a"])
    fig = plots.variant_panels({"bf16": bf16, "fp8": fp8}, ["a", "b"], title="my title", top=2,
                               reference={("b", "fp8"): (305.0, "default call")})
    try:
        assert fig._suptitle.get_text() == "my title"
        ax = fig.axes
        assert [t.get_text() for t in ax[1].get_yticklabels()] == ["v2", "v3"]  # a: the 2 fastest of 3
        assert ax[1].get_title() == "a\nfp8 KV: 2 fastest of 3"
        assert "dashed: default call, 305 us" in ax[3].get_title() and len(ax[3].get_lines()) == 1
        assert ax[3].get_lines()[0].get_xdata()[0] == 305.0
        assert ax[2].get_title() == "b\nbf16 KV: all 0" and not ax[2].patches  # bf16 did not run shape b
        assert not ax[1].get_lines()  # no reference for (a, fp8)
    finally:
        plt.close(fig)


def test_colors_are_fixed_per_backend_and_format():
    from mla import plots

    assert plots.color("triton") == plots.BACKEND_COLORS["triton"]
    assert plots.color("mxfp4") == plots.FORMAT_COLORS["mxfp4"]
    assert len(set(plots.FORMAT_COLORS.values())) == 3
    assert plots.color("nope") == "#777777"
    assert plots.short("x" * 100, 10).endswith("\u2026") and len(plots.short("x" * 100, 10)) == 10


# --- teaching ------------------------------------------------------------------------------------
@pytest.mark.parametrize("splits", [1, 3, 4, 7])
def test_split_k_merge_is_exact(splits):
    data = mla.generate_input(2, 1, 203, seed=5)
    d = teaching.split_k_demo(data, splits)
    assert d["max_abs_diff"] < 1e-12
    assert torch.allclose(d["weights"].sum(0), torch.ones(16, dtype=d["weights"].dtype))
    b = d["bounds"][0]
    assert b[0][0] == 0 and b[-1][1] == 203 and all(x[1] == y[0] for x, y in zip(b, b[1:]))


def test_split_k_demo_ragged_and_rejects_multi_token():
    data = mla.generate_input(3, 1, 100, seed=1, kv_lens=(5, 100, 37))
    assert teaching.split_k_demo(data, 4)["max_abs_diff"] < 1e-12
    with pytest.raises(ValueError):
        teaching.split_k_demo(mla.generate_input(2, 2, 64, seed=0), 2)
    rows = teaching.shape_walkthrough(mla.generate_input(2, 1, 64, seed=0))
    assert rows[0][1] == (2, 16, 576) and rows[1][1] == (128, 1, 576)


# --- accuracy ------------------------------------------------------------------------------------
def test_even_rule_path_equals_mla_reference():
    data = mla.generate_input(2, 1, 96, seed=3)
    for kvf in P.KV_FORMATS:
        for qf in P.Q_FORMATS:
            out = accuracy._quantized_output(data, kvf, qf, "even", {})
            ref = mla.reference(data, kv_format=kvf, q_format=qf).bfloat16()
            assert torch.equal(out, ref), (kvf, qf)


def test_scale_rules_differ_where_the_spec_says():
    x = torch.zeros(1, 32)
    x[0, 0], x[0, 1] = 7.0, 0.375
    even = accuracy.fake_quant_mxfp4(x, "even")
    floor = accuracy.fake_quant_mxfp4(x, "floor")
    assert floor[0, 0] == 6.0  # floor: e = floor(log2 7) - 2 = 0, 7 saturates at 6
    assert even[0, 0] == 8.0  # even: amax rounds up to 8, e = 1, 3.5 rounds (to even) to 4 -> 8
    assert torch.equal(accuracy.fake_quant_mxfp4(x, "even"), mla.quant.fake_quant(x, "mxfp4"))
    assert floor[0, 1] == 0.5 and even[0, 1] == 0.0  # the coarser even scale loses the small one
    g = torch.randn(256, 576, generator=torch.Generator().manual_seed(0))
    assert accuracy.clip_fraction(g, "floor") > accuracy.clip_fraction(g, "even")
    with pytest.raises(ValueError):
        accuracy.fake_quant_mxfp4(x, "ceil")


def test_study_rows_and_batch_reduction():
    c = P.Case(8, 256, seed=1)
    r = accuracy.reduced_case(c, 512)
    assert (r.batch_size, r.kv_seq_len, r.seed) == (2, 256, 1)
    assert accuracy.reduced_case(c, None) is c
    df = accuracy.study([c], max_tokens=512)
    assert len(df) == 4 + 5 * 2  # 4 combos without MXFP4, 5 with it x 2 rules
    assert (df.bs_used == 2).all() and df.reduced.all() and (df.bs == 8).all()
    assert df.mismatch.max() <= 0.05 and df.passes.all()
    bb = df[(df.kv_format == "bf16") & (df.q_format == "bf16")].iloc[0]
    assert bb.scale_rule == "none" and bb.rel_l2 < 5e-3
    assert {"torch", "git_commit", "source_hash", "timestamp_utc", "device"} <= set(df.columns)
    s = accuracy.error_samples(c, "fp8", max_tokens=512)
    assert s["diff"].shape == s["ratio"].shape == (2 * 16 * 512,)


# --- loaders ---------------------------------------------------------------------------------------
def test_published_times_reads_both_layouts(tmp_path):
    pd.DataFrame([dict(case="bs4-kv1024-q1-h16", impl="aiter a8w8", kv_dtype="fp8", latency_us=118, approx=1,
                       device="AMD Instinct MI355X", source="README")]).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame([dict(source="seed", device="AMD Instinct MI355X", case="bs256-kv8192-q1-h16",
                       config="HIP MXFP4 kernel", metric="latency_us", value=244, unit="us"),
                  dict(source="seed", device="AMD Instinct MI355X", case=None, config="b64", metric="vgpr",
                       value=168, unit="registers")]).to_csv(tmp_path / "b.csv", index=False)
    pub = measured.published_times(measured.load_csvs(tmp_path))
    assert len(pub) == 2
    a = pub[pub.label == "aiter a8w8"].iloc[0]
    assert (a.kv_format, a.time_us, bool(a.approx)) == ("fp8", 118, True)
    b = pub[pub.label == "HIP MXFP4 kernel"].iloc[0]
    assert (b.kv_format, b.time_us) == ("mxfp4", 244)
    assert measured.published_times(None) is None


def test_loaders_on_a_synthetic_campaign(tmp_path):
    from test_notebooks import make_fixture_tree

    make_fixture_tree(tmp_path)
    df = measured.load_measured(files=sorted((tmp_path / "measured" / "h200").glob("*.csv")))
    assert "cfg_num_splits" in df and "source_csv" in df
    assert not df.source_csv.str.contains("probe-log").any()  # a non-schema CSV is skipped
    assert (df.status != "ok").sum() == 1
    t = measured.split_sweep(df, "fp8", "cold")
    # the sweep ran kernel-only: the table falls back to kernel times and says so
    assert t.attrs["mode"] == "kernel" and t.attrs["variant"] and t.attrs["commands"]
    # the sweep's values, plus the heuristic's own picks (5, 9) from the default-config (leaderboard) rows
    assert {1, 2, 4, 8, 16, 32, 64} <= set(t.columns) and list(t.columns) == sorted(t.columns) and len(t) == 8
    assert t.attrs["heuristic"] and set(t.attrs["heuristic"].values()) <= set(t.columns)
    hb = measured.heuristic_vs_best(df)
    assert len(hb) == 24 and (hb.heuristic_over_best.dropna() >= 1 - 1e-9).all() and set(hb["mode"]) == {"kernel"}
    v = measured.variant_sweep(df, "mxfp4", "kernel")
    assert v is not None and v.shape[0] == 8 and v.shape[1] >= 2
    long = measured.shootout(df, "cold")
    assert {"torch bf16", "flashinfer fp8", "triton mxfp4 (best config)", "triton mxfp4 (default)"} <= set(long.entry)
    ho = measured.host_overhead(df, measured.load_anchors()[0])
    assert ho is not None and (ho.host_us > 0).all() and ho.host_floor_us.notna().all()
    # footers name the rows' recorded commands, shortened
    cmds = measured.commands(long)
    assert cmds and all(c.startswith("python -m mla bench") for c in cmds)
    gm = measured.geomeans(long)
    assert gm.complete.all() and (gm.cases == 8).all()
    assert measured.load_measured(files=[]) is None
    assert measured.split_sweep(None, "fp8") is None and measured.shootout(None) is None


def test_occupancy_table_and_anchors():
    occ = measured.occupancy_table(P.LEADERBOARD)
    big = occ[occ.case == "bs256-kv8192-q1-h16"]
    assert (big.heuristic_splits == 1).all()  # 256 programs already fill 132 SMs
    small = occ[occ.case == "bs4-kv8192-q1-h16"]
    assert (small.heuristic_splits > 8).all() and (small.ctas == 4 * small.heuristic_splits).all()
    a, bw = measured.load_anchors()
    if a is not None:  # data/anchors/ is committed by the lead
        assert bw > 3000 and set(a.kv_format) <= {"bf16", "fp8"} and a.case.nunique() == 8
        assert math.isfinite(a.cold_us.min())


def test_run_live_writes_a_fresh_schema_csv(tmp_path):
    cmd = ("python -m mla bench --cases bs2-kv64-q1-h16 --backend torch --kv-format bf16 --out ignored.csv "
           "--device cpu --min-runs 2 --max-runs 2 --bandwidth-gbs 1,1 --no-progress")
    files = measured.run_live(cmd, data_dir=tmp_path)
    assert len(files) == 1 and files[0].parent == tmp_path / "measured" / "cpu" and files[0].exists()
    df = measured.load_measured(files=files)
    assert len(df) == 1 and df.status.iloc[0] == "ok" and df.cpu_median_us.iloc[0] > 0
    with pytest.raises(ValueError):
        measured.run_live("rm -rf /")


def test_campaign_commands_come_from_the_scripts():
    """campaign() reads scripts/h200_campaign.sh and scripts/campaign_sweeps.txt: no private copies."""
    cmds = measured.campaign_commands()
    lb = measured.campaign("leaderboard")
    assert lb and all(c.startswith("python -m mla bench") and "--cases leaderboard" in c for c in lb)
    assert {b for c in lb for b in ("torch", "flashinfer", "triton") if f"--backend {b}" in c} == {"torch", "flashinfer", "triton"}
    lines = [ln for ln in (measured.ROOT / "scripts" / "campaign_sweeps.txt").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(cmds["sweeps"]) >= len(lines) and all(any(ln.strip() in c for c in cmds["sweeps"]) for ln in lines)
    assert all("--sweep num_splits=" in c for c in measured.campaign("splits"))
    from mla.kernels.triton.variants import VARIANTS  # every variant a sweep line names exists (a typo fails here, not on the GPU)
    named = [v for c in measured.campaign("variants") for v in re.search(r"--sweep variant=(\S+)", c).group(1).split(",")]
    assert named and not [v for v in named if v not in VARIANTS]
    assert measured.campaign("static_sm90") == ["python -m mla isa --target sm90 --write"]
    with pytest.raises(ValueError):
        measured.campaign("nope")


def test_short_command_drops_noise_and_keeps_the_effective_flags():
    c = ("python3 -m mla bench --mode cold,warm,kernel --max-seconds 0.4 --no-progress --out /root/out/sweeps.csv --append "
         "--cases a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,a12,a13,a14,a15,a16,a17,a18 --mode kernel --sweep num_splits=1,2")
    s = measured.short_command(c)
    assert "--out" not in s and "--append" not in s and "--no-progress" not in s
    assert s.count("--mode") == 1 and "--mode kernel" in s and "--sweep num_splits=1,2" in s and "(+16)" in s


# --- the why: static ceilings, teaching pieces, live session reuse ------------------------------------
def test_static_ceilings_turn_per_token_counts_into_floors_and_degrade_without_them():
    st = pd.DataFrame([dict(variant="vX", kv_format="fp8", kernel="split", sass_wgmma=0, warp_instr_per_token=108.0,
                            smem_bytes_per_token=6600.0, loop_alu_pipe_instructions=624, num_warps=4, block_n=64)])
    c = P.case_from_name("bs256-kv8192-q1-h16")
    ceil = roofline.static_ceilings(st, {"fp8": "vX"}, [c], read_gbs=4300)
    r = ceil.iloc[0]
    m = roofline.SM90_ISSUE
    assert r.issue_floor_us == pytest.approx(c.total_kv * 108 / (m.sms * m.clock_ghz * 1e9 * 4) * 1e6)
    assert r.smem_floor_us == pytest.approx(c.total_kv * 6600 / (m.sms * m.clock_ghz * 1e9 * 128) * 1e6)
    assert r.mem_floor_us == pytest.approx(P.io_bytes(c, "fp8") / 4300e3)
    # the ALU pipe: 624 per warp per 64-token trip x 4 warps = 39 per token, 2 per SM per clock
    assert r.alu_instr_per_token == 39.0
    assert r.alu_floor_us == pytest.approx(c.total_kv * 39 / (m.sms * m.clock_ghz * 1e9 * 2) * 1e6)
    assert r.static_floor_us == max(r.mem_floor_us, r.issue_floor_us, r.smem_floor_us, r.alu_floor_us)
    bare = roofline.static_ceilings(st.drop(columns=["warp_instr_per_token", "smem_bytes_per_token",
                                                     "loop_alu_pipe_instructions"]), {"fp8": "vX"}, [c])
    assert math.isnan(bare.issue_floor_us.iloc[0]) and math.isnan(bare.alu_floor_us.iloc[0])
    assert bare.static_floor_us.iloc[0] == bare.mem_floor_us.iloc[0]
    assert roofline.static_ceilings(None, {"fp8": "vX"}) is None


def test_static_ceilings_prefer_the_named_compilers_table():
    """data/static/sm90 holds one table per triton version: the measured rows' triton wins where it has the
    variant, the first table otherwise."""
    row = dict(variant="vX", kv_format="fp8", kernel="split", smem_bytes_per_token=6600.0, loop_alu_pipe_instructions=624,
               num_warps=4, block_n=64)
    st = pd.DataFrame([dict(row, compiler="triton 3.6.0", warp_instr_per_token=42.0),
                       dict(row, compiler="triton 3.9.0", warp_instr_per_token=40.0)])
    c = P.case_from_name("bs256-kv8192-q1-h16")
    pick = lambda comp: roofline.static_ceilings(st, {"fp8": "vX"}, [c], compiler=comp).warp_instr_per_token.iloc[0]  # noqa: E731
    assert pick("triton 3.9.0") == 40.0 and pick("triton 3.6.0") == 42.0
    assert pick(None) == 42.0 and pick("triton 3.1.0") == 42.0  # (no such table: the first one)


def test_load_static_takes_one_compilers_table(tmp_path, monkeypatch):
    """data/static/sm90 holds the same kernels compiled by two tritons: load_static returns one of them (the
    device image's by default), never both (04's ablation chain took a row of either, 02's ceilings too)."""
    from mla.analysis import measured
    sm = tmp_path / "static" / "sm90"
    sm.mkdir(parents=True)
    row = dict(variant="vX", kv_format="fp8", kernel="split")
    pd.DataFrame([dict(row, compiler="triton 3.9.0", registers=226)]).to_csv(sm / "triton.csv", index=False)
    pd.DataFrame([dict(row, compiler="triton 3.6.0", registers=233)]).to_csv(sm / "triton-3.6.0.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    monkeypatch.setitem(measured.DEVICE_TRITON, "sm90", "3.6.0")
    assert measured.load_static("sm90").registers.tolist() == [233]
    assert measured.load_static("sm90", triton="newest").registers.tolist() == [226]
    assert measured.load_static("sm90", triton="3.6.0").compiler.tolist() == ["triton 3.6.0"]
    with pytest.raises(ValueError, match="triton 3.1"):
        measured.load_static("sm90", triton="3.1")
    # the real folder: one row per kernel in each table, and the device table covers today's variants
    monkeypatch.undo()
    real = measured.load_static("sm90")
    assert not real.duplicated(["variant", "kv_format", "kernel"]).any()
    assert set(measured.load_static("sm90", triton="newest").variant) <= set(real.variant)


def test_absorption_is_exact_and_mxfp4_walkthrough_matches_the_encoder():
    ab = teaching.absorption_check()
    assert ab["max_abs_diff"] < 1e-10 and ab["q_width"] == 576 and ab["v_width"] == 512
    block = torch.linspace(-3.0, 7.2, 32)  # amax 7.2: mantissa 1.8 >= 1.75 -> the next scale up
    tab, info = teaching.mxfp4_block_walkthrough(block)
    assert info["rounds_up"] and info["exponent"] == info["floor_rule_exponent"] + 1 == 1
    assert info["bytes_mxfp4"] == 17 and len(tab) == 32
    from mla import quant
    packed, scales = quant.quantize_mxfp4(block[None])
    assert torch.equal(torch.tensor(tab.decoded.values), quant.dequantize_mxfp4(packed, scales)[0])
    assert tab.decoded.abs().max() == 8.0  # 7.2 rounds to 4 x 2**1 steps: 8, not clipped to 6 x 2**0
    with pytest.raises(ValueError):
        teaching.mxfp4_block_walkthrough(torch.ones(31))


def test_skewed_split_k_demo_is_exact_and_skewed():
    d = teaching.split_k_demo(teaching.skewed_input(kv_len=400, focus=(300, 310)), 4)
    w = d["weights"].mean(1)
    assert d["max_abs_diff"] < 1e-10 and w[3] > 2 * w[:3].max()


def test_explore_counts_partials_and_ctas():
    e = teaching.explore("bs4-kv8192-q1-h16", 64, "mxfp4").iloc[0]
    assert e.ctas == 256 and e.partial_MB == pytest.approx(2 * 4 * 16 * 64 * 513 * 4 / 1e6)
    assert teaching.explore("bs4-kv8192-q1-h16", 1, "bf16").iloc[0].partial_MB == 0
    with pytest.raises(ValueError):
        teaching.explore("bs4-kv8192-q1-h16", 65)
    with pytest.raises(ValueError, match="rule"):
        teaching.explore("bs4-kv8192-q1-h16", None, rule="h200")


def test_explore_takes_either_default_rules_count():
    """num_splits=None: the portable heuristic's count (64 at bs4-kv8192) or the sm90 default call's (32: one
    program an SM), each the backend's own rule."""
    pytest.importorskip("triton")
    port = teaching.explore("bs4-kv8192-q1-h16", None, "mxfp4").iloc[0]
    sm90 = teaching.explore("bs4-kv8192-q1-h16", None, "mxfp4", rule="sm90").iloc[0]
    assert port.num_splits == measured.heuristic_splits("bs4-kv8192-q1-h16", None, "mxfp4", 132)
    assert sm90.num_splits == measured.sm90_default_call("bs4-kv8192-q1-h16", "mxfp4")["splits"]
    assert (port.num_splits, sm90.num_splits) == (64, 32) and sm90.partial_MB == pytest.approx(port.partial_MB / 2)


def test_littles_law_reaches_the_bandwidth_only_for_large_calls():
    t, pct = teaching.littles_law([1e6, 1e10], 4000, 1.0, 5.0)
    assert pct[0] < 5 and pct[1] > 99 and t[0] == pytest.approx(6.25)


def test_run_live_keeps_a_line_this_device_cannot_run_and_raises_on_a_real_failure(tmp_path, monkeypatch):
    """A sweep line of Gluon (sm90-only) variants elsewhere (here: the interpreter) writes only 'unsupported' rows and
    bench exits 1; live mode keeps the file and goes on. A command that fails outright still raises."""
    import subprocess
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    cmd = ("python -m mla bench --cases bs2-kv64-q1-h16 --backend triton --kv-format fp8 --device cpu --min-runs 2 "
           "--max-runs 2 --bandwidth-gbs 1,1 --no-progress --sweep variant=v160_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_ur_sf_qf_c1")
    (f,) = measured.run_live(cmd, data_dir=tmp_path)
    st = pd.read_csv(f)["status"]
    assert list(st) == ["unsupported"]
    assert measured.ok_rows(measured.load_measured(files=[f]), leaderboard_only=False) is None  # nothing to plot
    with pytest.raises(subprocess.CalledProcessError):  # an unknown case: bench's request error (exit 2), no file
        measured.run_live("python -m mla bench --cases no-such-case --backend torch --device cpu", data_dir=tmp_path)


def test_live_session_runs_each_command_once(tmp_path, monkeypatch):
    monkeypatch.setenv("MLA_LIVE_SESSION", "t1")
    cmd = ("python -m mla bench --cases bs2-kv64-q1-h16 --backend torch --kv-format bf16 --device cpu --min-runs 2 "
           "--max-runs 2 --bandwidth-gbs 1,1 --no-progress")
    a = measured.run_live(cmd, data_dir=tmp_path)
    b = measured.run_live([cmd], data_dir=tmp_path)
    assert a == b and len(list((tmp_path / "measured" / "cpu").glob("*.csv"))) == 1


def test_heatmap_and_hbars_helpers(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    from mla import plots

    t = pd.DataFrame({1: [10.0, 40.0], 2: [5.0, float("nan")]}, index=["a", "b"])
    fig, ax = plt.subplots()
    im = plots.heatmap(ax, t, frames={"a": 2}, underlined={("b", 1)})
    assert im.norm.vmin == 1.0 and "*" in "".join(x.get_text() for x in ax.texts)
    s = plots.hbars(ax, pd.Series({"x": 3.0, "y": 1.0, "z": 2.0}), top=2)
    assert list(s.index) == ["y", "z"]
    assert plots.shape_label("bs256-kv8192-q1-h16") == "bs256/8k"
    plt.close(fig)


def test_static_ceiling_lines_draw_each_formats_tightest_limit():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mla import plots

    ceil = pd.DataFrame([dict(kv_format="fp8", variant="vA", flops=1e12, issue_floor_us=80.0, smem_floor_us=79.0,
                              alu_floor_us=54.0),
                         dict(kv_format="mxfp4", variant="vB", flops=1e12, issue_floor_us=147.0, smem_floor_us=116.0,
                              alu_floor_us=156.0),
                         dict(kv_format="bf16", variant="vC", flops=1e12, issue_floor_us=float("nan"),
                              smem_floor_us=float("nan"), alu_floor_us=float("nan"))])
    fig, ax = plt.subplots()
    missing = plots.static_ceiling_lines(ax, ceil)
    labels = [t.get_text() for t in ax.texts]
    assert missing == ["bf16"] and len(ax.collections) == 2
    assert labels == ["fp8 issue ceiling (vA)", "mxfp4 ALU-pipe ceiling (vB)"]
    plt.close(fig)


# --- the sm90 default call's split counts, generation 3's H200 split sweeps, the static tables' commands (03, 04) --
def test_sm90_default_call_takes_the_backends_own_rules():
    """measured.sm90_default_call evaluates launch.py's rules in the plan's order (notebook 03, section 1): short
    splits one program an SM, the warp-specialized / TMA-tile kernels at ws_num_splits' count, bf16 the portable
    rule; each count is the one launch.default_kernel_choice returns."""
    pytest.importorskip("triton")
    from mla.kernels.triton.launch import choose_num_splits, default_kernel_choice
    from mla.kernels.triton.variants import DEFAULT_VARIANT, HOPPER_DEFAULT, HOPPER_TMA_DEFAULT, HOPPER_WS_DEFAULT, VARIANTS

    call = measured.sm90_default_call
    assert call("bs4-kv8192-q1-h16", "fp8") == dict(variant=HOPPER_DEFAULT["fp8"], two_per_sm=64, splits=32, partials=32,
                                                    split_rule="one_per_sm_splits", kernel_rule="HOPPER_DEFAULT")
    assert call("bs4-kv8192-q1-h16", "mxfp4")["splits"] == 32
    assert [call("bs32-kv1024-q1-h16", f)["splits"] for f in ("fp8", "mxfp4")] == [4, 4]
    fp8, mx = call("bs32-kv8192-q1-h16", "fp8"), call("bs32-kv8192-q1-h16", "mxfp4")
    v168 = next(name for tiles, _, name in HOPPER_TMA_DEFAULT["fp8"] if tiles == 32)
    assert (fp8["variant"], fp8["splits"], fp8["split_rule"], fp8["kernel_rule"]) == (v168, 4, "ws_num_splits", "HOPPER_TMA_DEFAULT")
    assert (mx["variant"], mx["splits"], mx["kernel_rule"]) == (HOPPER_WS_DEFAULT["mxfp4"], 4, "HOPPER_WS_DEFAULT")
    # partials: one a program with the pair merge (v170), two without
    assert mx["partials"] == mx["splits"] * (1 if VARIANTS[mx["variant"]].gluon_ws_pair_merge else 2)
    bf = call("bs4-kv8192-q1-h16", "bf16")
    assert (bf["variant"], bf["splits"], bf["kernel_rule"]) == (DEFAULT_VARIANT["bf16"], 64, "DEFAULT_VARIANT")
    for case in P.LEADERBOARD:  # the same numbers as the backend's function, shape by shape
        for f in ("fp8", "mxfp4"):
            two = choose_num_splits(case.batch_size, case.kv_seq_len, 1, 132, 64, 32)
            name, one_wg, swap = default_kernel_choice(f, [case.kv_seq_len] * case.batch_size, two, True, 1, 132, 64)
            d = call(case.name, f)
            assert (d["two_per_sm"], d["splits"], d["variant"]) == (two, swap if name else one_wg, name or HOPPER_DEFAULT[f])
    t = measured.sm90_default_table(P.LEADERBOARD, kv_formats=("fp8",))
    assert len(t) == len(P.LEADERBOARD) and (t.portable_variant == DEFAULT_VARIANT["fp8"]).all()
    assert t.set_index("case").loc["bs4-kv8192-q1-h16", ["portable_splits", "sm90_splits"]].tolist() == [64, 32]


# Cases that reach each branch of the default call at a small SM count (cheap CPU inputs): short splits one program an
# SM, one program an element at 32 / 128 tiles (the TMA-tile fp8 kernel in one wave, the warp-specialized MXFP4 kernel),
# and more programs than SMs at 128 tiles (fp8's two-wave TMA kernel)
PLAN_CASES = [("bs2-kv1024-q1-h16", 8), ("bs4-kv2048-q1-h16", 4), ("bs4-kv8192-q1-h16", 4), ("bs9-kv8192-q1-h16", 4),
              ("bs3-kv4096-q1-h16", 132)]


@pytest.mark.parametrize("case_name, sms", PLAN_CASES)
def test_sm90_default_call_is_what_the_plan_builds(case_name, sms, monkeypatch):
    """The offline mirror (notebooks 02 / 03 read it) against the real TritonDecodePlan, built on CPU tensors with the
    machine taken for an sm90 GPU with Gluon and `sms` SMs: the same kernel and the same partial count, per format."""
    pytest.importorskip("triton")
    from mla.kernels.triton import launch

    monkeypatch.setattr(launch, "interpreting", lambda: False)
    monkeypatch.setattr(launch, "gluon_unavailable_reason", lambda device: None)
    monkeypatch.setattr(launch, "device_sm_count", lambda device: sms)
    c = P.case_from_name(case_name)
    data = mla.generate_input(c.batch_size, c.q_seq_len, c.kv_seq_len, seed=3, device="cpu")
    for f in P.KV_FORMATS:  # (which rules the cases reach together: the test below)
        plan = launch.TritonDecodePlan(data, kv_format=f)
        d = measured.sm90_default_call(case_name, f, num_sms=sms)
        assert (plan.variant.name, plan.num_splits) == (d["variant"], d["partials"]), (case_name, f)


def test_the_plan_cases_reach_every_default_rule():
    pytest.importorskip("triton")
    rules = {(measured.sm90_default_call(n, f, num_sms=s)["kernel_rule"], measured.sm90_default_call(n, f, num_sms=s)["variant"])
             for n, s in PLAN_CASES for f in P.KV_FORMATS}
    from mla.kernels.triton.variants import HOPPER_TMA_DEFAULT, HOPPER_WS_DEFAULT
    assert {r for r, _ in rules} == {"DEFAULT_VARIANT", "HOPPER_DEFAULT", "HOPPER_WS_DEFAULT", "HOPPER_TMA_DEFAULT"}
    tma = {name for _, _, name in HOPPER_TMA_DEFAULT["fp8"]}
    assert tma <= {v for _, v in rules} and HOPPER_WS_DEFAULT["mxfp4"] in {v for _, v in rules}


def test_gen3_split_sweeps_read_the_committed_rounds_and_compare_with_the_default_count(tmp_path, monkeypatch):
    """measured.gen3_split_sweeps: round 35's and round 36b's checked rows (H200), a warp-specialized kernel's
    count as its config set it (programs, not partials), an auto row at the count its plan resolved;
    split_best_vs_default: each row's best count against the sm90 default call's."""
    pytest.importorskip("triton")
    g = measured.gen3_split_sweeps()
    assert g is not None and set(g.run) == {"r35", "r36b"} and set(g.device) == {"NVIDIA H200"}
    assert set(g.git_commit) == {"daab5e0", "0d89d2b"}
    v133 = g[(g.v == "v133") & (g.case == "bs32-kv8192-q1-h16")].set_index("num_splits").us
    assert sorted(v133.index) == [2, 4] and abs(v133[4] - 59.2) < 1e-6  # config 4 (the plan recorded 8 partials)
    auto = g[g.auto & (g.case == "bs8-kv8192-q1-h16")]
    assert sorted(auto.num_splits) == [33, 33] and len(g[g.auto]) == 10
    b = measured.split_best_vs_default(g).set_index(["run", "case", "kv_format", "kernel"])
    row = b.loc[("r36b", "bs8-kv8192-q1-h16", "mxfp4", "v117")]  # the auto row's count, which no explicit row swept
    assert (row.best_splits, row.default_splits, row.at_default_over_best) == (33, 33, 1.0)
    row = b.loc[("r35", "bs64-kv8192-q1-h16", "fp8", "v141")]
    assert (row.best_splits, row.default_splits) == (4, 2) and abs(row.at_default_over_best - 105.712 / 97.424) < 1e-4
    monkeypatch.setattr(measured, "DATA", tmp_path)
    assert measured.gen3_split_sweeps() is None


def test_static_command_names_what_wrote_the_committed_table():
    """The static tables' footers: `python -m mla isa` writes out/static/<target> unless --write; sm90's device
    table comes from scripts/sm90_isa_on_device.sh (data/static/README.md)."""
    assert measured.static_command("gfx950") == "python -m mla isa --target gfx950 --write"
    assert measured.static_command("sm90", triton="newest") == "python -m mla isa --target sm90 --write"
    dev = measured.static_command("sm90")
    assert "scripts/sm90_isa_on_device.sh" in dev and f"triton-{measured.DEVICE_TRITON['sm90']}.csv" in dev


def test_alu_floor_of_a_warp_specialized_kernel_uses_its_partitions_warps():
    """isa_triton counts a warp-specialized kernel's loop as one 4-warp partition's tile while num_warps is the
    CTA's 16: the ALU count per token must take the loop's own scale (4 / 64), not 16 / 64 (4x too high, which
    put v170's ALU floor at ~523 us over its measured 346.7 us at bs256-kv8192)."""
    base = dict(kv_format="mxfp4", kernel="split", block_n=64, smem_bytes_per_token=1684.0)
    st = pd.DataFrame([dict(base, variant="vWS", num_warps=16, loop_sass_instructions=1208.5,
                            warp_instr_per_token=75.53, loop_alu_pipe_instructions=521.0),
                       dict(base, variant="vOne", num_warps=4, loop_sass_instructions=883.0,
                            warp_instr_per_token=55.19, loop_alu_pipe_instructions=256.0)])
    c = P.case_from_name("bs256-kv8192-q1-h16")
    ws = roofline.static_ceilings(st, {"mxfp4": "vWS"}, [c]).iloc[0]
    one = roofline.static_ceilings(st, {"mxfp4": "vOne"}, [c]).iloc[0]
    assert ws.alu_instr_per_token == pytest.approx(521.0 * 4 / 64, rel=1e-3)
    assert one.alu_instr_per_token == pytest.approx(256.0 * 4 / 64, rel=1e-3)
    tokens = c.total_kv  # one program a token (one head group)
    model = roofline.SM90_ISSUE
    assert ws.alu_floor_us == pytest.approx(tokens * 521.0 * 4 / 64 / (model.sms * model.clock_ghz * 1e9
                                                                     * model.alu_warp_instr_per_clk) * 1e6, rel=1e-3)


def test_ncu_metrics_reads_the_section_tables_of_a_text_report(tmp_path):
    """measured.ncu_metrics: notebook 04's prose numbers from Nsight Compute reports (section tables, a unitless
    metric, thousands separators, the highest-utilized pipeline note) come from the report, not from typing."""
    rep = tmp_path / "r-ncu-vX.txt"
    rep.write_text(
        "    Section: GPU Speed Of Light Throughput\n"
        "    ----------------------- ----------- ------------\n"
        "    Metric Name             Metric Unit Metric Value\n"
        "    ----------------------- ----------- ------------\n"
        "    Elapsed Cycles                cycle      613,594\n"
        "    L1/TEX Cache Throughput           %        70.53\n"
        "    ----------------------- ----------- ------------\n"
        "\n"
        "    INF   ALU is the highest-utilized pipeline (44.0%) based on elapsed cycles in the workload, taking\n"
        "    Section: Scheduler Statistics\n"
        "    Metric Name                  Metric Unit Metric Value\n"
        "    Issued Warp Per Scheduler                        0.52\n")
    m = measured.ncu_metrics(rep).set_index("metric")
    assert m.loc["Elapsed Cycles", "value"] == 613594 and m.loc["Elapsed Cycles", "unit"] == "cycle"
    assert m.loc["L1/TEX Cache Throughput", "value"] == pytest.approx(70.53)
    assert m.loc["ALU pipeline (highest-utilized)", "value"] == pytest.approx(44.0)
    assert m.loc["Issued Warp Per Scheduler", "unit"] == "" and m.loc["Issued Warp Per Scheduler", "section"] == "Scheduler Statistics"
    assert measured.ncu_metrics(tmp_path / "missing.txt") is None
    real = measured.ncu_metrics("measured/h200/gen3/r38a-ncu-v143.txt")
    if real is not None:  # the committed report behind notebook 04's "What binds v143"
        r = real.set_index("metric").value
        assert r["L1/TEX Cache Throughput"] == pytest.approx(70.53) and r["Issue Slots Busy"] == pytest.approx(50.20)


def test_shootout_best_config_comes_from_a_sweep_at_the_default_commit(tmp_path):
    """A '(best config)' entry is the min over the default commit's configs; with swept_only it exists only
    where a non-default config was timed in the entry's method, and a preferred mode absent from a backend's
    rows falls back to the next one (the fixture has no fresh mode)."""
    from test_notebooks import make_fixture_tree

    make_fixture_tree(tmp_path)
    df = measured.load_measured(files=sorted((tmp_path / "measured" / "h200").glob("*.csv")))
    long = measured.shootout(df, ("fresh", "cold"), swept_only=True)
    assert set(long.method) == {"cold"}  # no fresh rows: every entry falls back to cold
    assert not long.entry.str.contains(r"\(best config\)").any()  # the fixture's sweeps are kernel-only
    # a cold-timed sweep row at the same commit, faster than the default: now a best config, and it is that row
    r = df[(df.backend == "triton") & (df.kv_format == "fp8") & (df.case == "bs4-kv1024-q1-h16") & df.cfg_num_splits.isna()
           & (df.status == "ok")].iloc[[0]].copy()
    r["config"], r["cfg_num_splits"] = '{"graph": true, "num_splits": 3}', 3
    r["cold_median_us"] = r["cold_median_us"] / 2
    long2 = measured.shootout(pd.concat([df, r], ignore_index=True), ("fresh", "cold"), swept_only=True)
    best = long2[long2.entry == "triton fp8 (best config)"].set_index("case")
    dflt = long2[long2.entry == "triton fp8 (default)"].set_index("case")
    assert best.loc["bs4-kv1024-q1-h16", "time_us"] == pytest.approx(dflt.loc["bs4-kv1024-q1-h16", "time_us"] / 2)
    assert (best.time_us <= dflt.time_us.reindex(best.index)).all() and "triton bf16 (best config)" not in set(long2.entry)
    gm = measured.geomeans(long2)
    assert gm.fresh_geomean_us.isna().all() and (gm.cold_geomean_us == gm.geomean_us).all()


def test_anchor_times_name_each_family_once_and_take_seed003s_best_split():
    a, _ = measured.load_anchors()
    if a is None:
        pytest.skip("no anchors in this tree")
    t = measured.anchor_times(a)
    assert set(t.entry) == {v[2] for v in measured.ANCHOR_FAMILIES.values()}
    assert (t.groupby("entry").case.nunique() == 8).all() and (t.method == "cold").all()
    s = t[t.family == "seed003_fp8"].set_index("case").time_us
    assert (s == a[a.family == "seed003_fp8"].groupby("case").cold_us.min()).all()
    assert measured.anchor_times(None) is None


def test_small_shapes_are_the_four_of_fewest_bytes():
    from mla.analysis import targets

    by_bytes = sorted(P.LEADERBOARD, key=lambda c: P.io_bytes(c, "bf16"))
    assert set(targets.SMALL_SHAPES) == {c.name for c in by_bytes[:4]}
    assert targets.SMALL_SHAPES[0] == targets.TINY and set(targets.SMALL) < set(targets.SMALL_SHAPES)


def test_hbars_marks_approximate_values():
    import matplotlib.pyplot as plt
    from mla import plots

    fig, ax = plt.subplots()
    plots.hbars(ax, pd.Series({"published: a": 349.0, "ours": 315.2}), approx={"published: a"})
    texts = sorted(t.get_text().strip() for t in ax.texts)
    assert texts == ["315", "~349"]
    plt.close(fig)
