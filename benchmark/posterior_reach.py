# `python -m benchmark.posterior_reach`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/studies/posterior_reach.py, whose docstring is its help.

from benchmark.core.errors import run_command
from benchmark.studies import posterior_reach as impl

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.define_flags()
    run_command(impl.main)
