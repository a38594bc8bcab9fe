"""The harness on CPU: statistics, stopping rule, configs/sweeps, schema round trip, the CPU timer,
and the rule that a failed check never yields times."""

from __future__ import annotations

import importlib
import json
import math

import pandas as pd
import pytest
import torch

from mla.backends.base import Backend, Plan
from mla.bench import (COLUMNS, StoppingRule, config_dict, expand_configs, geomean, load_results, parse_assignments,
                       resolve_cases, run_bench, summarize, validate, write_results)
from mla.bench.harness import parse_value
from mla.bench.stats import collect, settle
from mla.bench.timers import time_cpu, validate_modes
from mla.problem import Case
from mla.reference import reference

FAST = StoppingRule(min_runs=3, max_runs=5, max_seconds=0.5, rel_sem=1e-3, kernel_min_seconds=0)
BW = dict(read_gbs=10.0, copy_gbs=20.0)  # skip the probe in tests
TINY = Case(2, 64, seed=3)
reg = importlib.import_module("mla.backends")  # the package (mla.backends is also a function name)
TIME_COLS = [c for c in COLUMNS if c.endswith(("_median_us", "_min_us", "_iqr_us"))]


# --- statistics --------------------------------------------------------------------------------
def test_summarize_known_values():
    st = summarize([4.0, 1.0, 3.0, 2.0, 100.0])
    assert st == dict(median=3.0, min=1.0, iqr=2.0, n=5)  # p25 = 2, p75 = 4


def test_summarize_empty_and_garbage():
    st = summarize([])
    assert st["n"] == 0 and math.isnan(st["median"])
    with pytest.raises(ValueError, match="NaN"):
        summarize([1.0, float("nan")])


def test_geomean():
    assert geomean([1.0, 100.0]) == pytest.approx(10.0)
    assert geomean([2.0, float("nan")]) == pytest.approx(2.0)  # NaN (failed rows) skipped
    assert math.isnan(geomean([]))


@pytest.mark.parametrize("kw, msg", [(dict(min_runs=1), "min_runs"), (dict(min_runs=5, max_runs=4), "max_runs"),
                                     (dict(max_seconds=0), "max_seconds"), (dict(rel_sem=0), "rel_sem"),
                                     (dict(settle_seconds=-0.1), "settle_seconds"),
                                     (dict(kernel_min_seconds=-1.0), "kernel_min_seconds")])
def test_stopping_rule_rejects_bad_settings(kw, msg):
    with pytest.raises(ValueError, match=msg):
        StoppingRule(**kw)


class FakeClock:
    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_collect_stops_on_precision():
    rule = StoppingRule(min_runs=4, max_runs=100, max_seconds=1e9, rel_sem=1e-3)
    assert len(collect(lambda: 5.0, rule, FakeClock(0.0))) == 4  # zero spread: done at min_runs


def test_collect_samples_for_min_seconds_past_the_run_cap_and_the_precision_stop():
    # zero spread and a run cap of 2 stop at 2 samples; with a 1 s window and 0.125 s per clock reading (one
    # reading per check, so n samples have taken 0.125 (n + 1) s when checked) the window reaches 1 s at n = 7
    rule = StoppingRule(min_runs=2, max_runs=2, max_seconds=0.5, rel_sem=1e-3)
    assert len(collect(lambda: 5.0, rule, FakeClock(0.125))) == 2
    assert len(collect(lambda: 5.0, rule, FakeClock(0.125), min_seconds=1.0)) == 7


def test_collect_stops_at_run_cap_when_noisy():
    vals = iter([1.0, 10.0] * 100)
    rule = StoppingRule(min_runs=4, max_runs=9, max_seconds=1e9, rel_sem=1e-3)
    assert len(collect(lambda: next(vals), rule, FakeClock(0.0))) == 9


def test_collect_stops_at_time_cap():
    vals = iter([1.0, 10.0] * 100)
    rule = StoppingRule(min_runs=2, max_runs=100, max_seconds=1.0, rel_sem=1e-3)
    # the clock advances 0.3 s per reading: two readings per sample after the first
    n = len(collect(lambda: next(vals), rule, FakeClock(0.3)))
    assert 2 <= n < 10


