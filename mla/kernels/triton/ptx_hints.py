"""The L2 eviction hint of ``cp.async`` on a triton whose lowering drops it (triton 3.6, the H200 image).

A variant with ``kv_evict="evict_first"`` passes ``eviction_policy="evict_first"`` to its KV copies (Gluon's
``async_copy``, or generation 1's ``tl.load`` that the pipeliner turns into ``cp.async``). Triton 3.9 lowers that
to the instruction PTX has for it::

    createpolicy.fractional.L2::evict_first.b64 %rd18, 1.0;
    cp.async.cg.shared.global.L2::cache_hint [ %r56 + 0 ], [ %rd19 + 0 ], 0x10, %r57, %rd18;

Triton 3.6 keeps the attribute on the TTGIR op (``evictionPolicy = evict_first``) but emits a plain
``cp.async.cg.shared.global``: the hint is lost, silently. :func:`install_ptx_hints` adds a compiler stage hook
(``triton.knobs.runtime.add_stages_inspection_hook``, chained after any hook already there) that, for a kernel whose
TTGIR marks *every* async copy evict_first, rewrites its PTX to the 3.9 form above (:func:`add_evict_first`). A
kernel with unmarked or mixed copies is left alone: PTX no longer says which copy came from which op.

Installed at import by :mod:`mla.kernels.triton.launch` where :func:`lowering_drops_hint` (the Gluon API of
triton <= 3.6); a no-op on 3.9. Triton's cache key does not see the hook: a kernel compiled by a process without
it would be reused unhinted, so only this package's launcher (which always installs it) builds these kernels.
"""

from __future__ import annotations

import re

POLICY_REG = "%rd_mla_l2ef"
_PTX_CP_ASYNC = re.compile(r"cp\.async\.(ca|cg)\.shared\.global(\s+)(\[[^\]]*\]\s*,\s*\[[^\]]*\]\s*,\s*[^;]+);")
_PTX_ENTRY = re.compile(r"(\.visible\s+\.entry\s+[^\n]*\([^)]*\)[^{]*\{)", re.S)
_PTX_EVICT_MARK = "evictionPolicy = evict_first"
_PTX_HINTS_FLAGGED: set[int] = set()


def add_evict_first(ptx: str) -> str:
    """``ptx`` with every ``cp.async ... shared.global`` given an L2 evict_first cache policy, created once at the
    top of each kernel entry (what triton 3.9 emits for ``eviction_policy="evict_first"``). Copies that already
    carry a cache hint are left as they are. Raises ValueError on PTX with copies but no kernel entry."""
    if not _PTX_CP_ASYNC.search(ptx):
        return ptx
    entries = list(_PTX_ENTRY.finditer(ptx))
    if not entries:
        raise ValueError("PTX has cp.async copies but no .visible .entry to create the cache policy in")
    out, pos = [], 0
    for m in entries:  # the policy register and its value at the start of each entry's body
        out.append(ptx[pos:m.end()])
        out.append(f"\n\t.reg .b64 \t{POLICY_REG};\n\tcreatepolicy.fractional.L2::evict_first.b64 {POLICY_REG}, 1.0;")
        pos = m.end()
    out.append(ptx[pos:])
    text = "".join(out)
    return _PTX_CP_ASYNC.sub(lambda c: f"cp.async.{c.group(1)}.shared.global.L2::cache_hint{c.group(2)}"
                                   f"{c.group(3).rstrip()}, {POLICY_REG};", text)


def all_async_copies_marked(ttgir: str) -> bool:
    """Whether the TTGIR has async copies and every one carries ``evictionPolicy = evict_first``."""
    ops = [line for line in ttgir.splitlines() if "async_copy_global_to_local" in line and "=" in line]
    return bool(ops) and all(_PTX_EVICT_MARK in line for line in ops)


def lowering_drops_hint() -> bool:
    """Whether this triton's Gluon is the 3.6-era API (``async_copy_global_to_shared``), whose cp.async lowering
    drops the eviction policy (checked offline: triton 3.6 PTX has no cache hint, 3.9 has it)."""
    try:
        from triton.experimental.gluon.language.nvidia.ampere import async_copy
    except Exception:
        return False
    return not hasattr(async_copy, "async_load")


def _ptx_hints_hook(previous):
    def hook(backend, stages, options, language, capability):
        if previous is not None:
            previous(backend, stages, options, language, capability)
        if "llir" not in stages or "ptx" not in stages:
            return
        make_llir, make_ptx = stages["llir"], stages["ptx"]

        def llir(src, metadata):
            if all_async_copies_marked(str(src)):
                _PTX_HINTS_FLAGGED.add(id(metadata))
            return make_llir(src, metadata)

        def ptx(src, metadata):
            text = make_ptx(src, metadata)
            if id(metadata) in _PTX_HINTS_FLAGGED:
                _PTX_HINTS_FLAGGED.discard(id(metadata))
                text = add_evict_first(text)
            return text

        stages["llir"], stages["ptx"] = llir, ptx

    hook._mla_ptx_hints = True
    return hook


def install_ptx_hints() -> bool:
    """Install the hook (once) where this triton needs it; True if it is installed now."""
    if not lowering_drops_hint():
        return False
    from triton import knobs

    current = knobs.runtime.add_stages_inspection_hook
    if getattr(current, "_mla_ptx_hints", False):
        return True
    knobs.runtime.add_stages_inspection_hook = _ptx_hints_hook(current)
    return True
