"""Measured memory ceilings, once per run: read (fp32 sum over a large buffer) and copy
(device-to-device, bytes read + bytes written), in GB/s (1e9 bytes/s). The anchors used the same
two probes (4 GiB read, 4.3 TB/s copy on the H200); every result row carries both so its
'% of measured read bandwidth' can be recomputed from the CSV alone."""

from __future__ import annotations

import time

import torch

from .stats import StoppingRule, summarize
from .timers import time_cpu, time_events


def measure_bandwidth(device: str | torch.device, nbytes: int | None = None,
                      rule: StoppingRule | None = None) -> dict:
    """{'read_gbs', 'copy_gbs', 'probe_bytes'}: medians over repeated passes."""
    device = torch.device(device)
    if nbytes is None:
        if device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(device)
            nbytes = min(4 << 30, free // 4)  # read 4 GiB like the anchors; copy needs two buffers
        else:
            nbytes = 64 << 20
    n = int(nbytes) // 4
    if n < 1024:
        raise ValueError(f"bandwidth probe needs at least 4 KiB, got {nbytes} bytes")
    rule = rule or StoppingRule(min_runs=5, max_runs=30, max_seconds=1.0, rel_sem=5e-3)
    src = torch.ones(n, dtype=torch.float32, device=device)  # ones, not zeros: see METHOD.md
    dst = torch.empty_like(src)
    acc = torch.empty((), dtype=torch.float32, device=device)

    def read():
        torch.sum(src, dim=0, out=acc)

    def copy():
        dst.copy_(src)

    if device.type == "cuda":
        t_read = time_events(read, rule, flush=None)
        t_copy = time_events(copy, rule, flush=None)
    else:
        t_read = time_cpu(read, rule, clock=time.perf_counter)
        t_copy = time_cpu(copy, rule, clock=time.perf_counter)
    bytes_read = n * 4
    res = dict(read_gbs=bytes_read / (summarize(t_read)["median"] * 1e-6) / 1e9,
               copy_gbs=2 * bytes_read / (summarize(t_copy)["median"] * 1e-6) / 1e9,
               probe_bytes=bytes_read)
    del src, dst
    res["host_floor_us"] = measure_host_floor(device, rule)
    res["graph_floor_us"] = measure_graph_floor(device, rule) if device.type == "cuda" else float("nan")
    if device.type == "cuda":
        torch.cuda.empty_cache()  # hand the probe's 8 GiB back before the cases allocate
    return res


def measure_host_floor(device: torch.device, rule: StoppingRule) -> float:
    """Median time of one tiny torch op (``x.add_(1)`` on one element), timed like a 'cold' call:
    the anchors' launch-floor probe. Host cost per launch differs between machines of one kind;
    this column lets small-shape times be compared across runs."""
    x = torch.zeros(1, device=device)
    if device.type == "cuda":
        from .timers import L2Flush
        samples = time_events(lambda: x.add_(1), rule, flush=L2Flush(device))
    else:
        samples = time_cpu(lambda: x.add_(1), rule, clock=time.perf_counter)
    return summarize(samples)["median"]


def measure_graph_floor(device: torch.device, rule: StoppingRule) -> float:
    """Median time of replaying a CUDA graph of one near-empty kernel (``x.add_(1)`` on one element),
    timed like a 'cold' call (L2 flushed, synchronized, events around the Python ``replay()``): the
    lowest any graph-replayed call can be in this run (issue 10's target is a ratio to it)."""
    from .timers import L2Flush, capture_graph

    x = torch.zeros(1, device=device)
    graph = capture_graph(lambda: x.add_(1))
    samples = time_events(graph.replay, rule, flush=L2Flush(device))
    del graph
    return summarize(samples)["median"]


def measure_graph_floor_kernel(device: torch.device, flush, rule: StoppingRule) -> float:
    """Median device time of ``graph_floor_us``'s graph (one near-empty kernel) replayed right after ``flush``,
    exactly as the 'kernel' mode times a decode (``graph_floor_kernel_us``): the part of ``graph_floor_us`` that
    is device time. A 'cold' call serializes the host and the device (the start event follows a synchronize), so a
    graph-replayed call whose device time is ``kernel_median_us`` takes at least about
    ``graph_floor_us + kernel_median_us - graph_floor_kernel_us`` cold (:func:`mla.analysis.targets.cold_lowest_us`
    says why "about")."""
    from .timers import capture_graph, time_graph

    x = torch.zeros(1, device=device)
    graph = capture_graph(lambda: x.add_(1))
    try:
        return summarize(time_graph(graph, rule, flush))["median"]
    finally:
        del graph


def measure_kernel_read(device: torch.device, nbytes: int, flush, rule: StoppingRule) -> float:
    """Median time of one read pass over ``nbytes`` (``torch.sum`` of an fp32 buffer, captured in a
    CUDA graph) replayed right after ``flush``, exactly as the 'kernel' mode times a decode
    (``kernel_read_us``). A same-run reference, not a bound (a decode can beat torch's sum): beside
    the 4 GiB read probe it carries what a short read pays and a long one hides, the graph launch's
    latency, the DRAM pipeline's ramp and tail, and, after a 'write' flush, the write-back of the
    flush's dirty L2 lines."""
    from .timers import capture_graph, time_graph

    n = max(int(nbytes) // 4, 1024)
    src = torch.ones(n, dtype=torch.float32, device=device)
    acc = torch.empty((), dtype=torch.float32, device=device)
    graph = capture_graph(lambda: torch.sum(src, dim=0, out=acc))
    try:
        return summarize(time_graph(graph, rule, flush))["median"]
    finally:
        del graph, src
