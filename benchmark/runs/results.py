"""A run's results: results.json (schema version 2) and arrays.npz, their reader (v1 too),
and the tidy per-run table of a study (`load(DIR) -> pandas.DataFrame`).

results.json, schema version 2 (written last by `benchmark.run`; a run directory is
finished only when it exists):
    schema_version   2
    model, seed      the method's name, the run's seed
    dataset          the dataset's description (name, variant, eps, factor names and sizes,
                     source, ...), as `GroundTruthData.describe()` gives it
    hyperparameters  the operative gin bindings, flat and JSON-typed:
                     {"beta_vae.beta": 8.0, "data.variant": "noisy", "run.metrics": ["mig"],
                      "data.fixed_factors": {"shape": 0}, ...} (`scope/configurable.param`
                     for a scoped binding; references stay "@name", macros "%NAME")
    scalars          every scalar score, flat with namespaced keys: "metric/mig",
                     "metric/dci/disentanglement", "metric/factor_vae_score/train",
                     "health/active_units", "health/overpruned", "health/psnr",
                     "loss/kl", ... (`metric_key`; a non-finite number is null)
    arrays           {name: shape} of the per-factor vectors and matrices, stored beside
                     results.json in arrays.npz under the same names ("metric/mig/per_factor",
                     "metric/dci/importance_matrix", "health/mean_posterior_variance", ...;
                     read with allow_pickle=False: `read_arrays`)
    errors           {metric: why it is undefined on this representation}
    metric_settings  the settings behind every score (benchmark/metrics/settings.py)
    settings         the resolved run.* settings
    steps, resumed_from, train_seconds, eval_seconds (the metrics with their sample; absent
                     before 2026-11-24), wall_seconds
    gin_config       the operative config text (what `hyperparameters` was parsed from; the
                     exact configuration to rerun, and the identity of runs written before
                     fingerprint.json)
    fingerprint, suite_version
Schema version 1 (the runs published before version 2) nests the scores per metric
(`metrics: {"mig": {"mig": ..., "mig_per_factor": [...]}, "health": {...}}`), keeps the
losses in `final_losses` and the config only as text; `read` turns it into the version-2
layout with the same functions that write version 2, so both give the same numbers.

Both files are written to a temporary name and renamed (benchmark/core/atomic.py), arrays.npz
first, so a results.json never names arrays that are not there.
"""

from __future__ import annotations

import json
import math
import pathlib
from typing import Iterable

import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.runs.fingerprint import binding_statements

SCHEMA_VERSION = 2
FILE_NAME = "results.json"
ARRAYS = "arrays.npz"
#: top-level fields of a results.json v2 (readers ignore others)
FIELDS = ("schema_version", "model", "seed", "dataset", "hyperparameters", "scalars",
          "arrays", "errors", "metric_settings", "settings", "steps", "resumed_from",
          "train_seconds", "eval_seconds", "wall_seconds", "machine", "gin_config",
          "fingerprint", "suite_version")
#: the table's identity and bookkeeping columns, in order (then config/*, scalars, error/*)
IDENTITY = ("model", "dataset", "variant", "eps", "seed", "run_dir", "schema_version",
            "fingerprint", "steps", "train_seconds", "wall_seconds")
#: prefix of the hyperparameter columns of the table
CONFIG = "config/"


class ResultsError(ValueError):
    """A results.json (or arrays.npz) that cannot be read: the message names the file and
    what was expected."""


# ----------------------------------------------------------------------------- keys


def metric_key(group: str, key: str) -> str:
    """The namespaced name of score `key` of metric `group`: 'health/<key>' for the run's
    health, else 'metric/<group>' for the metric's own score (mig.mig) and
    'metric/<group>/<key without the group's prefix>' for the others
    (dci.dci_disentanglement -> metric/dci/disentanglement)."""
    if group == "health":
        return f"health/{key}"
    if key == group:
        return f"metric/{group}"
    if key.startswith(f"{group}_"):
        key = key[len(group) + 1:]
    return f"metric/{group}/{key}"


