# `python -m benchmark.objective_cost`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/studies/objective_cost.py, whose docstring is its help.

from benchmark.core.errors import run_command
from benchmark.studies import objective_cost as impl

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.define_flags()
    run_command(impl.main)
