"""The conda environment mirrors pyproject's dependencies; the CLI is wired up; README cites files that exist."""

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


def test_readme_cites_files_that_exist():
    """Every file README names in backticks or links (data paths may drop `data/` or `data/measured/`)
    exists, so a reader gets from a number to its CSV in one hop. Templates ($OUT, <run_id>, OUT_DIR,
    out/...) are what a command writes, not committed files; globs must match something."""
    import glob
    import re

    text = (ROOT / "README.md").read_text()
    cited = {m.group(1) for m in re.finditer(r"`([^`\s]+)`", text)
             if "/" in m.group(1) and re.search(r"\.(csv|csv\.gz|log|png|svg|md|py|sh|ipynb|xml|toml|txt)$", m.group(1))}
    cited |= {m.group(1) for m in re.finditer(r"\]\(([^)#\s]+)\)", text) if not m.group(1).startswith("http")}
    template = re.compile(r"[$<{=]|OUT_DIR|^out/")
    missing = [c for c in sorted(cited) if not template.search(c)
               and not any(glob.glob(str(ROOT / base / c)) for base in ("", "data", "data/measured"))]
    assert len(cited) > 50 and not missing, missing


def test_scripts_index_names_every_script_and_only_scripts_that_exist():
    """scripts/README.md is the way from a data row's `command` to its driver: every file in scripts/ and
    scripts/probes/ is named there (the probe rounds' gen2-r* / gen3-r* bench files by their glob), and every
    file it names exists (under scripts/, or from the repository root)."""
    import fnmatch
    import re

    index = (ROOT / "scripts" / "README.md").read_text()
    named = set(re.findall(r"`([^`\s]+\.(?:py|sh|txt))`", index))
    globs = {n for n in named if "*" in n}
    files = sorted(str(p.relative_to(ROOT / "scripts")) for p in (ROOT / "scripts").rglob("*")
                   if p.is_file() and p.name != "README.md" and "__pycache__" not in p.parts)
    unnamed = [f for f in files if f not in named and not any(fnmatch.fnmatch(f, g) for g in globs)]
    stale = [n for n in named - globs if not ((ROOT / "scripts" / n).is_file() or (ROOT / n).is_file())]
    assert len(files) > 40 and not unnamed and not stale, (unnamed, stale)


def test_device_tree_slim_deletes_only_its_paths_and_restore_brings_them_back(tmp_path):
    """scripts/device_tree.sh (round 63: the tree and the FlashInfer carry no longer fit one device call): `slim` deletes
    the tracked figures and notebook snapshots and nothing else, and refuses while files under them are changed or
    untracked; `restore` brings back what slim deleted, also after the deletions were staged, and keeps an edit."""
    import shutil

    import pytest

    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "repo"
    keep = ["mla/x.py", "data/measured/h200/a.csv", "notebooks/n.ipynb"]
    slim = ["figures/f.png", "figures/g.svg", "data/measured/h200/live-2026-12-01/notebooks/n.ipynb"]
    for rel in keep + slim:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(rel)
    (repo / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "device_tree.sh", repo / "scripts" / "device_tree.sh")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    subprocess.run(git + ["commit", "-qm", "x"], cwd=repo, check=True)

    def tree(cmd):
        return subprocess.run(["bash", "scripts/device_tree.sh", cmd], cwd=repo, capture_output=True, text=True)

    def present():
        return {rel for rel in keep + slim if (repo / rel).exists()}

    (repo / "figures/f.png").write_text("changed")
    r = tree("slim")
    assert r.returncode == 2 and "figures/f.png" in r.stderr and present() == set(keep + slim)
    subprocess.run(["git", "checkout", "--", "figures"], cwd=repo, check=True)
    (repo / "figures/stray.png").write_text("untracked")
    r = tree("slim")
    assert r.returncode == 2 and "figures/stray.png" in r.stderr and present() == set(keep + slim)
    (repo / "figures/stray.png").unlink()

    r = tree("slim")
    assert r.returncode == 0, r.stderr
    assert present() == set(keep) and "MiB" in r.stdout
    r = tree("restore")
    assert r.returncode == 0 and "restored 3 files" in r.stdout, r.stdout + r.stderr
    assert all((repo / rel).read_text() == rel for rel in keep + slim)

    # deletions staged while slim (a commit of other work in between), and a figure regenerated since: restore brings
    # the staged ones back and leaves the regenerated one as it is
    assert tree("slim").returncode == 0
    subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
    (repo / "figures/g.svg").write_text("regenerated")
    r = tree("restore")
    assert r.returncode == 0 and "restored 2 files" in r.stdout, r.stdout + r.stderr
    assert (repo / "figures/g.svg").read_text() == "regenerated"
    assert all((repo / rel).read_text() == rel for rel in keep + slim if rel != "figures/g.svg")
    # the whole suite's scope: the notebook snapshots only (the suite reads the figures README cites)
    subprocess.run(["git", "checkout", "HEAD", "--", "figures"], cwd=repo, check=True)
    r = subprocess.run(["bash", "scripts/device_tree.sh", "slim", "snapshots"], cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert present() == set(keep + slim) - {"data/measured/h200/live-2026-12-01/notebooks/n.ipynb"}
    assert "restored 1 files" in tree("restore").stdout and present() == set(keep + slim)
    assert tree("bogus").returncode == 2
