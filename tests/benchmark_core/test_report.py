import csv
import json

import numpy as np
import pytest
from scipy import stats

from benchmark.studies import report, report_data, report_figures, report_sections


def _result(path, model, variant, seed, mig, dci, overpruned=False, eps=None):
    dataset = {"name": "dsprites", "variant": variant}
    if eps is not None:
        dataset["eps"] = eps
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({
        "schema_version": 1, "model": model, "seed": seed, "dataset": dataset,
        "metrics": {"mig": {"mig": mig}, "dci": {"dci_disentanglement": dci},
                    "health": {"overpruned": overpruned, "active_units": 5}},
        "gin_config": ""}))


ORIGINAL = [0.30, 0.25, 0.35, 0.28]
MODIFIED = [0.10, 0.05, 0.12]


@pytest.fixture
def study(tmp_path):
    root = tmp_path / "study"
    for i, v in enumerate(ORIGINAL):
        _result(root / "runs" / f"bvae_o{i}", "beta_vae", "original", i, v, 0.5 + v)
    for i, v in enumerate(MODIFIED):
        _result(root / "runs" / f"bvae_m{i}", "beta_vae", "modified", i, v, 0.4, eps=0.1)
    _result(root / "runs" / "bvae_m_pruned", "beta_vae", "modified", 9, 0.9, 0.9,
            overpruned=True, eps=0.1)
    _result(root / "runs" / "bvae_eps", "beta_vae", "modified", 0, 0.02, 0.3, eps=0.3)
    (root / "runs" / "unfinished" / "checkpoints").mkdir(parents=True)   # no results.json
    return root


