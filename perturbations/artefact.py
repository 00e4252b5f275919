"""Perturbation artefacts: one directory that turns a dataset into its modified or noisy variant.

    ARTEFACT/metadata.json          {"schema_version", "kind": "manipulation" | "noise" |
                                     "naive", "dataset", "factor_sizes",
                                     "observation_shape", "eps", "weights_sha256"
                                     (manipulation), "seed" (noise), "deltas_sha256" (naive),
                                     "fixed_factors" (optional: {factor name: class} of
                                     a dataset reduced by benchmark/data/subset.py),
                                     ... provenance (reference runs, MIG, seeds, version)}
    ARTEFACT/manipulation.weights.h5   the weights of m(w) (kind 'manipulation' only)
    ARTEFACT/naive_deltas.npz          kind 'naive' only: 'deltas', float32 (num_images,
                                     *observation_shape), the move of every image of the
                                     grid (perturbations/naive.py), by grid index

Nothing is executed from an artefact: metadata is JSON, weights are HDF5 arrays loaded
into a network this code builds. An artefact is untrusted input: metadata.json is checked
key by key with strict JSON types (a bool is not a number, "1" is not 1), and the weights
file must match the SHA-256 that metadata.json records for it, so flipped bytes or a
swapped file are refused instead of loading as a silently different m(w). Images are
computed on the fly from the weights (any index, any batch), so a modified Shapes3D never
needs a 5.9 GB copy; `--export` of the generator writes one in the official format for
other tools.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
import numbers
import pathlib
import re

import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import UserError
from benchmark.data.files import file_sha256
from benchmark.data.ground_truth import GroundTruthData
from benchmark.data.variants import AdditivePerturbation, NoisyData
from perturbations.naive import TOWARDS, NaiveData

SCHEMA_VERSION = 1
KINDS = ("manipulation", "noise", "naive")
WEIGHTS = "manipulation.weights.h5"
WEIGHTS_SHA256 = "weights_sha256"
DELTAS = "naive_deltas.npz"
DELTAS_SHA256 = "deltas_sha256"
#: what the suite found about an artefact (perturbations/diagnostics.py writes it)
EVIDENCE = "evidence.json"
SUITE_VERSION = "0.1.0"
MAX_METADATA_BYTES = 1 << 20          # metadata.json is a few KB; refuse anything huge
#: factor vectors averaged for the texture control's E_w m(w) (the whole grid when smaller)
TEXTURE_POINTS = 20000


class ArtefactError(UserError, ValueError):
    """An artefact directory that cannot be loaded; the message says what was expected."""


def _shown(value) -> str:
    """A value with its JSON type, for error messages: '"1" (str)', 'true (bool)'."""
    text = json.dumps(value) if isinstance(value, (str, bool, type(None))) else repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({type(value).__name__})"


def is_integer(value) -> bool:
    """A JSON integer: int and not bool (json loads true as True, an int subclass)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite real number (a JSON int or float), not a bool, not NaN/inf."""
    return (isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value))


def read_json_object(path, error=ValueError, max_bytes: int = MAX_METADATA_BYTES) -> dict:
    """The JSON object in `path`; `error` naming the file when it is missing, too large,
    not UTF-8 JSON, nested too deeply to parse, or not an object."""
    path = pathlib.Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{path}: expected a JSON file under {max_bytes} bytes, found "
                        f"{size} bytes")
        value = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: expected JSON, found unreadable content ({exc})") from None
    except RecursionError:
        raise error(f"{path}: expected JSON, found values nested too deeply to parse"
                    ) from None
    except OSError as exc:
        raise error(f"{path}: could not read it ({exc})") from exc
    if not isinstance(value, dict):
        raise error(f"{path}: expected a JSON object, found {type(value).__name__}")
    return value


def check_eps(eps, source) -> float:
    """eps as a float in (0, 1]; ArtefactError naming `source` otherwise."""
    if not is_number(eps) or not 0.0 < float(eps) <= 1.0:
        raise ArtefactError(f"{source}: expected eps in (0, 1] (a number), found {_shown(eps)}")
    return float(eps)


def write_metadata(directory, metadata: dict) -> pathlib.Path:
    """Writes metadata.json (temp name, then renamed), adding schema and suite versions."""
    if metadata.get("kind") not in KINDS:
        raise ValueError(f"artefact kind must be one of {KINDS}, found {metadata.get('kind')!r}")
    payload = {"schema_version": SCHEMA_VERSION, "suite_version": SUITE_VERSION, **metadata}
    path = pathlib.Path(directory) / "metadata.json"
    write_json(path, payload)
    return path


def save_manipulation(directory, manipulation, metadata: dict) -> pathlib.Path:
    """Saves m(w)'s weights and the metadata (kind 'manipulation'); returns the directory."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / WEIGHTS, ".weights.h5") as tmp:
        manipulation.save_weights(str(tmp))
        digest = file_sha256(tmp)
    write_metadata(directory, {**metadata, "kind": "manipulation", WEIGHTS_SHA256: digest})
    return directory


