"""One encoded sample for every metric (issue 17 item 4) and DCI's tied columns."""

import numpy as np
import pytest

from benchmark import metrics as metrics_lib
from benchmark.data import dsprites
from benchmark.metrics import codes as codes_lib
from benchmark.metrics import dci

SIZES = {"mig": {"num_train": 300}, "dci": {"num_train": 300, "num_test": 200},
         "sap": {"num_train": 300, "num_test": 200}, "infomec": {"num_points": 400},
         "factor_vae_score": {"pool_size": 600, "num_train": 100, "num_eval": 50,
                              "num_variance_estimate": 300}}


def _quadrant_means(images):
    """A cheap 4-dim representation: mean intensity of each image quadrant, (b, 4)."""
    b = len(images)
    return images[..., 0].reshape(b, 2, 32, 2, 32).mean(axis=(2, 4)).reshape(b, 4)


def _settings(names, shared=True, seed=0):
    settings = metrics_lib.resolve_settings(names, seed, shared_sample=shared)
    for name in names:
        settings[name].update(SIZES.get(name, {}))
    return settings


def test_the_shared_sample_is_a_prefix_whatever_its_size():
    data = dsprites.DSprites(source="procedural")
    small = metrics_lib.draw_shared_sample(data, _quadrant_means, 300, seed=4)
    large = metrics_lib.draw_shared_sample(data, _quadrant_means, 700, seed=4)
    assert small[0].shape == (300, 5) and large[1].shape == (700, 4)
    np.testing.assert_array_equal(small[0], large[0][:300])
    np.testing.assert_array_equal(small[1], large[1][:300])
    other = metrics_lib.draw_shared_sample(data, _quadrant_means, 300, seed=5)
    assert not np.array_equal(small[0], other[0])


@pytest.mark.slow
def test_shared_metrics_read_their_rows_of_one_sample_and_do_not_depend_on_the_others():
    data = dsprites.DSprites(source="procedural")
    names = ["mig", "dci", "sap", "infomec", "factor_vae_score"]
    settings = _settings(names)
    assert {settings[n]["sample"] for n in names} == {"shared"}
    assert metrics_lib.shared_rows(settings) == 600
    calls = []

    def counting(images):
        calls.append(len(images))
        return _quadrant_means(images)

    scores = metrics_lib.evaluate(data, counting, 0, names, settings=settings)
    assert sum(calls) == 768          # 600 rows in whole chunks of 256, encoded once
    alone = metrics_lib.evaluate(data, _quadrant_means, 0, ["dci"],
                                 settings={"dci": settings["dci"]})
    assert alone["dci"] == scores["dci"]
    f, z = metrics_lib.draw_shared_sample(data, _quadrant_means, 600, seed=0)
    by_hand = dci.dci_from_codes(f[:300], z[:300], f[300:500], z[300:500],
                                 metrics_lib.metric_rng(0, "dci"), "hist_gbt", 2)
    assert by_hand == scores["dci"]
    infomec = metrics_lib.METRICS["infomec"].from_codes(
        f[:400], z[:400], metrics_lib.metric_rng(0, "infomec"), settings["infomec"])
    assert infomec == scores["infomec"]


def test_own_samples_stay_available_and_intervention_scores_without_a_pool_stay_own():
    settings = _settings(["mig", "factor_vae_score"], shared=False)
    assert {v["sample"] for v in settings.values()} == {"own"}
    settings = metrics_lib.resolve_settings(["factor_vae_score", "mig"], 0, shared_sample=True)
    settings["factor_vae_score"]["pool_size"] = None
    assert metrics_lib.rows_needed("factor_vae_score", settings["factor_vae_score"]) is None
    assert metrics_lib.shared_rows(settings) == 10000
    fresh = metrics_lib.resolve_settings(["factor_vae_score"], 0, shared_sample=True)
    assert fresh["factor_vae_score"]["sample"] == "shared"
    assert "sample" in metrics_lib.NOT_COMPARED


def test_a_short_sample_or_a_bad_representation_is_a_clear_error():
    data = dsprites.DSprites(source="procedural")
    settings = _settings(["mig", "sap"])
    short = metrics_lib.draw_shared_sample(data, _quadrant_means, 400, seed=0)
    with pytest.raises(ValueError, match="has 400 rows, the metrics need 500"):
        metrics_lib.evaluate(data, _quadrant_means, 0, ["mig", "sap"], settings=settings,
                             sample=short)

    def flat(images):
        return np.zeros(len(images))

    with pytest.raises(codes_lib.MetricInputError, match="expected codes of shape"):
        metrics_lib.evaluate(data, flat, 0, ["mig"], settings=_settings(["mig"]))
    recorded = metrics_lib.evaluate(data, flat, 0, ["mig", "sap"], settings=settings,
                                    record_errors=True)
    assert set(recorded) == {"mig", "sap"}
    assert all("expected codes of shape" in r["error"] for r in recorded.values())


def test_tied_columns_finds_copies_and_monotone_functions_of_a_dim():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3))
    codes = np.c_[z, 3 * z[:, 0] + 1, -z[:, 1], np.exp(z[:, 2]), z[:, 0] + 1e-3 * z[:, 1]]
    assert dci.tied_columns(codes) == [[0, 3], [1, 4], [2, 5], [6]]


def test_dci_shares_a_copied_dims_credit_evenly():
    rng = np.random.default_rng(1)
    f = np.stack([rng.integers(0, s, 900) for s in (4, 6)], axis=1)
    z = f + rng.normal(0, 0.3, f.shape)
    copied = np.c_[z, 2 * z[:, 0] - 1]
    importance, _, _ = dci.importance_matrix(f[:600], copied[:600], f[600:], copied[600:],
                                             np.random.default_rng(0), "hist_gbt", n_jobs=1)
    np.testing.assert_allclose(importance[0], importance[2], rtol=1e-12)
    assert importance[0, 0] > 0.3
    single, _, _ = dci.importance_matrix(f[:600], z[:600], f[600:], z[600:],
                                         np.random.default_rng(0), "hist_gbt", n_jobs=1)
    np.testing.assert_allclose(importance[0] * 2, single[0], rtol=1e-12)
