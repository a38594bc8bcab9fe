"""``python -m mla isa --target gfx950|sm90 [--out DIR]``: the static ISA lab.

gfx950 writes (to ``out/static/gfx950/``, git-ignored; ``--write`` updates ``data/static/gfx950/``):
    hip_variants.csv       every HIP variant (clang, offline) + the LSE reduce kernel
    hip_schedule.csv       before/after pairs: iglp hints, prefetch, BN 64 vs 128
    seed000_clang.csv      seed 000's own kernel (read from shared/seeds at run time), iglp on/off
    triton.csv             the triton backend's kernels, variants x KV formats + the AMD knob sweep
sm90 writes ``out/static/sm90/triton.csv`` (``--write``: ``data/static/sm90/``): registers, smem, spills,
mma vs wgmma, and from the split kernel's hottest SASS loop: warp-instructions, shared-memory bytes
and MMAs per KV token. ``--variant v28_n32_w4_s3_tr,v35_n32_w4_s2_f16wp_tr`` compiles only those.

Every row carries the compiler version, the git commit ('uncommitted' before the first commit)
with a dirty flag, and the UTC time of the run. Nothing here runs a kernel.
"""

from __future__ import annotations

import csv
import datetime as _dt
import functools
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def provenance() -> dict:
    """git commit, dirty flag (mla.bench.provenance.git_state: the one definition), UTC time."""
    from ..bench.provenance import git_state

    commit, dirty = git_state()
    dirty = "unknown" if dirty is None else int(dirty)  # this CSV family's encoding: 0 / 1 / unknown
    return dict(git_commit=commit, git_dirty=dirty,
                generated_utc=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


def write_csv(path: Path, rows: list[dict], prov: dict) -> Path:
    """Rows (union of keys, first-seen order) + provenance columns -> CSV."""
    if not rows:
        raise ValueError(f"no rows to write to {path}")
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    cols += [c for c in prov if c not in cols]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({**r, **prov})
    return path


def run_gfx950(out: Path, *, triton: bool = True, seed: bool = True, asm_dir: Path | None = None,
               log=print, variants=None) -> list[Path]:
    from .isa_hip import comparison_rows, hip_rows

    prov = provenance()
    written = []
    t0 = time.time()
    log("hip: compiling every HIP variant for gfx950 with clang (about a minute) ...")
    rows = hip_rows(asm_dir=asm_dir)
    written.append(write_csv(out / "hip_variants.csv", rows, prov))
    comp = comparison_rows(rows)
    for c in comp:
        c["compiler"] = rows[0]["compiler"]
    written.append(write_csv(out / "hip_schedule.csv", comp, prov))
    log(f"hip: {len(rows)} kernels compiled and parsed in {time.time() - t0:.1f}s")
    if seed:
        from .isa_seed import SeedSourceMissing, seed_rows

        log("seed 000: compiling its kernel with and without the iglp hints ...")
        try:
            srows = seed_rows()
            written.append(write_csv(out / "seed000_clang.csv", srows, prov))
            log(f"seed 000: {len(srows)} builds parsed")
        except SeedSourceMissing as e:
            log(f"seed 000: skipped ({e})")
    if triton:
        written += _triton(out, "gfx950", prov, log, variants)
    return written


def _triton(out: Path, target: str, prov: dict, log, variants=None) -> list[Path]:
    from .isa_triton import TritonOfflineUnavailable, merge_rows, triton_rows

    t0 = time.time()
    log(f"triton ({target}): compiling {', '.join(variants) if variants else 'every variant'} x 3 KV formats ...")
    try:
        rows = triton_rows(target, variants=variants, log=log)
    except TritonOfflineUnavailable as e:
        log(f"triton ({target}): skipped -- {e}")
        return []
    log(f"triton ({target}): {len(rows)} kernels compiled and parsed in {time.time() - t0:.1f}s")
    if variants:  # a partial run updates its variants' rows; the others keep theirs (and their provenance)
        rows, kept = merge_rows(out / "triton.csv", rows, prov)
        prov = {}
        log(f"triton ({target}): kept {kept} rows of other variants from {out / 'triton.csv'}")
    return [write_csv(out / "triton.csv", rows, prov)]


def run_sm90(out: Path, log=print, variants=None) -> list[Path]:
    return _triton(out, "sm90", provenance(), log, variants)


def main(args) -> int:
    from ..bench.provenance import output_root
    from .isa_triton import variant_names

    # a typo is refused before any progress line, with submission --variant's message (close matches only)
    variants = None if args.variant is None else variant_names(args.variant)
    out = Path(args.out) if args.out else output_root(args.write) / "static" / args.target
    print(f"isa --target {args.target}: writing to {out}{'' if args.out or args.write else ' (scratch; --write updates data/static/)'}",
          flush=True)
    log = functools.partial(print, flush=True)  # progress lines while the compiles run
    if args.target == "gfx950":
        files = run_gfx950(out, triton=not args.no_triton, seed=not args.no_seed,
                           asm_dir=Path(args.keep_asm) if args.keep_asm else None, log=log, variants=variants)
    else:
        files = run_sm90(out, log=log, variants=variants)
    for f in files:
        print(f"wrote {f}")
    if not files:
        print("nothing written", file=sys.stderr)
        return 1
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("isa", help="static ISA lab: compile kernels offline, parse registers/LDS/mix",
                              description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=("gfx950", "sm90"), required=True,
                   help="gfx950: the HIP and Triton kernels for MI355X; sm90: the Triton kernels for H100 / H200")
    p.add_argument("--out", help="output folder (default out/static/<target>, git-ignored)")
    p.add_argument("--write", action="store_true", help="without --out: update data/static/<target> (tracked)")
    p.add_argument("--no-triton", action="store_true", help="skip the triton kernels")
    p.add_argument("--variant", help="triton variants to compile, comma-separated (default: all); their rows "
                   "replace theirs in triton.csv, other variants' rows are kept")
    p.add_argument("--no-seed", action="store_true", help="gfx950: skip seed 000's kernel")
    p.add_argument("--keep-asm", metavar="DIR", help="gfx950: keep the HIP variants' .s files in DIR")
    p.set_defaults(func=main)
