"""Random choices defined per row: a key for every (seed, stream, row) triple.

A partitioned data set is read piece by piece on different machines, so a random choice
that walks the rows in order with one generator (``rng.permutation(n)``) would depend on
how the rows are cut into pieces. Here every random choice about row ``i`` comes from a
64-bit key computed from the seed, a *stream* number naming the choice (the train/test
split, the landmarks of one sampler, one round of RP-Cholesky, one epoch of DSG, …) and
the row's **global index** ``i`` alone: a counter-based generator (SplitMix64's finaliser
applied to a mix of the three), vectorised in numpy. The same rows therefore get the same
keys in memory, in one Parquet file or in sixteen, on any machine, and every selection
built on the keys —

- the ``k`` rows with the smallest keys: a uniform random subset of size ``k``
  (:func:`smallest`, :func:`threshold`);
- ``u_i < p_i`` with ``u_i`` the key as a uniform in [0, 1): independent Bernoulli draws
  (:func:`uniforms`);
- the ``k`` smallest of ``−log(u_i) / w_i``: ``k`` rows without replacement with
  probabilities proportional to ``w`` (Efraimidis & Spirakis; :func:`weighted_keys`) —

is the same wherever the rows live. A selection over several partitions is the union of
each partition's candidates followed by the same rule (ties in a key are broken by the
row index, so the order is total).
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

#: Stream numbers of the choices made on rows (one place, so no two choices share one).
SPLIT = 1             # the train/test split
TEST_SUBSET = 2       # the test rows an error is measured on, when capped
EVAL_SUBSET = 3       # the training rows the spectral error is measured on
VIEW_SUBSET = 4       # the training rows a picture shows
SUBSAMPLE = 5         # a seeded sample of all rows (subsample=N)
BANDWIDTH = 6         # the training rows the median-heuristic bandwidth is computed on
LEAKAGE = 7           # the training rows of partitioned data the leakage check ranks
LANDMARKS = 16        # + sampler-specific offsets (uniform landmarks, RLS levels, …)
RPC_ROUND = 1 << 20   # + round number: RP-Cholesky's pivot draws
DSG_EPOCH = 1 << 30   # + epoch number: DSG's order within a block of rows
TRIAL_SUBSET = 1 << 36  # + trial number: ckrr-risk's training and test rows of one trial
GFC_SUBSET = 1 << 44  # the rows of one GFC descent (keyed by the descent's own seed)
GFC_FOLDS = (1 << 44) + 1  # the folds of one GFC descent's rows (the descent's seed)

#: The ranges of keys :func:`threshold` counts in (by their top 16 bits).
BUCKETS = 1 << 16


#: SplitMix64's finaliser as steps ``x ^= x >> shift``, then ``x *= factor`` (none after
#: the last): the one list both :func:`_mix` and :func:`_mix_in_place` apply.
_STEPS = ((np.uint64(30), _M1), (np.uint64(27), _M2), (np.uint64(31), None))


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser (a bijection of uint64 with good avalanche) as new values:
    few rows and the seed's head, a uint64 scalar or array. (Copying into
    :func:`_mix_in_place` cost the two allocations more per call: keys of 100 rows took
    about 40 µs instead of 31, of one row 44 instead of 21: minima on a busy 2-core
    machine.)"""
    for shift, factor in _STEPS:
        x = x ^ (x >> shift)
        if factor is not None:
            x = x * factor
    return x


def _mix_in_place(x: np.ndarray) -> np.ndarray:
    """:func:`_mix` of a uint64 array written over it, with one temporary: the same
    steps (so the same keys) without the eight arrays the expression allocates, each a
    fresh stretch of memory for 1M rows (first keys of a process: 10 instead of 13–41 ms
    for 1M rows on the 2-core test machine)."""
    t = np.empty_like(x)
    for shift, factor in _STEPS:
        np.right_shift(x, shift, out=t)
        x ^= t
        if factor is not None:
            x *= factor
    return x


def _scalar(value: int) -> np.uint64:
    return np.uint64(int(value) & 0xFFFFFFFFFFFFFFFF)


