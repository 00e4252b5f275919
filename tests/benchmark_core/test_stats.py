"""benchmark/statistics/stats.py against scipy, and the bootstrap rule by simulation."""

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sp

from benchmark.core.errors import UserError
from benchmark.statistics import power as power_cli
from benchmark.statistics import stats

A = [0.30, 0.25, 0.35, 0.28]
B = [0.10, 0.05, 0.12]


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("a, b", [(A, B), (B, A), ([1.0, 2.0], [1.5, 1.6, 1.4, 1.55, 1.5])])
def test_welch_matches_scipy(a, b, alternative):
    ours = stats.welch(a, b, alternative)
    ref = sp.ttest_ind(a, b, equal_var=False, alternative=alternative)
    assert ours["t"] == pytest.approx(ref.statistic)
    assert ours["p"] == pytest.approx(ref.pvalue)
    assert ours["df"] == pytest.approx(ref.df)
    assert ours["diff"] == pytest.approx(np.mean(a) - np.mean(b))
    low, high = sp.ttest_ind(a, b, equal_var=False).confidence_interval(0.9)
    assert stats.welch_ci(a, b, 0.9) == pytest.approx((low, high))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_paired_matches_scipy(alternative):
    a, b = [1.0, 2.5, 3.0, 4.2], [0.8, 2.6, 2.1, 3.9]
    ours = stats.paired(a, b, alternative)
    ref = sp.ttest_rel(a, b, alternative=alternative)
    assert ours["t"] == pytest.approx(ref.statistic) and ours["p"] == pytest.approx(ref.pvalue)
    low, high = sp.ttest_rel(a, b).confidence_interval(0.95)
    assert (ours["ci_low"], ours["ci_high"]) == pytest.approx((low, high))
    assert ours["diff"] == pytest.approx(np.mean(np.subtract(a, b))) and ours["n"] == 4
    constant = stats.paired([1.0, 2.0], [0.5, 1.5], "greater")
    assert constant["p"] == 0.0 and constant["ci_low"] == constant["ci_high"] == 0.5
    with pytest.raises(ValueError, match="one length"):
        stats.paired([1.0, 2.0], [1.0, 2.0, 3.0])


def test_welch_with_a_null_difference_is_scipy_on_shifted_data():
    ref = sp.ttest_ind(np.subtract(A, 0.1), B, equal_var=False, alternative="greater")
    assert stats.welch(A, B, "greater", null=0.1)["p"] == pytest.approx(ref.pvalue)


