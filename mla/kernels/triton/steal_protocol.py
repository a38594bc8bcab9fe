"""The work-stealing schedule of generation 3 (v154, ``gluon_steal.py``): its counter word and a model of it.

Why (docs/notes-triton.md, rounds 50-51): every program of a launch gets the same tokens, yet some SMs stream
faster than others, so at the large shapes the launch ends with the slowest programs while the fast ones idle
(H100, bs256-kv8192 fp8: the last program ends 37 us after the mean one). Stealing gives an equal share of
*time*: the owner of a range streams it from the front; a helper program (the grid has extra programs past the
owners, which the hardware starts as slots free up) takes a piece from the back of the range with the most
tiles left. Only stolen ranges write partials; the last contributor of a range merges them.

One 32-bit word per range, ``f | b << 13 | k << 26``:

- ``f``: tiles the owner has claimed from the front (it claims ``chunk`` at a time, one claim ahead, so the
  atomic's latency hides behind a chunk of tiles);
- ``b``: tiles taken from the back by helpers;
- ``k``: how many helpers took a piece (each writes partial slot ``1 + k``; the owner, when stolen from, slot 0).

The owner's claim is an atomic add of ``chunk`` to ``f``; it returns the word before it, and the owner owns
``[f, min(f + chunk, n - b))`` if ``f < n - b``, else nothing more. A helper's steal is a compare-and-swap that
adds ``s`` to ``b`` and 1 to ``k``, with ``s = min(rem // 2, max_steal)`` where ``rem = n - f - b >= MIN_LEFT``:
it takes ``[n - b - s, n - b)``. Because a steal leaves at least half of what is unclaimed (and at least 2 tiles)
at the front, the owner's next tile is never stolen, so it may prefetch it before its claim returns.

The kernel does this with ``atomic_add`` / ``atomic_cas`` on the same word; this module holds the constants
both sides use and a sequential model (:func:`simulate`) that the tests drive through random interleavings:
every tile is computed exactly once and the per-range tile counts add up to ``n``.
"""

from __future__ import annotations

import random

F_BITS = 13  # tiles per range < 2**13 (64-token tiles: 524k tokens)
B_SHIFT = 13
K_SHIFT = 26
FIELD_MASK = (1 << F_BITS) - 1
K_MASK = 0xF
MAX_SLOTS = 15  # k has 4 bits (bits 26-29: the word stays non-negative as an int32)
MAX_TILES = FIELD_MASK - 64  # room for the owner's one failing claim past n (chunk <= 64)
MIN_LEFT = 4  # a helper steals only from a range with >= 4 unclaimed tiles, taking at most half
MAX_RANGES = 4096  # the helpers' scan holds every range's word in one [RANGES_P2] tensor


def unpack(word: int) -> tuple[int, int, int]:
    return word & FIELD_MASK, (word >> B_SHIFT) & FIELD_MASK, (word >> K_SHIFT) & K_MASK


def owner_claim(word: int, n: int, chunk: int) -> tuple[int, int, int]:
    """The owner's claim on ``word`` (an atomic add of ``chunk``): (new word, tiles it now owns up to, k seen)."""
    f, b, k = unpack(word)
    own_to = min(f + chunk, n - b) if f < n - b else f
    return word + chunk, own_to, k


