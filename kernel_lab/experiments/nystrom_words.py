"""The words of the Nyström experiment's plots that only a run knows (summaries its plot
texts read, see :func:`kernel_lab.experiments.plotspec.fill`): what the landmark axis
counts, the subset the spectral error is measured on, the picture's axes and whose
landmarks it marks."""

from __future__ import annotations


def spectral_summaries(algorithm2: bool, n: int, m: int) -> dict[str, str]:
    """The plots' words for the spectral error and the landmark axis: the error of ``m``
    of ``n`` rows is that of a principal submatrix — at most the full norm, a lower
    bound of it (estimating the full norm would take n × n kernel entries per Lanczos
    step, the cost the subset avoids) — and the landmark axis counts Algorithm 2's
    sampled landmarks only when it ran (``algorithm2``)."""
    out = {"landmarks_axis": "landmarks s" + (
        " (Algorithm 2: the number it sampled)" if algorithm2 else "")}
    if m < n:
        out["spectral_where"] = f"\non a {m:,}-row subset (a lower bound)"  # 2 lines
        out["spectral_axis"] = f"‖K − K̃‖₂ on a {m:,}-row subset (a lower bound)"
    return out


def picture_summaries(names: list[str], p: int, how: str) -> dict[str, str]:
    """The picture's axis labels: the input columns drawn (their ``names``), or the
    principal components, as :func:`view_coordinates` chooses."""
    names = names if len(names) == p and all(names) else [f"x{i + 1}" for i in range(p)]
    if p == 1:
        return {"picture_x": names[0], "picture_y": "0 (one input only)"}
    if how == "features" or p == 2:
        return {"picture_x": names[0], "picture_y": names[1]}
    return {"picture_x": "principal component 1", "picture_y": "principal component 2"}


def landmark_summaries(sampler: str, s: int) -> dict[str, str]:
    """The picture's legend of the landmarks and its colour scale: whose they are."""
    return {"landmarks_label": f"landmarks: {sampler}, s = {s:,}",
            "score_label": f"ridge leverage score ({sampler})"}
