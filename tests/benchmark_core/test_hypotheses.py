"""Pre-registered hypotheses: validation, the tests they name, and the study/gin route."""

import gin
import numpy as np
import pytest
from scipy import stats as sp

from benchmark.statistics import hypotheses, stats
from benchmark.studies import study

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
    assert [h["id"] for h in settings.hypotheses] == ["H1", "H2"]
    assert settings.hypotheses[1]["margin"] == 0.02
    assert settings.record()["hypotheses"] == list(settings.hypotheses)
    plain = study.study_settings(name="p", output_dir=str(tmp_path), models={"ae": "a"})
    assert "hypotheses" not in plain.record()     # studies without any keep their settings
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


FLOORED = {("beta_vae", "original"): [0.10, 0.12, 0.08, 0.11],     # at the AE's level
           ("beta_vae", "modified"): [0.02, 0.03, 0.01, 0.02],
           ("beta_vae", "noisy"): [0.09, 0.10, 0.08, 0.11],
           ("pcl", "original"): [0.50, 0.52, 0.48, 0.51],
           ("pcl", "modified"): [0.49, 0.51, 0.50, 0.50],
           ("ae", "original"): [0.11, 0.09, 0.12, 0.10]}


def _floored(model, dataset, variant, setting, metric):
    return FLOORED.get((model, variant), [])


def test_a_model_at_its_floor_is_untestable_never_supported_or_not():
    declared = hypotheses.normalise([
        {"id": "D", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
         "floor": "ae"},
        {"id": "X", "test": "drop_difference", "model": "beta_vae", "dataset": "dsprites",
         "floor": "ae"},
        {"id": "E", "test": "equivalence", "model": "pcl", "dataset": "dsprites",
         "floor": "ae", "margin_headroom": 0.3},
        {"id": "N", "test": "noninferiority", "model": "pcl", "dataset": "dsprites",
         "versus": "original", "floor": "ae", "margin_headroom": 0.3},
        {"id": "P", "test": "drop", "model": "beta_vae", "dataset": "dsprites"}])
    rows = {r["id"]: r for r in hypotheses.evaluate(declared, _floored)}
    # beta_vae's drop is large (p < 0.001 ungated) but it has nothing to lose: untestable
    assert rows["P"]["outcome"] == "supported"
    for key in ("D", "X"):
        assert rows[key]["outcome"].startswith("untestable at this scale: beta_vae MIG on "
                                               "original 0.102 is not above the ae floor "
                                               "0.105"), rows[key]["outcome"]
        assert rows[key]["p"] is None and rows[key]["p_holm"] is None
    floor_p = sp.ttest_ind(FLOORED[("beta_vae", "original")], FLOORED[("ae", "original")],
                           equal_var=False, alternative="greater").pvalue
    assert rows["D"]["floor_p"] == pytest.approx(floor_p) and floor_p > 0.5
    # PCL is far above the floor: tested, with its margin from the headroom (0.3 x 0.398)
    headroom = np.mean(FLOORED[("pcl", "original")]) - np.mean(FLOORED[("ae", "original")])
    assert rows["E"]["margin"] == pytest.approx(0.3 * headroom)
    assert rows["E"]["outcome"] == "supported" and rows["E"]["floor_p"] < 1e-4
    assert rows["N"]["margin"] == pytest.approx(0.3 * headroom)
    assert "0.3 of the headroom above ae" in rows["N"]["test_name"]
    # Holm over the family: the two untestable hypotheses count as p = 1
    assert rows["E"]["p_holm"] == pytest.approx(stats.holm(
        [1.0, 1.0, rows["E"]["p"], rows["N"]["p"], rows["P"]["p"]])[2])


def test_floor_fields_are_checked_before_a_study_runs():
    bad = [({"floor": "ae", "test": "greater", "versus_model": "ae"}, "belongs to the drop"),
           ({"floor": "beta_vae"}, "floor must name another model"),
           ({"floor": ""}, "floor must name another model"),
           ({"margin_headroom": 0.3}, "which it needs"),
           ({"test": "equivalence", "floor": "ae", "margin_headroom": 1.5}, r"in \(0, 1\]"),
           ({"test": "equivalence", "floor": "ae", "margin_headroom": 0.3, "margin": 0.1},
            "give one of")]
    for extra, message in bad:
        h = {"id": "H", "test": "drop", "model": "beta_vae", "dataset": "d", **extra}
        with pytest.raises(ValueError, match=message):
            hypotheses.normalise([h])
    h = hypotheses.normalise([{"id": "H", "test": "drop", "model": "beta_vae",
                               "dataset": "d", "floor": "ae"}])
    with pytest.raises(ValueError, match=r"model \['ae'\] is not in the study's grid"):
        hypotheses.check_grid(h, ["beta_vae"], ["d"], ["original", "modified"])
    with pytest.raises(ValueError, match=r"model 'ae' is not trained on \['original'\]"):
        hypotheses.check_grid(h, ["beta_vae", "ae"], ["d"], ["original", "modified"],
                              {"ae": ["modified"]})
    hypotheses.check_grid(h, ["beta_vae", "ae"], ["d"], ["original", "modified"],
                          {"ae": ["original"]})


