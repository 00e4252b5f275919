"""`benchmark.readings.games` on small game artefacts written here: the threshold rule, a
game not yet published, unreadable evidence, and the command itself."""

import json
import pathlib

import pytest

from benchmark.readings import games
from tests.cli import python_m

NAMES = [name for name, _, _ in games.GAMES]


def write_game(root: pathlib.Path, name: str, share: float, below: bool = False,
               evidence: bool = True) -> pathlib.Path:
    """A published game artefact for game `name` under root (metadata.json and, with
    `evidence`, evidence.json) whose visible w-dependent share is `share`."""
    artefact = root / dict((n, a) for n, a, _ in games.GAMES)[name]
    artefact.mkdir(parents=True)
    factors = ["scale", "posX", "posY"]
    metadata = {"factor_names": factors,
                "training": {"steps": 3000, "mean_penalty": 0.0,
                             "game_settings": {"optimizers": [{"learning_rate": 1e-4}]},
                             "neuron_initial_weights": [1.0, 1.0, 1.0],
                             "neuron_turn_deg": 2.5, "final_terms": {"m_mean_share": 0.7}},
                "references": {"entangled": [{"published_from": "generation"}],
                               "disentangled": [{"published_from": "artefact"}]}}
    diagnostics = {"visible_m": {"w_dependent_share": share, "mean_abs": 0.2},
                   "m": {"w_dependent_share": share + 0.01, "saturated_fraction": 0.05},
                   "change": {"modified_mean_abs_change": 0.02},
                   "factor_sensitivity": {"relative": dict.fromkeys(factors, 0.1)},
                   "scalar": {"variance_share_by_factor": dict.fromkeys(factors, 1 / 3),
                              "weights": dict.fromkeys(factors, 1.1)},
                   "minimum_effect": {"reasons": ["m is too small"] if below else []}}
    (artefact / "metadata.json").write_text(json.dumps(metadata))
    if evidence:
        (artefact / "evidence.json").write_text(json.dumps({
            "diagnostics": diagnostics, "below_minimum_effect": below,
            "readaptation": {"gate": {"passes": True, "below_minimum_change": None,
                                      "arm_advantage_end": {"modified": -0.05}}},
            "reference_mig": {"entangled": {"original": 0.02}}}))
    return artefact


def rows(root: pathlib.Path, kept: dict | None = None) -> list[dict]:
    return [games.read_game(root, *game, kept or {}) for game in games.GAMES]


def test_the_item_is_met_by_a_counted_share_at_the_threshold(tmp_path):
    write_game(tmp_path, "diagonal", 0.03)
    write_game(tmp_path, "random", games.THRESHOLD)
    read = games.reading(rows(tmp_path))
    assert read["met"] is True
    assert read["largest"] == {"game": "random", "visible_w_dependent_share": games.THRESHOLD}


def test_the_item_is_not_met_below_the_threshold_nor_by_a_flagged_game(tmp_path):
    write_game(tmp_path, "diagonal", 0.09)
    write_game(tmp_path, "random", 0.05)
    write_game(tmp_path, "penalty", 0.58, below=True)     # a large share off a tiny m
    read = games.reading(rows(tmp_path))
    assert read["met"] is False
    assert read["largest"] == {"game": "diagonal", "visible_w_dependent_share": 0.09}
    assert read["games_not_counted_below_minimum_effect"] == ["penalty"]
    assert "not met." in games.item_text(read)


def test_a_game_not_yet_published_is_listed_as_such(tmp_path):
    write_game(tmp_path, "diagonal", 0.2)
    found = rows(tmp_path, kept={"random": {"m_mean_share": [[50, 0.9]]}})
    assert [r["published"] for r in found] == [True, False, False]
    assert found[1]["trajectory"] == {"m_mean_share": [[50, 0.9]]}   # kept from games.json
    read = games.reading(found)
    assert read["games_pending"] == ["random", "penalty"] and read["met"] is True
    text = games.markdown(found, read, "python -m benchmark.readings games X")
    assert "| random | " in text and "not published yet" in text
    assert "Pending: random, penalty." in text


