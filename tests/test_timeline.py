"""The program timeline's CPU side (mla.analysis.timeline, mla.plots.program_timeline) on synthetic
stamps built here from known cycle counts and a known SM clock: the numbers it recovers, the errors
it must raise, the CSV round trip and the Gantt chart."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mla import plots  # noqa: E402
from mla.analysis import timeline as tl  # noqa: E402

GHZ = 1.98  # the synthetic SM clock (cycles per ns)
T0 = 1_700_000_000_000_000_000  # a %globaltimer-sized epoch (ns)
PRO, WAIT, TILE, EPI = 3960, 1980, 990, 1980  # cycles: 2 us prologue, +1 us to the first tile, 0.5 us/tile, 1 us


def row(start_ns, sm, n_tiles, *, tile=TILE, c1=None, clk_base=None):
    """One program's 16 stamps: events at known cycle offsets, ns = start + cycles / GHZ (rounded like a
    real timer), the cycle counter starting at an SM-specific base (SMs are not synchronized).
    ``c1`` = (first, loop_end, end) ns offsets of consumer 1 from consumer 0's events, plus its tiles."""
    cyc = [0, PRO, PRO + WAIT, PRO + WAIT + (n_tiles - 1) * tile, PRO + WAIT + (n_tiles - 1) * tile + EPI]
    base = (10**9 * (sm + 1) + 12345) if clk_base is None else clk_base
    ns = [start_ns + int(round(c / GHZ)) for c in cyc]
    clk = [base + c for c in cyc]
    out = ns + clk + [sm, n_tiles, -1, -1, -1, -1]
    if c1 is not None:
        d_first, d_loop, d_end, n2 = c1
        out[12:16] = [ns[2] + d_first, ns[3] + d_loop, ns[4] + d_end, n2]
    return out


def launch(n_programs=128, n_tiles=32, starts=None, sms=None, **kw):
    starts = [T0] * n_programs if starts is None else starts
    sms = list(range(n_programs)) if sms is None else sms
    return np.array([row(starts[p], sms[p], n_tiles, **kw) for p in range(n_programs)], dtype=np.int64)


DUR_US = (PRO + WAIT + 31 * TILE + EPI) / GHZ / 1e3  # one 32-tile program: 2 + 1 + 15.5 + 1 = 19.5 us


# --- one launch --------------------------------------------------------------------------------------
def test_known_cycles_come_back_as_us():
    f = tl.program_frame(launch(), (2, 4, 16))
    assert len(f) == 128 and DUR_US == pytest.approx(19.5)
    assert f["per_tile_us"].to_numpy() == pytest.approx(0.5, rel=1e-3)
    assert f["prologue_us"].to_numpy() == pytest.approx(2.0, rel=1e-3)
    assert f["first_wait_us"].to_numpy() == pytest.approx(3.0, rel=1e-3)
    assert f["loop_us"].to_numpy() == pytest.approx(15.5, rel=1e-3)
    assert f["epilogue_us"].to_numpy() == pytest.approx(1.0, rel=1e-3)
    assert f["duration_us"].to_numpy() == pytest.approx(19.5, rel=1e-3)
    assert f["start_us"].max() == 0.0 and f["end_us"].to_numpy() == pytest.approx(19.5, abs=1e-3)
    assert f["clock_ghz"].to_numpy() == pytest.approx(GHZ, rel=1e-3)
    assert f["consumers"].eq(1).all() and f["end2_us"].isna().all() and f["n_tiles2"].isna().all()


def test_grid_decoding():
    f = tl.program_frame(launch(), (2, 4, 16))
    # row 77 = 1 + 2 * (2 + 4 * 9): head group 1, split 2, batch element 9
    r = f.iloc[77]
    assert (r.head_group, r.split, r.b, r.sm) == (1, 2, 9, 77)
    assert sorted(f.head_group.unique()) == [0, 1] and f.split.max() == 3 and f.b.max() == 15
    assert f.groupby(["head_group", "split", "b"]).ngroups == 128


