"""The suite's own machinery for a shared GPU, checked on a CPU: `--shard I/N` (conftest.py) and the out-of-memory
re-run alone (gpu_share.py), the latter with a simulated `torch.OutOfMemoryError` in a pytest of its own."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _collected(*args):
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                          str(TESTS / "test_quant.py"), *args], capture_output=True, text=True, cwd=TESTS.parent)
    return out.returncode, {line for line in out.stdout.splitlines() if "::" in line}, out.stdout + out.stderr


def test_shards_are_disjoint_and_cover_every_test():
    rc, whole, _ = _collected()
    assert rc == 0 and len(whole) > 5
    parts = [_collected("--shard", f"{i}/3")[1] for i in (1, 2, 3)]
    assert set().union(*parts) == whole
    assert sum(len(p) for p in parts) == len(whole)
    assert all(parts), "a shard of 3 came out empty on a file of this size"
    assert _collected("--shard", "2/3")[1] == parts[1]  # stable across runs (not Python's salted hash)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1-2", "x"])
def test_a_bad_shard_is_a_usage_error(spec):
    rc, _, text = _collected("--shard", spec)
    assert rc != 0 and "--shard" in text


SIMULATED = textwrap.dedent('''
    import json, os, time
    from pathlib import Path
    import torch

    LOG = Path(os.environ["SHARE_LOG"])

    def _stamp(name, t0):
        with open(LOG, "a") as f:
            f.write(json.dumps({"name": name, "t0": t0, "t1": time.time(), "pid": os.getpid()}) + "\\n")

    def test_runs_out_of_memory_once():
        marker = LOG.with_suffix(".first")
        if not marker.exists():
            marker.write_text("1")
            big = [0] * 1000  # a local the failed attempt's frame holds
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.50 GiB (simulated)")
        t0 = time.time(); time.sleep(0.6); _stamp("rerun", t0)

    def test_runs_out_of_memory_alone_too():
        raise torch.OutOfMemoryError("CUDA out of memory (simulated, every time)")

    def test_a_neighbour():
        t0 = time.time(); time.sleep(0.4); _stamp("neighbour", t0)

    def test_another_neighbour():
        t0 = time.time(); time.sleep(0.4); _stamp("neighbour", t0)

    def test_fails_for_another_reason():
        assert 1 == 2
''')


def test_out_of_memory_runs_again_alone_and_only_that_verdict_counts(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_simulated.py").write_text(SIMULATED)
    log = tmp_path / "stamps.jsonl"
    env = dict(os.environ, SHARE_LOG=str(log), MLA_GPU_SHARE_LOCK=str(tmp_path / "gpu.lock"),
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "3", "-p", "gpu_share", "-p", "no:cacheprovider",
                          "--junitxml", str(tmp_path / "r.xml"), str(tmp_path / "test_simulated.py")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "PASSED test_simulated.py::test_runs_out_of_memory_once" in text
    assert "FAILED test_simulated.py::test_runs_out_of_memory_alone_too" in text
    assert "FAILED test_simulated.py::test_fails_for_another_reason" in text
    counts = re.findall(r"^=+ (.*) in [0-9.]+s", out.stdout, re.M)  # stderr may end with plugins' warnings
    assert counts and "3 passed" in counts[-1] and "2 failed" in counts[-1], text
    summary = text[text.index("ran out of GPU memory beside other workers"):]
    assert "test_runs_out_of_memory_once" in summary and "test_runs_out_of_memory_alone_too" in summary
    assert "test_fails_for_another_reason" not in summary.split("short test summary")[0]
    assert "rerun_alone_after_cuda_oom" in (tmp_path / "r.xml").read_text()
    # the second run had the card to itself: no other test's run overlaps it in time
    stamps = [json.loads(line) for line in log.read_text().splitlines()]
    rerun = [s for s in stamps if s["name"] == "rerun"]
    assert len(rerun) == 1
    for s in stamps:
        if s["name"] != "rerun":
            assert s["t1"] <= rerun[0]["t0"] or s["t0"] >= rerun[0]["t1"], (s, rerun[0])
