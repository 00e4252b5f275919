"""Pre-registered hypotheses: validation, the tests they name, and the study/gin route."""

import gin
import numpy as np
import pytest
from scipy import stats as sp

from benchmark import hypotheses, stats, study

DATA = {("beta_vae", "original"): [0.30, 0.32, 0.28, 0.31],
        ("beta_vae", "modified"): [0.10, 0.12, 0.08, 0.11],
        ("beta_vae", "noisy"): [0.25, 0.27, 0.26, 0.24],
        ("pcl", "original"): [0.20, 0.21, 0.19, 0.20],
        ("pcl", "modified"): [0.20, 0.20, 0.21, 0.19],
        ("ae", "original"): [0.05]}
DECLARED = [
    {"id": "H1", "test": "drop", "model": "beta_vae", "dataset": "dsprites"},
    {"id": "H2", "test": "equivalence", "model": "pcl", "dataset": "dsprites",
     "margin_of": "beta_vae"},
    {"id": "H3", "test": "drop_difference", "model": "beta_vae", "dataset": "dsprites",
     "family": "secondary"},
]


def _values(model, dataset, variant, setting, metric):
    assert (dataset, setting, metric) == ("dsprites", "", "MIG")
    return DATA.get((model, variant), [])


def test_normalise_fills_defaults_and_rejects_malformed_hypotheses():
    h1, h2, h3 = hypotheses.normalise(DECLARED)
    assert (h1["variant"], h1["metric"], h1["alpha"], h1["family"]) == (
        "modified", "MIG", 0.05, "primary")
    assert h2["margin_fraction"] == 0.5 and h3["versus"] == "noisy"
    assert h1["claim"] == "beta_vae MIG on dsprites drops on modified data"
    assert hypotheses.normalise(None) == []
    bad = [({"test": "drop", "model": "m", "dataset": "d"}, "'id' is required"),
           ({"id": "H", "test": "bigger", "model": "m", "dataset": "d"}, "test must be"),
           ({"id": "H", "test": "drop", "model": "m", "dataset": "d", "colour": 1},
            "unknown fields"),
           ({"id": "H", "test": "equivalence", "model": "m", "dataset": "d"}, "exactly one"),
           ({"id": "H", "test": "equivalence", "model": "m", "dataset": "d", "margin": 0},
            "margin must be > 0"),
           ({"id": "H", "test": "drop", "model": "m", "dataset": "d", "alpha": 2}, "alpha")]
    for h, message in bad:
        with pytest.raises(ValueError, match=message):
            hypotheses.normalise([h])
    with pytest.raises(ValueError, match="unique"):
        hypotheses.normalise([DECLARED[0], DECLARED[0]])
    with pytest.raises(ValueError, match="mixes alpha"):
        hypotheses.normalise([DECLARED[0], {**DECLARED[1], "alpha": 0.01}])


def test_evaluate_known_answers_against_scipy():
    rows = {r["id"]: r for r in hypotheses.evaluate(hypotheses.normalise(DECLARED), _values)}
    bo, bm, bn = (DATA[("beta_vae", v)] for v in ("original", "modified", "noisy"))
    p1 = sp.ttest_ind(bo, bm, equal_var=False, alternative="greater").pvalue
    assert rows["H1"]["p"] == pytest.approx(p1)
    assert rows["H1"]["estimate"] == pytest.approx(np.mean(bo) - np.mean(bm))
    # the (1 - 2 alpha) interval of a one-sided test: its lower end clears 0 iff p < alpha
    t = sp.ttest_ind(bo, bm, equal_var=False)
    low, _ = t.confidence_interval(0.90)
    assert rows["H1"]["ci_low"] == pytest.approx(low)
    margin = 0.5 * (np.mean(bo) - np.mean(bm))
    assert rows["H2"]["margin"] == pytest.approx(margin)
    po, pm = DATA[("pcl", "original")], DATA[("pcl", "modified")]
    p2 = max(sp.ttest_ind(np.add(po, margin), pm, equal_var=False, alternative="greater").pvalue,
             sp.ttest_ind(np.subtract(po, margin), pm, equal_var=False,
                          alternative="less").pvalue)
    assert rows["H2"]["p"] == pytest.approx(p2)
    # H1 and H2 form the primary family: Holm over both; H3 is alone in its family
    assert [rows["H1"]["p_holm"], rows["H2"]["p_holm"]] == pytest.approx(
        list(stats.holm([p1, p2])))
    p3 = sp.ttest_ind(bn, bm, equal_var=False, alternative="greater").pvalue
    assert rows["H3"]["p"] == pytest.approx(p3) and rows["H3"]["p_holm"] == pytest.approx(p3)
    assert all(r["outcome"] == "supported" for r in rows.values())