def test_equal_programs_on_132_sms_leave_4_idle():
    s = tl.summarize(tl.program_frame(launch(), (1, 4, 32)), sm_count=132)
    assert (s["programs"], s["sms_used"], s["programs_per_sm"], s["max_co_resident"]) == (128, 128, 1, 1)
    assert s["makespan_us"] == pytest.approx(19.5, abs=1e-3)
    assert s["tail_us"] == pytest.approx(0.0, abs=1e-3) and s["end_spread_us"] == pytest.approx(0.0, abs=1e-3)
    assert s["launch_spread_us"] == 0.0
    assert s["idle_sm_fraction"] == pytest.approx(4 / 132, abs=1e-4)
    assert s["sm_clock_ghz"] == pytest.approx(GHZ, rel=1e-3)
    assert s["median_per_tile_us"] == pytest.approx(0.5, rel=1e-3)
    # without the device's SM count the 128 SMs used are all there is: no idle SM
    assert tl.summarize(tl.program_frame(launch(), (1, 4, 32)))["idle_sm_fraction"] == pytest.approx(0, abs=1e-4)
    with pytest.raises(ValueError, match="sm_count"):
        tl.summarize(tl.program_frame(launch(), (1, 4, 32)), sm_count=100)


def test_a_straggler_sets_makespan_tail_and_the_critical_program():
    st = launch()
    st[100] = row(T0 + 500, 100, 64)  # 64 tiles, starting 0.5 us late: ends at 0.5 + 35.5 us
    f = tl.program_frame(st, (2, 4, 16))
    s = tl.summarize(f, sm_count=132)
    assert s["makespan_us"] == pytest.approx(36.0, abs=2e-3)
    assert s["tail_us"] == pytest.approx(36.0 - 19.5, abs=2e-3)
    # the mean finish: 127 programs at 19.5 us and the straggler at 36.0
    assert s["end_spread_us"] == pytest.approx(36.0 - (127 * 19.5 + 36.0) / 128, abs=2e-3)
    assert s["launch_spread_us"] == pytest.approx(0.5)
    busy = 127 * 19.5 + 35.5
    assert s["idle_sm_fraction"] == pytest.approx(1 - busy / (132 * 36.0), abs=1e-4)
    cp = s["critical_program"]
    # row 100 = 0 + 2 * (2 + 4 * 12)
    assert (cp["program"], cp["head_group"], cp["split"], cp["b"], cp["sm"], cp["n_tiles"]) == (100, 0, 2, 12, 100, 64)
    assert all(isinstance(cp[k], int) for k in ("program", "b", "split", "head_group", "sm"))
    d = tl.decompose(s)
    assert list(d.columns) == ["part", "us", "share"]
    assert d["us"].to_numpy() == pytest.approx([0.5, 2.0, 1.0, 31.5, 1.0, 0.0], abs=2e-3)
    assert d["us"].sum() == pytest.approx(s["makespan_us"]) and d["share"].sum() == pytest.approx(1.0)
    d2 = tl.decompose(s, kernel_us=45.0)
    assert len(d2) == 7 and d2["us"].iloc[-1] == pytest.approx(9.0, abs=2e-3)
    assert d2["share"].sum() == pytest.approx(1.0) and d2["share"].iloc[3] == pytest.approx(31.5 / 45, abs=1e-4)
    one = tl.summary_frame(s)
    assert len(one) == 1 and one.loc[0, "critical_b"] == 12 and one.loc[0, "makespan_us"] == s["makespan_us"]