def test_means_drops_and_p_values_match_scipy(study):
    groups, excluded = report_data.group(report_data.load_runs(study))
    assert excluded == {("beta_vae", "dsprites", "modified", ""): 1}
    rows = {(r["variant"]): r for r in report_data.summary_rows(groups, excluded)}
    assert set(rows) == {"original", "modified", "modified@0.3"}
    assert rows["original"]["MIG mean"] == pytest.approx(np.mean(ORIGINAL))
    assert rows["original"]["MIG std"] == pytest.approx(np.std(ORIGINAL, ddof=1))
    assert rows["modified"]["seeds"] == 3 and rows["modified"]["excluded_overpruned"] == 1
    drops = {(d["variant"], d["metric"]): d for d in report_data.drop_rows(groups)}
    mig = drops[("modified", "MIG")]
    assert mig["drop"] == pytest.approx(np.mean(ORIGINAL) - np.mean(MODIFIED))
    assert mig["p_welch"] == pytest.approx(
        stats.ttest_ind(ORIGINAL, MODIFIED, equal_var=False).pvalue)
    low, high = stats.ttest_ind(ORIGINAL, MODIFIED, equal_var=False).confidence_interval()
    assert (mig["ci_low"], mig["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert mig["ci_method"] == "welch-t"                # t interval, no bootstrap at n = 3
    assert mig["n_original"] == 4 and mig["n_other"] == 3
    single = drops[("modified@0.3", "MIG")]           # one run: no test, never a made-up p
    assert single["p_welch"] is None and single["ci_low"] is None


def test_report_files(study, tmp_path):
    path = report.write_report(study, tmp_path / "out")
    text = path.read_text()
    assert "9 finished runs" in text
    assert "1 excluded as over-pruned" in text
    assert f"{np.mean(ORIGINAL):.2f} ± {np.std(ORIGINAL, ddof=1):.2f} (4)" in text
    assert "| 0.02 (1) |" in text                       # one seed: no made-up ± 0.00
    p = stats.ttest_ind(ORIGINAL, MODIFIED, equal_var=False).pvalue
    assert (f"| beta_vae | dsprites | {np.mean(ORIGINAL):.3f} ± {np.std(ORIGINAL, ddof=1):.3f}"
            f" (4) | {np.mean(MODIFIED):.3f} ± {np.std(MODIFIED, ddof=1):.3f} (3; 1 over-pruned "
            "excluded) | 0.020 (1) | "
            f"{np.mean(ORIGINAL) - np.mean(MODIFIED):+.3f} (p {report_sections._p(p)}) | "
            "+0.275 (p n/a) | "
            "0.23 ± 0.08 / 0.07 ± 0.09 / 0.14 ± 0.07 |") in text    # headline beside paper 002
    # Every arm the study ran is a column, at any strength; none it did not run.
    assert ("| original | modified | modified@0.3 | drop → modified | drop → modified@0.3 "
            "| paper 002") in text
    assert text.index("## MIG: original") < text.index("## MIG\n")
    assert "unfinished" not in text
    for name in ("metrics.csv", "drops.csv", "metrics.tex", "drops.tex",
                 "figures/drops_mig.png", "figures/robustness_mig.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    with pytest.raises(report_data.ReportError, match="no finished run"):
        report.write_report(study / "runs" / "unfinished", tmp_path / "o2")
    (study / "runs" / "broken").mkdir()
    (study / "runs" / "broken" / "results.json").write_text("{")
    with pytest.raises(report_data.ReportError, match="broken"):
        report.write_report(study, tmp_path / "o3")


def test_line_search_settings_become_groups_and_a_curve(tmp_path):
    root = tmp_path / "fig5"
    (root / "runs").mkdir(parents=True)
    (root / "study.json").write_text(json.dumps({"settings": {
        "line_search": {"beta_vae": ["beta_vae.beta", [1, 8]]}}}))
    migs = {1: [0.10, 0.12], 8: [0.30, 0.26]}
    for beta, values in migs.items():
        for seed, mig in enumerate(values):
            path = root / "runs" / f"beta_vae_beta={beta}_seed{seed}"
            _result(path, "beta_vae", "original", seed, mig, 0.5)
            result = json.loads((path / "results.json").read_text())
            result["gin_config"] = f"beta_vae.beta = {beta}\nrun.seed = {seed}\n"
            (path / "results.json").write_text(json.dumps(result))
    groups, _ = report_data.group(report_data.load_runs(root))
    assert set(groups) == {("beta_vae", "dsprites", "original", "beta=1"),
                           ("beta_vae", "dsprites", "original", "beta=8")}
    rows = report_data.summary_rows(groups, {})
    beta8 = next(r for r in rows if r["setting"] == "beta=8")
    assert beta8["MIG mean"] == pytest.approx(np.mean(migs[8]))
    text = report.write_report(root, tmp_path / "out").read_text()
    assert "figures/line_search_mig.png" in text
    assert (tmp_path / "out" / "figures" / "line_search_mig.png").stat().st_size > 0


def test_drop_p_values_are_also_adjusted_per_metric(tmp_path):
    root = tmp_path / "many"
    originals = {"a": [0.30, 0.32, 0.31], "b": [0.20, 0.25, 0.22], "c": [0.1, 0.12, 0.11]}
    modified = {"a": [0.10, 0.12, 0.11], "b": [0.19, 0.24, 0.20], "c": [0.1, 0.13, 0.09]}
    for model in originals:
        for seed in range(3):
            _result(root / "runs" / f"{model}_o{seed}", model, "original", seed,
                    originals[model][seed], 0.5)
            _result(root / "runs" / f"{model}_m{seed}", model, "modified", seed,
                    modified[model][seed], 0.5, eps=0.1)
    groups = report_data.group(report_data.load_runs(root))[0]
    drops = [d for d in report_data.drop_rows(groups) if d["metric"] == "MIG"]
    raw = [stats.ttest_ind(originals[d["model"]], modified[d["model"]],
                           equal_var=False).pvalue for d in drops]
    assert [d["p_welch"] for d in drops] == pytest.approx(raw)
    assert [d["p_bh"] for d in drops] == pytest.approx(stats.false_discovery_control(raw))
    assert all(d["p_bh"] >= d["p_welch"] for d in drops)


def test_overpruning_is_an_outcome_per_arm(study):
    groups, excluded = report_data.group(report_data.load_runs(study))
    rows = {r["variant"]: r for r in report_sections.overpruning_rows(groups, excluded)}
    assert list(rows) == ["original", "modified", "modified@0.3"]
    assert (rows["modified"]["runs"], rows["modified"]["overpruned"]) == (4, 1)
    assert rows["modified"]["rate"] == 0.25 and rows["original"]["p_fisher"] is None
    assert rows["modified"]["p_fisher"] == pytest.approx(
        stats.fisher_exact([[0, 4], [1, 3]]).pvalue)
    text = "\n".join(report_sections.overpruning_lines(list(rows.values())))
    assert "| beta_vae | dsprites | modified |  | 4 | 1 | 25% | 1.000 |" in text
    assert "No run is over-pruned" in "\n".join(report_sections.overpruning_lines(
        [{**r, "overpruned": 0} for r in rows.values()]))
    unmeasured = "\n".join(report_sections.overpruning_lines(
        [{**r, "overpruned": 0} for r in rows.values()], unknown_health=3))
    assert "No run is over-pruned" not in unmeasured
    assert "unknown for 3 run(s)" in unmeasured and "No run whose health was measured" in unmeasured


def test_power_statement_of_the_headline_drops(study):
    from benchmark.statistics import stats as ours
    drops = report_data.drop_rows(report_data.group(report_data.load_runs(study))[0])
    (row,) = report_sections.power_rows(drops)         # modified@0.3 has one run: no test
    sd_o, sd_m = np.std(ORIGINAL, ddof=1), np.std(MODIFIED, ddof=1)
    drop = np.mean(ORIGINAL) - np.mean(MODIFIED)
    assert row["seeds_needed"] == ours.seeds_needed(drop, sd_o, 0.05, 0.8, sd_m)
    assert row["power_now"] == pytest.approx(ours.power(drop, sd_o, 4, 0.05, sd_m, 3))
    assert row["seeds_needed"] == 2 and row["power_now"] > 0.9     # a large, clear drop


def test_preregistered_hypotheses_come_first(study, tmp_path):
    declared = [{"id": "H1", "test": "drop", "model": "beta_vae", "dataset": "dsprites"},
                {"id": "H2", "test": "equivalence", "model": "beta_vae",
                 "dataset": "dsprites", "margin": 0.05}]
    settings = {"hypotheses": declared}
    (study / "study.json").write_text(json.dumps({"settings": settings}))
    text = report.write_report(study, tmp_path / "out").read_text()
    assert text.index("## Pre-registered hypotheses") < text.index("## MIG: original")
    p = stats.ttest_ind(ORIGINAL, MODIFIED, equal_var=False, alternative="greater").pvalue
    assert "| H1 | beta_vae MIG on dsprites drops on modified data |" in text
    assert "| H2 |" in text and "±0.050" in text and "not supported |" in text
    assert "Amended" not in text
    rows = list(csv.DictReader((tmp_path / "out" / "hypotheses.csv").open()))
    assert float(rows[0]["p"]) == pytest.approx(p) and rows[0]["outcome"] == "supported"
    assert (tmp_path / "out" / "overpruning.csv").stat().st_size > 0
    (study / "study.json").write_text(json.dumps({"settings": settings,
                                                  "previous_settings": [{}]}))
    text = report.write_report(study, tmp_path / "out2").read_text()
    assert "**Amended:**" in text                       # declared after the study started
    (study / "study.json").write_text(json.dumps({"settings": {"hypotheses": [{"id": "H"}]}}))
    with pytest.raises(report_data.ReportError, match="study.json.*'test' is required"):
        report.write_report(study, tmp_path / "out3")


def test_figures_leave_the_callers_matplotlib_backend_alone(tmp_path):
    import matplotlib

    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        drops = [{"metric": "MIG", "variant": "modified", "dataset": "dsprites",
                  "model": "beta_vae", "setting": "", "drop": 0.2, "ci_low": 0.1,
                  "ci_high": 0.3}]
        assert report_figures.drop_figure(drops, "MIG", tmp_path / "d.png")
        rows = [{"model": "beta_vae", "dataset": "dsprites", "MIG mean": m, "MIG std": 0.1,
                 "x": x} for x, m in ((0.0, 0.3), (0.1, 0.2))]
        assert report_figures.curve_figure(rows, "MIG", lambda r: [(r["x"], "")], "eps",
                                           tmp_path / "c.png")
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)
    for name in ("d.png", "c.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_only_for_eps_sweeps_and_one_drop_sign(study, tmp_path):
    """A variant run at one strength is a bar of the drop chart, never a two-point curve
    beside another variant on one eps axis; 'drop' is positive = worse for every column."""
    records = report_data.load_runs(study)
    assert report_figures.sweeps(records) == {("beta_vae", "dsprites", "modified")}  # 0.1, 0.3
    single = tmp_path / "single"
    for i, v in enumerate(ORIGINAL[:3]):
        _result(single / "runs" / f"o{i}", "beta_vae", "original", i, v, 0.5)
        _result(single / "runs" / f"n{i}", "beta_vae", "noisy", i, v - 0.01, 0.5, eps=0.1)
        _result(single / "runs" / f"m{i}", "beta_vae", "modified", i, v - 0.1, 0.5, eps=0.1)
    records = report_data.load_runs(single)
    assert report_figures.sweeps(records) == set()
    points = report_figures.eps_points(set())
    assert all(points(r) == [] for r in report_data.summary_rows(*report_data.group(records)))
    text = report.write_report(single, tmp_path / "out").read_text()
    figures = tmp_path / "out" / "figures"
    assert (figures / "drops_mig.png").exists() and not (figures / "robustness_mig.png").exists()
    assert "**Scale:** ? training steps per run at batch 64 (default); 3 seeds per group" in text
    assert "positive = worse on the variant" in text
    # A lower-is-better column: a larger loss on the variant is a positive drop.
    groups = {("m", "d", "original", ""): [{"values": {"Recon.": v}} for v in (10., 11., 12.)],
              ("m", "d", "noisy", ""): [{"values": {"Recon.": v}} for v in (20., 21., 22.)]}
    (recon,) = [d for d in report_data.drop_rows(groups) if d["metric"] == "Recon."]
    assert recon["drop"] == pytest.approx(10.0) and recon["ci_low"] > 0


def test_figure_input_rows_name_the_variant():
    from benchmark.runs import figures
    assert figures.input_label({"variant": "original"}) == "input"
    assert figures.input_label({"variant": "noisy", "eps": 0.1}) == "noisy input, ε 0.1"
    assert figures.input_label({"variant": "modified"}) == "modified input"


def test_hypothesis_on_a_variant_run_at_one_non_default_strength(tmp_path):
    """A hypothesis names the base variant ('noisy'); a study that ran it only at eps 0.3
    holds the group 'noisy@0.3', which the hypothesis must find (and only then)."""
    root = tmp_path / "s"
    for i, v in enumerate(ORIGINAL):
        _result(root / "runs" / f"o{i}", "beta_vae", "original", i, v, 0.5)
    for i, v in enumerate(MODIFIED):
        _result(root / "runs" / f"n{i}", "beta_vae", "noisy", i, v, 0.5, eps=0.3)
    declared = [{"id": "H1", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
                 "variant": "noisy"}]
    (root / "study.json").write_text(json.dumps({"settings": {"hypotheses": declared}}))
    (row,) = report_sections.hypothesis_rows(
        report_data.read_study(root), report_data.group(report_data.load_runs(root))[0])
    assert row["outcome"] == "supported"
    assert row["estimate"] == pytest.approx(np.mean(ORIGINAL) - np.mean(MODIFIED))
    _result(root / "runs" / "n9", "beta_vae", "noisy", 9, 0.2, 0.5, eps=0.5)
    (row,) = report_sections.hypothesis_rows(
        report_data.read_study(root), report_data.group(report_data.load_runs(root))[0])
    assert row["outcome"].startswith("not testable")        # two strengths: ambiguous


def test_scale_line_counts_over_pruned_runs_as_seeds():
    """A study whose modified arm is all over-pruned still ran 5 seeds there (the
    shapes3d_contrast_cpu report said '3 seeds per group' for 5 + 5 + 5 runs)."""
    import pandas as pd
    table = pd.DataFrame({"steps": [2000] * 15})
    original = ("beta_vae", "shapes3d", "original", "")
    modified = ("beta_vae", "shapes3d", "modified", "")
    line = report_sections.scale_line(table, {original: [{}] * 3},
                                      {original: 2, modified: 5})
    assert "2,000 training steps" in line and "; 5 seeds per group" in line
    assert "2-5 seeds" in report_sections.scale_line(table, {original: [{}] * 2},
                                                     {modified: 5})


def test_a_flagged_artefact_opens_the_report_as_a_user_calls_it(study, tmp_path):
    """Issue 30 item 3: an arm read from an artefact its own evidence flags (below the
    minimum effect, a failed re-adaptation gate) is said first, from the runs' records and
    from study.json's artefacts; the command is called as a user calls it."""
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    artefact = tmp_path / "artefact"
    artefact.mkdir()
    (artefact / "evidence.json").write_text(json.dumps({"below_minimum_effect": True}))
    (study / "study.json").write_text(json.dumps({"settings": {
        "artefacts": {"dsprites": {"modified": str(artefact)}}}}))
    run = study / "runs" / "bvae_m0" / "results.json"
    record = json.loads(run.read_text())
    record["dataset"]["artefact_warnings"] = ["it failed its re-adaptation gate"]
    run.write_text(json.dumps(record))
    result = subprocess.run(
        [sys.executable, "-m", "benchmark.report", f"--results={study}",
         f"--out={tmp_path / 'out'}"], cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get(
            "PYTHONPATH", "")])})
    assert result.returncode == 0, result.stderr[-2000:]
    text = (tmp_path / "out" / "report.md").read_text()
    section = text[text.index("## Warning: a flagged artefact"):]
    assert text.index("## Warning: a flagged artefact") < text.index("## MIG")
    assert "**modified@0.1**: it failed its re-adaptation gate" in section
    assert f"**modified ({artefact})**: its own diagnostics put it below the minimum" in section
    plain = tmp_path / "plain"
    (study / "study.json").unlink()
    run.write_text(json.dumps({**record, "dataset": {"name": "dsprites",
                                                     "variant": "modified", "eps": 0.1}}))
    assert "flagged artefact" not in report.write_report(study, plain).read_text()


