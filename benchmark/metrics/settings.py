"""Scores carry their settings; one column, one set of settings.

Every run's results.json (and the JSON of `python -m benchmark.metrics evaluate`) records,
per metric, the settings that produced its scores under `metric_settings` (the object of
`benchmark.metrics.resolve_settings`: classifier, bins, k, pruning, sample counts, seed).
Scores computed with different settings are different numbers, so a report refuses to
put them in one column: `check_columns` raises SettingsMismatch naming the column, each
differing setting with its values, and a run of each kind.

Compared: every recorded setting except the seed (a column averages seeds), the code kind
`discrete` (paper 001 reads discrete and continuous codes with their own estimators in one
column) and each metric's execution-only settings (encode batch size, parallel jobs).

Legacy results: results.json files written before settings were recorded (every published
results/*/results.json of that time) have no `metric_settings`; their settings are
unknown. They are never refused (the suite's defaults of their time are stated in the
docs/metrics.md) and the report's settings table counts them per column.
"""

from __future__ import annotations

import json
import pathlib
from typing import Iterable, Sequence

from benchmark.core.errors import UserError
from benchmark.metrics import METRICS, NOT_COMPARED


class SettingsMismatch(UserError, ValueError):
    """Scores of one column computed with different metric settings."""


def comparable(name: str, values: dict) -> dict:
    """The settings of metric `name` that make its scores comparable (see the module doc)."""
    skip = set(NOT_COMPARED)
    if name in METRICS:
        skip |= set(METRICS[name].execution_only)
    return {k: v for k, v in sorted(values.items()) if k not in skip}


def recorded(run_dir) -> dict | None:
    """`metric_settings` of the results.json in `run_dir`, or None for legacy results."""
    try:
        result = json.loads((pathlib.Path(run_dir) / "results.json").read_text())
    except (OSError, ValueError):
        return None
    settings = result.get("metric_settings") if isinstance(result, dict) else None
    return settings if isinstance(settings, dict) else None


def _show(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items() if k != "level") or "(none)"


def check_columns(runs: Iterable[tuple[str, dict | None]],
                  columns: Sequence[tuple[str, str, str]]) -> dict[str, dict]:
    """{metric group: {'columns', 'settings' (comparable; None when every run is legacy),
    'recorded' (runs with settings), 'legacy' (runs without)}} for the metric groups of
    `columns` ((column, group, score key), the report's METRICS) that are registry
    metrics. runs: (label, metric_settings or None) per run. Raises SettingsMismatch when
    two runs recorded different comparable settings for one group."""
    runs = list(runs)
    groups: dict[str, list[str]] = {}
    for column, group, _ in columns:
        if group in METRICS:
            groups.setdefault(group, []).append(column)
    summary = {}
    for group, names in groups.items():
        seen: dict[str, tuple[dict, list[str]]] = {}
        legacy = 0
        for label, settings in runs:
            if settings is None:
                legacy += 1
                continue
            if group not in settings:
                continue
            values = comparable(group, settings[group])
            key = json.dumps(values, sort_keys=True)
            seen.setdefault(key, (values, []))[1].append(label)
        if len(seen) > 1:
            (a, runs_a), (b, runs_b) = list(seen.values())[:2]
            differing = sorted(k for k in set(a) | set(b) if a.get(k, "—") != b.get(k, "—"))
            details = "; ".join(f"{group}.{k} = {a.get(k, '—')!r} in {len(runs_a)} run(s) "
                                f"vs {b.get(k, '—')!r} in {len(runs_b)} run(s)"
                                for k in differing)
            raise SettingsMismatch(
                f"the {'/'.join(names)} scores were computed with different metric settings "
                f"({details}; e.g. {runs_a[0]} and {runs_b[0]}"
                + (f"; {len(seen)} different settings in all" if len(seen) > 2 else "")
                + "): they cannot share a column; report them from separate --results "
                  "directories, or rerun with one setting")
        values = next(iter(seen.values()))[0] if seen else None
        summary[group] = {"columns": names, "settings": values,
                          "recorded": sum(len(v[1]) for v in seen.values()), "legacy": legacy}
    return summary


def report_section(run_dirs: Iterable, columns: Sequence[tuple[str, str, str]]
                   ) -> list[str]:
    """Markdown lines of the report's settings table for the runs in `run_dirs` (each
    holding a results.json); raises SettingsMismatch (see check_columns)."""
    run_dirs = [str(d) for d in run_dirs]
    summary = check_columns([(d, recorded(d)) for d in run_dirs], columns)
    lines = ["## Metric settings", "",
             "The settings behind every score (recorded per run in results.json, "
             "`metric_settings`); one column holds scores of one setting only (seeds and the "
             "code kind may differ). Runs written before settings were recorded (legacy) "
             "have unknown settings: the suite's defaults of their time (docs/metrics.md).",
             "", "| columns | metric | settings | runs with settings | legacy runs |",
             "|---|---|---|---|---|"]
    for group, info in summary.items():
        if not info["recorded"] and not info["legacy"]:
            continue                   # a metric no run computed
        shown = "unknown (legacy)" if info["settings"] is None else _show(info["settings"])
        lines.append(f"| {', '.join(info['columns'])} | `{group}` | {shown} | "
                     f"{info['recorded']} | {info['legacy']} |")
    return lines + [""]
