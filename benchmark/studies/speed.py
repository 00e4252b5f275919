"""Benchmarks of the suite's throughput; never run by the tests.

    python -m benchmark.speed data [--datasets=dsprites,shapes3d] [--sources=procedural,file]
        render throughput: images/s for random batches of 64, for the whole dataset
        (float32 observations, chunks of 4096), and for the tf.data pipeline (original and
        noisy).

    python -m benchmark.speed metrics [--codes=RUN/eval_codes.npz]
        seconds per metric at its default sample sizes on one 10-dim representation of
        procedural dSprites (a fixed random projection of the pixels), and the total;
        with --codes, on a trained model's saved evaluation codes instead (codes level);
        --gin_bindings="dci.classifier = 'hist_gbt'" times the fast DCI.

    python -m benchmark.speed train [--model=beta_vae,pcl] [--dataset=dsprites] [--xla]
            [--precision=float32,mixed_bfloat16] [--repeats=5] [--train_steps=20]
        milliseconds per compiled training step per model (batch 64, latent dim = number
        of factors): after 3 warm-up steps, `repeats` timings of `train_steps` steps, each
        on different batches; prints the min and the median over repeats.

    python -m benchmark.speed e2e [--model=beta_vae,slowvae,pcl]
            [--variants=original,noisy,wave,modified,shapes3d] [--e2e_steps=300]
            [--materialize=auto|memory|disk|off]
        per model kind (single images, pairs, triplets) x variant, milliseconds per step of
        the pure compiled step (pre-made batches, as `train`) and of the runner's loop
        (benchmark.run's stream, materialised as a run materialises it, and
        benchmark/runs/train.py's loop: data, step, terms read back, one checkpoint), back to
        back in one process, their ratio, and the loop's first step (stream start and
        tracing). The dSprites variants are the 3-factor ellipse's (6,144 images;
        'modified' is the published results/perturbations/dsprites_ellipse3_diagonal),
        'shapes3d' the full procedural Shapes3D (480,000 images).

Every command first prints the CPU model, its vector extensions and thread settings, and
after each measurement how busy the machine was with other work (benchmark/core/machine.py);
--out=FILE.json keeps all of it with the numbers.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np
from absl import app, flags

from benchmark.core import machine
from benchmark.core.atomic import write_json
from benchmark.core.errors import cli_main

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_list("datasets", ["dsprites", "shapes3d"], "Datasets to benchmark.")
    flags.DEFINE_list("sources", ["procedural", "file"],
                      "Sources to benchmark; 'file' is skipped when the file is absent.")
    flags.DEFINE_integer("pipeline_batches", 300, "Batches of 64 timed through tf.data.")
    flags.DEFINE_list("metrics", ["mig", "dci", "sap", "modularity_explicitness", "infomec",
                                    "factor_vae_score", "beta_vae_score", "unsupervised"],
                      "Metrics to time (benchmark.speed metrics).")
    flags.DEFINE_list("model", [], "Model configs (gin_configs/models/NAME.gin) or methods "
                      "to time, e.g. --model=beta_vae,pcl,tripod_naive (benchmark.speed "
                      "train; default all).")
    flags.DEFINE_string("dataset", "dsprites", "Dataset of benchmark.speed train.")
    flags.DEFINE_integer("batch_size", 64, "Batch size of benchmark.speed train.")
    flags.DEFINE_integer("train_steps", 20, "Timed steps per repeat (after 3 warm-up steps).")
    flags.DEFINE_integer("repeats", 5, "Timed repeats per model, each on different batches.")
    flags.DEFINE_list("precision", ["float32"], "Keras precision policies to time: float32, "
                      "mixed_bfloat16 (benchmark.speed train).")
    flags.DEFINE_string("codes", None, "An npz of (factors, codes), e.g. a run's eval_codes.npz: "
                        "time the metrics on these trained codes (benchmark.speed metrics).")
    flags.DEFINE_string("out", None, "Also write the measurements, CPU and load to this JSON.")
    flags.DEFINE_boolean("xla", False, "Compile the training step with XLA.")
    flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings for the metrics, e.g. "
                              "\"dci.classifier = 'hist_gbt'\".")
    flags.DEFINE_list("variants", list(E2E_VARIANTS), "Variants of benchmark.speed e2e: "
                      f"{', '.join(E2E_VARIANTS)}.")
    flags.DEFINE_enum("materialize", "auto", ["auto", "memory", "disk", "off"],
                      "How benchmark.speed e2e serves the images (materialize.mode; 'off': "
                      "rendered per batch, as runs did before materialisation).")
    flags.DEFINE_integer("e2e_steps", 300, "Timed steps of each measurement of benchmark.speed "
                         "e2e (after 3 warm-up steps for the pure step).")
    flags.DEFINE_integer("whole_limit", None, "Render only this many images of the 'whole "
                         "dataset' pass (default: all of them).")


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} img/s"


def bench_batches(data, rng, batches: int = 200, batch_size: int = 64) -> float:
    """Seconds per image rendering random batches of `batch_size`."""
    data.observations_from_factors(data.sample_factors(batch_size, rng))
    start = time.perf_counter()
    for _ in range(batches):
        data.observations_from_factors(data.sample_factors(batch_size, rng))
    return (time.perf_counter() - start) / (batches * batch_size)


def bench_whole(data, limit: int | None = None, chunk: int = 4096) -> tuple[int, float]:
    """(images, seconds) rendering the dataset in flat-index order, float32 observations."""
    total = data.num_images if limit is None else min(limit, data.num_images)
    start = time.perf_counter()
    for begin in range(0, total, chunk):
        data.images(np.arange(begin, min(begin + chunk, total)))
    return total, time.perf_counter() - start


def bench_pipeline(data, batches: int, batch_size: int = 64) -> float:
    """Images per second delivered by `pipeline.image_dataset` (after 20 warm-up batches)."""
    from benchmark.data import pipeline
    iterator = iter(pipeline.image_dataset(data, batch_size=batch_size, seed=0))
    for _ in range(20):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches * batch_size / (time.perf_counter() - start)


def speed_data() -> list[dict]:
    from benchmark.data import get_dataset, make_variant
    rows = []
    for name in FLAGS.datasets:
        for source in FLAGS.sources:
            try:
                data = get_dataset(name, source)
            except FileNotFoundError:
                print(f"{name:9s} {source:10s} skipped: official file not found")
                continue
            rng = np.random.default_rng(0)
            warm = time.perf_counter()
            if hasattr(data, "renderer") and data.renderer is not None:
                data.renderer.precompute()
            warm = time.perf_counter() - warm
            with machine.LoadMeter() as load:
                per_image = bench_batches(data, rng)
                count, seconds = bench_whole(data, FLAGS.whole_limit)
                pipe = bench_pipeline(data, FLAGS.pipeline_batches)
                noisy = make_variant(data, "noisy")
                noisy_batches = 1.0 / bench_batches(noisy, rng)
                noisy_pipe = bench_pipeline(noisy, FLAGS.pipeline_batches)
            print(f"{name:9s} {source:10s} cache {warm:5.1f} s | batches of 64: "
                  f"{1.0 / per_image:,.0f} img/s | whole dataset: {count:,} images in "
                  f"{seconds:.1f} s ({_rate(count, seconds)}) | tf.data: {pipe:,.0f} img/s | "
                  f"noisy batches: {noisy_batches:,.0f} img/s, noisy tf.data: "
                  f"{noisy_pipe:,.0f} img/s ({machine.describe_load(load.result)})",
                  flush=True)
            rows.append({"dataset": name, "source": source, "cache_seconds": warm,
                         "batch_img_per_s": 1.0 / per_image, "whole_images": count,
                         "whole_seconds": seconds, "pipeline_img_per_s": pipe,
                         "noisy_batch_img_per_s": noisy_batches,
                         "noisy_pipeline_img_per_s": noisy_pipe, "load": load.result})
    return rows


def speed_metrics() -> list[dict]:
    import gin

    from benchmark.metrics import evaluate, evaluate_codes
    gin.parse_config(FLAGS.gin_bindings)
    if FLAGS.codes:
        from benchmark.metrics.codes import load_codes
        factors, codes = load_codes(FLAGS.codes)

        def score(name):
            return evaluate_codes(factors, codes, seed=0, names=[name])[name]
        print(f"trained codes {FLAGS.codes}: {codes.shape[0]} points x {codes.shape[1]} dims")
    else:
        from benchmark.data import get_dataset
        data = get_dataset("dsprites", "procedural")
        projection = np.random.default_rng(0).normal(size=(64 * 64, 10)).astype(np.float32)

        def score(name):
            return evaluate(data, lambda x: x.reshape(len(x), -1) @ projection / 64, seed=0,
                            names=[name])[name]
    rows, total = [], 0.0
    for name in FLAGS.metrics:
        with machine.LoadMeter() as load:
            scores = score(name)
        seconds = load.result["seconds"]
        total += seconds
        shown = ", ".join(f"{k}={v:.3f}" for k, v in scores.items()
                          if isinstance(v, float))
        print(f"{name:24s} {seconds:7.1f} s   {shown}   ({machine.describe_load(load.result)})",
              flush=True)
        rows.append({"metric": name, "seconds": seconds, "scores": scores,
                     "load": load.result})
    print(f"{'total':24s} {total:7.1f} s")
    return rows


def _speed_model(name, data, make_model, search_path, gin):
    """The model `name` names: a model config gin_configs/models/NAME.gin (its settings,
    e.g. tripod_naive, dip_vae_ii) or else a bare model.method with its defaults."""
    gin.clear_config()
    config = search_path / "models" / f"{name}.gin"
    if config.exists():
        gin.parse_config_files_and_bindings([str(config)], FLAGS.gin_bindings,
                                            skip_unknown=["run"])
        return make_model(data.observation_shape)
    gin.parse_config(FLAGS.gin_bindings)
    return make_model(data.observation_shape, method=name, num_latents=data.num_factors)


def _train_batches(data, kind: str, count: int):
    """`count` different training batches of the stream `kind` asks for, as tensors."""
    import tensorflow as tf

    from benchmark.data import pipeline
    if kind == "images":
        return [tf.constant(pipeline.image_batch(data, FLAGS.batch_size, 0, b))
                for b in range(count)]
    return [tuple(tf.constant(x) for x in pipeline.pair_batch(
        data, FLAGS.batch_size, 0, b, negatives=kind == "pairs_with_negatives"))
        for b in range(count)]


def time_steps(step, batches, repeats: int, steps: int) -> list[float]:
    """Seconds per step of `repeats` timings of `steps` calls step(batch, i), each repeat
    cycling through its own batches; the result is read back so every step has run."""
    import tensorflow as tf
    per_step = []
    for r in range(repeats):
        start = time.perf_counter()
        for i in range(steps):
            terms = step(batches[(r * steps + i) % len(batches)], tf.constant(i, tf.int64))
        float(terms["loss"])
        per_step.append((time.perf_counter() - start) / steps)
    return per_step


def speed_train() -> list[dict]:
    import gin
    import keras
    import tensorflow as tf

    from benchmark.core.config import GIN_SEARCH_PATH
    from benchmark.data import get_dataset
    from models.configurables import configured_model
    from models.registry import METHODS
    data = get_dataset(FLAGS.dataset, "procedural")
    rows = []
    for precision in FLAGS.precision:
        keras.mixed_precision.set_global_policy(precision)
        for method in FLAGS.model or METHODS:
            model = _speed_model(method, data, configured_model, GIN_SEARCH_PATH, gin)
            kind = model.input_kind
            batches = _train_batches(data, kind, min(FLAGS.repeats * FLAGS.train_steps, 64))
            step = tf.function(lambda b, i: model.train_step(b, i, tf.stack(
                [tf.constant(0, tf.int64), i])), jit_compile=FLAGS.xla)
            for i in range(3):
                step(batches[i % len(batches)], tf.constant(i, tf.int64))
            with machine.LoadMeter() as load:
                seconds = time_steps(step, batches, FLAGS.repeats, FLAGS.train_steps)
            images = FLAGS.batch_size * {"images": 1, "pairs": 2}.get(kind, 3)
            best, median = min(seconds), float(np.median(seconds))
            print(f"{method:14s} {precision:14s} {FLAGS.batch_size} x {kind:20s} "
                  f"min {best * 1000:7.1f} ms/step, median {median * 1000:7.1f} ms/step  "
                  f"{images / best:7.0f} img/s   ({machine.describe_load(load.result)})",
                  flush=True)
            rows.append({"model": method, "precision": precision, "input_kind": kind,
                         "batch_size": FLAGS.batch_size, "ms_per_step": [
                             1000 * x for x in seconds], "min_ms": 1000 * best,
                         "median_ms": 1000 * median, "load": load.result})
    keras.mixed_precision.set_global_policy("float32")
    return rows


#: the variants of benchmark.speed e2e: data.* bindings (dSprites: the 3-factor ellipse)
ELLIPSE3 = {"orientation": 0, "shape": 1}
E2E_VARIANTS = {
    "original": dict(name="dsprites", fixed_factors=ELLIPSE3),
    "noisy": dict(name="dsprites", fixed_factors=ELLIPSE3, variant="noisy", eps=0.07017),
    "wave": dict(name="dsprites", fixed_factors=ELLIPSE3, variant="wave"),
    "modified": dict(name="dsprites", fixed_factors=ELLIPSE3, variant="modified",
                     artefact="results/perturbations/dsprites_ellipse3_diagonal"),
    "shapes3d": dict(name="shapes3d"),
}
E2E_MODELS = ("beta_vae", "slowvae", "pcl")


def _e2e_data(variant: str):
    from benchmark.data import load_data
    from perturbations.artefact import load_variant
    settings = dict(E2E_VARIANTS[variant])
    if "artefact" in settings:
        from benchmark.core.config import GIN_SEARCH_PATH
        settings["artefact"] = str(GIN_SEARCH_PATH.parent / settings["artefact"])
    return load_data(source="procedural", artefact_loader=load_variant, **settings)


def speed_e2e() -> list[dict]:
    unknown = [v for v in FLAGS.variants if v not in E2E_VARIANTS]
    if unknown:
        raise app.UsageError(f"--variants: expected names among {', '.join(E2E_VARIANTS)}, "
                             f"found {', '.join(unknown)}")
    import tempfile

    import gin
    import keras
    import tensorflow as tf

    import benchmark.data.dsprites  # noqa: F401  (their gin configurables are registered
    import benchmark.data.shapes3d  # noqa: F401   before a model config locks gin)
    from benchmark.core.config import GIN_SEARCH_PATH
    from benchmark.data import materialize
    from benchmark.runs import run as run_lib
    from benchmark.runs import train as train_lib
    from models.configurables import configured_model
    steps = max(FLAGS.e2e_steps, 10)
    rows = []
    for variant in FLAGS.variants:
        base = _e2e_data(variant)
        for method in FLAGS.model or E2E_MODELS:
            keras.utils.set_random_seed(0)
            model = _speed_model(method, base, configured_model, GIN_SEARCH_PATH, gin)
            kind = model.input_kind
            settings = run_lib.run_settings(seed=0, steps=3000, batch_size=FLAGS.batch_size,
                                            pair_rate=6.0)
            started = time.perf_counter()
            per_example = run_lib.IMAGES_PER_EXAMPLE[kind]
            data = materialize.materialize(
                base, {"speed": variant}, 3000 * FLAGS.batch_size * per_example,
                mode=FLAGS.materialize, images_per_example=per_example,
                cache_dir=str(pathlib.Path(tempfile.gettempdir()) / "benchmark-speed-cache"))
            materialise_seconds = time.perf_counter() - started
            store = getattr(data, "store", "off")
            batches = _train_batches(data, kind, 32)
            step = tf.function(lambda b, i: model.train_step(b, i, tf.stack(
                [tf.constant(0, tf.int64), i])))
            for i in range(3):
                step(batches[i], tf.constant(i, tf.int64))
            with machine.LoadMeter() as load:
                pure = time_steps(step, batches, 1, steps)[0]
                with tempfile.TemporaryDirectory() as workdir:
                    trained = train_lib.train(
                        model, lambda first: run_lib.make_stream(model, data, settings, first),
                        steps, workdir, 0, checkpoint_every=10**9, log_every=10**9,
                        progress=False)
            loop = (trained["seconds"] - trained["first_step_seconds"]) / (steps - 1)
            print(f"{method:10s} {kind:20s} {variant:9s} ({store:6s} {materialise_seconds:5.1f} s)"
                  f"  pure {pure * 1000:6.1f} ms/step  loop {loop * 1000:6.1f} ms/step  "
                  f"ratio {loop / pure:5.2f}  first step {trained['first_step_seconds']:5.1f} s"
                  f"   ({machine.describe_load(load.result)})", flush=True)
            rows.append({"model": method, "input_kind": kind, "variant": variant,
                         "store": store, "materialise_seconds": materialise_seconds,
                         "pure_ms": 1000 * pure, "loop_ms": 1000 * loop,
                         "ratio": loop / pure,
                         "first_step_seconds": trained["first_step_seconds"],
                         "steps": steps, "load": load.result})
    return rows


COMMANDS = {"data": speed_data, "metrics": speed_metrics, "train": speed_train,
            "e2e": speed_e2e}


@cli_main
def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"expected one benchmark, one of {', '.join(COMMANDS)}; "
                             f"found {' '.join(argv[1:]) or 'none'}")
    print(machine.header(), flush=True)
    rows = COMMANDS[argv[1]]()
    if FLAGS.out:
        record = {"command": argv[1], "cpu": machine.cpu_description(), "rows": rows,
                  "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        write_json(FLAGS.out, record, sort_keys=False, default=float)
        print(f"wrote {FLAGS.out}")

