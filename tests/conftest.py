"""Shared test set-up: quiet TensorFlow, no official data directory from the environment."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from benchmark.core.errors import restore_interrupt  # noqa: E402

# The tests stop the runs they start with SIGINT, as a user's Ctrl-C would; a test session
# started in the background by a shell inherits SIGINT ignored, and so would those runs.
restore_interrupt()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: an end-to-end test of several seconds or more (training, a "
        "study, a subprocess command); `make test` skips them, `make test-slow` runs them")
    config.addinivalue_line(
        "markers", "identities_subprocess: an in-process study computes its runs' "
        "fingerprints in `python -m benchmark.identities`, as it does for a user")


@pytest.fixture(scope="session", autouse=True)
def _private_render_cache(tmp_path_factory):
    """Each test session casts its own Shapes3D geometry cache (never a stale user one)."""
    os.environ["DISENTANGLE_BENCH_CACHE"] = str(tmp_path_factory.mktemp("render-cache"))


@pytest.fixture(autouse=True)
def _identities_in_this_process(request, monkeypatch):
    """A study parses its runs' configurations in a process of its own (`python -m
    benchmark.identities`: gin's state is global), which costs a TensorFlow import (~10 s
    on 2 cores) per study call. A test that calls the study in this process gets the same
    answer computed here instead (test_study.py's
    test_identities_computed_here_equal_the_commands checks they agree); a test marked
    identities_subprocess, and every `python -m benchmark.study`, keeps the subprocess."""
    if request.node.get_closest_marker("identities_subprocess"):
        return
    study = sys.modules.get("benchmark.studies.study")
    if study is None:
        return        # the test never imported the study (its commands are subprocesses)

    def here(specs: list) -> dict:
        from benchmark.runs.identities import spec_identities

        return spec_identities(study.identity_requests(specs))

    monkeypatch.setattr(study, "expected_identities", here)


@pytest.fixture(autouse=True)
def _no_user_data_dir(monkeypatch):
    """Tests never pick up a developer's real dataset files."""
    monkeypatch.delenv("DISENTANGLEMENT_LIB_DATA", raising=False)


#: the longest tests (`make test` and `make test-slow` print --durations), longest first: they are
#: collected first so that xdist's two workers start with them rather than end on one
SLOWEST_FIRST = ("test_tiny_generation_end_to_end", "test_tiny_pipeline_end_to_end_and_resumed",
                 "test_audit_end_to_end_on_tiny_settings",
                 "test_custom_model_runs_through_the_audit",
                 "test_study_is_interrupted_resumes_and_skips_finished_runs",
                 "test_export_codes_from_elsewhere_and_score",
                 "test_same_seed_same_run_in_another_process_also_after_ctrl_c_and_kill",
                 # and the longest of the fast ones
                 "test_a_run_started_from_a_shorter_run_equals_the_longer_run",
                 "test_the_command_chooses_from_a_pilot_studys_runs")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name), len(rank)))