def _scalar(value):
    """JSON form of a scalar (numpy scalars as Python ones; a non-finite number as None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, np.generic))


def _as_array(value) -> np.ndarray | None:
    """A numeric (or boolean) array of a list of numbers, None for anything else (ragged,
    strings, objects)."""
    try:
        array = np.asarray(value)
    except ValueError:
        return None
    return array if array.dtype.kind in "biuf" else None


def flatten_scores(scores: dict, final_losses: dict | None = None
                   ) -> tuple[dict, dict[str, np.ndarray], dict, dict]:
    """(scalars, arrays, errors, other) of the runner's nested scores ({metric: {score:
    value}}, 'health' among them) and its final loss terms: scalars and arrays under
    `metric_key` names, losses as 'loss/<term>', each metric's recorded error under its
    name, and values of no other kind (a ragged list, say) as they were, under their
    namespaced names."""
    scalars, arrays, errors, other = {}, {}, {}, {}
    for group, values in scores.items():
        if not isinstance(values, dict):
            raise ValueError(f"scores of {group!r}: expected a dict, found "
                             f"{type(values).__name__}")
        for key, value in values.items():
            if key == "error" and group != "health":
                errors[group] = str(value)
                continue
            name = metric_key(group, key)
            if name in scalars or name in arrays or name in other:    # never overwrite
                name = f"{'health' if group == 'health' else 'metric/' + group}/{key}"
            if _is_scalar(value):
                scalars[name] = _scalar(value)
            elif (array := _as_array(value)) is not None:
                arrays[name] = array
            else:
                other[name] = value
    for term, value in (final_losses or {}).items():
        scalars[f"loss/{term}"] = _scalar(value)
    return scalars, arrays, errors, other


# ----------------------------------------------------------------------- hyperparameters


def _json_value(value):
    """A parsed gin value as JSON: tuples as lists, dict keys as text, a non-finite float
    as its repr."""
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else json.dumps(_json_value(k)): _json_value(v)
                for k, v in value.items()}
    return repr(value)


def hyperparameters_of(config_text: str) -> dict:
    """{'configurable.param': value} of a gin config text (gin's own parser; a scoped
    binding as 'scope/configurable.param', a macro by its name; import lines dropped),
    values JSON-typed. Raises ValueError on text gin cannot parse."""
    return {key: _json_value(value) for key, value in binding_statements(config_text)}


def gin_text(value) -> str:
    """A hyperparameter's value as gin writes it (8.0, 1e-05, 'noisy', [1, 2], True)."""
    return repr(value)


# --------------------------------------------------------------------------- writing


def write(run_dir, *, model: str, seed: int, dataset: dict, scores: dict,
          final_losses: dict, gin_config: str, metric_settings: dict | None = None,
          settings: dict | None = None, steps: int | None = None,
          resumed_from: int | None = None, train_seconds: float | None = None,
          wall_seconds: float | None = None, fingerprint: str | None = None,
          suite_version: str | None = None, eval_seconds: float | None = None,
          machine: dict | None = None, timings: dict | None = None) -> pathlib.Path:
    """Writes arrays.npz, then results.json (schema version 2) into `run_dir`, each to a
    temporary name renamed on success; returns the results.json path. scores: the runner's
    nested {metric: {score: value}} ('health' among them). eval_seconds: the metrics' time,
    their sample's drawing and encoding included (None: not measured). machine: the CPU
    and the run's load (benchmark.core.machine.run_record; None: not recorded). timings: where
    the run's time went outside the steps, {name: seconds} (benchmark/runs/run.py; None: not
    recorded)."""
    run_dir = pathlib.Path(run_dir)
    scalars, arrays, errors, other = flatten_scores(scores, final_losses)
    payload = {"schema_version": SCHEMA_VERSION, "model": model, "seed": seed,
               "dataset": dataset, "hyperparameters": hyperparameters_of(gin_config),
               "scalars": scalars,
               "arrays": {name: list(a.shape) for name, a in sorted(arrays.items())},
               "errors": errors, "metric_settings": metric_settings,
               "settings": settings, "steps": steps, "resumed_from": resumed_from,
               "train_seconds": train_seconds, "eval_seconds": eval_seconds,
               "wall_seconds": wall_seconds, "machine": machine, "timings": timings,
               "gin_config": gin_config, "fingerprint": fingerprint,
               "suite_version": suite_version}
    if other:
        payload["other"] = other
    write_arrays(run_dir / ARRAYS, arrays)
    return write_json(run_dir / FILE_NAME, payload)


def write_arrays(path, arrays: dict[str, np.ndarray]) -> None:
    with atomic_path(path, ".npz") as tmp, open(tmp, "wb") as f:
        np.savez(f, **{name: np.asarray(a) for name, a in arrays.items()})


# --------------------------------------------------------------------------- reading


def _results_path(path) -> pathlib.Path:
    path = pathlib.Path(path)
    return path / FILE_NAME if path.is_dir() else path


