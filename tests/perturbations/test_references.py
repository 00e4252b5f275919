"""Reference runs are data: their gin config may not import or include (issue 19, item 8);
published references load only with the bytes they record (issue 28 step 1)."""

import json
import pathlib
import sys

import pytest

from perturbations import references

GOOD_CONFIG = "import examples.sparse_vae\n\nmodel.name = 'beta_vae'\nmodel.num_latents = 3\n"


def _reference_dir(tmp_path, gin_config, name="ref"):
    run_dir = tmp_path / name
    run_dir.mkdir()
    results = {"seed": 0, "model": "beta_vae", "dataset": {"name": "dsprites"},
               "metrics": {"mig": {"mig": 0.1},
                           "health": {"mean_posterior_variance": [0.1, 0.9, 0.5]}},
               "gin_config": gin_config}
    (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir


@pytest.fixture
def planted_module(tmp_path, monkeypatch):
    """A module on sys.path whose import leaves a marker file (stands for any code)."""
    marker = tmp_path / "imported.marker"
    (tmp_path / "planted_mod.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield marker
    sys.modules.pop("planted_mod", None)


def test_a_suite_config_passes(tmp_path):
    reference = references.read_reference(_reference_dir(tmp_path, GOOD_CONFIG))
    assert reference["gin_config"] == GOOD_CONFIG and reference["mig"] == 0.1


@pytest.mark.parametrize("line", ["import planted_mod", "from planted_mod import thing",
                                  "import planted_mod as m",
                                  "from __gin__ import dynamic_registration\n"
                                  "import planted_mod"])
def test_foreign_imports_are_refused_and_never_run(tmp_path, planted_module, line):
    run_dir = _reference_dir(tmp_path, f"{line}\nmodel.name = 'beta_vae'\n")
    with pytest.raises(references.ReferenceError,
                       match=r"imports '(planted_mod|__gin__)[^']*' \(line 1\).*suite's own"):
        references.read_reference(run_dir)
    reference = {"run_dir": str(run_dir), "method": "beta_vae",
                 "gin_config": f"model.name = 'beta_vae'\n{line}\n"}
    with pytest.raises(references.ReferenceError, match=r"\(line 2\)"):
        references.load_encoder_decoder(reference, (64, 64, 1))
    assert not planted_module.exists()


def test_includes_and_garbage_are_refused(tmp_path):
    with pytest.raises(references.ReferenceError, match="includes '/etc/x.gin'"):
        references.read_reference(_reference_dir(tmp_path, "include '/etc/x.gin'\n", "a"))
    with pytest.raises(references.ReferenceError, match="parseable gin config"):
        references.read_reference(_reference_dir(tmp_path, "model.name = = 3\n", "b"))
    with pytest.raises(references.ReferenceError, match="as a string, found list"):
        references.read_reference(_reference_dir(tmp_path, ["import os"], "c"))


def test_malformed_results_json_is_one_clear_error(tmp_path):
    run_dir = _reference_dir(tmp_path, GOOD_CONFIG, "deep")
    (run_dir / "results.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(references.ReferenceError, match="results.json"):
        references.read_reference(run_dir)
    run_dir = _reference_dir(tmp_path, GOOD_CONFIG, "types")
    results = json.loads((run_dir / "results.json").read_text())
    for key_path, value, message in [(("metrics", "mig", "mig"), True, "finite number"),
                                     (("metrics", "health", "mean_posterior_variance"), "x",
                                      "list of finite numbers"),
                                     (("seed",), 1.5, "integer seed"),
                                     (("metrics",), [1], "MIG score")]:
        changed = json.loads(json.dumps(results))
        target = changed
        for key in key_path[:-1]:
            target = target[key]
        target[key_path[-1]] = value
        (run_dir / "results.json").write_text(json.dumps(changed))
        with pytest.raises(references.ReferenceError, match=message):
            references.read_reference(run_dir)


def test_references_are_the_extremes_of_the_pool_under_the_registered_rules(tmp_path):
    run_dir = _reference_dir(tmp_path, GOOD_CONFIG)
    assert references.read_reference(run_dir)["overpruned"] is None    # not recorded
    pool = [{"run_dir": f"r{i}", "mig": mig, "overpruned": pruned}
            for i, (mig, pruned) in enumerate([(0.05, True), (0.10, False), (0.30, False),
                                               (0.40, True), (0.35, False)])]
    low, high = references.choose(pool)
    assert (low[0]["mig"], high[0]["mig"]) == (0.05, 0.40)
    low, high = references.choose(pool, exclude_overpruned=True)
    assert (low[0]["mig"], high[0]["mig"]) == (0.10, 0.35)
    low, high = references.choose(pool, 2, exclude_overpruned=False, min_mig_gap=0.2)
    assert [r["mig"] for r in low] == [0.05, 0.10] and [r["mig"] for r in high] == [0.40, 0.35]
    with pytest.raises(references.ReferenceError, match=r"gap is 0\.250.*minimum 0\.3"):
        references.choose(pool, 2, min_mig_gap=0.3)
    with pytest.raises(references.ReferenceError, match="2 of 5 references are over-pruned"):
        references.choose(pool, 2, exclude_overpruned=True)
    with pytest.raises(references.ReferenceError, match="health/overpruned"):
        references.choose([*pool, {"run_dir": "x", "mig": 0.2, "overpruned": None}],
                          exclude_overpruned=True)



def test_registered_thresholds_choose_clearly_entangled_and_disentangled_references():
    """Each side is chosen among the runs that meet its own thresholds: a low-MIG run
    that lost its information (DCI-I) is not an entangled reference, however low its MIG;
    too few runs on a side is an error that counts them; a run without DCI cannot be
    judged by a DCI threshold."""
    pool = [{"run_dir": f"r{i}", "mig": mig, "dci_d": dci_d, "dci_i": dci_i}
            for i, (mig, dci_d, dci_i) in enumerate([
                (0.01, 0.00, 0.60),      # collapsed: information lost
                (0.05, 0.01, 0.90), (0.12, 0.02, 0.89), (0.30, 0.05, 0.90),
                (0.45, 0.15, 0.95), (0.55, 0.25, 0.96), (0.60, 0.08, 0.95)])]
    rules = {"entangled_max_mig": 0.15, "entangled_max_dci_d": 0.02,
             "entangled_min_dci_i": 0.85, "disentangled_min_mig": 0.4,
             "disentangled_min_dci_d": 0.12}
    low, high = references.choose(pool, 2, thresholds=rules)
    assert [r["run_dir"] for r in low] == ["r1", "r2"]
    assert [r["run_dir"] for r in high] == ["r5", "r4"]         # r6: DCI-D below 0.12
    with pytest.raises(references.ReferenceError, match=r"2 disentangled meet"):
        references.choose(pool, 3, thresholds=rules)
    with pytest.raises(references.ReferenceError, match="did not record"):
        references.choose([*pool, {"run_dir": "x", "mig": 0.1, "dci_d": None,
                                   "dci_i": None}], thresholds=rules)
    with pytest.raises(references.ReferenceError, match="for both sides"):
        references.choose([{"run_dir": "a", "mig": 0.3, "dci_d": 0.1, "dci_i": 0.9},
                           {"run_dir": "b", "mig": 0.2, "dci_d": 0.1, "dci_i": 0.5}],
                          thresholds={"entangled_min_dci_i": 0.8,
                                      "disentangled_min_mig": 0.25})
    with pytest.raises(ValueError, match="unknown key 'entangled_max_sap'"):
        references.check_thresholds({"entangled_max_sap": 0.1})
    with pytest.raises(ValueError, match=r"disentangled_min_mig a number in \[0, 1\]"):
        references.check_thresholds({"disentangled_min_mig": 2})

def _published_dir(tmp_path):
    """A published reference's files (bytes only: verification never loads them)."""
    from benchmark.data.files import file_sha256

    directory = tmp_path / "artefact" / "references" / "entangled0"
    directory.mkdir(parents=True)
    for name in references.PUBLISHED_FILES:
        (directory / name).write_bytes(name.encode() * 10)
    digests = {name: file_sha256(directory / name) for name in references.PUBLISHED_FILES}
    (directory / references.PUBLISHED_RECORD).write_text(json.dumps({"sha256": digests}))
    return directory, digests


def test_a_published_reference_loads_only_with_the_bytes_it_records(tmp_path):
    directory, digests = _published_dir(tmp_path)
    assert references.verify_published(directory) == digests
    artefact_dir = directory.parents[1]
    entry = {"run_dir": "runs/gone", "published": "references/entangled0", "sha256": digests}
    assert references.published_copy(entry, artefact_dir) == str(directory)
    assert references.published_copy({"run_dir": "runs/gone"}, artefact_dir) is None
    other = {**digests, "results.json": "0" * 64}
    with pytest.raises(references.ReferenceError, match="does not hold the files the "
                                                        "metadata records"):
        references.published_copy({**entry, "sha256": other}, artefact_dir)
    for relative in ("../elsewhere", "/etc", 3):
        with pytest.raises(references.ArtefactError, match="a path inside the artefact"):
            references.published_copy({**entry, "published": relative}, artefact_dir)
    with pytest.raises(references.ReferenceError, match=r"no published.json there"):
        references.published_copy({**entry, "published": "references/x"}, artefact_dir)
    (directory / "arrays.npz").write_bytes(b"changed")
    with pytest.raises(references.ReferenceError, match="arrays.npz has SHA-256 .* changed "
                                                        "or swapped"):
        references.verify_published(directory)
    (directory / "arrays.npz").unlink()
    with pytest.raises(references.ReferenceError, match="expected arrays.npz, found none"):
        references.verify_published(directory)
    (directory / references.PUBLISHED_RECORD).write_text(json.dumps(
        {"sha256": {"results.json": digests["results.json"]}}))
    with pytest.raises(references.ReferenceError, match="a hex digest for each of"):
        references.verify_published(directory)


def test_a_reference_without_checkpoints_or_a_published_copy_says_how_to_get_one(tmp_path):
    run_dir = _reference_dir(tmp_path, GOOD_CONFIG)
    reference = {"run_dir": str(run_dir), "method": "beta_vae", "gin_config": GOOD_CONFIG}
    with pytest.raises(references.ReferenceError,
                       match="checkpoints/ or a published copy.*publish_references"):
        references.load_encoder_decoder(reference, (64, 64, 1))


def test_a_retrained_reference_that_does_not_repeat_its_run_is_refused(tmp_path,
                                                                       monkeypatch):
    """references.weights_source (perturbations.publish_references, and the game for a
    chosen run without checkpoints): a reference without checkpoints is retrained from
    its recorded config and seed, and used only if it repeats the recorded MIG."""
    recorded = _reference_dir(tmp_path, GOOD_CONFIG, "recorded")
    trained = []
    retrained_mig = {"value": 0.1}

    def fake_train(gin_files, bindings, seed, run_dir):
        trained.append((pathlib.Path(gin_files[0]).read_text(), seed, pathlib.Path(run_dir)))
        run_dir = pathlib.Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        results = json.loads((recorded / "results.json").read_text())
        results["metrics"]["mig"]["mig"] = retrained_mig["value"]
        (run_dir / "results.json").write_text(json.dumps(results))
        return run_dir

    monkeypatch.setattr(references, "train_reference", fake_train)
    reference, provenance = references.weights_source(
        str(recorded), "entangled0", tmp_path / "work", 1e-6, False)
    assert trained == [(GOOD_CONFIG, 0, tmp_path / "work" / "entangled0")]
    assert provenance == {"published_from": "retrained", "retrained_mig": 0.1}
    assert reference["run_dir"] == str(tmp_path / "work" / "entangled0")
    retrained_mig["value"] = 0.15
    with pytest.raises(references.ReferenceError, match=r"MIG 0.150000, the recorded run "
                                                        r"0.100000.*--accept_different"):
        references.weights_source(str(recorded), "entangled0", tmp_path / "work2", 1e-6,
                                  False)
    _, provenance = references.weights_source(str(recorded), "entangled0", tmp_path / "work3",
                                              1e-6, True)
    assert provenance == {"published_from": "retrained_different", "retrained_mig": 0.15}
    with pytest.raises(references.ReferenceError, match="checkpoints/ or at least its "
                                                        "results.json"):
        references.weights_source(str(tmp_path / "gone"), "entangled0", tmp_path / "work4",
                                  1e-6, False)


def _copy_in(tmp_path, source_run_dir, mig, name="art"):
    """A published reference references/entangled0 of artefact `name` that its metadata
    lists as standing for the run `source_run_dir` (as perturbations.generate writes it:
    the published record names the retrained run it was copied from)."""
    copy = tmp_path / name / references.IN_ARTEFACT / "entangled0"
    copy.parent.mkdir(parents=True)
    made = _reference_dir(copy.parent, GOOD_CONFIG, "entangled0")
    results = json.loads((made / "results.json").read_text())
    results["metrics"]["mig"]["mig"] = mig
    (made / "results.json").write_text(json.dumps(results))
    for file in references.PUBLISHED_FILES:
        if not (copy / file).exists():
            (copy / file).write_bytes(file.encode())
    digests = {f: references.file_sha256(copy / f) for f in references.PUBLISHED_FILES}
    (copy / references.PUBLISHED_RECORD).write_text(json.dumps(
        {"sha256": digests, "source_run_dir": str(copy), "step": 6000}))
    entry = {"run_dir": str(source_run_dir), "published": "references/entangled0",
             "sha256": digests, "mig": mig}
    (tmp_path / name / "metadata.json").write_text(json.dumps(
        {"kind": "manipulation", "references": {"entangled": [entry], "disentangled": []}}))
    return copy


def test_a_published_copy_in_a_named_artefact_stands_for_a_run_without_checkpoints(
        tmp_path, monkeypatch):
    """generation.reference_artefacts: a second game on the references of a published one
    uses their published copies, checked by SHA-256 and by the recorded MIG, and retrains
    only a run that no artefact holds or whose copy does not repeat it."""
    recorded = _reference_dir(tmp_path, GOOD_CONFIG, "recorded")
    trained = []

    def fake_train(gin_files, bindings, seed, run_dir):
        trained.append(pathlib.Path(run_dir))
        pathlib.Path(run_dir).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(run_dir) / "results.json").write_text(
            (recorded / "results.json").read_text())
        return run_dir

    monkeypatch.setattr(references, "train_reference", fake_train)
    monkeypatch.chdir(tmp_path)          # the record names the run relative to the repository
    copy = _copy_in(tmp_path, "recorded", 0.1)
    reference, provenance = references.weights_source(
        str(recorded), "entangled0", tmp_path / "work", artefacts=[str(tmp_path / "art")])
    assert trained == [] and reference["run_dir"] == str(copy)
    assert provenance == {"published_from": "artefact", "copy": str(copy)}
    # a copy of another run is not this run's: retrained
    _copy_in(tmp_path, "other_run", 0.1, "art2")
    _, provenance = references.weights_source(
        str(recorded), "entangled0", tmp_path / "work2", artefacts=[str(tmp_path / "art2")])
    assert trained == [tmp_path / "work2" / "entangled0"]
    assert provenance["published_from"] == "retrained"
    # a copy that does not repeat the recorded MIG is not used
    _copy_in(tmp_path, "recorded", 0.2, "art3")
    _, provenance = references.weights_source(
        str(recorded), "entangled0", tmp_path / "work3", artefacts=[str(tmp_path / "art3")])
    assert provenance["published_from"] == "retrained" and len(trained) == 2
    # a copy whose bytes changed is refused, not retrained around
    (copy / "decoder.weights.h5").write_bytes(b"changed")
    with pytest.raises(references.ReferenceError, match="decoder.weights.h5 has SHA-256"):
        references.weights_source(str(recorded), "entangled0", tmp_path / "work4",
                                  artefacts=[str(tmp_path / "art")])
    with pytest.raises(references.ReferenceError, match="expected a perturbation artefact "
                                                        r"\(its metadata.json\)"):
        references.weights_source(str(recorded), "entangled0", tmp_path / "work5",
                                  artefacts=[str(tmp_path / "recorded")])
    assert len(trained) == 2