def test_a_higher_is_worse_metric_is_named_and_gated_in_its_own_direction():
    """On misalignment (degrees, higher is worse) a 'drop' is a rise: the claim says so,
    the floor gate reads 'below' with the means in degrees, and 'greater' (which reads
    higher as better) is refused; a metric the report has no column for, or misalignment
    without a battery plane, is refused before any run trains."""
    declared = hypotheses.normalise([
        {"id": "M", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
         "variant": "naive", "metric": "misalignment", "floor": "ae"}])
    assert declared[0]["claim"] == ("beta_vae misalignment on dsprites (higher is worse) "
                                    "rises on naive data")
    degrees = {("beta_vae", "original"): [20.0, 22.0, 18.0],
               ("ae", "original"): [10.0, 11.0, 9.0], ("beta_vae", "naive"): [30.0] * 3}

    def negated(model, dataset, variant, setting, metric):      # as the report reads them
        return [-v for v in degrees.get((model, variant), [])]
    (row,) = hypotheses.evaluate(declared, negated)
    assert row["test_name"].endswith(
        "on −misalignment (higher is worse: the alternative is that it rises)")
    assert row["outcome"].startswith("untestable at this scale: beta_vae misalignment on "
                                     "original 20.000 is not below the ae floor 10.000")
    with pytest.raises(ValueError, match="where higher is worse"):
        hypotheses.normalise([{"id": "G", "test": "greater", "model": "beta_vae",
                               "versus_model": "ae", "dataset": "dsprites",
                               "metric": "misalignment"}])
    base = dict(name="s", output_dir="/tmp/unused", models={"beta_vae": "b.gin"},
                variants=["original", "noisy@0.1"])
    for metric, battery, message in (
            ("SAP score", None, "expected a metric among MIG"),
            ("misalignment", None, "set study.battery with a 'plane'")):
        with pytest.raises(ValueError, match=message):
            study.study_settings(**base, battery=battery, hypotheses=[
                {"id": "H", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
                 "variant": "noisy", "metric": metric}])
    found = study.study_settings(
        **base, battery={"manipulated": "noisy@0.1", "controls": [], "plane": [0, 1]},
        hypotheses=[{"id": "H", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
                     "variant": "noisy", "metric": "misalignment"}])
    assert found.hypotheses[0]["metric"] == "misalignment"


def test_the_report_shows_each_validity_gate_beside_the_hypotheses_it_gates():
    from benchmark.studies import report_sections

    declared = hypotheses.normalise([
        {"id": "D", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
         "floor": "ae"},
        {"id": "X", "test": "drop_difference", "model": "beta_vae", "dataset": "dsprites",
         "floor": "ae"},
        {"id": "E", "test": "equivalence", "model": "pcl", "dataset": "dsprites",
         "floor": "ae", "margin_headroom": 0.3},
        {"id": "P", "test": "drop", "model": "beta_vae", "dataset": "dsprites"}])
    rows = hypotheses.evaluate(declared, _floored)
    lines = report_sections.gate_lines(rows)
    beta = next(line for line in lines if "of D, X:" in line)
    assert "beta_vae MIG on original above the ae floor by -0.003" in beta
    assert beta.endswith("not passed: 'untestable at this scale'.")
    pcl = next(line for line in lines if "of E:" in line)
    assert "above the ae floor by +0.397" in pcl and pcl.endswith("could be tested.")
    assert not any("P" in line.split(":")[0] for line in lines)     # P has no gate
    assert report_sections.gate_lines([r for r in rows if r["id"] == "P"]) == []


def test_a_gate_line_reads_in_the_metric_direction_and_per_dataset():
    """On misalignment a passed gate says how far below the floor the model lies, as a
    positive number; gates on two datasets are two lines, each with its own numbers."""
    from benchmark.studies import report_sections

    degrees = {("a", "beta_vae", "original"): [10.0, 11.0, 9.0],
               ("a", "ae", "original"): [30.0, 31.0, 29.0],
               ("b", "beta_vae", "original"): [20.0, 21.0, 19.0],
               ("b", "ae", "original"): [21.0, 22.0, 20.0],
               ("a", "beta_vae", "naive"): [12.0] * 3, ("b", "beta_vae", "naive"): [22.0] * 3}

    def negated(model, dataset, variant, setting, metric):
        return [-v for v in degrees.get((dataset, model, variant), [])]
    declared = hypotheses.normalise([
        {"id": id_, "test": "drop", "model": "beta_vae", "dataset": dataset,
         "variant": "naive", "metric": "misalignment", "floor": "ae"}
        for id_, dataset in (("A", "a"), ("B", "b"))])
    lines = report_sections.gate_lines(hypotheses.evaluate(declared, negated))
    a = next(line for line in lines if "of A:" in line)
    b = next(line for line in lines if "of B:" in line)
    assert "beta_vae on a misalignment on original below the ae floor by +20.000" in a
    assert a.endswith("could be tested.")
    assert "beta_vae on b misalignment on original below the ae floor by +1.000" in b
    assert b.endswith("'untestable at this scale'.")


