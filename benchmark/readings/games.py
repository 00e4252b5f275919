"""The ellipse games side by side, and the done-when item on a factor-dependent artefact.

    python -m benchmark.readings games results/manipulation_cpu

Run from the repository root: the game artefacts (GAMES) are named relative to it, as
games.json records them. Reads each published game artefact's metadata.json and
evidence.json (the diagonal game, the random-start game and the penalty variant;
results/manipulation_cpu/DESIGN.md) and writes games.json, games.md and games.png into the
study directory given. Nothing is recomputed: every number is one the generator or
`perturbations.inspect --publish` recorded. A game not yet published is listed as such.
Each game's trajectory (m's batch-mean share and the neuron's weights every 50 updates) is
read from its TensorBoard log where one is on disk (game_work/<game>/manipulation/tb, the
generator's work directory); the artefact does not publish the log, so a trajectory once
read is kept in games.json when the log is gone (the diagonal game's was lost with its
checkout). The item (results/manipulation_cpu/DESIGN.md, amendment of 2026-11-27) is met
when a game's *visible* w-dependent share (the split of |m| = (x' - x)/eps (1 - 2x) that
the modified images show) reaches 0.10 and its diagnostics do not flag it below the
minimum effect (a share is a ratio, read off an m of any size: the penalty game's m
changes the images by 1e-6); the raw share of m is reported beside it.
"""

from __future__ import annotations

import pathlib

from benchmark.core.atomic import atomic_path, write_json
from benchmark.readings import ReadingError, read_json_object

#: (name, artefact directory relative to the repository root, what the game is)
GAMES = (("diagonal", "results/perturbations/dsprites_ellipse3_diagonal",
          "paper's settings, neuron started on the diagonal (primary; retrained on)"),
         ("random", "results/perturbations/dsprites_ellipse3_random",
          "paper's settings, neuron from dlib's seeded random draw"),
         ("penalty", "results/perturbations/dsprites_ellipse3_penalty",
          "suite's variant: batch-mean penalty 4096, Adam 1e-3; diagonal start"))
#: the item's threshold on the visible w-dependent share
THRESHOLD = 0.10
#: the logged terms a trajectory keeps (benchmark.runs.train writes them under 'loss/')
TRAJECTORY_TERMS = ("m_mean_share", "scalar_weight_0", "scalar_weight_1", "scalar_weight_2",
                    "reconstruction_entangled", "reconstruction_disentangled")
#: the files this reading writes into the study directory
OUTPUTS = ("games.json", "games.md", "games.png")


class GamesError(ReadingError):
    """A game artefact or games.json this reading cannot read (missing, not JSON, or
    without a recorded number it reports)."""


def read_json(path: pathlib.Path) -> dict:
    """The JSON object stored at `path`; GamesError naming the file when it is missing,
    is not JSON or is not an object."""
    return read_json_object(path, "a game's JSON record", GamesError)


def log_dir(root: pathlib.Path, artefact: str) -> pathlib.Path | None:
    """The game's TensorBoard log directory (root/game_work/<artefact's name>/manipulation/
    tb) when it holds anything, else None."""
    logs = root / "game_work" / pathlib.PurePosixPath(artefact).name / "manipulation" / "tb"
    return logs if logs.is_dir() and any(logs.iterdir()) else None


def trajectory(logs: pathlib.Path) -> dict:
    """{term: [[update, value], ...]} for each of TRAJECTORY_TERMS logged under 'loss/' in
    the TensorBoard log `logs`, updates ascending (the last value per update: a resumed game
    logs again the updates after its checkpoint, identically)."""
    from tensorboard.backend.event_processing import event_accumulator
    accumulator = event_accumulator.EventAccumulator(
        str(logs), size_guidance={event_accumulator.TENSORS: 0})
    accumulator.Reload()
    import tensorflow as tf
    found = {}
    for term in TRAJECTORY_TERMS:
        tag = f"loss/{term}"
        if tag not in accumulator.Tags()["tensors"]:
            continue
        by_step = {e.step: float(tf.make_ndarray(e.tensor_proto))
                   for e in accumulator.Tensors(tag)}
        found[term] = [[step, by_step[step]] for step in sorted(by_step)]
    return found


