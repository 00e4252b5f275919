"""results.json v2 and arrays.npz (benchmark/runs/results.py): round trip, the v1 reader, the tidy
table of every published study, report numbers independent of the schema, and one clear
error for a malformed file (issue 18 item 4)."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from benchmark.runs import results
from benchmark.studies import report, report_data

ROOT = pathlib.Path(__file__).resolve().parents[2]

GIN = """import benchmark.runs.run

# Parameters for beta_vae:
beta_vae.beta = 8.0
data.eps = 0.1
data.fixed_factors = {'orientation': 0, 'shape': 0}
data.name = 'dsprites'
data.variant = 'noisy'
model.num_latents = 3
run.metrics = ['mig', 'dci']
run.seed = 1
run.steps = 3000
train/optimizer.learning_rate = 1e-05
sizes = (1, 2)
"""


def _scores(mig=0.28, dci=0.5, overpruned=False):
    """The runner's nested scores: scalars, per-factor vectors, a matrix, an error."""
    return {"mig": {"mig": mig, "mig_per_factor": [mig - 0.01, mig + 0.01]},
            "dci": {"dci_disentanglement": dci, "dci_completeness": 0.25,
                    "dci_informativeness_test": 0.9,
                    "dci_importance_matrix": [[0.7, 0.3], [0.3, 0.7]]},
            "factor_vae_score": {"error": "every code dim is constant"},
            "health": {"active_units": 1 if overpruned else 3, "overpruned": overpruned,
                       "mean_posterior_variance": [0.01, 0.02, 0.9], "psnr": 23.5,
                       "reconstruction_loss": np.float32(858.75)}}


DATASET = {"name": "dsprites", "variant": "noisy", "eps": 0.1, "factor_sizes": [32, 32]}
LOSSES = {"kl": 6.2, "loss": 918.0}


def _write_v2(run_dir, model="beta_vae", seed=1, dataset=DATASET, gin=GIN, machine=None,
              **scores):
    return results.write(run_dir, model=model, seed=seed, dataset=dataset,
                         scores=_scores(**scores), final_losses=LOSSES, gin_config=gin,
                         metric_settings={"mig": {"num_bins": 20, "seed": seed}},
                         settings={"steps": 3000}, steps=3000, resumed_from=0,
                         train_seconds=1.5, wall_seconds=2.5, fingerprint="ab" * 32,
                         suite_version="0.1.0", machine=machine)


def _write_v1(run_dir, model="beta_vae", seed=1, dataset=DATASET, gin=GIN, **scores):
    """A results.json as benchmark.run wrote it before schema version 2."""
    run_dir.mkdir(parents=True)
    nested = json.loads(json.dumps(_scores(**scores), default=float))
    (run_dir / "results.json").write_text(json.dumps({
        "schema_version": 1, "model": model, "seed": seed, "dataset": dataset,
        "final_losses": LOSSES, "metrics": nested, "gin_config": gin,
        "metric_settings": {"mig": {"num_bins": 20, "seed": seed}},
        "settings": {"steps": 3000}, "steps": 3000, "resumed_from": 0,
        "train_seconds": 1.5, "wall_seconds": 2.5}))
    return run_dir / "results.json"


