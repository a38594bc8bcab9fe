#!/usr/bin/env python3
"""CPU model of PV_FP8's P quantization (mla/kernels/triton/gluon_sm90.py, _store_p8): how much of the
output's error comes from P as 256 P = hi + lo in e4m3, next to fp16 P and a single e4m3 term, on the
input generator's distribution (fp32 everything else, so only P's rounding differs; then the bf16
output rounding on top). Rows go to data/accuracy/p8-model.csv with provenance.

    python scripts/probes/p8_accuracy_model.py [--out data/accuracy/p8-model.csv]
"""
import argparse
import datetime
import sys
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import mla  # noqa: E402
from mla.bench.provenance import provenance  # noqa: E402


def e4m3(x):
    return x.to(torch.float8_e4m3fn).float()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="data/accuracy/p8-model.csv")
    args = ap.parse_args()
    prov = provenance("cpu", "p8-model-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    rows = []
    for kv_len, seed in ((1024, 3), (8192, 3), (8192, 5)):
        data = mla.generate_input(2, 1, kv_len, seed=seed, device="cpu")
        q = data[0].float()
        kv = data[1]["bf16"].float().reshape(2, kv_len, 576)
        for b in range(2):
            k, v = kv[b], kv[b][:, :512]
            s = q[b] @ k.T / 576 ** 0.5
            pt = torch.exp(s - s.max(-1, keepdim=True).values)  # unnormalised, max 1
            l = pt.sum(-1, keepdim=True)
            ref = pt @ v / l
            p256 = pt * 256
            hi = e4m3(p256)
            ways = {"e4m3 hi + lo at 256 P (PV_FP8)": (hi + e4m3(p256 - hi)) / 256, "fp16 P": pt.half().float(),
                    "e4m3 single term at 256 P": hi / 256}
            for name, p in ways.items():
                o = p @ v / l
                rel = lambda x: float((x - ref).norm() / ref.norm())  # noqa: E731
                rows.append(dict(prov, timestamp_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                                 kv_len=kv_len, seed=seed, batch_element=b, p_format=name, rel_l2_p_only=rel(o),
                                 rel_l2_bf16_out=rel(o.bfloat16().float())))
    d = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    d.to_csv(args.out, index=False)
    print(d.groupby("p_format")[["rel_l2_p_only", "rel_l2_bf16_out"]].agg(["min", "max"]).to_string())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