def test_cpu_timer_uses_the_clock():
    clock = FakeClock(0.001)  # each reading 1 ms later: every call measures 1000 us
    calls = []
    samples = time_cpu(lambda: calls.append(1), StoppingRule(min_runs=3, max_runs=3), warmup=1, clock=clock)
    assert samples == pytest.approx([1000.0] * 3)
    assert len(calls) == 4  # one warm-up + three timed


def test_modes_validated_against_device():
    assert validate_modes(["cpu"], torch.device("cpu")) == ("cpu",)
    with pytest.raises(ValueError, match="needs a CUDA"):
        validate_modes(["cold"], torch.device("cpu"))
    with pytest.raises(ValueError, match="unknown timing mode"):
        validate_modes(["hot"], torch.device("cpu"))


# --- configs, sweeps, cases ----------------------------------------------------------------------
def test_parse_values_and_assignments():
    assert [parse_value(v) for v in ("8", "0.5", "true", "none", "fa3")] == [8, 0.5, True, None, "fa3"]
    assert parse_assignments(["num_splits=1,2,4"], multi=True) == {"num_splits": [1, 2, 4]}
    assert parse_assignments(["mode=persistent"], multi=False) == {"mode": "persistent"}
    for bad in (["num_splits"], ["2x=1"], ["a=1", "a=2"]):
        with pytest.raises(ValueError):
            parse_assignments(bad, multi=False)


def test_expand_configs_is_a_cartesian_product():
    cfgs = expand_configs({"mode": "p"}, {"num_splits": [1, 2], "BLOCK_N": [32, 64]})
    assert len(cfgs) == 4 and {"mode": "p", "num_splits": 2, "BLOCK_N": 64} in cfgs
    assert expand_configs() == [{}]
    with pytest.raises(ValueError, match="both fixed and swept"):
        expand_configs({"a": 1}, {"a": [1, 2]})


def test_resolve_cases():
    cases = resolve_cases("smoke,bs4-kv1024-q1-h16")
    assert cases[-1].name == "bs4-kv1024-q1-h16" and len(cases) == 6
    with pytest.raises(ValueError):
        resolve_cases("no-such-case")


# --- rows, schema, the correctness gate -----------------------------------------------------------
@pytest.fixture(scope="module")
def torch_rows():
    return run_bench([TINY], ["torch", "flashinfer", "aiter"], kv_formats=["bf16", "mxfp4"], device="cpu",
                     rule=FAST, bandwidth=BW)


def test_torch_rows_are_checked_and_timed(torch_rows):
    ok = torch_rows[torch_rows.backend == "torch"]
    assert list(ok.status) == ["ok", "ok"]
    assert (ok.check_ok == True).all()  # noqa: E712
    assert (ok.cpu_n >= FAST.min_runs).all() and (ok.cpu_median_us > 0).all()
    assert (ok.rel_l2_fmt < 1e-2).all()  # against the same-format reference: kernel error only
    # bandwidth columns follow from io_bytes, the median and the probe
    r = ok.iloc[0]
    assert r.cpu_gbs == pytest.approx(r.io_bytes / (r.cpu_median_us * 1e-6) / 1e9)
    assert r.cpu_pct_read_bw == pytest.approx(100 * r.cpu_gbs / BW["read_gbs"])
    assert r.source_hash and r.run_id and r.device_slug == "cpu"
    # a CPU row names the CPU (its randn differs by vector ISA), not just 'x86_64'
    import platform
    from pathlib import Path

    cpuinfo = Path("/proc/cpuinfo")
    models = [ln.split(":", 1)[1].strip() for ln in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
              if ln.lower().startswith("model name")]
    assert r.device == (f"{models[0]} ({platform.machine()})" if models else platform.machine())


def test_unavailable_backends_become_rows_with_reasons(torch_rows):
    other = torch_rows[torch_rows.backend != "torch"]
    assert other[TIME_COLS].isna().all().all()
    bf16 = other[other.kv_format == "bf16"]
    assert set(bf16.status) == {"unavailable"} and bf16.message.str.contains("NVIDIA GPU|ROCm|not installed|runs on").all()
    mx = other[other.kv_format == "mxfp4"]  # neither takes MXFP4: refused before availability matters
    assert set(mx.status) == {"unsupported"} and mx.message.str.contains("does not support kv_format").all()


