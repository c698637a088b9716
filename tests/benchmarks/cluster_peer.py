"""The hand-written Dask peer of ``bench_cluster.py``: uniform-Nyström ridge as a Dask user
would write it, against Kernel Lab's ``NystromRidge`` fit on the same folder and cluster.

Run by ``bench_cluster.py`` as a child process (the client of both fits, so that its peak
memory is theirs alone): ``python cluster_peer.py SCHEDULER FOLDER LANDMARKS
LAM_PER_ROW``; prints one JSON line.

Both solve the same problem::

    min_w,c  Σ_train (y_i − f(x_i)ᵀ w − c)² + λ ‖w‖²,   f(x) = k(x, S) W^{-1/2}

over the same training rows (Kernel Lab's keyed split: test fraction 0.25, seed 0), the
features standardised by the training rows' mean and population standard deviation (a
column below 1e-12 keeps scale 1), the Gaussian kernel ``exp(−‖x − z‖² / (2σ²))`` with
σ = √(2p) (given to both: no median-heuristic pass on either side), the same s landmark
rows S (Kernel Lab's keyed uniform landmarks: their global row indices are handed to the
peer), and λ = ``LAM_PER_ROW`` × n_train (chosen so that the system is well conditioned:
its condition number is printed). Kernel Lab: open the folder with ``partitions=keep`` on the
cluster (the split and one pass for the column statistics), then
``NystromRidge(sampler="uniform", lam=λ, n_components=s).fit(data)`` (the landmarks by
their keys, one pass of centred feature sums, one solve). The peer:

1. ``dask.dataframe.read_parquet(folder).to_dask_array(lengths=True)``, rechunked to
   :data:`CHUNK_ROWS` rows;
2. in one ``dask.compute``: the training rows' column means and standard deviations
   (the training mask from each row's global index, ``map_blocks``) and the landmark rows
   ``X[indices]``;
3. ``W = k(S, S)``, ``W^{-1/2} = V e^{-1/2}`` (``eigh``, eigenvalues below 1e-12 of the
   largest dropped);
4. ``Z = k(X_std, S) W^{-1/2}`` by ``map_blocks``, zero on the test rows, with two more
   columns, y (zero on the test rows) and the training mask: ``[Z y 1]ᵀ[Z y 1]`` is one dask
   reduction (``tensordot`` over the row chunks) holding ZᵀZ, Zᵀy, Σz, Σy and n_train;
5. one solve of the centred system ``(ZᵀZ − n z̄z̄ᵀ + λI) w = Zᵀy − n z̄ ȳ``,
   ``c = ȳ − z̄ᵀw``.

The coefficients are compared on the landmarks' kernel columns, ``β = W^{-1/2} w`` (each
side's own square root of W⁻¹: Kernel Lab takes the Cholesky basis when W is well
conditioned, the peer the eigenbasis; β and c do not depend on it).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

#: Rows per chunk of the peer's dask array (each chunk's k(X, S) and features are
#: CHUNK_ROWS × s doubles: 26 MB at s = 100).
CHUNK_ROWS = 32_768
SEED = 0
TEST_FRACTION = 0.25


def gaussian(A: np.ndarray, B: np.ndarray, sigma: float) -> np.ndarray:
    """``exp(−‖a − b‖² / (2σ²))`` for every row a of A and b of B."""
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    np.maximum(sq, 0.0, out=sq)
    return np.exp(sq * (-0.5 / sigma**2), out=sq)


def _rows_of(block: np.ndarray, block_info: dict | None) -> np.ndarray:
    start = block_info[0]["array-location"][0][0]
    return np.arange(start, start + block.shape[0])


def _train_mask(block: np.ndarray, plan, block_info: dict | None = None) -> np.ndarray:
    return plan.is_train(_rows_of(block, block_info))[:, None]


def _features(block: np.ndarray, plan, mean: np.ndarray, scale: np.ndarray,
              landmarks: np.ndarray, N: np.ndarray, sigma: float,
              block_info: dict | None = None) -> np.ndarray:
    """``[Z y 1]`` of a chunk of raw rows (x₁ … x_p, y), zero on the test rows."""
    keep = plan.is_train(_rows_of(block, block_info)).astype(np.float64)
    p = mean.size
    Z = gaussian((block[:, :p] - mean) / scale, landmarks, sigma) @ N
    out = np.empty((block.shape[0], N.shape[1] + 2))
    np.multiply(Z, keep[:, None], out=out[:, :-2])
    out[:, -2] = block[:, p] * keep
    out[:, -1] = keep
    return out


def peer_fit(client, folder: str, plan, index: np.ndarray, sigma: float, lam: float
             ) -> dict:
    """The hand-written fit (module docstring); returns β, c, its phases' times and the
    condition number of the solved system."""
    import dask
    import dask.dataframe as dd

    times = {}
    t0 = time.perf_counter()
    A = dd.read_parquet(folder).to_dask_array(lengths=True)
    A = A.rechunk({0: CHUNK_ROWS, 1: -1})
    p = A.shape[1] - 1
    times["read_parquet → array (lengths)"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    X = A[:, :p]
    mask = A.map_blocks(_train_mask, plan, dtype=bool, chunks=(A.chunks[0], (1,)))
    train = X[mask[:, 0]]
    mean, std, S_raw = dask.compute(train.mean(axis=0), train.std(axis=0), X[index])
    scale = np.where(std < 1e-12, 1.0, std)
    times["moments + landmark rows"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    S = (S_raw - mean) / scale
    e, V = np.linalg.eigh(gaussian(S, S, sigma))
    keep = e > 1e-12 * e.max()
    N = V[:, keep] / np.sqrt(e[keep])
    r = N.shape[1]
    Zy1 = A.map_blocks(_features, plan, mean, scale, S, N, sigma, dtype=np.float64,
                       chunks=(A.chunks[0], (r + 2,)))
    M = (Zy1.T @ Zy1).compute()
    times["features and [Z y 1]ᵀ[Z y 1]"] = time.perf_counter() - t2
    n = M[-1, -1]
    z_bar, y_bar = M[:r, -1] / n, M[-2, -1] / n
    G = M[:r, :r] - n * np.outer(z_bar, z_bar)
    G[np.diag_indices(r)] += lam
    w = np.linalg.solve(G, M[:r, -2] - n * z_bar * y_bar)
    times["total"] = time.perf_counter() - t0
    return {"beta": N @ w, "intercept": y_bar - z_bar @ w, "times": times,
            "n_train": int(n), "condition": float(np.linalg.cond(G))}


def kernel_lab_fit(client, folder: str, s: int, sigma: float, lam_per_row: float
                   ) -> dict:
    """Open the folder on the cluster (kept in its partitions) and fit ``NystromRidge`` on
    it; returns the model, the data set and the phases' times."""
    from kernel_lab.core.models.nystrom import NystromRidge
    from kernel_lab.data.source import DataSource
    from kernel_lab.engine.dask_parts import DaskParts

    t0 = time.perf_counter()
    data = DataSource.from_spec(f"{folder}:partitions=keep,test_fraction={TEST_FRACTION}"
                                ).open(SEED, make_parts=lambda parts: DaskParts(parts, client))
    t1 = time.perf_counter()
    lam = lam_per_row * data.n_train
    model = NystromRidge(sampler="uniform", lam=lam, n_components=s,
                         kernel_params={"sigma": sigma}, random_state=SEED).fit(data)
    t2 = time.perf_counter()
    return {"model": model, "data": data, "lam": lam,
            "times": {"open (split, column statistics, leakage check)": t1 - t0,
                      "fit": t2 - t1,
                      "total": t2 - t0}}


