# `python -m benchmark.run`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/runs/run.py, whose docstring is its help.

import functools
import os

from absl import flags

from benchmark.core.errors import run_command
from benchmark.runs import run as impl
from perturbations.artefact import load_variant

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.define_flags()
    flags.adopt_module_key_flags(impl)   # --help lists them
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(functools.partial(impl.main, artefact_loader=load_variant))