def test_schema_round_trip_and_no_clobber(torch_rows, tmp_path):
    path = tmp_path / "r.csv"
    write_results(torch_rows, path)
    back = load_results(str(tmp_path / "*.csv"))
    pd.testing.assert_frame_equal(back, torch_rows, check_dtype=False)
    with pytest.raises(ValueError, match="exists"):
        write_results(torch_rows, path)
    write_results(torch_rows, path, append=True)
    assert len(load_results(path)) == 2 * len(torch_rows)
    assert json.loads(back.config.iloc[0]) == {}
    assert config_dict(back, "plan_config").iloc[0]["variant"] == "torch-bmm-batched"
    assert config_dict(back, "plan_config")[back.status == "unavailable"].eq({}).all()  # no plan built


def test_validate_rejects_leaked_times_and_unchecked_ok(torch_rows):
    bad = torch_rows.copy()
    bad.loc[bad.backend == "flashinfer", "cpu_median_us"] = 1.0
    with pytest.raises(ValueError, match="carry times"):
        validate(bad)
    bad = torch_rows.copy()
    bad.loc[bad.backend == "torch", "check_ok"] = False
    with pytest.raises(ValueError, match="without a passed check"):
        validate(bad)
    with pytest.raises(ValueError, match="missing columns"):
        validate(torch_rows.drop(columns=["rel_l2"]))


class _Fake(Backend):
    """Test backends that compute the wrong thing in three ways."""
    kv_formats = ("bf16",)

    def __init__(self, name, how):
        self.name, self.how = name, how

    def plan(self, data, *, kv_format, q_format, **config):
        out = torch.empty((data[0].shape[0], data[0].shape[1], 512), dtype=torch.bfloat16)
        memo = {}

        def run(d):
            if self.how == "scaled":  # a real bug: 1.5x the right answer
                out.copy_(reference(d) * 1.5)
            elif self.how == "memo":  # right on the first inputs it sees, then replays them
                if "o" not in memo:
                    memo["o"] = reference(d).bfloat16()
                out.copy_(memo["o"])
            # "lazy": never writes its output buffer
            return out

        return Plan(backend=self.name, kv_format=kv_format, q_format=q_format, run=run, outputs=[out])


@pytest.mark.parametrize("how", ["scaled", "lazy", "memo"])
def test_a_failed_check_reports_no_times(monkeypatch, how):
    name = f"fake_{how}"
    monkeypatch.setitem(reg._BACKEND_MODULES, name, "unused")
    monkeypatch.setitem(reg._loaded, name, _Fake(name, how))
    df = run_bench([TINY], [name], kv_formats=["bf16"], device="cpu", rule=FAST, bandwidth=BW)
    row = df.iloc[0]
    assert row.status == "failed" and row.check_ok == False  # noqa: E712
    assert df[TIME_COLS].isna().all().all()
    assert ("timing set" if how == "memo" else "check set") in row.message  # memo passes the first gate
    reg.clear_plans()


def test_unsupported_request_is_a_row_not_a_crash():
    df = run_bench([TINY], ["torch"], kv_formats=["bf16"], configs=[{"num_splits": 2}], device="cpu",
                   rule=FAST, bandwidth=BW)
    assert df.status.iloc[0] == "unsupported" and "num_splits" in df.message.iloc[0]


def test_bad_requests_raise_before_running():
    with pytest.raises(ValueError, match="unknown backend"):
        run_bench([TINY], ["nope"], device="cpu", bandwidth=BW)
    with pytest.raises(ValueError, match="unknown kv_format"):
        run_bench([TINY], ["torch"], kv_formats=["int4"], device="cpu", bandwidth=BW)
    with pytest.raises(ValueError, match="needs a CUDA"):
        run_bench([TINY], ["torch"], modes=["cold"], device="cpu", bandwidth=BW)


# --- CLI -----------------------------------------------------------------------------------------
def _cli(argv):
    """The harness's own entry point (python -m mla.bench): the same subcommands python -m mla has."""
    from mla.bench.__main__ import main

    return main(argv)


def test_cli_bench_writes_then_refuses_to_clobber(tmp_path, capsys):
    out = tmp_path / "b.csv"
    argv = ["bench", "--cases", TINY.name, "--backend", "torch", "--kv-format", "fp8", "--out", str(out),
            "--min-runs", "3", "--max-runs", "4", "--bandwidth-gbs", "10,20", "--no-progress"]
    assert _cli(argv) == 0
    df = load_results(out)
    assert list(df.status) == ["ok"] and df.case.iloc[0] == TINY.name
    assert "per variant" in capsys.readouterr().out
    assert _cli(argv) == 2  # refuses to clobber ...
    assert "exists" in capsys.readouterr().err
    assert _cli(argv + ["--append"]) == 0  # ... unless asked to append
    assert len(load_results(out)) == 2
    assert _cli(["report", str(out)]) == 0