def test_the_report_says_what_the_runs_cost_and_on_which_cpu(study, tmp_path):
    runs = study / "runs"
    for name, wall, ran_on, resumed in (
            ("bvae_o0", 1500.0, {"cpu": "Test EPYC", "cpu_seconds": 780.0}, None),
            ("bvae_o1", 1300.0, {"cpu": "Test EPYC", "cpu_seconds": 720.0}, None),
            ("bvae_o2", 900.0, None, None),                       # from before the record
            ("bvae_o3", 200.0, {"cpu": "Test EPYC", "cpu_seconds": 100.0}, 4000)):
        payload = json.loads((runs / name / "results.json").read_text())
        payload.update(wall_seconds=wall, machine=ran_on, resumed_from=resumed)
        (runs / name / "results.json").write_text(json.dumps(payload))
    rows = {r["model"]: r
            for r in report_sections.compute_rows(report_data.load_runs(study))}
    bvae = rows["beta_vae"]
    assert (bvae["runs"], bvae["resumed"], bvae["timed"]) == (9, 1, 2)       # the over-pruned run included
    assert bvae["wall_minutes"] == pytest.approx((1500 + 1300 + 900) / 3 / 60)
    assert bvae["cpu_minutes"] == pytest.approx(750 / 60) and bvae["cpus"] == ["Test EPYC"]
    text = report.write_report(study, tmp_path / "out").read_text()
    assert "| beta_vae | 9 (1) | 20.6 | 12.5 (2) | Test EPYC |" in text


