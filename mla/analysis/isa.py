"""Parse compiler output into per-kernel resource and instruction-mix numbers.

Two kinds of text:

* AMDGPU assembly (``clang -S`` for HIP, Triton's ``amdgcn`` stage): each kernel's body, the
  ``; Kernel info:`` comment block (VGPR/AGPR/SGPR, scratch, LDS, occupancy) and the YAML
  metadata (spill counts, workgroup size). :func:`parse_amdgpu_asm`.
* NVIDIA PTX / SASS and ``ptxas -v`` output. :func:`parse_ptx`, :func:`parse_sass`,
  :func:`parse_ptxas_info`; :func:`sass_hottest_loop` for one trip of the main loop, with the
  shared-memory bytes it moves (:func:`sass_smem_bytes`, :func:`sass_wgmma_smem_bytes`).

Counts are *static*: an instruction inside a loop counts once. For that reason both parsers also
report the mix of the hottest loop (the largest region closed by a backward branch), and the SASS
side turns one trip of it into per-KV-token figures (:meth:`SassLoop.per_token`, the
``SM90_LOOP_COLUMNS`` of the sm90 report).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

# --- gfx950 (CDNA4) resources, for the occupancy breakdown -------------------------------------
GFX950 = dict(
    vgprs_per_simd=512,   # unified VGPR+AGPR file per lane per SIMD (gfx90a and later)
    vgpr_granule=8,
    max_waves_per_simd=8,
    simds_per_cu=4,
    lds_bytes_per_cu=160 * 1024,  # CDNA4 doubled LDS to 160 KB per CU
)


@dataclass
class AmdKernelStats:
    kernel: str
    vgpr: int = 0              # arch VGPRs (NumVgprs)
    agpr: int = 0              # accumulation VGPRs (NumAgprs)
    vgpr_total: int = 0        # TotalNumVgprs: what occupancy is computed from
    sgpr: int = 0              # TotalNumSgprs
    lds_bytes: int = 0         # static LDS per workgroup
    scratch_bytes: int = 0     # private segment per lane
    vgpr_spill: int = 0
    sgpr_spill: int = 0
    occupancy_compiler: int = 0  # the compiler's "; Occupancy:" (waves per SIMD)
    workgroup_size: int = 0      # max flat workgroup size (launch bounds)
    code_bytes: int = 0
    mix: Counter = field(default_factory=Counter)       # whole kernel, static
    loop_mix: Counter = field(default_factory=Counter)  # hottest loop body, static
    mfma_kinds: Counter = field(default_factory=Counter)

    def occupancy(self, hw: dict = GFX950) -> dict:
        """Waves per SIMD allowed by VGPRs and by LDS, the minimum, and which one binds."""
        g = hw["vgpr_granule"]
        alloc = max(g, -(-max(self.vgpr_total, 1) // g) * g)
        by_vgpr = min(hw["max_waves_per_simd"], hw["vgprs_per_simd"] // alloc)
        waves_per_wg = max(1, -(-self.workgroup_size // 64)) if self.workgroup_size else 1
        if self.lds_bytes:
            wgs = hw["lds_bytes_per_cu"] // self.lds_bytes
            by_lds = min(hw["max_waves_per_simd"], (wgs * waves_per_wg) // hw["simds_per_cu"])
        else:
            by_lds = hw["max_waves_per_simd"]
        waves = min(by_vgpr, by_lds)
        limiter = "vgpr" if by_vgpr < by_lds else ("lds" if by_lds < by_vgpr else "vgpr=lds")
        if waves == hw["max_waves_per_simd"]:
            limiter = "max"
        return dict(waves_by_vgpr=by_vgpr, waves_by_lds=by_lds, waves_per_simd=waves, limiter=limiter)

    def row(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("mix", "loop_mix", "mfma_kinds")}
        d.update(self.occupancy())
        for k in AMD_MIX_KEYS:
            d[k] = self.mix.get(k, 0)
        for k in AMD_MIX_KEYS:
            d["loop_" + k] = self.loop_mix.get(k, 0)
        d["mfma_kinds"] = ";".join(f"{k}:{n}" for k, n in sorted(self.mfma_kinds.items()))
        return d


# Instruction classes, in CSV column order. A mnemonic can fall in several (e.g. an MFMA of the
# scaled kind counts in mfma and mfma_scaled).
AMD_MIX_KEYS = ("instructions", "mfma", "mfma_scaled", "mfma_fp8", "mfma_bf16_f16", "ds_read_tr",
                "ds_read", "ds_write", "global_load", "global_store", "s_waitcnt", "s_barrier",
                "cvt_scale", "v_exp", "dpp", "sched_hint", "scratch")  # scratch: spill loads / stores


def classify_amd(mnemonic: str, operands: str = "") -> list[str]:
    m = mnemonic
    out = ["instructions"]
    if m.startswith("v_mfma") or m.startswith("v_smfmac"):
        out.append("mfma")
        if m.startswith("v_mfma_scale"):
            out.append("mfma_scaled")
        elif "fp8" in m or "bf8" in m or "f8f6f4" in m:
            out.append("mfma_fp8")
        elif "bf16" in m or "f16" in m:
            out.append("mfma_bf16_f16")
    elif m.startswith(("ds_read", "ds_load")):
        out.append("ds_read")
        if "_tr" in m:
            out.append("ds_read_tr")
    elif m.startswith(("ds_write", "ds_store")):
        out.append("ds_write")
    elif m.startswith(("global_load", "buffer_load", "flat_load")):
        out.append("global_load")
    elif m.startswith(("global_store", "buffer_store", "flat_store")):
        out.append("global_store")
    elif m == "s_waitcnt" or m.startswith("s_waitcnt_"):
        out.append("s_waitcnt")
    elif m == "s_barrier":
        out.append("s_barrier")
    elif m.startswith("v_cvt_scalef32"):
        out.append("cvt_scale")
    elif m.startswith("scratch_"):  # gfx9's spill path (scratch_load / scratch_store): where the spills run
        out.append("scratch")
    elif m.startswith("v_exp_"):
        out.append("v_exp")
    elif m in ("s_setprio", "sched_barrier", "s_sched_group_barrier"):
        out.append("sched_hint")
    if re.search(r"\b(quad_perm|row_\w+|wave_\w+|bank_mask)\b", operands) and m.startswith("v_"):
        out.append("dpp")
    return out


_FUNC_START = re.compile(r"^([A-Za-z_.$][\w.$]*):\s*(?:;.*)?$")
_LABEL = re.compile(r"^(\.?L\w+|[A-Za-z_$][\w.$]*):")
_BRANCH = re.compile(r"^\s*(s_cbranch_\w+|s_branch)\s+(\S+)")
_INFO = {
    "NumVgprs": "vgpr", "NumAgprs": "agpr", "TotalNumVgprs": "vgpr_total", "TotalNumSgprs": "sgpr",
    "ScratchSize": "scratch_bytes", "Occupancy": "occupancy_compiler", "codeLenInByte": "code_bytes",
}


def _instr(line: str):
    """(mnemonic, operands) for an instruction line, else None (labels, directives, comments)."""
    s = line.split(";", 1)[0].strip()
    if not s or s.startswith(".") or s.endswith(":"):
        return None
    parts = s.split(None, 1)
    mn = parts[0]
    if not re.match(r"^[a-z][a-z0-9_]*$", mn):
        return None
    return mn, (parts[1] if len(parts) > 1 else "")


def _kernel_bodies(text: str) -> dict[str, list[str]]:
    """Kernel name -> its body lines, from each '.type NAME,@function' label to '.Lfunc_endN'."""
    names = re.findall(r"^\s*\.type\s+([\w.$]+)\s*,\s*@function", text, re.M)
    lines = text.splitlines()
    bodies: dict[str, list[str]] = {}
    for name in names:
        start = next((i for i, ln in enumerate(lines) if ln.startswith(name + ":")), None)
        if start is None:
            continue
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(".Lfunc_end")), len(lines))
        bodies[name] = lines[start + 1:end]
    return bodies


def _hottest_loop(body: list[str]) -> list[str]:
    """Lines of the largest region [label, backward branch to it]: the main loop."""
    label_at = {}
    best: tuple[int, int] | None = None
    for i, ln in enumerate(body):
        m = _LABEL.match(ln.strip())
        if m:
            label_at[m.group(1)] = i
        b = _BRANCH.match(ln)
        if b and b.group(2) in label_at:
            j = label_at[b.group(2)]
            if best is None or (i - j) > (best[1] - best[0]):
                best = (j, i)
    return body[best[0]:best[1] + 1] if best else []


def _mix(lines: list[str]) -> tuple[Counter, Counter]:
    mix, kinds = Counter(), Counter()
    for ln in lines:
        ins = _instr(ln)
        if ins is None:
            # iglp_opt and sched_barrier leave only a comment in the asm; count them as hints
            if re.search(r";\s*(iglp_opt|sched_barrier|sched_group_barrier)", ln):
                mix["sched_hint"] += 1
            continue
        for k in classify_amd(*ins):
            mix[k] += 1
        if ins[0].startswith(("v_mfma", "v_smfmac")):
            kinds[ins[0]] += 1
    return mix, kinds


def _metadata_block(text: str, name: str) -> str:
    """The YAML amdhsa.kernels entry for ``name`` (from its '- .agpr_count' to the next '- .')."""
    m = re.search(r"amdhsa\.kernels:(.*?)(?:amdhsa\.target|\.end_amdgpu_metadata)", text, re.S)
    if not m:
        return ""
    entries = re.split(r"\n  - \.", m.group(1))
    for e in entries:
        if re.search(rf"^\s*\.name:\s+{re.escape(name)}\s*$", e, re.M):
            return e
    return ""


def parse_amdgpu_asm(text: str) -> list[AmdKernelStats]:
    """Every kernel in an AMDGPU ``.s`` file with its resources and instruction mix."""
    out = []
    bodies = _kernel_bodies(text)
    for name, body in bodies.items():
        st = AmdKernelStats(kernel=name)
        # "; Kernel info:" block comes after the function end; find the one for this kernel.
        ki = re.search(rf"^\.Lfunc_end\d+:\s*\n\s*\.size\s+{re.escape(name)},.*?(?=^\s*\.type|\Z)", text, re.M | re.S)
        block = ki.group(0) if ki else ""
        for key, attr in _INFO.items():
            m = re.search(rf"^;\s*{key}\s*[:=]\s*(\d+)", block, re.M)
            if m:
                setattr(st, attr, int(m.group(1)))
        m = re.search(r"^;\s*LDSByteSize:\s*(\d+)", block, re.M)
        if m:
            st.lds_bytes = int(m.group(1))
        meta = _metadata_block(text, name)
        for key, attr in (("vgpr_spill_count", "vgpr_spill"), ("sgpr_spill_count", "sgpr_spill"),
                          ("max_flat_workgroup_size", "workgroup_size"),
                          ("group_segment_fixed_size", "lds_bytes"),
                          ("private_segment_fixed_size", "scratch_bytes")):
            mm = re.search(rf"\.{key}:\s+(\d+)", meta)
            if mm and (attr not in ("lds_bytes", "scratch_bytes") or not getattr(st, attr)):
                setattr(st, attr, int(mm.group(1)))
        if not st.vgpr_total:
            st.vgpr_total = st.vgpr + st.agpr
        st.mix, st.mfma_kinds = _mix(body)
        st.loop_mix, _ = _mix(_hottest_loop(body))
        out.append(st)
    if not out:
        raise ValueError("no kernels found in the AMDGPU assembly (expected '.type NAME,@function' labels)")
    return out


# --- NVIDIA ---------------------------------------------------------------------------------------
NV_MIX_KEYS = ("instructions", "mma", "wgmma", "ldmatrix", "cp_async", "tma", "ld_global", "ld_shared",
               "st_shared", "bar_sync", "ex2", "stmatrix")


def parse_ptx(text: str) -> Counter:
    """Static PTX instruction mix: mma.sync vs wgmma.mma_async, async copies, shared traffic."""
    mix = Counter()
    for ln in text.splitlines():
        s = ln.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$")) or s.endswith(":"):
            continue
        s = re.sub(r"^@!?%\w+\s+", "", s)  # predicate guard
        op = s.split(None, 1)[0].rstrip(";")
        mix["instructions"] += 1
        if op.startswith("mma.sync"):
            mix["mma"] += 1
        elif op.startswith("wgmma.mma_async"):
            mix["wgmma"] += 1
        elif op.startswith("ldmatrix"):
            mix["ldmatrix"] += 1
        elif op.startswith("stmatrix"):
            mix["stmatrix"] += 1
        elif op.startswith("cp.async.bulk"):
            mix["tma"] += 1
        elif op.startswith("cp.async"):
            mix["cp_async"] += 1
        elif op.startswith(("ld.global", "ld.param.global")):
            mix["ld_global"] += 1
        elif op.startswith("ld.shared"):
            mix["ld_shared"] += 1
        elif op.startswith("st.shared"):
            mix["st_shared"] += 1
        elif op.startswith(("bar.sync", "barrier.sync", "bar.arrive")):
            mix["bar_sync"] += 1
        elif op.startswith("ex2"):
            mix["ex2"] += 1
    return mix


def classify_sass(op: str) -> list[str]:
    """NV_MIX_KEYS classes of one SASS opcode (with its dotted modifiers, e.g. ``LDSM.16.M88.4``).

    mma = warp-level ``mma.sync`` (HMMA; IMMA/QMMA for int8/fp8); wgmma = warpgroup MMA
    (HGMMA/QGMMA/IGMMA/BGMMA, ``wgmma.mma_async`` in PTX); tma = UTMALDG/UTMASTG/UBLKCP."""
    base = op.split(".")[0]
    out = ["instructions"]
    cls = {"HMMA": "mma", "IMMA": "mma", "QMMA": "mma", "HGMMA": "wgmma", "QGMMA": "wgmma", "IGMMA": "wgmma",
           "BGMMA": "wgmma", "LDSM": "ldmatrix", "STSM": "stmatrix", "LDGSTS": "cp_async", "UBLKCP": "tma",
           "UTMALDG": "tma", "UTMASTG": "tma", "LDG": "ld_global", "LDS": "ld_shared", "STS": "st_shared",
           "BAR": "bar_sync"}.get(base)
    if cls:
        out.append(cls)
    elif base == "MUFU" and ".EX2" in op:
        out.append("ex2")
    return out


# sm90's ALU pipe (Nsight Compute's "alu"): integer and logic ops, compares, selects, float min / max;
# 16 lanes per scheduler, so one warp instruction per 2 cycles (FFMA / IMAD issue to the FMA pipes).
# Static and by opcode name, an approximation: the floor model of the MXFP4 decode uses it
# (docs/notes-triton.md, "Rounds 16-17").
SASS_ALU_PIPE = frozenset({"LOP3", "LOP", "PRMT", "SHF", "IADD3", "ISETP", "SEL", "FSEL", "FSETP", "FMNMX", "IMNMX",
                           "LEA", "MOV", "VIADD", "SGXT", "BMSK", "FLO", "POPC", "BREV", "PLOP3", "P2R", "R2P"})


@dataclass
class SassInstr:
    addr: int       # byte offset in the function (the ``/*0a30*/`` column)
    op: str         # opcode with modifiers, e.g. ``LDGSTS.E.BYPASS.LTC128B.128``
    operands: str   # text up to the ';' (predicate guard removed)


# '/*0a30*/   @!P0 LDGSTS.E.BYPASS.128 [R2], desc[UR6][R4.64] ;   /* 0x... */' (cuobjdump -sass, nvdisasm)
_SASS_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)([^;]*);")
_SASS_LABEL = re.compile(r"^\s*(\.L\w*):")   # nvdisasm labels ('.L_x_12:'); cuobjdump uses addresses
_SASS_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")


def sass_functions(text: str) -> dict[str, list[SassInstr]]:
    """Function name -> its instructions, split at cuobjdump's ``Function : NAME`` headers
    (addresses restart per function; text without a header is one function named '')."""
    funcs: dict[str, list[SassInstr]] = {}
    labels: dict[str, list[tuple[str, int]]] = {}  # function -> [(label, index of the next instruction)]
    cur = ""
    for ln in text.splitlines():
        f = _SASS_FUNC.match(ln)
        if f:
            cur = f.group(1)
            funcs.setdefault(cur, [])
            continue
        lab = _SASS_LABEL.match(ln)
        if lab:
            labels.setdefault(cur, []).append((lab.group(1), len(funcs.setdefault(cur, []))))
            continue
        m = _SASS_INSTR.match(ln)
        if m:
            funcs.setdefault(cur, []).append(SassInstr(int(m.group(1), 16), m.group(2), m.group(3).strip()))
    # nvdisasm branches name a label: rewrite '`(.L_x_12)' into the address it stands for
    for name, labs in labels.items():
        body = funcs[name]
        addr = {lab: (body[i].addr if i < len(body) else None) for lab, i in labs}
        for ins in body:
            if ins.op.split(".")[0] in _BRANCH_OPS:
                ins.operands = re.sub(r"`?\((\.L\w*)\)", lambda mm: hex(addr[mm.group(1)])
                                      if addr.get(mm.group(1)) is not None else mm.group(0), ins.operands)
    return {k: v for k, v in funcs.items() if v}


def parse_sass(text: str) -> Counter:
    """Static SASS mix from ``cuobjdump -sass`` / ``nvdisasm``: HMMA vs HGMMA/QGMMA counts and more."""
    mix = Counter()
    for body in sass_functions(text).values():
        for ins in body:
            for k in classify_sass(ins.op):
                mix[k] += 1
    return mix


# --- SASS: the hottest loop and what one trip moves through shared memory ----------------------
_BRANCH_OPS = ("BRA", "JMP")
_END_OPS = ("EXIT", "RET", "KILL")
# bytes per lane of LDS / STS / LDGSTS by width modifier (no modifier = 32 bits)
_LANE_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16}
# ldmatrix / stmatrix move .1/.2/.4 8x8 matrices of 16-bit elements = 8 rows x 16 bytes each
_MATRIX_SHAPES = ("M88", "MT88")
# dense warpgroup MMA: K x element size is always 256 bits = 32 bytes per row of A (M rows) and B (N rows)
_GMMA_K = {"H": (8, 16), "Q": (32,), "I": (32,), "B": (256,)}
_GMMA = re.compile(r"^([HQIB])GMMA\.(\d+)x(\d+)x(\d+)\b")


def sass_smem_bytes(op: str) -> tuple[str, int] | None:
    """('read' | 'write', bytes per warp) for a shared-memory access instruction, else None.

    LDS/STS/LDGSTS: lane width (``.U8``..``.128``, none = 4 B) x 32 lanes (LDGSTS writes the shared
    side of a cp.async). LDSM/STSM (ldmatrix/stmatrix): ``.1``/``.2``/``.4`` (none = 1) matrices x 8 rows
    x 16 B. Every lane is assumed active (a static count). Unknown ldmatrix shapes raise ValueError."""
    parts = op.split(".")
    base, mods = parts[0], parts[1:]
    if base in ("LDS", "STS", "LDGSTS"):
        width = 4
        for m in mods:
            width = _LANE_BYTES.get(m, width)
        return ("read" if base == "LDS" else "write"), 32 * width
    if base in ("LDSM", "STSM"):
        if not any(m in _MATRIX_SHAPES for m in mods) or "16" not in mods:
            raise ValueError(f"unknown {base} shape in {op!r}: expected .16.M88 or .16.MT88 (8x8 b16 matrices)")
        count = next((int(m) for m in mods if m in ("1", "2", "4")), 1)
        return ("read" if base == "LDSM" else "write"), count * 8 * 16
    return None


def sass_wgmma_smem_bytes(op: str, operands: str) -> int:
    """Shared-memory operand bytes one warpgroup MMA reads (once per warpgroup): B (N rows x 32 B)
    always comes from a ``gdesc`` descriptor; A (M rows x 32 B) too unless its first source is a
    register (``HGMMA.64x32x16.F32.BF16 R24, R56, gdesc[UR12], R24``). 0 for other instructions."""
    m = _GMMA.match(op)
    if not op.split(".")[0].endswith("GMMA"):
        return 0
    if not m:
        raise ValueError(f"cannot read the MxNxK shape of warpgroup MMA {op!r}")
    kind, mm, nn, kk = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    if kk not in _GMMA_K[kind]:
        raise ValueError(f"{op!r}: K={kk} is not a dense {kind}GMMA shape (expected {_GMMA_K[kind]})")
    srcs = [s.strip() for s in operands.split(",")]
    if len(srcs) < 3 or not any(s.startswith("gdesc") for s in srcs):
        raise ValueError(f"{op} {operands!r}: expected 'Rd, [Ra,] gdesc[URb], Rc' operands")
    a_in_smem = srcs[1].startswith("gdesc")
    return nn * 32 + (mm * 32 if a_in_smem else 0)


def _branch_target(ins: SassInstr) -> int | None:
    if ins.op.split(".")[0] not in _BRANCH_OPS:
        return None
    hexes = re.findall(r"\b0x([0-9a-fA-F]+)\b", ins.operands)
    return int(hexes[-1], 16) if hexes else None


@dataclass
class SassLoop:
    """One trip of the hottest loop of a SASS function, as one warp executes it (static counts).

    The loop is the largest address range [target, branch] closed by a backward BRA that contains
    no EXIT: cold blocks placed after the kernel's EXIT (mbarrier try-wait retries jump back into the
    loop from there) are not loops. ``inner_loops`` counts backward branches inside it (a nonzero
    value means the static trip count undercounts); ``other_loop_instructions`` is the size of the
    largest loop outside it (a warp-specialized kernel has one loop per partition, so a value near
    the hottest loop's size means the per-token figures describe one partition only)."""

    function: str
    start_addr: int
    end_addr: int
    mix: Counter = field(default_factory=Counter)
    smem_read_bytes: int = 0    # per warp per trip: LDS + LDSM
    smem_write_bytes: int = 0   # per warp per trip: STS + STSM + LDGSTS (shared side)
    wgmma_smem_bytes: int = 0   # per warpgroup per trip: operands warpgroup MMAs read from shared memory
    alu_pipe: int = 0           # per warp per trip: instructions of the ALU pipe (SASS_ALU_PIPE)
    inner_loops: int = 0
    other_loop_instructions: int = 0

    def per_token(self, num_warps: int, block_n: int) -> dict:
        """CTA-wide figures per KV token, assuming every warp runs this loop once per trip of
        ``block_n`` tokens (true of the split kernel; not of a warp-specialized one)."""
        if num_warps <= 0 or block_n <= 0:
            raise ValueError(f"num_warps and block_n must be positive, got {num_warps}, {block_n}")
        per = num_warps / block_n
        return dict(warp_instr_per_token=round(self.mix["instructions"] * per, 2),
                    smem_bytes_per_token=round((self.smem_read_bytes + self.smem_write_bytes) * per, 1),
                    smem_read_bytes_per_token=round(self.smem_read_bytes * per, 1),
                    smem_write_bytes_per_token=round(self.smem_write_bytes * per, 1),
                    smem_wgmma_bytes_per_token=round(self.wgmma_smem_bytes * max(1, num_warps // 4) / block_n, 1),
                    wgmma_per_token=round(self.mix["wgmma"] * max(1, num_warps // 4) / block_n, 3),
                    mma_per_token=round(self.mix["mma"] * per, 3))


def sass_hottest_loop(text: str, function: str | None = None) -> SassLoop | None:
    """The hottest loop (see :class:`SassLoop`) of ``function`` (default: the only / first function
    of the listing), or None when it has no loop. Unknown function names raise ValueError."""
    funcs = sass_functions(text)
    if not funcs:
        raise ValueError("no SASS instructions found (expected cuobjdump -sass '/*addr*/ OPCODE ...;' lines)")
    if function is None:
        function = next(iter(funcs))
    if function not in funcs:
        raise ValueError(f"no SASS function {function!r}; the listing has {list(funcs)}")
    body = funcs[function]
    index = {ins.addr: i for i, ins in enumerate(body)}
    ends = [i for i, ins in enumerate(body) if ins.op.split(".")[0] in _END_OPS]
    edges = []
    for i, ins in enumerate(body):
        t = _branch_target(ins)
        if t is None or t >= ins.addr or t not in index:
            continue  # forward, self-loop (the trap after EXIT), or a target between instructions
        j = index[t]
        if any(j <= e <= i for e in ends):
            continue
        edges.append((j, i))
    if not edges:
        return None
    j, i = max(edges, key=lambda e: e[1] - e[0])
    inside = [(a, b) for a, b in edges if j <= a and b <= i]
    loop = SassLoop(function, body[j].addr, body[i].addr, inner_loops=len(inside) - 1,
                    other_loop_instructions=max((b - a + 1 for a, b in edges if (a, b) not in inside), default=0))
    _count_into(loop, body[j:i + 1])
    return loop


def _count_into(loop: SassLoop, instructions, weight: float = 1) -> None:
    """Add ``weight`` x the static counts of ``instructions`` to ``loop``."""
    for ins in instructions:
        for k in classify_sass(ins.op):
            loop.mix[k] += weight
        loop.alu_pipe += weight * (ins.op.split(".")[0] in SASS_ALU_PIPE)
        sm = sass_smem_bytes(ins.op)
        if sm:
            if sm[0] == "read":
                loop.smem_read_bytes += weight * sm[1]
            else:
                loop.smem_write_bytes += weight * sm[1]
        loop.wgmma_smem_bytes += weight * sass_wgmma_smem_bytes(ins.op, ins.operands)


def sass_ws_tile(text: str, function: str | None = None) -> SassLoop | None:
    """One KV tile of a warp-specialized generation-3 kernel (gluon_ws: two consumer partitions taking
    alternate tiles, one or two decoder partitions each touching every tile, v136+ a one-warp loader) as a
    single "trip": the tile loops are the innermost backward branches holding no EXIT / setmaxnreg (a
    partition's whole region holds those); each consumer loop counts 1/2 (it runs on half the tiles), each
    decoder loop 1, a loader loop (TMA, no PRMT) 1/4 (one warp against the others' four).
    Read the result per 4-warp partition: CTA warp-instructions per tile = 4 x loop instructions."""
    funcs = sass_functions(text)
    function = function or next(iter(funcs))
    body = funcs[function]
    index = {ins.addr: i for i, ins in enumerate(body)}
    edges = []
    for i, ins in enumerate(body):
        t = _branch_target(ins)
        if t is None or t >= ins.addr or t not in index:
            continue
        j = index[t]
        ops = [x.op.split(".")[0] for x in body[j:i + 1]]
        if not any(o in _END_OPS or o == "USETMAXREG" for o in ops):
            edges.append((j, i))
    tiles = [(a, b) for a, b in edges if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in edges)]
    # a one-warp loader partition (WS_LOADER, v136; the fp8 kernel's, v149+): TMA issues and no decode (PRMT);
    # its loop counts 1/4. (The fp8 loader's loop is short: it is told from the mbarrier spins by its TMA.)
    loaders = [(a, b) for a, b in tiles if any(x.op.startswith("UTMALDG") for x in body[a:b + 1])
               and not any(x.op.startswith("PRMT") for x in body[a:b + 1])
               and not any("wgmma" in classify_sass(x.op) for x in body[a:b + 1])]
    tiles = [(a, b) for a, b in tiles if b - a > 100 or (a, b) in loaders]  # (not the mbarrier retry / idle spins)
    consumers = [(a, b) for a, b in tiles if any("wgmma" in classify_sass(x.op) for x in body[a:b + 1])]
    decoders = [(a, b) for a, b in tiles if (a, b) not in consumers and (a, b) not in loaders]
    if not consumers or not (decoders or loaders):
        return None
    loop = SassLoop(function, body[min(a for a, _ in tiles)].addr, body[max(b for _, b in tiles)].addr,
                    inner_loops=0, other_loop_instructions=0)
    for a, b in consumers:
        _count_into(loop, body[a:b + 1], 1 / len(consumers))
    for a, b in decoders:
        _count_into(loop, body[a:b + 1])
    for a, b in loaders:
        _count_into(loop, body[a:b + 1], 1 / 4)
    loop.mix = Counter({k: round(v, 1) for k, v in loop.mix.items()})
    loop.alu_pipe, loop.smem_read_bytes, loop.smem_write_bytes, loop.wgmma_smem_bytes = (
        round(loop.alu_pipe, 1), round(loop.smem_read_bytes), round(loop.smem_write_bytes), round(loop.wgmma_smem_bytes))
    return loop


# Columns the sm90 report (data/static/sm90/triton.csv) adds per kernel from its hottest SASS loop.
# "per warp" = as the SASS reads (every warp runs it); "CTA-wide per token" = x num_warps / block_n.
SM90_LOOP_COLUMNS = {
    "num_warps": "warps per CTA (compiler metadata)",
    "block_n": "KV tokens one loop trip covers (the variant's BLOCK_N)",
    "loop_addr": "SASS address range of the hottest loop: [target, backward BRA]",
    "loop_inner_loops": "backward branches inside that loop (0 = one trip is straight-line code)",
    "other_loop_instructions": "instructions of the largest loop outside it (0 = the only loop; near "
                               "loop_sass_instructions = e.g. a warp-specialized kernel: the figures cover one loop)",
    **{f"loop_sass_{k}": f"SASS {k} instructions in one trip, per warp" for k in NV_MIX_KEYS},
    "loop_alu_pipe_instructions": "of those, the ALU pipe's (isa.SASS_ALU_PIPE: integer / logic / compare / select; "
                                  "one warp instruction per 2 cycles per scheduler on sm90)",
    "loop_smem_read_bytes": "LDS + LDSM bytes one warp reads in one trip (lane width x 32; LDSM .xN x 128 B)",
    "loop_smem_write_bytes": "STS + STSM + LDGSTS bytes one warp writes to shared memory in one trip",
    "loop_wgmma_smem_bytes": "shared-memory operand bytes of the trip's warpgroup MMAs, per warpgroup",
    "warp_instr_per_token": "CTA-wide warp-instructions per KV token: loop instructions x num_warps / block_n "
                            "(a warp-specialized kernel: its tile loops summed per 4-warp partition, x 4: sass_ws_tile)",
    "smem_bytes_per_token": "CTA-wide LDS/LDSM/STS/STSM/LDGSTS bytes per KV token: "
                            "(read + write) x num_warps / block_n",
    "smem_read_bytes_per_token": "the read part (LDS + LDSM) of smem_bytes_per_token",
    "smem_write_bytes_per_token": "the write part (STS + STSM + LDGSTS) of smem_bytes_per_token",
    "smem_wgmma_bytes_per_token": "warpgroup MMA operands read from shared memory per KV token (once per "
                                  "warpgroup; not in smem_bytes_per_token); TMA bytes are not sized: see loop_sass_tma",
    "wgmma_per_token": "CTA-wide warpgroup MMAs (HGMMA/QGMMA/IGMMA) per KV token",
    "mma_per_token": "CTA-wide warp mma.sync (HMMA/IMMA/QMMA) per KV token",
}


def sm90_loop_row(loop: SassLoop | None, num_warps: int, block_n: int) -> dict:
    """The :data:`SM90_LOOP_COLUMNS` for one kernel (blank strings where it has no loop)."""
    row = dict.fromkeys(SM90_LOOP_COLUMNS, "")
    row.update(num_warps=num_warps, block_n=block_n)
    if loop is None:
        return row
    row.update(loop_addr=f"{loop.start_addr:#06x}-{loop.end_addr:#06x}", loop_inner_loops=loop.inner_loops,
               other_loop_instructions=loop.other_loop_instructions,
               loop_smem_read_bytes=loop.smem_read_bytes, loop_smem_write_bytes=loop.smem_write_bytes,
               loop_wgmma_smem_bytes=loop.wgmma_smem_bytes, loop_alu_pipe_instructions=loop.alu_pipe,
               **loop.per_token(num_warps, block_n))
    for k in NV_MIX_KEYS:
        row[f"loop_sass_{k}"] = loop.mix.get(k, 0)
    return row


_PTXAS_FIELDS = {"registers": r"Used (\d+) registers", "smem_bytes": r"(\d+) bytes smem",
                 "spill_stores_bytes": r"(\d+) bytes spill stores", "spill_loads_bytes": r"(\d+) bytes spill loads",
                 "stack_bytes": r"(\d+) bytes stack frame"}


def parse_ptxas_info(text: str) -> dict:
    """Registers, shared memory, spills from ``ptxas -v`` output (the last function reported)."""
    d = {}
    for key, pattern in _PTXAS_FIELDS.items():
        m = re.findall(pattern, text)
        if m:
            d[key] = int(m[-1])
    return d
