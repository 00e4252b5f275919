"""The suite's statistics, in one place: the report (benchmark/studies/report.py) and the
audit's verdict (benchmark/studies/verdict.py) both use these, so a table and a verdict never
disagree on a number.

Every test compares independent groups of runs (one score per run; different seeds,
different datasets or models), a few to a few tens of values each, assumed roughly
normal within a group, with variances that may differ (hence Welch, never the pooled t).

- `welch`: Welch's t-test of mean(a) − mean(b) against a null difference, one- or
  two-sided, with the Welch–Satterthwaite degrees of freedom.
- `welch_ci`, `bootstrap_ci`, `drop_ci`: confidence intervals of a difference of means.
  **Rule:** the percentile bootstrap is used only where every side has at least
  `BOOTSTRAP_MIN_N` (20) runs; below that the Welch t interval is used. Simulated on
  normal data (tests/benchmark_core/test_stats.py), the nominal 95 % percentile bootstrap
  of a difference of means covers about 80 % at 3 runs a side, 87 % at 5, 92 % at 10 and
  94 % at 20 with equal spreads (76 / 85 / 91 / 93 % with spreads 1 : 3): it resamples
  with the plug-in variance (ddof 0) and uses normal, not t, quantiles. The Welch t
  interval covers about 95 % at every n. From 20 a side the bootstrap is within ~2 points
  of nominal and may be preferred for skewed scores; below, it is anti-conservative
  exactly where this suite's studies sit (3-10 seeds).
- `drop_test`: the one record the report and the audit keep per drop (original → variant).
- `tost`: equivalence within ±margin by two one-sided Welch tests.
- `drop_difference`: is the drop on modified data larger than on noisy data?
- `holm`, `bh`, `adjust`: multiple-comparison control of a family of p-values.
- `power`, `seeds_needed`: one-sided Welch power by the noncentral t; the command
  `python -m benchmark.power --drop=D --sd=S` prints the seeds needed.
- `overpruning_test`: Fisher's exact test of two over-pruning rates.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 0.05
CONFIDENCE = 0.95
#: the percentile bootstrap is used only when every side has at least this many values
BOOTSTRAP_MIN_N = 20
BOOTSTRAP_RESAMPLES = 10000
ALTERNATIVES = ("two-sided", "greater", "less")


def _values(x, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float).ravel()
    if len(x) < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name}: expected at least 2 finite values, found {x.tolist()}")
    return x


def welch(a, b, alternative: str = "two-sided", null: float = 0.0) -> dict:
    """Welch's t-test of H0: mean(a) − mean(b) = null (or ≤ / ≥ for one side).

    a, b: 1-D sequences of at least 2 finite values each (the two independent groups).
    alternative: 'two-sided'; 'greater' (H1: mean(a) − mean(b) > null); 'less' (H1: < null).
    Returns {'diff': mean(a) − mean(b), 'se': sqrt(s_a²/n_a + s_b²/n_b) (sample variances,
    ddof 1), 'df': Welch–Satterthwaite degrees of freedom (se⁴ / Σ (s²/n)² / (n − 1)),
    't': (diff − null) / se, 'p': p-value in [0, 1]} — the numbers of
    scipy.stats.ttest_ind(a − null, b, equal_var=False, alternative=...). When both groups
    are constant (se = 0) the test is decided by the sign of diff − null: p is 0 when it
    lies in the alternative's direction, else 1 (df is then n_a + n_b − 2).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: expected one of {ALTERNATIVES}, found {alternative!r}")
    a, b = _values(a, "welch: first group"), _values(b, "welch: second group")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    diff = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    shift = diff - null
    if se == 0.0:
        df = float(len(a) + len(b) - 2)
        towards = {"two-sided": shift != 0, "greater": shift > 0, "less": shift < 0}
        t = math.copysign(math.inf, shift) if shift else 0.0
        return {"diff": diff, "se": 0.0, "df": df, "t": t,
                "p": 0.0 if towards[alternative] else 1.0}
    df = float((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))
    t = shift / se
    if alternative == "greater":
        p = stats.t.sf(t, df)
    elif alternative == "less":
        p = stats.t.cdf(t, df)
    else:
        p = 2 * stats.t.sf(abs(t), df)
    return {"diff": diff, "se": se, "df": df, "t": float(t), "p": float(min(1.0, p))}