def test_a_study_scope_opens_the_report(study, tmp_path):
    """Issue 30 item 1: the report opens with what the study can and cannot show."""
    (study / "study.json").write_text(json.dumps({"settings": {
        "scope": "A demonstration at 800 steps; it says nothing about X."}}))
    text = report.write_report(study, tmp_path / "out").read_text()
    assert text.splitlines()[2] == ("**What this study can show:** A demonstration at 800 "
                                    "steps; it says nothing about X.")


def test_each_arms_size_is_listed_and_an_unmeasured_arm_is_named(study, tmp_path):
    """Issue 28 step 6: every report lists, per arm, L∞, mean |Δx| and energy per image
    (what `python -m benchmark.data preview` wrote beside the arm's sample sheet)."""
    (study / "study.json").write_text(json.dumps({"settings": {
        "datasets": ["dsprites"], "variants": ["original", "modified", "noisy@0.2"]}}))
    samples = study / "samples"
    samples.mkdir()
    (samples / "dsprites_modified.change.json").write_text(json.dumps({
        "dataset": "dsprites", "variant": "modified", "eps": 0.1, "linf": 0.1,
        "mean_abs": 0.0123, "energy_per_image": 40.25, "images": 4096}))
    text = report.write_report(study, tmp_path / "out").read_text()
    assert "| dsprites | modified | 0.1000 | 0.1000 | 0.0123 | 40.2 | 4,096 |" in text
    assert "Not measured: dsprites_noisy@0.2" in text
    with open(tmp_path / "out" / "arm_sizes.csv") as f:
        assert [r["energy_per_image"] for r in csv.DictReader(f)] == ["40.25"]
    (samples / "dsprites_modified.change.json").write_text(json.dumps({"dataset": "x"}))
    with pytest.raises(report_data.ReportError,
                       match="dsprites_modified.change.json: expected"):
        report.write_report(study, tmp_path / "again")