def test_welch_degenerate_and_invalid_input():
    assert stats.welch([1, 1], [1, 1])["p"] == 1.0
    assert stats.welch([2, 2], [1, 1], "greater")["p"] == 0.0
    assert stats.welch([2, 2], [1, 1], "less")["p"] == 1.0
    assert stats.welch_ci([2, 2], [1, 1]) == (1.0, 1.0)
    with pytest.raises(ValueError, match="at least 2"):
        stats.welch([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        stats.welch([1.0, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match="alternative"):
        stats.welch(A, B, "bigger")


def test_drop_test_record():
    d = stats.drop_test(A, B)
    assert d["drop"] == pytest.approx(np.mean(A) - np.mean(B))
    assert d["p_welch"] == pytest.approx(sp.ttest_ind(A, B, equal_var=False).pvalue)
    assert d["p_drop"] == pytest.approx(
        sp.ttest_ind(A, B, equal_var=False, alternative="greater").pvalue)
    low, high = sp.ttest_ind(A, B, equal_var=False).confidence_interval(0.95)
    assert (d["ci_low"], d["ci_high"], d["ci_method"]) == (pytest.approx(low),
                                                          pytest.approx(high), "welch-t")
    assert d["sd_original"] == pytest.approx(np.std(A, ddof=1))
    single = stats.drop_test([0.3], B)
    assert single["p_welch"] is None and single["ci_low"] is None and single["n_original"] == 1
    rng = np.random.default_rng(1)
    big = stats.drop_test(rng.normal(1, 1, 25), rng.normal(0, 1, 30))
    assert big["ci_method"] == "bootstrap" and big["ci_low"] < big["drop"] < big["ci_high"]


def test_bootstrap_matches_scipy_percentile():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1, 1, 25), rng.normal(0, 2, 30)
    low, high = stats.bootstrap_ci(a, b, resamples=20000, rng=np.random.default_rng(3))
    ref = sp.bootstrap((a, b), lambda x, y, axis: x.mean(axis) - y.mean(axis),
                       n_resamples=20000, method="percentile", vectorized=True,
                       random_state=np.random.default_rng(4)).confidence_interval
    assert low == pytest.approx(ref.low, abs=0.03) and high == pytest.approx(ref.high, abs=0.03)


def _coverage(n, rng, reps=800, resamples=400):
    """(t coverage, bootstrap coverage) of a nominal 95 % interval of a difference of
    means 0, normal groups of n with sds 1 and 2."""
    a, b = rng.normal(0, 1, (reps, n)), rng.normal(0, 2, (reps, n))
    va, vb = a.var(axis=1, ddof=1) / n, b.var(axis=1, ddof=1) / n
    df = (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (n - 1))
    half = sp.t.ppf(0.975, df) * np.sqrt(va + vb)
    diff = a.mean(axis=1) - b.mean(axis=1)
    t_cover = np.mean(np.abs(diff) < half)
    low, high = stats.bootstrap_ci(a, b, resamples=resamples, rng=rng)
    return t_cover, np.mean((low < 0) & (0 < high))


def test_coverage_rule_by_simulation():
    """The module docstring's rule: the percentile bootstrap under-covers at n = 3, 5, 10
    a side and is near nominal from BOOTSTRAP_MIN_N; the Welch t interval covers at every
    n (fixed seed, so the numbers are reproducible; Monte Carlo se ≈ 0.01)."""
    rng = np.random.default_rng(0)
    coverage = {n: _coverage(n, rng) for n in (3, 5, 10, stats.BOOTSTRAP_MIN_N)}
    for n, (t_cover, _) in coverage.items():
        assert t_cover >= 0.935, (n, t_cover)
    assert coverage[3][1] < 0.86 and coverage[5][1] < 0.91 and coverage[10][1] < 0.94
    assert coverage[stats.BOOTSTRAP_MIN_N][1] > 0.91
    # and the rule picks the t interval below the threshold
    x = np.arange(stats.BOOTSTRAP_MIN_N - 1, dtype=float)
    assert stats.drop_ci(x, x)[2] == "welch-t"
    x = np.arange(stats.BOOTSTRAP_MIN_N, dtype=float)
    assert stats.drop_ci(x, x)[2] == "bootstrap"


def test_tost_is_two_one_sided_scipy_tests():
    a, b, margin = [0.30, 0.31, 0.29, 0.30], [0.30, 0.32, 0.30, 0.29], 0.05
    result = stats.tost(a, b, margin)
    lower = sp.ttest_ind(np.add(a, margin), b, equal_var=False, alternative="greater").pvalue
    upper = sp.ttest_ind(np.subtract(a, margin), b, equal_var=False, alternative="less").pvalue
    assert result["p_lower"] == pytest.approx(lower)
    assert result["p_upper"] == pytest.approx(upper)
    assert result["p"] == pytest.approx(max(lower, upper)) and result["equivalent"]
    assert -margin < result["ci_low"] < result["ci_high"] < margin
    wide = stats.tost([0.3, 0.1, 0.5], [0.2, 0.35, 0.05], margin)
    assert not wide["equivalent"] and (wide["ci_low"] < -margin or wide["ci_high"] > margin)
    with pytest.raises(ValueError, match="margin"):
        stats.tost(a, b, 0.0)


def test_drop_difference_is_welch_on_noisy_against_modified():
    original, modified, noisy = A, [0.10, 0.12, 0.08], [0.2, 0.25, 0.22, 0.24]
    result = stats.drop_difference(modified, noisy)
    contrast = ((np.mean(original) - np.mean(modified))
                - (np.mean(original) - np.mean(noisy)))
    assert result["diff"] == pytest.approx(contrast)
    assert result["se"] == pytest.approx(np.sqrt(np.var(modified, ddof=1) / 3
                                                 + np.var(noisy, ddof=1) / 4))
    assert result["p"] == pytest.approx(sp.ttest_ind(noisy, modified, equal_var=False,
                                                     alternative="greater").pvalue)


def test_holm_and_bh():
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    assert stats.bh(p) == pytest.approx(sp.false_discovery_control(p, method="bh"))
    # Holm by hand: sorted 0.005, 0.01, 0.03, 0.04, 0.5 times 5, 4, 3, 2, 1, running max
    assert stats.holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.5])
    assert stats.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
    assert stats.adjust([0.01, None, 0.04], "holm") == pytest.approx([0.02, None, 0.04])
    assert stats.adjust([None], "bh") == [None]
    with pytest.raises(ValueError, match="method"):
        stats.adjust(p, "bonferroni-ish")


