# `python -m benchmark.identities`: a thin entry module, on top of every floor (docs/architecture.md);
# the command is benchmark/runs/identities.py, whose docstring is its help.

from benchmark.runs import identities as impl

__doc__ = impl.__doc__

if __name__ == "__main__":
    impl.main()
