"""Roofline: device ceilings (with their sources) and per-case, per-format floors.

A decode call must at least move its compulsory bytes (:func:`mla.problem.io_bytes`: the KV cache
once, Q in, O out) and do its dense FLOPs (:func:`mla.problem.flops`). Its time is bounded below by

    memory floor  = io_bytes / bandwidth
    compute floor = flops / matrix rate of the format the dot products run in

and the larger one is the floor. ``arithmetic intensity = flops / io_bytes`` against the device's
``ridge point = matrix rate / bandwidth`` says which one binds.

Datasheet numbers are peaks; measured read bandwidth (the ``read_gbs`` column every result row
carries, from :mod:`mla.bench.bandwidth`) is the ceiling a kernel can actually approach, so the
notebooks report "% of measured read bandwidth" for the measuring device's rows. A device without
an entry here gets :func:`probe_spec`: its read probe as the only ceiling, no datasheet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import pandas as pd

from .. import problem as P

# narrowest last: a dot runs in the wider of its two operand formats
FORMAT_WIDTH = {"bf16": 16, "fp8": 8, "mxfp4": 4}


@dataclass(frozen=True)
class DeviceSpec:
    slug: str
    name: str
    hbm_gbs: float  # datasheet peak HBM bandwidth, GB/s (1e9 B/s)
    memory_gb: float
    compute_units: int
    unit_name: str  # "SM" / "CU"
    matrix_tflops: dict  # dense (no sparsity) matrix-core peak per operand format, TFLOP/s
    mma_min_m: int  # smallest M of the matrix instruction a decode kernel would use (rows = heads)
    sources: tuple[str, ...] = field(default_factory=tuple)
    notes: str = ""

    def ridge(self, fmt: str) -> float:
        """FLOP per byte at which the matrix peak of ``fmt`` meets the bandwidth peak."""
        return self.matrix_tflops[fmt] * 1e12 / (self.hbm_gbs * 1e9)


DEVICES: dict[str, DeviceSpec] = {
    "mi355x": DeviceSpec(
        slug="mi355x", name="AMD Instinct MI355X (gfx950, CDNA 4)", hbm_gbs=8000.0, memory_gb=288.0,
        compute_units=256, unit_name="CU",
        # AMD lists 2.5 PFLOPS FP16/BF16, 5.0 PFLOPS FP8, 10 PFLOPS MXFP4 dense; the exact values are
        # 256 CUs x 2.4 GHz peak engine clock x 4096 / 8192 / 16384 FLOP per clock per CU.
        matrix_tflops={"bf16": 2516.6, "fp8": 5033.2, "mxfp4": 10066.3},
        mma_min_m=16,  # v_mfma_*_16x16x* (and 32x32): 16 query heads fill M
        sources=(
            "AMD Instinct MI355X product page / data sheet (amd.com/en/products/accelerators/instinct/mi350/mi355x.html): "
            "288 GB HBM3E, 8 TB/s, 256 CUs, 2.4 GHz; peak dense matrix FP16/BF16 2.5 PF, FP8 5.0 PF, MXFP4 10 PF",
            "AMD CDNA 4 architecture white paper (2025); ISSCC 2026 (8192 FP8 FLOP/clk/CU)",
        ),
        notes="target hardware; not available here: only static compiles and published numbers"),
    "h200": DeviceSpec(
        slug="h200", name="NVIDIA H200 SXM (sm_90, Hopper)", hbm_gbs=4800.0, memory_gb=141.0,
        compute_units=132, unit_name="SM",
        matrix_tflops={"bf16": 989.0, "fp8": 1979.0},  # no FP4 tensor cores on Hopper
        mma_min_m=64,  # wgmma M = 64; mma.sync m16n8k16 allows 16 rows at a lower peak
        sources=(
            "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): 141 GB HBM3e, "
            "4.8 TB/s; BF16 1,979 / FP8 3,958 TFLOPS *with sparsity* -> 989 / 1,979 dense",
            "NVIDIA Hopper architecture (H100/H200 SXM5: 132 SMs)",
        ),
        notes="measured here; MXFP4 operands must be decoded to fp8 or bf16 before the tensor cores"),
    "h100": DeviceSpec(
        slug="h100", name="NVIDIA H100 SXM5 80GB (sm_90, Hopper)", hbm_gbs=3350.0, memory_gb=80.0,
        compute_units=132, unit_name="SM",
        matrix_tflops={"bf16": 989.4, "fp8": 1978.9},  # no FP4 tensor cores on Hopper
        mma_min_m=64,  # wgmma M = 64, as on the H200 (same SM)
        sources=(
            "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): H100 SXM 80 GB HBM3, "
            "3.35 TB/s; BF16 1,979 / FP8 3,958 TFLOPS *with sparsity* -> 989.4 / 1,978.9 dense",
            "NVIDIA H100 Tensor Core GPU Architecture whitepaper (Hopper, 2022): H100 SXM5 132 SMs; peak dense "
            "BF16 989.4 / FP8 1,978.9 TFLOPS",
        ),
        notes="the device tool's stand-in for the H200 (data/measured/h100/); the same SM, less and slower HBM"),
}


def get_device(slug: str) -> DeviceSpec:
    if slug not in DEVICES:
        raise ValueError(f"unknown device {slug!r}; choose from {sorted(DEVICES)}")
    return DEVICES[slug]


def probe_spec(slug: str, read_gbs: float) -> DeviceSpec:
    """A stand-in for a device without a datasheet entry: its measured read bandwidth as the only
    ceiling, no matrix peaks (compute floors and ridges are NaN), so a notebook can still place its
    rows against the bandwidth they reached."""
    if not read_gbs or read_gbs != read_gbs or read_gbs <= 0:
        raise ValueError(f"probe_spec needs a positive read bandwidth for {slug!r}, got {read_gbs!r}")
    return DeviceSpec(slug=slug, name=f"{slug.upper()} (no datasheet entry in mla.analysis.roofline)",
                      hbm_gbs=float(read_gbs), memory_gb=float("nan"), compute_units=0, unit_name="",
                      matrix_tflops={}, mma_min_m=1, notes="read probe only")


def specs_frame(devices: Iterable[str] = ("mi355x", "h200")) -> pd.DataFrame:
    """One row per device of ``devices`` (default: the target and the device of the manifest's headline
    runs; pass "h100" by name): the datasheet numbers, the ridge points, the sources."""
    rows = []
    for d in map(get_device, devices):
        r = dict(device=d.slug, name=d.name, hbm_TBps=d.hbm_gbs / 1000, memory_GB=d.memory_gb,
                 units=f"{d.compute_units} {d.unit_name}s", mma_min_m=d.mma_min_m)
        for f in P.KV_FORMATS:
            r[f"{f}_TFLOPs"] = d.matrix_tflops.get(f, float("nan"))
            r[f"ridge_{f}"] = d.ridge(f) if f in d.matrix_tflops else float("nan")
        r["sources"] = " ; ".join(d.sources)
        rows.append(r)
    return pd.DataFrame(rows)


def dot_format(kv_format: str, q_format: str, device: DeviceSpec) -> str:
    """The format the QK and PV products run in: the wider of the two operands, widened further
    to the narrowest format the device's matrix units take (H200: MXFP4 -> fp8)."""
    for f in (kv_format, q_format):
        if f not in FORMAT_WIDTH:
            raise ValueError(f"unknown format {f!r}; choose from {tuple(FORMAT_WIDTH)}")
    want = max(FORMAT_WIDTH[kv_format], FORMAT_WIDTH[q_format])
    have = sorted((FORMAT_WIDTH[f], f) for f in device.matrix_tflops if FORMAT_WIDTH[f] >= want)
    # a device without matrix peaks (probe_spec) runs the dot in the wider operand format
    return have[0][1] if have else next(f for f, w in FORMAT_WIDTH.items() if w == want)


