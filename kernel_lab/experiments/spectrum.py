"""Experiment ``spectrum``: the sample-covariance spectrum against its random-matrix limit,
and the centred kernel matrix against its linearisation."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from kernel_lab.core.errors import DataError
from kernel_lab.core.memory import check_allocation
from kernel_lab.core.params import ParamSpec
from kernel_lab.core.progress import Progress
from kernel_lab.core.rows.dataset import Dataset
from kernel_lab.core.theory.ckrr import covariance_spectrum_density
from kernel_lab.experiments.base import (
    FAMILIES,
    SERIAL,
    Experiment,
    PartialResult,
    PlotSpec,
    TaskExecutor,
    pad_columns,
    paper_kernels,
)
from kernel_lab.experiments.plotspec import Curve


class SpectrumExperiment(Experiment):
    name = "spectrum"
    title = "Spectra: sample covariance and the linearised kernel"
    description = (
        "Left to random-matrix theory, the eigenvalues of the sample covariance XᵀX/n do not "
        "settle on those of Σ when p grows with n: they spread out. For Σ = I they follow the "
        "Marchenko–Pastur law on [(1 − √c)², (1 + √c)²], c = p/n; for a general Σ the same "
        "function m(z) that drives the CKRR risk gives the limiting density. The first plot "
        "shows the histogram of the sample eigenvalues (steps) against that density (smooth). "
        "The second plot compares the eigenvalues of the centred kernel matrix K_c = PKP with "
        "those of its linearisation g'(0)·PXXᵀP/p + ν·P (ν = g(τ) − g(0) − τg'(0)): in high "
        "dimension an inner-product kernel behaves like a linear kernel plus a ridge ν, "
        "which is why all kernels reach the same minimum risk in the ckrr-risk experiment. "
        "At finite n and p the higher-order terms blur the plateau of the linearisation "
        "(the eigenvalue ν, repeated n − p times when p < n); the relative spectral error "
        "‖K_c − linearisation‖₂ / ‖K_c‖₂ is reported and shrinks as n and p grow."
    )
    params = (
        ParamSpec("kernel", "choice", "exponential", choices=FAMILIES,
                  help="inner-product kernel whose centred matrix is compared"),
        ParamSpec("alpha", "float", None, label="α", low=-1e6, high=1e6, allow_auto=True,
                  help="auto = the paper's value (1)"),
        ParamSpec("beta", "float", None, label="β", low=-1e6, high=1e6, allow_auto=True,
                  help="auto = the paper's value for the kernel"),
        ParamSpec("degree", "int", 2, label="degree d", low=1, high=20,
                  when={"kernel": ("polynomial",)}),
        ParamSpec("bins", "int", 40, label="histogram bins", low=5, high=500),
        ParamSpec("points", "int", 400, label="density points", low=50, high=20_000,
                  help="grid points of the limiting density"),
    )
    plots = (
        PlotSpec("Eigenvalues of the sample covariance XᵀX/n", "x",
                 (Curve("density_sample", "measured", "sample histogram"),
                  Curve("density_limit", "limit", "limit (from m(z))")),
                 xlabel="eigenvalue", ylabel="density"),
        PlotSpec("Centred kernel matrix against its linearisation", "rank",
                 (Curve("eig_kernel", "measured", "K_c = PKP"),
                  Curve("eig_linearised", "measured", "g'(0)PXXᵀP/p + νP")),
                 xlabel="rank (largest first)", ylabel="eigenvalue"),
    )
    default_data = "gaussian:n=800,p=400,cov=identity"

    def estimate(self, params: Mapping[str, Any], n: int, p: int) -> dict[str, Any]:
        return {"memory_bytes": 8 * (4 * n * n + 2 * p * p),
                "flops": 2 * (4.0 / 3.0) * n**3 + 4.0 * n * n * p + 2.0 * p**3,
                "note": f"eigenvalues of two {n}×{n} matrices and one {p}×{p}"}

    def run(self, params: Mapping[str, Any], data: Dataset, progress: Progress,
            executor: TaskExecutor = SERIAL) -> Iterator[PartialResult]:
        X = data.X_train
        n, p = X.shape
        check_allocation(8.0 * (4 * n * n + 2 * p * p), f"the spectra of {n}×{n} matrices",
                         "Use fewer points (a smaller n).")
        kernel = paper_kernels([params["kernel"]], params)[params["kernel"]]
        summaries: dict[str, Any] = {"n": n, "p": p, "c": p / n}

        progress(0.05, "eigenvalues of the sample covariance")
        ev = np.linalg.eigvalsh(X.T @ X / n)
        top = float(ev.max()) * 1.08
        x = np.linspace(top / params["points"], top, params["points"])
        counts, edges = np.histogram(ev, bins=params["bins"], range=(0.0, top), density=True)
        summaries.update(eig_min=float(ev.min()), eig_max=float(ev.max()))
        step = counts[np.clip(np.searchsorted(edges, x, side="right") - 1, 0, counts.size - 1)]
        columns = {"x": x, "density_sample": step}
        source = data.source
        if source is not None and source.law.cov_eigvals is not None:
            progress(0.15, "limiting density from m(z)")
            dens = covariance_spectrum_density(x, source.law.cov_eigvals, n)
            columns["density_limit"] = dens
            summaries["density_integral"] = float(np.trapezoid(dens, x))
            per_bin = [dens[(x >= a) & (x < b)].mean() if ((x >= a) & (x < b)).any()
                       else np.nan for a, b in itertools.pairwise(edges)]
            summaries["max_bin_deviation"] = float(np.nanmax(np.abs(counts - per_bin)))
            cov = source.law.cov_eigvals
            if np.allclose(cov, cov[0]):  # Σ = s I: the Marchenko–Pastur support edges
                c = p / n
                summaries["mp_edge_low"] = float(cov[0] * max(0.0, 1 - np.sqrt(c)) ** 2)
                summaries["mp_edge_high"] = float(cov[0] * (1 + np.sqrt(c)) ** 2)
        else:
            summaries["note"] = "no limiting density: Σ is unknown for these data"
        yield PartialResult(0.3, "covariance spectrum", pad_columns(columns), dict(summaries))

        progress(0.35, f"eigenvalues of the {n}×{n} centred kernel matrix")
        with np.errstate(over="ignore"):  # reported just below, with what to do
            K = kernel(X)
        if not np.isfinite(K).all():
            raise DataError(f"the {kernel.spec()} kernel overflows on these data",
                            "standardise the features")
        mean = K.mean(axis=0)
        K -= mean[None, :]
        K -= mean[:, None]
        K += mean.mean()
        tau = float(np.einsum("ij,ij->", X, X) / (n * p))
        nu = float(kernel.g(tau)) - kernel.g0 - tau * kernel.dg0
        Xc = X - X.mean(axis=0)
        L = kernel.dg0 * (Xc @ Xc.T) / p
        L -= nu / n
        L[np.diag_indices(n)] += nu  # + ν P
        e_k = np.linalg.eigvalsh(K)[::-1]
        progress(0.7, "eigenvalues of the linearisation")
        e_l = np.linalg.eigvalsh(L)[::-1]
        summaries.update(nu=nu, tau=tau, dg0=kernel.dg0, kernel=kernel.spec(),
                         spectral_error=float(np.abs(np.linalg.eigvalsh(K - L)).max()),
                         spectral_norm=float(np.abs(e_k).max()))
        summaries["relative_spectral_error"] = (summaries["spectral_error"]
                                                / summaries["spectral_norm"])
        columns.update(rank=np.arange(1, n + 1, dtype=float), eig_kernel=e_k, eig_linearised=e_l)
        yield PartialResult(1.0, "kernel spectrum", pad_columns(columns), dict(summaries))
