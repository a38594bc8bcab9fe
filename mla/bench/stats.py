"""Sample statistics and the stopping rule, shared by every timing mode.

The rule follows the GPU MODE leaderboard's eval: keep sampling until the standard error of the
mean is below ``rel_sem`` of the mean (0.1 %), or a sample/time cap is reached; never fewer than
``min_runs``. We report the median (robust to the occasional preempted call), the min, the IQR
and n; the mean and SEM only drive the stopping decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class StoppingRule:
    min_runs: int = 10
    max_runs: int = 200
    max_seconds: float = 1.0  # wall time spent sampling one mode of one row (not the sum of samples)
    rel_sem: float = 1e-3  # stop once SEM / mean < this
    # the kernel mode's settle: replays behind the flush, untimed, for this long before its samples (round 42:
    # the first kernel-mode timing of a case right after its references read bs256-kv8192 fp8 ~15% slow, the
    # same graph a second later not; docs/notes-harness.md, "The first row's transient")
    settle_seconds: float = 0.0
    # the kernel mode's shortest sampling window, over max_runs, max_seconds and the precision stop (round 43:
    # the first ~40 ms of replays after a case's references read bs256-kv8192 fp8 ~15% slow, and one H200 also
    # read ~0.14 s episodes ~19% slow about once a second; a window of 1 s reads the fast mode's median where the
    # precision stop alone ended inside the slow phase; docs/notes-harness.md, "The first row's transient")
    kernel_min_seconds: float = 1.0
    # the kernel mode's pacing: after each sample the host idles this multiple of the sample's own wall time
    # (flush + replay), so the GPU's duty cycle is 1 / (1 + ratio). Round 45a: back to back the board reaches its
    # software power cap and bf16 at bs256-kv8192 reads 560-572 us (IQR 30-49) as the SM clock dips to ~1550 MHz;
    # at ratio 0.5, 1 and 2 no cap and 553.2-553.7 (IQR 3), every other row within 0.5% (bs4-kv1024 1.2%); 1 keeps
    # a margin (1 s power <= 422 W against 495 at 0.5); docs/notes-harness.md, "Pacing the kernel mode"
    kernel_idle_ratio: float = 1.0

    def __post_init__(self):
        if self.min_runs < 2:
            raise ValueError(f"min_runs must be >= 2 (a spread needs two samples), got {self.min_runs}")
        if self.max_runs < self.min_runs:
            raise ValueError(f"max_runs {self.max_runs} is below min_runs {self.min_runs}")
        if not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be > 0, got {self.max_seconds}")
        if not self.rel_sem > 0:
            raise ValueError(f"rel_sem must be > 0, got {self.rel_sem}")
        if not self.settle_seconds >= 0:
            raise ValueError(f"settle_seconds must be >= 0, got {self.settle_seconds}")
        if not self.kernel_min_seconds >= 0:
            raise ValueError(f"kernel_min_seconds must be >= 0, got {self.kernel_min_seconds}")
        if not 0 <= self.kernel_idle_ratio <= 100:
            raise ValueError(f"kernel_idle_ratio must be in [0, 100], got {self.kernel_idle_ratio}")

    def done(self, samples: list[float], elapsed_s: float) -> bool:
        n = len(samples)
        if n < self.min_runs:
            return False
        if n >= self.max_runs or elapsed_s >= self.max_seconds:
            return True
        mean = sum(samples) / n
        if mean <= 0:
            return False
        sem = float(np.std(samples, ddof=1)) / math.sqrt(n)
        return sem / mean < self.rel_sem


def collect(sample: Callable[[], float], rule: StoppingRule, clock: Callable[[], float],
            min_seconds: float = 0.0) -> list[float]:
    """Call ``sample()`` (returns one measurement) until ``rule`` says stop and ``min_seconds`` have
    passed (a window no stop can end early); ``clock`` is a wall clock in seconds, injected so tests
    can drive the time cap."""
    samples: list[float] = []
    t0 = clock()
    while True:
        elapsed = clock() - t0
        if elapsed >= min_seconds and rule.done(samples, elapsed):
            break
        samples.append(float(sample()))
    return samples


def settle(step: Callable[[], object], seconds: float, clock: Callable[[], float]) -> int:
    """Call ``step()`` until ``seconds`` of ``clock`` have passed (none for 0); returns the number of calls.
    ``step`` must wait for its own work (the clock measures what the device did, not what was queued)."""
    n, t0 = 0, clock()
    while clock() - t0 < seconds:
        step()
        n += 1
    return n


def summarize(samples) -> dict:
    """median, min, IQR (p75 - p25), n; NaNs for an empty list (nothing measured)."""
    x = np.asarray(list(samples), dtype=np.float64)
    if x.size == 0:
        return dict(median=math.nan, min=math.nan, iqr=math.nan, n=0)
    if not np.all(np.isfinite(x)):
        raise ValueError("timing samples contain NaN or inf; a timer returned garbage")
    q25, q50, q75 = np.percentile(x, [25, 50, 75])
    return dict(median=float(q50), min=float(x.min()), iqr=float(q75 - q25), n=int(x.size))


def geomean(values) -> float:
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=np.float64)
    if x.size == 0 or np.any(x <= 0):
        return math.nan
    return float(np.exp(np.mean(np.log(x))))
