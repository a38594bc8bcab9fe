"""Ahead-of-time compiles of the Triton MLA decode kernel for a GPU this machine does not have.

    from triton.backends.compiler import GPUTarget
    k = compile_offline(GPUTarget("hip", "gfx950", 64), variant="v2_n64_w4_s2", kv_format="mxfp4",
                        waves_per_eu=1, matrix_instr_nonkdim=16, kpack=2)
    k.asm["amdgcn"]      # ISA text; k.asm also has "ttir", "ttgir", "llir" (+ "ptx"/"cubin" on cuda)
    k.metadata           # num_warps, shared memory, ... as the compiler resolved them

Used by CI (one config per KV format on both targets) and by the static ISA reports (mla.analysis).
Under ``TRITON_INTERPRET=1`` (the CPU tests) the compile runs in a child process without it.
Triton's wheels carry what both targets need here (ptxas for sm90; the HIP backend's own linker
for the gfx950 code object), so the binary stage runs too.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .kernels import (KV_FORMAT_CODE, Q_FORMAT_CODE, mla_decode_reduce_kernel, mla_decode_reduce_tile_kernel,
                      mla_decode_split_kernel)
from .launch import (PDL_TRIGGERS, coop_constexprs, heads_per_program, pdl_trigger, reduce_block_d,
                     swapab_scale_guard)
from .swapab import mla_decode_swapab_kernel
from .variants import get_variant, gluon_constexprs, gluon_launch_options

SUPPORTED_TARGETS = (("cuda", 90), ("hip", "gfx950"))


@dataclass
class OfflineKernel:
    """What :func:`compile_offline` returns: ``asm`` maps stage name (ttir, ttgir, llir, ptx/cubin or
    amdgcn/hsaco) -> text/bytes; ``metadata`` is the compiler's metadata (shared memory, warps...)."""

    name: str
    target: GPUTarget
    options: dict
    asm: dict = field(default_factory=dict)
    metadata: object = None


def _split_kernel_signature(kv_format: str) -> dict:
    kv_dtype = {"bf16": "*bf16", "fp8": "*fp8e4nv", "mxfp4": "*u8"}[kv_format]
    aux = {"bf16": "*bf16", "fp8": "*fp32", "mxfp4": "*u8"}[kv_format]
    return {"q_ptr": "*bf16", "kv_ptr": kv_dtype, "kv_aux_ptr": aux, "qo_indptr_ptr": "*i32",
            "kv_indptr_ptr": "*i32", "part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "out_ptr": "*bf16",
            "stride_q_tok": "i32", "stride_q_head": "i32", "stride_kv_tok": "i32", "stride_sc_tok": "i32",
            "stride_o_tok": "i32", "stride_o_head": "i32", "sm_scale": "fp32", "num_splits": "i32"}


# generation 1 only: the fused-reduce counters and the balanced work list (kernels.py)
FUSED_ARGS = {"work_ptr": "*i32", "counter_ptr": "*i32", "chunk_tokens": "i32"}