def arithmetic_intensity(case: P.Case, kv_format: str) -> float:
    return P.flops(case) / P.io_bytes(case, kv_format)


def floors(cases: Iterable[P.Case] = P.LEADERBOARD, device: str | DeviceSpec = "h200",
           kv_formats: Iterable[str] = P.KV_FORMATS, q_format: str = "bf16",
           bandwidth_gbs: float | None = None) -> pd.DataFrame:
    """Per (case, kv_format): bytes, FLOPs, intensity, ridge, memory / compute floors (us).

    ``bandwidth_gbs`` replaces the datasheet bandwidth (pass a measured read bandwidth);
    ``compute_floor_m_us`` charges the matrix unit for its minimum M (rows beyond the
    q_seq_len x heads real rows are wasted), the honest compute floor for a 16-head decode."""
    dev = get_device(device) if isinstance(device, str) else device
    bw = float(bandwidth_gbs or dev.hbm_gbs)
    rows = []
    for c in cases:
        m_rows = c.q_seq_len * c.num_heads
        m_eff = min(1.0, m_rows / dev.mma_min_m)
        for f in kv_formats:
            df = dot_format(f, q_format, dev)
            rate = dev.matrix_tflops.get(df, float("nan")) * 1e12  # NaN: no datasheet peak (probe_spec)
            io, fl = P.io_bytes(c, f), P.flops(c)
            mem_us, comp_us = io / (bw * 1e9) * 1e6, fl / rate * 1e6
            rows.append(dict(
                device=dev.slug, case=c.name, bs=c.batch_size, kv=c.kv_seq_len, heads=c.num_heads,
                q_seq_len=c.q_seq_len, kv_format=f, q_format=q_format, dot_format=df,
                kv_bytes=P.kv_bytes(c, f), io_bytes=io, flops=fl, intensity=fl / io,
                ridge=dev.ridge(df) if df in dev.matrix_tflops else float("nan"),
                bandwidth_gbs=bw, bandwidth_source="measured read" if bandwidth_gbs else "datasheet",
                mem_floor_us=mem_us, compute_floor_us=comp_us, compute_floor_m_us=comp_us / m_eff,
                floor_us=max(mem_us, comp_us) if comp_us == comp_us else mem_us,
                bound="compute" if comp_us > mem_us else "memory"))
    return pd.DataFrame(rows)