def steal_size(word: int, n: int, slots: int, max_steal: int) -> int:
    """Tiles a helper would take from this range now (0: none)."""
    f, b, k = unpack(word)
    rem = n - f - b
    if k >= slots or rem < MIN_LEFT:
        return 0
    return min(rem // 2, max_steal)


def helper_steal(word: int, n: int, slots: int, max_steal: int):
    """A helper's steal (what its compare-and-swap writes): (new word, first tile, tiles, slot) or None."""
    s = steal_size(word, n, slots, max_steal)
    if s == 0:
        return None
    f, b, k = unpack(word)
    return word + (s << B_SHIFT) + (1 << K_SHIFT), n - b - s, s, 1 + k


def check_plan(num_ranges: int, tiles_per_range: int, chunk: int, slots: int, max_steal: int) -> None:
    """ValueError for what the word cannot hold (the plan calls it before it allocates anything)."""
    if not 2 <= chunk <= 64:
        raise ValueError(f"steal chunk (the owner's tiles per claim) must be in [2, 64], got {chunk}: its claim is "
                         "issued a chunk ahead, and with 1 there is nothing to hide the atomic behind")
    if not 1 <= slots <= MAX_SLOTS:
        raise ValueError(f"steal slots (pieces a range may lose) must be in [1, {MAX_SLOTS}], got {slots}")
    if max_steal < 2:
        raise ValueError(f"max_steal (tiles a helper takes at most) must be >= 2, got {max_steal}")
    if tiles_per_range > MAX_TILES:
        raise ValueError(f"work stealing counts a range's tiles in {F_BITS} bits: at most {MAX_TILES} tiles of 64 "
                         f"tokens, got {tiles_per_range}")
    if num_ranges > MAX_RANGES:
        raise ValueError(f"work stealing scans every range's word at once: at most {MAX_RANGES} ranges (batch x "
                         f"splits x head groups), got {num_ranges}")


def simulate(n_tiles: list[int], chunk: int, slots: int, max_steal: int, helpers: int, seed: int = 0) -> dict:
    """Run owners and helpers of one launch in a random interleaving of their atomic steps, as the kernel
    orders them: an owner claims its first chunk, then claims the next one while it computes the current
    one (the claim's answer is read a chunk later); a helper picks the range with the most unclaimed
    tiles and compare-and-swaps the word it read (a stale read fails and rescans, up to 4 times).
    Returns the tiles each range had computed (a list of counts per tile: all must be 1), the pieces
    (range -> [(first, tiles, slot)]), the steal count per range, and what each owner saw as its k."""
    rng = random.Random(seed)
    words = [0] * len(n_tiles)
    done = [[0] * n for n in n_tiles]
    pieces = {r: [] for r in range(len(n_tiles))}
    owner_k = {}

    def owner(r):
        n = n_tiles[r]
        old = words[r]
        words[r] += chunk
        f, b, k = unpack(old)
        own_to = min(f + chunk, n - b) if f < n - b else 0
        last_k = k
        j = 0
        while True:
            issued = own_to == j + chunk
            if issued:
                yield
                pend = words[r]
                words[r] += chunk
            for t in range(j, own_to):
                yield
                done[r][t] += 1
            if not issued:
                break
            f, b, k = unpack(pend)
            last_k = k
            if f >= n - b:
                break
            j, own_to = own_to, min(f + chunk, n - b)
        owner_k[r] = last_k
        pieces[r].append((0, own_to, 0))

    def helper():
        for _ in range(4):
            seen = list(words)
            yield  # the scan and the compare-and-swap are apart: others may move in between
            sizes = [steal_size(w, n, slots, max_steal) for w, n in zip(seen, n_tiles)]
            rem = [(n - unpack(w)[0] - unpack(w)[1]) if s else -1 for w, n, s in zip(seen, n_tiles, sizes)]
            best = max(rem) if rem else -1
            if best < MIN_LEFT:
                return
            r = rem.index(best)
            got = helper_steal(seen[r], n_tiles[r], slots, max_steal)
            if words[r] != seen[r]:
                continue  # the compare-and-swap failed: rescan
            words[r], first, s, slot = got
            for t in range(first, first + s):
                yield
                done[r][t] += 1
            pieces[r].append((first, s, slot))
            return

    live = [owner(r) for r in range(len(n_tiles))] + [helper() for _ in range(helpers)]
    while live:
        g = rng.choice(live)
        try:
            next(g)
        except StopIteration:
            live.remove(g)
    steals = [unpack(w)[2] for w in words]
    return dict(done=done, pieces=pieces, steals=steals, owner_k=owner_k)