def keys(seed: int, stream: int, rows: np.ndarray) -> np.ndarray:
    """The uint64 key of each global row index in ``rows`` for ``(seed, stream)``."""
    rows = np.asarray(rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        head = _mix(np.asarray([_scalar(seed) * _GOLDEN + _scalar(stream)], dtype=np.uint64))
        head = _mix(head ^ (_scalar(stream) * _M2))
        if rows.ndim == 0 or rows.size < 4096:
            return _mix(rows * _GOLDEN + head[0])
        x = np.multiply(rows, _GOLDEN)
        x += head[0]
        return _mix_in_place(x)


def uniforms(seed: int, stream: int, rows: np.ndarray) -> np.ndarray:
    """A uniform in [0, 1) per row (the top 53 bits of its key)."""
    return key_uniforms(keys(seed, stream, rows))


def key_uniforms(key: np.ndarray) -> np.ndarray:
    """The uniforms of :func:`uniforms` from keys already computed."""
    return (key >> np.uint64(11)).astype(np.float64) * 2.0**-53


def weighted_keys(seed: int, stream: int, rows: np.ndarray, weights: np.ndarray
                  ) -> np.ndarray:
    """``−log(u_i) / w_i``: the ``k`` rows with the smallest values are ``k`` draws without
    replacement with probabilities proportional to ``w`` (rows of weight 0 get +inf)."""
    u = uniforms(seed, stream, rows)
    w = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = -np.log1p(-u) / w        # −log(1 − u): u = 0 is possible, 1 is not
    out[~(w > 0)] = np.inf
    return out


def smallest(values: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest ``(value, row)`` pairs, in increasing order of value
    (ties broken by the row index); all positions if there are at most ``k``."""
    values = np.asarray(values)
    rows = np.asarray(rows)
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    if values.size > k:
        cut = np.partition(values, k - 1)[k - 1]
        cand = np.flatnonzero(values <= cut)
    else:
        cand = np.arange(values.size)
    order = np.lexsort((rows[cand], values[cand]))
    return cand[order[:k]]


def threshold(seed: int, stream: int, n: int, k: int, chunk: int = 1 << 20,
              exclude: np.ndarray | None = None) -> np.uint64:
    """The largest key among the ``k`` smallest keys of rows ``0 … n−1`` (so rows with
    ``keys ≤ threshold`` are exactly those ``k``; uint64 keys of distinct rows differ, the
    map being a bijection). ``exclude``: distinct global rows left out of the choice (rows
    dropped for their missing values): the ``k`` smallest keys among the others.

    Memory is bounded whatever ``n`` and ``k``: a first pass over the rows, in chunks,
    counts the keys in each of the :data:`BUCKETS` ranges of their top 16 bits, which
    names the range holding the ``k``-th key and its rank there; a second pass keeps the
    keys of that range alone (about ``n / 65536``, the keys being uniform) and selects."""
    left_out = keys(seed, stream, np.zeros(0, dtype=np.int64) if exclude is None
                    else np.asarray(exclude, dtype=np.int64))
    if k <= 0:
        raise ValueError("threshold needs k ≥ 1")
    if k > n - left_out.size:
        raise ValueError(f"cannot select {k} of {n - left_out.size} rows")
    top = np.uint64(64 - 16)
    counts = -np.bincount((left_out >> top).astype(np.intp), minlength=BUCKETS)
    for start in range(0, n, chunk):
        block = keys(seed, stream, np.arange(start, min(start + chunk, n)))
        counts += np.bincount((block >> top).astype(np.intp), minlength=BUCKETS)
    below = np.cumsum(counts)
    bucket = int(np.searchsorted(below, k))          # the first range reaching k keys
    rank = k - (int(below[bucket - 1]) if bucket else 0)
    inside = []
    for start in range(0, n, chunk):
        block = keys(seed, stream, np.arange(start, min(start + chunk, n)))
        inside.append(block[(block >> top) == np.uint64(bucket)])
    kept = np.setdiff1d(np.concatenate(inside), left_out, assume_unique=True)
    return np.uint64(np.partition(kept, rank - 1)[rank - 1])


def kth_key(key: np.ndarray, k: int) -> np.uint64:
    """The largest of the ``k`` smallest of ``key`` (keys of distinct rows, already
    computed): :func:`threshold` when they are the keys of every row ``0 … n−1`` — one
    pass of keys and a selection where rows are in memory anyway."""
    if not 1 <= k <= key.size:
        raise ValueError(f"cannot select {k} of {key.size} rows")
    return np.uint64(np.partition(key, k - 1)[k - 1])


def order(seed: int, stream: int, rows: np.ndarray) -> np.ndarray:
    """Positions of ``rows`` in increasing order of their keys (ties by the row index): a
    uniform random permutation, defined per row — the rows ranked first are the
    :func:`smallest`."""
    rows = np.asarray(rows)
    return np.lexsort((rows, keys(seed, stream, rows)))


def is_selected(seed: int, stream: int, rows: np.ndarray, cut: np.uint64) -> np.ndarray:
    """Whether each row is among those whose key is at most ``cut`` (see :func:`threshold`)."""
    return keys(seed, stream, rows) <= cut