def test_two_consumers():
    # consumer 0 runs the even tiles (16 of 32: 1 us apart; 2 + 1 + 15 + 1 = 19 us), consumer 1 the odd
    # ones and ends 1.5 us later
    st = launch(n_tiles=16, tile=2 * TILE, c1=(250, 250, 1500, 16))
    f = tl.program_frame(st, (1, 128, 1))
    assert f["consumers"].eq(2).all() and f["n_tiles2"].eq(16).all()
    assert f["per_tile_us"].to_numpy() == pytest.approx(1.0, rel=1e-3)
    assert f["end_us"].to_numpy() == pytest.approx(19.0, abs=2e-3)
    assert f["end2_us"].to_numpy() == pytest.approx(20.5, abs=2e-3)
    assert f["duration_us"].to_numpy() == pytest.approx(20.5, abs=2e-3)  # the later consumer's end
    assert f["finish_us"].to_numpy() == pytest.approx(20.5, abs=2e-3)
    s = tl.summarize(f, sm_count=132)
    assert s["makespan_us"] == pytest.approx(20.5, abs=2e-3)
    assert s["idle_sm_fraction"] == pytest.approx(4 / 132, abs=1e-4)
    d = tl.decompose(s)
    assert d["us"].iloc[-1] == pytest.approx(1.5, abs=2e-3)  # consumer 1 after consumer 0
    assert d["us"].sum() == pytest.approx(s["makespan_us"])


