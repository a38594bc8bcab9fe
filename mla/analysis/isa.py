"""Parse compiler output into per-kernel resource and instruction-mix numbers.

Two kinds of text:

* AMDGPU assembly (``clang -S`` for HIP, Triton's ``amdgcn`` stage): each kernel's body, the
  ``; Kernel info:`` comment block (VGPR/AGPR/SGPR, scratch, LDS, occupancy) and the YAML
  metadata (spill counts, workgroup size). :func:`parse_amdgpu_asm`.
* NVIDIA PTX / SASS and ``ptxas -v`` output. :func:`parse_ptx`, :func:`parse_sass`,
  :func:`parse_ptxas_info`.

Counts are *static*: an instruction inside a loop counts once. For that reason the AMD parser
also reports the mix of the hottest loop (the largest region closed by a backward branch).
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
                "cvt_scale", "v_exp", "dpp", "sched_hint")


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
               "st_shared", "bar_sync", "ex2")


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


def parse_sass(text: str) -> Counter:
    """Static SASS mix from ``cuobjdump -sass`` / ``nvdisasm``: HMMA/HGMMA/QGMMA counts and more."""
    mix = Counter()
    for ln in text.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", ln)
        if not m:
            continue
        op = m.group(1)
        base = op.split(".")[0]
        mix["instructions"] += 1
        if base == "HMMA" or base == "IMMA":
            mix["mma"] += 1
        elif base in ("HGMMA", "QGMMA", "IGMMA", "BGMMA"):
            mix["wgmma"] += 1
        elif base == "LDSM":
            mix["ldmatrix"] += 1
        elif base in ("LDGSTS",):
            mix["cp_async"] += 1
        elif base in ("UBLKCP", "UTMALDG", "UTMASTG"):
            mix["tma"] += 1
        elif base == "LDG":
            mix["ld_global"] += 1
        elif base == "LDS":
            mix["ld_shared"] += 1
        elif base == "STS":
            mix["st_shared"] += 1
        elif base == "BAR":
            mix["bar_sync"] += 1
        elif base == "MUFU" and ".EX2" in op:
            mix["ex2"] += 1
    return mix


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