def compile_offline(target: GPUTarget, *, variant: str = "v2_n64_w4_s2", kv_format: str = "mxfp4",
                    q_format: str = "bf16", num_heads: int = 16, q_seq_len: int = 1, num_splits: int = 2,
                    kernel: str = "split", waves_per_eu: int | None = None,
                    matrix_instr_nonkdim: int | None = None, kpack: int | None = None,
                    fused_reduce: bool | None = None, balanced: bool | None = None,
                    pdl: bool | str = False, timeline: bool = False) -> OfflineKernel:
    """Compile one kernel of the family for ``target`` without a GPU and return its stages.

    target: ``GPUTarget("cuda", 90, 32)`` (sm90) or ``GPUTarget("hip", "gfx950", 64)``.
    kernel: ``"split"`` (the flash-decode kernel), ``"reduce"`` (the LSE combine, a loop over splits) or
    ``"reduce_tile"`` (the combine with every split in one tile; ``num_splits`` sizes it).
    AMD knobs (HIP only; ignored for cuda): ``waves_per_eu`` (occupancy hint), ``matrix_instr_nonkdim``
    (16 or 32: MFMA tile), ``kpack`` (1 or 2: K elements packed per MFMA operand load).
    fused_reduce / balanced: the split kernel with the one-launch reduce / the work list (None: the
    variant's own choice; balanced needs the fused reduce).
    pdl: as a plan with ``pdl=`` True / "early" / "late" compiles it (cuda only): the split kernel lets its
    dependents launch (griddepcontrol.launch_dependents), the reduce kernels wait for the split grid
    (griddepcontrol.wait).
    timeline: generation 3's split kernel with the program timeline (TIMELINE; the plan's ``timeline=True``).
    """
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        # the interpreter replaced every @triton.jit function; compile in a clean process instead
        return _compile_in_subprocess(target, dict(
            variant=variant, kv_format=kv_format, q_format=q_format, num_heads=num_heads, q_seq_len=q_seq_len,
            num_splits=num_splits, kernel=kernel, waves_per_eu=waves_per_eu,
            matrix_instr_nonkdim=matrix_instr_nonkdim, kpack=kpack, fused_reduce=fused_reduce,
            balanced=balanced, pdl=pdl, timeline=timeline))
    if (target.backend, target.arch) not in SUPPORTED_TARGETS:
        raise ValueError(f"unsupported target {target}; choose from {SUPPORTED_TARGETS} (cuda arch as int)")
    if kv_format not in KV_FORMAT_CODE:
        raise ValueError(f"unknown kv_format {kv_format!r}; choose from {tuple(KV_FORMAT_CODE)}")
    if q_format not in Q_FORMAT_CODE:
        raise ValueError(f"unknown q_format {q_format!r}; choose from {tuple(Q_FORMAT_CODE)}")
    if kernel not in ("split", "reduce", "reduce_tile"):
        raise ValueError(f"kernel must be 'split', 'reduce' or 'reduce_tile', got {kernel!r}")
    v = get_variant(variant)
    if timeline and (kernel != "split" or v.family != "gluon"):
        raise ValueError(f"timeline (the program timeline) is generation 3's split kernel's; variant {variant!r} is "
                         f"family {v.family!r}, kernel {kernel!r}")
    fused = (v.fused_reduce if fused_reduce is None else fused_reduce) and num_splits > 1
    work_list = (v.balanced if balanced is None else balanced) and num_splits > 1
    if work_list and not fused:
        raise ValueError("balanced (the work list) needs the fused reduce")
    if pdl_trigger(pdl) and target.backend != "cuda":
        raise ValueError("pdl (programmatic dependent launch) is CUDA's (sm90+); gfx950 has no such launch")
    source_cls = ASTSource
    options = dict(num_warps=v.num_warps, num_stages=v.num_stages)
    if target.backend == "hip":
        for k, val in (("waves_per_eu", waves_per_eu), ("matrix_instr_nonkdim", matrix_instr_nonkdim),
                       ("kpack", kpack)):
            if val is not None:
                options[k] = val
    if kernel == "split" and v.family == "gluon":  # generation 3: Gluon source, sm90 only
        if target.backend != "cuda":
            raise ValueError(f"variant {variant!r} (Gluon, generation 3) is an sm90 kernel; gfx950 runs generation 2")
        if kv_format != v.gluon_kv:
            raise ValueError(f"variant {variant!r} (Gluon) takes kv_format {v.gluon_kv!r}, got {kv_format!r}")
        from triton.experimental.gluon._runtime import GluonASTSource

        from .gluon_sm90 import mla_decode_gluon_sm90_kernel, mla_decode_gluon_sm90_ws_kernel
        hp = heads_per_program(v, num_heads, q_seq_len, kv_format)
        constexprs = dict(NUM_HEADS=num_heads, Q_SEQ_LEN=q_seq_len, HEADS_PER_PROG=hp,
                          BLOCK_M=max(16, triton.next_power_of_2(q_seq_len * hp)), BLOCK_N=v.block_n,
                          # (ws: two partials per program, or one with the pair merge)
                          SINGLE_PASS=num_splits == 1 and (not v.gluon_ws or v.gluon_ws_pair_merge),
                          KV_FORMAT=KV_FORMAT_CODE[kv_format],
                          FUSED_REDUCE=fused, WORK_LIST=work_list, num_warps=v.num_warps, **gluon_constexprs(v))
        if not v.gluon_ws:  # (every parameter needs a value: COOP_MERGE off unless the variant merges, as the plan)
            coop, launch = coop_constexprs(num_splits if v.coop_merge else 1)
            constexprs.update(coop)
            options.update(launch)
        fn = mla_decode_gluon_sm90_ws_kernel if v.gluon_ws else mla_decode_gluon_sm90_kernel
        signature = dict(_split_kernel_signature(kv_format), **FUSED_ARGS)
        if not v.gluon_ws:  # (the one-warpgroup kernel's uniform_kv_len: UNIFORM_RANGES reads it)
            signature["uniform_kv_len"] = "i32"
        if not v.gluon_ws and not v.gluon_steal:  # the fp8 cache's TMA descriptor (KV_TMA, v168+) or None
            from .gluon_sm90 import ws_tma_signature
            if v.gluon_kv_tma:
                signature["kv_desc"] = ws_tma_signature("fp8")["lat_desc"]
            else:
                constexprs.update(kv_desc=None)
        if v.gluon_steal:  # v154 (gluon_steal.py): the words, the partial slots, the owners' batch
            from .gluon_steal import mla_decode_gluon_sm90_steal_kernel
            fn = mla_decode_gluon_sm90_steal_kernel
            signature.update(steal_words_ptr="*i32", steal_part_ptr="*fp32", steal_batch="i32")
            constexprs.update(STEAL_RANGES_P2=256)  # (the plan's: max(128, next power of 2 of the ranges))
        if v.gluon_ws and v.gluon_ws_tma:  # the packed cache's TMA descriptors (None for the other ws kernels)
            from .gluon_sm90 import ws_tma_signature
            signature.update(ws_tma_signature(kv_format))
            if kv_format == "fp8":  # (the fp8 loader's one descriptor)
                constexprs.update(rope_desc=None)
        elif v.gluon_ws:
            constexprs.update(lat_desc=None, rope_desc=None)
        # the instrument's rows (int64, one per program); without TIMELINE the pointer is passed and unused
        signature["timeline_ptr"] = "*i64"
        constexprs.update(TIMELINE=timeline)
        source_cls = GluonASTSource
        options.update(gluon_launch_options(v))
    elif kernel == "split" and v.family == "swapab":
        if kv_format not in ("fp8", "mxfp4"):
            raise ValueError(f"variant {variant!r} (swap-AB) takes kv_format 'fp8' or 'mxfp4', got {kv_format!r}")
        hp = heads_per_program(v, num_heads, q_seq_len, kv_format)
        constexprs = dict(NUM_HEADS=num_heads, Q_SEQ_LEN=q_seq_len, HEADS_PER_PROG=hp,
                          BLOCK_M=max(16, triton.next_power_of_2(q_seq_len * hp)), BLOCK_N=v.block_n,
                          SINGLE_PASS=num_splits == 1, KV_FORMAT=KV_FORMAT_CODE[kv_format], DOT_FP32=False,
                          Q_TERMS=v.q_terms, PV_SWAP=v.pv_swap, PV_F16=v.pv_f16, V_PATH=v.v_path,
                          LAT_CHUNKS=v.lat_chunks, QK_F16=v.qk_f16, MX_PAIRS=v.mx_decode == 3,
                          USE_PTX=target.backend == "cuda", WORK_LIST=work_list,
                          FUSED_REDUCE=fused, PARTIAL_BF16=v.partial_bf16, **swapab_scale_guard(v, kv_format))
        fn, signature = mla_decode_swapab_kernel, dict(_split_kernel_signature(kv_format), **FUSED_ARGS)
        if v.partial_bf16:
            signature["part_o_ptr"] = "*bf16"
    elif kernel == "split":
        hp = heads_per_program(v, num_heads, q_seq_len, kv_format)
        constexprs = dict(NUM_HEADS=num_heads, Q_SEQ_LEN=q_seq_len, HEADS_PER_PROG=hp,
                          BLOCK_M=max(16, triton.next_power_of_2(q_seq_len * hp)), BLOCK_N=v.block_n,
                          SINGLE_PASS=num_splits == 1, KV_FORMAT=KV_FORMAT_CODE[kv_format],
                          Q_FORMAT=Q_FORMAT_CODE[q_format], DOT_FP32=False, DOT_F16=v.dot_f16,
                          MX_DECODE=v.mx_decode, PREFETCH=v.prefetch, USE_PTX=target.backend == "cuda",
                          WORK_LIST=work_list, FUSED_REDUCE=fused,
                          PARTIAL_BF16=v.partial_bf16)
        fn, signature = mla_decode_split_kernel, dict(_split_kernel_signature(kv_format), **FUSED_ARGS)
        if v.partial_bf16:
            signature["part_o_ptr"] = "*bf16"
    elif kernel == "reduce_tile":  # num_splits sets SPLITS_P2 / BLOCK_D as the launcher does
        p2 = max(2, triton.next_power_of_2(num_splits))
        constexprs = dict(NUM_HEADS=num_heads, SPLITS_P2=p2, BLOCK_D=reduce_block_d(p2), EXACT_RNE=False)
        fn = mla_decode_reduce_tile_kernel
        signature = {"part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "out_ptr": "*bf16",
                     "stride_o_tok": "i32", "stride_o_head": "i32", "num_splits": "i32"}
    else:
        constexprs = dict(NUM_HEADS=num_heads, SPLITS_P2=64, HEADS_PER_PROG=min(16, num_heads),
                          EXACT_RNE=False)
        fn = mla_decode_reduce_kernel
        signature = {"part_o_ptr": "*fp32", "part_lse_ptr": "*fp32", "out_ptr": "*bf16",
                     "stride_o_tok": "i32", "stride_o_head": "i32", "num_splits": "i32"}
    # what TritonDecodePlan sets for this pdl (given either way: every parameter needs a signature entry)
    trigger = pdl_trigger(pdl)
    if kernel == "split":
        constexprs["LAUNCH_DEPENDENTS"] = PDL_TRIGGERS[trigger] if trigger else 0
    else:
        constexprs["PDL_WAIT"] = bool(trigger)
        if trigger:
            options["launch_pdl"] = True
    for k in constexprs:
        signature[k] = "constexpr"
    # what the JIT would specialize at run time: 16-byte aligned pointers and strides divisible by
    # 16 (the MXFP4 scale row stride, 24, is not), which is what lets loads vectorize
    aligned = [k for k, t in signature.items()
               if t.startswith("*") or (t == "i32" and k not in ("stride_sc_tok", "num_splits", "chunk_tokens",
                                                                  "uniform_kv_len", "steal_batch"))]
    attrs = {(fn.arg_names.index(k),): [["tt.divisibility", 16]] for k in aligned}
    src = source_cls(fn, signature, attrs=attrs,
                     constexprs={(fn.arg_names.index(k),): val for k, val in constexprs.items()})
    name = f"{kernel}-{variant}-{kv_format}-q{q_format}-h{num_heads}-s{q_seq_len}"
    result = OfflineKernel(name=name, target=target, options=options)
    compiled = triton.compile(src, target=target, options=options)
    meta = compiled.metadata
    result.asm, result.metadata = dict(compiled.asm), meta._asdict() if hasattr(meta, "_asdict") else meta
    return result