def test_power_matches_simulated_scipy_welch():
    rng = np.random.default_rng(5)
    for effect, sd, sd_other, n in [(0.02, 0.01, 0.01, 4), (0.05, 0.03, 0.06, 6)]:
        a = rng.normal(effect, sd, (4000, n))
        b = rng.normal(0.0, sd_other, (4000, n))
        rejected = sp.ttest_ind(a, b, axis=1, equal_var=False,
                                alternative="greater").pvalue < 0.05
        assert stats.power(effect, sd, n, 0.05, sd_other) == pytest.approx(
            rejected.mean(), abs=0.03)


def test_paired_power_matches_simulated_scipy_paired_t():
    """The power of perturbations.readapt's across-seed test: pairs, n - 1 df, the spread
    of the differences (a Welch power at that spread overstates the seeds ~2x)."""
    rng = np.random.default_rng(6)
    for effect, sd_diff, n in [(1.0, 1.0, 3), (0.5, 1.0, 8)]:
        d = rng.normal(effect, sd_diff, (6000, n))
        rejected = sp.ttest_1samp(d, 0.0, axis=1, alternative="greater").pvalue < 0.05
        assert stats.paired_power(effect, sd_diff, n, 0.05) == pytest.approx(
            rejected.mean(), abs=0.03)
    n = stats.pairs_needed(0.5, 1.0)
    assert stats.paired_power(0.5, 1.0, n) >= 0.8 > stats.paired_power(0.5, 1.0, n - 1)
    assert n == 27                       # G*Power, one-tailed paired t, dz = 0.5, 0.8: 27
    assert n < stats.seeds_needed(0.5, 1.0) / 1.5
    assert stats.pairs_needed(0.0, 1.0) is None
    with pytest.raises(UserError, match="--paired"):
        power_cli.message(0.5, 1.0, 0.05, 0.8, sd_other=2.0, paired=True)


def test_seeds_needed():
    # G*Power's one-tailed two-sample t-test at power 0.8: d = 0.5 -> 51, d = 0.8 -> 21
    assert stats.seeds_needed(0.5, 1.0) == 51 and stats.seeds_needed(0.08, 0.1) == 21
    n = stats.seeds_needed(0.03, 0.02, 0.05, 0.9)
    assert stats.power(0.03, 0.02, n, 0.05) >= 0.9 > stats.power(0.03, 0.02, n - 1, 0.05)
    assert stats.seeds_needed(0.0, 1.0) is None and stats.seeds_needed(-0.1, 1.0) is None
    assert stats.seeds_needed(1.0, 0.0) == 2
    assert stats.pooled_sd([1.0, 3.0], [2.0], [0.0, 2.0]) == pytest.approx(np.sqrt(2.0))
    assert stats.pooled_sd([1.0]) is None


def test_overpruning_test():
    assert stats.overpruning_test(0, 3, 3, 3) == pytest.approx(
        sp.fisher_exact([[0, 3], [3, 0]]).pvalue)
    assert stats.overpruning_test(0, 0, 1, 3) is None


