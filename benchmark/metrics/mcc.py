"""Mean correlation coefficient (MCC), the identifiability score of the nonlinear-ICA
literature used by Cliff (paper 004, sec. 3.1 and appendix F.2).

|corr(z_i, s_j)| between every code dim and every source (Pearson, or Spearman = Pearson
of ranks, invariant to monotone transforms), dims matched one-to-one to sources by the
Hungarian algorithm maximising the summed |corr|; MCC = mean over the min(d, k) matched
pairs, in [0, 1]. A constant dim or source correlates 0 with everything.
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib


def unit_columns(x: np.ndarray) -> np.ndarray:
    """Columns of x (n, m) centred and scaled to unit norm; constant columns all 0.

    Each column is first divided by its largest |value|, so the sums of squares neither
    underflow (codes x 1e-300) nor overflow (x 1e300): the correlation is the same at any
    scale, as it should be.
    """
    x = np.asarray(x, dtype=np.float64)
    scale = np.max(np.abs(x), axis=0)
    x = x / np.where(scale > 0, scale, 1.0)
    x = x - x.mean(axis=0)
    norm = np.linalg.norm(x, axis=0)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def correlation_matrix(codes: np.ndarray, sources: np.ndarray, method: str = "spearman"
                       ) -> np.ndarray:
    """|corr| (d, k) between code dims and sources; 0 where either side is constant.

    Invariant to the scale and offset of every column (and, for Spearman, to any
    monotone transform)."""
    from scipy import stats

    if method not in ("pearson", "spearman"):
        raise ValueError(f"mcc method must be 'pearson' or 'spearman', found {method!r}")
    if method == "spearman":
        codes = stats.rankdata(codes, axis=0)
        sources = stats.rankdata(sources, axis=0)
    corr = unit_columns(codes).T @ unit_columns(sources)
    return np.abs(np.clip(corr, -1.0, 1.0))


def mcc_from_codes(sources, codes, method: str = "spearman") -> dict:
    """{'mcc_<method>': float, 'mcc_<method>_matching': [[dim, source], ...]}.

    sources: (n, k) ground-truth factors or continuous sources; codes: (n, d)."""
    from scipy.optimize import linear_sum_assignment

    codes = codes_lib.check_code_array(codes, 3, "mcc")
    sources = codes_lib.check_code_array(sources, 3, "mcc (sources)")
    if len(sources) != len(codes):
        raise codes_lib.MetricInputError(f"mcc: expected as many source rows as code rows, "
                                         f"found {len(sources)} and {len(codes)}")
    corr = correlation_matrix(codes, sources, method)
    rows, cols = linear_sum_assignment(corr, maximize=True)
    return {f"mcc_{method}": float(corr[rows, cols].mean()),
            f"mcc_{method}_matching": [[int(r), int(c)] for r, c in zip(rows, cols)]}


def mcc(data, representation_fn, rng, num_points: int = 10000, batch_size: int = 64
        ) -> dict:
    """Pearson and Spearman MCC between codes and the factor classes of uniform samples."""
    factors, codes = codes_lib.sample_codes(data, representation_fn, num_points, rng,
                                            batch_size)
    return {**mcc_from_codes(factors, codes, "pearson"),
            **mcc_from_codes(factors, codes, "spearman")}