def test_two_waves_and_two_co_resident_programs_per_sm():
    gap = 100
    end1 = int(round((PRO + WAIT + 31 * TILE + EPI) / GHZ))
    starts = [T0] * 132 + [T0 + end1 + gap] * 132
    f = tl.program_frame(launch(264, starts=starts, sms=list(range(132)) * 2), (1, 2, 132))
    s = tl.summarize(f, sm_count=132)
    assert (s["programs_per_sm"], s["max_co_resident"]) == (2, 1)
    makespan = (2 * end1 + gap) / 1e3
    assert s["makespan_us"] == pytest.approx(makespan, abs=2e-3)
    assert s["idle_sm_fraction"] == pytest.approx(1 - 2 * 19.5 / makespan, abs=1e-4)
    assert s["launch_spread_us"] == 0.0  # both waves' first programs start together on every SM
    # two CTAs on each of 66 SMs at once: busy time counts the SM once, not twice
    co = tl.summarize(tl.program_frame(launch(132, sms=[p // 2 for p in range(132)]), (1, 1, 132)), sm_count=66)
    assert (co["programs_per_sm"], co["max_co_resident"]) == (2, 2)
    assert co["idle_sm_fraction"] == pytest.approx(0.0, abs=1e-4)


def test_clock_fallback_and_override():
    st = launch(4)
    st[2, 0:5] = T0  # a coarse timer: the whole program within one tick, its own clock unknown
    f = tl.program_frame(st, (1, 1, 4))
    assert np.isnan(f["clock_ghz"].iloc[2]) and f["prologue_us"].iloc[2] == pytest.approx(2.0, rel=1e-3)
    g = tl.program_frame(launch(4), (1, 1, 4), clock=2.0)
    assert g["per_tile_us"].to_numpy() == pytest.approx(TILE / 2000)
    with pytest.raises(ValueError, match="clock"):
        tl.program_frame(launch(4), (1, 1, 4), clock="fast")


def test_programs_with_zero_or_one_tile():
    st = launch(3)
    st[0] = row(T0, 0, 1)
    st[1] = row(T0, 1, 1)
    st[1, tl.COL["n_tiles"]] = 0  # a split with no tokens never reaches its first tile
    st[1, tl.COL["first_tile_ns"]] = st[1, tl.COL["first_tile_clk"]] = -1
    f = tl.program_frame(st, (1, 3, 1))
    assert np.isnan(f["per_tile_us"].iloc[0]) and f["loop_us"].iloc[0] == pytest.approx(0.0)
    assert np.isnan(f["first_wait_us"].iloc[1]) and np.isnan(f["loop_us"].iloc[1])
    assert f["first_tile_us"].isna().tolist() == [False, True, False]
    st[2, tl.COL["first_tile_ns"]] = -1  # ... but a program with tiles must stamp its first one
    with pytest.raises(ValueError, match="first_tile_ns"):
        tl.program_frame(st, (1, 3, 1))


# --- the errors -------------------------------------------------------------------------------------
def test_programs_without_stamps_are_an_error():
    st = launch()
    st[[5, 6, 90]] = -1
    with pytest.raises(ValueError, match="3 of 128 programs have no stamps"):
        tl.program_frame(st, (2, 4, 16))


@pytest.mark.parametrize("shape", [(128, 15), (128, 17), (128,), (2, 64, 16)])
def test_bad_shape(shape):
    with pytest.raises(ValueError, match="shape"):
        tl.program_frame(np.zeros(shape, dtype=np.int64), (2, 4, 16))


def test_grid_must_match_the_rows():
    with pytest.raises(ValueError, match="grid"):
        tl.program_frame(launch(), (2, 4, 8))
    with pytest.raises(ValueError, match="grid"):
        tl.program_frame(launch(), (128, 1))


@pytest.mark.parametrize("col,value", [
    ("q_ready_ns", T0 - 1),          # Q ready before the start
    ("end_ns", T0 + 100),            # ends before its loop ended
    ("loop_end_clk", 10**9 * 8),     # the loop ends (cycles) before the first tile
    ("end2_ns", T0 + 50),            # consumer 1 ends before it started its loop
])
def test_events_out_of_order(col, value):
    st = launch(c1=(250, 250, 1500, 16))
    st[7, tl.COL[col]] = value
    with pytest.raises(ValueError, match=f"out of order: {col}|{col}.*negative"):
        tl.program_frame(st, (2, 4, 16))


def test_equal_stamps_are_in_order():
    st = launch(4)
    st[1, 1] = st[1, 0]  # q_ready in the same timer tick as the start
    tl.program_frame(st, (1, 1, 4))


def test_negative_smid_and_stray_consumer_columns():
    st = launch()
    st[3, tl.COL["smid"]] = -2
    with pytest.raises(ValueError, match="smid"):
        tl.program_frame(st, (2, 4, 16))
    st = launch()
    st[4, tl.COL["end2_ns"]] = T0 + 30_000  # a consumer-1 stamp without consumer 1
    with pytest.raises(ValueError, match="end2_ns"):
        tl.program_frame(st, (2, 4, 16))


def test_a_tensor_like_is_read_through_cpu_numpy():
    class FakeTensor:  # what torch offers: .cpu().numpy()
        def __init__(self, a):
            self.a = a

        def cpu(self):
            return self

        def numpy(self):
            return self.a

    a = launch(8)
    pd.testing.assert_frame_equal(tl.program_frame(FakeTensor(a), (1, 8, 1)), tl.program_frame(a, (1, 8, 1)))


# --- the long CSV ------------------------------------------------------------------------------------------
def _csv_frame(extra_tiles=(0, 40, 20), variants=("v1", "v2")):
    parts = []
    for v in variants:
        for rep, extra in enumerate(extra_tiles):
            st = launch(16)
            st[11] = row(T0, 11, 32 + extra)  # a straggler whose length varies by repeat
            parts.append(tl.csv_rows(st, (2, 8, 1), run_id="r1", case="bs1-kv2048-q1-h16", variant=v,
                                     kv_format="fp8", repeat=rep))
    return pd.concat(parts, ignore_index=True)


def test_csv_round_trip(tmp_path):
    df = _csv_frame()
    assert list(df.columns) == list(tl.CSV_COLUMNS)
    path = tmp_path / "timeline.csv"
    df.to_csv(path, index=False)
    back = tl.load_timeline_csv(path)
    frames = tl.frames_from_csv(back)
    assert sorted(frames) == [("bs1-kv2048-q1-h16", v, "fp8", r) for v in ("v1", "v2") for r in range(3)]
    st = launch(16)
    st[11] = row(T0, 11, 72)
    pd.testing.assert_frame_equal(frames[("bs1-kv2048-q1-h16", "v2", "fp8", 1)], tl.program_frame(st, (2, 8, 1)))
    # rows shuffled, with a program column to put them back
    df2 = df.assign(program=df.groupby(list(tl.CSV_KEY)).cumcount()).sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(tl.frames_from_csv(df2)[("bs1-kv2048-q1-h16", "v1", "fp8", 2)],
                                  frames[("bs1-kv2048-q1-h16", "v1", "fp8", 2)])


def test_summary_table_is_the_median_over_repeats():
    t = tl.summary_table(_csv_frame(), kernel_us={("bs1-kv2048-q1-h16", "v1", "fp8"): 40.0}, sm_count=132)
    assert len(t) == 2 and t["repeats"].tolist() == [3, 3]
    # the straggler's makespans: 19.5, 39.5, 29.5 us -> median 29.5
    assert t["makespan_us"].to_numpy() == pytest.approx(29.5, abs=2e-3)
    assert t["critical_program"].tolist() == [11, 11] and t["critical_split"].tolist() == [5, 5]
    assert t.loc[0, "kernel_us"] == 40.0 and t.loc[0, "outside_us"] == pytest.approx(10.5, abs=2e-3)
    assert np.isnan(t.loc[1, "kernel_us"])
    harness = pd.DataFrame({"case": ["bs1-kv2048-q1-h16"] * 2, "variant": ["v1", "v2"], "kv_format": ["fp8"] * 2,
                            "kernel_median_us": [31.0, 32.0]})
    t2 = tl.summary_table(_csv_frame(), kernel_us=harness)
    assert t2["outside_us"].to_numpy() == pytest.approx([1.5, 2.5], abs=2e-3)
    # the probe's sm_count column stands in for the argument: 16 programs on a 132-SM device
    idle = [1 - (15 * 19.5 + m) / (132 * m) for m in (19.5, 39.5, 29.5)]
    t3 = tl.summary_table(_csv_frame().assign(sm_count=132))
    assert t3["idle_sm_fraction"].to_numpy() == pytest.approx(np.median(idle), abs=1e-4)


def test_csv_missing_columns_and_mixed_runs(tmp_path):
    df = _csv_frame()
    path = tmp_path / "bad.csv"
    df.drop(columns=["smid", "grid1"]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="smid, grid1"):
        tl.load_timeline_csv(path)
    with pytest.raises(ValueError, match="repeat"):
        tl.frames_from_csv(df.drop(columns=["repeat"]))
    mixed = df.copy()
    mixed.loc[mixed.index[:3], "run_id"] = "r2"
    with pytest.raises(ValueError, match="run_id"):
        tl.frames_from_csv(mixed)
    gone = df.copy()
    gone.loc[gone.index[5], "start_ns"] = -1
    with pytest.raises(ValueError, match="1 of 16 programs have no stamps"):
        tl.frames_from_csv(gone)


# --- the Gantt chart -----------------------------------------------------------------------------------
def test_program_timeline_draws_four_segments_per_program():
    st = launch()
    st[100] = row(T0 + 500, 100, 64)
    f = tl.program_frame(st, (2, 4, 16))
    fig, ax = plt.subplots()
    assert plots.program_timeline(ax, f, title="bs64 fp8") is ax
    assert len(ax.patches) == 4 * 128
    assert ax.get_xlabel() == "us since the first program started"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "tile loop" in legend and "waiting for the first tile" in legend
    loop = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb(plots.PHASE_COLORS["loop"])]
    assert len(loop) == 128 and max(p.get_x() + p.get_width() for p in loop) == pytest.approx(0.5 + 34.5, abs=2e-3)
    fig.canvas.draw()
    plt.close(fig)


def test_program_timeline_lanes_and_second_consumer():
    # two co-resident programs per SM get a lane each; consumer 1's ends are drawn as ticks
    f = tl.program_frame(launch(8, sms=[p // 2 for p in range(8)], n_tiles=16, tile=2 * TILE,
                                c1=(250, 250, 1500, 16)), (1, 8, 1))
    fig, ax = plt.subplots()
    plots.program_timeline(ax, f, legend=False)
    assert len(ax.patches) == 4 * 8 and ax.get_legend() is None
    pro = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb(plots.PHASE_COLORS["prologue"])]
    ys = sorted(round(p.get_y(), 6) for p in pro)
    assert len(set(ys)) == 8  # no two programs drawn over each other
    assert len(ax.collections) == 1 and len(ax.collections[0].get_offsets()) == 8
    fig.canvas.draw()
    plt.close(fig)


# --- the kernels' row and the CLI ------------------------------------------------------------------------
def test_the_analysis_reads_the_row_the_kernels_write():
    """mla.analysis.timeline keeps its own names (it imports no kernel module); they must be the kernels' row,
    in order (gluon_sm90.TIMELINE_FIELDS, which the plan's buffer and the probe's CSV follow)."""
    from mla.kernels.triton.gluon_sm90 import TIMELINE_COLUMNS, TIMELINE_FIELDS

    assert tl.TIMELINE_COLUMNS == TIMELINE_FIELDS and TIMELINE_COLUMNS == 16


def _probe_files(tmp_path):
    """What scripts/probes/timeline_probe.py writes for one case in two repeats: the long CSV and the cost CSV."""
    rows = []
    for r in range(2):
        st = launch(starts=[T0 + 1000 * r + (p % 4) * 100 for p in range(128)])
        df = tl.csv_rows(st, (1, 4, 32), run_id="run-x", case="bs32-kv8192-q1-h16", variant="v149_x",
                         kv_format="fp8", repeat=r)
        df["sm_count"] = 132
        rows.append(df)
    pd.concat(rows).to_csv(tmp_path / "timeline.csv", index=False)
    pd.DataFrame([dict(case="bs32-kv8192-q1-h16", variant="v149_x", kv_format="fp8", kernel_on_median_us=25.0,
                       kernel_off_median_us=24.8, status="ok")]).to_csv(tmp_path / "cost.csv", index=False)
    return tmp_path / "timeline.csv", tmp_path / "cost.csv"


def test_the_cli_prints_the_summary_and_the_last_programs_decomposition(tmp_path, capsys):
    """python -m mla timeline CSV --cost COST: per case the makespan (19.5 us of work after a 0.3 us start
    spread), idle SMs against the device's 132, and the parts of the last program adding up to the kernel-mode
    time, its last part what the split kernel does not see (25.0 - 19.8 us)."""
    from mla.cli import main

    csv, cost = _probe_files(tmp_path)
    assert main(["timeline", str(csv), "--cost", str(cost)]) == 0
    out = capsys.readouterr().out
    assert "bs32-kv8192-q1-h16" in out and "v149_x" in out
    assert "outside the split kernel" in out
    parts = tl.decompose(tl.summarize(tl.frames_from_csv(tl.load_timeline_csv(csv))[
        ("bs32-kv8192-q1-h16", "v149_x", "fp8", 0)], sm_count=132), kernel_us=25.0)
    assert parts["us"].sum() == pytest.approx(25.0, abs=1e-6)
    assert parts["us"].iloc[-1] == pytest.approx(25.0 - 19.8, abs=2e-3)
    assert parts["us"].iloc[0] == pytest.approx(0.3, abs=2e-3)  # the last program started 0.3 us late
    assert main(["timeline", str(csv), "--case", "bs4-kv1024-q1-h16"]) == 2  # no rows: a one-line error
    assert "no rows for cases" in capsys.readouterr().err


def test_a_coarse_timer_leaves_the_launch_clock_right_and_a_programs_own_clock_wrong():
    """With %globaltimer in 1 us steps a program's own clock (its cycles over a span of a few ticks) is off by
    up to a tick in five; the launch's clock (cycles over ns summed over 128 programs whose starts fall at
    different points of a tick) comes back within 1%, and with it the durations (the default)."""
    st = launch(starts=[T0 + 37 * p for p in range(128)], n_tiles=8)  # 8 tiles: 7.5-us programs
    st[:, 0:5] = st[:, 0:5] // 1000 * 1000  # the timer's ticks
    st[:, 12:15] = -1
    exact = tl.program_frame(launch(starts=[T0 + 37 * p for p in range(128)], n_tiles=8), (1, 1, 128))
    f = tl.program_frame(st, (1, 1, 128))
    own = tl.program_frame(st, (1, 1, 128), clock="program")
    assert exact["duration_us"].to_numpy() == pytest.approx(7.5, rel=1e-3)
    assert f["duration_us"].to_numpy() == pytest.approx(7.5, rel=1e-2)
    assert np.abs(own["duration_us"].to_numpy() / 7.5 - 1).max() > 0.05  # a single program's span misleads


def test_sm_end_ratio_finds_the_same_fast_sms_in_every_case():
    """Two cases whose SMs 0-7 run their tiles 20% faster: those SMs end early (ratio < 1) in both, the others
    at the median (1.0); the columns correlate; a format filter that leaves nothing is a ValueError."""
    frames = {}
    for case, n_tiles in (("a", 32), ("b", 64)):
        for rep in range(3):
            st = launch()
            for sm in range(128):  # (a faster SM: fewer cycles per tile at the same clock)
                st[sm] = row(T0, sm, n_tiles, tile=int(TILE * 0.8) if sm < 8 else TILE)
            frames[(case, "v1", "fp8", rep)] = tl.program_frame(st, (1, 1, 128))
    r = tl.sm_end_ratio(frames, kv_format="fp8")
    assert list(r.columns) == ["a", "b"] and len(r) == 128
    assert (r.loc[0:7] < 0.95).all().all() and np.allclose(r.loc[8:], 1.0, atol=1e-3)
    assert r.loc[0, "b"] < r.loc[0, "a"]  # longer programs: the same rate gap ends further apart
    assert r.corr().loc["a", "b"] > 0.99
    with pytest.raises(ValueError, match="no frames of kv_format 'mxfp4'"):
        tl.sm_end_ratio(frames, kv_format="mxfp4")
    mixed = {**frames, ("a", "v2", "mxfp4", 0): frames[("a", "v1", "fp8", 0)]}
    with pytest.raises(ValueError, match="pass kv_format"):
        tl.sm_end_ratio(mixed)


# --- work stealing (v154) ------------------------------------------------------------------------------
def test_steal_launch_splits_owners_from_helpers():
    """8 owners (one a straggler), then 4 helper programs: two took pieces (5 and 3 tiles), two found nothing."""
    st = np.array([row(T0, p, 32) for p in range(7)] + [row(T0, 7, 40)]
                  + [row(T0 + 5_000, 8, 5), row(T0 + 9_000, 9, 3), row(T0 + 9_500, 10, 1), row(T0 + 9_900, 11, 1)],
                  dtype=np.int64)
    st[10:, 11] = 0  # the idle helpers: no tile, so no first-tile stamp (the kernel marks it at tile 0)
    st[10:, [tl.COL["first_tile_ns"], tl.COL["first_tile_clk"]]] = -1
    f = tl.program_frame(st, (1, 1, 12))
    s = tl.steal_launch(f, 4)
    assert s["helpers_working"] == 2 and s["tiles_stolen"] == 8 and s["total_tiles"] == 7 * 32 + 40 + 8
    assert s["owner_tiles_min"] == 32
    assert s["helper_start_median_us"] == pytest.approx(7.0, abs=0.01)  # (5 and 9 us after the launch)
    assert s["helper_start_last_us"] == pytest.approx(9.0, abs=0.01)
    ends = f["finish_us"].iloc[:8]
    assert s["owner_spread_us"] == pytest.approx(ends.max() - ends.mean())
    assert s["owner_end_max_us"] == pytest.approx(f["finish_us"].iloc[7]) and s["makespan_us"] >= s["owner_end_max_us"]
    assert np.isfinite(s["idle_helper_end_last_us"])
    none = tl.steal_launch(f, 0)  # (a plan without helpers: everything is an owner)
    assert none["helpers_working"] == 0 and np.isnan(none["helper_start_median_us"])
    with pytest.raises(ValueError, match="helper_programs must be in"):
        tl.steal_launch(f, 12)


def test_committed_work_stealing_rows_count_every_tile_once():
    """Round 51's committed probe (an H100, data/measured/h100/issue10/timeline-r51b.csv.gz): in every launch
    the owners' and helpers' tiles add up to the case's tiles, the plans without helpers kept every tile, and
    v154 with one helper per owner moved tiles at bs256-kv8192 without ending the launch sooner (the notes'
    "Round 51": the slowest owners still end last)."""
    from pathlib import Path

    d = Path(__file__).resolve().parents[1] / "data/measured/h100/issue10"
    t = tl.steal_table(tl.load_timeline_csv(d / "timeline-r51b.csv.gz"), pd.read_csv(d / "timeline-cost-r51b.csv"))
    tiles = {"bs256-kv8192-q1-h16": 256 * 128, "bs256-kv1024-q1-h16": 256 * 16, "bs32-kv8192-q1-h16": 32 * 128}
    assert (t["total_tiles"] == t["case"].map(tiles)).all()
    assert len(t) == 9 and (t["repeats"] == 4).all() and t["kernel_us"].notna().all()
    base = t[t["helper_programs"] == 0]
    assert (base["tiles_stolen"] == 0).all() and (base["owner_tiles_min"] * 1 == base["case"].map(
        {"bs256-kv8192-q1-h16": 128, "bs256-kv1024-q1-h16": 16, "bs32-kv8192-q1-h16": 32})).all()
    big = t[(t["case"] == "bs256-kv8192-q1-h16")].set_index("helper_programs")
    assert big.loc[256, "tiles_stolen"] > 256 and big.loc[256, "makespan_us"] > big.loc[0, "makespan_us"]
    assert big.loc[256, "kernel_us"] > big.loc[0, "kernel_us"]


def test_the_read_timeline_probe_stamps_all_five_events_and_compiles_for_sm90():
    """scripts/probes/read_timeline_probe.py (round 51's open question: does a plain read of the same bytes end its
    programs together?): its kernel compiles for sm90 offline, stamps five %globaltimer events and the SM when
    STAMP is on and none when off, with the same loads either way. (Compiled in a child process: the CPU tests'
    interpreter replaces every @triton.jit function, as mla.kernels.triton.offline does.)"""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = """
import json, sys, triton
sys.path.insert(0, "scripts/probes")
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import read_timeline_probe as probe
sig = {"x_ptr": "*i32", "out_ptr": "*i32", "rows_ptr": "*i64", "words_per_prog": "i32", "BLOCK": "constexpr",
       "STAMP": "constexpr"}
out = {}
for stamp in (False, True):
    src = ASTSource(probe._stream_sum_stamped, sig, constexprs={(4,): probe.BLOCK, (5,): stamp})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, num_stages=1)).asm["ptx"]
    out[str(stamp)] = [ptx.count("%globaltimer"), ptx.count("%smid"), ptx.count("ld.global")]
print(json.dumps(out))
"""
    env = dict(os.environ, TRITON_INTERPRET="0", PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["True"][:2] == [5, 1] and got["False"][:2] == [0, 0]
    assert got["True"][2] == got["False"][2], "the same loads with the stamps on"
