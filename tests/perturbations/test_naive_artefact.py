"""The naive move as an artefact (perturbations/artefact.py kind 'naive',
perturbations/naive_artefact.py): a run loads it as data.variant 'naive' from its stored
deltas, checked like a manipulation's weights."""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmark.data import dsprites, make_variant as make_variant_of
from benchmark.data.oracle import ORACLE_FIXED_FACTORS
from benchmark.data.subset import FactorSubset
from perturbations import artefact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
make_variant = functools.partial(make_variant_of, artefact_loader=artefact.load_variant)


@pytest.fixture(scope="module")
def square():
    return FactorSubset(dsprites.DSprites(source="procedural"), ORACLE_FIXED_FACTORS)


def _deltas(data, seed=0):
    """A feasible move of every image: towards 1 on the background, 0 on the sprite, by a
    random share per image."""
    images = data.observations_from_factors(data.factors_of(np.arange(data.num_images)))
    share = np.random.default_rng(seed).uniform(0.1, 1.0, (len(images), 1, 1, 1))
    return ((1.0 - images) * share).astype(np.float32)


def _metadata(data, **extra):
    return {"dataset": data.name, "factor_sizes": [int(s) for s in data.factor_sizes],
            "fixed_factors": dict(ORACLE_FIXED_FACTORS),
            "observation_shape": [int(s) for s in data.observation_shape], "eps": 1.0,
            **extra}


def test_a_naive_artefact_is_the_stored_move_at_the_asked_strength(square, tmp_path):
    deltas = _deltas(square)
    artefact.save_naive(tmp_path / "naive", deltas, _metadata(square))
    factors = square.sample_factors(32, np.random.default_rng(1))
    original = square.observations_from_factors(factors)
    index = square.index_of(factors)
    full = make_variant(square, "naive", artefact=str(tmp_path / "naive"))
    np.testing.assert_allclose(full.observations_from_factors(factors),
                               original + deltas[index], atol=1e-6)
    half = make_variant(square, "naive", eps=0.5, artefact=str(tmp_path / "naive"))
    np.testing.assert_allclose(half.observations_from_factors(factors),
                               original + 0.5 * deltas[index], atol=1e-6)
    assert half.describe()["variant"] == "naive"
    assert half.describe()["artefact"] == str(tmp_path / "naive")
    # a naive artefact has no texture control, and is not a 'modified' variant
    with pytest.raises(artefact.ArtefactError, match="needs a manipulation artefact"):
        make_variant(square, "modified_texture", artefact=str(tmp_path / "naive"))
    with pytest.raises(ValueError, match="defines the 'naive' variant"):
        make_variant(square, "modified", artefact=str(tmp_path / "naive"))


def test_a_changed_or_misshapen_naive_artefact_is_refused_in_one_line(square, tmp_path):
    deltas = _deltas(square)
    directory = tmp_path / "naive"
    artefact.save_naive(directory, deltas, _metadata(square))
    stored = directory / artefact.DELTAS
    with open(stored, "wb") as handle:          # same shape, other values: digest differs
        np.savez_compressed(handle, deltas=deltas * 0.5)
    with pytest.raises(artefact.ArtefactError, match="altered or replaced"):
        make_variant(square, "naive", artefact=str(directory))
    # a well-formed file of the wrong shape, its digest recorded: refused by its shape
    artefact.save_naive(directory, deltas[:10], _metadata(square))
    with pytest.raises(artefact.ArtefactError, match=r"expected deltas float32 \(1024, 64"):
        make_variant(square, "naive", artefact=str(directory))
    bad = deltas.copy()
    bad[0, 0, 0, 0] = np.nan
    artefact.save_naive(directory, bad, _metadata(square))
    with pytest.raises(artefact.ArtefactError, match="finite deltas in"):
        make_variant(square, "naive", artefact=str(directory))
    # pickled objects are never loaded (data, not code)
    with open(directory / artefact.DELTAS, "wb") as handle:
        np.savez(handle, deltas=np.array([{"a": 1}], dtype=object))
    metadata = json.loads((directory / "metadata.json").read_text())
    metadata[artefact.DELTAS_SHA256] = artefact.file_sha256(directory / artefact.DELTAS)
    (directory / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(artefact.ArtefactError, match="could not read it"):
        make_variant(square, "naive", artefact=str(directory))
    (directory / artefact.DELTAS).write_bytes(b"not a zip file at all")
    metadata[artefact.DELTAS_SHA256] = artefact.file_sha256(directory / artefact.DELTAS)
    (directory / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(artefact.ArtefactError, match="could not read it"):
        make_variant(square, "naive", artefact=str(directory))
    # moves computed on the official file's images are not applied to rendered ones
    artefact.save_naive(directory, deltas, _metadata(square, source="file"))
    with pytest.raises(artefact.ArtefactError, match="computed on file images, found "
                                                     "procedural images"):
        make_variant(square, "naive", artefact=str(directory))
    # made for another dataset: refused before anything is read
    other = FactorSubset(dsprites.DSprites(source="procedural"),
                         {**ORACLE_FIXED_FACTORS, "shape": 1})
    artefact.save_naive(directory, deltas, _metadata(square))
    with pytest.raises(artefact.ArtefactError, match="made for dsprites"):
        make_variant(other, "naive", artefact=str(directory))


def test_the_command_needs_a_manipulation_artefact(square, tmp_path):
    artefact.save_naive(tmp_path / "naive", _deltas(square), _metadata(square))
    found = subprocess.run(
        [sys.executable, "-m", "perturbations.naive_artefact", str(tmp_path / "naive"),
         f"--out={tmp_path / 'out'}"], cwd=ROOT, capture_output=True, text=True,
        timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert found.returncode != 0
    assert "built from the references of a manipulation artefact, found kind 'naive'" in (
        found.stderr)
    assert "Traceback" not in found.stderr
    assert not (tmp_path / "out").exists()


def test_a_swapped_naive_artefact_is_its_own_variant(square, tmp_path):
    """--towards=disentangled writes the control with the references' roles swapped: a run
    names it 'naive_swapped', and neither name loads the other's artefact."""
    deltas = _deltas(square)
    artefact.save_naive(tmp_path / "swapped", deltas, _metadata(square, towards="disentangled"))
    arm = make_variant(square, "naive_swapped", artefact=str(tmp_path / "swapped"))
    assert arm.describe()["variant"] == "naive_swapped"
    assert arm.describe()["delta"].startswith("clip(x + (r_dis - r_ent)")
    assert arm.at(0.5).describe()["variant"] == "naive_swapped"
    with pytest.raises(ValueError, match="defines the 'naive_swapped' variant"):
        make_variant(square, "naive", artefact=str(tmp_path / "swapped"))
    artefact.save_naive(tmp_path / "plain", deltas, _metadata(square))
    with pytest.raises(ValueError, match="defines the 'naive' variant"):
        make_variant(square, "naive_swapped", artefact=str(tmp_path / "plain"))
    artefact.save_naive(tmp_path / "odd", deltas, _metadata(square, towards="sideways"))
    with pytest.raises(artefact.ArtefactError, match="'towards' must be one of"):
        make_variant(square, "naive", artefact=str(tmp_path / "odd"))
    with pytest.raises(ValueError, match="needs data.artefact"):
        make_variant(square, "naive_swapped")