def read_metadata(directory) -> dict:
    """The validated metadata.json of an artefact directory (strict JSON types)."""
    path = pathlib.Path(directory) / "metadata.json"
    if not path.is_file():
        raise ArtefactError(f"perturbation artefact {directory}: expected a metadata.json "
                            "there, found none")
    metadata = read_json_object(path, ArtefactError)
    required = ["schema_version", "kind", "dataset", "factor_sizes", "eps"]
    kind = metadata.get("kind")
    digest_key = {"manipulation": WEIGHTS_SHA256, "naive": DELTAS_SHA256}.get(
        kind if isinstance(kind, str) else None)
    if digest_key:
        required.append(digest_key)
    missing = [k for k in required if k not in metadata]
    if missing:
        raise ArtefactError(f"{path}: missing keys {missing}")

    def require(ok: bool, key: str, expected: str) -> None:
        if not ok:
            raise ArtefactError(f"{path}: expected {key} {expected}, found "
                                f"{_shown(metadata[key])}")

    version = metadata["schema_version"]
    require(is_integer(version) and version == SCHEMA_VERSION, "schema_version",
            f"{SCHEMA_VERSION} (a JSON integer)")
    require(metadata["kind"] in KINDS, "kind", f"one of {list(KINDS)}")
    require(isinstance(metadata["dataset"], str) and metadata["dataset"] != "", "dataset",
            "a dataset name (string)")
    sizes = metadata["factor_sizes"]
    require(isinstance(sizes, list) and len(sizes) > 0
            and all(is_integer(s) and s >= 1 for s in sizes), "factor_sizes",
            "a non-empty list of positive integers")
    check_eps(metadata["eps"], path)
    if "observation_shape" in metadata:
        shape = metadata["observation_shape"]
        require(isinstance(shape, list) and len(shape) == 3
                and all(is_integer(s) and s >= 1 for s in shape), "observation_shape",
                "a list of 3 positive integers")
    if metadata["kind"] == "noise" and "seed" in metadata:
        seed = metadata["seed"]
        require(is_integer(seed) and 0 <= seed < 2 ** 64, "seed",
                "an integer in [0, 2**64)")
    if "fixed_factors" in metadata:
        fixed = metadata["fixed_factors"]
        require(isinstance(fixed, dict) and all(
            isinstance(k, str) and is_integer(v) and v >= 0 for k, v in fixed.items()),
            "fixed_factors", "an object {factor name: class (a non-negative integer)}")
    if digest_key:
        digest = metadata[digest_key]
        require(isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest) is not None,
                digest_key, "a SHA-256 as 64 lowercase hex digits")
    return metadata


def verify_weights(directory, metadata: dict, name: str = WEIGHTS,
                   digest_key: str = WEIGHTS_SHA256) -> pathlib.Path:
    """The weights file (or a naive artefact's deltas: name DELTAS, digest_key
    DELTAS_SHA256) of an artefact, after checking that its SHA-256 is the one
    metadata.json records; ArtefactError naming the file otherwise."""
    weights = pathlib.Path(directory) / name
    if not weights.is_file():
        raise ArtefactError(f"perturbation artefact {directory}: expected {name}, found none")
    found = file_sha256(weights)
    if found != metadata[digest_key]:
        raise ArtefactError(f"{weights}: expected SHA-256 {metadata[digest_key]} (as "
                            f"recorded in metadata.json), found {found}: the file "
                            "was altered or replaced")
    return weights


