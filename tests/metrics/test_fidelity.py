"""Issue 15 items 4, 5, 6 and 9: the FactorVAE score's pruning rule, modularity's
uninformative dims and InfoMEC on discrete codes follow their sources (disentanglement_lib;
paper 001 sec. 4 and the authors' code). Each test fails on the suite's earlier behaviour."""

import inspect

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from benchmark.metrics import factor_vae, infomec, modularity

#: the five varying dSprites factors: their values (REFERENCE.md, Datasets)
DSPRITES_VALUES = [np.array([1.0, 2.0, 3.0]), np.linspace(0.5, 1.0, 6),
                   np.linspace(0.0, 2 * np.pi, 40), np.linspace(0.0, 1.0, 32),
                   np.linspace(0.0, 1.0, 32)]


def _grid_sample(n, seed=0, sizes=None):
    rng = np.random.default_rng(seed)
    sizes = sizes or [len(v) for v in DSPRITES_VALUES]
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


# --- item 4: FactorVAE score ------------------------------------------------------------

def test_factor_vae_prunes_by_dlibs_absolute_std_threshold():
    f = _grid_sample(4000, sizes=[3, 6, 8])
    rng = np.random.default_rng
    # Dims 0 and 1 with std 0.5; dim 2 informative but with std 0.03: below dlib's absolute
    # 0.05, above the relative rule's 0.05 x 0.5 = 0.025.
    z = f / f.std(axis=0) * np.array([0.5, 0.5, 0.03])
    z = z + rng(1).normal(0, 1e-3, z.shape)
    out = factor_vae.factor_vae_score_from_codes(f, z, rng(0), num_train=300, num_eval=200)
    assert out["factor_vae_active_dims"] == 2          # dlib: std >= 0.05, absolute
    assert out["factor_vae_score"] < 0.75              # factor 2 has no dim left to vote
    relative = factor_vae.factor_vae_score_from_codes(f, z, rng(0), num_train=300,
                                                      num_eval=200, prune_relative=True)
    assert relative["factor_vae_active_dims"] == 3 and relative["factor_vae_score"] > 0.95
    # A whole code below the threshold: dlib's score 0 with no active dim.
    tiny = factor_vae.factor_vae_score_from_codes(f, z * 1e-3, rng(0), num_train=300,
                                                  num_eval=200)
    assert tiny == {"factor_vae_score_train": 0.0, "factor_vae_score": 0.0,
                    "factor_vae_active_dims": 0}


def test_factor_vae_defaults_are_dlibs():
    for fn in (factor_vae.factor_vae_score, factor_vae.factor_vae_score_from_codes):
        params = inspect.signature(fn).parameters
        assert params["num_variance_estimate"].default == 10000
        assert params["prune_threshold"].default == 0.05
        assert params["prune_relative"].default is False
        assert (params["batch_size"].default, params["num_train"].default,
                params["num_eval"].default) == (64, 10000, 5000)


def test_factor_vae_std_is_estimated_on_num_variance_estimate_rows():
    f = _grid_sample(3000, sizes=[3, 6, 8])
    z = f + np.random.default_rng(1).normal(0, 0.05, f.shape)
    seen = []
    original = factor_vae._score

    def spy(batch_fn, variance_codes, *args):
        seen.append(len(variance_codes))
        return original(batch_fn, variance_codes, *args)

    factor_vae._score = spy
    try:
        factor_vae.factor_vae_score_from_codes(f, z, np.random.default_rng(0), num_train=10,
                                               num_eval=10)
        factor_vae.factor_vae_score_from_codes(f, z, np.random.default_rng(0), num_train=10,
                                               num_eval=10, num_variance_estimate=500)
    finally:
        factor_vae._score = original
    assert seen == [3000, 500]       # all rows up to 10,000 (dlib), else the number asked


# --- items 5 and 9: modularity -----------------------------------------------------------

def _dlib_modularity(factors, codes, num_bins=20):
    """disentanglement_lib's modularity, written out: histogram_discretize (np.histogram
    edges, np.digitize), sklearn's mutual_info_score per (dim, factor), then
    1 - (sum m^2 - max m^2) / (max m^2 (K - 1)) per dim, 0 where max m = 0, mean over dims."""
    discrete = [np.digitize(c, np.histogram(c, num_bins)[1][:-1]) for c in codes.T]
    mi = np.array([[mutual_info_score(v, d) for v in factors.T] for d in discrete])
    squared = mi ** 2
    peak = squared.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = 1.0 - (squared.sum(axis=1) - peak) / (peak * (squared.shape[1] - 1.0))
    score[peak == 0] = 0.0
    return float(np.mean(score))