def test_evaluate_outcomes_not_supported_and_not_testable():
    declared = hypotheses.normalise([
        {"id": "N", "test": "drop", "model": "pcl", "dataset": "dsprites"},
        {"id": "U", "test": "drop", "model": "ae", "dataset": "dsprites"},
        {"id": "E", "test": "equivalence", "model": "beta_vae", "dataset": "dsprites",
         "margin": 0.01}])
    rows = {r["id"]: r for r in hypotheses.evaluate(declared, _values)}
    assert rows["N"]["outcome"] == "not supported"
    assert rows["U"]["outcome"].startswith("not testable: 0 kept ae run(s) on modified")
    assert rows["U"]["p"] is None and rows["U"]["p_holm"] is None
    # a fixed equivalence margin is registered, so it is shown before the test can run
    waiting = hypotheses.evaluate(hypotheses.normalise([
        {"id": "W", "test": "equivalence", "model": "ae", "dataset": "dsprites",
         "margin": 0.08}]), _values)[0]
    assert waiting["outcome"].startswith("not testable") and waiting["margin"] == 0.08
    assert rows["E"]["outcome"] == "not supported" and rows["E"]["margin"] == 0.01
    # Holm over the family's three registered hypotheses: the untested one counts as
    # p = 1, so it does not make the others' correction milder
    assert rows["N"]["p_holm"] == pytest.approx(stats.holm([rows["N"]["p"], rows["E"]["p"],
                                                           1.0])[0])
    pair = {r["id"]: r for r in hypotheses.evaluate(hypotheses.normalise(
        [DECLARED[0], {"id": "U", "test": "drop", "model": "ae", "dataset": "dsprites"}]),
        _values)}
    assert pair["H1"]["p_holm"] == pytest.approx(2 * pair["H1"]["p"])     # m = 2, not 1


def test_study_settings_record_hypotheses_from_gin(tmp_path):
    gin.clear_config()
    try:
        gin.parse_config([
            "study.name = 'h'", f"study.output_dir = '{tmp_path}'",
            "study.models = {'beta_vae': 'a.gin', 'pcl': 'b.gin'}",
            "study.variants = ['original', 'modified', 'noisy']",
            "study.artefacts = {'dsprites': {'modified': 'art'}}",
            "study.hypotheses = [{'id': 'H1', 'test': 'drop', 'model': 'beta_vae', "
            "'dataset': 'dsprites'}, {'id': 'H2', 'test': 'equivalence', 'model': 'pcl', "
            "'dataset': 'dsprites', 'margin': 0.02}]"])
        settings = study.study_settings()
    finally:
        gin.clear_config()
    assert [h["id"] for h in settings["hypotheses"]] == ["H1", "H2"]
    assert settings["hypotheses"][1]["margin"] == 0.02
    plain = study.study_settings(name="p", output_dir=str(tmp_path), models={"ae": "a"})
    assert "hypotheses" not in plain              # studies without any keep their settings
    with pytest.raises(ValueError, match=r"H1: model \['vae'\] is not in the study's grid"):
        study.study_settings(name="p", output_dir=str(tmp_path), models={"ae": "a"},
                             hypotheses=[{"id": "H1", "test": "drop", "model": "vae",
                                          "dataset": "dsprites"}])
    with pytest.raises(ValueError, match=r"variant \['modified'\] is not in"):
        study.study_settings(name="p", output_dir=str(tmp_path), models={"ae": "a"},
                             hypotheses=[{"id": "H1", "test": "drop", "model": "ae",
                                          "dataset": "dsprites"}])


