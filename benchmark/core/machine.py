"""What a timing was measured on: CPU model and vector extensions, threads, and how busy
the machine was with other work while it ran (a figure without these says little: the same
step is 3x slower on one CPU than another, and 2x slower when another job shares the cores).
"""

from __future__ import annotations

import os
import platform
import time

#: TensorFlow's intra-op and inter-op thread counts of a run unless run.threads says
#: otherwise: what TensorFlow chose by itself on the 2-core machine that trained the
#: published runs, so they keep their numbers
DEFAULT_THREADS = 2

#: vector extensions that change deep-learning speed on x86 CPUs, as /proc/cpuinfo names them
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")


def cpu_description() -> dict:
    """{'model', 'cores', 'vector_flags', 'threads'} of this machine (Linux; elsewhere the
    model is platform.processor() and the flags are unknown)."""
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    threads = {name: os.environ.get(name) for name in
               ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    return {"model": model, "cores": os.cpu_count(),
            "vector_flags": [f for f in VECTOR_FLAGS if f in flags],
            "threads": {k: v for k, v in threads.items() if v is not None}}


def pin_threads(threads: int) -> int:
    """Fixes TensorFlow's intra-op and inter-op thread pools at `threads` each, whatever the
    machine's cores or this process's CPU affinity: float reductions split over another
    number of threads round differently, so the thread count is part of what a run
    computes. Returns the count in effect: `threads`, or, in a process whose TensorFlow
    runtime already started with other pools (an in-process caller), the count it has
    (0: TensorFlow's default, one thread per core), which the caller reports."""
    import tensorflow as tf

    threading = tf.config.threading
    try:
        threading.set_intra_op_parallelism_threads(threads)
        threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:           # "cannot be modified after initialization"
        return threading.get_intra_op_parallelism_threads()
    return threads


def _busy_and_total_jiffies() -> tuple[int, int] | None:
    try:
        with open("/proc/stat", encoding="utf-8") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)      # idle + iowait
    return sum(fields) - idle, sum(fields)


class LoadMeter:
    """Measures, over a `with` block (or from start() to read()), how many cores were busy
    with work other than this process (`foreign_cores`, 0 = the machine was otherwise
    idle), how many this process used on average (`own_cores`) and the load average."""

    def start(self) -> "LoadMeter":
        self._start = _busy_and_total_jiffies()
        self._own = time.process_time()
        self._wall = time.perf_counter()
        return self

    def read(self) -> dict:
        """{'seconds', 'own_cores', 'load_average_1min'} since start(), with 'busy_cores'
        and 'foreign_cores' where /proc/stat is readable."""
        end = _busy_and_total_jiffies()
        wall = time.perf_counter() - self._wall
        own = time.process_time() - self._own
        result = {"seconds": wall, "own_cores": own / wall if wall > 0 else 0.0,
                  "load_average_1min": os.getloadavg()[0]}
        if self._start and end and end[1] > self._start[1]:
            cores = os.cpu_count() or 1
            busy = (end[0] - self._start[0]) / (end[1] - self._start[1]) * cores
            result["busy_cores"] = busy
            result["foreign_cores"] = max(0.0, busy - result["own_cores"])
        return result

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.result = self.read()
        return False


def run_record(load: dict, threads: int) -> dict:
    """What results.json keeps of the machine a run ran on: the CPU model and its cores,
    the thread pools the run was pinned to, and a LoadMeter reading over the run
    ('cpu_seconds' = own_cores x seconds, the run's work whatever else shared the cores)."""
    cpu = cpu_description()
    record = {"cpu": cpu["model"], "cores": cpu["cores"], "vector_flags": cpu["vector_flags"],
              "threads": threads, "cpu_seconds": load["own_cores"] * load["seconds"]}
    record.update({k: load[k] for k in ("own_cores", "foreign_cores", "load_average_1min")
                   if k in load})
    return record


def describe_load(load: dict) -> str:
    """One line for a LoadMeter result."""
    foreign = load.get("foreign_cores")
    shown = "unknown" if foreign is None else f"{foreign:.2f}"
    return (f"other work on the machine: {shown} cores busy on average; "
            f"load average {load['load_average_1min']:.2f}")


def header() -> str:
    """One line naming the CPU, its vector extensions and thread settings."""
    cpu = cpu_description()
    flags = ", ".join(cpu["vector_flags"]) or "none of " + ", ".join(VECTOR_FLAGS)
    threads = ", ".join(f"{k}={v}" for k, v in cpu["threads"].items()) or "library defaults"
    return (f"CPU: {cpu['model']}, {cpu['cores']} cores; vector extensions: {flags}; "
            f"threads: {threads}")


#: when the current run started in a process that runs several (benchmark/runs/worker.py)
_RUN_STARTED: list[float] = []


def mark_run_start() -> None:
    """The current run starts now: `setup_seconds` counts from here, not from the
    process's start (a worker process runs several runs in sequence)."""
    _RUN_STARTED[:] = [time.monotonic()]


def setup_seconds() -> float | None:
    """Seconds since the current run started: since `mark_run_start` when a worker marked
    it, else since this process started (`process_age`)."""
    return time.monotonic() - _RUN_STARTED[0] if _RUN_STARTED else process_age()


def process_age() -> float | None:
    """Seconds since this process started (interpreter start-up and imports included), from
    /proc (10 ms resolution); None where /proc is not there."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            started = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as uptime:
            now = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, now - started / os.sysconf("SC_CLK_TCK"))
