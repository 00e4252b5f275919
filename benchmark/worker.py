# `python -m benchmark.worker`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/runs/worker.py, whose docstring is its help.

import sys

from benchmark.runs import worker as impl
from perturbations.artefact import load_variant

__doc__ = impl.__doc__

if __name__ == "__main__":
    sys.exit(impl.main(artefact_loader=load_variant))
