"""bf16 vs fp32 partial O of the fused, balanced Triton variants: accuracy on CPU (interpreter).

    TRITON_INTERPRET=1 python scripts/partial_dtype_accuracy.py [out.csv]

The interpreter runs the dots in fp32, so the difference between the two rows of a (shape,
format) is the partial's bf16 rounding alone. Writes one row per (shape, kv_format,
partial_dtype) with the run's provenance (default data/measured/cpu/partial-dtype-accuracy.csv).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mla, not an installed one

import mla  # noqa: E402
from mla.bench import provenance as prov  # noqa: E402
from mla.kernels.triton import TritonDecodePlan  # noqa: E402

VARIANTS = {"bf16": "v53_n32_w4_s3_frb", "fp8": "v54_n32_w4_s2_f16wp_frb", "mxfp4": "v55_n32_w4_s2_mxw_frb"}
SHAPES = ((4, 1024, 32, 4217), (1, 8192, 64, 4220))  # (batch, kv, mean splits per element, seed)


def main(out: str) -> None:
    run_id = prov.new_run_id("cpu")
    base = prov.provenance("cpu", run_id)
    rows = []
    for bs, kv, splits, seed in SHAPES:
        data = mla.generate_input(bs, 1, kv, seed=seed)
        truth = mla.reference(data)
        for kvf, variant in VARIANTS.items():
            own = mla.reference(data, kv_format=kvf)
            for pd in ("fp32", "bf16"):
                p = TritonDecodePlan(data, kv_format=kvf, variant=variant, num_splits=splits, partial_dtype=pd)
                o = p.run(data)
                m, mf = mla.accuracy_metrics(o, truth), mla.accuracy_metrics(o, own)
                ok, _ = mla.check(data, o)
                rows.append(dict(case=f"bs{bs}-kv{kv}-q1-h16", seed=seed, kv_format=kvf, variant=variant,
                                 partial_dtype=pd, num_splits=p.num_splits, chunk_tokens=p.chunk_tokens,
                                 rel_l2=m["rel_l2"], max_abs=m["max_abs"], mismatch=m["mismatch"],
                                 rel_l2_fmt=mf["rel_l2"], max_abs_fmt=mf["max_abs"], check_ok=ok,
                                 timestamp_utc=prov.utc_now(), **base))
                print({k: rows[-1][k] for k in ("case", "kv_format", "partial_dtype", "rel_l2", "rel_l2_fmt")},
                      flush=True)
    path = prov.write_rows(out, rows)
    print(f"wrote {len(rows)} rows to {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(prov.REPO_ROOT / "data/measured/cpu/partial-dtype-accuracy.csv"))