def welch_ci(a, b, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Two-sided Welch–Satterthwaite t interval of mean(a) − mean(b):
    diff ± t_{(1 + confidence) / 2, df} · se (see `welch`); [diff, diff] when se = 0."""
    test = welch(a, b)
    half = float(stats.t.ppf(0.5 + confidence / 2, test["df"])) * test["se"]
    return test["diff"] - half, test["diff"] + half


def bootstrap_ci(a, b, confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES,
                 rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of mean(a) − mean(b), each group resampled with
    replacement on its own. a: (..., n_a), b: (..., n_b), the same leading (batch) shape;
    returns (low, high) of that batch shape (floats for 1-D groups). Quantiles by linear
    interpolation (numpy's default), so it matches scipy.stats.bootstrap(method='percentile')
    up to resampling noise. See the module docstring for when it covers (n ≥ 20 a side).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    a, b = np.asarray(a, float), np.asarray(b, float)

    def means(x):
        index = rng.integers(0, x.shape[-1], size=x.shape[:-1] + (resamples, x.shape[-1]))
        return np.take_along_axis(x[..., None, :], index, axis=-1).mean(axis=-1)

    diffs = means(a) - means(b)
    tail = (1 - confidence) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail], axis=-1)
    return low, high


def paired(a, b, alternative: str = "two-sided", confidence: float = CONFIDENCE) -> dict:
    """Paired t-test of H0: mean(a − b) = 0 over matched pairs (a[i], b[i]: the same seed,
    batches and held-out sample, say). a, b: 1-D, the same length ≥ 2, finite.
    Returns {'diff': mean(a − b), 'sd': sd of a − b (ddof 1), 'n', 'df': n − 1, 't',
    'p' (alternative as in `welch`), 'ci_low', 'ci_high' (two-sided t interval at
    `confidence`)} — scipy.stats.ttest_rel's numbers. Constant differences decide by their
    sign, as in `welch`."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: expected one of {ALTERNATIVES}, found {alternative!r}")
    a, b = _values(a, "paired: first group"), _values(b, "paired: second group")
    if len(a) != len(b):
        raise ValueError(f"paired: expected groups of one length, found {len(a)} and {len(b)}")
    d = a - b
    n, diff, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    out = {"diff": diff, "sd": sd, "n": n, "df": float(n - 1)}
    if se == 0.0:
        towards = {"two-sided": diff != 0, "greater": diff > 0, "less": diff < 0}
        return {**out, "t": math.copysign(math.inf, diff) if diff else 0.0,
                "p": 0.0 if towards[alternative] else 1.0, "ci_low": diff, "ci_high": diff}
    t = diff / se
    p = {"greater": stats.t.sf(t, n - 1), "less": stats.t.cdf(t, n - 1),
         "two-sided": 2 * stats.t.sf(abs(t), n - 1)}[alternative]
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * se
    return {**out, "t": float(t), "p": float(min(1.0, p)), "ci_low": diff - half,
            "ci_high": diff + half}


def drop_ci(original, other, confidence: float = CONFIDENCE, seed: int = 0
            ) -> tuple[float, float, str]:
    """(low, high, method) of the drop mean(original) − mean(other): the percentile
    bootstrap ('bootstrap', `BOOTSTRAP_RESAMPLES` resamples from `seed`) when both sides
    have at least `BOOTSTRAP_MIN_N` values, else the Welch t interval ('welch-t')."""
    if min(len(original), len(other)) >= BOOTSTRAP_MIN_N:
        low, high = bootstrap_ci(original, other, confidence, rng=np.random.default_rng(seed))
        return float(low), float(high), "bootstrap"
    low, high = welch_ci(original, other, confidence)
    return low, high, "welch-t"


def clip_interval(low: float, high: float, bounds=None) -> tuple[float, float]:
    """(low, high) cut to `bounds` (lo, hi), the range the estimated quantity cannot leave
    (a t interval at 2 or 3 runs can pass it: a mean MIG's reaches above 1); unchanged
    when bounds is None."""
    if bounds is None:
        return low, high
    return max(low, bounds[0]), min(high, bounds[1])


