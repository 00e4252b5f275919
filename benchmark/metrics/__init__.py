"""The field's disentanglement metrics, one module each, one registry.

Every metric has a dataset level, `fn(data, representation_fn, rng, **gin_params)`, and a
codes level on arrays. `evaluate` runs metrics on a dataset; `evaluate_codes` runs them on
a saved (factors, codes) sample, e.g. from another framework. Each metric draws from its
own generator, derived from (seed, metric name), so a metric's number does not depend on
which other metrics ran.
"""

from __future__ import annotations

import zlib
from typing import Callable, Sequence

import numpy as np
from absl import logging

from benchmark.metrics import (beta_vae, codes, dci, factor_vae, infomec, mcc, mig,
                               modularity, sap, unsupervised)

MetricInputError = codes.MetricInputError


def _split(factors, values, train_fraction):
    cut = int(round(len(values) * train_fraction))
    return factors[:cut], values[:cut], factors[cut:], values[cut:]


def _codes_level(name: str) -> Callable:
    """fn(factors, codes, rng, train_fraction) -> dict for the metric `name`."""
    table = {
        "mig": lambda f, c, rng, tf: mig.mig_from_codes(f, c),
        "dci": lambda f, c, rng, tf: dci.dci_from_codes(*_split(f, c, tf), rng),
        "dci_random_forest": lambda f, c, rng, tf: {
            f"{k}_rf": v for k, v in dci.dci_from_codes(*_split(f, c, tf), rng,
                                                        classifier="random_forest").items()},
        "sap": lambda f, c, rng, tf: sap.sap_from_codes(*_split(f, c, tf),
                                                        seed=int(rng.integers(2**31 - 1))),
        "modularity_explicitness": lambda f, c, rng, tf:
            modularity.modularity_explicitness_from_codes(*_split(f, c, tf)),
        "infomec": lambda f, c, rng, tf: infomec.infomec_from_codes(
            f, c, seed=int(rng.integers(2**31 - 1))),
        "factor_vae_score": lambda f, c, rng, tf: factor_vae.factor_vae_score_from_codes(
            f, c, rng),
        "beta_vae_score": lambda f, c, rng, tf: beta_vae.beta_vae_score_from_codes(f, c, rng),
        "unsupervised": lambda f, c, rng, tf: unsupervised.unsupervised_from_codes(c),
        "mcc": lambda f, c, rng, tf: {**mcc.mcc_from_codes(f, c, "pearson"),
                                      **mcc.mcc_from_codes(f, c, "spearman")},
    }
    return table[name]


#: dataset-level metric functions by name
METRICS: dict[str, Callable] = {
    "mig": mig.mig,
    "dci": dci.dci,
    "dci_random_forest": lambda data, fn, rng: {
        f"{k}_rf": v for k, v in dci.dci(data, fn, rng, classifier="random_forest").items()},
    "sap": sap.sap,
    "modularity_explicitness": modularity.modularity_explicitness,
    "infomec": infomec.infomec,
    "factor_vae_score": factor_vae.factor_vae_score,
    "beta_vae_score": beta_vae.beta_vae_score,
    "unsupervised": unsupervised.unsupervised,
    "mcc": mcc.mcc,
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


def evaluate(data, representation_fn, seed: int, names: Sequence[str] = tuple(METRICS),
             record_errors: bool = False) -> dict:
    """{metric name: its dict of scores} on the dataset `data`.

    A metric undefined on this representation (codes.MetricInputError, e.g. every code dim
    constant) raises, or with `record_errors` becomes {'error': why}: no score, never a
    default number, and the other metrics are still computed (the runner records them so).
    """
    scores = {}
    for name in check_names(names):
        try:
            scores[name] = METRICS[name](data, representation_fn, metric_rng(seed, name))
        except codes.MetricInputError as error:
            if not record_errors:
                raise
            logging.warning("metric %s is undefined on this representation: %s", name, error)
            scores[name] = {"error": str(error)}
    return scores


def evaluate_codes(factors, codes_array, seed: int = 0, names: Sequence[str] = tuple(METRICS),
                   train_fraction: float = 2 / 3) -> dict:
    """{metric name: scores} on a uniform sample (factors (n, k), codes (n, d)).

    Metrics that fit predictors (DCI, SAP, explicitness) train on the first
    `train_fraction` of the rows and test on the rest.
    """
    factors, codes_array = codes.check_codes(factors, codes_array, 10, "evaluate_codes")
    return {name: _codes_level(name)(factors, codes_array, metric_rng(seed, name),
                                     train_fraction)
            for name in check_names(names)}
