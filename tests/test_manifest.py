"""One row set: data/manifest.toml, the loader, README's headline numbers and ``report`` agree.

When a campaign adds runs, the lead edits the manifest; these tests then fail until README's table
says what the manifest's rows give."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mla

from mla.analysis import manifest, measured

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def man():
    m = manifest.load(ROOT / "data" / "manifest.toml")
    assert m is not None, "data/manifest.toml is missing"
    return m


@pytest.fixture(scope="module")
def rows(man):
    df = manifest.rows("h200", man=man)
    assert df is not None
    return df


def test_every_listed_run_exists_with_the_purpose_its_command_says(man, rows):
    for rid, purpose in zip(man.runs.run_id, man.runs.purpose):
        got = rows[rows.run_id == rid]
        assert len(got), f"manifest run {rid} has no rows under data/measured/"
        inferred = set(got.command.map(manifest.infer_purpose))
        assert inferred == {purpose}, f"{rid}: manifest says {purpose}, its command says {inferred}"


def test_stale_campaigns_are_flagged_and_kept_out(man):
    everything = manifest.tag(measured.load_measured("h200"), man)
    old = everything[everything.git_commit.str.startswith("3dcb333")]
    assert len(old) and old.stale.all() and (old.campaign == "campaign1").all()
    current = manifest.rows("h200", man=man)
    assert not current.stale.any() and not current.run_id.isin(old.run_id).any()
    with_old = manifest.rows("h200", man=man, include_stale=True)
    assert with_old.stale.any()


def test_bad_manifest_is_refused(tmp_path):
    p = tmp_path / "manifest.toml"
    p.write_text('[[run]]\ndevice = "h200"\nrun_id = "x"\npurpose = "fastest"\n')
    with pytest.raises(ValueError, match="unknown purpose"):
        manifest.load(p)
    p.write_text('[[run]]\ndevice = "h200"\npurpose = "splits"\n')
    with pytest.raises(ValueError, match="needs device, run_id and purpose"):
        manifest.load(p)


def _readme_geomeans() -> dict:
    """README's result table: {(backend, kv_format): us or None for '—'}."""
    text = README.read_text()
    block = text[text.index("## Results"):]
    fmts = ("bf16", "fp8", "mxfp4")
    out = {}
    for line in block.splitlines():
        cells = [c.strip().replace("*", "") for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not line.startswith("|"):
            continue
        name = cells[0].split()[0] if cells[0] else ""
        if name not in ("triton", "flashinfer", "torch"):
            continue
        for f, c in zip(fmts, cells[1:]):
            m = re.fullmatch(r"(\d+) us", c)
            out[(name, f)] = int(m.group(1)) if m else None
    return out


def test_readme_geomeans_equal_the_manifest_rows(rows):
    readme = _readme_geomeans()
    assert len(readme) == 9, f"README's result table should have 3 backends x 3 formats, parsed {readme}"
    head = manifest.headline(rows, "cold")
    for (b, f), v in readme.items():
        got = head.loc[b, f] if b in head.index and f in head.columns else float("nan")
        if v is None:
            assert got != got, f"README says — for {b} {f} but the manifest rows give {got:.1f} us"
        else:
            assert got == got and round(got) == v, f"README: {b} {f} {v} us; manifest rows: {got:.1f} us"


def test_readme_bandwidth_and_bs256_kernel_times_equal_the_manifest_rows(man, rows):
    text = README.read_text()
    bw, rid = manifest.read_bandwidth(rows, man)
    m = re.search(r"measured read bandwidth \((\d+) GB/s", text)
    assert m and int(m.group(1)) == round(bw), f"README's read bandwidth should be {bw:.0f} GB/s (run {rid})"
    big = rows[(rows.purpose == "leaderboard") & (rows.case == "bs256-kv8192-q1-h16") & (rows.status == "ok")]
    for b, f, pattern in (("triton", "bf16", r"Triton bf16 \*\*(\d+) us = (\d+)%"),
                          ("triton", "fp8", r"Triton fp8 (\d+) us \((\d+)%\)"),
                          ("triton", "mxfp4", r"MXFP4 (\d+) us \((\d+)%\)"),
                          ("flashinfer", "bf16", r"FlashInfer bf16 (\d+) us")):
        r = big[(big.backend == b) & (big.kv_format == f)].iloc[0]
        m = re.search(pattern, text)
        assert m, f"README lost its bs256-kv8192 sentence for {b} {f} ({pattern})"
        assert int(m.group(1)) == round(r.kernel_median_us), f"{b} {f}: README {m.group(1)}, row {r.kernel_median_us:.1f}"
        if m.lastindex == 2:
            assert int(m.group(2)) == round(r.kernel_pct_read_bw), f"{b} {f} %: README {m.group(2)}, row {r.kernel_pct_read_bw:.1f}"


def test_report_prints_a_compact_table_of_the_manifest(capsys):
    from mla.cli import main

    assert main(["report", "--purpose", "leaderboard", "--mode", "cold"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) < 40, f"the leaderboard report should fit a screen, got {len(lines)} lines"
    gm = manifest.headline(manifest.rows("h200"), "cold")
    assert f"{gm.loc['triton', 'bf16']:.1f} (8/8)" in out
    assert main(["report", "--run", "nosuchrun"]) == 2  # a ValueError, named


def test_split_table_agrees_with_the_plans_recorded_num_splits(rows):
    """measured.heuristic_splits (notebook 03's table and figure) must give the num_splits each
    default-config Triton row's plan actually used (plan_config)."""
    pytest.importorskip("triton")
    d = measured.default_rows(rows[rows.purpose == "leaderboard"], "triton")
    assert d is not None and len(d) == 24
    for _, r in d.iterrows():
        used = json.loads(r.plan_config)["num_splits"]
        # (the rows ran their kernel as the default call's: campaign 23's v153 / v152 are no longer today's default)
        got = measured.heuristic_splits(r.case, r.variant, r.kv_format, default_call=True)
        assert got == used, (r.case, r.kv_format, r.variant)
    # and the table of today's defaults gives what a plan of today's defaults picks
    from mla.kernels.triton import TritonDecodePlan

    occ = measured.occupancy_table([measured.P.case_from_name("bs4-kv1024-q1-h16")])
    data = mla.generate_input(4, 1, 1024, seed=0)
    for _, r in occ.iterrows():
        plan = TritonDecodePlan(data, kv_format=r.kv_format)
        assert (r.variant, r.heuristic_splits) == (plan.variant.name, plan.num_splits), r.to_dict()


def test_notebook_05_geomeans_equal_readme(rows):
    """What notebook 05 prints (measured.shootout -> geomeans on the manifest's rows) is README's table."""
    gm = measured.geomeans(measured.shootout(rows, "cold"))
    readme = _readme_geomeans()
    for (b, f), v in readme.items():
        entry = f"{b} {f}" + (" (default)" if b == "triton" else "")
        if v is None:
            assert entry not in gm.index or not gm.loc[entry, "complete"]
        else:
            assert gm.loc[entry, "complete"] and round(gm.loc[entry, "geomean_us"]) == v, (entry, gm.loc[entry, "geomean_us"], v)


def test_readme_prose_numbers_equal_the_manifest_rows(rows):
    """The other measured numbers of README's Results: best-format geomean, host floor range, the
    Triton graph path's cold-minus-kernel gap, and the FlashInfer bs4-kv1024 example."""
    from mla.bench.stats import geomean

    text = README.read_text()
    lb = rows[(rows.purpose == "leaderboard") & (rows.status == "ok") & (rows.q_format == "bf16")]
    tri = lb[lb.backend == "triton"]
    m = re.search(r"best format per shape: (\d+) us", text)
    assert m and int(m.group(1)) == round(geomean(tri.groupby("case").cold_median_us.min()))
    m = re.search(r"host cost per call is (\d+)–(\d+) us", text)
    floors = lb.groupby("run_id").host_floor_us.first()
    assert m and (int(m.group(1)), int(m.group(2))) == (math.floor(floors.min()), math.ceil(floors.max()))
    gap = tri.cold_median_us - tri.kernel_median_us
    m = re.search(r"gap of the Triton graph path is (-?\d+)–(\d+) us", text)  # (a noisy row can go below 0)
    assert m and (int(m.group(1)), int(m.group(2))) == (round(gap.min()), round(gap.max()))
    fi = lb[(lb.backend == "flashinfer") & (lb.kv_format == "bf16") & (lb.case == "bs4-kv1024-q1-h16")].iloc[0]
    m = re.search(r"FlashInfer bf16 at bs4-kv1024: ([\d.]+) us of kernel in a (\d+) us call", text)
    assert m and float(m.group(1)) == round(fi.kernel_median_us, 1) and int(m.group(2)) == round(fi.cold_median_us)


def test_first_row_transient_labels_each_timing_by_its_place_in_its_process(tmp_path, monkeypatch):
    """Round 42's loader: the first bs256-kv8192 fp8 row of a bench process is 'first' (or 'read flush'), the rows
    after it 'later'; the probe's first repeat's first variant 'first'; failed checks and other shapes dropped."""
    gen3 = tmp_path / "measured" / "h200" / "gen3"
    gen3.mkdir(parents=True)
    common = dict(git_commit="abc1234", timestamp_utc="2026-12-04T00:00:00Z")
    case, other = "bs256-kv8192-q1-h16", "bs128-kv8192-q1-h16"

    def bench(run, case, us, flush="write:1.1GB", ok=True):
        return dict(common, run_id=run, case=case, kv_format="fp8", variant="v141_x", l2_flush=flush,
                    check_ok=ok, kernel_median_us=us)

    pd.DataFrame([bench("a", case, 359.0), bench("a", case, 313.0), bench("a", case, 999.0, ok=False),
                  bench("b", case, 303.0, flush="read:1.1GB")]).to_csv(gen3 / "rows.csv", index=False)
    pd.DataFrame([bench("c", other, 171.0), bench("c", case, 351.0)]).to_csv(gen3 / "order.csv", index=False)
    pd.DataFrame([dict(common, run_id="d", repeat=r, variant=v, check_ok=True, kernel_median_us=us)
                  for r, v, us in ((0, "v141_x", 358.0), (0, "v149_y", 314.0), (1, "v141_x", 312.0))]
                 ).to_csv(gen3 / "order-probe.csv", index=False)
    pd.DataFrame([dict(common, variant="v149_y", check_ok=True, kernel_median_us=306.0)]).to_csv(
        gen3 / "placement.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    runs = dict(bench="measured/h200/gen3/rows.csv", bench_cases="measured/h200/gen3/order.csv",
                probe_order="measured/h200/gen3/order-probe.csv", probe_placement="measured/h200/gen3/placement.csv")
    t = measured.first_row_transient(runs)
    got = {p: sorted(g.kernel_us) for p, g in t.groupby("position")}
    assert got == {measured.TRANSIENT_FIRST: [351.0, 358.0, 359.0], measured.TRANSIENT_LATER: [312.0, 313.0, 314.0],
                   measured.TRANSIENT_READ: [303.0], measured.TRANSIENT_PLACED: [306.0]}
    assert set(t.variant) == {"v141", "v149"}
    assert measured.first_row_transient(dict(runs, bench="measured/h200/gen3/missing.csv")) is None


def test_committed_flush_rows_are_round_36s_h200_defaults():
    """Notebook 02 section 7's points: the flush A/B's kernels are round 36's defaults on the H200 (bf16 v28, fp8
    v141, MXFP4 v117 / v133 / v140), one commit for both flushes; the loader carries the device and commit the
    notebook prints (the kernels change by round, so the label must say whose defaults they are)."""
    fw = measured.flush_writeback()
    assert fw is not None, f"missing {measured.FLUSH_PROBE} or {measured.FLUSH_KERNELS}"
    _, kern = fw
    assert set(kern.device) == {"NVIDIA H200"} and kern.git_commit.nunique() == 1
    v = kern.assign(v=kern.variant.str.split("_").str[0]).groupby("kv_format").v.agg(lambda s: sorted(set(s)))
    assert v.to_dict() == {"bf16": ["v28"], "fp8": ["v141"], "mxfp4": ["v117", "v133", "v140"]}


def test_evict_probe_gives_the_share_of_the_write_back_the_hint_recovered(tmp_path, monkeypatch):
    """Round 47's loader: per read size, the four times (write / read flush x no hint / evict_first) and the share of
    the write-back gap the hint recovered: (write - write_ef) / (write - read); negative when the hint is slower."""
    d = tmp_path / "measured" / "h200" / "issue10"
    d.mkdir(parents=True)
    rows = []
    for size, nbytes, w, wef, r, ref in (("40MB", 40_000_000, 20.0, 18.0, 16.0, 16.1),
                                         ("1216MB", 1_216_000_000, 300.0, 318.0, 292.0, 293.0)):
        for flush, evict, us in (("write", "normal", w), ("write", "evict_first", wef), ("read", "normal", r),
                                 ("read", "evict_first", ref)):
            rows.append(dict(size=size, nbytes=nbytes, flush=flush, evict=evict, median_us=us))
    pd.DataFrame(rows[::-1]).to_csv(d / "probe.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    t = measured.evict_probe("measured/h200/issue10/probe.csv")
    assert list(t["size"]) == ["40MB", "1216MB"]
    assert t.recovered.tolist() == pytest.approx([0.5, -18.0 / 8.0])
    assert t.loc[0, ["write_us", "write_ef_us", "read_us", "read_ef_us"]].tolist() == [20.0, 18.0, 16.0, 16.1]
    assert measured.evict_probe("measured/h200/issue10/missing.csv") is None


def test_plain_read_gap_interpolates_the_probe_in_bytes_and_never_extrapolates(tmp_path, monkeypatch):
    """Each kernel row against the probe's plain read (write flush, no hint) at its own bytes: log-log
    interpolation between the probe's sizes, NaN outside them; gap = kernel - read, ratio = kernel / read."""
    d = tmp_path / "measured" / "h200" / "issue10"
    d.mkdir(parents=True)
    rows = []
    for size, nbytes, w in (("10MB", 10_000_000, 10.0), ("1000MB", 1_000_000_000, 250.0)):
        for flush, evict, us in (("write", "normal", w), ("write", "evict_first", w + 1), ("read", "normal", w - 2),
                                 ("read", "evict_first", w - 2)):
            rows.append(dict(size=size, nbytes=nbytes, flush=flush, evict=evict, median_us=us))
    pd.DataFrame(rows).to_csv(d / "probe.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    k = pd.DataFrame(dict(case=["a", "b", "c", "d"], kv_format=["fp8"] * 4, variant=["v1"] * 4,
                          io_bytes=[10_000_000, 100_000_000, 1_000_000_000, 5_000_000],
                          kernel_median_us=[12.0, 60.0, 260.0, 9.0]))
    g = measured.plain_read_gap(k, "measured/h200/issue10/probe.csv")
    # 100 MB is halfway in log bytes: the read is the geometric mean of 10 and 250 us (50 us)
    assert g.plain_read_us.iloc[:3].tolist() == pytest.approx([10.0, 50.0, 250.0])
    assert g.gap_us.iloc[:3].tolist() == pytest.approx([2.0, 10.0, 10.0])
    assert g.ratio.iloc[1] == pytest.approx(1.2)
    assert math.isnan(g.plain_read_us.iloc[3]) and math.isnan(g.gap_us.iloc[3])  # under the probe's smallest read
    assert measured.plain_read_gap(k, "measured/h200/issue10/missing.csv") is None
    assert measured.plain_read_gap(None, "measured/h200/issue10/probe.csv") is None


def test_plain_read_gap_takes_the_read_flush_column_and_refuses_another(tmp_path, monkeypatch):
    """flush="read" interpolates the probe's read-flush times (rows timed behind a read flush); any other flush is
    a ValueError naming it."""
    d = tmp_path / "measured" / "h100" / "issue10"
    d.mkdir(parents=True)
    rows = [dict(size=s, nbytes=n, flush=f, evict=e, median_us=us)
            for s, n, w in (("10MB", 10_000_000, 10.0), ("1000MB", 1_000_000_000, 250.0))
            for f, e, us in (("write", "normal", w), ("write", "evict_first", w), ("read", "normal", w / 2),
                             ("read", "evict_first", w / 2))]
    pd.DataFrame(rows).to_csv(d / "probe.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    k = pd.DataFrame(dict(case=["a"], kv_format=["fp8"], variant=["v1"], io_bytes=[100_000_000],
                          kernel_median_us=[30.0]))
    g = measured.plain_read_gap(k, "measured/h100/issue10/probe.csv", flush="read")
    assert g.plain_read_us.tolist() == pytest.approx([25.0]) and g.gap_us.tolist() == pytest.approx([5.0])
    assert g.flush.tolist() == ["read"]
    with pytest.raises(ValueError, match="flush must be 'write' or 'read', got 'none'"):
        measured.plain_read_gap(k, "measured/h100/issue10/probe.csv", flush="none")


def test_same_run_read_gap_uses_the_checked_uninstrumented_time_at_the_case_bytes(tmp_path, monkeypatch):
    """A timeline cost row (kernel mode, instrument off, its check passed) against the same run's plain read at the
    case's own bytes for its format; error rows and failed checks are left out."""
    from mla import problem as P

    d = tmp_path / "measured" / "h100" / "issue10"
    d.mkdir(parents=True)
    pd.DataFrame([dict(size=s, nbytes=n, flush="write", evict="normal", median_us=us)
                  for s, n, us in (("10MB", 10_000_000, 10.0), ("1000MB", 1_000_000_000, 100.0))]
                 + [dict(size=s, nbytes=n, flush=f, evict=e, median_us=1.0)
                    for s, n in (("10MB", 10_000_000), ("1000MB", 1_000_000_000))
                    for f, e in (("write", "evict_first"), ("read", "normal"), ("read", "evict_first"))]
                 ).to_csv(d / "probe.csv", index=False)
    monkeypatch.setattr(measured, "DATA", tmp_path)
    cost = pd.DataFrame(dict(case=["bs32-kv8192-q1-h16"] * 3, kv_format=["fp8", "mxfp4", "fp8"],
                             variant=["v149", "v143", "v149"], status=["ok", "ok", "error"],
                             check_off=[True, False, True], kernel_off_median_us=[80.0, 60.0, 1.0]))
    g = measured.same_run_read_gap(cost, "measured/h100/issue10/probe.csv")
    assert len(g) == 1 and g.kv_format.tolist() == ["fp8"]
    nbytes = P.io_bytes(P.case_from_name("bs32-kv8192-q1-h16"), "fp8")
    assert g.io_bytes.tolist() == [nbytes]
    read = 10.0 * (nbytes / 10_000_000) ** 0.5  # log-log between (10 MB, 10 us) and (1000 MB, 100 us)
    assert g.plain_read_us.tolist() == pytest.approx([read]) and g.gap_us.tolist() == pytest.approx([80.0 - read])
    assert measured.same_run_read_gap(None) is None
    assert measured.timeline_run("write", {"write": ("measured/h100/issue10/none.csv.gz", "x.csv")}) is None
    with pytest.raises(ValueError, match="no timeline run for flush 'eval'"):
        measured.timeline_run("eval")


def test_committed_timeline_runs_are_checked_and_hold_notebook_02s_reading():
    """Rounds 48 / 50's H100 rows (notebook 02 section 9): every stamped launch and both kernel-mode graphs passed
    their checks; fp8's gap over the same run's plain read is the same behind either flush (within 1.5 us from
    150 MB), and at bs256-kv8192 the programs' spread of ends (last - mean) is most of that gap."""
    from mla.analysis import timeline

    gaps = {}
    for fl in ("write", "read"):
        run = measured.timeline_run(fl)
        assert run is not None, f"missing {measured.TIMELINE_RUNS[fl]}"
        stamps, cost = run
        assert (cost.status == "ok").all() and (cost.checks_passed == cost.repeats).all()
        assert cost.check_off.all() and cost.check_on.all() and (stamps.device.str.contains("H100")).all()
        gaps[fl] = measured.same_run_read_gap(cost, flush=fl).set_index(["case", "kv_format"])
    big = [k for k in gaps["write"].index if k[1] == "fp8" and gaps["write"].io_bytes[k] >= 150e6]
    assert len(big) == 4
    for k in big:
        assert abs(gaps["write"].gap_us[k] - gaps["read"].gap_us[k]) <= 1.5, k
    stamps, _ = measured.timeline_run("write")
    frames = timeline.frames_from_csv(stamps[stamps.case == "bs256-kv8192-q1-h16"].drop(columns="source_csv"))
    spread = [timeline.summarize(f)["end_spread_us"] for k, f in frames.items() if k[2] == "fp8"]
    assert np.median(spread) >= 0.75 * gaps["write"].gap_us[("bs256-kv8192-q1-h16", "fp8")]


def test_committed_work_stealing_run_is_round_51s_h100_rows():
    """measured.steal_run reads round 51's committed rows: every bench row checked and on the H100 it names, v154
    slower than v153 on every shape both ran (the notes' and README's statement), the timeline table with a
    kernel-mode time for every run."""
    from mla.analysis import measured

    run = measured.steal_run()
    assert run is not None, "round 51's rows are committed under data/measured/h100/issue10/"
    bench, table, stamps = run
    assert (bench["status"] == "ok").all() and bench["check_ok"].all()
    assert set(bench["device"]) == {"NVIDIA H100 80GB HBM3"} and set(stamps["device"]) == {"NVIDIA H100 80GB HBM3"}
    k = bench.assign(v=bench.variant.str.split("_").str[0]).groupby(["case", "v"]).kernel_median_us.mean().unstack()
    both = k.dropna(subset=["v153", "v154"])
    assert len(both) == 4 and (both["v154"] > both["v153"]).all()
    assert table["kernel_us"].notna().all() and len(table) == 9
    assert measured.steal_run({"bench": "missing.csv", "stamps": "x", "cost": "y"}) is None


def test_committed_round_51d_rows_say_what_the_notes_say():
    """measured.round51d_run reads r51d (an H100, two rounds, every pair in one file): the refined stealers v156 /
    v157 end within 0.5% of v153 at bs256-kv8192 and lose 5-9% at bs256-kv1024 and bs32-kv8192 (notebook 02
    section 10's reading); a missing file gives None, which the notebook reports with the command."""
    ab = measured.round51d_run()
    assert ab is not None, f"missing {measured.ROUND51D_RUN}"
    assert set(ab.device) == {"NVIDIA H100 80GB HBM3"} and (ab.rounds == 2).all() and len(ab) == 9
    r = ab.set_index(["case", "new"]).ratio
    for v in ("v156", "v157"):
        assert abs(r["bs256-kv8192-q1-h16", v] - 1) < 0.005
        for case in ("bs256-kv1024-q1-h16", "bs32-kv8192-q1-h16"):
            assert 1.05 < r[case, v] < 1.09, (case, v)
    assert measured.round51d_run("measured/h100/issue10/missing.csv") is None


def test_committed_plain_read_timeline_ends_together_where_the_decode_does_not():
    """Round 51's r51c (an H100): every read summed right; on v153's grid (256 programs) and at the full rate (528) a
    plain read of bs256-kv8192's 1216 MB ends within ~10 us of its mean, a quarter of the decode's 37-us spread
    (round 51's r51b), and the full-rate read is faster than the same call's v153 row - the notes' statement."""
    from mla.analysis import measured

    t = measured.read_timeline_table()
    assert t is not None and t["check_ok"].all() and set(t["device"]) == {"NVIDIA H100 80GB HBM3"}
    big = t[t["case"] == "read-1216MB"]
    one_wave = big[big["programs"].isin([256, 528])]
    assert len(one_wave) == 4 and (one_wave["spread_us"] < 11).all()
    full = big[big["programs"] == 528]
    assert (full["kernel_us"] < full["decode_us"] * 0.95).all()
    assert measured.read_timeline_table({"stamps": "x", "cost": "y", "decode": "z"}) is None


def test_committed_q_first_rows_are_round_52s_h100_rows():
    """measured.q_first_run reads round 52's committed rows (an H100): every bench row checked; in both Q-first
    files v158 is faster than v153 at bs4-kv1024 / bs64-kv1024 / bs256-kv1024 and v159 than v152 at bs4-kv8192 /
    bs32-kv1024 / bs64-kv1024, each pair with the same rel_l2; v160 at or below v158 everywhere r52c ran; and the
    timeline puts Q ready sooner for both new kernels at both shapes - the notes' and notebook 02's statements."""
    from mla.analysis import measured

    run = measured.q_first_run()
    assert run is not None, "round 52's rows are committed under data/measured/h100/issue10/"
    ab, pro = run
    assert set(ab["device"]) == {"NVIDIA H100 80GB HBM3"} and ab["same_rel_l2"].all()
    qf = ab[ab.source_csv.str.contains("qfirst")]
    assert qf.source_csv.nunique() == 2
    for (base, new), cases in ((("v153", "v158"), ("bs4-kv1024", "bs64-kv1024", "bs256-kv1024")),
                               (("v152", "v159"), ("bs4-kv8192", "bs32-kv1024", "bs64-kv1024"))):
        rows = qf[(qf.base == base) & (qf.new == new) & qf.case.str.split("-q1").str[0].isin(cases)]
        assert len(rows) == 6 and (rows.ratio < 0.99).all(), rows[["case", "ratio"]]
    c1 = ab[ab.new == "v160"]
    assert len(c1) == 6 and (c1.ratio <= 1.0).all()
    q = pro.set_index(["case", "kernel"])["q_ready_us"]
    for case in ("bs4-kv1024-q1-h16", "bs32-kv1024-q1-h16"):
        assert q[(case, "v158")] < q[(case, "v153")] - 1.0 and q[(case, "v159")] < q[(case, "v152")]
    assert measured.q_first_run({"bench": ["missing.csv"], "stamps": "x", "cost": "y"}) is None


def test_committed_round_53_rows_say_what_the_notes_say():
    """measured.round53_run reads round 53's committed rows (an H100), every pair of one-warpgroup kernels with the
    same rel_l2: at the
    default call's split counts v160 beats v153 by >= 5% at bs4-kv8192 / bs32-kv1024 / bs64-kv1024; every deeper
    ring (v161-v165) is slower than its 2-stage kernel wherever it ran; v166 (copies below the fence) is slower at
    one to eight tiles; v168 (TMA tiles) is slower at one tile; v169 beats v160 and v149 by >= 3% at bs256-kv8192 in
    all three files that ran it; and the timeline puts v163's Q ready >= 4 us after
    v160's while v168 keeps v160's time a tile (within 10%) - the notes' and notebook 02's statements."""
    from mla.analysis import measured

    run = measured.round53_run()
    assert run is not None, "round 53's rows are committed under data/measured/h100/issue10/"
    ab, ph = run
    assert set(ab["device"]) == {"NVIDIA H100 80GB HBM3"}
    # (the warp-specialized v149 stores two partials a program: its rel_l2 differs in the 4th digit)
    assert ab[ab.base != "v149"]["same_rel_l2"].all()
    q = ab[(ab.base == "v153") & (ab.new == "v160")]
    assert len(q) == 3 and (q.ratio < 0.95).all()
    deeper = ab[ab.new.isin(["v161", "v162", "v163", "v164", "v165"])]
    assert len(deeper) == 18 and (deeper.ratio > 1.0).all()
    short = ab[ab.case.isin(["bs4-kv1024-q1-h16", "bs4-kv8192-q1-h16", "bs32-kv1024-q1-h16", "bs64-kv1024-q1-h16"])]
    late = short[(short.base == "v160") & (short.new == "v166")]
    assert len(late) == 4 and (late.ratio > 1.0).all()
    tma = ab[(ab.base == "v160") & (ab.new == "v168")].set_index("case").ratio
    assert tma["bs4-kv1024-q1-h16"] > 1.03
    long3 = ab[(ab.new == "v169") & ab.base.isin(["v160", "v149"]) & (ab.case == "bs256-kv8192-q1-h16")]
    assert len(long3) == 3 and (long3.ratio < 0.97).all()  # r53d, r53e (two rounds), r53f (against v149)
    p = ph.set_index(["case", "kernel"])
    for case in ("bs32-kv1024-q1-h16", "bs4-kv8192-q1-h16"):
        assert p.median_prologue_us[(case, "v163")] > p.median_prologue_us[(case, "v160")] + 4.0
    c = "bs32-kv1024-q1-h16"
    assert abs(p.median_per_tile_us[(c, "v168")] / p.median_per_tile_us[(c, "v160")] - 1) < 0.10
    assert measured.round53_run({"bench": ["missing.csv"], "timelines": []}) is None


def test_committed_round_54_rows_say_what_the_notes_say():
    """measured.round54_run reads round 54's committed rows (an H100), in kernel and fresh mode: v168 beats v149 by
    >= 5% at 32, 64 and 128 tiles a program in one wave (bs32 / bs64 / bs128-kv8192) and beats v169 there; v169 beats
    v160 by >= 4% at 128 tiles in two waves (bs256-kv8192) and does not beat v168 by 1% at 64 (bs256-kv4096); v168
    sits under v160 by < 2.5% at 16 (bs256-kv1024); the default call with the rule beats kv_tma=False by >= 4% on the
    three shapes it changes; MXFP4's one-warpgroup kernel is >= 20% slower than the warp-specialized one at 32-64
    tiles. The timeline puts v149's extra time at the ends (first-tile wait and outside the kernel), its time a tile
    within 5% of v168's per consumer pair - the rule HOPPER_TMA_DEFAULT encodes and the notes' tables."""
    from mla.analysis import measured
    from mla.kernels.triton.variants import HOPPER_TMA_DEFAULT

    for mode in ("kernel", "fresh"):
        run = measured.round54_run(mode=mode)
        assert run is not None, "round 54's rows are committed under data/measured/h100/issue10/"
        ab, ph = run
        assert set(ab["device"]) == {"NVIDIA H100 80GB HBM3"} and (ab["rounds"] == 2).all()
        assert ab[~ab.base.isin(["v149", "v143"])]["same_rel_l2"].all()
        r = ab.groupby(["case", "base", "new"]).pct.max()  # (the worst file where a pair ran twice)
        for case in ("bs32-kv8192-q1-h16", "bs64-kv8192-q1-h16", "bs128-kv8192-q1-h16"):
            assert r[(case, "v149", "v168")] < -5 and r[(case, "v149", "v169")] > r[(case, "v149", "v168")]
        assert r[("bs256-kv8192-q1-h16", "v160", "v169")] < -4
        assert r[("bs256-kv4096-q1-h16", "v168", "v169")] > -1
        assert -2.5 < r[("bs256-kv1024-q1-h16", "v160", "v168")] < 0
        assert (ab[(ab.base == "v143") & (ab.new == "v159")].pct > 20).all()
        default = ab[ab.source_csv.str.endswith("tma-default-r54b.csv")]
        assert len(default) == 3 and (default.pct < -4).all()
    p = ph.set_index("kernel")
    assert p.median_first_wait_us["v149"] > p.median_first_wait_us["v168"] + 2
    assert p.outside_us["v149"] > p.outside_us["v168"] + 1.5
    assert abs(p.median_per_tile_us["v149"] / 2 / p.median_per_tile_us["v168"] - 1) < 0.05  # two consumers
    assert [(t, over) for t, over, _ in HOPPER_TMA_DEFAULT["fp8"]] == [(128, True), (32, False)]
    assert measured.round54_run({"bench": ["missing.csv"], "timeline": ("a", "b")}) is None


def test_committed_round_55_rows_say_what_the_notes_say():
    """measured.round55_run reads round 55's committed rows (an H100), in kernel and fresh mode: v170 (v143 with the
    two consumers merged in shared memory: one partial a program) is >= 1.9% under v143 at bs32 / bs64 / bs256-kv8192
    at the default's program counts, both rounds - the rule that made it HOPPER_WS_DEFAULT's MXFP4 kernel; fp8 v168 at
    the rule's split count (one program an SM) is >= 4% under twice that count; the timelines put v170's gain at the
    end (makespan shorter) and outside the split kernel (>= 1.5 us less: half the partials to merge, or none and no
    reduce at one program); campaign 28 (v170 the default) has a lower best-format geomean than campaign 27 with v170
    the best kernel at the three kv8192 shapes it changes."""
    from mla.analysis import measured
    from mla.kernels.triton.variants import HOPPER_WS_DEFAULT

    assert HOPPER_WS_DEFAULT["mxfp4"].startswith("v170_")
    for mode in ("kernel", "fresh"):
        run = measured.round55_run(mode=mode)
        assert run is not None, "round 55's rows are committed under data/measured/h100/"
        ab, sp, ph, camp = run
        assert set(ab["device"]) == {"NVIDIA H100 80GB HBM3"} and (ab["rounds"] == 2).all()
        assert len(ab) == 3 and (ab.pct < -1.9).all(), ab
        r = sp.set_index(["case", "programs"]).pct
        assert r[("bs32-kv8192-q1-h16", 8)] > 4 and r[("bs64-kv8192-q1-h16", 4)] > 4
        long = [c for c in measured.LEADERBOARD_CASES if c.endswith("kv8192-q1-h16") and not c.startswith("bs4-")]
        assert list(camp.loc[long, "kernel_campaign28"]) == ["v170"] * 3
        assert list(camp.loc[long, "kernel_campaign27"]) == ["v143"] * 3
        assert camp.loc["geomean", "us_campaign28"] < camp.loc["geomean", "us_campaign27"]
    p = ph.set_index(["case", "kernel"])
    for case in ("bs32-kv8192-q1-h16", "bs256-kv8192-q1-h16"):
        assert p.makespan_us[(case, "v170")] < p.makespan_us[(case, "v143")]
        assert p.outside_us[(case, "v170")] < p.outside_us[(case, "v143")] - 1.5
    assert measured.round55_run({"bench": ["missing.csv"], "splits": "x", "timelines": [], "campaigns": ()}) is None


def test_committed_round_56_rows_say_what_the_notes_say():
    """measured.round56_run reads round 56's committed timeline (an H100): at bs256-kv1024 (256 programs, two an SM, 16
    tiles each) fp8 v160's SM takes a tile in the time one program an SM takes one at bs32-kv8192 (within 5%: the
    loop runs at the memory's rate, two programs add no throughput), its prologue and first wait are longer than at
    one program an SM (the first wave's bytes), and the kernel is within 10% of round 50's plain read of its bytes;
    MXFP4 v159 stays >= 1.3x its read (its loop, not its bytes, binds)."""
    from mla.analysis import measured

    run = measured.round56_run()
    assert run is not None, "round 56's rows are committed under data/measured/h100/issue10/"
    ph, gap = run
    p = ph.set_index(["case", "kv_format"])
    long, one = p.loc[("bs256-kv1024-q1-h16", "fp8")], p.loc[("bs32-kv8192-q1-h16", "fp8")]
    assert (long.programs, long.max_co_resident, one.max_co_resident) == (256, 2, 1)
    assert abs(long.per_tile_per_sm_us / one.per_tile_per_sm_us - 1) < 0.05
    assert long.median_first_wait_us > one.median_first_wait_us + 2
    g = gap.set_index("kv_format").ratio
    assert g["fp8"] < 1.10 and g["mxfp4"] > 1.3
    assert measured.round56_run({"timeline": ("missing.csv.gz", "x"), "one_per_sm": ("a", "b")}) is None


def test_committed_round_62_rows_say_what_the_notes_say():
    """measured.round62_run reads campaign 30 (an H100, the head's default call at 2fee4a0) against campaign 28 (round
    55's defaults): the same 24 (case, format, kernel) rows checked in both, each within 1% in kernel mode and 2% in
    fresh mode (rounds 59-61's per-call validation adds nothing measurable); Triton's best-format geomean under
    FlashInfer's from the same run by more than 1.5x in kernel and fresh mode."""
    from mla.analysis import measured

    run = measured.round62_run()
    assert run is not None, "round 62's rows are committed under data/measured/h100/"
    same, geo = run
    assert len(same) == 24 and set(same.kv_format) == {"bf16", "fp8", "mxfp4"}
    assert ((same.kernel_ratio - 1).abs() < 0.01).all() and ((same.fresh_ratio - 1).abs() < 0.02).all()
    g = geo.set_index(["campaign", "backend"])
    for mode in ("kernel", "fresh"):
        assert g.loc[("campaign30", "flashinfer"), mode] > 1.5 * g.loc[("campaign30", "triton"), mode]
        assert abs(g.loc[("campaign30", "triton"), mode] / g.loc[("campaign28", "triton"), mode] - 1) < 0.01
    assert measured.round62_run({"before": "missing.csv", "head": "x", "flashinfer": "y"}) is None


def test_committed_round_63_rows_say_what_the_notes_say():
    """measured.round63_run reads round 63's committed rows (an H100): fp8 v168 with the one-launch fused reduce is
    slower than with the tile reduce in both rounds at bs32-kv8192 (by 2-3%) and bs64-kv8192 (by under 1.5%), so the
    default keeps the tile reduce; the timeline puts the loss in the epilogue (the merge at each element's tail) while
    the time outside the split kernel barely moves (under 1 us saved); the read probe moved ~4% between two runs of one
    session, which moved the same kernel time from 71.6% to 74.6% of it; across four processes on one card (r63c) the
    probe spans under 3.5% and the kernel times 0.2%, and fp8 at bs32-kv8192 stays under 75% of every probe while
    bs64-kv8192 stays over it."""
    from mla.analysis import measured

    run = measured.round63_run()
    assert run is not None, "round 63's rows are committed under data/measured/h100/issue10/"
    ab, ph, sp = run
    assert len(ab) == 4 and set(ab.groupby("case").size()) == {2}
    bs32, bs64 = ab[ab.case == "bs32-kv8192-q1-h16"], ab[ab.case == "bs64-kv8192-q1-h16"]
    assert ((bs32.kernel_pct > 2) & (bs32.kernel_pct < 3)).all() and (bs32.fresh_pct > 1).all()
    assert ((bs64.kernel_pct > 0) & (bs64.kernel_pct < 1.5)).all()
    assert abs(bs32.tile_us.max() / bs32.tile_us.min() - 1) < 0.005  # the same kernel time ...
    assert bs32.tile_pct_read.min() < 72 and bs32.tile_pct_read.max() > 74  # ... read against two probes
    p = ph.set_index("reduce")
    assert (p.launches["tile"], p.launches["fused"]) == (2, 1)
    assert p.makespan_us["fused"] - p.makespan_us["tile"] > 1.5
    assert p.median_epilogue_us["fused"] > p.median_epilogue_us["tile"] + 0.5
    assert 0 < p.outside_us["tile"] - p.outside_us["fused"] < 1
    assert sp.run_id.nunique() == 4 and len(sp) == 8
    assert sp.read_gbs.max() / sp.read_gbs.min() - 1 < 0.035
    for case, g in sp.groupby("case"):
        assert g.kernel_us.max() / g.kernel_us.min() - 1 < 0.002
        assert (g.kernel_pct_read < 75).all() if case.startswith("bs32") else (g.kernel_pct_read > 75).all()
    assert measured.round63_run({"ab": "missing.csv", "spread": "x", "timelines": {}}) is None


def test_committed_variant_sweeps_at_the_rules_counts_say_what_the_notes_say():
    """measured.h100_variant_run reads notebook 04's five variant lines on H100s: round 70's three early lines and round
    71's two later-generation lines at num_splits=kernel, with round 67's default call: 7 bf16, 18 fp8 and 17 MXFP4
    variants at both shapes. At both shapes the sweep's fastest fp8 / MXFP4 kernel is the default call's kernel and
    within 2% of its time (three H100 sessions). measured.split_count_moves: against round 70's same lines at the
    bench's two programs an SM, exactly five kernels moved, all at bs32-kv8192 and 5-18% faster; every other row
    repeats round 70 within 2%. round70_run's layout (ROUND70_RUN) still reads, every kernel at the bench's count."""
    from mla.analysis import measured

    run = measured.h100_variant_run()
    assert run is not None, "rounds 70-71's rows are committed under data/measured/h100/"
    tabs, default = run
    assert {f: t.shape[1] for f, t in tabs.items()} == {"bf16": 7, "fp8": 18, "mxfp4": 17}
    assert all(t.notna().all().all() for t in tabs.values())  # every variant ran and passed its check at both shapes
    d = default.set_index(["case", "kv_format"])
    assert len(d) == 6 and (d.splits.loc["bs256-kv8192-q1-h16"] == 1).all()
    assert (d.splits.loc["bs32-kv8192-q1-h16"].loc[["fp8", "mxfp4"]] == 4).all()
    for case in ("bs32-kv8192-q1-h16", "bs256-kv8192-q1-h16"):
        for f in ("fp8", "mxfp4"):
            best = tabs[f].loc[case]
            assert best.idxmin().split("_")[0] == d.loc[(case, f), "kernel"], (case, f)
            assert abs(best.min() / d.loc[(case, f), "us"] - 1) < 0.02, (case, f)
    moves = measured.split_count_moves()
    mv = moves[moves.moved]
    assert sorted(zip(mv.kv_format, mv.kernel)) == [("fp8", "v149"), ("fp8", "v168"), ("fp8", "v169"),
                                                    ("mxfp4", "v143"), ("mxfp4", "v170")]
    assert (mv.case == "bs32-kv8192-q1-h16").all() and mv.change_pct.between(-18, -5).all()
    assert len(moves) == 22 and (moves[~moves.moved].change_pct.abs() < 2).all()
    old_tabs, old_default = measured.h100_variant_run(measured.ROUND70_RUN)
    assert {f: t.shape[1] for f, t in old_tabs.items()} == {"bf16": 7, "fp8": 18, "mxfp4": 17}
    for f in ("fp8", "mxfp4"):  # at the bench's count the default call beat every fp8 / MXFP4 row at bs32-kv8192
        assert d.loc[("bs32-kv8192-q1-h16", f), "us"] < old_tabs[f].loc["bs32-kv8192-q1-h16"].min()
    assert measured.h100_variant_run({"sweeps": ("missing.csv",), "default": "x"}) is None
    assert measured.split_count_moves({"sweeps": ("missing.csv",), "default": "x", "before": ("missing.csv",)}) is None
    sweeps = measured.ROUND71_RUN["sweeps"]
    with pytest.raises(ValueError, match="no checked default-call"):  # a sweep file holds no default-call rows
        measured.h100_variant_run({"sweeps": sweeps, "default": sweeps[0]})


def test_committed_bs4_kv1024_cold_ratios_say_what_the_notes_say():
    """measured.tiny_cold_by_floor reads issue 10's bs4-kv1024 rows of every committed campaign on today's call path
    (H200 11-23, H100 24-30): README and notes-triton "Round 72" say that every run in which some format met 1.3x cold
    had a graph floor of 18 us or more, and that in the four quiet-host runs (floors 10.1-10.7 us: H200 18, 21, 22, H100
    27) cold - floor - kernel is -3.3..+2.2 us but for MXFP4 in 18 and fp8 in 21. No committed run has
    graph_floor_kernel_us, so no row has a least; ``since`` widens the set to the campaigns before decode's memo."""
    from mla.analysis import measured

    t = measured.tiny_cold_by_floor()
    runs = t.groupby(["device", "campaign"]).agg(floor=("graph_floor_us", "first"), best=("cold_ratio", "min"))
    assert len(runs) == 19 and set(t.kv_format) == {"bf16", "fp8", "mxfp4"} and len(t) == 57
    assert sorted(runs.index) == sorted([("h200", n) for n in range(11, 24)] + [("h100", n) for n in (24, 25, 26, 27, 28, 30)])
    met = runs[runs.best <= 1.3]
    assert sorted(met.index) == [("h100", 24), ("h100", 25), ("h100", 26), ("h100", 28),
                                 ("h200", 14), ("h200", 15), ("h200", 16), ("h200", 20)]
    assert met.floor.min() >= 18.0 and (runs[runs.floor < 18.0].best > 1.3).all()
    quiet = t[t.set_index(["device", "campaign"]).index.isin([("h200", 18), ("h200", 21), ("h200", 22), ("h100", 27)])]
    assert quiet.graph_floor_us.between(10.0, 10.8).all() and len(quiet) == 12
    slow = quiet[((quiet.campaign == 18) & (quiet.kv_format == "mxfp4")) | ((quiet.campaign == 21) & (quiet.kv_format == "fp8"))]
    assert slow.gap_us.between(8.5, 9.5).all() and len(slow) == 2
    rest = quiet.drop(slow.index)
    assert rest.gap_us.min() == pytest.approx(-3.3, abs=0.05) and rest.gap_us.max() == pytest.approx(2.2, abs=0.05)
    assert t.graph_floor_kernel_us.isna().all() and t.lowest_ratio.isna().all()
    assert (t.gap_us - (t.cold_us - t.graph_floor_us - t.kernel_us)).abs().max() < 1e-9
    everything = measured.tiny_cold_by_floor(since={})
    assert everything.groupby(["device", "campaign"]).ngroups == 27 and everything.campaign.min() == 3
    assert measured.tiny_cold_by_floor(devices=("mi355x",)) is None


def test_q_first_at_the_default_split_counts_across_sessions():
    """measured.q_first_default_splits: campaign 24 (v158 / v159) against round 50's default-plan rows at the same
    split counts; the unchanged kernels (v149 / v143) within 3% (the control), fp8's new kernel >= 5% faster on the
    five shapes where it is the default's, MXFP4's slower at bs4-kv1024 - the notes' table."""
    from mla.analysis import measured

    t = measured.q_first_default_splits()
    assert t is not None and len(t) == 16
    control = t[~t.changed]
    assert len(control) == 5 and ((control.ratio - 1).abs() < 0.03).all()
    fp8 = t[t.changed & (t.kv_format == "fp8")]
    assert len(fp8) == 6 and (fp8[fp8.case != "bs256-kv8192-q1-h16"].ratio < 0.95).all()
    mx = t[t.changed & (t.kv_format == "mxfp4")].set_index("case").ratio
    assert mx["bs4-kv1024-q1-h16"] > 1.0 and mx["bs64-kv1024-q1-h16"] < 0.95
    assert measured.q_first_default_splits({"new": "missing.csv", "old": "x"}) is None


def test_variant_ab_pairs_rows_of_one_file_only_and_skips_failed_checks():
    """measured.variant_ab: a pair is formed inside one source file (never across runs), from its checked rows,
    averaged over the rounds; a file with only one side of a pair gives nothing for it."""
    import pandas as pd

    from mla.analysis import measured

    def row(src, v, us, ok=True, l2=1e-3):
        return dict(source_csv=src, case="c", kv_format="fp8", variant=f"{v}_n64", status="ok", check_ok=ok,
                    kernel_median_us=us, fresh_median_us=us + 1, rel_l2_fmt=l2, device="d")

    df = pd.DataFrame([row("a", "v1", 10.0), row("a", "v2", 8.0), row("a", "v2", 9.0), row("a", "v1", 99.0, ok=False),
                       row("b", "v1", 50.0), row("c", "v2", 1.0, l2=2e-3), row("c", "v1", 2.0)])
    t = measured.variant_ab(df, pairs=(("v1", "v2"),))
    assert list(t.source_csv) == ["a", "c"]
    a = t.iloc[0]
    assert (a.base_us, a.new_us, a.rounds) == (10.0, 8.5, 1) and abs(a.ratio - 0.85) < 1e-12 and a.same_rel_l2
    assert not t.iloc[1].same_rel_l2
    assert measured.variant_ab(df, pairs=(("v1", "v2"),), mode="fresh").iloc[0].new_us == 9.5


def test_ablation_chain_reads_one_compilers_counts_and_names_each_times_file(rows):
    """Notebook 04's chain: the SASS counts of one compiler (the device image's, measured.load_static's default),
    a mixed table refused; each measured step names the file of its time, the row variant_sweep took."""
    sm90 = measured.load_static("sm90")
    chain = manifest.ablation_chain(rows, sm90)
    assert chain is not None and set(chain.compiler) == {f"triton {measured.DEVICE_TRITON['sm90']}"}
    timed = chain.dropna(subset=["kernel_us"])
    assert (timed.source_csv != "").all() and timed.pct_read_bw.notna().all()
    v141 = chain[chain.variant.str.startswith("v141_")].iloc[0]
    assert v141.source_csv.endswith("gen3-r33.csv") and abs(v141.kernel_us - 305.824) < 1e-3
    for f, g in timed.groupby("kv_format"):  # the file named holds that time for that variant and shape
        used = measured.variant_sweep_rows(rows, f, "kernel").set_index(["case", "variant"])
        for r in g.itertuples():
            assert used.loc[(r.case, r.variant), "kernel_median_us"] == r.kernel_us
            assert used.loc[(r.case, r.variant), "source_csv"] == r.source_csv
    both = pd.concat([sm90, measured.load_static("sm90", triton="newest")], ignore_index=True)
    with pytest.raises(ValueError, match="one compiler"):
        manifest.ablation_chain(rows, both)


# --- notebook 05 on the manifest's rows: which runs, which method, which reference --------------------
def test_shootout_ranks_each_entry_by_one_method_and_never_copies_the_default(rows):
    """Fresh where an entry's run measured it on every shape, else cold (torch's campaign-2 run has no fresh
    mode); with swept_only, a '(best config)' entry only where a sweep at the default rows' commit exists."""
    long = measured.shootout(rows, ("fresh", "cold"), swept_only=True)
    meth = long.groupby("entry").method.agg(set)
    assert (meth.map(len) == 1).all(), "an entry mixes methods across shapes"
    lb = rows[(rows.purpose == "leaderboard") & (rows.status == "ok")]
    for e, m in meth.items():
        b = e.split()[0]
        has_fresh = lb[lb.backend == b].fresh_median_us.notna().all()
        assert m == {"fresh" if has_fresh else "cold"}, (e, m)
    fresh = long[long.method == "fresh"]
    assert (fresh.time_us == fresh.fresh_us).all()
    # the manifest's sweeps ran older commits than the default rows: a best config would copy the default
    d = measured.default_rows(rows, "triton")
    other = measured.ok_rows(rows, backend="triton", q_format="bf16")
    other = other[other.git_commit.isin(set(d.git_commit)) & ~measured._default_config(other)]
    assert other.empty and not long.entry.str.contains(r"\(best config\)").any()
    # without swept_only (notebook 02's kernel points) the entry stays, equal to the default, as before
    both = measured.shootout(rows, "cold").pivot_table(index="case", columns="entry", values="time_us")
    assert (both["triton fp8 (best config)"] == both["triton fp8 (default)"]).all()


def test_speedups_compare_with_flashinfers_fastest_format_per_shape_and_mode(rows):
    sp = measured.speedups(rows, "triton", "flashinfer", modes=("kernel", "fresh", "cold"))
    fi = measured.default_rows(rows, "flashinfer")
    tri = measured.default_rows(rows, "triton")
    fast = sp[sp.vs == "fastest"]
    assert len(fast) == 3 * 3 * 8  # every mode x Triton format x shape, MXFP4 included
    for r in fast.itertuples():
        f = fi[fi.case == r.case].set_index("kv_format")[f"{r.mode}_median_us"]
        t = tri[(tri.case == r.case) & (tri.kv_format == r.kv_format)][f"{r.mode}_median_us"].iloc[0]
        assert r.ref_format == f.idxmin() and r.speedup == pytest.approx(f.min() / t)
    same = sp[sp.vs == "same format"]
    assert set(same.kv_format) == {"bf16", "fp8"} and (same.kv_format == same.ref_format).all()  # no MXFP4 stand-in
    # on these runs FlashInfer's bf16 is its faster format on every shape and mode
    assert set(fast.ref_format) == {"bf16"}
    assert set(sp.source_csv) | set(sp.ref_source_csv) == {"data/measured/h200/campaign23-triton.csv",
                                                          "data/measured/h200/campaign23-flashinfer.csv"}


def test_host_overhead_carries_what_explains_a_negative_host_time(rows):
    ho = measured.host_overhead(rows, measured.load_anchors()[0])
    neg = ho[ho.host_us < 0]
    assert len(neg) and (neg.backend == "torch").all()
    # campaign 2's kernel mode ran back to back (no pacing): the row's own method says so
    assert not neg.kernel_method.str.contains("paced").any() and (neg.kernel_n > 0).all()
    assert ho[ho.backend != "torch"].kernel_method.str.contains("paced").all()
    assert ho.host_share.dropna().between(-1, 1).all()
    runs = measured.run_summary(rows, ho.run_id).set_index("backend")
    assert runs.host_floor_us.round(1).to_dict() == {"torch": 17.2, "flashinfer": 41.2, "triton": 23.5}
    assert "fresh" not in runs.loc["torch", "modes"] and "kernel mode unpaced" in measured.describe_run(
        next(runs.reset_index().itertuples()))