def recorded(metadata: dict, evidence: dict) -> dict:
    """The numbers a published game recorded, from its metadata.json and evidence.json:
    shares and sizes (floats), {factor: value} dicts for the sensitivities and the
    neuron's weights, the gate's outcome and {arm: advantage at the end}. KeyError or
    TypeError when a number is not where the generator records it."""
    diagnostics = evidence["diagnostics"]
    training = metadata["training"]
    gate = evidence.get("readaptation", {}).get("gate", {})
    initial = training.get("neuron_initial_weights")
    return {"updates": training["steps"],
            "mean_penalty": training["mean_penalty"],
            "learning_rates": [o.get("learning_rate") for o in
                               training.get("game_settings", {}).get("optimizers", [])],
            "visible_w_dependent_share": diagnostics["visible_m"]["w_dependent_share"],
            "raw_w_dependent_share": diagnostics["m"]["w_dependent_share"],
            "visible_mean_abs": diagnostics["visible_m"]["mean_abs"],
            "mean_abs_change": diagnostics["change"]["modified_mean_abs_change"],
            "saturated_fraction": diagnostics["m"]["saturated_fraction"],
            "factor_sensitivity_relative": diagnostics["factor_sensitivity"]["relative"],
            "neuron_variance_share_by_factor":
                diagnostics["scalar"]["variance_share_by_factor"],
            "neuron_initial_weights": (dict(zip(metadata["factor_names"], initial))
                                       if initial else None),
            "neuron_final_weights": diagnostics["scalar"]["weights"],
            "neuron_turn_deg": training.get("neuron_turn_deg"),
            "final_m_mean_share": training["final_terms"].get("m_mean_share"),
            "below_minimum_effect": evidence.get("below_minimum_effect"),
            "minimum_effect_reasons": diagnostics["minimum_effect"].get("reasons", []),
            "gate_passes": gate.get("passes"),
            "gate_below_minimum_change": gate.get("below_minimum_change"),
            "gate_advantage_end": gate.get("arm_advantage_end"),
            "reference_mig": evidence.get("reference_mig"),
            "references_published_from": {
                side: [r.get("published_from") for r in metadata["references"][side]]
                for side in ("entangled", "disentangled")}}


def read_game(root: pathlib.Path, name: str, artefact: str, what: str, kept: dict) -> dict:
    """One game's row: {'name', 'artefact', 'what', 'trajectory', 'published'} and, when
    root/artefact has a metadata.json, `recorded`'s numbers. The trajectory is read from
    the game's log under root when there is one, else taken from `kept` ({game:
    trajectory or None}, what games.json held). GamesError naming the file when the
    metadata or evidence is missing, malformed or lacks a number."""
    path = root / artefact
    logs = log_dir(root, artefact)
    row = {"name": name, "artefact": artefact, "what": what,
           "trajectory": (trajectory(logs) if logs else None) or kept.get(name)}
    if not (path / "metadata.json").is_file():
        return {**row, "published": False}
    metadata, evidence = read_json(path / "metadata.json"), read_json(path / "evidence.json")
    try:
        return {**row, "published": True, **recorded(metadata, evidence)}
    except (KeyError, TypeError, AttributeError) as error:
        raise GamesError(f"expected the generator's records in {path}/metadata.json and "
                         f"evidence.json, found them without {error}") from None


def kept_trajectories(study: pathlib.Path) -> dict:
    """{game: trajectory or None} from the study's games.json ({} when there is none)."""
    path = study / "games.json"
    if not path.is_file():
        return {}
    try:
        return {g["name"]: g.get("trajectory") for g in read_json(path)["games"]}
    except (KeyError, TypeError, AttributeError) as error:
        raise GamesError(f"expected {path} to hold 'games' as a list of rows with a 'name', "
                         f"found it without {error}") from None


def reading(rows: list[dict]) -> dict:
    """The item's reading from the rows (`read_game`): met when the largest visible
    w-dependent share among the counted games is >= THRESHOLD. A game its own diagnostics
    flag as below the minimum effect (m changes the images by less than a grey level) does
    not count, whatever its share: a share is a ratio and is read off any m, however
    small."""
    published = [r for r in rows if r["published"]]
    counted = [r for r in published if not r["below_minimum_effect"]]
    best = max(counted, key=lambda r: r["visible_w_dependent_share"], default=None)
    return {"threshold_visible_w_dependent_share": THRESHOLD,
            "games_published": [r["name"] for r in published],
            "games_not_counted_below_minimum_effect":
                [r["name"] for r in published if r["below_minimum_effect"]],
            "games_pending": [r["name"] for r in rows if not r["published"]],
            "largest": None if best is None else
            {"game": best["name"], "visible_w_dependent_share":
                best["visible_w_dependent_share"]},
            "met": bool(best and best["visible_w_dependent_share"] >= THRESHOLD)}


def weights(found: dict | None) -> str:
    """{factor: weight} as 'factor 0.12, ...' (two decimals), or '—' when None or empty."""
    return "—" if not found else ", ".join(f"{k} {v:.2f}" for k, v in found.items())


def gate_text(row: dict) -> str:
    """The re-adaptation gate's outcome of a published row, with each arm's advantage at
    the end; 'not run yet' when the artefact has no gate."""
    if row["gate_passes"] is None:
        return "not run yet"
    return (("passes" if row["gate_passes"] else "fails")
            + (": data changed by less than a grey level"
               if row["gate_below_minimum_change"] else "")
            + " (advantage at end: "
            + ", ".join(f"{k} {v:+.3f}" for k, v in (row["gate_advantage_end"] or {}).items())
            + ")")