# The child serves compiles until its stdin closes: a fresh python per compile spent ~2 s of CPU importing
# torch / triton / mla for each (most of the CPU test suite's offline-compile time, 2026-12-06). It is reused
# only by the process that started it and while the environment is unchanged; a failed compile ends it.
_SERVER = ("import os, pickle, sys, traceback\n"
           "out = os.fdopen(os.dup(1), 'wb')\n"
           "os.dup2(2, 1)  # (prints go to stderr, not into the replies)\n"
           "from mla.kernels.triton.offline import compile_offline\n"
           "while True:\n"
           "    try:\n        target, kwargs = pickle.load(sys.stdin.buffer)\n"
           "    except EOFError:\n        break\n"
           "    try:\n        res = ('ok', compile_offline(target, **kwargs))\n"
           "    except ValueError as e:\n        res = ('ok', e)\n"
           "    except BaseException:\n        res = ('error', traceback.format_exc())\n"
           "    out.write(pickle.dumps(res))\n    out.flush()\n"
           "    if res[0] != 'ok':\n        break\n")
_child = None  # (key, Popen, stderr file)
_child_lock = threading.Lock()


def _stop_child() -> None:
    global _child
    if _child is not None:
        _, proc, err = _child
        _child = None
        if proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        err.close()


atexit.register(_stop_child)


