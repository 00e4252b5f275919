"""Benchmarks of the suite's throughput; never run by the tests.

    python -m benchmark.speed data [--datasets=dsprites,shapes3d] [--sources=procedural,file]
        render throughput: images/s for random batches of 64, for the whole dataset
        (float32 observations, chunks of 4096), and for the tf.data pipeline (original and
        noisy).

    python -m benchmark.speed metrics
        seconds per metric at its default sample sizes on one 10-dim representation of
        procedural dSprites (a fixed random projection of the pixels), and the total;
        --gin_bindings="dci.classifier = 'hist_gbt'" times the fast DCI.

    python -m benchmark.speed train [--model=beta_vae,pcl] [--dataset=dsprites] [--xla]
        milliseconds per compiled training step and images/s per model (batch 64,
        latent dim = number of factors), after 3 warm-up steps.
"""

from __future__ import annotations

import time

import numpy as np
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_list("datasets", ["dsprites", "shapes3d"], "Datasets to benchmark.")
flags.DEFINE_list("sources", ["procedural", "file"],
                  "Sources to benchmark; 'file' is skipped when the file is absent.")
flags.DEFINE_integer("pipeline_batches", 300, "Batches of 64 timed through tf.data.")
flags.DEFINE_list("metrics", ["mig", "dci", "sap", "modularity_explicitness", "infomec",
                                "factor_vae_score", "beta_vae_score", "unsupervised"],
                  "Metrics to time (benchmark.speed metrics).")
flags.DEFINE_list("model", [], "Model configs (gin_configs/models/NAME.gin) or methods to time, "
                  "e.g. --model=beta_vae,pcl,tripod_naive (benchmark.speed "
                  "train; default all).")
flags.DEFINE_string("dataset", "dsprites", "Dataset of benchmark.speed train.")
flags.DEFINE_integer("batch_size", 64, "Batch size of benchmark.speed train.")
flags.DEFINE_integer("train_steps", 20, "Timed steps per model (after 3 warm-up steps).")
flags.DEFINE_boolean("xla", False, "Compile the training step with XLA.")
flags.DEFINE_multi_string("gin_bindings", [], "Gin bindings for the metrics, e.g. "
                          "\"dci.classifier = 'hist_gbt'\".")
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


def speed_data() -> None:
    from benchmark.data import get_dataset, make_variant
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
                  f"{noisy_pipe:,.0f} img/s", flush=True)


def speed_metrics() -> None:
    import gin

    from benchmark.data import get_dataset
    from benchmark.metrics import evaluate
    gin.parse_config(FLAGS.gin_bindings)
    data = get_dataset("dsprites", "procedural")
    projection = np.random.default_rng(0).normal(size=(64 * 64, 10)).astype(np.float32) / 64

    def representation(images):
        return images.reshape(len(images), -1) @ projection

    total = 0.0
    for name in FLAGS.metrics:
        start = time.perf_counter()
        scores = evaluate(data, representation, seed=0, names=[name])[name]
        seconds = time.perf_counter() - start
        total += seconds
        shown = ", ".join(f"{k}={v:.3f}" for k, v in scores.items()
                          if isinstance(v, float))
        print(f"{name:24s} {seconds:7.1f} s   {shown}", flush=True)
    print(f"{'total':24s} {total:7.1f} s")


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


def speed_train() -> None:
    import tensorflow as tf

    from benchmark.data import get_dataset, pipeline
    from models.registry import METHODS, make_model
    import gin

    from benchmark.config import GIN_SEARCH_PATH
    data = get_dataset(FLAGS.dataset, "procedural")
    for method in FLAGS.model or METHODS:
        model = _speed_model(method, data, make_model, GIN_SEARCH_PATH, gin)
        kind = model.input_kind
        if kind == "images":
            batch = tf.constant(pipeline.image_batch(data, FLAGS.batch_size, 0, 0))
        else:
            batch = tuple(tf.constant(x) for x in pipeline.pair_batch(
                data, FLAGS.batch_size, 0, 0, negatives=kind == "pairs_with_negatives"))
        step = tf.function(lambda b, i: model.train_step(b, i, tf.stack(
            [tf.constant(0, tf.int64), i])), jit_compile=FLAGS.xla)
        for i in range(3):
            step(batch, tf.constant(i, tf.int64))
        start = time.perf_counter()
        for i in range(FLAGS.train_steps):
            terms = step(batch, tf.constant(i, tf.int64))
        float(terms["loss"])
        seconds = (time.perf_counter() - start) / FLAGS.train_steps
        images = FLAGS.batch_size * (1 if kind == "images" else 2 if kind == "pairs" else 3)
        print(f"{method:14s} {FLAGS.batch_size} x {kind:22s} {seconds * 1000:7.1f} ms/step  "
              f"{images / seconds:7.0f} img/s", flush=True)


COMMANDS = {"data": speed_data, "metrics": speed_metrics, "train": speed_train}


def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"expected one benchmark, one of {', '.join(COMMANDS)}; "
                             f"found {' '.join(argv[1:]) or 'none'}")
    COMMANDS[argv[1]]()


if __name__ == "__main__":
    app.run(main)
