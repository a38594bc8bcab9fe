"""The named variants of the gfx950 MXFP4 kernel (``mla_mxfp4_decode.hip``).

Each variant is one set of compile-time knobs and one line on what changed, llm.c style. The
baseline is ``b64w4_plain``; every other line says how it differs from its neighbour.
Nothing here has run on an MI355X in this project: the ISA lab compiles them, the ``hip``
backend runs them on a ROCm gfx950 machine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    bn: int          # KV tokens per tile
    nw: int          # waves per workgroup
    iglp: bool       # iglp_opt(1) in the QK region, iglp_opt(0) in the PV region
    prefetch: bool   # next tile's K loads issued before PV (loop-carried registers)
    what: str        # one line: what changed

    def __post_init__(self):
        if self.bn not in (64, 128):
            raise ValueError(f"variant {self.name!r}: BN must be 64 or 128, got {self.bn}")
        if self.nw < 1 or (self.bn // 16) % self.nw or 512 % (16 * self.nw):
            raise ValueError(f"variant {self.name!r}: NW={self.nw} does not divide BN/16={self.bn // 16} "
                             f"sub-tiles and the 32 V column blocks")

    @property
    def schedule(self) -> str:
        return {(False, False): "plain", (True, False): "iglp",
                (False, True): "prefetch", (True, True): "prefetch+iglp"}[(self.iglp, self.prefetch)]

    @property
    def defines(self) -> list[str]:
        return [f"-DMLA_BN={self.bn}", f"-DMLA_NW={self.nw}",
                f"-DMLA_USE_IGLP={int(self.iglp)}", f"-DMLA_PREFETCH={int(self.prefetch)}"]

    @property
    def threads(self) -> int:
        return 64 * self.nw


_V = Variant
VARIANTS: dict[str, Variant] = {v.name: v for v in (
    _V("b64w4_plain", 64, 4, False, False,
       "baseline: 64-token tiles, 4 waves (one 16-token QK sub-tile each), compiler's own schedule"),
    _V("b64w4_iglp", 64, 4, True, False,
       "+ iglp_opt(1) after the QK MFMAs and iglp_opt(0) after PV (seed 000's v24 hint)"),
    _V("b64w4_pf", 64, 4, False, True,
       "+ cross-iteration prefetch: next tile's K loads issued before PV, pinned by sched_barrier"),
    _V("b64w4_pf_iglp", 64, 4, True, True,
       "prefetch and iglp hints together"),
    _V("b128w4_plain", 128, 4, False, False,
       "128-token tiles: 2 QK sub-tiles per wave, half the barriers per token, 2x the LDS"),
    _V("b128w4_iglp", 128, 4, True, False,
       "128-token tiles + iglp hints"),
    _V("b128w4_pf", 128, 4, False, True,
       "128-token tiles + cross-iteration prefetch (2 sub-tiles of K live across PV)"),
    _V("b128w4_pf_iglp", 128, 4, True, True,
       "128-token tiles + prefetch + iglp hints"),
    _V("b64w2_iglp", 64, 2, True, False,
       "2 waves: each owns 2 QK sub-tiles and 16 V column blocks (64 accumulator VGPRs)"),
    _V("b128w8_iglp", 128, 8, True, False,
       "8 waves: one QK sub-tile and 4 V column blocks each; more waves share one LDS tile"),
)}

DEFAULT_VARIANT = "b64w4_iglp"


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise ValueError(f"unknown hip variant {name!r}; choose from {list(VARIANTS)}")
    return VARIANTS[name]
