"""The ``hip`` backend off gfx950: it lists itself, says why it cannot run, and refuses
unsupported requests with a ValueError that names the problem (the same on any machine)."""

import pytest

from mla.backends import BackendUnavailable, backends, decode
from mla.backends.hip_backend import BACKEND, choose_num_splits, validate_request
from mla.inputs import generate_input


def test_listed_with_reason():
    row = next(b for b in backends() if b["name"] == "hip")
    assert row["available"] is False
    assert row["reason"].startswith("needs ROCm on gfx950 (MI355X)")
    assert row["kv_formats"] == ("mxfp4",)


def test_valid_request_is_unavailable_here():
    data = generate_input(2, 1, 64, 0)
    with pytest.raises(BackendUnavailable, match="gfx950"):
        decode(data, backend="hip", kv_format="mxfp4")


@pytest.mark.parametrize("kwargs, match", [
    (dict(kv_format="fp8"), "kv_format 'fp8' is unsupported"),
    (dict(kv_format="bf16"), "kv_format 'bf16' is unsupported"),
    (dict(kv_format="mxfp4", q_format="fp8"), "q_format 'fp8' is unsupported"),
])
def test_unsupported_formats(kwargs, match):
    with pytest.raises(ValueError, match=match):
        decode(generate_input(2, 1, 64, 0), backend="hip", **kwargs)


def test_unsupported_shapes():
    with pytest.raises(ValueError, match="q_seq_len 4 is unsupported"):
        decode(generate_input(2, 4, 64, 0), backend="hip", kv_format="mxfp4")
    with pytest.raises(ValueError, match="32 query heads are unsupported"):
        decode(generate_input(2, 1, 64, 0, num_heads=32), backend="hip", kv_format="mxfp4")


def test_config_and_layout_checks():
    data = generate_input(2, 1, 64, 0)
    with pytest.raises(ValueError, match="unknown config"):
        validate_request(data, "mxfp4", "bf16", dict(block_n=64))
    with pytest.raises(ValueError, match="unknown hip variant"):
        validate_request(data, "mxfp4", "bf16", dict(variant="b32w1"))
    with pytest.raises(ValueError, match="num_splits"):
        validate_request(data, "mxfp4", "bf16", dict(num_splits=0))
    q, kv, qo, kvi, cfg = data
    packed, scales = kv["mxfp4"]
    bad = (q, {**kv, "mxfp4": (packed, scales.t())}, qo, kvi, cfg)
    with pytest.raises(ValueError, match="scales"):
        validate_request(bad, "mxfp4", "bf16", {})
    validate_request(data, "mxfp4", "bf16", dict(variant="b128w4_pf", num_splits=8))


def test_split_heuristic():
    assert choose_num_splits(256, 8192, 64) == 2        # 256 workgroups already ~1 per CU
    assert choose_num_splits(4, 8192, 64) == 64         # small batch: many splits, capped
    assert choose_num_splits(4, 100, 64) == 1           # short sequence: not worth splitting
    with pytest.raises(ValueError):
        choose_num_splits(0, 10, 64)
    assert BACKEND.name == "hip"
