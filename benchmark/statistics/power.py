"""python -m benchmark.power --drop=D --sd=S [--sd_other=S2] [--paired] [--alpha=0.05]
    [--power=0.8]

Prints the seeds (runs per arm, equal arms) a study needs so that a one-sided Welch
test at level --alpha detects a drop of --drop (in the metric's units, e.g. MIG 0.05)
with probability --power, when the runs' spread is --sd (sample std over seeds; --sd_other
for the variant's arm when it differs). Noncentral t, see benchmark/statistics/stats.py `power`.
With --paired, the pairs (seeds) a one-sided paired t-test needs (arms compared seed by
seed, as perturbations.readapt's across-seed tests), --sd then being the spread of the
per-seed differences (benchmark/statistics/stats.py `paired_power`).
Example: the CPU-scale β-VAE's MIG drop on modified data in results/zietlow2021_cpu
(0.023 at a pooled sd of 0.025; 3 seeds a side have 24 % power) needs 16 seeds per arm:
    python -m benchmark.power --drop=0.023 --sd=0.025
"""

from __future__ import annotations

import sys

from absl import app, flags

from benchmark.core.errors import UserError, cli_main
from benchmark.statistics import stats

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_float("drop", None, "Drop to detect (mean original − mean variant, > 0).")
    flags.DEFINE_float("sd", None, "Spread of the runs (std over seeds, > 0).")
    flags.DEFINE_float("sd_other", None, "Spread of the variant's runs (default: --sd).")
    flags.DEFINE_float("alpha", stats.ALPHA, "Level of the one-sided Welch test.")
    flags.DEFINE_float("power", 0.8, "Power to reach, in (0, 1).")
    flags.DEFINE_bool("paired", False, "Paired t-test: --sd is the spread of the per-seed "
                      "differences; seeds are pairs.")


def message(drop: float, sd: float, alpha: float, target: float,
            sd_other: float | None = None, paired: bool = False) -> tuple[int | None, str]:
    """(seeds per arm or None, the sentence the command prints)."""
    if paired and sd_other is not None:
        raise UserError("--sd_other is for two independent arms; with --paired, --sd is "
                        "the spread of the per-seed differences")
    seeds = (stats.pairs_needed(drop, sd, alpha, target) if paired
             else stats.seeds_needed(drop, sd, alpha, target, sd_other))
    spread = (f"sd of the differences {sd:g}" if paired else
              f"sd {sd:g}" + ("" if sd_other is None else f" / {sd_other:g}"))
    if seeds is None:
        return None, ((f"no feasible number of pairs (over 10000, or difference ≤ 0) "
                       f"detects a difference of {drop:g} at {spread}") if paired else
                      (f"no feasible number of seeds (over 10000 per arm, or drop ≤ 0) "
                       f"detects a drop of {drop:g} at {spread}"))
    if paired:
        reached = stats.paired_power(drop, sd, seeds, alpha)
        return seeds, (f"{seeds} seeds (pairs) detect a difference of {drop:g} at {spread} "
                       f"with power {reached:.3f} (one-sided paired t, alpha {alpha:g}, "
                       f"target power {target:g})")
    reached = stats.power(drop, sd, seeds, alpha, sd_other)
    return seeds, (f"{seeds} seeds per arm detect a drop of {drop:g} at {spread} with "
                   f"power {reached:.3f} (one-sided Welch, alpha {alpha:g}, target power "
                   f"{target:g})")


@cli_main
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if FLAGS.drop is None or FLAGS.sd is None:
        raise app.UsageError("--drop and --sd are required")
    if not (FLAGS.sd > 0 and (FLAGS.sd_other is None or FLAGS.sd_other > 0)
            and 0 < FLAGS.alpha < 1 and 0 < FLAGS.power < 1):
        raise UserError("expected --sd (and --sd_other) > 0, 0 < --alpha < 1, 0 < --power < 1")
    seeds, text = message(FLAGS.drop, FLAGS.sd, FLAGS.alpha, FLAGS.power, FLAGS.sd_other,
                          FLAGS.paired)
    print(text)
    if seeds is None:
        sys.exit(1)