def test_power_command():
    seeds, text = power_cli.message(0.5, 1.0, 0.05, 0.8)
    assert seeds == 51 and text.startswith("51 seeds per arm")
    result = subprocess.run([sys.executable, "-m", "benchmark.power", "--drop=0.8", "--sd=1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("21 seeds per arm")
    result = subprocess.run([sys.executable, "-m", "benchmark.power", "--drop=0.5", "--sd=1",
                             "--paired"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("27 seeds (pairs)"), (
        result.stdout + result.stderr)


def test_intervals_of_a_bounded_score_stay_in_its_range():
    """Two seeds give a t interval (df 1, t 12.7) wider than a MIG can go: the mean's
    interval is cut to [0, 1] and a drop's to [−1, 1]; without bounds nothing is cut."""
    from benchmark.studies import mechanism
    high, low = [0.90, 0.98], [0.05, 0.30]
    unbounded = mechanism.summary(high)
    assert unbounded["ci_high"] > 1
    bounded = mechanism.summary(high, (0.0, 1.0))
    assert bounded["ci_high"] == 1.0 and bounded["ci_low"] == unbounded["ci_low"]
    assert stats.drop_test(high, low)["ci_high"] > 1
    cut = stats.drop_test(high, low, score_range=(0.0, 1.0))
    assert cut["ci_high"] == 1.0 and cut["ci_low"] == stats.drop_test(high, low)["ci_low"]
    assert stats.clip_interval(-0.5, 2.0, (0.0, 1.0)) == (0.0, 1.0)
    assert stats.clip_interval(-0.5, 2.0) == (-0.5, 2.0)


def test_the_spread_bound_for_power_is_wider_than_the_observed_spread_at_few_runs():
    """Two runs a side (df 2): the 80 % upper bound is s·sqrt(2 / chi2_0.2(2)) ≈ 2.12 s;
    at 50 runs a side it is within 10 % of s; no group of 2 values gives None."""
    a, b = [0.40, 0.42], [0.20, 0.23]
    observed = stats.pooled_sd(a, b)
    bound = stats.spread_upper_bound(a, b)
    assert bound == pytest.approx(observed * np.sqrt(2 / sp.chi2.ppf(0.2, 2)))
    assert 2.0 < bound / observed < 2.2
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert 1.0 < stats.spread_upper_bound(x, y) / stats.pooled_sd(x, y) < 1.1
    assert stats.spread_upper_bound([0.1], [0.2]) is None


def test_the_share_one_model_keeps_against_another_keeps_its_level_and_finds_a_difference():
    """keeps_less (the share of MIG a method keeps on an arm against the AE's share): under
    H0 (equal shares) with MIG-like groups, clipped to (0, 1] as scores are, it rejects at
    most about α in each setting; a real difference of shares is found most of the time;
    its statistic is the difference of the two ratios."""
    rng = np.random.default_rng(0)

    def draw(mean, sd, n):
        return np.clip(rng.normal(mean, sd, n), 0.001, 1.0)

    settings = [  # (method original, modified; AE original, modified): (mean, sd, n) each
        ((0.3, 0.1, 5), (0.06, 0.05, 5), (0.125, 0.1, 15), (0.025, 0.005, 15)),
        ((0.5, 0.05, 5), (0.25, 0.1, 5), (0.12, 0.05, 5), (0.06, 0.03, 5)),
        ((0.5, 0.2, 10), (0.1, 0.1, 10), (0.12, 0.05, 10), (0.024, 0.01, 10))]
    for groups in settings:
        rate = np.mean([stats.keeps_less(*(draw(*g) for g in groups))["p"] < 0.05
                        for _ in range(2000)])
        assert 0.01 < rate < 0.065, (groups, rate)
    found = np.mean([stats.keeps_less(draw(0.5, 0.05, 5), draw(0.1, 0.05, 5),
                                      draw(0.12, 0.03, 5), draw(0.10, 0.03, 5))["p"] < 0.05
                     for _ in range(500)])
    assert found > 0.8, found
    result = stats.keeps_less([0.5, 0.6], [0.1, 0.2], [0.1, 0.12], [0.08, 0.1])
    assert result["kept"] == pytest.approx(0.15 / 0.55)
    assert result["diff"] == pytest.approx(0.09 / 0.11 - 0.15 / 0.55)
    assert stats.keeps_less([0.5, 0.5], [0.1, 0.1], [0.1, 0.1], [0.1, 0.1])["p"] == 0.0
    with pytest.raises(ValueError, match="original means > 0"):
        stats.keeps_less([0.0, 0.0], [0.1, 0.1], [0.1, 0.1], [0.1, 0.1])