def test_noninferiority_hypothesis_in_the_report(tmp_path):
    """The margin reads '< m' (one-sided), not '±m', and the interval's rule is stated."""
    study = tmp_path / "ni"
    for i, v in enumerate(ORIGINAL[:3]):
        _result(study / "runs" / f"o{i}", "beta_vae", "original", i, v, 0.5)
        _result(study / "runs" / f"n{i}", "beta_vae", "noisy", i, v - 0.02, 0.5, eps=0.1)
        _result(study / "runs" / f"m{i}", "beta_vae", "modified", i, v - 0.03, 0.5, eps=0.1)
    (study / "study.json").write_text(json.dumps({"settings": {"hypotheses": [
        {"id": "N1", "test": "noninferiority", "model": "beta_vae", "dataset": "dsprites",
         "margin": 0.2}]}}))
    text = report.write_report(study, tmp_path / "out").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| N1 |"))
    assert "< 0.200" in row and "±" not in row and "| supported |" in row
    assert "lies below the margin (non-inferiority)" in text


def test_two_noise_arms_are_told_apart_by_their_strength(tmp_path):
    """The retraining study's two noise controls: paper 002's noisy@0.1 (its default
    strength, labelled 'noisy') and the energy-matched noisy@0.0473. A hypothesis names
    the matched one in full and the paper's one as 'noisy'; each must find its own arm."""
    root = tmp_path / "s"
    for i, v in enumerate(ORIGINAL):
        _result(root / "runs" / f"o{i}", "beta_vae", "original", i, v, 0.5)
        _result(root / "runs" / f"m{i}", "beta_vae", "modified", i, v - 0.10, 0.5, eps=0.1)
        _result(root / "runs" / f"l{i}", "beta_vae", "noisy", i, v - 0.09, 0.5, eps=0.1)
        _result(root / "runs" / f"e{i}", "beta_vae", "noisy", i, v + 0.02 * i, 0.5,
                eps=0.0473)
    both = [{"id": f"H{i}", "test": "drop_difference", "model": "beta_vae",
             "dataset": "dsprites", "versus": versus}
            for i, versus in enumerate(("noisy@0.0473", "noisy", "noisy@0.1"))]
    (root / "study.json").write_text(json.dumps({"settings": {"hypotheses": both}}))
    matched, paper, named = report_sections.hypothesis_rows(
        report_data.read_study(root), report_data.group(report_data.load_runs(root))[0])
    assert matched["n"] == paper["n"] == "4 / 4"
    # named at its default strength in full (manipulation_ellipse3_cpu's S1), the paper's
    # arm is the same group, not "not testable"
    assert named["n"] == "4 / 4" and named["estimate"] == pytest.approx(paper["estimate"])
    text = report.write_report(root, tmp_path / "out").read_text()
    assert "'noisy' is noisy@0.1 on dsprites (the dataset's default strength, paper 002's)" in text
    from benchmark.data.oracle import ORACLE_EPS
    note = report_sections.label_note([{"dataset": "dsprites",
                                        "variant": f"wave@{ORACLE_EPS:g}"}])
    assert f"'wave' is wave@{ORACLE_EPS:g} on dsprites (the oracle control's default" in note
    matched_means = np.mean(ORIGINAL) + 0.02 * 1.5 - (np.mean(ORIGINAL) - 0.10)
    assert matched["estimate"] == pytest.approx(matched_means)
    assert paper["estimate"] == pytest.approx(0.01)


