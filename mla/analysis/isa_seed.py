"""Seed 000's own HIP kernel, compiled here with and without its iglp hints.

Seed 000 (shared/seeds/000_*.txt, a GPU MODE submission) reports that ``iglp_opt`` hints cut its
b64w4s1 kernel from 168 to 144 VGPRs on its ROCm compiler. This module reads the seed's HIP
source text *at run time* from the shared folder (nothing of it is copied into this repo),
compiles its partial kernel for gfx950 with our clang and the offline HIP stand-in headers
(mla/kernels/hip/offline_include), once as written and once with its ``IGLP`` macro emptied,
and parses both. The seed's Python is never executed: its source strings are evaluated from the
syntax tree, accepting only string literals and ``str(bn|nw|sched)``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import tempfile
from pathlib import Path

from ..kernels.hip.build import ARCH, KERNEL_DIR, clang_version, find_clang
from .isa import parse_amdgpu_asm

REPO_ROOT = Path(__file__).resolve().parents[2]
SEED_CONFIGS = ((64, 4, 1), (64, 4, 3), (128, 4, 1), (128, 4, 3))  # the four the seed builds
# Seed 000's own report (its docstring): b64w4s1 VGPRs 168 -> 144 with iglp on its ROCm compiler.
SEED_REPORTED_VGPR = {(64, 4, 1): (168, 144)}
_IGLP_DEF = re.compile(r"^#define IGLP\(v\)\s+__builtin_amdgcn_iglp_opt\(\(v\)\)\s*$", re.M)


class SeedSourceMissing(RuntimeError):
    """shared/seeds/000_*.txt was not found; the message says where we looked."""


def find_seed(path: str | Path | None = None) -> Path:
    cands = [Path(path)] if path else []
    if os.environ.get("MLA_SEED_DIR"):
        cands.append(Path(os.environ["MLA_SEED_DIR"]))
    cands += [REPO_ROOT / "shared" / "seeds", REPO_ROOT.parent / "shared" / "seeds"]
    for c in cands:
        if c.is_file():
            return c
        if c.is_dir():
            hits = sorted(c.glob("000_*.txt"))
            if hits:
                return hits[0]
    raise SeedSourceMissing(f"no 000_*.txt under {[str(c) for c in cands]} (set MLA_SEED_DIR)")


def _eval_str(node, env: dict) -> str:
    """Evaluate a concatenation of string literals and str(name) calls; refuse anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _eval_str(node.left, env) + _eval_str(node.right, env)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in env):
        return str(env[node.args[0].id])
    raise ValueError(f"unexpected expression in the seed's HIP source at line {getattr(node, 'lineno', '?')}")


def seed_source(seed_file: Path, bn: int, nw: int, sched: int, iglp: bool = True) -> str:
    """The seed's device source for one config (head + body; the torch-binding tail is left out)."""
    text = seed_file.read_text()
    # the seed files start with a 'submission NNN' header line before the Python
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(("#", '"""', "import", "from"))), 0)
    tree = ast.parse("\n".join(lines[start:]))
    head = body = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_HIP_HEAD" for t in node.targets):
            head = _eval_str(node.value, {})
        if isinstance(node, ast.FunctionDef) and node.name == "_hip_body":
            ret = next(n for n in node.body if isinstance(n, ast.Return))
            body = _eval_str(ret.value, dict(bn=bn, nw=nw, sched=sched))
    if head is None or body is None:
        raise SeedSourceMissing(f"{seed_file}: _HIP_HEAD / _hip_body not found")
    src = head + f'\n#define KTAG "b{bn}w{nw}s{sched}"\n' + body
    if not iglp:
        src, n = _IGLP_DEF.subn("#define IGLP(v) ((void)0)", src)
        if n != 1:
            raise ValueError("could not find the seed's IGLP macro definition to disable it")
    return src


def compile_seed(seed_file: Path, bn: int, nw: int, sched: int, iglp: bool, out_dir: Path, clang: str) -> Path:
    src = Path(out_dir) / f"seed000_b{bn}w{nw}s{sched}_{'iglp' if iglp else 'noiglp'}.hip"
    src.write_text(seed_source(seed_file, bn, nw, sched, iglp))
    out = src.with_suffix(".s")
    cmd = [clang, "-x", "hip", "--cuda-device-only", "-nogpuinc", "-nogpulib", f"--offload-arch={ARCH}", "-O3",
           "-ffast-math", "-std=c++17", "-I", str(KERNEL_DIR / "offline_include"), "-S", "-o", str(out), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"seed 000 compile failed ({src.name}):\n{r.stderr[-2000:]}")
    return out


def seed_rows(seed_file: str | Path | None = None, configs=SEED_CONFIGS) -> list[dict]:
    """One row per (seed config, iglp on/off) with parsed resources, plus the seed's reported VGPRs."""
    f = find_seed(seed_file)
    clang = find_clang()
    cver = clang_version(clang)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mla-seed000-") as d:
        for bn, nw, sched in configs:
            for iglp in (False, True):
                k = next(k for k in parse_amdgpu_asm(compile_seed(f, bn, nw, sched, iglp, Path(d), clang).read_text())
                         if k.kernel == "mla_s1")
                rep = SEED_REPORTED_VGPR.get((bn, nw, sched))
                rows.append(dict(source="seed000", target="gfx950", seed_file=f.name, config=f"b{bn}w{nw}s{sched}",
                                 block_n=bn, num_warps=nw, sched=sched, iglp=int(iglp), compiler=cver,
                                 seed_reported_vgpr_rocm=(rep[1] if iglp else rep[0]) if rep else "",
                                 **k.row()))
    return rows
