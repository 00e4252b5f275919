# `python -m benchmark.aligned_baseline`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/studies/aligned_baseline.py, whose docstring is its help.

from absl import flags

from benchmark.core.errors import run_command
from benchmark.studies import aligned_baseline as impl

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.define_flags()
    flags.adopt_module_key_flags(impl)   # --help lists them
    run_command(impl.main)
