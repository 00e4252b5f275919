"""python -m benchmark.curves RUN_OR_STUDY_DIR [--tags=loss/loss,loss/accuracy] [--out=F.json]

Training curves from the TensorBoard logs a run writes (`<run>/tb`): each logged scalar as
[(step, value), ...]. Given a study directory, every run under it. The check that a model
learns at all ("its loss leaves chance") reads these, e.g. PCL's accuracy leaving 0.5.
"""

from __future__ import annotations

import pathlib

from absl import app, flags

from benchmark.core.errors import UserError, cli_main, user_errors

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_list("tags", [], "Scalar tags to print (default: every loss/* tag).")
    flags.DEFINE_string("out", None, "Also write {run: {tag: [[step, value], ...]}} here.")


def scalar_curves(run_dir, tags=None, require_all: bool = True
                  ) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...] in step order} of the scalars in `run_dir`/tb; `tags`
    None means every tag; tags the run did not log are an error when `require_all`, else
    left out (a study mixes methods with different terms). ValueError naming the
    directory when it has no TensorBoard log."""
    import tensorflow as tf
    from tensorboard.backend.event_processing import event_accumulator

    log_dir = pathlib.Path(run_dir) / "tb"
    if not any(log_dir.glob("events.out.tfevents.*")):
        raise ValueError(f"{log_dir}: no TensorBoard event file (expected a run directory "
                         "written by benchmark.run)")
    events = event_accumulator.EventAccumulator(str(log_dir), size_guidance={"tensors": 0})
    events.Reload()
    available = events.Tags()["tensors"]
    wanted = available if tags is None else list(tags)
    missing = [t for t in wanted if t not in available]
    if missing and require_all:
        raise ValueError(f"{log_dir}: no scalar {missing}; found {sorted(available)}")
    return {tag: sorted((int(e.step), float(tf.make_ndarray(e.tensor_proto)))
                        for e in events.Tensors(tag)) for tag in wanted if tag in available}


def run_directories(path) -> list[pathlib.Path]:
    """`path` itself when it is a run directory, else every run directory below it."""
    path = pathlib.Path(path)
    if (path / "tb").is_dir():
        return [path]
    return sorted(p.parent for p in path.rglob("tb") if p.is_dir())


@cli_main
def main(argv):
    if len(argv) != 2:
        raise app.UsageError("expected one run or study directory")
    runs = run_directories(argv[1])
    if not runs:
        raise UserError(f"no run directory (with a tb/ log) under {argv[1]}")
    record = {}
    with user_errors(ValueError):
        for run in runs:
            curves = scalar_curves(run, FLAGS.tags or None, require_all=len(runs) == 1)
            curves = {t: c for t, c in curves.items() if FLAGS.tags or t.startswith("loss/")}
            record[str(run)] = curves
            for tag, points in curves.items():
                shown = ", ".join(f"{s}: {v:.3f}" for s, v in points)
                print(f"{run.name}  {tag}  {shown}")
        found = {tag for curves in record.values() for tag in curves}
        unseen = [tag for tag in FLAGS.tags if tag not in found]
        if unseen:
            raise ValueError(f"no run under {argv[1]} logged {unseen}")
    if FLAGS.out:
        from benchmark.core.atomic import write_json
        write_json(FLAGS.out, record, indent=1, sort_keys=False)
        print(f"wrote {FLAGS.out}")