def drop_test(original, other, confidence: float = CONFIDENCE, seed: int = 0,
              score_range=None) -> dict:
    """The record of one drop, original → other (scores of independent runs, 1-D each):
    {'drop': mean(original) − mean(other), 'n_original', 'n_other',
     'sd_original', 'sd_other' (ddof 1; None for one value),
     'p_welch': two-sided Welch p, 'p_drop': one-sided Welch p of H1 drop > 0,
     'ci_low', 'ci_high', 'ci_method' (see `drop_ci`), 'df'}.
    With fewer than 2 values a side only the drop, the counts and the spreads are filled;
    the test fields are None (never a made-up number). score_range (lo, hi): the range of
    the scores (a MIG's (0, 1)); the interval is cut to the range a difference of two such
    scores can take, (lo − hi, hi − lo)."""
    original, other = np.asarray(original, float), np.asarray(other, float)
    out = {"drop": float(original.mean() - other.mean()), "n_original": len(original),
           "n_other": len(other), "sd_original": _sd(original), "sd_other": _sd(other),
           "p_welch": None, "p_drop": None, "ci_low": None, "ci_high": None,
           "ci_method": None, "df": None}
    if len(original) < 2 or len(other) < 2:
        return out
    test = welch(original, other, "greater")
    out["p_drop"] = test["p"]
    out["p_welch"] = welch(original, other)["p"]
    out["df"] = test["df"]
    low, high, out["ci_method"] = drop_ci(original, other, confidence, seed)
    if score_range is not None:
        span = score_range[1] - score_range[0]
        low, high = clip_interval(low, high, (-span, span))
    out["ci_low"], out["ci_high"] = low, high
    return out


def _sd(x: np.ndarray) -> float | None:
    return float(np.std(x, ddof=1)) if len(x) > 1 else None


def tost(a, b, margin: float, alpha: float = ALPHA) -> dict:
    """Equivalence of two means within ±margin: two one-sided Welch tests (Schuirmann's
    TOST) of H0: mean(a) − mean(b) ≤ −margin and H0: mean(a) − mean(b) ≥ +margin.
    a, b: ≥ 2 values each; margin > 0, in the scores' units.
    Returns {'diff', 'margin', 'p_lower' (H1: diff > −margin), 'p_upper' (H1: diff <
    margin), 'p': max of the two, 'equivalent': p < alpha, 'ci_low', 'ci_high': the
    (1 − 2·alpha) Welch interval, which lies inside (−margin, margin) exactly when
    'equivalent'}. Both one-sided tests at alpha give a level-alpha test (intersection-
    union), so no multiplicity correction applies between them."""
    if not margin > 0:
        raise ValueError(f"tost: margin must be > 0, found {margin}")
    lower = welch(a, b, "greater", null=-margin)
    upper = welch(a, b, "less", null=margin)
    p = max(lower["p"], upper["p"])
    low, high = welch_ci(a, b, 1 - 2 * alpha)
    return {"diff": lower["diff"], "margin": float(margin), "p_lower": lower["p"],
            "p_upper": upper["p"], "p": p, "equivalent": p < alpha, "ci_low": low,
            "ci_high": high}


def drop_difference(modified, noisy, alternative: str = "greater") -> dict:
    """Is the drop on modified data larger than the drop on noisy data?

    With the three groups (original O, modified M, noisy N; independent runs, means
    Ō, M̄, N̄, sample variances s², sizes n) the contrast is
        C = (Ō − M̄) − (Ō − N̄) = N̄ − M̄,
    since the original mean enters both drops and cancels: the two drops are correlated
    through Ō, but their difference does not depend on it, so
        Var(C) = σ_M²/n_M + σ_N²/n_N, estimated by s_M²/n_M + s_N²/n_N,
    and C / sqrt(s_M²/n_M + s_N²/n_N) is Welch's statistic of N against M, with the
    Welch–Satterthwaite df of those two groups. H1 (alternative 'greater'): the modified
    drop exceeds the noisy one, C > 0.
    modified, noisy: ≥ 2 values each. Returns `welch(noisy, modified, alternative)` with
    'diff' = C = drop(modified) − drop(noisy)."""
    return welch(noisy, modified, alternative)