def measured_read_gbs(df: pd.DataFrame) -> float | None:
    """The median measured read bandwidth over result rows (the ``read_gbs`` column)."""
    if df is None or "read_gbs" not in df or df["read_gbs"].dropna().empty:
        return None
    return float(df["read_gbs"].dropna().median())


# --- static ceilings: instruction issue and shared memory per KV token (sm90) ----------------------
@dataclass(frozen=True)
class IssueModel:
    """Per-SM throughput limits that a per-KV-token instruction / shared-memory count turns into
    a time floor (a ceiling on throughput: no kernel issues faster)."""
    sms: int
    clock_ghz: float
    warp_instr_per_clk: float  # warp-instructions an SM can issue per clock (one per scheduler)
    smem_bytes_per_clk: float  # shared-memory bytes an SM can move per clock
    alu_warp_instr_per_clk: float = float("nan")  # ALU-pipe warp-instructions an SM completes per clock
    sources: tuple[str, ...] = ()


SM90_ISSUE = IssueModel(
    sms=132, clock_ghz=1.98, warp_instr_per_clk=4, smem_bytes_per_clk=128, alu_warp_instr_per_clk=2,
    sources=("NVIDIA H100/H200 SXM5: 132 SMs, 1,980 MHz max boost clock (Hopper architecture whitepaper)",
             "4 warp schedulers per SM, each issues at most one warp-instruction per clock",
             "shared memory: 32 banks x 4 B = 128 B per clock per SM",
             "64 INT32 lanes per SM (16 per scheduler): an ALU-pipe warp-instruction every 2 clocks per "
             "scheduler (Hopper whitepaper; the ALU-pipe opcodes: mla.analysis.isa.SASS_ALU_PIPE)"))

SM90_DEVICES = frozenset({"h100", "h200"})  # the GPUs SM90_ISSUE and the sm_90 static tables describe

