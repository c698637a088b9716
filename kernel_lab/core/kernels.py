"""Kernel functions evaluated blockwise with bounded memory.

Two families are provided.

*Shift-invariant* kernels ``k(x, x') = κ(x − x')`` with a bandwidth ``sigma``
(σ > 0). Their conventions are chosen so that the random-feature spectral
densities of Rahimi & Recht hold exactly (``docs/papers.md``): for
``ω ~ p(ω)`` and ``b ~ U[0, 2π)``, ``E[2 cos(ωᵀx + b) cos(ωᵀx' + b)] = k(x, x')``.

=========== ==================================================== ==============================
name        k(x, x')                                             p(ω) (``sample_frequencies``)
=========== ==================================================== ==============================
gaussian    exp(−‖x − x'‖² / (2σ²))                              N(0, σ⁻² I)
laplace     exp(−‖x − x'‖₁ / σ)                                  product of Cauchy(0, 1/σ)
cauchy      Π_j 1 / (1 + (x_j − x'_j)² / σ²)                     product of Laplace(0, 1/σ)
matern32    (1 + √3 r/σ) exp(−√3 r/σ),  r = ‖x − x'‖             multivariate t, 3 d.o.f., scale 1/σ
matern52    (1 + √5 r/σ + 5r²/(3σ²)) exp(−√5 r/σ)                multivariate t, 5 d.o.f., scale 1/σ
=========== ==================================================== ==============================

The Cauchy kernel is normalised so that ``k(x, x) = 1`` (Rahimi & Recht's
table writes ``Π 2/(1 + Δ²)`` for the unnormalised density); with this
normalisation its spectral measure is a probability distribution.

*Inner-product* kernels ``k(x, x') = g(xᵀx' / p)`` with p the input dimension,
as in Elkhalil et al. (``docs/papers.md``):

=========== ===================== =======================
name        g(t)                  paper's setting
=========== ===================== =======================
linear      α t + β               α = 1, β = 1
polynomial  (α t + β)^d           α = 1, β = 1, d = 2
sigmoid     tanh(α t + β)         α = 1, β = −1
exponential exp(α t + β)          α = 1, β = 0
=========== ===================== =======================

They expose ``g``, ``dg`` (g'), ``d2g`` (g'') and the values at zero
``g0``, ``dg0``, ``d2g0`` needed by the random-matrix theory.

References
----------
A. Rahimi and B. Recht, "Random features for large-scale kernel machines", NIPS 2007.
K. Elkhalil et al., "Risk convergence of centered kernel ridge regression with large
dimensional data", IEEE Trans. Signal Processing, 2020.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from kernel_lab.core.errors import ParameterError
from kernel_lab.core.memory import DEFAULT_BLOCK_BYTES, check_allocation
from kernel_lab.core.rows import keys as rowkeys

#: The Gaussian kernel's elementwise passes over a block (distances to exponents, the
#: exponential) run over row chunks of at most this many bytes (1 MiB), which stay in a
#: core's cache, instead of streaming the whole block through memory once per pass. The
#: product ``X Yᵀ`` stays one BLAS call per block: thousands of small multi-threaded calls
#: each wait for both BLAS threads, which on a busy machine made them several times slower.
CACHE_BLOCK_BYTES = 2**20


def _cache_rows(columns: int) -> int:
    """Rows of float64 with ``columns`` columns in one chunk of :data:`CACHE_BLOCK_BYTES`."""
    return max(1, CACHE_BLOCK_BYTES // (8 * max(columns, 1)))


def _as_2d(X: Any, name: str) -> np.ndarray:
    A = np.asarray(X, dtype=np.float64)
    if A.ndim == 1:
        A = A.reshape(-1, 1)
    if A.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features), got {A.ndim}-D")
    return A


def _number(value: Any, name: str, *, positive: bool = False) -> float:
    """A kernel parameter as a float (strings such as ``"1.5"`` accepted, as written in a
    kernel specification); it must be finite, and positive if ``positive``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"kernel parameter {name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or (positive and v <= 0):
        what = "a positive number" if positive else "finite"
        raise ParameterError(f"kernel parameter {name} must be {what}, got {value!r}")
    return v