def keeps_less(original, modified, other_original, other_modified) -> dict:
    """Does one model keep a smaller share of its score on an arm than another model keeps
    (a method's MIG against the AE's)? A difference of absolute drops would favour any model
    with more to lose (the AE's MIG cannot fall below 0), so the shares are compared:
        R = M̄ / Ō (kept by the first model), R' = M̄' / Ō' (by the other),
        C = R' − R  (H1, one-sided: C > 0, the first keeps less),
    with the delta-method variance of each ratio, Var(M̄/Ō) ≈ v_M / Ō² + M̄² v_O / Ō⁴
    (v = s² / n of each group), se² the sum over both ratios, and the Welch–Satterthwaite df
    of the four terms. Simulated with MIG-like groups (5-15 runs, one mean near the floor):
    rejects at 0.025-0.045 under H0 at α 0.05 (tests/benchmark_core/test_stats.py).
    Each group ≥ 2 finite values, the original means > 0. Returns {'diff': C, 'kept',
    'kept_other', 'se', 'df', 't', 'p'}; se 0 decides by the sign of C."""
    groups = [_values(g, f"keeps_less: group {i + 1}") for i, g in
              enumerate((original, modified, other_original, other_modified))]
    means = [float(g.mean()) for g in groups]
    if means[0] <= 0 or means[2] <= 0:
        raise ValueError(f"keeps_less: expected original means > 0, found {means[0]} and "
                         f"{means[2]}")
    parts = [float(g.var(ddof=1)) / len(g) for g in groups]
    kept, kept_other = means[1] / means[0], means[3] / means[2]
    diff = kept_other - kept
    # the variance terms, each with its group: (modified, original) of either model
    terms = [(parts[1] / means[0] ** 2, groups[1]),
             (means[1] ** 2 * parts[0] / means[0] ** 4, groups[0]),
             (parts[3] / means[2] ** 2, groups[3]),
             (means[3] ** 2 * parts[2] / means[2] ** 4, groups[2])]
    se = math.sqrt(sum(t for t, _ in terms))
    out = {"diff": diff, "kept": kept, "kept_other": kept_other}
    if se == 0.0:
        return {**out, "se": 0.0, "df": float(sum(len(g) - 1 for g in groups)),
                "t": math.copysign(math.inf, diff) if diff else 0.0,
                "p": 0.0 if diff > 0 else 1.0}
    df = float(se ** 4 / sum(t ** 2 / (len(g) - 1) for t, g in terms if t > 0))
    t = diff / se
    return {**out, "se": se, "df": df, "t": float(t), "p": float(stats.t.sf(t, df))}


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control), same order as the
    input; p_(i) sorted ascending becomes max_{j ≤ i} min(1, (m − j + 1) · p_(j))."""
    p = np.asarray(pvalues, float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(1.0, stepped)
    return out


def bh(pvalues) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (false-discovery-rate control), same order as
    the input; p_(i) sorted ascending becomes min_{j ≥ i} min(1, m · p_(j) / j). Equal to
    scipy.stats.false_discovery_control(p, method='bh')."""
    p = np.asarray(pvalues, float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    scaled = m * p[order] / np.arange(1, m + 1)
    out = np.empty(m)
    out[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return out


ADJUSTMENTS = {"holm": holm, "bh": bh}


def adjust(pvalues, method: str = "holm") -> list:
    """Adjusted p-values of a family, same order; None entries (untested) stay None and
    do not count in the family. method: 'holm' (family-wise) or 'bh' (false discovery)."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"adjust: method must be one of {sorted(ADJUSTMENTS)}, found "
                         f"{method!r}")
    tested = [i for i, p in enumerate(pvalues) if p is not None]
    out = [None] * len(pvalues)
    if tested:
        for i, q in zip(tested, ADJUSTMENTS[method]([pvalues[i] for i in tested])):
            out[i] = float(q)
    return out


def pooled_sd(*groups) -> float | None:
    """Root mean of the sample variances (ddof 1) of the groups with ≥ 2 values: the
    'observed spread' the power helper takes; None when no group has 2 values."""
    variances = [np.var(np.asarray(g, float), ddof=1) for g in groups if len(g) > 1]
    return float(np.sqrt(np.mean(variances))) if variances else None


def spread_upper_bound(*groups, confidence: float = 0.8) -> float | None:
    """The one-sided `confidence` upper bound of the pooled spread of the groups (those with
    ≥ 2 values): s · sqrt(df / chi2_{1 − confidence}(df)), df = Σ (n_i − 1), the
    conservative spread for a power estimate from few runs (2 runs a side give df 2 and a
    bound 2.1 × s at 80 %); None when no group has 2 values."""
    kept = [np.asarray(g, float) for g in groups if len(g) > 1]
    if not kept:
        return None
    df = sum(len(g) - 1 for g in kept)
    pooled = math.sqrt(sum(float(np.var(g, ddof=1)) * (len(g) - 1) for g in kept) / df)
    return pooled * math.sqrt(df / float(stats.chi2.ppf(1.0 - confidence, df)))


def power(effect: float, sd: float, n: int, alpha: float = ALPHA, sd_other: float | None =
          None, n_other: int | None = None) -> float:
    """Power in [0, 1] of the one-sided Welch test at level alpha to detect a difference
    of means `effect` (> 0: the first group higher, e.g. a drop original − variant) with
    n runs in the first group (spread sd) and n_other in the second (spread sd_other;
    both default to the first's). Noncentral t: with se = sqrt(sd²/n + sd_other²/n_other)
    and the Welch–Satterthwaite df of those population spreads,
        power = P(T' > t_{1 − alpha, df}),  T' ~ noncentral t(df, effect / se).
    Equal n and sd give df = 2(n − 1), the pooled t-test's power."""
    sd_other = sd if sd_other is None else sd_other
    n_other = n if n_other is None else n_other
    if min(n, n_other) < 2:
        raise ValueError(f"power: needs n ≥ 2 a side, found {n} and {n_other}")
    va, vb = sd ** 2 / n, sd_other ** 2 / n_other
    if va + vb == 0:
        return 1.0 if effect > 0 else 0.0
    df = (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n_other - 1))
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, df), df, effect / math.sqrt(va + vb)))


