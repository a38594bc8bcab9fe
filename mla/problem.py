"""The problem: DeepSeek-R1 absorbed-MLA decode attention, and the named cases we study.

After weight absorption, MLA decode is multi-query attention with one latent KV head:

    q   (total_q, H, 576)      H = 16 query heads (tp=8) or 32 (tp=4)
    kv  (total_kv, 1, 576)     512 latent dims ("nope", kv_lora_rank) + 64 rope dims
    K = kv[..., :576]          every one of the 576 dims
    V = kv[..., :512]          the first 512 dims of the *same* row
    out (total_q, H, 512) = softmax(q K^T * sm_scale) V,  sm_scale = 1/sqrt(576)

Batches are packed: ``qo_indptr`` / ``kv_indptr`` (int32, length batch+1) give each batch
element's rows in ``q`` and ``kv``, exactly like the GPU MODE ``amd-mixed-mla`` task.

A case is named ``bs{B}-kv{N}-q{S}-h{H}`` (``+ragged`` when lengths differ); that name is used
in code, CSVs, figure files and notebook text alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# --- model constants (DeepSeek-R1 absorbed MLA) -------------------------------------------
KV_LORA_RANK = 512  # latent ("nope") dims; V is these
QK_ROPE_HEAD_DIM = 64  # rope dims appended to the latent
QK_HEAD_DIM = KV_LORA_RANK + QK_ROPE_HEAD_DIM  # 576
V_HEAD_DIM = KV_LORA_RANK  # 512
NUM_KV_HEADS = 1
NUM_HEADS = 16  # DeepSeek-R1's 128 heads at tensor parallelism 8
NUM_HEADS_TP4 = 32  # ... at tensor parallelism 4
SUPPORTED_NUM_HEADS = (NUM_HEADS, NUM_HEADS_TP4)
SM_SCALE = 1.0 / math.sqrt(QK_HEAD_DIM)

MXFP4_BLOCK = 32  # OCP MX block size along the head dim
MXFP4_PACKED_DIM = QK_HEAD_DIM // 2  # 288 bytes: two E2M1 values per byte
MXFP4_NUM_BLOCKS = QK_HEAD_DIM // MXFP4_BLOCK  # 18 E8M0 scales per row

KV_FORMATS = ("bf16", "fp8", "mxfp4")
Q_FORMATS = ("bf16", "fp8", "mxfp4")

# Bytes of one KV token (one row of 576 dims) as stored in each format. MXFP4 counts the packed
# nibbles and the 18 scale bytes a kernel uses: 306 B. The contract's scale rows are padded to 24 bytes
# (mla.inputs.MXFP4_SCALE_COLS, as aiter lays them out) and lie back to back, so DRAM, which moves 32-byte
# sectors, delivers all 24 to any kernel: 312 B a token really move, and MXFP4's floors and "% of read" here
# are ~2% optimistic (one convention for every row; rounds 55-56 of docs/notes-triton.md count 312).
KV_BYTES_PER_TOKEN = {
    "bf16": QK_HEAD_DIM * 2,
    "fp8": QK_HEAD_DIM * 1,
    "mxfp4": MXFP4_PACKED_DIM + MXFP4_NUM_BLOCKS,
}


@dataclass(frozen=True)
class Case:
    """One problem instance. ``kv_lens`` (a tuple) makes a ragged batch; else all are kv_seq_len."""

    batch_size: int
    kv_seq_len: int
    seed: int = 0
    q_seq_len: int = 1
    num_heads: int = NUM_HEADS
    kv_lens: tuple[int, ...] | None = field(default=None)

    def __post_init__(self):
        validate_shape(self.batch_size, self.q_seq_len, self.kv_seq_len, self.num_heads, self.kv_lens)

    @property
    def name(self) -> str:
        n = f"bs{self.batch_size}-kv{self.kv_seq_len}-q{self.q_seq_len}-h{self.num_heads}"
        return n + ("+ragged" if self.kv_lens is not None else "")

    @property
    def lengths(self) -> tuple[int, ...]:
        return self.kv_lens if self.kv_lens is not None else (self.kv_seq_len,) * self.batch_size

    @property
    def total_kv(self) -> int:
        return sum(self.lengths)

    def kwargs(self) -> dict:
        """Arguments for :func:`mla.generate_input`."""
        return dict(batch_size=self.batch_size, q_seq_len=self.q_seq_len, kv_seq_len=self.kv_seq_len,
                    seed=self.seed, num_heads=self.num_heads, kv_lens=self.kv_lens)


def validate_shape(batch_size, q_seq_len, kv_seq_len, num_heads, kv_lens=None) -> None:
    """Raise ValueError naming the problem for any shape the contract does not allow."""
    for name, v in (("batch_size", batch_size), ("q_seq_len", q_seq_len), ("kv_seq_len", kv_seq_len)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"{name} must be an int, got {type(v).__name__}")
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v} (a zero-length sequence has no attention)")
    if num_heads not in SUPPORTED_NUM_HEADS:
        raise ValueError(f"num_heads must be one of {SUPPORTED_NUM_HEADS}, got {num_heads}")
    if kv_lens is not None:
        kv_lens = tuple(kv_lens)
        if len(kv_lens) != batch_size:
            raise ValueError(f"kv_lens has {len(kv_lens)} entries for batch_size {batch_size}")
        for i, n in enumerate(kv_lens):
            if int(n) < 1:
                raise ValueError(f"kv_lens[{i}] = {n}: every sequence needs >= 1 KV token")
            if int(n) < q_seq_len:
                raise ValueError(f"kv_lens[{i}] = {n} is shorter than q_seq_len {q_seq_len}")
        if kv_seq_len != max(kv_lens):
            raise ValueError(f"kv_seq_len {kv_seq_len} must equal max(kv_lens) = {max(kv_lens)} for a ragged batch")
    elif kv_seq_len < q_seq_len:
        raise ValueError(f"kv_seq_len {kv_seq_len} is shorter than q_seq_len {q_seq_len}")


def case_from_name(name: str, seed: int = 0) -> Case:
    """Inverse of ``Case.name``: ``bs4-kv1024-q1-h16`` -> Case. A ragged name (``...+ragged``) does not
    hold its lengths, so it must be one of the named sets' cases (returned as defined there, seed
    included); any other ragged name is a ValueError."""
    if name.endswith("+ragged"):
        known = [c for cases in CASE_SETS.values() for c in cases if c.kv_lens is not None]
        for c in known:
            if c.name == name:
                return c
        raise ValueError(f"no ragged case named {name!r} in the case sets (a ragged name does not hold its "
                         f"lengths); known: {sorted({c.name for c in known})}")
    fields = [(p[:2], p[2:]) if p[:2] in ("bs", "kv") else (p[:1], p[1:]) for p in name.split("-")]
    keys = [k for k, _ in fields]
    if not {"bs", "kv"} <= set(keys) <= {"bs", "kv", "q", "h"} or len(set(keys)) < len(keys) \
            or not all(v.isdigit() for _, v in fields):
        raise ValueError(f"cannot parse case name {name!r}; expected like 'bs4-kv1024-q1-h16' (q and h optional)")
    parts = {k: int(v) for k, v in fields}
    try:  # it parses: a value out of range is validate_shape's message, about this name
        return Case(parts["bs"], parts["kv"], seed=seed, q_seq_len=parts.get("q", 1), num_heads=parts.get("h", NUM_HEADS))
    except ValueError as e:
        raise ValueError(f"case {name!r}: {e}") from None


# --- named case sets -------------------------------------------------------------------------
# The amd-mixed-mla leaderboard: benchmark cases (bs x kv with their seeds) and test cases.
LEADERBOARD = (
    Case(4, 1024, seed=4217), Case(4, 8192, seed=4220),
    Case(32, 1024, seed=5412), Case(32, 8192, seed=5415),
    Case(64, 1024, seed=1357), Case(64, 8192, seed=1360),
    Case(256, 1024, seed=9823), Case(256, 8192, seed=9826),
)
LEADERBOARD_TESTS = (
    Case(4, 1024, seed=4220), Case(32, 1024, seed=5412),
    Case(64, 8192, seed=1360), Case(256, 8192, seed=9826),
)
_RAGGED_64 = tuple(64 + (i * 997) % 4096 for i in range(64))  # 64 lengths spread over 64..4159
_RAGGED_64_MAX = max(_RAGGED_64)
# Beyond the leaderboard: speculative decode (4 query tokens), tp=4 (32 heads), ragged batches.
EXTENDED = (
    Case(32, 8192, seed=11, q_seq_len=4),
    Case(64, 1024, seed=12, num_heads=NUM_HEADS_TP4),
    Case(64, 8192, seed=13, num_heads=NUM_HEADS_TP4),
    Case(8, 8192, seed=14, kv_lens=(1, 7, 33, 1000, 8192, 4096, 2048, 513)),
    Case(64, _RAGGED_64_MAX, seed=15, kv_lens=_RAGGED_64),
)
# Small enough for the CPU (tests, smoke runs, replay-mode notebooks): same structure, fewer bytes.
SMOKE = (
    Case(4, 256, seed=4217), Case(2, 1024, seed=4220),
    Case(3, 128, seed=7, q_seq_len=4), Case(2, 256, seed=8, num_heads=NUM_HEADS_TP4),
    Case(4, 1000, seed=9, kv_lens=(1, 7, 33, 1000)),
)

CASE_SETS = {"leaderboard": LEADERBOARD, "tests": LEADERBOARD_TESTS, "extended": EXTENDED, "smoke": SMOKE}


def get_cases(name: str) -> tuple[Case, ...]:
    if name not in CASE_SETS:
        raise ValueError(f"unknown case set {name!r}; choose from {sorted(CASE_SETS)}")
    return CASE_SETS[name]


# --- bytes and FLOPs (the two numbers that come first) ----------------------------------------
def kv_bytes(case: Case, kv_format: str) -> int:
    """Fewest bytes a kernel must read from the KV cache: every token once."""
    if kv_format not in KV_BYTES_PER_TOKEN:
        raise ValueError(f"unknown kv_format {kv_format!r}; choose from {KV_FORMATS}")
    return case.total_kv * KV_BYTES_PER_TOKEN[kv_format]


def io_bytes(case: Case, kv_format: str) -> int:
    """KV bytes + reading bf16 Q + writing bf16 O: the compulsory HBM traffic."""
    total_q = case.batch_size * case.q_seq_len
    return kv_bytes(case, kv_format) + total_q * case.num_heads * (QK_HEAD_DIM + V_HEAD_DIM) * 2


def flops(case: Case) -> int:
    """Dense QK^T (576) + PV (512) multiply-adds per (query, head, KV token), times two."""
    total_q = case.batch_size * case.q_seq_len
    per_q = case.total_kv / case.batch_size  # mean KV length per batch element
    return int(2 * total_q * case.num_heads * per_q * (QK_HEAD_DIM + V_HEAD_DIM))
