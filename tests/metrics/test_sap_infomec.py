import numpy as np
import pytest

from benchmark.metrics import infomec
from benchmark.metrics.infomec import _ratio_score, infomec_from_codes
from benchmark.metrics.sap import sap_from_codes


def _factors(n, sizes=(3, 5, 4), seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


def test_sap_perfect_noise_and_hand_computed_gap():
    f = _factors(1500)
    z = f + np.random.default_rng(1).normal(0, 0.05, f.shape)
    out = sap_from_codes(f[:1000], z[:1000], f[1000:], z[1000:], "threshold")
    # Perfect code: the best dim is exact, the runner-up at chance (1/K balanced accuracy).
    assert out["sap"] == pytest.approx(np.mean([1 - 1 / 3, 1 - 1 / 5, 1 - 1 / 4]), abs=0.06)
    assert sap_from_codes(f[:1000], z[:1000], f[1000:], z[1000:])["sap"] == out["sap"]
    assert sap_from_codes(f[:1000], z[:1000], f[1000:], z[1000:], "linear_svm")["sap"] > 0.3
    noise = np.random.default_rng(2).normal(size=f.shape)
    assert sap_from_codes(f[:1000], noise[:1000], f[1000:], noise[1000:])["sap"] < 0.05
    # Gap arithmetic on a known score matrix: binary factor, dim 0 perfect, dim 1 useless.
    fb = np.array([[0, 0], [1, 1]] * 200)
    zb = np.stack([fb[:, 0] * 1.0, np.tile([0.0, 0.0, 1.0, 1.0], 100)], axis=1)
    out = sap_from_codes(fb, zb, fb, zb, "threshold")
    np.testing.assert_allclose(out["sap_score_matrix"], [[1.0, 1.0], [0.5, 0.5]])
    assert out["sap"] == pytest.approx(0.5)


def test_ratio_score_formula():
    assert _ratio_score(np.eye(3)) == pytest.approx(1.0)
    assert _ratio_score(np.ones((3, 4))) == pytest.approx(0.0)
    m = np.array([[0.6, 0.0], [0.2, 1.0]])
    expected = (np.mean([0.6 / 0.8, 1.0]) - 0.5) / 0.5
    assert _ratio_score(m) == pytest.approx(expected)


def test_infomec_perfect_duplicate_noise():
    f = _factors(2000)
    z = f + np.random.default_rng(3).normal(0, 0.05, f.shape)
    perfect = infomec_from_codes(f, z)
    assert perfect["infom"] > 0.9 and perfect["infoc"] > 0.9 and perfect["infoe"] > 0.8
    assert perfect == infomec_from_codes(f, z)
    assert infomec_from_codes(f, z[:, [2, 0, 1]])["infom"] == pytest.approx(perfect["infom"])
    dup = np.concatenate([z, z[:, :1] + np.random.default_rng(4).normal(0, 0.05, (2000, 1))], 1)
    dup_out = infomec_from_codes(f, dup)
    assert dup_out["infoc"] < perfect["infoc"] - 0.1 and dup_out["infom"] > 0.9
    noise = infomec_from_codes(f, np.random.default_rng(5).normal(size=(2000, 3)))
    assert noise["infoe"] < 0.05
    assert noise["infom"] < 0.6       # the kNN floor (measured about 0.3-0.5), not 0


def test_constant_and_inactive_dims_are_pruned():
    f = _factors(800)
    z = np.concatenate([f + 0.0, np.full((800, 1), 3.0), 1e-4 * f[:, :1]], axis=1)
    out = infomec_from_codes(f, z)
    assert out["infomec_active_dims"] == 3


def _near_separable(seed=0, n=3000):
    """Factors (n, 2) with 16 and 5 classes; a 3-dim code that nearly separates the first
    (class + small noise) and carries half of the second: lbfgs creeps on such problems."""
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, 16, n), rng.integers(0, 5, n)], axis=1)
    codes = np.stack([factors[:, 0] + rng.normal(0, 0.15, n),
                      factors[:, 1] // 2 + rng.normal(0, 0.5, n), rng.normal(size=n)], axis=1)
    return factors, infomec._standardise(codes)


def test_infoe_newton_and_lbfgs_reach_the_same_optimum(monkeypatch):
    """The Newton fit (small problems) and the authors' lbfgs (large ones, up to 10,000
    iterations) give the same InfoE: both reach the optimum of the same problem."""
    factors, z = _near_separable()
    newton = infomec.info_e(factors, z, factors, z)
    monkeypatch.setattr(infomec, "NEWTON_MAX_PARAMETERS", 0)
    lbfgs = infomec.info_e(factors, z, factors, z)
    assert newton == pytest.approx(lbfgs, abs=2e-3)
    assert 0.3 < newton < 0.95


def test_infoe_logs_a_fit_that_does_not_converge(monkeypatch):
    factors, z = _near_separable(n=600)
    from sklearn import linear_model      # infomec imports it where it fits

    original = linear_model.LogisticRegression
    monkeypatch.setattr(linear_model, "LogisticRegression",
                        lambda **kw: original(**{**kw, "max_iter": 1}))
    logged = []
    monkeypatch.setattr(infomec.logging, "warning", lambda msg, *a: logged.append(msg % a))
    infomec.info_e(factors, z, factors, z)
    assert logged and "did not converge" in logged[0]
