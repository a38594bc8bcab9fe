"""A fresh user's review, as tests: smoke has bench's memory cap and takes case names, a request this
machine cannot run exits 1 (nothing measured) while a bad one exits 2, a misspelt name lists what
exists, help shows its defaults, and info / doctor say what they mean on a CPU."""

from __future__ import annotations

import pytest
import torch

from mla.cli import main as cli

ON_CPU = not torch.cuda.is_available()
TINY = "bs2-kv64-q1-h16"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="checks what a CPU-only machine says and refuses")
BENCH_FAST = ["--min-runs", "2", "--max-runs", "3", "--max-seconds", "0.05", "--bandwidth-gbs", "10,20",
              "--no-progress"]
SETS = "leaderboard, tests, extended, smoke"


def one_line_error(capsys, needle: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and needle in err, err
    assert "\n" not in err and "Traceback" not in err, err
    return err


def help_text(*argv) -> str:
    from mla.cli import build_parser

    action = next(a for a in build_parser()._actions if a.dest == "command")
    sub = action.choices[argv[0]]
    return " ".join(sub.format_help().split())  # (unwrapped)


# --- 1. smoke: bench's memory cap, not an OOM kill -------------------------------------------------
@cpu_only
def test_smoke_skips_a_case_over_the_memory_cap_before_building_its_inputs(capsys, monkeypatch):
    import mla.commands as C

    built = []
    real = C.generate_case
    monkeypatch.setattr(C, "generate_case", lambda case, **kw: built.append(case.name) or real(case, **kw))
    assert cli(["smoke", "--cases", f"bs256-kv8192-q1-h16,{TINY}", "--max-gb", "2", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "skip bs256-kv8192-q1-h16: its inputs need ~23.1 GB on CPU, over the 2.0 GB budget (--max-gb)" in out
    assert built == [TINY] and "6 passed, 0 failed" in out


@cpu_only
def test_smoke_with_every_case_over_the_cap_exits_1_having_built_nothing(capsys, monkeypatch):
    import mla.commands as C

    monkeypatch.setattr(C, "generate_case", lambda *a, **k: pytest.fail("built inputs for a skipped case"))
    assert cli(["smoke", "--cases", "leaderboard", "--max-gb", "0.01", "--device", "cpu"]) == 1
    cap = capsys.readouterr()
    assert cap.out.count("skip bs") == 8 and "nothing checked" in cap.err and "passed" not in cap.out


def test_the_memory_budget_is_max_gb_or_half_of_memavailable(monkeypatch):
    import mla.bench.cli as B

    monkeypatch.setattr(B, "_mem_available_bytes", lambda: 20_000_000_000)
    assert B.cpu_memory_budget(None) == 10_000_000_000 and B.cpu_memory_budget(1.5) == 1_500_000_000


def test_smoke_help_shows_the_cap_and_that_big_sets_are_gpu_sized(capsys):
    text = help_text("smoke")
    assert "--max-gb" in text and "leaderboard and extended are GPU-sized" in text
    with pytest.raises(SystemExit):
        cli(["smoke", "--max-gb", "0"])
    assert "argument --max-gb: must be > 0, got 0" in capsys.readouterr().err


# --- 2. bench: a bad request stays exit 2 (nothing runnable here is exit 1: test_cli_user.py) -----
def test_bench_a_format_no_named_backend_takes_is_still_a_bad_request(capsys, monkeypatch):
    import mla.bench.harness as H

    monkeypatch.setattr(H, "generate_case", lambda *a, **k: pytest.fail("built inputs for a bad request"))
    assert cli(["bench", "--cases", TINY, "--backend", "torch", "--q-format", "fp8", "--device", "cpu",
                *BENCH_FAST]) == 2
    cap = capsys.readouterr()
    assert "skip torch q=fp8: torch takes q_format bf16" in cap.out
    assert cap.err.startswith("error: nothing to run") and "does not take the format" in cap.err, cap.err


def test_bench_epilog_says_which_skips_exit_1_and_which_exit_2():
    text = help_text("bench")
    assert "1 when none was (every row skipped because of this machine," in text
    assert "2 for a bad request (also when every row is skipped and a skip is a format its backend does not take)" \
        in text


# --- 5. case names: a misspelt one lists the sets; smoke takes names as bench does -----------------
@pytest.mark.parametrize("argv", [["bench", "--cases", "nosuchcase", *BENCH_FAST],
                                  ["accuracy", "--cases", "nosuch"],
                                  ["smoke", "--cases", "leaderbord"]])
def test_an_unparsable_case_name_lists_the_case_sets(argv, capsys, monkeypatch):
    import mla.bench.harness as H
    import mla.commands as C

    for mod in (H, C):
        monkeypatch.setattr(mod, "generate_case", lambda *a, **k: pytest.fail("built inputs for a bad request"))
    assert cli(argv) == 2
    one_line_error(capsys, f"expected like 'bs4-kv1024-q1-h16' (q and h optional), or a case set: {SETS}")


def test_a_case_name_out_of_range_keeps_its_own_message(capsys):
    assert cli(["bench", "--cases", "bs0-kv256-q1-h16", *BENCH_FAST]) == 2
    err = one_line_error(capsys, "case 'bs0-kv256-q1-h16': batch_size must be >= 1")
    assert "case set" not in err  # (it parsed: the set names would be noise)


def test_smoke_takes_case_names_as_bench_does(capsys):
    assert cli(["smoke", "--cases", f"{TINY},bs1-kv32", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"{TINY} ") == 6 and out.count("bs1-kv32-q1-h16 ") == 6 and "12 passed, 0 failed" in out


# --- 6. report --device: the devices measured ------------------------------------------------------
def test_report_an_unknown_device_lists_the_measured_ones(capsys):
    from mla.analysis.measured import DATA

    have = sorted(p.name for p in (DATA / "measured").iterdir() if p.is_dir() and any(p.glob("*.csv")))
    assert have  # (the tree ships measured rows)
    assert cli(["report", "--device", "nosuch"]) == 2
    one_line_error(capsys, f"--device nosuch: no results in {DATA / 'measured' / 'nosuch'}; devices measured: "
                           f"{', '.join(have)}")
    assert cli(["report", "--targets", "--device", "nosuch"]) == 2
    one_line_error(capsys, "devices measured: ")


# --- 7. help shows defaults -------------------------------------------------------------------------
@pytest.mark.parametrize("command,needle", [
    ("smoke", "and/or case names, comma-separated; leaderboard and extended are GPU-sized (minutes and tens of GB "
              "on a CPU) (default: smoke)"),
    ("submission", "hip: mxfp4 only (default: mxfp4)"),
    ("reproduce", "run only notebooks whose name contains one of these comma-separated parts, e.g. 03,05 (default: every notebook)"),
    ("reproduce", "(GPU) (default: replay)"),
])
def test_help_shows_the_defaults(command, needle):
    assert needle in help_text(command)


# --- 8. info labels its GPU runtime (doctor's triton rows: test_cli_user.py) ------------------------
def test_info_labels_the_gpu_runtime():
    from mla.bench import provenance as prov
    from mla.bench.cli import info_lines

    torch_line = next(line for line in info_lines() if line.startswith("torch "))
    assert f"(GPU runtime: {prov.versions()['gpu_runtime']})" in torch_line, torch_line


# --- 3, 4, 7 (mla/analysis): isa's variant typo, a non-timeline file, accuracy's defaults -------------
@pytest.mark.parametrize("variant", ["nosuch", "v147"])
def test_isa_refuses_a_variant_typo_before_any_progress_as_submission_does(variant, capsys, monkeypatch, tmp_path):
    import mla.analysis.isa_cli as isa

    monkeypatch.setattr(isa, "_triton", lambda *a, **k: pytest.fail("compiled for a bad request"))
    assert cli(["submission", "--variant", variant, "-o", str(tmp_path / "s.py")]) == 2
    expected = one_line_error(capsys, f"unknown triton variant {variant!r}")
    assert cli(["isa", "--target", "sm90", "--variant", variant, "--out", str(tmp_path / "isa")]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.strip() == expected  # (no "compiling ..." line, not all ~150 names)


def test_timeline_on_a_file_that_is_not_its_csv_names_the_columns(capsys):
    from mla.analysis.timeline import CSV_COLUMNS

    assert cli(["timeline", "README.md"]) == 2
    err = one_line_error(capsys, "README.md is not a timeline CSV")
    assert f"columns: {', '.join(CSV_COLUMNS)}" in err and "Traceback" not in err


def test_timeline_on_a_csv_without_its_columns_names_them(capsys, tmp_path):
    from mla.analysis.timeline import CSV_COLUMNS

    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert cli(["timeline", str(tmp_path / "x.csv")]) == 2
    err = one_line_error(capsys, "not a timeline CSV: it lacks column(s) run_id, case")
    assert f"(expected: {', '.join(CSV_COLUMNS)})" in err


@pytest.mark.parametrize("needle", ["(default: leaderboard, minutes on a CPU)", "0: no cap; default: 262144"])
def test_accuracy_help_shows_its_defaults(needle):
    assert needle in help_text("accuracy")
