"""The conda environment mirrors pyproject's dependencies; the CLI is wired up."""

import pathlib
import subprocess
import sys
import tomllib

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_environment_yml_mirrors_pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(meta["dependencies"]) | set(meta["optional-dependencies"]["notebooks"]) \
        | set(meta["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    listed = {p for p in pip if not p.startswith("-e")}
    assert listed == wanted, f"only in pyproject: {wanted - listed}; only in environment.yml: {listed - wanted}"


def test_cli_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "mla", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    for cmd in ("smoke", "reproduce"):
        assert cmd in out.stdout
