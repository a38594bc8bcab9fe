"""The gfx950 kernel's numerical design, modelled in torch (mla.kernels.hip.emulate), passes the
leaderboard check: MXFP4 Q, fp8 P (x256), fp8 V from FP4, tile-wise online softmax, split-K."""

import pytest

from mla import problem as P
from mla.check import check
from mla.inputs import generate_case, generate_input
from mla.kernels.hip.emulate import emulate
from mla.reference import reference


@pytest.mark.parametrize("case", [c for c in P.SMOKE if c.q_seq_len == 1 and c.num_heads == 16], ids=lambda c: c.name)
@pytest.mark.parametrize("block_n, num_splits", [(64, 1), (64, 3), (128, 2)])
def test_emulated_kernel_passes_check(case, block_n, num_splits):
    data = generate_case(case)
    ok, msg = check(data, emulate(data, block_n=block_n, num_splits=num_splits), reference_output=reference(data))
    assert ok, msg


def test_split_count_barely_changes_the_result():
    data = generate_input(2, 1, 1024, 5)
    a, b = emulate(data, num_splits=1).float(), emulate(data, num_splits=7).float()
    assert (a - b).abs().max() < 0.02  # only fp8 P rounding against a different running max differs


def test_emulator_refuses_what_the_kernel_refuses():
    with pytest.raises(ValueError, match="q_seq_len"):
        emulate(generate_input(2, 4, 64, 0))
    with pytest.raises(ValueError, match="block_n"):
        emulate(generate_input(2, 1, 64, 0), block_n=32)