def paired_power(effect: float, sd_diff: float, n: int, alpha: float = ALPHA) -> float:
    """Power in [0, 1] of the one-sided paired t-test (`paired`) at level alpha to detect
    a mean difference `effect` > 0 with n pairs whose differences spread sd_diff (std of
    the per-pair differences, not of either arm): power = P(T' > t_{1 − alpha, n − 1}),
    T' ~ noncentral t(n − 1, effect √n / sd_diff)."""
    if n < 2:
        raise ValueError(f"paired_power: needs n ≥ 2 pairs, found {n}")
    if sd_diff == 0:
        return 1.0 if effect > 0 else 0.0
    return float(stats.nct.sf(stats.t.ppf(1 - alpha, n - 1), n - 1,
                              effect * math.sqrt(n) / sd_diff))


def seeds_needed(effect: float, sd: float, alpha: float = ALPHA, target: float = 0.8,
                 sd_other: float | None = None, max_seeds: int = 10000) -> int | None:
    """Smallest number of runs per arm (equal arms, ≥ 2) at which the one-sided Welch
    test at level alpha reaches power `target` for a true difference `effect` at spreads
    sd / sd_other (see `power`). None when effect ≤ 0 (no number of seeds detects it) or
    more than max_seeds would be needed."""
    if not effect > 0:
        return None
    return _smallest_n(lambda n: power(effect, sd, n, alpha, sd_other), target, max_seeds)


def pairs_needed(effect: float, sd_diff: float, alpha: float = ALPHA, target: float = 0.8,
                 max_pairs: int = 10000) -> int | None:
    """Smallest number of pairs (seeds, ≥ 2) at which the one-sided paired t-test at level
    alpha reaches power `target` for a true mean difference `effect`, the per-pair
    differences spreading sd_diff (`paired_power`). None when effect ≤ 0 or more than
    max_pairs would be needed."""
    if not effect > 0:
        return None
    return _smallest_n(lambda n: paired_power(effect, sd_diff, n, alpha), target, max_pairs)


def _smallest_n(power_at, target: float, most: int) -> int | None:
    """The first n in [2, most] with power_at(n) ≥ target (power grows with n: bisection);
    None when even `most` falls short."""
    if power_at(most) < target:
        return None
    low, high = 2, most
    if power_at(low) >= target:
        return low
    while high - low > 1:
        mid = (low + high) // 2
        if power_at(mid) >= target:
            high = mid
        else:
            low = mid
    return high


def overpruning_test(pruned_a: int, runs_a: int, pruned_b: int, runs_b: int) -> float | None:
    """Two-sided Fisher's exact test p of equal over-pruning rates in two arms
    (pruned_x of runs_x runs); None when an arm has no runs."""
    if runs_a == 0 or runs_b == 0:
        return None
    table = [[pruned_a, runs_a - pruned_a], [pruned_b, runs_b - pruned_b]]
    return float(stats.fisher_exact(table).pvalue)