def test_cli_info_lists_every_backend(capsys):
    assert _cli(["info"]) == 0
    text = capsys.readouterr().out
    for name in reg._BACKEND_MODULES:
        assert name in text


# --- GPU timing logic, with the CUDA calls replaced by recorders (no GPU here) -------------------
class _Log(list):
    def add(self, what):
        self.append(what)


@pytest.fixture
def fake_cuda(monkeypatch):
    import mla.bench.timers as T

    log = _Log()

    class Event:
        def __init__(self, enable_timing=False):
            self.name = None

        def record(self):
            log.add("record")

        def synchronize(self):
            log.add("event_sync")

        def elapsed_time(self, other):
            return 0.25  # ms

    monkeypatch.setattr(T.torch.cuda, "Event", Event)
    monkeypatch.setattr(T.torch.cuda, "synchronize", lambda *a: log.add("sync"))
    flush = type("Flush", (), {"flush": lambda self: log.add("flush")})()
    return T, log, flush


def test_cold_flushes_and_syncs_before_every_sample_warm_never_flushes(fake_cuda):
    T, log, flush = fake_cuda
    rule = StoppingRule(min_runs=3, max_runs=3)
    samples = T.time_events(lambda: log.add("call"), rule, flush=flush, warmup=1)
    assert samples == [250.0] * 3
    assert log[1:7] == ["flush", "sync", "record", "call", "record", "event_sync"]  # after 1 warm-up call
    log.clear()
    T.time_events(lambda: log.add("call"), rule, flush=None, warmup=1)
    assert "flush" not in log and log.count("sync") == 3


def test_a_paired_floor_is_timed_like_the_call_right_after_each_sample(fake_cuda):
    """cold_floor_us: the graph floor's replay timed exactly as each cold sample is (flush, sync, events), right
    after it, so the ratio compares two measurements of the same seconds; time_events is the unpaired case."""
    T, log, flush = fake_cuda
    rule = StoppingRule(min_runs=3, max_runs=3)
    samples, floor = T.time_events_paired(lambda: log.add("call"), lambda: log.add("floor"), rule, flush=flush,
                                          warmup=1)
    assert samples == [250.0] * 3 and floor == [250.0] * 3
    assert log[:2] == ["call", "floor"]  # one warm-up of each
    one = ["flush", "sync", "record", "call", "record", "event_sync",
           "flush", "sync", "record", "floor", "record", "event_sync"]
    assert log[2:] == one * 3
    log.clear()
    samples, floor = T.time_events_paired(lambda: log.add("call"), None, rule, flush=flush, warmup=1)
    assert floor == [] and "floor" not in log and len(samples) == 3


def test_kernel_mode_replays_a_graph_without_syncing_after_the_flush(fake_cuda, monkeypatch):
    T, log, flush = fake_cuda
    graph = type("G", (), {"replay": lambda self: log.add("replay")})()
    monkeypatch.setattr(T, "capture_graph", lambda run: graph)
    back_to_back = StoppingRule(min_runs=2, max_runs=2, kernel_min_seconds=0, kernel_idle_ratio=0)
    samples, method = T.time_kernel(lambda: None, back_to_back, flush)
    assert method == "graph-replay-cold" and samples == [250.0, 250.0]
    first = log.index("flush")
    assert log[first:first + 4] == ["flush", "record", "replay", "record"]  # no sync in between


def test_settle_calls_its_step_until_its_time_has_passed():
    calls = []
    assert settle(lambda: calls.append(1), 0.0, FakeClock(0.1)) == 0 and calls == []
    # the clock reads 0.1 s later at every look: looks at 0.2, 0.3, 0.4 are under 0.25 s past the start (0.1)
    assert settle(lambda: calls.append(1), 0.25, FakeClock(0.1)) == 2 and len(calls) == 2