SEEDED = {("beta_vae", "original"): {0: 0.50, 1: 0.20, 2: 0.60, 3: 0.30, 4: 0.45},
          ("beta_vae", "naive"): {0: 0.45, 1: 0.14, 2: 0.57, 3: 0.22, 4: 0.44, 9: 0.9},
          ("beta_vae", "noisy"): {0: 0.20, 1: 0.55, 2: 0.35, 3: 0.62, 4: 0.41}}


def _seeded(model, dataset, variant, setting, metric, seeds=False):
    found = SEEDED.get((model, variant), {})
    return dict(found) if seeds else list(found.values())


def test_a_paired_hypothesis_is_a_paired_t_over_the_shared_seeds():
    """A variant that follows the original seed by seed: a small consistent drop that
    Welch across seeds cannot see, the paired test can (scipy's ttest_rel numbers)."""
    declared = hypotheses.normalise([
        {"id": "W", "test": "drop", "model": "beta_vae", "dataset": "d", "variant": "naive"},
        {"id": "P", "test": "drop", "model": "beta_vae", "dataset": "d", "variant": "naive",
         "paired": True},
        {"id": "Q", "test": "drop_difference", "model": "beta_vae", "dataset": "d",
         "variant": "naive", "versus": "noisy", "paired": True}])
    rows = {r["id"]: r for r in hypotheses.evaluate(declared, _seeded)}
    shared = [0, 1, 2, 3, 4]                      # seed 9 has no original: left out
    original = [SEEDED[("beta_vae", "original")][s] for s in shared]
    naive = [SEEDED[("beta_vae", "naive")][s] for s in shared]
    noisy = [SEEDED[("beta_vae", "noisy")][s] for s in shared]
    expected = sp.ttest_rel(original, naive, alternative="greater").pvalue
    assert rows["P"]["p"] == pytest.approx(expected) and rows["P"]["p"] < 0.01
    assert rows["P"]["n"] == "5 pairs" and "paired t" in rows["P"]["test_name"]
    assert rows["P"]["estimate"] == pytest.approx(np.mean(np.subtract(original, naive)))
    assert rows["W"]["p"] > 0.3                 # the same data, unpaired
    assert rows["Q"]["p"] == pytest.approx(
        sp.ttest_rel(noisy, naive, alternative="greater").pvalue)
    low, high = rows["P"]["ci_low"], rows["P"]["ci_high"]    # 90 %: clears 0 as p < 0.05
    assert low > 0 and low < rows["P"]["estimate"] < high


def test_paired_is_checked_and_needs_two_shared_seeds():
    for bad, message in (({"paired": "yes"}, "True or False"),
                         ({"paired": True, "test": "equivalence", "margin": 0.1},
                          "applies to the 'drop' and 'drop_difference'")):
        with pytest.raises(ValueError, match=message):
            hypotheses.normalise([{"id": "B", "test": "drop", "model": "m", "dataset": "d",
                                   **bad}])
    declared = hypotheses.normalise([{"id": "P", "test": "drop", "model": "beta_vae",
                                      "dataset": "d", "variant": "alone", "paired": True}])
    SEEDED[("beta_vae", "alone")] = {7: 0.1, 8: 0.2}
    try:
        row = hypotheses.evaluate(declared, _seeded)[0]
    finally:
        del SEEDED[("beta_vae", "alone")]
    assert row["outcome"] == ("not testable: 0 seed(s) with kept beta_vae runs on both "
                              "original and alone data (a paired test needs 2)")


def test_the_report_pairs_runs_by_their_seed_and_refuses_two_runs_of_one_seed():
    from benchmark.studies import report_sections
    from benchmark.studies.report_data import ReportError

    def runs(scores):
        return [{"seed": s, "values": {"MIG": v}} for s, v in scores.items()]

    groups = {("beta_vae", "dsprites", "original", ""): runs(SEEDED[("beta_vae", "original")]),
              ("beta_vae", "dsprites", "naive", ""): runs(SEEDED[("beta_vae", "naive")])}
    study = {"settings": {"hypotheses": [
        {"id": "P", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
         "variant": "naive", "paired": True}]}}
    row = report_sections.hypothesis_rows(study, groups)[0]
    assert row["n"] == "5 pairs" and row["outcome"] == "supported"
    assert "paired t interval" in report_sections.hypothesis_lines([row], study)[2]
    groups[("beta_vae", "dsprites", "naive", "")].append({"seed": 0, "values": {"MIG": 0.1}})
    with pytest.raises(ReportError, match="two kept runs of seed 0"):
        report_sections.hypothesis_rows(study, groups)
