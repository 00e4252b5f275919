"""Perturbation artefacts: one directory that turns a dataset into its modified or noisy variant.

    ARTEFACT/metadata.json          {"schema_version", "kind": "manipulation" | "noise",
                                     "dataset", "factor_sizes", "observation_shape", "eps",
                                     ... provenance (reference runs, MIG, seeds, version)}
    ARTEFACT/manipulation.weights.h5   the weights of m(w) (kind 'manipulation' only)

Nothing is executed from an artefact: metadata is JSON, weights are HDF5 arrays loaded
into a network this code builds. Images are computed on the fly from the weights (any
index, any batch), so a modified Shapes3D never needs a 5.9 GB copy; `--export` of the
generator writes one in the official format for other tools.
"""

from __future__ import annotations

import json
import pathlib

from benchmark.atomic import atomic_path
from benchmark.data.ground_truth import GroundTruthData
from benchmark.data.variants import AdditivePerturbation, NoisyData

SCHEMA_VERSION = 1
KINDS = ("manipulation", "noise")
WEIGHTS = "manipulation.weights.h5"
SUITE_VERSION = "0.1.0"


class ArtefactError(ValueError):
    """An artefact directory that cannot be loaded; the message says what was expected."""


def write_metadata(directory, metadata: dict) -> pathlib.Path:
    """Writes metadata.json (temp name, then renamed), adding schema and suite versions."""
    if metadata.get("kind") not in KINDS:
        raise ValueError(f"artefact kind must be one of {KINDS}, found {metadata.get('kind')!r}")
    payload = {"schema_version": SCHEMA_VERSION, "suite_version": SUITE_VERSION, **metadata}
    path = pathlib.Path(directory) / "metadata.json"
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(payload, indent=2, sort_keys=True))
    return path


def save_manipulation(directory, manipulation, metadata: dict) -> pathlib.Path:
    """Saves m(w)'s weights and the metadata (kind 'manipulation'); returns the directory."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / WEIGHTS, ".weights.h5") as tmp:
        manipulation.save_weights(str(tmp))
    write_metadata(directory, {**metadata, "kind": "manipulation"})
    return directory


def read_metadata(directory) -> dict:
    """The validated metadata.json of an artefact directory."""
    path = pathlib.Path(directory) / "metadata.json"
    if not path.is_file():
        raise ArtefactError(f"perturbation artefact {directory}: expected a metadata.json "
                            "there, found none")
    try:
        metadata = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ArtefactError(f"{path}: expected JSON, found unreadable content ({error})")
    if not isinstance(metadata, dict):
        raise ArtefactError(f"{path}: expected a JSON object, found {type(metadata).__name__}")
    missing = [k for k in ("schema_version", "kind", "dataset", "factor_sizes", "eps")
               if k not in metadata]
    if missing:
        raise ArtefactError(f"{path}: missing keys {missing}")
    if metadata["schema_version"] != SCHEMA_VERSION:
        raise ArtefactError(f"{path}: expected schema_version {SCHEMA_VERSION}, found "
                            f"{metadata['schema_version']}")
    if metadata["kind"] not in KINDS:
        raise ArtefactError(f"{path}: expected kind in {KINDS}, found {metadata['kind']!r}")
    eps = metadata["eps"]
    if not isinstance(eps, (int, float)) or not 0.0 < float(eps) <= 1.0:
        raise ArtefactError(f"{path}: expected eps in (0, 1], found {eps!r}")
    return metadata


def load_variant(data: GroundTruthData, directory, eps: float | None = None
                 ) -> AdditivePerturbation:
    """`data` perturbed by the artefact in `directory` ('modified' or 'noisy' variant).

    eps overrides the artefact's strength (the robustness sweep of the report)."""
    metadata = read_metadata(directory)
    if metadata["dataset"] != data.name or list(metadata["factor_sizes"]) != list(
            data.factor_sizes):
        raise ArtefactError(
            f"perturbation artefact {directory}: made for {metadata['dataset']} with factor "
            f"sizes {metadata['factor_sizes']}, found dataset {data.name} with "
            f"{list(data.factor_sizes)}")
    strength = float(metadata["eps"] if eps is None else eps)
    provenance = {"artefact": str(directory)}
    if metadata["kind"] == "noise":
        variant = NoisyData(data, eps=strength, seed=int(metadata.get("seed", 0)))
        variant.metadata.update(provenance)
        return variant
    from perturbations.manipulation import manipulation_delta_fn, manipulation_network

    weights = pathlib.Path(directory) / WEIGHTS
    if not weights.is_file():
        raise ArtefactError(f"perturbation artefact {directory}: expected {WEIGHTS}, found none")
    network = manipulation_network(data.num_factors, tuple(data.observation_shape))
    try:
        network.load_weights(str(weights))
    except (ValueError, OSError, KeyError) as error:
        raise ArtefactError(f"{weights}: expected the weights of m(w) for "
                            f"{data.num_factors} factors and images "
                            f"{tuple(data.observation_shape)}, could not load them ({error})")
    return AdditivePerturbation(data, manipulation_delta_fn(network, data.factor_sizes),
                                strength, variant="modified", metadata=provenance)
