"""Record AITER's calling contract, per release tag, as test data (tests/data/aiter/contract.json).

Reads a local clone of github.com/ROCm/aiter (``--repo``); writes facts, not code:
  signatures   every parameter of get_mla_metadata_info_v1, get_mla_metadata_v1 and mla_decode_fwd
               (name, kind, default as source text, annotation as source text)
  gfx950_asm   the rows of hsa/gfx950/mla/mla_asm.csv (which assembly kernels exist on gfx950)
  info_v1      outputs of get_mla_metadata_info_v1 for the calls our backend makes, computed by running
               AITER's own pure-Python sizing function from that tag (its device queries answered as a
               256-CU gfx950 would), plus the TypeError the old ``num_kv_splits=None`` call raised.

Usage: python scripts/record_aiter_contract.py --repo /path/to/aiter [--tags v0.1.11 ... main]
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import subprocess
import types
from pathlib import Path

import torch

FUNCS = {"get_mla_metadata_info_v1": "aiter/ops/attention.py",
         "get_mla_metadata_v1": "aiter/ops/attention.py",
         "mla_decode_fwd": "aiter/mla.py"}
CSV = "hsa/gfx950/mla/mla_asm.csv"
DEFAULT_TAGS = [f"v0.1.{n}" for n in range(10, 21)] + ["main"]  # v0.1.10: the last one without page_size
OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "aiter" / "contract.json"
# The calls the backend makes: (batch, q_seq_len, heads, q dtype, kv dtype), 32 splits, intra-batch.
INFO_CASES = [(bs, s, h, q, kv) for bs in (4, 32, 64, 256) for s in (1, 4) for h in (16, 32)
              for q, kv in (("bf16", "bf16"), ("bf16", "fp8"), ("fp8", "fp8"))]
CU_NUM = 256  # MI355X


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def find_def(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise KeyError(name)


def signature_of(fn: ast.FunctionDef, src: str) -> list[dict]:
    a = fn.args
    seg = lambda n: None if n is None else ast.get_source_segment(src, n)  # noqa: E731
    params = []
    pos = a.posonlyargs + a.args
    defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(pos, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append({"name": arg.arg, "kind": kind, "default": seg(d), "annotation": seg(arg.annotation)})
    if a.vararg:
        params.append({"name": a.vararg.arg, "kind": "VAR_POSITIONAL", "default": None, "annotation": None})
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append({"name": arg.arg, "kind": "KEYWORD_ONLY", "default": seg(d), "annotation": seg(arg.annotation)})
    if a.kwarg:
        params.append({"name": a.kwarg.arg, "kind": "VAR_KEYWORD", "default": None, "annotation": None})
    return params


class _Props:
    multi_processor_count = CU_NUM
    gcnArchName = "gfx950:sramecc+:xnack-"


def run_info_v1(tree: ast.Module, src: str) -> tuple[list, dict]:
    """Execute the tag's get_mla_metadata_info_v1 (and the same-file helpers it calls) for INFO_CASES."""
    top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    needed, todo = [], ["get_mla_metadata_info_v1"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.append(name)
        for node in ast.walk(top[name]):
            if isinstance(node, ast.Name) and node.id in top and node.id not in needed:
                todo.append(node.id)
    dtypes = types.SimpleNamespace(fp8=torch.float8_e4m3fn, bf16=torch.bfloat16, fp32=torch.float32,
                                   i32=torch.int32, u8=torch.uint8)
    fake_cuda = types.SimpleNamespace(current_device=lambda: 0, get_device_properties=lambda i: _Props())
    fake_torch = types.SimpleNamespace(cuda=fake_cuda, uint64=torch.uint64, int32=torch.int32,
                                       dtype=torch.dtype, Tensor=torch.Tensor, float32=torch.float32)
    ns = {"math": math, "torch": fake_torch, "dtypes": dtypes, "Optional": __import__("typing").Optional,
          "get_gfx": lambda: "gfx950", "get_cu_num": lambda: CU_NUM, "is_experimental_enabled": lambda: False}
    for name in reversed(needed):
        node = top[name]
        node_src = ast.get_source_segment(src, node)
        code = "\n".join(line for line in node_src.splitlines() if not line.lstrip().startswith("@"))
        exec(compile(code, f"aiter:{name}", "exec"), ns)  # noqa: S102 - recording tool, local clone
    fn = ns["get_mla_metadata_info_v1"]
    name_of = {torch.uint64: "uint64", torch.int32: "int32"}
    rows = []
    for bs, s, h, q, kv in INFO_CASES:
        out = fn(bs, s, h, getattr(dtypes, q), getattr(dtypes, kv), is_sparse=False, fast_mode=False,
                 num_kv_splits=32, intra_batch_mode=True)
        shapes = [[list(sh) if isinstance(sh, tuple) else [sh], name_of[dt]] for sh, dt in out]
        rows.append({"args": [bs, s, h, q, kv], "num_kv_splits": 32, "buffers": shapes})
    try:
        fn(4, 1, 16, dtypes.bf16, dtypes.fp8, is_sparse=False, fast_mode=False, num_kv_splits=None,
           intra_batch_mode=True)
        none_call = {"raises": None}
    except Exception as e:  # noqa: BLE001 - the point is to record what it raises
        none_call = {"raises": type(e).__name__, "message": str(e)}
    return rows, none_call


def record(repo: Path, tag: str) -> dict:
    commit = git(repo, "rev-parse", tag).strip()
    entry = {"tag": tag, "commit": commit, "date": git(repo, "log", "-1", "--format=%cI", commit).strip(),
             "signatures": {}}
    trees = {}
    for fn, path in FUNCS.items():
        if path not in trees:
            src = git(repo, "show", f"{commit}:{path}")
            trees[path] = (ast.parse(src), src)
        tree, src = trees[path]
        entry["signatures"][fn] = {"file": path, "params": signature_of(find_def(tree, fn), src)}
    tree, src = trees["aiter/ops/attention.py"]
    entry["info_v1"], entry["info_v1_num_kv_splits_none"] = run_info_v1(tree, src)
    try:
        table = list(csv.DictReader(io.StringIO(git(repo, "show", f"{commit}:{CSV}"))))
    except subprocess.CalledProcessError:  # older tags kept the kernel list in code, not a CSV
        table = []
    keep = ("qType", "kvType", "Gqa", "ps", "qSeqLen", "prefill", "causal", "lse", "cprr", "knl_name")
    entry["gfx950_asm"] = {"file": CSV, "rows": [{k: r[k] for k in keep if k in r} for r in table]}
    return entry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, type=Path)
    ap.add_argument("--tags", nargs="*", default=DEFAULT_TAGS)
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args()
    data = {"source": "https://github.com/ROCm/aiter", "recorded_by": "scripts/record_aiter_contract.py",
            "cu_num_assumed": CU_NUM, "versions": [record(args.repo, t) for t in args.tags]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {args.out} ({len(data['versions'])} versions)")


if __name__ == "__main__":
    main()
