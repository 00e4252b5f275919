"""Readings of published studies: the analyses behind numbers in results/.

    python -m benchmark.readings NAME [ARGS...]

NAME is one of:
  games             the ellipse games side by side (results/manipulation_cpu)
  objective_check   the objective check's reading (results/objective_check_ellipse)
  feasibility_gate  the feasibility pilot's go / no-go (results/feasibility_dsprites_cpu)
  magnitude         S1-S3 of the Shapes3D magnitude study (results/shapes3d_magnitude_cpu)
  restore_codes     a study's evaluation codes from a bit-identical retrain
                    (results/manipulation_ellipse3_cpu)
  geometry_calibration  trained codes' misalignment against the local geometry's angle
                    (results/perturbations/calibration_*.md)
  paired_seeds      each arm against the original seed by seed, exploratory
                    (results/naive_move_ellipse_cpu)
  rate              the final KL against log N, the nats the images can carry
                    (results/battery_pilot_relative_cpu, designs tried)

Each reading's own docstring (benchmark/readings/NAME.py) says what it reads, what it
writes and by which registered rule; ARGS are the paths it reads, in that order. A reading
recomputes nothing that a run or a test recorded: it reads stored numbers and applies the
rule written down before them.
"""

from __future__ import annotations

import importlib

from benchmark.core.errors import cli_main, run_command

#: reading name -> module (each has `main(args: list[str]) -> None`)
READINGS = {name: f"benchmark.readings.{name}" for name in
            ("games", "objective_check", "feasibility_gate", "magnitude", "restore_codes",
             "geometry_calibration", "paired_seeds", "rate")}


def define_flags() -> None:
    """The readings take paths, not flags."""


@cli_main
def main(argv) -> None:
    from absl import app

    if len(argv) < 2 or argv[1] not in READINGS:
        found = repr(argv[1]) if len(argv) > 1 else "nothing"
        raise app.UsageError("usage: python -m benchmark.readings NAME [ARGS...]; expected "
                             f"NAME in {sorted(READINGS)}, found {found}")
    importlib.import_module(READINGS[argv[1]]).main(list(argv[2:]))


if __name__ == "__main__":
    define_flags()
    run_command(main)