def _compile_in_subprocess(target: GPUTarget, kwargs: dict) -> OfflineKernel:
    """Run :func:`compile_offline` in a child without TRITON_INTERPRET; ValueErrors come back as such."""
    global _child
    env = dict(os.environ, TRITON_INTERPRET="0")
    cwd = str(Path(__file__).resolve().parents[3])
    # (pytest sets PYTEST_CURRENT_TEST per test phase: not a change the compile sees)
    key = (os.getpid(), sys.executable, cwd, tuple(sorted(kv for kv in env.items() if kv[0] != "PYTEST_CURRENT_TEST")))
    with _child_lock:
        if _child is not None and (_child[0] != key or _child[1].poll() is not None):
            _stop_child()
        if _child is None:
            err = tempfile.TemporaryFile()
            proc = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, env=env, cwd=cwd)
            _child = (key, proc, err)
        _, proc, err = _child
        try:
            proc.stdin.write(pickle.dumps((target, kwargs)))
            proc.stdin.flush()
            status, res = pickle.load(proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError):
            status, res = "error", ""
        except BaseException:  # (interrupted mid-reply: the next call must not read this one's answer)
            proc.kill()
            _stop_child()
            raise
        if status != "ok":
            err.seek(0)
            msg = (err.read().decode(errors="replace")[-4000:] + res)[-4000:]  # (the traceback last: it is kept)
            _stop_child()
            raise RuntimeError(f"offline compile failed:\n{msg}")
    if isinstance(res, ValueError):
        raise res
    return res