def test_no_game_published_reads_as_such(tmp_path):
    read = games.reading(rows(tmp_path))
    assert read["largest"] is None and read["met"] is False
    assert "No game is published." in games.item_text(read)


def test_a_table_line_has_the_recorded_numbers(tmp_path):
    write_game(tmp_path, "random", 0.30456)
    line = games.table_line(rows(tmp_path)[1])
    assert line.count("|") == 10
    assert "| 0.3046 | 0.3146 | 0.02 | 0.700 |" in line
    assert "scale 1.00, posX 1.00, posY 1.00 → scale 1.10, posX 1.10, posY 1.10 (2.5°)" in line
    assert "passes (advantage at end: modified -0.050)" in line


@pytest.mark.parametrize("damage", ["missing", "not json", "a list", "no diagnostics"])
def test_unreadable_evidence_is_one_user_error_naming_the_file(tmp_path, damage):
    artefact = write_game(tmp_path, "diagonal", 0.2, evidence=damage != "missing")
    evidence = artefact / "evidence.json"
    if damage == "not json":
        evidence.write_text("{")
    elif damage == "a list":
        evidence.write_text("[]")
    elif damage == "no diagnostics":
        evidence.write_text(json.dumps({"below_minimum_effect": False}))
    with pytest.raises(games.GamesError) as raised:
        rows(tmp_path)
    message = str(raised.value)
    assert "\n" not in message and "expected" in message and "found" in message
    assert str(artefact) in message


def test_the_figure_is_written_with_and_without_trajectories(tmp_path):
    write_game(tmp_path, "diagonal", 0.2)
    found = rows(tmp_path, kept={"diagonal": {
        "m_mean_share": [[50, 0.9], [100, 0.8]],
        **{f"scalar_weight_{k}": [[50, 1.0], [100, 1.1]] for k in range(3)}}})
    games.figure(found, tmp_path / "with.png")
    games.figure(rows(tmp_path), tmp_path / "without.png")
    for name in ("with.png", "without.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "with.png", "without.png"]


@pytest.mark.slow
def test_the_command_writes_the_readings_into_the_study(tmp_path):
    write_game(tmp_path, "diagonal", 0.03, below=True)
    write_game(tmp_path, "random", 0.3)
    study = tmp_path / "results" / "study"
    study.mkdir()
    (study / "games.json").write_text(json.dumps({"games": [
        {"name": "diagonal", "trajectory": {"m_mean_share": [[50, 0.9]]}}]}))
    shown = python_m("benchmark.readings", "games", "results/study", cwd=tmp_path,
                     timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert sorted(p.name for p in study.iterdir()) == sorted(games.OUTPUTS)
    written = json.loads((study / "games.json").read_text())
    assert [g["name"] for g in written["games"]] == NAMES
    assert written["games"][0]["trajectory"] == {"m_mean_share": [[50, 0.9]]}
    assert written["reading"]["met"] is True and written["reading"]["games_pending"] == [
        "penalty"]
    text = (study / "games.md").read_text()
    assert "`python -m benchmark.readings games results/study`" in text
    assert text in shown.stdout


@pytest.mark.slow
def test_the_command_refuses_malformed_evidence_in_one_line(tmp_path):
    artefact = write_game(tmp_path, "diagonal", 0.2)
    (artefact / "evidence.json").write_text("{")
    (tmp_path / "study").mkdir()
    shown = python_m("benchmark.readings", "games", "study", cwd=tmp_path, timeout=300)
    assert shown.returncode == 2
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(JSON), found JSONDecodeError" in lines[0], shown.stderr
    assert "evidence.json" in lines[0] and not list((tmp_path / "study").iterdir())
