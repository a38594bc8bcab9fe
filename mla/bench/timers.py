"""The timing modes. Each returns a list of per-call times in microseconds.

cold    L2 flushed (a buffer >= 8x the L2 is zeroed: ``L2Flush``, whose 'read' kind leaves the L2
        clean instead), the device synchronized, then device events
        around the whole Python call. The sync after the flush keeps the call's host cost (plan
        lookup, wrapper, launches) inside the timed region, as in the anchors' method
        (/work/shared/anchors: a near-empty Triton launch measures ~22 us there). The harness follows
        each sample with one of the graph floor's replay timed the same way (``time_events_paired``:
        ``cold_floor_us``, a floor of the same seconds as the call's samples).
warm    the same without the flush: inputs may sit in L2 (small cases fit in the H200's 60 MB).
kernel  device time of the call's kernels only: the call captured once in a CUDA graph and
        replayed, L2 flushed before each replay; the flush is not waited for, so the replay's
        host launch happens while the flush runs and the events bracket device work alone.
        Sampled for >= ``StoppingRule.kernel_min_seconds`` and paced: after each sample the host
        idles ``kernel_idle_ratio`` x its wall time (default 1: a duty cycle of 1/2, below the
        board's power cap; docs/notes-harness.md, "Pacing the kernel mode").
        Where capture fails (a host sync inside the call, say) the fallback is torch.profiler's
        sum of kernel durations over warm calls; the ``kernel_method`` column names which.
fresh   the leaderboard harness's method (GPU MODE eval.py, "leaderboard" mode, read from
        reference-kernels problems/amd_202602/eval.py): before every timed call new inputs are made
        (seed + 13 per repeat; the previous set stays alive until the new one exists, so addresses
        alternate), then synchronize, flush the L2 **without** synchronizing again, start event,
        the whole call, end event; every output is checked (outside the timed region). Because the
        start event waits behind the flush in the stream, host work of the call shorter than the
        flush is hidden. The flush is eval.py's own by default (``L2Flush`` 'eval': a 62.5 GiB
        randn, >= ~14 ms at the H200's copy rate by arithmetic), so this mode counts device time,
        launch gaps and host syncs, not Python. Runs before 2026-12-02's third session used the
        1 GiB zeroing, which hid only ~0.25 ms of host work (the ``fresh_flush`` column says which).
        A graph cache keyed on addresses may miss here: this is the number a fixed-input win must
        survive.
cpu     time.perf_counter around the call (CPU tensors), so the harness logic runs without a GPU.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from .stats import StoppingRule, collect, settle

MODES = ("cold", "warm", "kernel", "fresh", "cpu")
GPU_MODES = ("cold", "warm", "kernel", "fresh")
FRESH_SEED_STEP = 13  # eval.py's leaderboard mode: the seed advances by 13 per repeat


def default_modes(device: torch.device) -> tuple[str, ...]:
    return GPU_MODES if device.type == "cuda" else ("cpu",)


def validate_modes(modes, device: torch.device) -> tuple[str, ...]:
    modes = tuple(modes)
    for m in modes:
        if m not in MODES:
            raise ValueError(f"unknown timing mode {m!r}; choose from {MODES}")
        if device.type == "cuda" and m == "cpu":
            raise ValueError("mode 'cpu' times CPU tensors; on a GPU use cold, warm, kernel or fresh")
        if device.type != "cuda" and m != "cpu":
            raise ValueError(f"mode {m!r} needs a CUDA/ROCm device; inputs are on {device.type!r} (use 'cpu')")
    if len(set(modes)) != len(modes):
        raise ValueError(f"timing modes repeat: {modes}")
    return modes


# --- CPU ---------------------------------------------------------------------------------------
def time_cpu(fn: Callable[[], object], rule: StoppingRule, warmup: int = 2,
             clock: Callable[[], float] = time.perf_counter) -> list[float]:
    for _ in range(warmup):
        fn()

    def sample() -> float:
        t0 = clock()
        fn()
        return (clock() - t0) * 1e6

    return collect(sample, rule, clock)


# --- GPU ---------------------------------------------------------------------------------------
L2_FLUSH_KINDS = ("write", "read", "eval")
# eval.py's leaderboard flush (reference-kernels utils.clear_l2_cache_large): randn((16000, 1024, 1024)) fp32
EVAL_FLUSH_BYTES = 16000 * 1024 * 1024 * 4
_EVAL_BUFFERS: dict = {}  # device index -> the 'eval' flush's buffer (kept for the process: ~60 GB allocs are slow)


class L2Flush:
    """A device buffer whose ``flush()`` evicts the L2, by one of three passes:

    'write' (the default of cold and kernel) zeroes max(1 GiB, 8 x L2) bytes, leaving the L2 full of
    *dirty* lines that the next kernel's reads write back to DRAM first (~8.5 us on the H200);
    'read' sums the same bytes into one scalar, leaving clean lines (the write-back's control);
    'eval' is eval.py's own flush (the default of fresh): ``normal_`` over 62.5 GiB (capped at 40% of
    the free memory at its first use, then kept for the process), dirty lines too, and >= ~14 ms
    long, so that a call's host work shorter than that hides behind it, as it does on the
    leaderboard (docs/notes-harness.md, "The flush")."""

    def __init__(self, device: torch.device, kind: str = "write"):
        if kind not in L2_FLUSH_KINDS:
            raise ValueError(f"unknown L2 flush kind {kind!r}; choose from {L2_FLUSH_KINDS}")
        self.kind = kind
        if kind == "eval":  # one buffer per device and process, so every row of a run gets the same flush
            key = torch.device(device).index or 0
            if key not in _EVAL_BUFFERS:
                free, _ = torch.cuda.mem_get_info(device)
                n = min(EVAL_FLUSH_BYTES, int(free * 0.4)) // 4
                _EVAL_BUFFERS[key] = torch.empty(n, dtype=torch.float32, device=device)
            self.buf = _EVAL_BUFFERS[key]
            self.nbytes = self.buf.numel() * 4
            return
        props = torch.cuda.get_device_properties(device)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        self.nbytes = max(1 << 30, 8 * l2)
        self.buf = torch.empty(self.nbytes // 4, dtype=torch.int32, device=device)
        if kind == "read":
            self.buf.zero_()
            self._sink = torch.empty((), dtype=torch.int64, device=device)

    @property
    def label(self) -> str:
        """What the result rows record: the kind and the bytes it passes over."""
        return f"{self.kind}:{self.nbytes / 1e9:.1f}GB"

    def flush(self) -> None:
        if self.kind == "write":
            self.buf.zero_()
        elif self.kind == "read":
            torch.sum(self.buf, dim=0, out=self._sink)
        else:
            self.buf.normal_()


def time_events(fn: Callable[[], object], rule: StoppingRule, *, flush: L2Flush | None,
                warmup: int = 3) -> list[float]:
    """cold (flush given) or warm (flush None): events around ``fn()``, the device idle at start."""
    return time_events_paired(fn, None, rule, flush=flush, warmup=warmup)[0]


def time_events_paired(fn: Callable[[], object], floor: Callable[[], object] | None, rule: StoppingRule, *,
                       flush: L2Flush | None, warmup: int = 3) -> tuple[list[float], list[float]]:
    """:func:`time_events` of ``fn`` with ``floor`` (if given) timed the same way right after each sample: (fn's
    samples, floor's samples), taken in the same seconds. A floor measured once per run meets whatever the host
    did then; one interleaved with the call's samples meets the same host as the call (the 'cold' mode's
    ``cold_floor_us``: the graph floor's replay, so the ratio to it is not a ratio of two moments)."""
    for _ in range(warmup):
        fn()
        if floor is not None:
            floor()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    floor_samples: list[float] = []

    def timed(f) -> float:
        if flush is not None:
            flush.flush()
        torch.cuda.synchronize()
        start.record()
        f()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    def sample() -> float:
        t = timed(fn)
        if floor is not None:
            floor_samples.append(timed(floor))
        return t

    return collect(sample, rule, time.perf_counter), floor_samples


def time_fresh(make_data: Callable[[int], object], fn: Callable[[object], object], rule: StoppingRule, *,
               flush: L2Flush | None, verify: Callable[[object, object], None] | None = None,
               warmup: int = 1) -> list[float]:
    """fresh: ``make_data(i)`` builds repeat i's inputs (i = 1, 2, ...; the caller maps i to a seed),
    then synchronize, flush (not waited for: eval.py's order), events around ``fn(data)``;
    ``verify(data, out)`` runs after the events, outside the timed region. The previous inputs are
    released only once the next exist (eval.py rebinds ``data``), so address sets alternate.
    ``flush=None``: CPU tensors, perf_counter around the call (the same loop, so scripts built on it
    run in CI; the harness's 'fresh' mode itself is GPU-only)."""
    count = [0]
    held = [None]

    def one(timed: bool) -> float:
        count[0] += 1
        data = make_data(count[0])
        held[0] = data  # now the previous repeat's inputs are released
        if flush is None:
            t0 = time.perf_counter()
            out = fn(data)
            dt = (time.perf_counter() - t0) * 1e6
        else:
            torch.cuda.synchronize()
            flush.flush()
            start.record()
            out = fn(data)
            end.record()
            end.synchronize()
            dt = start.elapsed_time(end) * 1e3
        if verify is not None:
            verify(data, out)
        return dt

    if flush is not None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        one(False)
    return collect(lambda: one(True), rule, time.perf_counter)


def capture_graph(run: Callable[[], object]) -> "torch.cuda.CUDAGraph":
    """Capture ``run`` (warmed on a side stream first, as capture requires). Raises on failure.
    The graph replays the tensors it captured: keep them alive and unchanged in shape."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            run()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    torch.cuda.synchronize()
    return graph


def time_graph(graph: "torch.cuda.CUDAGraph", rule: StoppingRule, flush: L2Flush,
               warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        graph.replay()

    def settle_step() -> None:
        flush.flush()
        graph.replay()
        torch.cuda.synchronize()

    settle(settle_step, rule.settle_seconds, time.perf_counter)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    idle_ratio = rule.kernel_idle_ratio

    def sample() -> float:
        t0 = time.perf_counter() if idle_ratio else 0.0
        flush.flush()  # not synchronized: the replay's launch overlaps the flush (see module doc)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if idle_ratio:  # the GPU idles while the host sleeps: duty cycle 1 / (1 + ratio)
            time.sleep(idle_ratio * (time.perf_counter() - t0))
        return start.elapsed_time(end) * 1e3

    return collect(sample, rule, time.perf_counter, min_seconds=rule.kernel_min_seconds)


def time_profiler(fn: Callable[[], object], n: int = 20, warmup: int = 3) -> float:
    """Mean per-call sum of device kernel durations (us) over ``n`` warm calls."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    # device-side events are the kernels, memcpys and memsets themselves; their interval is the duration
    total = sum(ev.time_range.elapsed_us() for ev in prof.events() if ev.device_type == DeviceType.CUDA)
    if total <= 0:
        raise RuntimeError("the profiler recorded no device kernels for the call")
    return total / n


def time_kernel(run: Callable[[], object], rule: StoppingRule, flush: L2Flush) -> tuple[list[float], str]:
    """(samples, method): graph replay where capture works, else the profiler's mean (n samples
    of one averaged value are not independent, so it is returned as a single sample)."""
    try:
        graph = capture_graph(run)
    except Exception as e:  # capture can fail in many backend-specific ways; fall back, say why
        torch.cuda.synchronize()
        method = f"profiler-warm-mean (graph capture failed: {type(e).__name__})"
        return [time_profiler(run)], method
    try:
        method = ("graph-replay-cold" + (f", settle {rule.settle_seconds:g} s" if rule.settle_seconds else "")
                  + (f", window >= {rule.kernel_min_seconds:g} s" if rule.kernel_min_seconds else "")
                  + (f", paced x{rule.kernel_idle_ratio:g}" if rule.kernel_idle_ratio else ""))
        return time_graph(graph, rule, flush), method
    finally:
        del graph
