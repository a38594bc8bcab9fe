"""The reference against an independent float64 loop, its causal rule, and the check's rule."""

import math

import pytest
import torch

import mla


def _naive(data, kv_format="bf16"):
    """Per-query, per-head float64 loop written from the problem statement."""
    q, kv_data, qo, kvp, cfg = data
    kv = mla.dequantize_kv(kv_data, kv_format, torch.float64)
    s, out = cfg["q_seq_len"], torch.empty(q.shape[0], q.shape[1], 512, dtype=torch.float64)
    for b in range(cfg["batch_size"]):
        k0, k1 = int(kvp[b]), int(kvp[b + 1])
        for i in range(s):
            row = int(qo[b]) + i
            visible = (k1 - k0) - s + i + 1
            K = kv[k0:k0 + visible]
            for h in range(q.shape[1]):
                logits = (K @ q[row, h].double()) / math.sqrt(576)
                w = torch.softmax(logits, 0)
                out[row, h] = w @ K[:, :512]
    return out


@pytest.mark.parametrize("args", [
    dict(batch_size=3, q_seq_len=1, kv_seq_len=40, seed=0),
    dict(batch_size=2, q_seq_len=4, kv_seq_len=9, seed=1),
    dict(batch_size=4, q_seq_len=1, kv_seq_len=33, seed=2, kv_lens=(1, 7, 33, 2), num_heads=32),
    dict(batch_size=3, q_seq_len=4, kv_seq_len=12, seed=3, kv_lens=(4, 12, 5)),
])
@pytest.mark.parametrize("kv_format", ["bf16", "fp8", "mxfp4"])
def test_reference_matches_naive_loop(args, kv_format):
    data = mla.generate_input(**args)
    ref = mla.reference(data, kv_format=kv_format)
    assert ref.dtype == torch.float32 and ref.shape == (data[0].shape[0], data[0].shape[1], 512)
    torch.testing.assert_close(ref.double(), _naive(data, kv_format), rtol=1e-5, atol=1e-5)


def test_causal_rule_last_query_sees_everything_first_sees_prefix():
    data = mla.generate_input(1, 4, 10, seed=0)
    ref = mla.reference(data)
    q, kv, qo, kvp, cfg = data
    # query 0 of 4 sees 7 tokens: same as a q_seq_len=1 problem over the first 7 tokens
    sub = (q[:1], {"bf16": kv["bf16"][:7]}, qo[:2] * 0 + torch.tensor([0, 1], dtype=torch.int32),
           torch.tensor([0, 7], dtype=torch.int32), dict(cfg, q_seq_len=1, kv_seq_len=7))
    torch.testing.assert_close(ref[0], mla.reference(sub)[0])
    sub_last = (q[3:4], {"bf16": kv["bf16"]}, torch.tensor([0, 1], dtype=torch.int32), kvp,
                dict(cfg, q_seq_len=1))
    torch.testing.assert_close(ref[3], mla.reference(sub_last)[0])


def test_single_token_output_is_that_tokens_value():
    data = mla.generate_input(2, 1, 1, seed=0)
    torch.testing.assert_close(mla.reference(data)[:, 0], data[1]["bf16"][:, 0, :512].float())


def test_check_passes_reference_and_fails_wrong_outputs():
    data = mla.generate_input(2, 1, 64, seed=0)
    ref = mla.reference(data)
    ok, msg = mla.check(data, ref.bfloat16())
    assert ok and msg.startswith("PASS")
    poisoned = ref.bfloat16().clone()
    poisoned[0, 0, 0] = float("nan")
    ok, msg = mla.check(data, poisoned, reference_output=ref)
    assert not ok and "nonfinite=1" in msg
    ok, msg = mla.check(data, (ref + 0.5).bfloat16(), reference_output=ref)
    assert not ok and "mismatch=100.00%" in msg
    ok, msg = mla.check(data, torch.zeros(2, 16, 511, dtype=torch.bfloat16))
    assert not ok and "shape" in msg
    assert mla.check(data, ref)[0]  # the fp32 reference itself passes (any float dtype is judged by value)
    ok, msg = mla.check(data, ref.round().int())
    assert not ok and "dtype" in msg
    with pytest.raises(ValueError):
        mla.check(data, ref.numpy())


def test_check_threshold_is_five_percent():
    """5 % of 5 x 16 x 512 = 40960 elements is a whole 2048: exactly that many mismatches pass, one more fails."""
    data = mla.generate_input(5, 1, 64, seed=0)
    ref = mla.reference(data)
    n = ref.numel()
    limit = n // 20
    assert limit * 20 == n
    for bad, passes in ((limit, True), (limit + 1, False)):
        out = ref.clone().flatten()
        out[:bad] += 1.0  # |ref| < 9 here, so +1 is outside atol + rtol |ref|
        out = out.reshape(ref.shape).bfloat16()
        assert mla.accuracy_metrics(out, ref)["mismatch"] == bad / n
        ok, msg = mla.check(data, out, reference_output=ref)
        assert ok is passes, msg


def test_reference_refuses_a_bad_fp8_scale():
    """The scale mla.decode refuses is refused by the references too (not finite garbage or zeros)."""
    from mla.analysis.accuracy import simulated_a8w8_reference

    data = mla.generate_input(2, 1, 64, seed=0)
    q, kv_data, qo, kvp, cfg = data
    buf, scale = kv_data["fp8"]
    for value in (-1.0, 0.0, float("nan"), float("inf")):
        bad = (q, dict(kv_data, fp8=(buf, torch.full_like(scale, value))), qo, kvp, cfg)
        with pytest.raises(ValueError, match=r"kv_data\['fp8'\] scale must be finite and > 0"):
            mla.reference(bad, kv_format="fp8")
        with pytest.raises(ValueError, match=r"kv_data\['fp8'\] scale must be finite and > 0"):
            simulated_a8w8_reference(bad)
        torch.testing.assert_close(mla.reference(bad), mla.reference(data))  # bf16 KV: the scale is not read


def test_accuracy_metrics_values():
    r = torch.zeros(10)
    o = torch.zeros(10)
    o[0] = 3.0
    m = mla.accuracy_metrics(o, r)
    assert m["max_abs"] == 3.0 and m["mismatch"] == pytest.approx(0.1) and m["nonfinite"] == 0
    with pytest.raises(ValueError):
        mla.accuracy_metrics(o, torch.zeros(9))
