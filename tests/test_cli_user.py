"""A new user's first hour, as tests: the CLI tells the truth about this machine, refuses what it
cannot do in one line (no traceback), skips what cannot run before building inputs, and never
writes into tracked files unless asked (--write or an explicit --out). Also: git_dirty is one
definition, reproduce is byte-stable on an unchanged re-run, and the scripts are thin and run.
"""

from __future__ import annotations

import importlib.util
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


def one_line_error(capsys, needle: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and needle in err, err
    assert "\n" not in err and "Traceback" not in err, err
    return err


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
def test_bench_with_nothing_runnable_here_exits_1_with_a_note(capsys, monkeypatch):
    """A valid request this machine cannot run is the epilog's "none measured" (1), not a bad request (2)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert cli(["bench", "--cases", "leaderboard", "--backend", "triton,flashinfer",
                "--kv-format", "bf16,fp8,mxfp4", *BENCH_FAST]) == 1
    cap = capsys.readouterr()
    assert "skip triton: on CPU triton is interpreter only (set TRITON_INTERPRET=1)" in cap.out
    note = cap.err.strip()
    assert note.startswith("note: nothing measured: this machine cannot run any requested row (") and "\n" not in note
    assert "triton: on CPU triton is interpreter only" in note and "flashinfer: unavailable here" in note, note


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


# --- bad input: one clear error, before anything runs or is written --------------------------------
def parse_error(capsys, argv, needle: str) -> None:
    """argparse refuses ``argv`` (exit 2) with a line naming the option."""
    with pytest.raises(SystemExit) as e:
        cli(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and needle in err.strip().splitlines()[-1] and "Traceback" not in err, err


@pytest.mark.parametrize("argv", [["smoke"], ["bench", "--cases", TINY], ["accuracy", "--cases", TINY]])
def test_an_unknown_device_type_is_one_line(argv, capsys):
    assert cli([*argv, "--device", "tpu"]) == 2  # (torch.device raises RuntimeError for it)
    one_line_error(capsys, "--device tpu: use cpu, cuda or cuda:N")


def test_submission_makes_its_folder_and_refuses_a_folder(tmp_path, capsys):
    out = tmp_path / "new" / "dir" / "x.py"
    assert cli(["submission", "-o", str(out)]) == 0 and out.read_text().startswith("#!POPCORN")
    assert cli(["submission", "-o", str(tmp_path)]) == 2
    one_line_error(capsys, "is a folder; name the file to write")


def test_submission_suggests_close_variants_not_all_of_them(tmp_path, capsys):
    assert cli(["submission", "--variant", "v147", "-o", str(tmp_path / "s.py")]) == 2
    err = capsys.readouterr().err
    assert "close matches: v147_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_cm" in err and len(err) < 400, err


@pytest.mark.parametrize("extra,needle", [
    (["--config", "variant=nonexistent"], "backend 'torch' takes no config keys, got ['variant']"),
    (["--config", "bogus=1"], "backend 'torch' takes no config keys, got ['bogus']"),
    (["--backend", "triton", "--config", "bogus=1"], "backend 'triton' does not take config keys ['bogus']"),
    (["--backend", "triton", "--config", "variant=v1_n32_w4_s3"], "close matches: v4_n32_w4_s3, v1_n32_w4_s2"),
    (["--backend", "triton", "--config", "variant=nonexistent"],
     "unknown triton variant 'nonexistent'; no close match"),
    (["--backend", "triton", "--config", "graph=maybe"], "graph='maybe': choose from (True, False, 'auto')"),
    (["--backend", "triton", "--sweep", "num_splits=0,2"], "num_splits=0: an int in [1, 64], 'auto', 'kernel' or 'race'"),
    (["--backend", "triton", "--config", "pdl=sometimes"], "pdl='sometimes'"),
    (["--backend", "aiter", "--config", "mode=fast"], "aiter mode must be one of"),
    (["--config", "validate=nope"], "validate='nope': choose from"),
])
def test_bench_refuses_a_config_its_backends_do_not_take(extra, needle, capsys, tmp_path, monkeypatch):
    import mla.bench.harness as H

    monkeypatch.setattr(H, "generate_case", lambda *a, **k: pytest.fail("built inputs for a bad request"))
    out = tmp_path / "b.csv"
    assert cli(["bench", "--cases", TINY, "--out", str(out), *BENCH_FAST, *extra]) == 2
    err = one_line_error(capsys, needle)
    assert not out.exists()
    assert len(err) < 400  # (a variant typo names its close matches, not all ~150 variants)


@cpu_only
def test_bench_exits_1_when_no_row_was_measured(capsys, tmp_path):
    """A request that is valid but runs nowhere here (a generation-3 variant needs an sm90 GPU) writes its
    'unsupported' row and exits 1: nothing was measured."""
    pytest.importorskip("triton")
    out = tmp_path / "b.csv"
    argv = ["bench", "--cases", TINY, "--backend", "triton", "--kv-format", "fp8", "--out", str(out), *BENCH_FAST,
            "--config", "variant=v147_n64_w4_s2_gl_en_ls_p8_qc_pp_cf_ldsm_cm"]
    assert cli(argv) == 1
    cap = capsys.readouterr()
    assert "no row was measured (1 unsupported)" in cap.err
    from mla.bench.schema import load_results
    assert list(load_results(out).status) == ["unsupported"]


def test_smoke_refuses_an_empty_backend_list(capsys):
    parse_error(capsys, ["smoke", "--backend", ","], "argument --backend: expected a comma-separated list")
    from mla.commands import smoke
    with pytest.raises(ValueError, match="no backend named"):
        smoke(backends=[])


@pytest.mark.parametrize("argv,needle", [
    (["bench", "--max-gb", "-1"], "argument --max-gb: must be > 0, got -1"),
    (["bench", "--max-gb", "0"], "argument --max-gb: must be > 0, got 0"),
    (["bench", "--bandwidth-gbs", "x"], "argument --bandwidth-gbs: expected 2 comma-separated numbers, got 'x'"),
    (["bench", "--bandwidth-gbs", "10,x"], "argument --bandwidth-gbs: expected a number, got 'x'"),
    (["bench", "--bandwidth-gbs", "10,-2"], "argument --bandwidth-gbs: must be > 0, got -2"),
    (["bench", "--kv-format", ""], "argument --kv-format: expected a comma-separated list of names, got ''"),
    (["bench", "--backend", " , "], "argument --backend: expected a comma-separated list"),
    (["report", "--case", ","], "argument --case: expected a comma-separated list"),
    (["reproduce", "--timeout", "0"], "argument --timeout: must be > 0, got 0"),
])
def test_bad_option_values_are_refused_while_parsing(argv, needle, capsys):
    parse_error(capsys, argv, needle)


@pytest.mark.parametrize("case,needle", [
    ("bs0-kv256-q1-h16", "case 'bs0-kv256-q1-h16': batch_size must be >= 1, got 0"),
    ("bs4-kv256-q1-h8", "case 'bs4-kv256-q1-h8': num_heads must be one of (16, 32), got 8"),
    ("bs4-kv256-q0-h16", "case 'bs4-kv256-q0-h16': q_seq_len must be >= 1, got 0"),
    ("bs4-kv2-q4-h16", "kv_seq_len 2 is shorter than q_seq_len 4"),
    ("bs4-kv256-s5", "cannot parse case name 'bs4-kv256-s5'"),  # (a field the name does not have)
    ("bs4-bs8-kv256", "cannot parse case name"),
])
def test_case_names_say_which_value_is_out_of_range(case, needle, capsys):
    assert cli(["bench", "--cases", case, *BENCH_FAST]) == 2
    one_line_error(capsys, needle)


def test_report_refuses_an_unknown_purpose(capsys):
    assert cli(["report", "--purpose", "leaderboard,nope"]) == 2
    one_line_error(capsys, "unknown --purpose 'nope'; choose from leaderboard, splits, variants")


# --- help and README tell the truth ---------------------------------------------------------------
def _subparsers():
    from mla.cli import build_parser
    action = next(a for a in build_parser()._actions if a.dest == "command")
    return action.choices


# mla/analysis/accuracy.py is being changed on another branch; its --device help arrives with that merge
def test_every_option_has_help_and_no_empty_default_note():
    for name, sub in _subparsers().items():
        for a in sub._actions:
            assert a.help, f"{name} {a.option_strings} has no help"
        text = sub.format_help()
        assert "(default: None)" not in text and "(default: [])" not in text, name
    bench = " ".join(_subparsers()["bench"].format_help().split())  # (unwrapped)
    assert "(default: cuda if present, else cpu)" in bench and "Exit status: 0 when at least one row" in bench
    assert "records it) (default: 0.0)" in bench  # (a zero default is a value, not "no default")


def test_cli_doc_and_readme_name_every_command():
    import mla.cli

    names = set(_subparsers())
    head = mla.cli.__doc__.split("\n\n")[0]
    assert {n for n in names if n not in head} == set(), head
    readme = (ROOT / "README.md").read_text()
    table = readme.split("### What each command writes where", 1)[1].split("\n\n", 2)[2].split("\n\n", 1)[0]
    assert {n for n in names if n not in table} == set(), "README's writes-where table lacks a command"


@cpu_only
def test_doctor_says_triton_runs_under_the_interpreter_on_a_cpu(monkeypatch):
    """Installed triton on a CPU is not "missing": it runs under its interpreter, a switch to set (both rows agree)."""
    from mla import doctor

    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed here")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    rows = {r["check"]: r for r in doctor.diagnose()}
    assert rows["backend triton"]["status"] == "ok" and rows["triton interpreter"]["status"] == "ok"
    assert "under Triton's interpreter, which is off: set TRITON_INTERPRET=1" in rows["backend triton"]["detail"]
    assert "available, off: TRITON_INTERPRET is not set" in rows["triton interpreter"]["detail"]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    rows = {r["check"]: r for r in doctor.diagnose()}
    assert rows["backend triton"]["status"] == "ok" and rows["backend triton"]["detail"].endswith(
        "(here: under Triton's interpreter)")


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
    from mla.bench.harness import check_configs, expand_configs, parse_assignments
    argvs = [["bench", *shlex.split(line), *shlex.split(probe.BRIEF), "--out", "x.csv"] for line in lines]
    assert all(parser.parse_args(a).backend == ["triton"] for a in argvs)
    for f in sorted((ROOT / "scripts").glob("campaign*_sweeps.txt")):  # (each line names its backends)
        argvs += [["bench", *shlex.split(line)] for line in f.read_text().splitlines()
                  if line.strip() and not line.startswith("#")]
    for argv in argvs:  # the configs campaigns ran pass bench's up-front config check (it refuses typos only)
        args = parser.parse_args(argv)
        check_configs(args.backend, expand_configs(parse_assignments(args.config, multi=False),
                                                   parse_assignments(args.sweep, multi=True)))
    text = (ROOT / "scripts" / "h200_triton_probe.py").read_text()
    assert "Event(" not in text and "elapsed_time" not in text  # no timing loop of its own
