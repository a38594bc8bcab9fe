"""A new user's first hour, as tests: the CLI tells the truth about this machine, refuses what it
cannot do in one line (no traceback), skips what cannot run before building inputs, and never
writes into tracked files unless asked (--write or an explicit --out). Also: git_dirty is one
definition, reproduce is byte-stable on an unchanged re-run, and the scripts are thin and run.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mla.bench import provenance as prov
from mla.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
ON_CPU = not torch.cuda.is_available()
TINY = "bs2-kv64-q1-h16"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="checks what a CPU-only machine says and refuses")


def git_status(*paths) -> str:
    r = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", *paths], cwd=ROOT,
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return r.stdout


def one_line_error(capsys, needle: str) -> None:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and needle in err, err
    assert "\n" not in err and "Traceback" not in err, err


# --- info -----------------------------------------------------------------------------------------
@cpu_only
def test_info_says_triton_is_interpreter_only_on_cpu():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-m", "mla", "info"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    if any(line.startswith("triton: needs the triton package") for line in lines):
        pytest.skip("triton is not installed here")
    assert "triton: interpreter only (set TRITON_INTERPRET=1)" in lines, r.stdout
    assert any(line.startswith("flashinfer: needs an NVIDIA GPU") for line in lines)


# --- smoke ----------------------------------------------------------------------------------------
def test_smoke_refuses_an_unknown_backend(capsys):
    assert cli(["smoke", "--backend", "nope"]) == 2
    one_line_error(capsys, "unknown backend 'nope'")


@cpu_only
@pytest.mark.parametrize("backend", ["flashinfer", "aiter", "hip"])
def test_smoke_refuses_an_unavailable_backend_instead_of_a_reference_only_pass(backend, capsys):
    assert cli(["smoke", "--backend", f"torch,{backend}"]) == 2
    out = capsys.readouterr()
    assert f"backend {backend!r} is not available here" in out.err and "passed" not in out.out


def test_building_the_cli_does_not_import_triton():
    """`smoke --backend triton` on a CPU turns the interpreter on, which works only before triton is
    imported; the suite sets TRITON_INTERPRET=1 for itself, so only a clean process shows the order."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import os, sys; from mla.cli import build_parser; build_parser(); import mla.commands as c; "
            "seen = 'triton' in sys.modules; c._enable_triton_interpreter(['triton'], 'cpu'); "
            "print(seen, os.environ.get('TRITON_INTERPRET'))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["False", "1"], r.stdout


@cpu_only
def test_generate_input_on_a_missing_gpu_is_one_clear_error():
    import mla

    with pytest.raises(ValueError, match="no CUDA/ROCm device"):
        mla.generate_input(4, 1, 1024, seed=0, device="cuda")


@cpu_only
def test_the_timeline_probe_and_report_stop_in_one_line_on_a_cpu(tmp_path, capsys):
    r = subprocess.run([sys.executable, "scripts/probes/timeline_probe.py", str(tmp_path / "tl")], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "needs an NVIDIA GPU" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "tl").exists()
    assert cli(["timeline", str(tmp_path / "timeline.csv")]) == 2
    one_line_error(capsys, "no timeline CSV at")


# --- GPU requests on a CPU machine: one line, nothing touched ---------------------------------------
@cpu_only
@pytest.mark.parametrize("argv", [
    ["bench", "--device", "cuda", "--cases", TINY],
    ["bench", "--mode", "cold", "--cases", TINY],
    ["smoke", "--device", "cuda"],
    ["accuracy", "--device", "cuda", "--cases", TINY],
])
def test_gpu_requests_on_cpu_fail_in_one_line(argv, capsys):
    before = git_status("data", "notebooks", "figures")
    assert cli(argv) == 2
    one_line_error(capsys, "cuda" if "--device" in argv else "needs a CUDA/ROCm device")
    assert git_status("data", "notebooks", "figures") == before


@cpu_only
def test_bench_refuses_a_bad_kernel_idle_ratio_in_one_line(capsys):
    assert cli(["bench", "--cases", TINY, "--kernel-idle-ratio", "-1"]) == 2
    one_line_error(capsys, "kernel_idle_ratio must be in [0, 100]")