def test_kernel_mode_settles_behind_the_flush_before_its_samples_and_says_so(fake_cuda, monkeypatch):
    T, log, flush = fake_cuda
    graph = type("G", (), {"replay": lambda self: log.add("replay")})()
    monkeypatch.setattr(T, "capture_graph", lambda run: graph)
    clock = FakeClock(0.1)
    monkeypatch.setattr(T.time, "perf_counter", clock)
    rule = StoppingRule(min_runs=2, max_runs=2, settle_seconds=0.25, kernel_min_seconds=0, kernel_idle_ratio=0)
    samples, method = T.time_kernel(lambda: None, rule, flush)
    assert method == "graph-replay-cold, settle 0.25 s" and samples == [250.0, 250.0]
    # three warm-up replays, then the settle's untimed flush + replay + sync steps, then the timed samples
    assert log[:3] == ["replay"] * 3
    first_record = log.index("record")
    assert log[3:first_record] == ["flush", "replay", "sync"] * 2 + ["flush"]
    back_to_back = StoppingRule(min_runs=2, max_runs=2, kernel_min_seconds=0, kernel_idle_ratio=0)
    samples, method = T.time_kernel(lambda: None, back_to_back, flush)
    assert method == "graph-replay-cold"


def test_kernel_mode_samples_for_its_minimum_window_and_says_so(fake_cuda, monkeypatch):
    T, log, flush = fake_cuda
    graph = type("G", (), {"replay": lambda self: log.add("replay")})()
    monkeypatch.setattr(T, "capture_graph", lambda run: graph)
    monkeypatch.setattr(T.time, "perf_counter", FakeClock(0.125))
    rule = StoppingRule(min_runs=2, max_runs=2, kernel_min_seconds=0.5, kernel_idle_ratio=0)
    samples, method = T.time_kernel(lambda: None, rule, flush)
    assert method == "graph-replay-cold, window >= 0.5 s"
    assert len(samples) > 2 and samples == [250.0] * len(samples)  # past the run cap, by the window
    assert StoppingRule().kernel_min_seconds == 1.0  # the default: a window past the first row's slow phase


def test_kernel_mode_falls_back_to_the_profiler_and_says_so(fake_cuda, monkeypatch):
    T, log, flush = fake_cuda

    def refuse(run):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(T, "capture_graph", refuse)
    monkeypatch.setattr(T, "time_profiler", lambda run: 7.0)
    samples, method = T.time_kernel(lambda: None, StoppingRule(), flush)
    assert samples == [7.0] and method.startswith("profiler-warm-mean") and "RuntimeError" in method


@pytest.mark.parametrize("name, slug", [("NVIDIA H200", "h200"), ("AMD Instinct MI355X", "mi355x"),
                                        ("NVIDIA H100 80GB HBM3", "h100"), ("Some Board", "some-board")])
def test_device_slug(name, slug):
    from mla.bench.provenance import slug_from_name

    assert slug_from_name(name) == slug


# --- the leaderboard-faithful 'fresh' mode and the graph floor (issue 10) -------------------------
def test_fresh_mode_makes_new_inputs_before_every_timed_call(fake_cuda):
    T, log, flush = fake_cuda
    made, seen = [], []

    def make(i):
        made.append(i)
        log.add(f"make{i}")
        return f"data{i}"

    samples = T.time_fresh(make, lambda d: log.add(f"call:{d}") or d, StoppingRule(min_runs=3, max_runs=3),
                           flush=flush, verify=lambda d, out: seen.append((d, out)), warmup=1)
    assert samples == [250.0] * 3 and made == [1, 2, 3, 4]  # 1 warm-up + 3 timed, each on new inputs
    assert seen == [(f"data{i}", f"data{i}") for i in range(1, 5)]  # every output checked
    i = log.index("make2")
    # eval.py's order: inputs made, device synchronized, L2 flush enqueued (not waited for: the
    # start event queues behind it), the call, the end event; the check after it
    assert log[i:i + 7] == ["make2", "sync", "flush", "record", "call:data2", "record", "event_sync"]