def squared_distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``‖x_i − y_j‖²``, shape (n, m), clipped at zero."""
    D = X @ Y.T          # the only (n, m) allocation; the rest is in place
    D *= -2.0
    D += np.einsum("ij,ij->i", X, X)[:, None]
    D += np.einsum("ij,ij->i", Y, Y)[None, :]
    np.maximum(D, 0.0, out=D)
    return D


class Kernel:
    """Base class: a positive (semi-)definite kernel evaluated blockwise.

    Subclasses implement :meth:`_block` (one block of rows) and
    :meth:`diag`; :meth:`__call__` assembles the full matrix block by block so
    that temporaries never exceed ``block_bytes``, and refuses an output that
    would exceed the memory budget.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    #: Bytes of temporary storage per output entry in :meth:`_block`.
    _work_per_entry: ClassVar[int] = 2

    def __call__(
        self,
        X: Any,
        Y: Any | None = None,
        *,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
        budget: int | None = None,
    ) -> np.ndarray:
        """Kernel matrix ``K[i, j] = k(X[i], Y[j])``.

        Parameters
        ----------
        X : array_like, shape (n, p)
        Y : array_like, shape (m, p), optional
            Defaults to ``X``.
        block_bytes : int
            Upper bound on the temporary memory of one block of rows.
        budget : int, optional
            Memory budget in bytes for the (n, m) output; defaults to
            :func:`kernel_lab.core.memory.memory_budget_bytes`.

        Returns
        -------
        K : ndarray, shape (n, m)
        """
        X = _as_2d(X, "X")
        Y = X if Y is None else _as_2d(Y, "Y")
        if X.shape[1] != Y.shape[1]:
            raise ValueError(
                f"X has {X.shape[1]} features but Y has {Y.shape[1]}; both need the same number"
            )
        n, m = X.shape[0], Y.shape[0]
        check_allocation(
            8.0 * n * m,
            f"the {n}×{m} kernel matrix",
            "Use fewer points (subsample) or an approximate method (Nyström, random features).",
            budget,
        )
        out = np.empty((n, m))
        per_row = 8 * max(m, 1) * self._work_per_entry * self._row_factor(X.shape[1])
        rows = max(1, int(block_bytes // max(per_row, 1)))
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            self._block_into(X[start:stop], Y, out[start:stop])
        return out

    def block(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray | None = None, *,
              coarse: bool = False) -> np.ndarray:
        """``k(X, Y)`` as one block, written into ``out`` (C-contiguous, shape (n, m)) if
        given: no blocking and no memory check, for callers that stream the rows of X in
        blocks they bound (reusing one buffer spares a fresh allocation's page faults per
        block). X and Y are 2-D float64 arrays with the same number of columns.

        ``coarse``: for kernels with a :attr:`coarse_error`, the entries may be off by up
        to that much (absolute), for speed; the others ignore it. Coarse entries may be
        written into a float32 ``out`` (they are float32 values); a float32 ``out`` is
        refused otherwise."""
        if out is not None and out.dtype != np.float64 and not (
                coarse and self.coarse_error is not None and out.dtype == np.float32):
            raise ValueError(f"a {out.dtype} block holds coarse entries of a kernel that has "
                             f"them (the {self.name} kernel with coarse=True), else float64")
        if coarse and self.coarse_error is not None:
            if out is None:
                out = np.empty((X.shape[0], Y.shape[0]))
            self._coarse_into(X, Y, out)
            return out
        if out is None:
            return self._block(X, Y)
        self._block_into(X, Y, out)
        return out

    #: The absolute error of an entry of :meth:`block` with ``coarse=True``; None when the
    #: kernel has no coarse evaluation (``coarse`` then changes nothing).
    coarse_error: ClassVar[float | None] = None

    def _coarse_into(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError

    def _row_factor(self, p: int) -> int:
        return 1

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _block_into(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        """:meth:`_block` written into ``out``; kernels that can compute in place override it."""
        out[...] = self._block(X, Y)

    def diag(self, X: Any) -> np.ndarray:
        """The diagonal ``k(x_i, x_i)``, shape (n,), without forming the matrix."""
        raise NotImplementedError

    # -- description -------------------------------------------------------------
    def params(self) -> dict[str, float]:
        """The kernel's parameters as a plain dict."""
        raise NotImplementedError

    def spec(self) -> str:
        """A string that :func:`parse_kernel` turns back into an equal kernel."""
        args = ",".join(f"{k}={v:g}" for k, v in self.params().items())
        return f"{self.name}:{args}" if args else self.name

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Kernel)
            and self.name == other.name
            and self.params() == other.params()
        )

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.params().items()))))