def peak_mb() -> float:
    """This process's peak resident memory (MB): ``VmHWM``, the high-water mark of its own
    address space. Not ``ru_maxrss``, which a process started by fork and exec inherits
    from its parent (a worker or a client started by a 360 MB process reported 360 MB)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def workers_peak_mb(client) -> dict[str, float]:
    """Each worker's peak resident memory since it started (MB, :func:`peak_mb`)."""
    return dict(client.run(peak_mb))


def main() -> None:
    from distributed import Client

    scheduler, folder = sys.argv[1], sys.argv[2]
    s, lam_per_row = int(sys.argv[3]), float(sys.argv[4])
    first = sorted(Path(folder).glob("*.parquet"))[0]
    sigma = float(np.sqrt(2.0 * (len(pq.read_schema(first).names) - 1)))  # p features
    with Client(scheduler) as client:
        ours = kernel_lab_fit(client, folder, s, sigma, lam_per_row)
        kl_workers = workers_peak_mb(client)
        try:  # the peer's own peak on the workers
            client.restart(timeout=600)
        except TimeoutError:
            client.wait_for_workers(1, timeout=600)
        model, data = ours["model"], ours["data"]
        theirs = peer_fit(client, folder, data.plan, model.features_.landmark_indices_,
                          sigma, ours["lam"])
        peer_workers = workers_peak_mb(client)
    beta = model.features_.normalization_ @ model.coef_
    diff = float(np.max(np.abs(beta - theirs["beta"])) / np.max(np.abs(theirs["beta"])))
    c_diff = abs(model.intercept_ - theirs["intercept"]) / max(abs(theirs["intercept"]), 1e-300)
    print(json.dumps({
        "n_train": data.n_train, "peer_n_train": theirs["n_train"], "s": int(beta.size),
        "sigma": sigma, "lam": ours["lam"], "condition": theirs["condition"],
        "kernel_lab": ours["times"], "peer": theirs["times"],
        "coef_difference": diff, "intercept_difference": float(c_diff),
        "kernel_lab_workers_mb": kl_workers, "peer_workers_mb": peer_workers,
        "client_peak_mb": peak_mb()}))


if __name__ == "__main__":
    main()