def table_line(row: dict) -> str:
    """One game's line of the markdown table (9 columns)."""
    if not row["published"]:
        return f"| {row['name']} | {row['what']} | not published yet | | | | | | |"
    turn = "" if row["neuron_turn_deg"] is None else f" ({row['neuron_turn_deg']:.1f}°)"
    return (f"| {row['name']} | {row['what']} | {row['visible_w_dependent_share']:.4f} | "
            f"{row['raw_w_dependent_share']:.4f} | {row['mean_abs_change']:.2g} | "
            f"{row['final_m_mean_share']:.3f} | "
            f"{weights(row['neuron_initial_weights'])} → "
            f"{weights(row['neuron_final_weights'])}{turn} | "
            f"{weights(row['neuron_variance_share_by_factor'])} | {gate_text(row)} |")


def item_text(read: dict) -> str:
    """The done-when item's paragraph from `reading`'s result."""
    largest = read["largest"]
    not_counted = read["games_not_counted_below_minimum_effect"]
    return (f"Met when a game's visible w-dependent share is ≥ {THRESHOLD:.2f} and its own "
            "diagnostics do not flag it below the minimum effect. "
            + ("No game is published." if largest is None else
               f"Largest: {largest['game']}, {largest['visible_w_dependent_share']:.4f}: "
               + ("met." if read["met"] else "not met."))
            + (f" Not counted, below the minimum effect: {', '.join(not_counted)}."
               if not_counted else "")
            + (f" Pending: {', '.join(read['games_pending'])}."
               if read["games_pending"] else ""))


def notes(rows: list[dict]) -> list[str]:
    """Markdown bullets: a published game whose metadata lacks the neuron's initial
    weights, and each game its own diagnostics flag (with their reasons)."""
    lines = []
    for r in rows:
        if r["published"] and r["neuron_initial_weights"] is None:
            lines.append(f"- {r['name']}: the neuron's initial weights are not in its "
                         "metadata (made before they were recorded); the penalty game "
                         "starts from the same seeded diagonal draw.")
        if r["published"] and r["minimum_effect_reasons"]:
            lines.append(f"- {r['name']}: flagged by its own diagnostics: "
                         + "; ".join(r["minimum_effect_reasons"]))
    return lines


def markdown(rows: list[dict], read: dict, command: str) -> str:
    """games.md: the table of the games, the item's reading and the notes; `command` is
    the command line that wrote it."""
    lines = ["# The ellipse games side by side", "",
             f"Written by `{command}` from each artefact's "
             "metadata.json and evidence.json; nothing recomputed. Dataset: dSprites ellipse, "
             "orientation fixed (scale × posX × posY), ε 0.1, 3,000 updates of m. "
             "Trajectories (games.png, games.json) from the games' TensorBoard logs "
             "where kept.", "",
             "| game | what | visible w-dependent share | raw share "
             "| mean \\|x′ − x\\| (300 images) | m's last-batch mean share "
             "| neuron start → end (turn) | neuron variance share | gate |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [table_line(r) for r in rows]
    lines += ["", "## The done-when item", item_text(read), ""]
    return "\n".join(lines + notes(rows)) + "\n"


def figure(rows: list[dict], path: pathlib.Path) -> None:
    """games.png: m's batch-mean share (left) and the neuron's three input weights (right)
    over the updates, one colour a game; games without a trajectory are left out."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 3.6))
    share, neuron = fig.subplots(1, 2)
    for r, colour in zip(rows, ("C0", "C1", "C2")):
        found = r["trajectory"] or {}
        if "m_mean_share" in found:
            share.plot(*zip(*found["m_mean_share"]), color=colour, label=r["name"])
        for k, style in zip(range(3), ("-", "--", ":")):
            if f"scalar_weight_{k}" in found:
                neuron.plot(*zip(*found[f"scalar_weight_{k}"]), color=colour,
                            linestyle=style, label=f"{r['name']}: weight {k}")
    share.set(xlabel="update of m", ylabel="m's batch-mean share (last batch)",
              title="image-independent share of m", ylim=(0, 1))
    neuron.set(xlabel="update of m", ylabel="weight (0 scale, 1 posX, 2 posY)",
               title="the neuron's input weights")
    if share.lines:
        share.legend(fontsize=7)
    if neuron.lines:
        neuron.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def study_dir(args: list[str]) -> pathlib.Path:
    """The one argument, an existing directory; GamesError saying what was found."""
    if len(args) != 1:
        raise GamesError("usage: python -m benchmark.readings games STUDY_DIR; expected one "
                         f"argument, found {len(args)}: {args}")
    study = pathlib.Path(args[0])
    if not study.is_dir():
        raise GamesError(f"expected STUDY_DIR to be a directory, found {study} "
                         f"{'is a file' if study.exists() else 'does not exist'}")
    return study


def main(args: list[str]) -> None:
    """Reads the games from the current directory (the repository root) and writes
    OUTPUTS into the study directory args[0]; prints games.md."""
    study = study_dir(args)
    root = pathlib.Path.cwd()
    kept = kept_trajectories(study)
    rows = [read_game(root, *game, kept) for game in GAMES]
    read = reading(rows)
    text = markdown(rows, read, f"python -m benchmark.readings games {study.as_posix()}")
    write_json(study / "games.json", {"games": rows, "reading": read}, sort_keys=False)
    with atomic_path(study / "games.md", ".md") as tmp:
        tmp.write_text(text)
    figure(rows, study / "games.png")
    print(text)
