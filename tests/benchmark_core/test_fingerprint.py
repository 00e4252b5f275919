import json

import pytest

from benchmark import fingerprint

CONFIG = """# Parameters for run:
# ==============================================================================
import benchmark.run
run.metrics = ['mig', 'dci']
run.steps = 2000
run.log_every = 100
beta_vae.beta = 1
data.artefact = None
eval/model.factory = @my_model()
weights = {'b': 1, 'a': (2, 3.0)}
run.seed = %SEED
SEED = 0
"""


def test_canonical_form_ignores_layout_order_and_number_spelling():
    same = """SEED = 0
weights = {'a': [2, 3], 'b': 1.0}
run.seed = %SEED
eval/model.factory = @my_model()
data.artefact = None
beta_vae.beta = 1.0   # same value
run.steps = 2000
run.log_every = 7
run.metrics = ('mig', 'dci')
"""
    a, b = fingerprint.identity(CONFIG), fingerprint.identity(same)
    assert a["fingerprint"] == b["fingerprint"] and len(a["fingerprint"]) == 64
    assert a["bindings"]["eval/model.factory"] == json.dumps("@my_model()")
    assert a["bindings"]["run.seed"] == json.dumps("%SEED")
    assert "run.log_every" not in a["bindings"]          # does not change the run


@pytest.mark.parametrize("change", ["beta_vae.beta = 8", "run.metrics = ['dci', 'mig']",
                                    "run.steps = 2001", "SEED = 1", "model.extra = 1",
                                    "eval/model.factory = @my_model"])
def test_any_operative_change_changes_the_fingerprint_and_is_named(change):
    changed = CONFIG + change + "\n"
    a, b = fingerprint.identity(CONFIG), fingerprint.identity(changed)
    assert a["fingerprint"] != b["fingerprint"]
    key = change.split(" = ")[0]
    message = fingerprint.mismatch_message("DIR", a, b, "choices")
    assert f"{key}: " in message and message.endswith("choices")


def test_recorded_identity_of_directories(tmp_path):
    assert fingerprint.recorded(tmp_path) is None
    (tmp_path / "results.json").write_text(json.dumps({"gin_config": CONFIG}))
    assert fingerprint.recorded(tmp_path) == fingerprint.identity(CONFIG)
    fingerprint.record(tmp_path, fingerprint.identity("run.steps = 1"))
    assert fingerprint.recorded(tmp_path)["bindings"] == {"run.steps": "1"}  # file wins
    (tmp_path / fingerprint.FILE_NAME).write_text("[1, 2]")
    with pytest.raises(ValueError, match="fingerprint.json: cannot read"):
        fingerprint.recorded(tmp_path)
    (tmp_path / fingerprint.FILE_NAME).unlink()
    (tmp_path / "results.json").write_text(json.dumps({"gin_config": "run.steps = = 3"}))
    with pytest.raises(ValueError, match="results.json: cannot read"):
        fingerprint.recorded(tmp_path)


def test_artefact_paths_under_results_are_identified_wherever_the_checkout_is():
    here = fingerprint.identity("data.artefact = '/work/main/results/perturbations/a'\n")
    there = fingerprint.identity("data.artefact = '/tmp/clone/results/perturbations/a'\n")
    relative = fingerprint.identity("data.artefact = 'results/perturbations/a'\n")
    other = fingerprint.identity("data.artefact = '/tmp/clone/results/perturbations/b'\n")
    assert here["fingerprint"] == there["fingerprint"] == relative["fingerprint"]
    assert other["fingerprint"] != here["fingerprint"]
    outside = fingerprint.identity("data.artefact = '/data/my_artefact'\n")
    assert outside["bindings"]["data.artefact"] == '"/data/my_artefact"'
