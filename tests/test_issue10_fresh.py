"""Issue 10's fresh-input tooling on CPU: the device script (scripts/h200_issue10_fresh.py) end to end
on a tiny case, and the harness taking ``validate`` as a sweepable key (not a backend config key)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pandas as pd
import pytest
import torch

from mla.bench import provenance as prov
from mla.bench.harness import run_bench
from mla.bench.stats import StoppingRule
from mla.problem import Case

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "h200_issue10_fresh.py"
HAVE_TRITON = importlib.util.find_spec("triton") is not None and os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.skipif(torch.cuda.is_available() or not HAVE_TRITON, reason="the CPU run of the script (interpreter)")
def test_device_script_runs_on_cpu_and_counts_what_each_path_did(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("h200_issue10_fresh", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setenv("MLA_GIT_COMMIT", "feedc0de")
    prov.git_state.cache_clear()
    try:
        rc = script.main([str(tmp_path), "--cases", "bs2-kv64-q1-h16", "--ab-cases", "", "--kv-format", "bf16",
                          "--min-runs", "2", "--max-seconds", "0.01"])
    finally:
        prov.git_state.cache_clear()
    assert rc == 0
    df = pd.read_csv(tmp_path / "issue10-fresh.csv").set_index("path")
    assert list(df.index) == list(script.PATHS) and (df.status == "ok").all()
    assert (df.git_commit == "feedc0de").all() and df.source_hash.notna().all() and df.run_id.nunique() == 1
    # every timed call had new inputs: the old validation checked each fully, the new one queued each
    calls = df.loc["decode", "launches"]
    assert calls == df.loc["decode"].n + 1  # samples + one warm-up, all plain launches
    assert (df.loc["decode_full", "full_checks"], df.loc["decode_full", "queued_checks"]) == (calls, 0)
    # the auto path never checks synchronously; it queues the check of each new input set, except where eval.py's
    # order hands a new set the addresses of one freed two calls before (A B A: the same signature, taken as
    # already checked, validate.py's documented limit; it depends on the allocator, so CI saw both counts)
    assert df.loc["decode", "full_checks"] == 0 and 1 <= df.loc["decode", "queued_checks"] <= calls
    assert (df.captures == 0).all()
    assert script.main([str(tmp_path)]) == 2  # an existing CSV is never overwritten


def test_harness_takes_validate_as_a_call_option():
    """``--config validate=full`` / ``--sweep validate=full,auto`` reach mla.decode, not the backend."""
    tiny = Case(2, 64, seed=5)
    df = run_bench([tiny], ["torch"], kv_formats=["bf16"], configs=[{"validate": "full"}, {"validate": "auto"},
                                                                     {"validate": "nope"}],
                   device="cpu", rule=StoppingRule(min_runs=2, max_runs=3, max_seconds=0.05),
                   bandwidth=dict(read_gbs=1.0, copy_gbs=1.0))
    assert list(df.status) == ["ok", "ok", "unsupported"]
    assert "validate must be one of" in df.message.iloc[2]
