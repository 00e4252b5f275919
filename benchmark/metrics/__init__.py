"""The field's disentanglement metrics, one module each, one registry.

Every metric has a dataset level, `fn(data, representation_fn, rng, **settings)` (a plain
function, registered with gin in configurables.py: `sap.classifier = 'linear_svm'`), and a
codes level on arrays. `evaluate` runs metrics on a dataset (the runner, hence the study
and the audit); `evaluate_codes` runs them on a saved (factors, codes) sample
(`python -m benchmark.metrics evaluate`).

One settings object: `resolve_settings` reads each metric's settings once, from its
configurable's defaults and the parsed gin bindings (no other defaults below it), checks
them, and adds the seed; `evaluate` passes exactly those values to the dataset-level
function and `evaluate_codes` the same values (less the sampling sizes, which a saved
sample replaces by its row counts, `codes_settings`) to the codes-level core, which the
dataset level calls too. Callers record that object beside the scores (results.json and
evaluate's JSON: `metric_settings`), and the report compares it across runs
(benchmark/metrics/settings.py).

Each metric draws from its own generator, derived from (seed, metric name), so a metric's
number does not depend on which other metrics ran.

One shared sample (the runner's default, `resolve_settings(..., shared_sample=True)`):
metrics that read uniform samples (every one except FactorVAE / β-VAE scores with
`pool_size=None`, which render their own interventions) take their rows from one sample
of (factors, codes), encoded once, instead of each drawing and encoding its own: 20,000
images instead of 70,000 for the default set. Each metric reads the sizes its settings
name (DCI: rows [0, num_train) to train, the next num_test to test; MIG: the first
num_train; the pools: the first pool_size), so every metric's rows are a uniform sample
of the sizes dlib uses, as before; only the metrics' samples are no longer independent of
each other. The sample is drawn in whole chunks from a generator of its own, so its first
n rows do not depend on its size, and a metric's number still does not depend on which
other metrics ran. The setting is recorded as `sample` ('shared' or 'own') in each
metric's settings.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
import zlib
from typing import Callable, Sequence

import gin
import numpy as np
from absl import logging

from benchmark.metrics import (beta_vae, codes, dci, factor_vae, infomec, mcc, mig,
                               modularity, sap, unsupervised)
from benchmark.metrics.configurables import CONFIGURABLES

MetricInputError = codes.MetricInputError

#: the share of a saved sample's rows that predictor-based metrics train on (codes level)
TRAIN_FRACTION = 2 / 3

#: settings that are recorded but never make two scores incomparable: the seed (scores of
#: several seeds are averaged), the code kind (paper 001 reads discrete and continuous
#: codes with their own estimators in one column), and whether the metric's rows came from
#: the shared sample (the same distribution of rows either way)
NOT_COMPARED = ("seed", "discrete", "sample")

#: rows of the shared sample drawn, rendered and encoded at a time (its first n rows are
#: the same whatever its size)
SHARED_CHUNK = 256


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(2**31 - 1))


@dataclasses.dataclass(frozen=True)
class Metric:
    """One registry entry.

    configurable: the gin-configurable dataset-level function (`CONFIGURABLES`: the
      module's plain function as configurables.py registers it); its parameters (after
      data, representation_fn, rng) are the metric's settings.
    from_codes: the codes-level core, fn(factors, codes, rng, settings) -> scores, or with
      `split`, fn(factors_train, codes_train, factors_test, codes_test, rng, settings).
    sampling: settings only the dataset level uses (how many points it encodes, in which
      batches); a saved sample replaces them by its row counts.
    execution_only: settings that do not change the estimate (encode batch size, jobs):
      recorded, never compared.
    fixed: settings this entry fixes whatever gin binds (dci_random_forest's classifier).
    choices: allowed values of enumerated settings, checked before any work.
    suffix: appended to every score key.
    paper: where the metric and its estimator come from.

    Add a metric: its module (dataset level + codes-level core), then one entry in METRICS.
    """
    configurable: Callable
    from_codes: Callable
    sampling: tuple = ()
    execution_only: tuple = ()
    split: bool = False
    fixed: dict = dataclasses.field(default_factory=dict)
    choices: dict = dataclasses.field(default_factory=dict)
    suffix: str = ""
    paper: str = ""

    @property
    def gin_name(self) -> str:
        return self.configurable.__name__


def _dci_codes(f_train, c_train, f_test, c_test, rng, s):
    return dci.dci_from_codes(f_train, c_train, f_test, c_test, rng, s["classifier"],
                              s["n_jobs"])


#: every metric by name (`run.metrics`, `evaluate --metrics`)
METRICS: dict[str, Metric] = {
    "mig": Metric(CONFIGURABLES["mig"],
                  lambda f, c, rng, s: mig.mig_from_codes(f, c, s["num_bins"]),
                  sampling=("num_train", "batch_size"), execution_only=("batch_size",),
                  paper="Chen et al. 2018; disentanglement_lib's estimator"),
    "dci": Metric(CONFIGURABLES["dci"], _dci_codes,
                  sampling=("num_train", "num_test", "batch_size"),
                  execution_only=("batch_size", "n_jobs"), split=True,
                  choices={"classifier": dci.CLASSIFIERS}, paper="Eastwood & Williams 2018"),
    "dci_random_forest": Metric(CONFIGURABLES["dci"], _dci_codes,
                                sampling=("num_train", "num_test", "batch_size"),
                                execution_only=("batch_size", "n_jobs"), split=True,
                                fixed={"classifier": "random_forest"}, suffix="_rf",
                                paper="Eastwood & Williams 2018; paper 001 appendix C.5"),
    "dci_readout": Metric(CONFIGURABLES["dci"], lambda ftr, ctr, fte, cte, rng, s:
                          dci.readout_informativeness(ftr, ctr, fte, cte, rng,
                                                      s["classifier"], s["n_jobs"]),
                          sampling=("num_train", "num_test", "batch_size"),
                          execution_only=("batch_size", "n_jobs"), split=True,
                          choices={"classifier": dci.CLASSIFIERS},
                          paper="the suite's: DCI-I of the code and its linear readout"),
    "sap": Metric(CONFIGURABLES["sap"], lambda ftr, ctr, fte, cte, rng, s: sap.sap_from_codes(
        ftr, ctr, fte, cte, s["classifier"], seed=_seed(rng)),
        sampling=("num_train", "num_test", "batch_size"), execution_only=("batch_size",),
        split=True, choices={"classifier": sap.CLASSIFIERS}, paper="Kumar et al. 2018"),
    "modularity_explicitness": Metric(
        CONFIGURABLES["modularity_explicitness"],
        lambda ftr, ctr, fte, cte, rng, s: modularity.modularity_explicitness_from_codes(
            ftr, ctr, fte, cte, s["num_bins"]),
        sampling=("num_train", "num_test", "batch_size"), execution_only=("batch_size",),
        split=True, paper="Ridgeway & Zemel 2018; disentanglement_lib's estimators"),
    "infomec": Metric(
        CONFIGURABLES["infomec"], lambda f, c, rng, s: infomec.infomec_from_codes(
            f, c, s["n_neighbors"], s["prune_fraction"], s["discrete"], s["test_fraction"],
            seed=_seed(rng)),
        sampling=("num_points", "batch_size"), execution_only=("batch_size",),
        paper="paper 001 sec. 4, eqs. 6-14"),
    "factor_vae_score": Metric(
        CONFIGURABLES["factor_vae_score"],
        lambda f, c, rng, s: factor_vae.factor_vae_score_from_codes(
            f, c, rng, s["batch_size"], s["num_train"], s["num_eval"],
            s["num_variance_estimate"], s["prune_threshold"], s["prune_relative"]),
        sampling=("pool_size",), paper="Kim & Mnih 2018; disentanglement_lib's protocol"),
    "beta_vae_score": Metric(
        CONFIGURABLES["beta_vae_score"],
        lambda f, c, rng, s: beta_vae.beta_vae_score_from_codes(
            f, c, rng, s["batch_size"], s["num_train"], s["num_eval"]),
        sampling=("pool_size",), paper="Higgins et al. 2017; disentanglement_lib's protocol"),
    "unsupervised": Metric(CONFIGURABLES["unsupervised"], lambda f, c, rng, s:
                           unsupervised.unsupervised_from_codes(c, s["num_bins"]),
                           sampling=("num_train", "batch_size"), execution_only=("batch_size",),
                           paper="disentanglement_lib's unsupervised scores"),
    "mcc": Metric(CONFIGURABLES["mcc"],
                  lambda f, c, rng, s: {**mcc.mcc_from_codes(f, c, "pearson"),
                                        **mcc.mcc_from_codes(f, c, "spearman")},
                  sampling=("num_points", "batch_size"), execution_only=("batch_size",),
                  paper="nonlinear ICA's identifiability score; paper 004 sec. 3.1"),
}


def metric_rng(seed: int, name: str) -> np.random.Generator:
    """The generator of metric `name` under run seed `seed`."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


def check_names(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; expected names from "
                         f"{', '.join(METRICS)}")
    return list(names)


def _plain(value):
    """JSON-ready copy of a setting value (tuples -> lists, numpy scalars -> Python)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _defaults(fn: Callable) -> dict:
    skip = ("data", "representation_fn", "rng")
    return {name: p.default for name, p in inspect.signature(fn).parameters.items()
            if name not in skip}


def rows_needed(name: str, values: dict) -> int | None:
    """Rows of a uniform sample that metric `name` reads under its settings `values` (see
    the module docstring), or None when it renders its own interventions (pool_size None)."""
    entry = METRICS[name]
    if "pool_size" in entry.sampling:
        return None if values["pool_size"] is None else int(values["pool_size"])
    if entry.split:
        return int(values["num_train"]) + int(values["num_test"])
    return int(values["num_train"] if "num_train" in entry.sampling else values["num_points"])


def _reads_shared(name: str, values: dict) -> bool:
    return values.get("sample") == "shared" and rows_needed(name, values) is not None


def shared_rows(settings: dict[str, dict]) -> int:
    """Rows the shared sample needs for the metrics of `settings` marked 'shared' (0: none)."""
    return max((rows_needed(name, values) for name, values in settings.items()
                if _reads_shared(name, values)), default=0)


def draw_shared_sample(data, representation_fn, num_rows: int, seed: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(factors int64 (num_rows, k), codes float64 (num_rows, d)): the shared sample of run
    seed `seed`, drawn SHARED_CHUNK rows at a time (whole chunks, then cut), so the first n
    rows are the same for every num_rows >= n."""
    chunks = -(-int(num_rows) // SHARED_CHUNK)
    factors, codes_array = codes.sample_codes(data, representation_fn, chunks * SHARED_CHUNK,
                                              metric_rng(seed, "shared sample"), SHARED_CHUNK)
    return factors[:num_rows], codes_array[:num_rows]


#: the settings that say how many points, votes or pool rows a metric reads (what
#: `resolve_settings(max_points=...)` caps)
SIZE_SETTINGS = ("num_train", "num_test", "num_points", "pool_size", "num_eval",
                 "num_variance_estimate")


def resolve_settings(names: Sequence[str], seed: int, code_is_discrete: bool | None = None,
                     shared_sample: bool = False, max_points: int | None = None
                     ) -> dict[str, dict]:
    """{metric name: its settings} for the dataset level: every parameter of the metric's
    configurable, its default unless gin binds it (plus the entry's fixed values), 'seed',
    and 'sample': 'shared' when `shared_sample` and the metric reads uniform samples
    (`rows_needed`), else 'own'. Raises ValueError naming the binding when a value is not
    allowed, before any work. `code_is_discrete` (the runner: the model's
    `code_is_discrete`) sets the `discrete` setting of metrics that have one (InfoMEC),
    unless gin binds it. `max_points` caps every size setting (SIZE_SETTINGS) at that
    many: a smoke test's scores in seconds (run.metric_points), recorded as the settings
    they were computed with, so they never share a report column with full-size ones."""
    settings = {}
    for name in check_names(names):
        entry = METRICS[name]
        bound = gin.get_bindings(entry.configurable)
        values = {**_defaults(entry.configurable), **bound, **entry.fixed}
        if code_is_discrete is not None and "discrete" in values:
            if "discrete" in bound and bool(bound["discrete"]) != bool(code_is_discrete):
                logging.warning("%s.discrete = %s is bound; the model says its code is %s",
                                entry.gin_name, bound["discrete"],
                                "discrete" if code_is_discrete else "continuous")
            elif "discrete" not in bound:
                values["discrete"] = bool(code_is_discrete)
        for key, allowed in entry.choices.items():
            if values[key] not in allowed:
                raise ValueError(f"{entry.gin_name}.{key} must be one of "
                                 f"{', '.join(map(repr, allowed))}, found {values[key]!r}")
        if max_points is not None:
            values.update({key: min(int(values[key]), int(max_points))
                           for key in SIZE_SETTINGS if values.get(key) is not None})
        settings[name] = {key: _plain(value) for key, value in values.items()}
        shared = shared_sample and rows_needed(name, settings[name]) is not None
        settings[name].update(level="data", seed=int(seed), sample="shared" if shared else "own")
    return settings


def codes_settings(settings: dict[str, dict], num_rows: int,
                   train_fraction: float = TRAIN_FRACTION) -> dict[str, dict]:
    """The codes-level form of `resolve_settings`' object for a saved sample of
    `num_rows` rows: the sampling sizes are replaced by the rows used ('num_train' /
    'num_test' and 'train_fraction' where a metric fits predictors, else 'num_points')."""
    out = {}
    for name, values in settings.items():
        entry = METRICS[name]
        kept = {k: v for k, v in values.items() if k not in entry.sampling and k != "sample"}
        if entry.split:
            cut = _cut(num_rows, train_fraction)
            kept.update(num_train=cut, num_test=num_rows - cut, train_fraction=train_fraction)
        else:
            kept["num_points"] = int(num_rows)
        kept["level"] = "codes"
        out[name] = kept
    return out


def _cut(num_rows: int, train_fraction: float) -> int:
    return int(round(num_rows * train_fraction))


def _suffixed(entry: Metric, scores: dict) -> dict:
    return {f"{k}{entry.suffix}": v for k, v in scores.items()} if entry.suffix else scores


def _arguments(entry: Metric, values: dict) -> dict:
    return {k: v for k, v in values.items() if k not in ("seed", "level", "sample")}


def _from_sample(name: str, values: dict, factors, codes_array, rng) -> dict:
    """Metric `name`'s codes-level core on its rows of the shared sample (rows_needed)."""
    entry = METRICS[name]
    if entry.split:
        train, test = int(values["num_train"]), int(values["num_test"])
        return entry.from_codes(factors[:train], codes_array[:train],
                                factors[train:train + test], codes_array[train:train + test],
                                rng, values)
    rows = rows_needed(name, values)
    return entry.from_codes(factors[:rows], codes_array[:rows], rng, values)


def evaluate(data, representation_fn, seed: int, names: Sequence[str] = tuple(METRICS),
             record_errors: bool = False, settings: dict[str, dict] | None = None,
             sample: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """{metric name: its dict of scores} on the dataset `data`.

    settings: `resolve_settings(names, seed, ...)` (resolved here, each metric on its own
    sample, when None); record it beside the scores. Metrics whose settings say
    sample='shared' read their rows of `sample` (factors, codes) = `draw_shared_sample(data,
    representation_fn, n, seed)` for any n >= `shared_rows(settings)`, drawn here when None.
    A metric undefined on this representation (codes.MetricInputError, e.g. every code dim
    constant) raises, or with `record_errors` becomes {'error': why}: no score, never a
    default number, and the other metrics are still computed (the runner records them so).
    """
    names = check_names(names)
    settings = resolve_settings(names, seed) if settings is None else settings
    needed = shared_rows({name: settings[name] for name in names})
    sample_error = None
    if needed and sample is None:
        start = time.perf_counter()
        try:
            sample = draw_shared_sample(data, representation_fn, needed, seed)
        except codes.MetricInputError as error:     # the representation's output is bad
            if not record_errors:
                raise
            sample_error = error
        logging.info("shared sample of %d rows: %.1f s", needed, time.perf_counter() - start)
    if sample is not None and len(sample[0]) < needed:
        raise ValueError(f"evaluate: the shared sample has {len(sample[0])} rows, the metrics "
                         f"need {needed}")
    scores = {}
    for number, name in enumerate(names, 1):
        entry, values = METRICS[name], settings[name]
        rng = metric_rng(values["seed"], name)
        start = time.perf_counter()
        try:
            if _reads_shared(name, values):
                if sample_error is not None:
                    raise sample_error
                out = _from_sample(name, values, sample[0], sample[1], rng)
            else:
                out = entry.configurable(data, representation_fn, rng,
                                         **_arguments(entry, values))
            scores[name] = _suffixed(entry, out)
            logging.info("metric %d/%d %s: %.1f s", number, len(names), name,
                         time.perf_counter() - start)
        except codes.MetricInputError as error:
            if not record_errors:
                raise
            logging.warning("metric %s is undefined on this representation: %s", name, error)
            scores[name] = {"error": str(error)}
    return scores


def evaluate_codes(factors, codes_array, seed: int = 0, names: Sequence[str] = tuple(METRICS),
                   train_fraction: float = TRAIN_FRACTION,
                   settings: dict[str, dict] | None = None) -> dict:
    """{metric name: scores} on a uniform sample (factors int (n, k), codes (n, d)).

    Metrics that fit predictors (DCI, SAP, explicitness) train on the first
    `train_fraction` of the rows and test on the rest. settings: the codes-level object
    (`codes_settings(resolve_settings(names, seed), n, train_fraction)`, built here when
    None); record it beside the scores.
    """
    factors, codes_array = codes.check_codes(factors, codes_array, 10, "evaluate_codes")
    names = check_names(names)
    if not names:
        raise codes.MetricInputError("evaluate_codes: expected at least one metric name, "
                                     "found none")
    if np.all(codes_array == codes_array[0]):
        logging.warning("every code dim is constant over these %d samples: the "
                        "representation carries no information, so every score is 0 by "
                        "construction (a collapsed model, or codes written wrongly?)",
                        len(codes_array))
    if settings is None:
        settings = codes_settings(resolve_settings(names, seed), len(codes_array),
                                  train_fraction)
    cut = _cut(len(codes_array), train_fraction)
    scores = {}
    for name in names:
        entry, values = METRICS[name], settings[name]
        rng = metric_rng(values["seed"], name)
        if entry.split:
            out = entry.from_codes(factors[:cut], codes_array[:cut], factors[cut:],
                                   codes_array[cut:], rng, values)
        else:
            out = entry.from_codes(factors, codes_array, rng, values)
        scores[name] = _suffixed(entry, out)
    return scores
