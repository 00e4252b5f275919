#!/bin/bash
# Issue 28's remaining CPU work on the 3-factor ellipse (results/manipulation_cpu/DESIGN.md,
# results/objective_check_ellipse/DESIGN.md). Each step resumes where it stopped and is a
# no-op once its published output exists, so the script can be rerun from any checkout.
# Run niced from the repository root:
#   nohup nice -n 19 bash results/manipulation_cpu/campaign.sh > campaign.log 2>&1 &
# Stop: kill -INT the study / generate / readapt process, then its benchmark.run children.
# Done and published before (not repeated here): the retraining study
# (studies/manipulation_ellipse3_cpu.gin, 67 runs) and the original arm's codes from
# bit-identical retrains (results/manipulation_ellipse3_cpu/restore_codes.py, whose
# docstring holds the commands). Order (DESIGN.md amendment of 2026-11-27): the two
# descriptive games and the objective's positive control before the audit, whose verdict
# its positive control already fixes (INCONCLUSIVE); amendment of 2026-11-27 23:37/23:38: the
# objective check first, since its finished arms can be committed between sessions (the
# games' checkpoints live in the ignored game_work/).
set -e
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
published() { [ -f "$1/metadata.json" ]; }
# an unfinished game carried from another checkout goes back into game_work/ (carry.sh)
bash results/manipulation_cpu/carry.sh restore
# step 4: the objective's positive control (an interrupted run resumes from
# readaptation_seeds.json.partial.json, which may be committed between sessions)
[ -f results/objective_check_ellipse/readaptation_seeds.json ] ||
  $PY -m perturbations.readapt results/perturbations/dsprites_ellipse_modified \
    --steps=1000 --eval_every=100 --seeds=0,1,2 --match_to=naive@1 \
    --arms=original,modified,naive@1,noisy@matched,modified@matched,wave@matched,wave_entangled@matched \
    --compare_to=noisy@matched --out=results/objective_check_ellipse/readaptation_seeds.json
# the random-start game, then the penalty variant, on the diagonal game's two references
# (published there with their SHA-256; used because they repeat the pool runs' MIG, so
# nothing is retrained: generation.reference_artefacts)
DIAGONAL="generation.reference_artefacts = ['results/perturbations/dsprites_ellipse3_diagonal']"
published results/perturbations/dsprites_ellipse3_random ||
  $PY -m perturbations.generate --gin_file=perturbations/dsprites_ellipse3_cpu.gin --resume \
    --gin_bindings="$DIAGONAL" \
    --gin_bindings="generation.neuron_direction = None" \
    --gin_bindings="generation.work_dir = 'game_work/dsprites_ellipse3_random'" \
    --gin_bindings="generation.output_dir = 'results/perturbations/dsprites_ellipse3_random'"
published results/perturbations/dsprites_ellipse3_penalty ||
  $PY -m perturbations.generate --gin_file=perturbations/dsprites_ellipse3_penalty_cpu.gin \
    --resume --gin_bindings="generation.work_dir = 'game_work/dsprites_ellipse3_penalty'" \
    --gin_bindings="$DIAGONAL"
# the games side by side (games.md, games.json, games.png); carried copies of published
# games are removed
$PY results/manipulation_cpu/games.py
bash results/manipulation_cpu/carry.sh clean
# step 7: the audit rerun against the study (finished runs under its output_dir are kept)
$PY -m benchmark.audit --gin_file=examples/sparse_vae.gin \
  --reference=results/manipulation_ellipse3_cpu \
  --output_dir=results/audit_sparse_vae_ellipse3 --workers=2