@cpu_only
def test_reproduce_live_on_cpu_fails_before_touching_anything(capsys, monkeypatch):
    import mla.reproduce

    ran = []
    monkeypatch.setattr(mla.reproduce, "run_notebook", lambda *a, **k: ran.append(a))
    before = git_status("data", "notebooks", "figures")
    assert cli(["reproduce", "--mode", "live"]) == 2
    one_line_error(capsys, "reproduce --mode live re-measures on a GPU")
    assert ran == [] and git_status("data", "notebooks", "figures") == before


# --- bench: skip up front, bounded memory, scratch output by default ------------------------------
BENCH_FAST = ["--min-runs", "2", "--max-runs", "3", "--max-seconds", "0.05", "--bandwidth-gbs", "10,20",
              "--no-progress"]


@cpu_only
def test_bench_skips_what_cannot_run_before_building_inputs(capsys, monkeypatch, tmp_path):
    import mla.bench.harness as H

    built = []
    real = H.generate_case
    monkeypatch.setattr(H, "generate_case", lambda case, **kw: built.append(case.name) or real(case, **kw))
    out = tmp_path / "b.csv"
    argv = ["bench", "--cases", f"bs256-kv8192-q1-h16,{TINY}", "--backend", "torch,flashinfer,hip",
            "--kv-format", "bf16,mxfp4", "--max-gb", "2", "--out", str(out), *BENCH_FAST]
    assert cli(argv) == 0
    text = capsys.readouterr().out
    assert "skip flashinfer: unavailable here" in text and "skip hip: unavailable here" in text
    assert "skip bs256-kv8192-q1-h16: its inputs need ~23.1 GB on CPU, over the 2.0 GB budget" in text
    assert set(built) == {TINY}  # no input was made for the case that cannot fit
    from mla.bench.schema import load_results
    df = load_results(out)
    assert sorted(zip(df.backend, df.kv_format)) == [("torch", "bf16"), ("torch", "mxfp4")]
    assert set(df.status) == {"ok"}


@cpu_only
def test_bench_with_nothing_runnable_says_so(capsys):
    env_interp = os.environ.get("TRITON_INTERPRET")
    os.environ.pop("TRITON_INTERPRET", None)
    try:
        assert cli(["bench", "--cases", "leaderboard", "--backend", "triton,flashinfer",
                    "--kv-format", "bf16,fp8,mxfp4", *BENCH_FAST]) == 2
    finally:
        if env_interp is not None:
            os.environ["TRITON_INTERPRET"] = env_interp
    cap = capsys.readouterr()
    assert "skip triton: on CPU triton is interpreter only (set TRITON_INTERPRET=1)" in cap.out
    assert "nothing to run" in cap.err


def test_bench_writes_to_scratch_by_default_and_to_data_with_write(monkeypatch, tmp_path):
    scratch, data = tmp_path / "out", tmp_path / "data"
    monkeypatch.setattr(prov, "SCRATCH", scratch)
    monkeypatch.setattr(prov, "DATA", data)
    argv = ["bench", "--cases", TINY, "--backend", "torch", "--kv-format", "fp8", *BENCH_FAST]
    if not ON_CPU:
        argv += ["--device", "cpu", "--mode", "cpu"]
    assert cli(argv) == 0
    assert len(list((scratch / "measured" / "cpu").glob("*.csv"))) == 1 and not data.exists()
    assert cli(argv + ["--write"]) == 0
    assert len(list((data / "measured" / "cpu").glob("*.csv"))) == 1


def test_default_outputs_leave_tracked_files_alone():
    """The real tree: a default bench run lands in out/ (git-ignored) and git sees no change."""
    before = git_status()
    argv = [sys.executable, "-m", "mla", "bench", "--cases", TINY, "--backend", "torch", "--kv-format", "bf16",
            "--device", "cpu", "--mode", "cpu", *BENCH_FAST]
    r = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    written = Path(r.stdout.strip().splitlines()[-1].split(" to ", 1)[1])
    try:
        assert written.is_relative_to(ROOT / "out") and written.exists()
        assert git_status() == before
    finally:
        written.unlink(missing_ok=True)


