"""generate_input follows the amd-mixed-mla contract; bad inputs get a ValueError naming the problem."""

import copy

import pytest
import torch

import mla
from mla import problem as P
from mla.inputs import MXFP4_SCALE_COLS


def test_contract_shapes_dtypes_and_config():
    q, kv, qo, kvp, cfg = mla.generate_input(4, 1, 64, seed=3)
    assert q.shape == (4, 16, 576) and q.dtype == torch.bfloat16
    assert kv["bf16"].shape == (256, 1, 576) and kv["bf16"].dtype == torch.bfloat16
    buf, scale = kv["fp8"]
    assert buf.dtype == torch.float8_e4m3fn and buf.shape == (256, 1, 576)
    assert scale.dtype == torch.float32 and scale.shape == (1,)
    # the contract's scale: bf16 amax / 448 rounded to bf16 (reference.py's quantize_fp8 works in the cache's dtype)
    assert scale.item() == (kv["bf16"].abs().max() / 448).item()
    assert scale.item() == pytest.approx(kv["bf16"].float().abs().max().item() / 448, rel=2 ** -8)
    packed, scales = kv["mxfp4"]
    assert packed.dtype == torch.uint8 and packed.shape == (256, 1, 288)
    assert scales.dtype == torch.uint8 and scales.shape == (256, MXFP4_SCALE_COLS) and scales.stride(0) == 24
    assert (scales[:, 18:] == 0).all()
    assert qo.dtype == kvp.dtype == torch.int32
    assert qo.tolist() == [0, 1, 2, 3, 4] and kvp.tolist() == [0, 64, 128, 192, 256]
    for key in ("batch_size", "num_heads", "num_kv_heads", "qk_head_dim", "kv_lora_rank", "qk_rope_head_dim",
                "v_head_dim", "q_seq_len", "kv_seq_len", "sm_scale"):
        assert key in cfg
    assert cfg["sm_scale"] == pytest.approx(576 ** -0.5) and cfg["qk_head_dim"] == 576 and cfg["v_head_dim"] == 512


def test_inputs_are_standard_normal_and_seeded():
    a = mla.generate_input(8, 1, 512, seed=1)
    b = mla.generate_input(8, 1, 512, seed=1)
    c = mla.generate_input(8, 1, 512, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1]["bf16"], b[1]["bf16"])
    assert not torch.equal(a[0], c[0])
    kv = a[1]["bf16"].float()
    assert abs(kv.mean().item()) < 0.01 and abs(kv.std().item() - 1) < 0.01


def test_all_formats_come_from_the_same_cache():
    q, kv, *_ = mla.generate_input(2, 1, 128, seed=5)
    truth = kv["bf16"].float().reshape(-1, 576)
    # relative L2 of each format on standard-normal KV (seeds 0-39: fp8 0.0264-0.0269, MXFP4 0.1114-0.1125)
    for fmt, lo, hi in (("fp8", 0.02, 0.03), ("mxfp4", 0.10, 0.125)):
        deq = mla.dequantize_kv(kv, fmt)
        rel = ((deq - truth).norm() / truth.norm()).item()
        assert lo < rel < hi, (fmt, rel)


def test_ragged_q4_and_32_heads():
    q, kv, qo, kvp, cfg = mla.generate_input(4, 4, 1000, seed=0, num_heads=32, kv_lens=(4, 7, 33, 1000))
    assert q.shape == (16, 32, 576)
    assert kvp.tolist() == [0, 4, 11, 44, 1044] and qo.tolist() == [0, 4, 8, 12, 16]
    assert cfg["kv_lens"] == (4, 7, 33, 1000) and cfg["kv_seq_len"] == 1000


def test_case_names_and_sets():
    assert [c.name for c in P.LEADERBOARD][:2] == ["bs4-kv1024-q1-h16", "bs4-kv8192-q1-h16"]
    assert [c.seed for c in P.LEADERBOARD] == [4217, 4220, 5412, 5415, 1357, 1360, 9823, 9826]
    assert [(c.batch_size, c.kv_seq_len, c.seed) for c in P.LEADERBOARD_TESTS] == \
        [(4, 1024, 4220), (32, 1024, 5412), (64, 8192, 1360), (256, 8192, 9826)]
    assert P.case_from_name("bs64-kv8192-q4-h32") == P.Case(64, 8192, q_seq_len=4, num_heads=32)
    # a ragged name is looked up in the named sets (its lengths are not in the name), seed and all
    ragged = next(c for c in P.EXTENDED if c.kv_lens is not None)
    assert P.case_from_name(ragged.name) == ragged and P.case_from_name(ragged.name).name == ragged.name
    with pytest.raises(ValueError, match="no ragged case named"):
        P.case_from_name("bs3-kv999-q1-h16+ragged")
    assert P.EXTENDED[3].name.endswith("+ragged")
    assert P.kv_bytes(P.LEADERBOARD[-1], "mxfp4") == 256 * 8192 * 306
    with pytest.raises(ValueError, match="case set"):
        P.get_cases("nope")
    with pytest.raises(ValueError, match="cannot parse"):
        P.case_from_name("bs4-kvx")