def test_greater_compares_two_methods_or_settings_on_one_variant():
    data = {("pcl", "lr=0.001"): [0.09, 0.07, 0.08, 0.10], ("ae", "lr=0.0001"): [0.05, 0.06, 0.04],
            ("ae", "lr=0.001"): [0.06, 0.05, 0.07]}

    def values(model, dataset, variant, setting, metric):
        assert (dataset, variant, metric) == ("dsprites", "original", "MIG")
        return data.get((model, setting), [])

    declared = hypotheses.normalise([
        {"id": "G1", "test": "greater", "model": "pcl", "setting": "lr=0.001",
         "versus_model": "ae", "versus_setting": "lr=0.0001", "dataset": "dsprites"},
        {"id": "G2", "test": "greater", "model": "pcl", "setting": "lr=0.001",
         "versus_model": "ae", "versus_setting": "lr=0.001", "dataset": "dsprites"},
        {"id": "G3", "test": "greater", "model": "pcl", "versus_model": "ae",
         "dataset": "dsprites"}])
    assert declared[0]["variant"] == "original"
    assert declared[0]["claim"] == ("pcl MIG on dsprites (lr=0.001) is higher than "
                                    "ae (lr=0.0001)'s on original data")
    rows = {r["id"]: r for r in hypotheses.evaluate(declared, values)}
    for key, versus in (("G1", "lr=0.0001"), ("G2", "lr=0.001")):
        first, second = data[("pcl", "lr=0.001")], data[("ae", versus)]
        p = sp.ttest_ind(first, second, equal_var=False, alternative="greater").pvalue
        assert rows[key]["p"] == pytest.approx(p)
        assert rows[key]["estimate"] == pytest.approx(np.mean(first) - np.mean(second))
        assert rows[key]["n"] == f"4 / {len(second)}"
        assert "mean(pcl (lr=0.001)) − mean(ae (" in rows[key]["test_name"]
    assert rows["G3"]["outcome"].startswith("not testable: 0 kept pcl run(s) on original")
    with pytest.raises(ValueError, match="needs 'versus_model'"):
        hypotheses.normalise([{"id": "G", "test": "greater", "model": "pcl",
                               "dataset": "dsprites"}])
    with pytest.raises(ValueError, match="belong to a 'greater' test"):
        hypotheses.normalise([{"id": "G", "test": "drop", "model": "pcl",
                               "dataset": "dsprites", "versus_model": "ae"}])
    with pytest.raises(ValueError, match=r"model \['vae'\] is not in the study's grid"):
        hypotheses.check_grid(hypotheses.normalise([
            {"id": "G", "test": "greater", "model": "pcl", "versus_model": "vae",
             "dataset": "dsprites"}]), ["pcl", "ae"], ["dsprites"], ["original"])


def test_noninferiority_bounds_the_extra_drop_against_scipy():
    """drop(modified) − drop(noisy) = mean(noisy) − mean(modified) < margin: scipy's
    one-sided Welch of (noisy − margin) against modified; a small extra drop passes at a
    wide margin and fails at a narrow one, and its 90 % interval's top end says which."""
    data = {"original": [0.30, 0.32, 0.28, 0.31], "modified": [0.24, 0.26, 0.23, 0.25],
            "noisy": [0.25, 0.27, 0.26, 0.24]}

    def values(model, dataset, variant, setting, metric):
        return data.get(variant, [])

    declared = hypotheses.normalise([
        {"id": "N1", "test": "noninferiority", "model": "beta_vae", "dataset": "dsprites",
         "margin": 0.08},
        {"id": "N2", "test": "noninferiority", "model": "beta_vae", "dataset": "dsprites",
         "margin": 0.005, "family": "narrow"}])
    assert declared[0]["claim"] == ("beta_vae MIG on dsprites drops on modified data by less "
                                    "than 0.08 more than on noisy data")
    rows = {r["id"]: r for r in hypotheses.evaluate(declared, values)}
    noisy, modified = np.array(data["noisy"]), np.array(data["modified"])
    for key, margin, outcome in (("N1", 0.08, "supported"), ("N2", 0.005, "not supported")):
        p = sp.ttest_ind(noisy - margin, modified, equal_var=False, alternative="less").pvalue
        assert rows[key]["p"] == pytest.approx(p)
        assert rows[key]["estimate"] == pytest.approx(noisy.mean() - modified.mean())
        assert rows[key]["margin"] == margin and rows[key]["outcome"] == outcome
        assert (rows[key]["ci_high"] < margin) == (outcome == "supported")
    hypotheses.check_grid(declared, ["beta_vae"], ["dsprites"], ["original", "modified"] +
                          ["noisy@0.1"])
    with pytest.raises(ValueError, match=r"variant \['noisy'\]"):
        hypotheses.check_grid(declared, ["beta_vae"], ["dsprites"], ["original", "modified"])
    for bad, message in (({}, "needs 'margin'"), ({"margin_of": "pcl"}, "needs 'margin'"),
                         ({"margin": -0.1}, "number > 0"), ({"margin": "0.1"}, "number > 0")):
        with pytest.raises(ValueError, match=message):
            hypotheses.normalise([{"id": "N", "test": "noninferiority", "model": "m",
                                   "dataset": "d", **bad}])
