"""The gin layer of the metrics: the one module in benchmark/metrics (with the registry,
`__init__.py`, which reads the bindings) that imports gin.

Every metric's dataset-level function is a plain function in its module; this module
registers each under the name the gin files use (`mig.num_bins = 30`,
`dci.classifier = 'gbt'`, `infomec.discrete = True`), with the same full selector as the
function's own module would give it (`benchmark.metrics.mig.mig`). `METRICS` entries hold
the registered configurables, so importing `benchmark.metrics` registers them before any
gin file is parsed.
"""

from __future__ import annotations

import gin

from benchmark.metrics import (beta_vae, dci, factor_vae, infomec, mcc, mig, modularity,
                               sap, unsupervised)

#: the arguments every dataset-level function takes from its caller, never from gin
DATA_ARGUMENTS = ("data", "representation_fn", "rng")


def _register(fn):
    return gin.external_configurable(fn, fn.__name__, denylist=list(DATA_ARGUMENTS))


#: {gin name: the gin-configurable dataset-level function}
CONFIGURABLES = {fn.__name__: _register(fn) for fn in (
    mig.mig, dci.dci, sap.sap, modularity.modularity_explicitness, infomec.infomec,
    factor_vae.factor_vae_score, beta_vae.beta_vae_score, unsupervised.unsupervised,
    mcc.mcc)}