def test_fresh_mode_fails_a_backend_that_only_works_on_fixed_inputs(fake_cuda, monkeypatch):
    """A memoized output (a stale graph would do the same) passes the fixed-input gate and fails here."""
    import mla.bench.harness as H
    from mla.inputs import generate_case

    T, log, flush = fake_cuda
    monkeypatch.setattr(H, "time_fresh", T.time_fresh)
    inputs = H._CaseInputs(TINY, torch.device("cpu"))
    first = reference(inputs.timing).to(torch.bfloat16)
    plan = Plan(backend="fake", kv_format="bf16", q_format="bf16", run=lambda d: first, outputs=[])
    monkeypatch.setattr(H, "decode", lambda data, **kw: first)  # always the first inputs' answer
    samples, failure = H._time_fresh(inputs, plan, "fake", "bf16", "bf16", {}, StoppingRule(min_runs=3, max_runs=3),
                                     flush)
    assert failure and "fresh inputs (seed 16)" in failure  # the first repeat: seed 3 + 13
    honest = lambda data, **kw: reference(data).to(torch.bfloat16)  # noqa: E731
    monkeypatch.setattr(H, "decode", honest)
    samples, failure = H._time_fresh(inputs, plan, "fake", "bf16", "bf16", {}, StoppingRule(min_runs=3, max_runs=3),
                                     flush)
    assert failure is None and len(samples) == 3
    assert not torch.equal(generate_case(TINY, seed=16)[0], inputs.timing[0])  # the repeats' inputs differ


def test_fresh_and_graph_floor_columns_on_every_row(torch_rows, tmp_path):
    for c in ("fresh_median_us", "fresh_min_us", "fresh_iqr_us", "fresh_n", "graph_floor_us", "host_floor_us"):
        assert c in torch_rows.columns
    assert torch_rows.fresh_median_us.isna().all()  # the CPU run has no fresh mode
    with pytest.raises(ValueError, match="needs a CUDA"):
        validate_modes(["fresh"], torch.device("cpu"))
    # files written before these columns existed still load (filled with NaN)
    old = torch_rows.drop(columns=[c for c in torch_rows.columns if c.startswith("fresh_")] + ["graph_floor_us"])
    old.to_csv(tmp_path / "old.csv", index=False)
    back = load_results(tmp_path / "old.csv")
    assert back.graph_floor_us.isna().all() and back.fresh_median_us.isna().all()


def test_l2_flush_kind_and_cold_read_floor_columns():
    from mla.bench.harness import iter_bench
    from mla.bench.timers import L2Flush

    for c in ("l2_flush", "kernel_read_us"):
        assert c in COLUMNS
    with pytest.raises(ValueError, match="unknown l2_flush 'clean'"):
        next(iter_bench([TINY], ["torch"], ["bf16"], device="cpu", bandwidth=dict(read_gbs=1.0, copy_gbs=1.0),
                        l2_flush="clean"))
    with pytest.raises(ValueError, match="unknown fresh_flush 'short'"):
        next(iter_bench([TINY], ["torch"], ["bf16"], device="cpu", bandwidth=dict(read_gbs=1.0, copy_gbs=1.0),
                        fresh_flush="short"))
    with pytest.raises(ValueError, match="unknown L2 flush kind 'dirty'"):
        L2Flush(torch.device("cpu"), "dirty")  # refused before any device query


def test_old_files_load_without_the_flush_columns(torch_rows, tmp_path):
    old = torch_rows.drop(columns=["l2_flush", "fresh_flush", "kernel_read_us"])
    old.to_csv(tmp_path / "old.csv", index=False)
    back = load_results(tmp_path / "old.csv")
    assert back.l2_flush.isna().all() and back.fresh_flush.isna().all() and back.kernel_read_us.isna().all()
    # r36a's files named the read column cold_read_floor_us: read back under today's name
    torch_rows.rename(columns={"kernel_read_us": "cold_read_floor_us"}).assign(cold_read_floor_us=12.5).to_csv(
        tmp_path / "r36a.csv", index=False)
    assert (load_results(tmp_path / "r36a.csv").kernel_read_us == 12.5).all()
    assert torch_rows.kernel_read_us.isna().all()  # a CPU run: no kernel mode, no floor
    assert torch_rows.graph_floor_kernel_us.isna().all() and torch_rows.cold_floor_us.isna().all()
    # files from before graph_floor_kernel_us and cold_floor_us (round 72) load with them empty
    torch_rows.drop(columns=["graph_floor_kernel_us", "cold_floor_us"]).to_csv(tmp_path / "r71.csv", index=False)
    back = load_results(tmp_path / "r71.csv")
    assert back.graph_floor_kernel_us.isna().all() and back.cold_floor_us.isna().all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernel mode and the read floor need a GPU")
