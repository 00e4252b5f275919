import hashlib
import json

import pytest

from benchmark.runs import fingerprint

CONFIG = """# Parameters for run:
# ==============================================================================
import benchmark.runs.run
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


def _artefact(directory, seed):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "metadata.json").write_text(json.dumps({"kind": "noise", "seed": seed}))
    return str(directory)


def test_an_artefact_is_identified_by_its_content_not_its_path(tmp_path):
    """Issue 31 D1: the same artefact under two paths (a checkout elsewhere) is one
    configuration; another artefact under the same path is another."""
    here = fingerprint.identity(f"data.artefact = '{_artefact(tmp_path / 'a', 1)}'\n")
    copy = fingerprint.identity(f"data.artefact = '{_artefact(tmp_path / 'elsewhere', 1)}'\n")
    assert here["fingerprint"] == copy["fingerprint"]
    assert "metadata_sha256" in here["bindings"]["data.artefact"]
    _artefact(tmp_path / "a", 2)                                  # replaced in place
    replaced = fingerprint.identity(f"data.artefact = '{tmp_path / 'a'}'\n")
    assert replaced["fingerprint"] != here["fingerprint"]
    with pytest.raises(ValueError, match=r"expected a perturbation artefact directory with "
                                         r"metadata.json \(.*\), found none"):
        fingerprint.identity(f"data.artefact = '{tmp_path / 'missing'}'\n")
    # the text of a run written before fingerprint.json names the artefact by path, so it
    # never matches a content-named run (what it read is unknown)
    legacy = fingerprint.identity(f"data.artefact = '{tmp_path / 'a'}'\n", contents=False)
    assert legacy["bindings"]["data.artefact"] == json.dumps(str(tmp_path / "a"))
    assert legacy["fingerprint"] != replaced["fingerprint"]
    published = fingerprint.identity("data.artefact = '/x/results/perturbations/a'\n",
                                     contents=False)
    assert published["bindings"]["data.artefact"] == '"results/perturbations/a"'


def test_an_official_data_file_is_identified_by_its_content(tmp_path, monkeypatch):
    """Issue 31 item 1: a run that reads an official file names it by its SHA-256; a
    procedural run has no such key (the published runs keep their fingerprints)."""
    from benchmark.data import dsprites
    monkeypatch.setenv("DISENTANGLE_BENCH_CACHE", str(tmp_path / "cache"))
    procedural = fingerprint.identity("data.source = 'auto'\n")
    assert fingerprint.DATA_FILE_KEY not in procedural["bindings"]
    (tmp_path / dsprites.FILENAME).write_bytes(b"one")
    text = f"data.source = 'auto'\ndata.data_dir = '{tmp_path}'\n"
    first = fingerprint.identity(text)
    assert first["bindings"][fingerprint.DATA_FILE_KEY] == json.dumps(
        hashlib.sha256(b"one").hexdigest())
    (tmp_path / dsprites.FILENAME).write_bytes(b"second")     # another file, same path
    assert fingerprint.identity(text)["fingerprint"] != first["fingerprint"]
    assert fingerprint.identity(text.replace("'auto'", "'procedural'"))["bindings"].get(
        fingerprint.DATA_FILE_KEY) is None


def test_run_threads_at_its_default_leaves_the_fingerprint_unchanged():
    plain = fingerprint.identity("run.steps = 4\n")
    assert fingerprint.identity("run.steps = 4\nrun.threads = 2\n") == plain
    assert fingerprint.identity("run.steps = 4\nrun.threads = 1\n")["fingerprint"] != \
        plain["fingerprint"]