def test_accuracy_and_isa_default_to_scratch(monkeypatch, tmp_path, capsys):
    import mla.analysis.accuracy as acc
    import mla.analysis.isa_cli as isa

    tracked = acc.DEFAULT_CSV.read_bytes() if acc.DEFAULT_CSV.exists() else None
    monkeypatch.setattr(acc, "SCRATCH_CSV", tmp_path / "acc.csv")
    assert cli(["accuracy", "--cases", TINY]) == 0
    assert (tmp_path / "acc.csv").exists()
    assert (acc.DEFAULT_CSV.read_bytes() if acc.DEFAULT_CSV.exists() else None) == tracked

    seen = []
    monkeypatch.setattr(isa, "run_sm90", lambda out, log=print, variants=None: seen.append(out) or [])
    monkeypatch.setattr(prov, "SCRATCH", tmp_path / "out")
    monkeypatch.setattr(prov, "DATA", tmp_path / "data")
    cli(["isa", "--target", "sm90"])
    cli(["isa", "--target", "sm90", "--write"])
    cli(["isa", "--target", "sm90", "--out", str(tmp_path / "x")])
    assert seen == [tmp_path / "out" / "static" / "sm90", tmp_path / "data" / "static" / "sm90", tmp_path / "x"]


# --- git_dirty: one definition --------------------------------------------------------------------
def test_git_dirty_is_one_definition_about_the_code(tmp_path):
    if git_status() is None:
        pytest.skip("not a git checkout")
    if os.environ.get("MLA_GIT_COMMIT"):  # the device machine: its copy's .git lags the tree it was sent
        pytest.skip("MLA_GIT_COMMIT is set: this .git is not the commit that runs (a device copy)")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    probe = ("from mla.bench.provenance import git_state; from mla.analysis.isa_cli import provenance; "
             "c, d = git_state(); print(d, provenance()['git_dirty'])")

    def state():
        r = subprocess.run([sys.executable, "-c", probe], cwd=clone, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONPATH=str(clone)))
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()

    (clone / "data" / "measured" / "cpu").mkdir(parents=True, exist_ok=True)
    (clone / "data" / "measured" / "cpu" / "new.csv").write_text("a\n")  # a result: not "dirty"
    assert state() == ["False", "0"]
    (clone / "mla" / "scratch_kernel.py").write_text("x = 1\n")  # code that is not committed: dirty
    assert state() == ["True", "1"]


# --- reproduce: byte-identical re-run ------------------------------------------------------------
def test_reproduce_rewrites_nothing_when_nothing_changed(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from mla.reproduce import run_notebook

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('MODE = "replay"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("tiny"), params, nbformat.v4.new_code_cell("print(MODE, 6 * 7)")]
    path = tmp_path / "00_tiny.ipynb"
    nbformat.write(nb, path)
    run_notebook(path, "replay", timeout=120)
    first, mtime = path.read_bytes(), path.stat().st_mtime_ns
    run_notebook(path, "replay", timeout=120)
    assert path.read_bytes() == first and path.stat().st_mtime_ns == mtime  # not even rewritten
    done = nbformat.read(path, as_version=4)
    assert not [c for c in done.cells if "injected-parameters" in c.metadata.get("tags", [])]  # one MODE cell
    assert done.cells[1].source.startswith('MODE = "replay"')
    assert all("execution" not in c.metadata for c in done.cells)
    assert "replay 42" in done.cells[-1].outputs[0]["text"]


# --- scripts: thin drivers that run ------------------------------------------------------------------
def test_validation_cost_script_writes_its_csv(tmp_path):
    out = tmp_path / "vc.csv"
    r = subprocess.run([sys.executable, "scripts/validation_cost.py", "--cases", TINY, "--backend", "torch",
                        "--kv-format", "fp8", "--max-seconds", "0.05", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    import pandas as pd
    df = pd.read_csv(out)
    assert list(df.case) == [TINY] and df.git_commit.iloc[0] and df.device.iloc[0]
    for col in ("guard_hit_us", "sync_free_us", "full_check_us", "queued_check_us", "decode_us", "run_us"):
        assert df[col].iloc[0] > 0, col
    assert df.guard_hit_us.iloc[0] < df.full_check_us.iloc[0]  # a known input is cheaper than a full check


def test_probe_is_a_driver_of_valid_bench_lines():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import h200_triton_probe as probe
    finally:
        sys.path.pop(0)
    from mla.cli import build_parser
    lines = [line for phase in probe.PHASES.values() for line in phase] + probe.variant_lines("words")
    parser = build_parser()
    for line in lines:
        args = parser.parse_args(["bench", *shlex.split(line), *shlex.split(probe.BRIEF), "--out", "x.csv"])
        assert args.backend == "triton"
    text = (ROOT / "scripts" / "h200_triton_probe.py").read_text()
    assert "Event(" not in text and "elapsed_time" not in text  # no timing loop of its own
