# `python -m benchmark.known_answers`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/studies/known_answers.py, whose docstring is its help.

import os

from absl import flags

from benchmark.core.errors import run_command
from benchmark.studies import known_answers as impl

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.define_flags()
    flags.adopt_module_key_flags(impl)   # --help lists them
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(impl.main)