def _expect(condition: bool, path, what: str, found) -> None:
    if not condition:
        shown = repr(found)
        raise ResultsError(f"{path}: expected {what}, found "
                           f"{shown if len(shown) <= 80 else shown[:77] + '...'}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_json(path: pathlib.Path) -> dict:
    what = ("a results.json of benchmark.run (a JSON object, schema version 1 or "
            f"{SCHEMA_VERSION})")
    try:
        payload = json.loads(path.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ResultsError(f"{path}: expected {what}, found unreadable JSON ({error})"
                           ) from None
    except RecursionError:
        raise ResultsError(f"{path}: expected {what}, found values nested too deeply to "
                           "parse") from None
    except OSError as error:
        raise ResultsError(f"{path}: could not read it ({error})") from None
    _expect(isinstance(payload, dict), path, what, type(payload).__name__)
    return payload


def _upgrade_v1(payload: dict, path) -> tuple[dict, dict[str, np.ndarray]]:
    """The version-2 layout (and arrays) of a version-1 payload."""
    metrics = payload.get("metrics")
    _expect(isinstance(metrics, dict) and all(isinstance(v, dict) for v in metrics.values()),
            path, "'metrics', an object of {metric: {score: value}} (schema version 1)",
            metrics)
    losses = payload.get("final_losses") or {}
    _expect(isinstance(losses, dict), path, "'final_losses', an object of loss terms", losses)
    scalars, arrays, errors, other = flatten_scores(metrics, losses)
    upgraded = {k: payload.get(k) for k in FIELDS}
    upgraded.update(schema_version=1, scalars=scalars, errors=errors,
                    arrays={name: list(a.shape) for name, a in sorted(arrays.items())},
                    hyperparameters=_hyperparameters(payload.get("gin_config"), path))
    if other:
        upgraded["other"] = other
    return upgraded, arrays


def _hyperparameters(text, path) -> dict:
    if text is None:
        return {}
    _expect(isinstance(text, str), path, "'gin_config', the operative gin config text", text)
    try:
        return hyperparameters_of(text)
    except ValueError as error:
        raise ResultsError(f"{path}: expected 'gin_config', a gin config text, found text "
                           f"gin cannot parse ({error})") from None


def _check(result: dict, path) -> None:
    """The fields every reader relies on, with their types."""
    _expect(isinstance(result.get("model"), str), path, "'model', the method's name",
            result.get("model"))
    _expect(_is_int(result.get("seed")), path, "'seed', an integer", result.get("seed"))
    dataset = result.get("dataset")
    _expect(isinstance(dataset, dict) and isinstance(dataset.get("name"), str), path,
            "'dataset', an object with the dataset's 'name'", dataset)
    _expect(isinstance(dataset.get("variant", "original"), str), path,
            "'dataset.variant', a text", dataset.get("variant"))
    eps = dataset.get("eps")
    _expect(eps is None or (isinstance(eps, (int, float)) and not isinstance(eps, bool)),
            path, "'dataset.eps', a number", eps)
    _expect(isinstance(result.get("hyperparameters"), dict), path,
            "'hyperparameters', an object of {binding: value}", result.get("hyperparameters"))
    scalars = result.get("scalars")
    _expect(isinstance(scalars, dict), path, "'scalars', an object of {name: number}", scalars)
    for name, value in scalars.items():
        _expect(value is None or isinstance(value, (bool, int, float, str)), path,
                f"scalars[{name!r}], a number, boolean, text or null", value)
    arrays = result.get("arrays")
    _expect(isinstance(arrays, dict) and all(isinstance(s, list) and all(map(_is_int, s))
                                             for s in arrays.values()),
            path, "'arrays', an object of {name: shape}", arrays)
    errors = result.get("errors")
    _expect(isinstance(errors, dict) and all(isinstance(e, str) for e in errors.values()),
            path, "'errors', an object of {metric: text}", errors)


def read(path) -> dict:
    """The results of one run (its directory, or its results.json) in the version-2 layout
    (a version-1 file converted; `schema_version` says which it was), with 'run_dir'
    added. Raises ResultsError naming the file and what was expected."""
    path = _results_path(path)
    payload = _read_json(path)
    version = payload.get("schema_version", 1)
    _expect(version in (1, SCHEMA_VERSION) and _is_int(version), path,
            f"'schema_version' 1 or {SCHEMA_VERSION}", version)
    if version == 1:
        result, _ = _upgrade_v1(payload, path)
    else:
        result = dict(payload)
    _check(result, path)
    result["run_dir"] = str(path.parent)
    return result


def damage(run_dir, fingerprint: str | None = None) -> str | None:
    """Why a run directory's results.json does not make it a finished run of the
    configuration `fingerprint`, or None when it does: unreadable or not a results file
    (`read`: truncated, edited), or recording another configuration's fingerprint than
    `fingerprint` (a file copied from another run). A results.json that records no
    fingerprint (written before fingerprints) passes on being readable. None also when
    there is no results.json (then the run is simply unfinished)."""
    path = pathlib.Path(run_dir) / FILE_NAME
    if not path.exists():
        return None
    try:
        recorded = read(path).get("fingerprint")
    except ResultsError as error:
        return str(error)
    if fingerprint is not None and recorded is not None and recorded != fingerprint:
        return (f"{path}: records the configuration fingerprint {str(recorded)[:12]}, not "
                f"this run's {fingerprint[:12]}")
    return None


def is_finished(run_dir, fingerprint: str | None = None) -> bool:
    """Whether `run_dir` holds a readable results.json of the configuration `fingerprint`
    (`damage`)."""
    return (pathlib.Path(run_dir) / FILE_NAME).exists() and damage(run_dir, fingerprint) is None


def read_arrays(path) -> dict[str, np.ndarray]:
    """{name: array} of one run (its directory or results.json): arrays.npz for version 2
    (loaded with allow_pickle=False, checked against the shapes results.json lists), the
    lists of a version-1 results.json under the same names."""
    path = _results_path(path)
    result = read(path)
    if result["schema_version"] == 1:
        return _upgrade_v1(_read_json(path), path)[1]
    npz = path.parent / ARRAYS
    try:
        with np.load(npz, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files}
    except (OSError, ValueError) as error:
        raise ResultsError(f"{npz}: expected the arrays {sorted(result['arrays'])} that "
                           f"{path.name} lists, found an unreadable file ({error})") from None
    shapes = {name: list(a.shape) for name, a in arrays.items()}
    _expect(shapes == result["arrays"], npz,
            f"the arrays with the shapes {path.name} lists ({result['arrays']})", shapes)
    return arrays


def find(directory) -> list[pathlib.Path]:
    """Every results.json under `directory` (a finished run each), in path order."""
    return sorted(pathlib.Path(directory).rglob(FILE_NAME))


# ----------------------------------------------------------------------------- table


def row(result: dict) -> dict:
    """One run as a flat table row: identity (model, dataset, variant, eps, seed, run_dir,
    ...), hyperparameters as 'config/<binding>', every scalar under its namespaced name,
    and 'error/<metric>' where a metric was undefined."""
    dataset = result["dataset"]
    eps = dataset.get("eps")
    out = {"model": result["model"], "dataset": dataset["name"],
           "variant": dataset.get("variant", "original"),
           "eps": float(eps) if eps is not None else math.nan, "seed": result["seed"],
           "run_dir": result["run_dir"], "schema_version": result["schema_version"],
           "fingerprint": result.get("fingerprint"), "steps": result.get("steps"),
           "train_seconds": result.get("train_seconds"),
           "wall_seconds": result.get("wall_seconds")}
    if dataset.get("artefact_warnings"):      # what the artefact's evidence said at run time
        out["artefact_warnings"] = "; ".join(map(str, dataset["artefact_warnings"]))
    out.update({f"{CONFIG}{k}": v for k, v in sorted(result["hyperparameters"].items())})
    out.update({k: math.nan if v is None else v for k, v in sorted(result["scalars"].items())})
    out.update({f"error/{k}": v for k, v in sorted(result["errors"].items())})
    return out


def table(results: Iterable[dict]):
    """pandas.DataFrame of `row`s, one per run: identity columns first, then
    hyperparameters, then scalars and errors; a run without a column holds NaN. The
    hyperparameter columns hold each run's JSON value unchanged (object dtype: 1 stays an
    int beside 1e-05, a list or dict binding is a list or dict; `pd.to_numeric` makes one
    numeric); the other columns have the dtypes pandas infers."""
    pd = _pandas()
    rows = [row(r) for r in results]
    columns = list(IDENTITY) + sorted(
        {k for r in rows for k in r if k not in IDENTITY},
        key=lambda k: (not k.startswith(CONFIG), k.startswith("error/"), k))
    frame = pd.DataFrame(rows, columns=columns, dtype=object)
    inferred = [c for c in columns if not c.startswith(CONFIG)]
    frame[inferred] = frame[inferred].infer_objects()
    return frame


def load(directory):
    """The tidy table of every run under `directory` (each directory with a results.json,
    schema version 1 or 2): a pandas.DataFrame with one row per run (`table`). Raises
    ResultsError naming the first unreadable file, or a directory that is not there."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise ResultsError(f"{directory}: expected a directory of runs, found none")
    return table(read(path) for path in find(directory))


def write_csv(frame, path) -> None:
    """The table as CSV (atomically); list and dict cells as JSON text."""
    def cell(value):
        return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value
    text = frame.map(cell).to_csv(index=False)
    with atomic_path(path, ".csv") as tmp:
        tmp.write_text(text)


def _pandas():
    try:
        import pandas
    except ImportError:                              # pragma: no cover (a declared dep)
        raise ImportError("benchmark.runs.results.load needs pandas (pip install pandas; it is "
                          "in the suite's install_requires)") from None
    return pandas