def test_modularity_known_answer_constant_and_duplicated_dim_matches_dlib():
    """Issue 15 item 9: 10,000 rows on the dSprites grid, the perfect code (factor values)
    plus a constant dim and a copy of posX: dlib 0.857 (6 informative dims of 7), the suite
    before issue 15 0.9999 (it dropped the constant dim)."""
    f = _grid_sample(10000)
    values = np.stack([v[f[:, j]] for j, v in enumerate(DSPRITES_VALUES)], axis=1)
    z = np.concatenate([values, np.full((10000, 1), 0.5), values[:, 3:4]], axis=1)
    expected = _dlib_modularity(f, z)
    assert expected == pytest.approx(0.857, abs=0.005)
    out = modularity.modularity_explicitness_from_codes(f[:9000], z[:9000], f[9000:],
                                                        z[9000:])
    assert _dlib_modularity(f[:9000], z[:9000]) == pytest.approx(out["modularity"], abs=1e-12)
    assert out["modularity_informative_dims"] == 6
    from benchmark.metrics.mig import mutual_info_matrix
    from benchmark.metrics.codes import histogram_discretize
    whole, _ = modularity.modularity_from_mi(mutual_info_matrix(f, histogram_discretize(z)))
    assert whole == pytest.approx(expected, abs=1e-12)


# --- item 6: InfoMEC ---------------------------------------------------------------------

def _plugin_nmi(factor, code):
    """I(s; z) / H(s) from the empirical joint distribution of two label vectors."""
    _, s = np.unique(factor, return_inverse=True)
    _, c = np.unique(code, return_inverse=True)
    joint = np.zeros((s.max() + 1, c.max() + 1))
    np.add.at(joint, (s, c), 1.0)
    joint /= joint.sum()
    ps, pc = joint.sum(1), joint.sum(0)
    nz = joint > 0
    mi = np.sum(joint[nz] * np.log(joint[nz] / np.outer(ps, pc)[nz]))
    return mi / -np.sum(ps * np.log(ps))


def test_infomec_uses_the_discrete_estimator_on_discrete_codes():
    f = _grid_sample(3000, sizes=[3, 4, 5])
    perm = np.array([3, 0, 4, 1, 2])
    # Quantised code: dim 0 = factor 0, dim 1 = (factor 0, factor 1) jointly, dim 2 a
    # non-monotone relabelling of factor 2 in a small range (3 % of the largest).
    z = np.stack([f[:, 0] * 1.0, f[:, 0] + 3.0 * f[:, 1], perm[f[:, 2]] * 0.03 * 11 / 4],
                 axis=1)
    out = infomec.infomec_from_codes(f, z, discrete=True)
    expected = np.array([[_plugin_nmi(f[:, i], z[:, j]) for j in range(3)] for i in range(3)])
    np.testing.assert_allclose(out["infomec_nmi"], np.clip(expected, 0, 1), atol=1e-12)
    assert out["infomec_nmi"][0][1] == pytest.approx(1.0) and \
        out["infomec_nmi"][1][1] == pytest.approx(1.0)
    # Discrete codes keep every dim of non-zero range (paper 001 sec. 4.1); continuous
    # codes prune below 1/20 of the largest range.
    assert out["infomec_active_dims"] == 3
    assert infomec.infomec_from_codes(f, z)["infomec_active_dims"] == 2
    # InfoE sees each discrete dim one-hot (the authors' compute_infoe), in-sample.
    onehot = np.concatenate([(z[:, j:j + 1] == np.unique(z[:, j])).astype(float)
                             for j in range(3)], axis=1)
    assert out["infoe"] == pytest.approx(infomec.info_e(f, onehot, f, onehot), abs=1e-9)
    continuous = infomec.infomec_from_codes(f, z, prune_fraction=0.0)
    assert not np.allclose(continuous["infomec_nmi"], out["infomec_nmi"], atol=1e-3)


def test_infomec_defaults_follow_paper_001():
    params = inspect.signature(infomec.infomec).parameters
    assert params["n_neighbors"].default == 3                     # sec. 4.1: k = 3
    assert params["prune_fraction"].default == pytest.approx(1 / 20)
    assert params["test_fraction"].default == 0.0                 # in-sample InfoE
    assert params["discrete"].default is False
    f = _grid_sample(1500, sizes=[3, 4, 5])
    z = f + np.random.default_rng(2).normal(0, 0.3, f.shape)
    # A dim with a tenth of the largest range is active at 1/20 (pruned at the old 1/8).
    largest = np.ptp(z, axis=0).max()
    extra = z[:, :1] - z[:, :1].min()
    z = np.concatenate([z, extra * 0.1 * largest / np.ptp(extra)], axis=1)
    out = infomec.infomec_from_codes(f, z)
    assert out["infomec_active_dims"] == 4
    assert infomec.infomec_from_codes(f, z, prune_fraction=1 / 8)["infomec_active_dims"] == 3
    # InfoE is the in-sample estimate: fitted and scored on the whole sample (equal to the
    # solver's tolerance: the two standardisations differ in the last bits).
    std = (z - z.mean(0)) / z.std(0)
    assert out["infoe"] == pytest.approx(infomec.info_e(f, std, f, std), abs=1e-5)
    held_out = infomec.infomec_from_codes(f, z, test_fraction=0.2)["infoe"]
    assert abs(held_out - out["infoe"]) > 1e-4