def test_v2_round_trip(tmp_path):
    path = _write_v2(tmp_path / "run", machine={"cpu": "Test CPU", "cores": 2,
                                                "cpu_seconds": 4.5})
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["arrays.npz",
                                                                   "results.json"]
    stored = json.loads(path.read_text())
    assert stored["schema_version"] == 2
    assert results.read(path)["machine"] == {"cpu": "Test CPU", "cores": 2, "cpu_seconds": 4.5}
    assert stored["hyperparameters"] == {
        "beta_vae.beta": 8.0, "data.eps": 0.1,
        "data.fixed_factors": {"orientation": 0, "shape": 0}, "data.name": "dsprites",
        "data.variant": "noisy", "model.num_latents": 3, "run.metrics": ["mig", "dci"],
        "run.seed": 1, "run.steps": 3000, "train/optimizer.learning_rate": 1e-05,
        "sizes": [1, 2]}
    assert stored["scalars"] == {
        "metric/mig": 0.28, "metric/dci/disentanglement": 0.5,
        "metric/dci/completeness": 0.25, "metric/dci/informativeness_test": 0.9,
        "health/active_units": 3, "health/overpruned": False, "health/psnr": 23.5,
        "health/reconstruction_loss": 858.75, "loss/kl": 6.2, "loss/loss": 918.0}
    assert stored["arrays"] == {"metric/mig/per_factor": [2],
                                "metric/dci/importance_matrix": [2, 2],
                                "health/mean_posterior_variance": [3]}
    assert stored["errors"] == {"factor_vae_score": "every code dim is constant"}
    read = results.read(tmp_path / "run")
    assert read == {**stored, "run_dir": str(tmp_path / "run")}
    arrays = results.read_arrays(path)
    np.testing.assert_array_equal(arrays["metric/dci/importance_matrix"],
                                  [[0.7, 0.3], [0.3, 0.7]])
    np.testing.assert_array_equal(arrays["health/mean_posterior_variance"], [0.01, 0.02, 0.9])
    with np.load(tmp_path / "run" / "arrays.npz", allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(stored["arrays"])
    # the writer leaves no temporary file behind, and rewriting replaces both files
    _write_v2(tmp_path / "run", mig=0.5)
    assert results.read(tmp_path / "run")["scalars"]["metric/mig"] == 0.5
    assert len(list((tmp_path / "run").iterdir())) == 2


def test_metric_keys_are_namespaced():
    assert results.metric_key("mig", "mig") == "metric/mig"
    assert results.metric_key("dci", "dci_disentanglement") == "metric/dci/disentanglement"
    assert results.metric_key("factor_vae_score", "factor_vae_score_train") == (
        "metric/factor_vae_score/train")
    assert results.metric_key("infomec", "infom") == "metric/infomec/infom"
    assert results.metric_key("health", "active_units") == "health/active_units"


def test_v1_file_reads_as_the_same_results(tmp_path):
    _write_v1(tmp_path / "v1")
    _write_v2(tmp_path / "v2")
    old, new = results.read(tmp_path / "v1"), results.read(tmp_path / "v2")
    assert old["schema_version"] == 1 and new["schema_version"] == 2
    for field in ("model", "seed", "dataset", "hyperparameters", "scalars", "arrays",
                  "errors", "steps"):
        assert old[field] == new[field], field
    old_arrays, new_arrays = results.read_arrays(tmp_path / "v1"), results.read_arrays(
        tmp_path / "v2")
    assert old_arrays.keys() == new_arrays.keys()
    for name in old_arrays:
        np.testing.assert_array_equal(old_arrays[name], new_arrays[name])
    table = results.load(tmp_path)
    assert isinstance(table, pd.DataFrame) and len(table) == 2
    assert list(table.columns[:6]) == ["model", "dataset", "variant", "eps", "seed", "run_dir"]
    row_old, row_new = (table.drop(columns=["run_dir", "schema_version", "fingerprint"])
                        .to_dict("records"))
    assert row_old == row_new
    assert row_new["config/beta_vae.beta"] == 8.0 and row_new["metric/mig"] == 0.28
    assert not row_new["health/overpruned"]
    assert row_new["error/factor_vae_score"] == "every code dim is constant"


def _studies():
    """Published studies: results/ folders holding runs, except the artefacts' folder
    (whose references/ hold the runs each artefact was made from, not a study)."""
    return sorted(p.name for p in (ROOT / "results").iterdir()
                  if p.is_dir() and p.name != "perturbations"
                  and next(p.rglob("results.json"), None) is not None)


@pytest.mark.parametrize("study", _studies())
def test_every_published_study_loads_as_a_table(study):
    directory = ROOT / "results" / study
    table = results.load(directory)
    assert isinstance(table, pd.DataFrame)
    assert len(table) == len(list(directory.rglob("results.json")))
    assert table["run_dir"].is_unique and table["model"].notna().all()
    assert table["metric/mig"].between(0, 1).all()
    # codes scored from files (benchmark/studies/external.py) have no model config of the suite's
    scored = all((json.loads(p.read_text()).get("settings") or {}).get("external_codes")
                 for p in directory.rglob("results.json"))
    wanted = {"config/run.steps"} | (set() if scored else {"config/model.num_latents"})
    assert wanted <= set(table.columns)


def test_report_numbers_do_not_depend_on_the_schema(tmp_path):
    """The same small study written as v1 and as v2 files gives the same report."""
    migs = {"original": [0.30, 0.25, 0.35], "noisy": [0.10, 0.05, 0.12]}
    for writer, name in ((_write_v1, "v1"), (_write_v2, "v2")):
        for variant, values in migs.items():
            dataset = {"name": "dsprites", "variant": variant,
                       **({"eps": 0.1} if variant != "original" else {})}
            for seed, mig in enumerate(values):
                writer(tmp_path / name / "runs" / f"{variant}{seed}", seed=seed,
                       dataset=dataset, gin=GIN.replace("run.seed = 1", f"run.seed = {seed}"),
                       mig=mig, dci=0.4 + mig)
            writer(tmp_path / name / "runs" / f"{variant}_pruned", seed=9, dataset=dataset,
                   gin=GIN.replace("run.seed = 1", "run.seed = 9"), mig=0.9,
                   overpruned=True)
        report.write_report(tmp_path / name, tmp_path / f"{name}_report")
    for file in ("metrics.csv", "drops.csv", "overpruning.csv", "metrics.tex", "drops.tex"):
        assert ((tmp_path / "v1_report" / file).read_text()
                == (tmp_path / "v2_report" / file).read_text()), file
    text_v1, text_v2 = ((tmp_path / f"{n}_report" / "report.md").read_text().split("\n", 1)[1]
                        for n in ("v1", "v2"))
    assert text_v1 == text_v2
    assert (f"| beta_vae | dsprites | {np.mean(migs['original']):.3f} ± "
            f"{np.std(migs['original'], ddof=1):.3f} (3; 1 over-pruned excluded)") in text_v2
    summary = {r["variant"]: r for r in report_data.summary_rows(
        *report_data.group(report_data.load_runs(tmp_path / "v2")))}
    assert summary["noisy"]["MIG mean"] == float(np.mean(migs["noisy"]))
    assert summary["noisy"]["MIG std"] == float(np.std(migs["noisy"], ddof=1))
    assert summary["noisy"]["DCI-D mean"] == float(np.mean(np.add(migs["noisy"], 0.4)))
    # runs.csv: the tidy table of the reported runs, with the report's view of each
    runs = pd.read_csv(tmp_path / "v2_report" / "runs.csv")
    assert len(runs) == 8 and runs["report/excluded"].sum() == 2
    assert set(runs["report/variant"]) == {"original", "noisy"}
    assert runs.loc[runs["seed"] == 0, "metric/mig"].tolist() == [0.10, 0.30]
    assert json.loads(runs["config/data.fixed_factors"][0]) == {"orientation": 0, "shape": 0}


def test_line_search_setting_comes_from_the_hyperparameters(tmp_path):
    root = tmp_path / "study"
    (root / "runs").mkdir(parents=True)
    (root / "study.json").write_text(json.dumps({"settings": {
        "line_search": {"beta_vae": ["beta_vae.beta", [1, 1e-05]]}}}))
    for beta in ("1", "1e-05"):
        _write_v2(root / "runs" / f"b{beta}", gin=GIN.replace("8.0", beta))
    _write_v2(root / "runs" / "unbound", gin="run.seed = 2\n")
    settings = sorted(r["setting"] for r in report_data.load_runs(root))
    assert settings == ["beta=1", "beta=1e-05", "beta=?"]


@pytest.mark.parametrize("content, expected", [
    ("{", "expected a results.json of benchmark.run .*unreadable JSON"),
    ("[1, 2]", "expected a results.json of benchmark.run .*found 'list'"),
    ("[" * 100_000 + "]" * 100_000, "expected a results.json .*nested too deeply"),
    ('{"schema_version": 3}', "expected 'schema_version' 1 or 2, found 3"),
    ('{"schema_version": 2, "seed": 0, "dataset": {"name": "d"}}',
     "expected 'model', the method's name, found None"),
    ('{"schema_version": 1, "model": "m", "seed": "0", "dataset": {"name": "d"}, '
     '"metrics": {}}', "expected 'seed', an integer, found '0'"),
    ('{"schema_version": 1, "model": "m", "seed": 0, "dataset": {"name": "d"}, '
     '"metrics": {"mig": 0.3}}', "expected 'metrics', an object of {metric: {score"),
    ('{"schema_version": 1, "model": "m", "seed": 0, "dataset": {"name": "d"}, '
     '"metrics": {}, "gin_config": "a.b = = 1"}', "expected 'gin_config', a gin config"),
    ('{"schema_version": 2, "model": "m", "seed": 0, "dataset": {"name": "d"}, '
     '"hyperparameters": {}, "scalars": {"metric/mig": [1]}, "arrays": {}, "errors": {}}',
     r"expected scalars\['metric/mig'\], a number"),
])
def test_malformed_results_json_is_one_clear_error(tmp_path, content, expected):
    run_dir = tmp_path / "study" / "runs" / "bad"
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(content)
    with pytest.raises(results.ResultsError, match=rf"bad/results.json: {expected}"):
        results.read(run_dir)
    with pytest.raises(results.ResultsError, match="bad/results.json: expected"):
        results.load(tmp_path / "study")
    with pytest.raises(report_data.ReportError, match="bad/results.json: expected"):
        report.write_report(tmp_path / "study", tmp_path / "out")


def test_missing_or_mismatched_arrays_are_one_clear_error(tmp_path):
    _write_v2(tmp_path / "run")
    np.savez(tmp_path / "run" / "arrays.npz", other=np.zeros(2))
    with pytest.raises(results.ResultsError, match=r"run/arrays.npz: expected the arrays "
                                                   r"with the shapes results.json lists"):
        results.read_arrays(tmp_path / "run")
    (tmp_path / "run" / "arrays.npz").unlink()
    with pytest.raises(results.ResultsError, match=r"run/arrays.npz: expected the arrays"):
        results.read_arrays(tmp_path / "run")
    with pytest.raises(results.ResultsError, match="expected a directory of runs"):
        results.load(tmp_path / "nowhere")
