"""Per-row keys: moved to :mod:`kernel_lab.core.rows.keys`. This name stays only for
``core/parts/landmarks.py``, which still imports it; delete it with that import."""

from kernel_lab.core.rows.keys import (
    BANDWIDTH,
    BUCKETS,
    DSG_EPOCH,
    EVAL_SUBSET,
    LANDMARKS,
    LEAKAGE,
    RPC_ROUND,
    SPLIT,
    SUBSAMPLE,
    TEST_SUBSET,
    VIEW_SUBSET,
    is_selected,
    keys,
    smallest,
    threshold,
    uniforms,
    weighted_keys,
)

__all__ = ["BANDWIDTH", "BUCKETS", "DSG_EPOCH", "EVAL_SUBSET", "LANDMARKS", "LEAKAGE",
           "RPC_ROUND", "SPLIT", "SUBSAMPLE", "TEST_SUBSET", "VIEW_SUBSET", "is_selected",
           "keys", "smallest", "threshold", "uniforms", "weighted_keys"]
