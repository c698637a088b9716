"""Values on the Playground's evaluation grid at the cost of its rows and columns.

Every picture of a fit is a linear map applied to coefficients: ``K(G, Z) c`` for exact
ridge (Z the training points, c = α) and for Nyström ridge (Z the landmarks, c the
normalised weights), ``cos(G W + b) c`` for random Fourier features. On the 2-D grid
(``r × r`` points, ``x₁`` fastest) formed naively that costs ``r² m`` kernel evaluations
— 10⁷ exponentials for a 100 × 100 grid and 1000 points, most of a σ move's time.

The grid is a tensor product and the Playground's kernels factor over the coordinates —
Gaussian ``exp(−Σ_j d_j²/2σ²) = Π_j exp(−d_j²/2σ²)``, Laplace ``exp(−Σ_j |d_j|/σ)``,
Cauchy ``Π_j 1/(1 + d_j²/σ²)`` — so ``K(G, Z) c`` with ``A[a, i] = k₁(t_a − z_i1)`` and
``B[b, i] = k₁(t_b − z_i2)`` is the ``r × r`` matrix ``(B diag c) Aᵀ``: ``2 r m``
evaluations and one ``r × m × r`` product. Cosines split the same way,
``cos(u_a + v_b) = cos u_a cos v_b − sin u_a sin v_b``. The values are those of the
direct formulas up to rounding (the tests compare them with the estimators' predictions).
On the 1-D grid (``4 r`` points) the direct formulas are used.

A kernel map is kept in column blocks (:class:`GridKernel`): points appended to the
training points (a painted one) add their own columns, and the kept ones are neither
evaluated nor copied again.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernel_lab.core.kernels import make_kernel
from kernel_lab.core.playground.datasets import grid, ticks

Array = np.ndarray


def _gaussian(d: Array, sigma: float) -> Array:
    d = d / sigma
    np.square(d, out=d)
    d *= -0.5
    return np.exp(d, out=d)


def _laplace(d: Array, sigma: float) -> Array:
    d = np.abs(d) / -sigma
    return np.exp(d, out=d)


def _cauchy(d: Array, sigma: float) -> Array:
    d = d / sigma
    np.square(d, out=d)
    d += 1.0
    return np.reciprocal(d, out=d)


#: One coordinate's factor of each kernel the Playground offers (the kernel is the product
#: of its factors over the coordinates).
FACTORS: dict[str, Callable[[Array, float], Array]] = {
    "gaussian": _gaussian, "laplace": _laplace, "cauchy": _cauchy}


class GridMap:
    """The evaluation grid of a ``dim``-dimensional Playground at ``resolution``
    (:func:`~kernel_lab.core.playground.datasets.grid`) and the maps onto it."""

    def __init__(self, dim: int, resolution: int) -> None:
        self.dim = dim
        self.resolution = resolution
        self.points = grid(dim, resolution)
        self._t = ticks(resolution)

    def kernel(self, name: str, sigma: float, Z: Array) -> GridKernel:
        """``c ↦ K(G, Z) c`` for the Playground kernel ``name`` with bandwidth σ."""
        return GridKernel(self, name, sigma, [self.columns(name, sigma, Z)])

    def columns(self, name: str, sigma: float, Z: Array) -> tuple[Array, ...]:
        """What :class:`GridKernel` keeps of the points Z: ``K(G, Z)`` on the 1-D grid,
        each coordinate's factor (``r × m`` twice) on the 2-D one."""
        if self.dim == 1:
            return (make_kernel(name, {"sigma": sigma})(self.points, Z),)
        factor = FACTORS[name]
        return (factor(self._t[:, None] - Z[None, :, 0], sigma),
                factor(self._t[:, None] - Z[None, :, 1], sigma))

    def cosines(self, W: Array, b: Array, scale: float = 1.0) -> Callable[[Array], Array]:
        """``c ↦ scale · cos(G W + b) c`` (W of shape (dim, D), b of shape (D,))."""
        if self.dim == 1:
            F = self.points @ W
            F += b
            np.cos(F, out=F)
            F *= scale
            return lambda c: F @ c
        u = self._t[:, None] * W[0][None, :] + b[None, :]   # x₁ and the phase
        v = self._t[:, None] * W[1][None, :]                 # x₂
        cu, su, cv, sv = np.cos(u), np.sin(u), np.cos(v), np.sin(v)

        def apply(c: Array) -> Array:
            c = scale * np.asarray(c, dtype=np.float64)
            return _combine(cu, cv, c) - _combine(su, sv, c)

        return apply


def _combine(cols: Array, rows: Array, c: Array) -> Array:
    """Σ_i c_i cols[a, i] rows[b, i] at grid point (a, b) (x₁ = a fastest), for each
    column of ``c`` (shape (m,) or (m, L))."""
    if c.ndim == 1:
        return ((rows * c) @ cols.T).ravel()
    return np.stack([((rows * c[:, j]) @ cols.T).ravel() for j in range(c.shape[1])],
                    axis=1)


#: :meth:`GridKernel.appended` merges points into the last block while it has at most
#: this many columns, and starts a new block after: the points kept before a painted
#: stroke are never copied, and the blocks stay few.
TAIL_COLUMNS = 256


class GridKernel:
    """``c ↦ K(G, Z) c`` on a :class:`GridMap`'s grid for points Z, kept in column blocks
    (:meth:`GridMap.kernel`): :meth:`appended` adds points (a painted one) at the cost of
    their columns, ``2 r k`` kernel values on the 2-D grid, without evaluating or copying
    the kept ones."""

    def __init__(self, grid: GridMap, name: str, sigma: float,
                 blocks: list[tuple[Array, ...]]) -> None:
        self.grid, self.name, self.sigma, self._blocks = grid, name, sigma, blocks

    @property
    def key(self) -> tuple[int, int]:
        """The grid's dimension and resolution (the grid this map is for)."""
        return self.grid.dim, self.grid.resolution

    @property
    def width(self) -> int:
        """The number of points Z (columns)."""
        return sum(block[0].shape[1] for block in self._blocks)

    def __call__(self, c: Array) -> Array:
        c = np.asarray(c, dtype=np.float64)
        out, lo = None, 0
        for block in self._blocks:
            hi = lo + block[0].shape[1]
            part = block[0] @ c[lo:hi] if len(block) == 1 else \
                _combine(block[0], block[1], c[lo:hi])
            out = part if out is None else out + part
            lo = hi
        return out

    def appended(self, Z: Array) -> GridKernel:
        """The map of ``Z`` appended to this one's points (this one is unchanged)."""
        new = self.grid.columns(self.name, self.sigma, Z)
        last = self._blocks[-1]
        if len(self._blocks) > 1 and last[0].shape[1] <= TAIL_COLUMNS:
            merged = tuple(np.hstack([a, b]) for a, b in zip(last, new, strict=True))
            return GridKernel(self.grid, self.name, self.sigma, [*self._blocks[:-1], merged])
        return GridKernel(self.grid, self.name, self.sigma, [*self._blocks, new])
