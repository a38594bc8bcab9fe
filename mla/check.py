"""Correctness: the leaderboard's tolerance against the fp32 truth, and the error metrics the notebooks plot.

``check`` compares with the fp32 reference (the truth) element-wise with the leaderboard's
``isclose(rtol=0.1, atol=0.1)``; the output passes when at most ``max_mismatch`` (5%) of the elements
fail. A NaN never passes. The leaderboard itself applies that tolerance against AITER's a8w8 output
(fp8 Q and KV), not against the truth; ``mla.analysis.accuracy.simulated_a8w8_reference`` simulates
that reference on CPU and notebook 01 compares the two.
"""

from __future__ import annotations

import torch

from .reference import reference

LEADERBOARD_RTOL = 0.1
LEADERBOARD_ATOL = 0.1
LEADERBOARD_MAX_MISMATCH = 0.05


def accuracy_metrics(output: torch.Tensor, ref: torch.Tensor, *, rtol: float = LEADERBOARD_RTOL,
                     atol: float = LEADERBOARD_ATOL) -> dict:
    """Error of ``output`` against ``ref`` (same shape): max_abs, mean_abs, rel_l2, mismatch
    (fraction failing isclose), nonfinite (count of NaN/inf in output), numel.

    Non-finite outputs count as mismatches and make max_abs / rel_l2 infinite."""
    if not isinstance(output, torch.Tensor) or not isinstance(ref, torch.Tensor):
        raise ValueError("accuracy_metrics takes two tensors")
    if output.shape != ref.shape:
        raise ValueError(f"output shape {tuple(output.shape)} != reference shape {tuple(ref.shape)}")
    o = output.detach().to(device=ref.device, dtype=torch.float64)
    r = ref.detach().to(torch.float64)
    finite = torch.isfinite(o)
    nonfinite = int((~finite).sum().item())
    diff = (o - r).abs()
    close = torch.isclose(o, r, rtol=rtol, atol=atol)  # False for NaN
    ref_norm = float(torch.linalg.vector_norm(r).item())
    metrics = {
        "max_abs": float("inf") if nonfinite else float(diff.max().item()),
        "mean_abs": float("inf") if nonfinite else float(diff.mean().item()),
        "rel_l2": float("inf") if nonfinite else float(torch.linalg.vector_norm(o - r).item() / max(ref_norm, 1e-30)),
        "mismatch": float((~close).double().mean().item()),
        "nonfinite": nonfinite,
        "numel": o.numel(),
    }
    return metrics


def check(data, output, *, rtol: float = LEADERBOARD_RTOL, atol: float = LEADERBOARD_ATOL,
          max_mismatch: float = LEADERBOARD_MAX_MISMATCH, reference_output: torch.Tensor | None = None):
    """``(ok, message)``: ``output`` against the fp32 reference on the bf16 KV (the truth).

    Pass ``reference_output`` to reuse a reference already computed for these inputs. It is trusted, not
    verified: only its shape is compared, so a reference computed from other inputs (or another KV
    format) is judged against as if it were ``data``'s; telling would cost a reference computation."""
    if not isinstance(output, torch.Tensor):
        raise ValueError(f"output must be a tensor, got {type(output).__name__}")
    ref = reference(data) if reference_output is None else reference_output
    if output.shape != ref.shape:
        return False, f"FAIL: output shape {tuple(output.shape)}, expected {tuple(ref.shape)}"
    if not torch.is_floating_point(output):
        return False, f"FAIL: output dtype {output.dtype} is not floating point"
    m = accuracy_metrics(output, ref, rtol=rtol, atol=atol)
    ok = m["mismatch"] <= max_mismatch and m["nonfinite"] == 0
    msg = (f"{'PASS' if ok else 'FAIL'}: max_abs={m['max_abs']:.3g} mismatch={m['mismatch']:.2%} "
           f"(limit {max_mismatch:.0%} at rtol={rtol}, atol={atol}) rel_l2={m['rel_l2']:.3g}")
    if m["nonfinite"]:
        msg += f" nonfinite={m['nonfinite']}"
    return ok, msg