# --------------------------------------------------------------------------------------
# Shift-invariant kernels
# --------------------------------------------------------------------------------------
class ShiftInvariantKernel(Kernel):
    """``k(x, x') = κ(x − x')`` with bandwidth ``sigma``; ``k(x, x) = 1``."""

    family = "shift-invariant"

    def __init__(self, sigma: float = 1.0) -> None:
        self.sigma = _number(sigma, "sigma", positive=True)

    def params(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def diag(self, X: Any) -> np.ndarray:
        return np.ones(_as_2d(X, "X").shape[0])

    def sample_frequencies(self, p: int, r: int, rng: np.random.Generator) -> np.ndarray:
        """Draw r frequencies ω from the kernel's spectral density.

        Returns
        -------
        W : ndarray, shape (p, r)
            Columns are i.i.d. draws of ω ∈ R^p such that
            ``E[cos(ωᵀ(x − x'))] = k(x, x')``.
        """
        raise NotImplementedError(f"the {self.name} kernel has no spectral sampler")


class GaussianKernel(ShiftInvariantKernel):
    """Gaussian RBF ``exp(−‖x − x'‖² / (2σ²))``; scikit-learn's ``rbf_kernel`` with
    ``gamma = 1/(2σ²)``. Spectral density ``N(0, σ⁻² I)``."""

    name = "gaussian"
    _work_per_entry = 1

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        out = np.empty((X.shape[0], Y.shape[0]))
        self._block_into(X, Y, out)
        return out

    def _block_into(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray,
                    coarse: bool = False) -> None:
        if out.dtype == np.float32:
            # coarse entries kept in float32 (Kernel.block allows it only with coarse): the
            # float64 exponents of a chunk of rows in a scratch array in cache, then cast
            # and exponentiated in the output
            rows = _cache_rows(Y.shape[0])
            scratch = np.empty((min(rows, X.shape[0]), Y.shape[0]))
            for start in range(0, X.shape[0], rows):
                part = scratch[:min(rows, X.shape[0] - start)]
                self._exponents_into(X[start:start + rows], Y, part, None)
                chunk = out[start:start + rows]
                np.copyto(chunk, part, casting="same_kind")
                np.exp(chunk, out=chunk)
            return
        if not coarse:
            self._exponents_into(X, Y, out, lambda chunk: np.exp(chunk, out=chunk))
            return
        rows = _cache_rows(Y.shape[0])
        single = np.empty((min(rows, X.shape[0]), Y.shape[0]), dtype=np.float32)

        def in_single(chunk: np.ndarray) -> None:
            part = single[:chunk.shape[0]]
            np.copyto(part, chunk, casting="same_kind")
            np.exp(part, out=part)
            np.copyto(chunk, part)

        self._exponents_into(X, Y, out, in_single)

    def _exponents_into(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray,
                        finish: Callable[[np.ndarray], Any] | None) -> None:
        """The exponents ``−‖x − y‖²/(2σ²)`` (clipped at 0) into ``out``, each chunk of rows
        of at most :data:`CACHE_BLOCK_BYTES` handed to ``finish`` while it is in cache."""
        # −‖x − y‖²/(2σ²) = 2c xᵀy − c‖x‖² − c‖y‖² with c = 1/(2σ²) is one product of
        # rows extended by two columns, [x, −c‖x‖², 1]·[2c y, 1, −c‖y‖²], written into
        # the output; then two passes over row chunks in cache (clip at 0, exp). The
        # product, then scaling and subtracting the norms in three more passes, cost a
        # third more (6553 × 160 entries, p = 20: 2.5 against 1.8 ms); the entries agree
        # to 2.3e-16 relative. The extended copies of X and Y are made only while each
        # is at most half the block, where they also pay (measured from about 2(p + 2)
        # columns on): for many features, few rows or few columns (k(X_test, X_train)
        # with wide inputs) the norms are subtracted after the product.
        c = 0.5 / self.sigma**2
        (n, p), m = X.shape, Y.shape[0]
        extended = 2 * (p + 2) <= min(n, m)
        if extended:
            A = np.empty((n, p + 2))
            A[:, :p] = X
            np.einsum("ij,ij->i", X, X, out=A[:, p])
            A[:, p] *= -c
            A[:, p + 1] = 1.0
            B = np.empty((m, p + 2))
            np.multiply(Y, 2.0 * c, out=B[:, :p])
            B[:, p] = 1.0
            np.einsum("ij,ij->i", Y, Y, out=B[:, p + 1])
            B[:, p + 1] *= -c
            np.dot(A, B.T, out=out)
        else:
            np.dot(X, Y.T, out=out)
            x_term = c * np.einsum("ij,ij->i", X, X)
            y_term = c * np.einsum("ij,ij->i", Y, Y)
        rows = _cache_rows(m)
        for start in range(0, n, rows):
            chunk = out[start:start + rows]
            if not extended:
                chunk *= 2.0 * c
                chunk -= x_term[start:start + rows, None]
                chunk -= y_term
            np.minimum(chunk, 0.0, out=chunk)
            if finish is not None:
                finish(chunk)

    #: ``coarse`` entries: the exponents in float64 as always, their exponentials in float32
    #: (numpy's float32 ``exp`` is vectorised on AVX2, its float64 one is not: 3.8 times
    #: the throughput here, and a block costs about half). Each entry is then off by the
    #: rounding of its exponent t to float32 (at most ``e^t |t| 2^-24 ≤ 2^-24 / e``) plus
    #: the float32 exponential's own error (measured at most 3.41 · 2^-24 relative on
    #: 8 million exponents in [−104, 0]; total at most 1.44e-7): 2.5e-7 bounds both with
    #: room, and a test checks it on a dense grid of exponents.
    coarse_error: ClassVar[float | None] = 2.5e-7

    def _coarse_into(self, X: np.ndarray, Y: np.ndarray, out: np.ndarray) -> None:
        self._block_into(X, Y, out, coarse=True)

    def sample_frequencies(self, p: int, r: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal((p, r)) / self.sigma


class LaplaceKernel(ShiftInvariantKernel):
    """Laplace (ℓ1) kernel ``exp(−‖x − x'‖₁ / σ)``; scikit-learn's
    ``laplacian_kernel`` with ``gamma = 1/σ``. Spectral density: a product of
    Cauchy(0, 1/σ) laws, one per coordinate."""

    name = "laplace"

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        # imported here: scipy.spatial takes a few tenths of a second to import, which
        # every process importing the kernels (a Dask worker's tasks) would pay
        from scipy.spatial.distance import cdist

        D = cdist(X, Y, metric="cityblock")
        D *= -1.0 / self.sigma
        return np.exp(D, out=D)

    def sample_frequencies(self, p: int, r: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_cauchy((p, r)) / self.sigma


class CauchyKernel(ShiftInvariantKernel):
    """Cauchy kernel ``Π_j 1 / (1 + (x_j − x'_j)² / σ²)`` (normalised, k(x, x) = 1).
    Spectral density: a product of Laplace(0, 1/σ) laws, one per coordinate."""

    name = "cauchy"

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        out = np.ones((X.shape[0], Y.shape[0]))
        tmp = np.empty_like(out)
        inv = 1.0 / self.sigma**2
        for j in range(X.shape[1]):  # loop over features, vectorised over the block
            np.subtract(X[:, j, None], Y[None, :, j], out=tmp)
            np.square(tmp, out=tmp)
            tmp *= inv
            tmp += 1.0
            out /= tmp
        return out

    def sample_frequencies(self, p: int, r: int, rng: np.random.Generator) -> np.ndarray:
        return rng.laplace(0.0, 1.0 / self.sigma, size=(p, r))


class _MaternKernel(ShiftInvariantKernel):
    nu: ClassVar[float]

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        R = np.sqrt(squared_distances(X, Y))
        R *= math.sqrt(2.0 * self.nu) / self.sigma
        return self._profile(R)

    def _profile(self, R: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def sample_frequencies(self, p: int, r: int, rng: np.random.Generator) -> np.ndarray:
        # Multivariate Student t with 2ν degrees of freedom and scale σ⁻¹ I.
        u = rng.chisquare(2.0 * self.nu, size=r)
        return rng.standard_normal((p, r)) * np.sqrt(2.0 * self.nu / u)[None, :] / self.sigma


class Matern32Kernel(_MaternKernel):
    """Matérn ν = 3/2: ``(1 + √3 r/σ) exp(−√3 r/σ)``, r = ‖x − x'‖ (σ is the length
    scale of scikit-learn's ``Matern(nu=1.5)``). Spectral density: multivariate
    t with 3 degrees of freedom and scale σ⁻¹."""

    name = "matern32"
    nu = 1.5

    def _profile(self, R: np.ndarray) -> np.ndarray:
        return (1.0 + R) * np.exp(-R)


class Matern52Kernel(_MaternKernel):
    """Matérn ν = 5/2: ``(1 + √5 r/σ + 5r²/(3σ²)) exp(−√5 r/σ)``. Spectral density:
    multivariate t with 5 degrees of freedom and scale σ⁻¹."""

    name = "matern52"
    nu = 2.5

    def _profile(self, R: np.ndarray) -> np.ndarray:
        return (1.0 + R + R * R / 3.0) * np.exp(-R)


# --------------------------------------------------------------------------------------
# Inner-product kernels g(xᵀx'/p)
# --------------------------------------------------------------------------------------
class InnerProductKernel(Kernel):
    """``k(x, x') = g(xᵀx' / p)`` with p the number of features.

    Parameters
    ----------
    alpha, beta : float
        Scale and shift of the argument (see the family table in the module docstring).
    """

    family = "inner-product"
    _work_per_entry = 1

    def __init__(self, alpha: float = 1.0, beta: float = 0.0) -> None:
        self.alpha = _number(alpha, "alpha")
        self.beta = _number(beta, "beta")

    def params(self) -> dict[str, float]:
        return {"alpha": self.alpha, "beta": self.beta}

    # g and its derivatives, vectorised over t -------------------------------------
    def g(self, t: Any) -> np.ndarray:
        raise NotImplementedError

    def dg(self, t: Any) -> np.ndarray:
        raise NotImplementedError

    def d2g(self, t: Any) -> np.ndarray:
        raise NotImplementedError

    @property
    def g0(self) -> float:
        """g(0)."""
        return float(self.g(0.0))

    @property
    def dg0(self) -> float:
        """g'(0)."""
        return float(self.dg(0.0))

    @property
    def d2g0(self) -> float:
        """g''(0)."""
        return float(self.d2g(0.0))

    def _block(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        T = X @ Y.T
        T /= X.shape[1]
        return self.g(T)

    def diag(self, X: Any) -> np.ndarray:
        X = _as_2d(X, "X")
        return self.g(np.einsum("ij,ij->i", X, X) / X.shape[1])


class LinearKernel(InnerProductKernel):
    """``g(t) = α t + β``."""

    name = "linear"

    def __init__(self, alpha: float = 1.0, beta: float = 1.0) -> None:
        super().__init__(alpha, beta)

    def g(self, t: Any) -> np.ndarray:
        return self.alpha * np.asarray(t, dtype=float) + self.beta

    def dg(self, t: Any) -> np.ndarray:
        return np.full(np.shape(t), self.alpha)

    def d2g(self, t: Any) -> np.ndarray:
        return np.zeros(np.shape(t))


class PolynomialKernel(InnerProductKernel):
    """``g(t) = (α t + β)^d`` with integer degree d ≥ 1."""

    name = "polynomial"

    def __init__(self, alpha: float = 1.0, beta: float = 1.0, degree: int = 2) -> None:
        super().__init__(alpha, beta)
        d = _number(degree, "degree", positive=True)
        if d != int(d):
            raise ParameterError(f"kernel parameter degree must be a whole number, got {degree!r}")
        self.degree = int(d)

    def params(self) -> dict[str, float]:
        return {"alpha": self.alpha, "beta": self.beta, "degree": self.degree}

    def g(self, t: Any) -> np.ndarray:
        return (self.alpha * np.asarray(t, dtype=float) + self.beta) ** self.degree

    def dg(self, t: Any) -> np.ndarray:
        u = self.alpha * np.asarray(t, dtype=float) + self.beta
        return self.degree * self.alpha * u ** (self.degree - 1)

    def d2g(self, t: Any) -> np.ndarray:
        u = self.alpha * np.asarray(t, dtype=float) + self.beta
        d = self.degree
        if d < 2:
            return np.zeros(np.shape(t))
        return d * (d - 1) * self.alpha**2 * u ** (d - 2)


class SigmoidKernel(InnerProductKernel):
    """``g(t) = tanh(α t + β)``. Not positive definite in general: estimators fall
    back from Cholesky to a symmetric indefinite solve."""

    name = "sigmoid"

    def __init__(self, alpha: float = 1.0, beta: float = -1.0) -> None:
        super().__init__(alpha, beta)

    def g(self, t: Any) -> np.ndarray:
        return np.tanh(self.alpha * np.asarray(t, dtype=float) + self.beta)

    def dg(self, t: Any) -> np.ndarray:
        th = self.g(t)
        return self.alpha * (1.0 - th * th)

    def d2g(self, t: Any) -> np.ndarray:
        th = self.g(t)
        return -2.0 * self.alpha**2 * th * (1.0 - th * th)


class ExponentialKernel(InnerProductKernel):
    """``g(t) = exp(α t + β)``."""

    name = "exponential"

    def g(self, t: Any) -> np.ndarray:
        return np.exp(self.alpha * np.asarray(t, dtype=float) + self.beta)

    def dg(self, t: Any) -> np.ndarray:
        return self.alpha * self.g(t)

    def d2g(self, t: Any) -> np.ndarray:
        return self.alpha**2 * self.g(t)


# --------------------------------------------------------------------------------------
# Registry and parsing
# --------------------------------------------------------------------------------------
KERNELS: dict[str, type[Kernel]] = {
    cls.name: cls
    for cls in (
        GaussianKernel,
        LaplaceKernel,
        CauchyKernel,
        Matern32Kernel,
        Matern52Kernel,
        LinearKernel,
        PolynomialKernel,
        SigmoidKernel,
        ExponentialKernel,
    )
}

#: Parameter names each kernel accepts, in display order.
KERNEL_PARAMS: dict[str, tuple[str, ...]] = {
    name: (("sigma",) if issubclass(cls, ShiftInvariantKernel) else
           ("alpha", "beta", "degree") if cls is PolynomialKernel else ("alpha", "beta"))
    for name, cls in KERNELS.items()
}


_ALIASES = {
    "rbf": "gaussian", "laplacian": "laplace", "poly": "polynomial",
    "matern1.5": "matern32", "matern2.5": "matern52", "exp": "exponential",
}


def canonical_kernel_name(name: str) -> str:
    """The registry name for ``name`` (case, dashes and common aliases tolerated)."""
    key = str(name).strip().lower().replace("-", "").replace("_", "")
    key = _ALIASES.get(key, key)
    if key not in KERNELS:
        raise ParameterError(f"unknown kernel {name!r}; choose one of: {', '.join(KERNELS)}")
    return key


def make_kernel(name: str | Kernel, params: Mapping[str, Any] | None = None) -> Kernel:
    """Build a kernel from its name and the parameters that apply to it.

    Parameters not used by the chosen kernel are ignored, so a form holding
    ``sigma``, ``alpha``, ``beta`` and ``degree`` can pass them all.
    """
    if isinstance(name, Kernel):
        return name
    key = canonical_kernel_name(name)
    params = dict(params or {})
    used = {k: params[k] for k in KERNEL_PARAMS[key] if params.get(k) is not None}
    return KERNELS[key](**used)


def parse_kernel(spec: str) -> Kernel:
    """Parse ``"name"`` or ``"name:key=value,key=value"``, e.g. ``"polynomial:degree=3"``.

    Unlike :func:`make_kernel`, a parameter the kernel does not take is an error.
    """
    name, _, rest = spec.partition(":")
    key = canonical_kernel_name(name)
    params: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        pname, eq, value = item.partition("=")
        pname = pname.strip()
        if not eq:
            raise ParameterError(f"kernel parameter {item!r} must be written as name=value")
        if pname not in KERNEL_PARAMS[key]:
            raise ParameterError(
                f"the {key} kernel has no parameter {pname!r}; it takes: "
                f"{', '.join(KERNEL_PARAMS[key])}"
            )
        params[pname] = value.strip()
    return make_kernel(key, params)


def median_heuristic(X: Any, max_points: int = 1000, *, seed: int = 0,
                     rows: np.ndarray | None = None) -> float:
    """Median pairwise Euclidean distance of (a random subset of at most ``max_points`` of) X.

    A common default for the bandwidth σ of shift-invariant kernels. The subset is keyed
    per row (:mod:`kernel_lab.core.rows.keys`, stream ``BANDWIDTH``): the ``max_points``
    rows with the smallest keys for ``seed`` and each row's global index ``rows`` (default:
    its position in X), taken in their order in X — so the same rows give the same σ
    wherever they are held, as a subset of partitioned data drawn by the same rule does.
    """
    X = _as_2d(X, "X")
    if X.shape[0] > max_points:
        index = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
        pick = rowkeys.smallest(rowkeys.keys(seed, rowkeys.BANDWIDTH, index), index,
                                max_points)
        X = X[np.sort(pick)]
    D = np.sqrt(squared_distances(X, X))
    vals = D[np.triu_indices(X.shape[0], k=1)]
    vals = vals[vals > 0]
    return float(np.median(vals)) if vals.size else 1.0


def resolve_bandwidth(sigma: float | None, X: Any) -> float:
    """The bandwidth σ to use: ``sigma`` itself, or, when it is None (automatic), the
    median heuristic on the training inputs X (:func:`median_heuristic`)."""
    return median_heuristic(X) if sigma is None else sigma