# columns of data/static/sm90/triton.csv the ceilings read (python -m mla isa --target sm90)
STATIC_COLUMNS = ("sass_wgmma", "warp_instr_per_token", "smem_bytes_per_token", "alu_instr_per_token")


def static_ceilings(static: pd.DataFrame | None, variants: dict, cases: Iterable[P.Case] = P.LEADERBOARD,
                    read_gbs: float | None = None, model: IssueModel = SM90_ISSUE,
                    head_groups: int = 1, compiler: str | None = None) -> pd.DataFrame | None:
    """Per (case, kv_format) for the variant ``variants[kv_format]``: the memory floor at
    ``read_gbs``, the issue floor (token visits x warp-instructions per token / (SMs x issue
    rate)), the shared-memory floor (token visits x smem bytes per token / (SMs x 128 B/clk)) and
    the ALU-pipe floor (token visits x ALU-pipe warp-instructions per token / (SMs x 2 per clock);
    per token = the loop's ``loop_alu_pipe_instructions`` x ``num_warps`` / ``block_n``).
    A token visit is one KV token streamed by one program (``head_groups`` programs per token).
    ``compiler`` (e.g. "triton 3.6.0", the measured rows' triton): prefer that compiler's rows where the
    static tables have the variant (data/static/sm90 holds one table per triton version).
    Columns absent from ``static`` give NaN floors (the ISA report may not have them yet); None
    when ``static`` is None."""
    if static is None:
        return None
    st = static[~static["kernel"].astype(str).str.contains("reduce")] if "kernel" in static else static
    if {"loop_alu_pipe_instructions", "num_warps", "block_n"} <= set(st.columns):
        num = lambda c: pd.to_numeric(st[c], errors="coerce")  # noqa: E731
        per_token = num("num_warps") / num("block_n")
        if {"warp_instr_per_token", "loop_sass_instructions"} <= set(st.columns):
            # the loop's own scale (warp_instr_per_token / loop instructions): a warp-specialized kernel's loop
            # counts are one 4-warp partition's tile while its num_warps is the CTA's 16 (isa_triton)
            own = num("warp_instr_per_token") / num("loop_sass_instructions")
            per_token = own.where(own.notna() & (own > 0), per_token)
        st = st.assign(alu_instr_per_token=num("loop_alu_pipe_instructions") * per_token)
    bw = float(read_gbs or get_device("h200").hbm_gbs)
    per_sm_clk = model.sms * model.clock_ghz * 1e9
    rows = []
    for f, v in variants.items():
        hit = st[(st["variant"] == v) & (st["kv_format"] == f)]
        if compiler and "compiler" in hit and (hit["compiler"] == compiler).any():
            hit = hit[hit["compiler"] == compiler]
        # the first row that has the column (data/static/sm90 holds one table per compiler; an older
        # table may lack a newer column)
        vals = {c: float(pd.to_numeric(hit[c], errors="coerce").dropna().iloc[0])
                if c in hit and pd.to_numeric(hit[c], errors="coerce").notna().any() else float("nan")
                for c in STATIC_COLUMNS}
        for c in cases:
            visits = c.total_kv * head_groups
            rows.append(dict(case=c.name, kv_format=f, variant=v, **vals, token_visits=visits, flops=P.flops(c),
                             io_bytes=P.io_bytes(c, f), mem_floor_us=P.io_bytes(c, f) / (bw * 1e3),
                             issue_floor_us=visits * vals["warp_instr_per_token"] / (per_sm_clk * model.warp_instr_per_clk) * 1e6,
                             smem_floor_us=visits * vals["smem_bytes_per_token"] / (per_sm_clk * model.smem_bytes_per_clk) * 1e6,
                             alu_floor_us=visits * vals["alu_instr_per_token"] / (per_sm_clk * model.alu_warp_instr_per_clk) * 1e6))
    out = pd.DataFrame(rows)
    out["static_floor_us"] = out[["mem_floor_us", "issue_floor_us", "smem_floor_us", "alu_floor_us"]].max(axis=1)
    return out