def save_naive(directory, deltas: np.ndarray, metadata: dict) -> pathlib.Path:
    """Saves a naive artefact: its deltas (float32 (num_images, *observation_shape), x +
    delta in [0, 1]) and the metadata (kind 'naive'); returns the directory."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with atomic_path(directory / DELTAS, ".npz") as tmp:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, deltas=np.asarray(deltas, np.float32))
        digest = file_sha256(tmp)
    write_metadata(directory, {**metadata, "kind": "naive", DELTAS_SHA256: digest})
    return directory


def load_naive_deltas(data: GroundTruthData, directory, metadata: dict) -> np.ndarray:
    """The deltas of a naive artefact made for `data` (checked: SHA-256, shape (num_images,
    *observation_shape), finite, within [-1, 1]): float32, by grid index."""
    path = verify_weights(directory, metadata, DELTAS, DELTAS_SHA256)
    try:
        with np.load(path, allow_pickle=False) as stored:
            deltas = stored["deltas"]
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile,
            zlib.error) as error:
        raise ArtefactError(f"{path}: expected an .npz with a float array 'deltas', "
                            f"could not read it ({error})") from None
    expected = (data.num_images, *[int(s) for s in data.observation_shape])
    if deltas.shape != expected or deltas.dtype != np.float32:
        raise ArtefactError(f"{path}: expected deltas float32 {expected} (one per image of "
                            f"the grid), found {deltas.dtype} {deltas.shape}")
    if not (np.isfinite(deltas).all() and np.abs(deltas).max() <= 1.0):
        raise ArtefactError(f"{path}: expected finite deltas in [-1, 1], found values "
                            "outside that range")
    return deltas


def fixed_factors_of(data: GroundTruthData) -> dict:
    """{factor name: class} that `data` holds fixed (a FactorSubset), {} for a full dataset."""
    return dict(getattr(data, "fixed", None) or {})


def check_artefact_matches(data: GroundTruthData, directory, metadata: dict) -> None:
    """ArtefactError unless the artefact was made for `data`: the same dataset, factor
    sizes and fixed factors (two reductions with equal sizes, e.g. the square's and the
    ellipse's posX x posY, are different datasets)."""
    made_for = (metadata["dataset"], list(metadata["factor_sizes"]),
                dict(metadata.get("fixed_factors") or {}))
    found = (data.name, [int(s) for s in data.factor_sizes], fixed_factors_of(data))
    if made_for != found:
        raise ArtefactError(
            f"perturbation artefact {directory}: made for {made_for[0]} with factor sizes "
            f"{made_for[1]} and fixed factors {made_for[2] or 'none'}, found dataset "
            f"{found[0]} with {found[1]} and fixed factors {found[2] or 'none'} "
            "(data.fixed_factors must be the artefact's)")


def artefact_dataset(metadata: dict, source: str | None = None) -> GroundTruthData:
    """The dataset an artefact was made for, from `source` (default: its recorded source,
    else 'auto'), reduced to its fixed factors when it records some."""
    from benchmark.data import get_dataset

    data = get_dataset(metadata["dataset"], source or metadata.get("source") or "auto")
    if metadata.get("fixed_factors"):
        from benchmark.data.subset import FactorSubset
        data = FactorSubset(data, metadata["fixed_factors"])
    return data


def mean_manipulation(network, data: GroundTruthData, max_points: int = TEXTURE_POINTS,
                      seed: int = 0) -> np.ndarray:
    """E_w m(w): float32 (*observation_shape,) in [-1, 1], over every factor vector of the
    grid when it has at most `max_points`, else over a uniform sample of that many (seeded).
    The fixed texture of the 'modified_texture' control."""
    from perturbations.manipulation import manipulation_delta_fn

    if data.num_images <= max_points:
        factors = data.factors_of(np.arange(data.num_images))
    else:
        factors = data.sample_factors(int(max_points), np.random.default_rng([int(seed), 11]))
    delta = manipulation_delta_fn(network, data.factor_sizes)
    total = np.zeros(tuple(data.observation_shape), np.float64)
    for start in range(0, len(factors), 1024):
        total += delta(factors[start:start + 1024]).sum(axis=0, dtype=np.float64)
    return (total / len(factors)).astype(np.float32)


def artefact_warnings(directory) -> list[str]:
    """What an artefact's own evidence.json says against using it, one sentence each: its
    diagnostics put it below the minimum effect, or it failed its re-adaptation gate.
    [] when evidence.json says neither or is absent (an artefact never diagnosed); an
    unreadable evidence.json is itself a warning (a data file, never trusted blindly)."""
    path = pathlib.Path(directory) / EVIDENCE
    if not path.is_file():
        return []
    try:
        evidence = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return [f"its evidence.json cannot be read ({error})"]
    if not isinstance(evidence, dict):
        return ["its evidence.json is not a JSON object"]
    warnings = []
    if evidence.get("below_minimum_effect") is True:
        warnings.append("its own diagnostics put it below the minimum effect (evidence.json "
                        "below_minimum_effect): its perturbation is too small or too little "
                        "factor-dependent to test anything")
    if evidence.get("readaptation_gate_passed") is False:
        warnings.append("it failed its re-adaptation gate (evidence.json "
                        "readaptation_gate_passed): the game's objective does not prefer it")
    return warnings


def load_variant(data: GroundTruthData, directory, eps: float | None = None,
                 texture: bool = False) -> AdditivePerturbation:
    """`data` perturbed by the artefact in `directory` ('modified', 'noisy', 'naive' or
    'naive_swapped' variant, by the artefact's kind and a naive move's 'towards').

    eps overrides the artefact's strength (the robustness sweep of the report).
    texture: the 'modified_texture' control of a manipulation artefact instead: the same
    pattern E_w m(w) (`mean_manipulation`) added to every image: m's mean, without its
    variance along the factors. At the same eps it changes the images
    less than m(w) does, the more so the more of m depends on w (2-factor ellipse
    artefact: mean |dx| 7x less; `python -m benchmark.data match` sizes it)."""
    metadata = read_metadata(directory)
    check_artefact_matches(data, directory, metadata)
    strength = check_eps(metadata["eps"] if eps is None else eps,
                         f"perturbation artefact {directory}" if eps is None else "data.eps")
    provenance = {"artefact": str(directory)}
    warnings = artefact_warnings(directory)
    if warnings:           # in describe(): the run's log, results.json and the report
        provenance["artefact_warnings"] = warnings
    if texture and metadata["kind"] != "manipulation":
        raise ArtefactError(f"perturbation artefact {directory}: the 'modified_texture' "
                            f"variant needs a manipulation artefact, found kind "
                            f"{metadata['kind']!r}")
    if metadata["kind"] == "naive":
        # the deltas move these very pixels: images from another source (the official
        # file against the renderer) would be moved by another image's delta
        source = data.describe().get("source")
        if metadata.get("source") and source != metadata["source"]:
            raise ArtefactError(f"perturbation artefact {directory}: its moves were computed "
                                f"on {metadata['source']} images, found {source} images "
                                f"(set data.source = '{metadata['source']}')")
        towards = metadata.get("towards", "entangled")    # artefacts before 'towards'
        if not isinstance(towards, str) or towards not in TOWARDS:
            raise ArtefactError(f"perturbation artefact {directory}: 'towards' must be one of "
                                f"{sorted(TOWARDS)}, found {towards!r}")
        variant = NaiveData(data, strength, None, None,
                            deltas=load_naive_deltas(data, directory, metadata),
                            towards=towards)
        variant.metadata.update(provenance)
        return variant
    if metadata["kind"] == "noise":
        variant = NoisyData(data, eps=strength, seed=int(metadata.get("seed", 0)))
        variant.metadata.update(provenance)
        return variant
    from perturbations.manipulation import manipulation_delta_fn

    network = load_manipulation_network(data, directory, metadata)
    if texture:
        pattern = mean_manipulation(network, data)
        return AdditivePerturbation(
            data, lambda factors: np.repeat(pattern[None], len(factors), axis=0),
            strength, variant="modified_texture", metadata=provenance)
    return AdditivePerturbation(data, manipulation_delta_fn(network, data.factor_sizes),
                                strength, variant="modified", metadata=provenance)


def load_manipulation_network(data: GroundTruthData, directory, metadata: dict | None = None):
    """The network m(w) of a manipulation artefact, weights loaded after their SHA-256 is
    checked: scaled factors float32 (n, k) in [0, 1] -> m float32 (n, *observation_shape)
    in [-1, 1]. `metadata`: the artefact's validated metadata (read here when None)."""
    from perturbations.manipulation import manipulation_network

    metadata = read_metadata(directory) if metadata is None else metadata
    if metadata["kind"] != "manipulation":
        raise ArtefactError(f"perturbation artefact {directory}: expected kind "
                            f"'manipulation' (a network m(w)), found {metadata['kind']!r}")
    weights = verify_weights(directory, metadata)
    network = manipulation_network(data.num_factors, tuple(data.observation_shape))
    try:
        network.load_weights(str(weights))
    except (ValueError, OSError, KeyError) as error:
        raise ArtefactError(f"{weights}: expected the weights of m(w) for "
                            f"{data.num_factors} factors and images "
                            f"{tuple(data.observation_shape)}, could not load them ({error})")
    return network
