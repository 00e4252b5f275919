"""The ellipse games side by side, and the done-when item on a factor-dependent artefact.

    python results/manipulation_cpu/games.py

Reads each published game artefact's metadata.json and evidence.json (the diagonal game,
the random-start game and the penalty variant; results/manipulation_cpu/DESIGN.md) and
writes results/manipulation_cpu/games.json, games.md and games.png. Nothing is recomputed:
every number is one the generator or `perturbations.inspect --publish` recorded. A game not
yet published is listed as such. Each game's trajectory (m's batch-mean share and the
neuron's weights every 50 updates) is read from its TensorBoard log where one is on disk
(game_work/<game>/manipulation/tb, or the copy carry.sh keeps); the artefact does not
publish the log, so a trajectory once read is kept in games.json when the log is gone
(the diagonal game's was lost with its checkout). The item (DESIGN.md, amendment of 2026-11-27) is met when a
game's *visible* w-dependent share (the split of |m| = (x' - x)/eps (1 - 2x) that the
modified images show) reaches 0.10 and its diagnostics do not flag it below the minimum
effect (a share is a ratio, read off an m of any size: the penalty game's m changes the
images by 1e-6); the raw share of m is reported beside it.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
#: (name, artefact directory relative to the repository, what the game is)
GAMES = (("diagonal", "results/perturbations/dsprites_ellipse3_diagonal",
          "paper's settings, neuron started on the diagonal (primary; retrained on)"),
         ("random", "results/perturbations/dsprites_ellipse3_random",
          "paper's settings, neuron from dlib's seeded random draw"),
         ("penalty", "results/perturbations/dsprites_ellipse3_penalty",
          "suite's variant: batch-mean penalty 4096, Adam 1e-3; diagonal start"))
#: the item's threshold on the visible w-dependent share
THRESHOLD = 0.10
#: the logged terms a trajectory keeps (benchmark.train writes them under 'loss/')
TRAJECTORY_TERMS = ("m_mean_share", "scalar_weight_0", "scalar_weight_1", "scalar_weight_2",
                    "reconstruction_entangled", "reconstruction_disentangled")


def trajectory(artefact: str) -> dict | None:
    """{term: [[update, value], ...]} from the game's TensorBoard log (the last value per
    update: a resumed game logs again the updates after its checkpoint, identically), or
    None when no log is on disk."""
    game = pathlib.Path(artefact).name
    for logs in (ROOT / "game_work" / game / "manipulation" / "tb",
                 HERE / "in_progress" / game / "manipulation" / "tb"):
        if logs.is_dir() and any(logs.iterdir()):
            break
    else:
        return None
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


def read_game(name: str, directory: str, what: str, kept: dict) -> dict:
    """One game's recorded numbers ({'name', 'artefact', 'what', 'trajectory', 'published':
    False} when its artefact has no metadata.json yet); kept: {game: trajectory} that
    games.json held, used when the log is gone."""
    path = ROOT / directory
    row = {"name": name, "artefact": directory, "what": what,
           "trajectory": trajectory(directory) or kept.get(name)}
    if not (path / "metadata.json").is_file():
        return {**row, "published": False}
    metadata = json.loads((path / "metadata.json").read_text())
    evidence = json.loads((path / "evidence.json").read_text())
    diagnostics = evidence["diagnostics"]
    training = metadata["training"]
    gate = evidence.get("readaptation", {}).get("gate", {})
    factors = metadata["factor_names"]
    initial = training.get("neuron_initial_weights")
    return {**row, "published": True, "updates": training["steps"],
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
            "neuron_initial_weights": (dict(zip(factors, initial)) if initial else None),
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


def reading(rows: list[dict]) -> dict:
    """The item's reading from the published games. A game its own diagnostics flag as
    below the minimum effect (m changes the images by less than a grey level) does not
    count, whatever its share: a share is a ratio and is read off any m, however small."""
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


def weights(found) -> str:
    return "—" if not found else ", ".join(f"{k} {v:.2f}" for k, v in found.items())


def markdown(rows: list[dict], read: dict) -> str:
    lines = ["# The ellipse games side by side", "",
             "Written by `python results/manipulation_cpu/games.py` from each artefact's "
             "metadata.json and evidence.json; nothing recomputed. Dataset: dSprites ellipse, "
             "orientation fixed (scale × posX × posY), ε 0.1, 3,000 updates of m. "
             "Trajectories (games.png, games.json) from the games' TensorBoard logs "
             "where kept.", "",
             "| game | what | visible w-dependent share | raw share | mean \\|x′ − x\\| (300 images) "
             "| m's last-batch mean share | neuron start → end (turn) | neuron variance share "
             "| gate |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["published"]:
            lines.append(f"| {r['name']} | {r['what']} | not published yet | | | | | | |")
            continue
        turn = ("" if r["neuron_turn_deg"] is None else f" ({r['neuron_turn_deg']:.1f}°)")
        gate = ("not run yet" if r["gate_passes"] is None else
                ("passes" if r["gate_passes"] else "fails") +
                (": data changed by less than a grey level" if r["gate_below_minimum_change"]
                 else "") + " (advantage at end: " +
                ", ".join(f"{k} {v:+.3f}" for k, v in (r["gate_advantage_end"] or {}).items())
                + ")")
        lines.append(
            f"| {r['name']} | {r['what']} | {r['visible_w_dependent_share']:.4f} | "
            f"{r['raw_w_dependent_share']:.4f} | {r['mean_abs_change']:.2g} | "
            f"{r['final_m_mean_share']:.3f} | "
            f"{weights(r['neuron_initial_weights'])} → {weights(r['neuron_final_weights'])}"
            f"{turn} | {weights(r['neuron_variance_share_by_factor'])} | {gate} |")
    largest = read["largest"]
    lines += ["", "## The done-when item",
              f"Met when a game's visible w-dependent share is ≥ {THRESHOLD:.2f} and its own "
              "diagnostics do not flag it below the minimum effect. "
              + ("No game is published." if largest is None else
                 f"Largest: {largest['game']}, {largest['visible_w_dependent_share']:.4f}: "
                 + ("met." if read["met"] else "not met."))
              + (" Not counted, below the minimum effect: "
                 f"{', '.join(read['games_not_counted_below_minimum_effect'])}."
                 if read["games_not_counted_below_minimum_effect"] else "")
              + (f" Pending: {', '.join(read['games_pending'])}."
                 if read["games_pending"] else ""), ""]
    for r in rows:
        if r["published"] and r["neuron_initial_weights"] is None:
            lines.append(f"- {r['name']}: the neuron's initial weights are not in its "
                         "metadata (made before they were recorded); the penalty game "
                         "starts from the same seeded diagonal draw.")
        if r["published"] and r["minimum_effect_reasons"]:
            lines.append(f"- {r['name']}: flagged by its own diagnostics: "
                         + "; ".join(r["minimum_effect_reasons"]))
    return "\n".join(lines) + "\n"


def write(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def figure(rows: list[dict], path: pathlib.Path) -> None:
    """m's batch-mean share and the neuron's weights over the updates, one colour a game."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (share, neuron) = plt.subplots(1, 2, figsize=(10, 3.6))
    for r, colour in zip(rows, ("C0", "C1", "C2")):
        if not r["trajectory"]:
            continue
        steps, values = zip(*r["trajectory"]["m_mean_share"])
        share.plot(steps, values, color=colour, label=r["name"])
        for k, style in zip(range(3), ("-", "--", ":")):
            steps, values = zip(*r["trajectory"][f"scalar_weight_{k}"])
            neuron.plot(steps, values, color=colour, linestyle=style,
                        label=f"{r['name']}: weight {k}")
    share.set(xlabel="update of m", ylabel="m's batch-mean share (last batch)",
              title="image-independent share of m", ylim=(0, 1))
    neuron.set(xlabel="update of m", ylabel="weight (0 scale, 1 posX, 2 posY)",
               title="the neuron's input weights")
    share.legend(fontsize=7)
    neuron.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)


def main() -> int:
    old = HERE / "games.json"
    kept = ({g["name"]: g.get("trajectory") for g in json.loads(old.read_text())["games"]}
            if old.is_file() else {})
    rows = [read_game(*game, kept) for game in GAMES]
    read = reading(rows)
    write(HERE / "games.json", json.dumps({"games": rows, "reading": read}, indent=2) + "\n")
    write(HERE / "games.md", markdown(rows, read))
    figure(rows, HERE / "games.png")
    print(markdown(rows, read))
    return 0


if __name__ == "__main__":
    sys.exit(main())
