"""Issues 9 and 10's targets (mla/analysis/targets.py): README's scoreboard is the rows' verdict, and
the verdicts move when the rows do."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mla.analysis import manifest, targets
from mla.bench.schema import load_results

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def rows():
    r = manifest.rows("h200")
    if r is None:
        pytest.skip("no measured H200 rows in this tree")
    return r


def _board(rows):
    its = targets.items(rows)
    return targets.scoreboard(its).set_index("target"), its


def _set(rows, case, fmt, **values):
    """A copy of ``rows`` with the Triton leaderboard row of (case, fmt) changed."""
    out = rows.copy()
    m = ((out.backend == "triton") & (out.purpose == "leaderboard") & (out.case == case)
         & (out.kv_format == fmt) & (out.q_format == "bf16"))
    assert m.sum() == 1, (case, fmt, int(m.sum()))
    for k, v in values.items():
        out.loc[m, k] = v
    return out


def test_readme_scoreboard_is_what_the_manifest_rows_give(rows):
    board, its = _board(rows)
    block = targets.readme_block(README.read_text())
    assert block is not None, f"README lost its scoreboard markers ({targets.README_BEGIN!r} .. {targets.README_END!r})"
    want = targets.markdown(board.reset_index(), its)
    assert block == want, ("README's scoreboard differs from the manifest's rows: paste the output of "
                           "`python -m mla report --targets --markdown` between its markers")


def test_every_target_is_evaluated_on_the_leaderboard_rows(rows):
    board, its = _board(rows)
    assert list(board.index) == [t.key for t in targets.TARGETS]
    assert (board.status != "no rows").all(), board[board.status == "no rows"]
    # each counted item is the comparison it names
    counted = its[its.met.notna()]
    for r in counted.itertuples():
        want = r.value <= r.limit if r.op == "<=" else r.value >= r.limit if r.op == ">=" else r.value < r.limit
        assert r.met == want, r
    # FlashInfer's geomeans sit beside the geomean target and never count
    fi = its[its.kv_format == "flashinfer best"]
    assert len(fi) == 3 and fi.met.isna().all()
    assert board.loc["geomean", "items"] == 3


def test_verdicts_follow_the_rows(rows):
    big = targets.BIG
    # MXFP4 at 240 us and 65% of the read probe would meet its target
    board, _ = _board(_set(rows, big, "mxfp4", kernel_median_us=240.0, kernel_pct_read_bw=65.0))
    assert board.loc["mxfp4-bs256", "status"] == "met"
    # fp8 at 340 us keeps its read share but misses the time: one of two items
    board, _ = _board(_set(rows, big, "fp8", kernel_median_us=340.0))
    assert board.loc["fp8-bs256", "status"] == "partial" and board.loc["fp8-bs256", "met_items"] == 1
    # a failed check (the row has no times then) is a missed accuracy target, whatever the other rows' rel_l2
    nan = float("nan")
    failed = _set(rows, "bs32-kv1024-q1-h16", "fp8", status="failed", check_ok=False, kernel_median_us=nan,
                  cold_median_us=nan, fresh_median_us=nan, warm_median_us=nan)
    board, its = _board(failed)
    assert board.loc["accuracy", "status"] == "partial"
    assert "a shape failed its check" in board.loc["accuracy", "measured"]
    # a rel_l2 over 1e-2 on a passing row misses too
    board, _ = _board(_set(rows, "bs4-kv8192-q1-h16", "mxfp4", rel_l2_fmt=0.02))
    assert board.loc["accuracy", "status"] == "partial" and "2.0e-02" in board.loc["accuracy", "measured"]


def test_order_counts_shapes_and_each_comparison_once(rows):
    """Two items per kv8192 shape (MXFP4 vs fp8, fp8 vs bf16); the status counts shapes, a shape meeting the
    order only when both of its comparisons do ("partial (k of 4 shapes)")."""
    base, its = _board(rows)
    o = its[its.target == "order-kv8192"]
    assert len(o) == 2 * len(targets.KV8192)
    whole = o.groupby("case").met.all()
    assert base.loc["order-kv8192", "items"] == len(targets.KV8192)
    assert base.loc["order-kv8192", "met_items"] == int(whole.sum())
    if base.loc["order-kv8192", "status"] == "partial":
        assert f"({int(whole.sum())} of {len(targets.KV8192)} shapes)" in targets.markdown(base.reset_index(), its)
    case = "bs32-kv8192-q1-h16"
    r = o[o.case == case].set_index("kv_format")
    bf16_us = float(r.loc["fp8", "limit"])  # fp8's limit is bf16's time, MXFP4's is fp8's
    assert bool(r.loc["mxfp4", "met"]) and bool(r.loc["fp8", "met"]), "campaign 22: the order holds at bs32-kv8192"
    board, its2 = _board(_set(rows, case, "fp8", kernel_median_us=bf16_us + 1.0))
    r2 = its2[(its2.target == "order-kv8192") & (its2.case == case)].set_index("kv_format")
    assert not bool(r2.loc["fp8", "met"]) and bool(r2.loc["mxfp4", "met"])  # fp8 now over bf16, MXFP4 under fp8
    assert board.loc["order-kv8192", "met_items"] == base.loc["order-kv8192", "met_items"] - 1  # the shape, once
    # a second broken comparison at a shape that already misses changes nothing
    miss = next(c for c, ok in whole.items() if not ok)
    r3 = o[o.case == miss].set_index("kv_format")
    board3, _ = _board(_set(rows, miss, "fp8", kernel_median_us=float(r3.loc["fp8", "limit"]) + 1.0,
                            kernel_pct_read_bw=1.0))
    assert board3.loc["order-kv8192", "met_items"] == base.loc["order-kv8192", "met_items"]


def test_bs4_kv1024_ratio_uses_the_runs_graph_floor(rows):
    board, its = _board(_set(rows, targets.TINY, "bf16", fresh_median_us=1.0, cold_median_us=1.0))
    b = its[(its.target == "bs4-kv1024") & (its.kv_format == "bf16")]
    assert set(b["mode"]) == {"cold", "fresh"} and b.met.all()
    floor = rows[(rows.backend == "triton") & (rows.purpose == "leaderboard")].graph_floor_us.iloc[0]
    assert b.value.iloc[0] == pytest.approx(1.0 / floor)
    assert f"of a {floor:.1f}-us floor" in board.loc["bs4-kv1024", "measured"]  # the ratio names its floor


def test_bs4_kv1024_cold_states_its_least_and_its_paired_ratio_where_the_run_has_them(rows):
    """A cold call runs the host's work and then the device's, so its least is the graph floor's host part plus the
    kernel (``targets.cold_lowest_us``); ``cold_floor_us`` is the floor timed beside each cold sample. Runs from
    before these columns (campaign 23) print neither (README's block stays theirs); a run with them says both beside
    the ratios, per format, cold only, and the verdict still reads graph_floor_us (the issue's column)."""
    board, its = _board(rows)
    assert "cold's least" not in board.loc["bs4-kv1024", "measured"]
    assert "interleaved floor" not in board.loc["bs4-kv1024", "measured"]
    assert its[its.target == "bs4-kv1024"][["lowest", "paired"]].isna().all().all()
    moved = rows
    for fmt in targets.FORMATS:
        moved = _set(moved, targets.TINY, fmt, graph_floor_kernel_us=4.0, cold_floor_us=10.0)
    board, its = _board(moved)
    b = its[its.target == "bs4-kv1024"]
    floor = b.floor_us.iloc[0]
    for r in b.itertuples():
        row = moved[(moved.backend == "triton") & (moved.purpose == "leaderboard") & (moved.case == targets.TINY)
                    & (moved.kv_format == r.kv_format) & (moved.q_format == "bf16")].iloc[0]
        assert targets.cold_lowest_us(row) == pytest.approx(floor - 4.0 + row.kernel_median_us)
        if r.mode == "cold":
            assert r.lowest == pytest.approx((floor - 4.0 + row.kernel_median_us) / floor)
            assert r.paired == pytest.approx(row.cold_median_us / 10.0)
        else:
            assert r.lowest != r.lowest and r.paired != r.paired  # NaN: the fresh call overlaps the flush
    want = " / ".join(f"{v:.2f}" for v in b[b["mode"] == "cold"]["lowest"])
    assert f"cold's least with these kernels {want}x" in board.loc["bs4-kv1024", "measured"]
    want = " / ".join(f"{v:.2f}" for v in b[b["mode"] == "cold"]["paired"])
    assert f"cold against each row's interleaved floor {want}x" in board.loc["bs4-kv1024", "measured"]
    assert board.loc["bs4-kv1024", "status"] == targets.scoreboard(targets.items(rows)).set_index(
        "target").loc["bs4-kv1024", "status"]  # a statement beside the verdict, not part of it


def test_no_triton_rows_give_none():
    assert targets.items(None) is None
    assert targets.scoreboard(None) is None
    assert targets.readme_block("no markers here") is None


def test_cli_prints_the_scoreboard_and_refuses_mixed_selections(capsys):
    from mla.cli import main

    assert main(["report", "--targets"]) == 0
    out = capsys.readouterr().out
    for t in targets.TARGETS:
        assert t.text in out
    assert main(["report", "--targets", "--markdown"]) == 0
    assert targets.README_BEGIN not in capsys.readouterr().out  # the block's body only
    assert main(["report", "--markdown"]) == 2
    assert "--markdown goes with --targets" in capsys.readouterr().err
    assert main(["report", "--targets", "--case", "bs4-kv1024-q1-h16"]) == 2
    assert "--targets reads whole campaigns" in capsys.readouterr().err


def test_cli_judges_a_campaign_of_another_device_by_its_own_floors(capsys):
    """``report --targets FILES``: the same rules on one device's campaign files (an H100's campaign 30), each floor
    its own run's, with a note that the issues state the targets on an H200; files of two devices are refused."""
    from mla.cli import main

    h100 = [str(ROOT / f"data/measured/h100/campaign30-{b}.csv") for b in ("triton", "flashinfer")]
    assert main(["report", "--targets", "--markdown", *h100]) == 0
    cap = capsys.readouterr()
    assert "these rows ran on NVIDIA H100 80GB HBM3" in cap.err
    rows = pd.concat([load_results(f) for f in h100], ignore_index=True)
    its = targets.items(rows)
    assert cap.out.strip() == targets.markdown(targets.scoreboard(its), its,
                                               "python -m mla report --targets " + " ".join(h100))
    assert set(its["run_id"]) == set(rows["run_id"]) and (its["git_commit"] == rows["git_commit"].iloc[0]).all()
    floors = its[its["target"] == "bs4-kv1024"]["floor_us"]
    assert floors.notna().all() and floors.nunique() == 1
    assert abs(floors.iloc[0] - rows[rows["backend"] == "triton"]["graph_floor_us"].iloc[0]) < 1e-9
    h200 = str(ROOT / "data/measured/h200/campaign23-triton.csv")
    assert main(["report", "--targets", h100[0], h200]) == 2
    assert "one device's rows; these files hold NVIDIA H100 80GB HBM3, NVIDIA H200" in capsys.readouterr().err
    assert main(["report", "--targets", "--manifest", h100[0]]) == 2
    assert "and --manifest with files" in capsys.readouterr().err
    assert main(["report", "--targets", "--device", "h200", *h100]) == 2
    assert "--device picks the manifest's folder" in capsys.readouterr().err
    # two campaigns of one device (two commits): the latest row per key would mix them silently
    assert main(["report", "--targets", str(ROOT / "data/measured/h100/campaign28-triton.csv"), h100[1]]) == 2
    assert "one campaign (one commit); these files hold rows of 2 commits (2fee4a0, c2e354f)" in capsys.readouterr().err
    assert main(["report", "--targets", str(ROOT / "data/measured/h100/nothing-*.csv")]) == 2
    assert "no files match" in capsys.readouterr().err
    # an A/B file is not a campaign (4 of the 8 shapes), and a log is not a result CSV: both named, exit 2
    assert main(["report", "--targets", str(ROOT / "data/measured/h100/issue10/tma-long-r54a.csv")]) == 2
    err = capsys.readouterr().err
    assert "judges a whole campaign: these files have no default-config Triton row at 4 of the 8" in err
    log = str(ROOT / "data/measured/h100/campaign30.log")
    assert main(["report", "--targets", log]) == 2
    assert f"{log}: not a result CSV" in capsys.readouterr().err
    assert main(["report", "--targets", h200]) == 0
    assert "these rows ran on" not in capsys.readouterr().err


def test_the_read_share_line_names_the_probe_it_was_read_against(rows):
    """The read share is kernel time against the run's own read probe, which moves between runs (round 63: 2.9% across
    four processes on one H100), so the line says which probe: one value, or the range when the rows' runs differ."""
    board, its = _board(rows)
    rs = its[its.target == "read-share"]
    line = board.loc["read-share", "measured"]
    lo, hi = rs.probe_gbs.min(), rs.probe_gbs.max()
    assert lo > 1000 and (f"probe {lo:.0f} GB/s" in line if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f}" in line)
    moved = _set(rows, "bs32-kv8192-q1-h16", "fp8", read_gbs=lo * 0.97)
    line = targets.scoreboard(targets.items(moved)).set_index("target").loc["read-share", "measured"]
    assert f"probes {lo * 0.97:.0f}-{hi:.0f} GB/s" in line


def _h100_manifest(tmp_path, monkeypatch, *csvs):
    """data/manifest.toml as it is, plus [[run]] leaderboard entries for the H100 runs in ``csvs``
    (data/measured/h100/ file names), made the manifest every loader reads."""
    runs = []
    for name in csvs:
        r = load_results(str(ROOT / "data/measured/h100" / name))
        backend = str(r["backend"].iloc[0])
        for rid in dict.fromkeys(r["run_id"]):
            runs.append(f'\n[[run]]\ndevice = "h100"\nrun_id = "{rid}"\npurpose = "leaderboard"\n'
                        f'backend = "{backend}"\n')
    p = tmp_path / "manifest.toml"
    p.write_text((ROOT / "data/manifest.toml").read_text() + "".join(runs))
    monkeypatch.setattr(manifest, "default_path", lambda: p)
    return manifest.load(p)


def test_cli_device_path_judges_one_campaign_or_refuses(capsys):
    """``report --targets --device h100``: the manifest lists no H100 leaderboard run, so there is no campaign to
    judge; it used to read every current H100 row (four runs of three commits: issue 9's accuracy "missed" where
    campaign 30 alone says "met", and no H100 note). It refuses now, naming the campaign files to pass instead."""
    from mla.cli import main

    assert not manifest.load().run_ids("h100", "leaderboard")  # the premise: no H100 leaderboard run listed
    assert main(["report", "--targets", "--device", "h100"]) == 2
    err = capsys.readouterr().err
    assert "lists none for 'h100'" in err
    assert "python -m mla report --targets data/measured/h100/campaign30-*.csv" in err
    with pytest.raises(ValueError, match="nor does data/measured/nosuchdevice/ hold a whole campaign"):
        targets.manifest_campaign("nosuchdevice")  # (no alternative to name)
    # the alternative it names gives its verdict: campaign 30 meets issue 9's accuracy target
    files = sorted(str(p) for p in (ROOT / "data/measured/h100").glob("campaign30-*.csv"))
    camp = targets.campaign(pd.concat([load_results(f) for f in files], ignore_index=True))
    assert targets.scoreboard(targets.items(camp.rows)).set_index("target").loc["accuracy", "status"] == "met"
    assert camp.commit == "2fee4a0" and "NVIDIA H100" in camp.note
    # the H200's manifest runs: one campaign (campaign 23), judged, no note
    assert main(["report", "--targets", "--device", "h200"]) == 0
    assert "these rows ran on" not in capsys.readouterr().err
    h200 = targets.manifest_campaign("h200")
    assert h200.commit == "395bbf8" and h200.note is None and set(h200.rows.backend) == {"triton", "flashinfer"}


def test_manifest_path_applies_the_files_checks(tmp_path, monkeypatch, capsys):
    """The manifest's runs pass the same checks as campaign files (targets.campaign): listed runs of two commits are
    refused, one campaign's runs give the files' verdicts, with the note that they ran on an H100."""
    from mla.cli import main

    man = _h100_manifest(tmp_path, monkeypatch, "campaign28-triton.csv", "campaign30-flashinfer.csv")
    with pytest.raises(ValueError, match=r"one campaign \(one commit\); the manifest's h100 leaderboard runs .* "
                                         r"hold rows of 2 commits \(2fee4a0, c2e354f\)"):
        targets.manifest_campaign("h100", man)
    assert main(["report", "--targets", "--device", "h100"]) == 2
    assert "hold rows of 2 commits (2fee4a0, c2e354f): list one campaign's leaderboard runs" in capsys.readouterr().err

    _h100_manifest(tmp_path, monkeypatch, "campaign30-triton.csv", "campaign30-flashinfer.csv")
    assert main(["report", "--targets", "--device", "h100", "--markdown"]) == 0
    cap = capsys.readouterr()
    assert "these rows ran on NVIDIA H100 80GB HBM3" in cap.err
    files = [str(ROOT / f"data/measured/h100/campaign30-{b}.csv") for b in ("triton", "flashinfer")]
    assert main(["report", "--targets", "--markdown", *files]) == 0
    by_files = capsys.readouterr()
    assert "these rows ran on NVIDIA H100 80GB HBM3" in by_files.err
    head = lambda out: out.strip().splitlines()[:-1]  # noqa: E731 (the last line names the command)
    assert head(cap.out) == head(by_files.out)
    assert cap.out.strip().endswith("`python -m mla report --targets --device h100` prints this table from them.")
