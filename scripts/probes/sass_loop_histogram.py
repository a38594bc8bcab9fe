"""Opcode histogram of one variant's hottest SASS loop (offline sm90 compile, no GPU needed).

    python scripts/probes/sass_loop_histogram.py v117_n64_w4_s2_gl_mx_rp_ls_p8_qc_pp_cf mxfp4 [--pipes]

Prints instructions per warp per loop trip by opcode (and, with --pipes, by the issue pipe the
opcode runs on: sm90's integer ALU executes at half the FMA pipe's rate, which is what an
"issue-bound" decode runs into). Used to predict a kernel change before spending H200 time on it.
"""
from __future__ import annotations

import argparse
from collections import Counter

from mla.analysis.isa import SASS_ALU_PIPE, sass_functions, sass_hottest_loop
from mla.analysis.isa_triton import _compile, _cuobjdump

# sm90 dispatch pipes (Nsight Compute's pipe names; "alu" is the static report's set); opcodes not
# listed count as "other"
PIPES = {"alu": SASS_ALU_PIPE,
         "fma": {"FFMA", "FMUL", "FADD", "IMAD", "IMUL", "HFMA2", "HMUL2", "HADD2", "I2F", "F2I", "F2FP", "IABS"},
         "xu": {"MUFU"}, "lsu": {"LDS", "STS", "LDSM", "STSM", "LDG", "STG", "LDGSTS", "SHFL", "LDGDEPBAR", "ATOMS"},
         "tensor": {"HGMMA", "QGMMA", "IGMMA", "HMMA", "QMMA", "WARPGROUP"}}


def histogram(variant: str, kv_format: str) -> tuple[Counter, int]:
    items = _compile("sm90", variant, kv_format, {})
    _, sass = _cuobjdump(items[0]["asm"]["cubin"])
    loop = sass_hottest_loop(sass)
    body = sass_functions(sass)[loop.function]
    ops = Counter(i.op.split(".")[0] for i in body if loop.start_addr <= i.addr <= loop.end_addr)
    return ops, sum(ops.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("kv_format", choices=["fp8", "mxfp4", "bf16"])
    ap.add_argument("--pipes", action="store_true")
    a = ap.parse_args()
    ops, total = histogram(a.variant, a.kv_format)
    print(f"{a.variant} {a.kv_format}: {total} instructions per warp per trip")
    for op, n in ops.most_common():
        print(f"  {op:10s} {n:5d}")
    if a.pipes:
        by = Counter()
        for op, n in ops.items():
            by[next((p for p, s in PIPES.items() if op in s), "other")] += n
        print("  by pipe:", dict(by.most_common()))


if __name__ == "__main__":
    main()
