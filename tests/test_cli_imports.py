"""Every command module can be imported next to every other one: flags are defined only
when a module runs as a command (`define_flags()` under `__main__`), so tests and user
code that import several commands never hit absl's DuplicateFlagError."""

import importlib

from absl import flags

COMMANDS = ["benchmark.run", "benchmark.speed", "benchmark.metrics.__main__",
            "benchmark.data.__main__", "benchmark.study", "benchmark.audit",
            "benchmark.report", "benchmark.power", "benchmark.cliff_sanity",
            "benchmark.curves", "benchmark.metrics.alignment",
            "benchmark.posterior_reach", "benchmark.objective_cost", "benchmark.pipeline",
            "benchmark.strength_choice", "benchmark.known_answers",
            "benchmark.readings.__main__",
            "perturbations.generate", "perturbations.noise", "perturbations.geometry",
            "perturbations.inspect", "perturbations.readapt", "perturbations.naive_artefact",
            "perturbations.publish_references"]


def implementation(module):
    """The module that holds a command's code: for a thin entry module at a command path
    (`benchmark.run`: `impl`, docs/architecture.md) its implementation, else the module."""
    return getattr(module, "impl", module)


def test_command_modules_import_together_and_define_flags_on_demand():
    modules = [implementation(importlib.import_module(name)) for name in COMMANDS]
    for module in modules:
        assert callable(getattr(module, "define_flags", None)), module.__name__
        defined = {f.name for f in flags.FLAGS.flags_by_module_dict().get(module.__name__, [])}
        assert not defined, f"{module.__name__} defines flags on import: {sorted(defined)}"



def test_the_metric_registry_imports_no_estimator_library():
    """`import benchmark.metrics` (every command that names a metric) leaves sklearn and
    scipy.stats to the metric that fits with them: a command's usage error comes in well
    under a second instead of after ~2 s of imports (~4 s on 2 busy cores)."""
    import subprocess
    import sys

    from tests.cli import ROOT, environment

    probe = ("import sys, benchmark.metrics; "
             "print(' '.join(m for m in ('sklearn', 'scipy.stats', 'tensorflow') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", f"imported on `import benchmark.metrics`: {done.stdout}"
