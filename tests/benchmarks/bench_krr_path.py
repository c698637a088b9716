"""Benchmark: the CKRR λ path against one eigendecomposition and a scikit-learn loop.

Run: ``python tests/benchmarks/bench_krr_path.py [--n 2000] [--lams 100]``.

All three are measured in the same run on the same data (n = 2000, p = 50,
Gaussian kernel) and reported as ratios:

- path / eigh: ``CenteredKernelRidge.fit`` + ``path`` over 100 λ (kernel matrix,
  centring, one eigendecomposition, train and test predictions) against a single
  ``scipy.linalg.eigh`` of the same centred kernel matrix (target ≤ 1.5×);
- sklearn loop / path: a loop of scikit-learn ``KernelRidge`` fits, one per λ, on the
  centred kernel matrix (``kernel="precomputed"``) and centred targets, with the same
  train and test predictions (target ≥ 10×).
"""

from __future__ import annotations

import argparse

import numpy as np
import perfdoc  # this folder, first on the path of a script
import scipy.linalg as sla
from sklearn.kernel_ridge import KernelRidge as SkKernelRidge
from timing import best_of

from kernel_lab.core.kernels import GaussianKernel
from kernel_lab.core.models import CenteredKernelRidge


def main() -> None:
    rec = perfdoc.start(__file__, __doc__)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--lams", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.p))
    y = np.sin(X.sum(1) / np.sqrt(args.p)) + 0.5 * rng.standard_normal(args.n)
    Xt = rng.standard_normal((500, args.p))
    lams = np.logspace(-4, 2, args.lams)
    kernel = GaussianKernel(np.sqrt(args.p))

    def ours():
        return CenteredKernelRidge(1.0, kernel=kernel).fit(X, y).path(lams, Xt)

    K = kernel(X)
    m = K.mean(0)
    Kc = K - m[None, :] - m[:, None] + m.mean()
    Ks = kernel(Xt, X)
    Ksc = Ks - Ks.mean(1, keepdims=True) - m[None, :] + m.mean()

    def one_eigh():
        return sla.eigh(Kc, driver="evd")

    def one_numpy_eigh():
        return np.linalg.eigh(Kc)

    def sklearn_loop():
        yc = y - y.mean()
        train, test = [], []
        for lam in lams:
            model = SkKernelRidge(alpha=lam, kernel="precomputed").fit(Kc, yc)
            train.append(model.predict(Kc) + y.mean())
            test.append(model.predict(Ksc) + y.mean())
        return np.array(train), np.array(test)

    t_ours, path = best_of(ours, args.repeat)
    t_eigh, _ = best_of(one_eigh, args.repeat)
    t_np, _ = best_of(one_numpy_eigh, args.repeat)
    t_sk, (sk_train, sk_test) = best_of(sklearn_loop, 1)
    agree = max(np.abs(path.test - sk_test).max(), np.abs(path.train - sk_train).max())

    print(f"n = {args.n}, p = {args.p}, {args.lams} λ values, 500 test points")
    print(f"CKRR path (fit + path):            {t_ours:8.3f} s")
    print(f"one scipy.linalg.eigh:              {t_eigh:8.3f} s")
    print(f"one numpy.linalg.eigh (path's own): {t_np:8.3f} s")
    print(f"scikit-learn KernelRidge loop:      {t_sk:8.3f} s")
    print(f"max |path − sklearn| prediction:    {agree:.2e}")
    print(f"ratio path / eigh:                  {t_ours / t_eigh:8.2f}x   (target ≤ 1.5)")
    print(f"ratio path / numpy eigh:            {t_ours / t_np:8.2f}x")
    print(f"ratio sklearn loop / path:          {t_sk / t_ours:8.2f}x   (target ≥ 10)")
    rec.figure(f"CKRR path (fit + path), n = {args.n}, {args.lams} λ", t_ours, "s")
    rec.figure("ratio path / one scipy.linalg.eigh", t_ours / t_eigh, "×", 1.5)
    rec.figure("ratio scikit-learn KernelRidge loop / path", t_sk / t_ours, "×", 10,
               at_most=False)
    rec.figure("max |path − scikit-learn| prediction", agree, "")
    rec.save()


if __name__ == "__main__":
    main()
