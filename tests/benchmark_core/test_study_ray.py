"""The Ray backend runs a study's grid on a local instance that listens on loopback only
(issue 19, item 7)."""

import importlib.util
import ipaddress
import json
import os
import pathlib
import subprocess
import sys

import pytest

from benchmark.studies import study
from tests.benchmark_core.test_study import _failing_gin, _settings

ROOT = pathlib.Path(__file__).resolve().parents[2]
needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="Ray is an optional extra (pip install '.[ray]')")


def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)      # '::ffff:127.0.0.1'
    return (mapped or address).is_loopback


def _listeners_of_this_process_tree() -> dict:
    """{process name: {listening IP, ...}} of this process and all its descendants (the
    local Ray instance's gcs_server, raylet, agents and workers are among them)."""
    import psutil                                       # ships with Ray

    me = psutil.Process()
    found = {}
    for process in [me, *me.children(recursive=True)]:
        try:
            name = process.name()
            connections = process.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for connection in connections:
            if connection.status == psutil.CONN_LISTEN:
                found.setdefault(name, set()).add(connection.laddr.ip)
    return found


@pytest.mark.slow
@needs_ray
def test_ray_backend_runs_the_grid_on_a_local_instance_listening_on_loopback_only(
        tmp_path, monkeypatch):
    seen = []
    ray_map = study._ray_map

    def inspect_while_running(commands, address):
        for item in ray_map(commands, address):        # Ray is up while a result is held
            seen.append(_listeners_of_this_process_tree())
            yield item

    monkeypatch.setattr(study, "_ray_map", inspect_while_running)
    out = tmp_path / "study"
    settings = _settings(out, models={"ae": "models/ae.gin", "broken": _failing_gin(tmp_path)},
                         variants=["original"])
    summary = study.execute(settings, backend="ray")
    assert summary["ran"] == ["ae_dsprites_original_seed0"]
    assert summary["failed"] == ["broken_dsprites_original_seed0"]   # a Ray task ran it
    result = json.loads((out / "runs" / "ae_dsprites_original_seed0" / "results.json")
                        .read_text())
    assert result["steps"] == 4 and "metric/mig" in result["scalars"]
    assert len(seen) == 2
    for listeners in seen:
        assert {"gcs_server", "raylet"} <= set(listeners), listeners
        exposed = {name: sorted(ips) for name, ips in listeners.items()
                   if not all(_is_loopback(ip) for ip in ips)}
        assert exposed == {}, f"Ray listeners on non-loopback addresses: {exposed}"
    again = study.execute(settings, backend="ray")          # finished run skipped
    assert again["ran"] == [] and again["skipped"] == ["broken_dsprites_original_seed0"]


@needs_ray
def test_ray_imported_without_the_loopback_switch_is_refused_before_starting():
    env = {k: v for k, v in os.environ.items() if k != study.RAY_LOOPBACK_ENV}
    code = ("import ray\nfrom benchmark.studies import study\n"
            "list(study._ray_map({'x': ['true']}, None))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "not starting Ray" in result.stderr and study.RAY_LOOPBACK_ENV in result.stderr
    assert "Started a local Ray instance" not in result.stderr


def test_loopback_classification():
    assert _is_loopback("127.0.0.1") and _is_loopback("::1")
    assert _is_loopback("::ffff:127.0.0.1")
    assert not _is_loopback("::") and not _is_loopback("0.0.0.0")
    assert not _is_loopback("192.0.2.2")