@pytest.mark.parametrize("kwargs,match", [
    (dict(batch_size=0, q_seq_len=1, kv_seq_len=8, seed=0), "batch_size"),
    (dict(batch_size=2, q_seq_len=1, kv_seq_len=0, seed=0), "kv_seq_len"),
    (dict(batch_size=2, q_seq_len=8, kv_seq_len=4, seed=0), "shorter than q_seq_len"),
    (dict(batch_size=2, q_seq_len=1, kv_seq_len=8, seed=0, num_heads=8), "num_heads"),
    (dict(batch_size=2, q_seq_len=1, kv_seq_len=8, seed=0, kv_lens=(8,)), "kv_lens has 1"),
    (dict(batch_size=2, q_seq_len=1, kv_seq_len=8, seed=0, kv_lens=(8, 0)), "kv_lens\\[1\\]"),
    (dict(batch_size=2, q_seq_len=1, kv_seq_len=9, seed=0, kv_lens=(8, 3)), "max\\(kv_lens\\)"),
    (dict(batch_size=2.0, q_seq_len=1, kv_seq_len=8, seed=0), "must be an int"),
])
def test_bad_generate_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mla.generate_input(**kwargs)


def _mutate(data, fn):
    q, kv, qo, kvp, cfg = data
    d = [q, dict(kv), qo.clone(), kvp.clone(), dict(cfg)]
    fn(d)
    return tuple(d)


BAD = {
    "q dtype": (lambda d: d.__setitem__(0, d[0].float()), "q must be bfloat16"),
    "q shape": (lambda d: d.__setitem__(0, d[0][:, :, :512]), "q must have shape"),
    "q rows": (lambda d: d.__setitem__(0, d[0][:3]), "q has 3 rows"),
    "indptr dtype": (lambda d: d.__setitem__(3, d[3].long()), "kv_indptr must be int32"),
    "indptr length": (lambda d: d.__setitem__(3, d[3][:-1]), "kv_indptr must have shape"),
    "indptr not monotone": (lambda d: d[3].copy_(torch.tensor([0, 40, 30, 50, 64], dtype=torch.int32)), "not monotone"),
    "zero-length sequence": (lambda d: d[3].copy_(torch.tensor([0, 16, 16, 32, 64], dtype=torch.int32)), "zero-length"),
    "indptr total": (lambda d: d[3].copy_(torch.tensor([0, 16, 32, 48, 60], dtype=torch.int32)), "does not match"),
    "indptr start": (lambda d: d[2].copy_(torch.tensor([1, 1, 2, 3, 4], dtype=torch.int32)), "must be 0"),
    "bf16 slot holds fp8": (lambda d: d[1].__setitem__("bf16", d[1]["fp8"][0]), "mismatched format"),
    "fp8 slot holds bf16": (lambda d: d[1].__setitem__("fp8", (d[1]["bf16"], d[1]["fp8"][1])), "mismatched format"),
    "mxfp4 short scales": (lambda d: d[1].__setitem__("mxfp4", (d[1]["mxfp4"][0], d[1]["mxfp4"][1][:, :17])), "scales"),
    "fp8 not a pair": (lambda d: d[1].__setitem__("fp8", d[1]["fp8"][0]), "pair"),
    "kv rows disagree": (lambda d: d[1].__setitem__("bf16", d[1]["bf16"][:10]), "disagree"),
    "config missing": (lambda d: d[4].pop("q_seq_len"), "missing"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_data_raises_value_error(name):
    data = mla.generate_input(4, 1, 16, seed=0)
    fn, match = BAD[name]
    bad = _mutate(data, fn)
    with pytest.raises(ValueError, match=match):
        mla.validate_data(bad)  # every format present
    fmt = name.split()[0] if name.split()[0] in mla.KV_FORMATS else "bf16"
    if "disagree" not in match:  # a single-format consumer refuses it too
        with pytest.raises(ValueError, match=match):
            mla.reference(bad, kv_format=fmt)


def test_unknown_formats_raise():
    data = mla.generate_input(2, 1, 16, seed=0)
    with pytest.raises(ValueError, match="kv_format"):
        mla.reference(data, kv_format="int4")
    with pytest.raises(ValueError, match="q_format"):
        mla.reference(data, q_format="int4")