def test_a_hypothesis_on_the_misalignment_reads_a_rise_as_the_drop(tmp_path):
    """A study whose battery names a plane can register hypotheses on the misalignment
    (degrees, higher is worse): its 'drop' is the variant's rise, tested one-sided, with
    the angles of alignment.json; a rise the other way is not supported."""
    root = tmp_path / "m"
    angles = {"original": [5.0, 8.0, 6.0, 7.0], "naive": [30.0, 35.0, 28.0, 33.0],
              "noisy": [6.0, 7.0, 5.0, 9.0]}
    rows = []
    for variant, values in angles.items():
        for seed, angle in enumerate(values):
            name = f"b_{variant}_{seed}"
            _result(root / "runs" / name, "beta_vae", variant, seed, 0.3, 0.5,
                    eps=None if variant == "original" else 0.1)
            rows.append({"run": name, "angle_deg": [angle, 90.0 + angle],
                         "misalignment_deg": [angle, angle], "r2": [0.9, 0.9]})
    (root / "alignment.json").write_text(json.dumps({"columns": [0, 1], "runs": rows}))
    declared = [
        {"id": "M1", "test": "drop", "model": "beta_vae", "dataset": "dsprites",
         "variant": "naive", "metric": "misalignment"},
        {"id": "M2", "test": "drop_difference", "model": "beta_vae", "dataset": "dsprites",
         "variant": "naive", "versus": "noisy", "metric": "misalignment"},
        {"id": "M3", "test": "drop_difference", "model": "beta_vae", "dataset": "dsprites",
         "variant": "noisy", "versus": "naive", "metric": "misalignment"}]
    (root / "study.json").write_text(json.dumps({"settings": {
        "hypotheses": declared, "variants": ["original", "naive@0.1", "noisy@0.1"],
        "battery": {"manipulated": "naive@0.1", "controls": ["noisy@0.1"],
                    "plane": [0, 1]}}}))
    report.write_report(root, tmp_path / "out")
    with open(tmp_path / "out" / "hypotheses.csv") as handle:
        found = {row["id"]: row for row in csv.DictReader(handle)}
    assert float(found["M1"]["estimate"]) == pytest.approx(
        np.mean(angles["naive"]) - np.mean(angles["original"]))
    assert found["M1"]["outcome"] == "supported" == found["M2"]["outcome"]
    assert found["M3"]["outcome"] == "not supported"


def test_figure_names_have_no_spaces():
    from benchmark.studies.report import figure_name
    assert figure_name("DCI-I readout") == "dci_i_readout"
    assert figure_name("DCI-I") == "dci_i" and figure_name("Recon.") == "recon"
    assert figure_name("MIG") == "mig"