@pytest.mark.parametrize("kind", ["write", "read"])
def test_kernel_rows_carry_the_flush_and_a_read_of_their_bytes(kind, monkeypatch):
    from mla.bench import harness as H

    calls = []
    real = H.measure_graph_floor_kernel
    monkeypatch.setattr(H, "measure_graph_floor_kernel", lambda *a: calls.append(a) or real(*a))
    bw = dict(read_gbs=1.0, copy_gbs=1.0)
    runs = [H.run_bench([TINY], ["torch"], kv_formats=["bf16"], modes=["cold", "kernel", "fresh"], device="cuda",
                        rule=StoppingRule(min_runs=3, max_runs=5, max_seconds=0.2),
                        bandwidth=bw, l2_flush=kind, fresh_flush=kind) for _ in range(2)]
    row = runs[0].iloc[0]  # (not 'eval' here: its 40%-of-free-memory buffer per test worker would not fit)
    assert row.status == "ok" and row.l2_flush.startswith(kind + ":") and row.fresh_flush.startswith(kind + ":")
    assert 0 < row.kernel_read_us < 1e4 and row.fresh_median_us > 0
    # the graph floor's kernel timed like 'kernel': once per run (the CLI's one bandwidth dict), on every row
    assert 0 < row.graph_floor_kernel_us < 1e4 and len(calls) == 1
    assert runs[1].iloc[0].graph_floor_kernel_us == row.graph_floor_kernel_us
    # the floor's replay timed after each cold sample: a whole graph launch, more than its device part
    assert row.cold_median_us > 0 and row.graph_floor_kernel_us < row.cold_floor_us < 1e4


def test_kernel_mode_paces_its_samples_by_the_idle_ratio_and_says_so(fake_cuda, monkeypatch):
    T, log, flush = fake_cuda
    graph = type("G", (), {"replay": lambda self: log.add("replay")})()
    monkeypatch.setattr(T, "capture_graph", lambda run: graph)
    clock = FakeClock(0.125)  # every look at the clock is 0.125 s later: one sample's wall time reads 0.125 s
    monkeypatch.setattr(T.time, "perf_counter", clock)
    slept = []
    monkeypatch.setattr(T.time, "sleep", lambda s: (slept.append(s), log.add("sleep")))
    rule = StoppingRule(min_runs=3, max_runs=3, kernel_min_seconds=0, kernel_idle_ratio=2.0)
    samples, method = T.time_kernel(lambda: None, rule, flush)
    assert method == "graph-replay-cold, paced x2" and samples == [250.0] * 3
    assert slept == [pytest.approx(0.25)] * 3  # 2 x the sample's own wall time, after each sample
    first = log.index("flush")
    assert log[first:first + 6] == ["flush", "record", "replay", "record", "event_sync", "sleep"]
    slept.clear()
    rule = StoppingRule(min_runs=2, max_runs=2, kernel_min_seconds=0, kernel_idle_ratio=0)
    assert T.time_kernel(lambda: None, rule, flush)[1] == "graph-replay-cold"
    assert slept == []  # ratio 0: back to back
    assert StoppingRule().kernel_idle_ratio == 1.0  # the default: duty cycle 1/2, under the power cap (round 45a)


@pytest.mark.parametrize("ratio", [-0.5, 101.0, float("nan")])
def test_stopping_rule_rejects_a_bad_idle_ratio(ratio):
    with pytest.raises(ValueError, match="kernel_idle_ratio"):
        StoppingRule(kernel_idle_ratio=ratio)


# --- the compact report's entries ----------------------------------------------------------------
def _report_rows(records):
    base = dict(backend="triton", kv_format="fp8", q_format="bf16", config="{}", status="ok",
                timestamp_utc="2026-12-07T00:00:00Z")
    return pd.DataFrame([{**base, **r} for r in records])


def test_the_default_calls_per_shape_kernels_are_one_entry_and_a_variant_sweep_stays_apart():
    from mla.bench.report import compact_frame
    # the default call picks its kernel per shape: one entry, geomean over both cases
    default = _report_rows([dict(case="a", variant="v1", cold_median_us=4.0),
                            dict(case="b", variant="v2", cold_median_us=16.0)])
    t = compact_frame(default, "cold")
    assert list(t.columns) == ["triton fp8"]
    assert t.loc["geomean (cases)", "triton fp8"] == "8.0 (2/2)"
    # two variants on the same case are a sweep: each its own entry
    sweep = _report_rows([dict(case="a", variant="v1", cold_median_us=4.0),
                          dict(case="a", variant="v2", cold_median_us=16.0)])
    assert sorted(compact_frame(sweep, "cold").columns) == ["triton fp8 v1", "triton fp8 v2"]
