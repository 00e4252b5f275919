#!/bin/bash
# Issue 28's remaining CPU work on the 3-factor ellipse, in the order registered in
# DESIGN.md (and results/objective_check_ellipse/DESIGN.md); each step resumes where it
# stopped and is a no-op once finished. Run niced from the repository root:
#   nohup nice -n 19 bash results/manipulation_cpu/campaign.sh > campaign.log 2>&1 &
# Stop: kill -INT the study / generate / readapt process, then its benchmark.run children.
set -e
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
# step 5: the retraining study
$PY -m benchmark.study --gin_file=studies/manipulation_ellipse3_cpu.gin --workers=2
# the original arm's codes (results/manipulation_ellipse3_cpu/restore_codes.py): the six
# pool runs whose angles alignment.json lacks; seeds 2 and 7 (the references) and 8, 9
# are in it already, from the codes of an earlier identical retrain and of the pool itself
$PY -m benchmark.study --gin_file=studies/restarts_ellipse3_cpu.gin \
  --gin_bindings="study.output_dir = 'runs/restarts_ellipse3_retrain'" \
  --gin_bindings="study.seeds = [0, 1, 3, 4, 5, 6]" --workers=2
$PY results/manipulation_ellipse3_cpu/restore_codes.py
$PY -m benchmark.metrics.alignment results/manipulation_ellipse3_cpu --columns=1,2 > /dev/null
# step 7: the audit rerun against the study
$PY -m benchmark.audit --gin_file=examples/sparse_vae.gin \
  --reference=results/manipulation_ellipse3_cpu \
  --output_dir=results/audit_sparse_vae_ellipse3 --workers=2
# the two descriptive games: the random start, then the penalty variant
$PY -m perturbations.generate --gin_file=perturbations/dsprites_ellipse3_cpu.gin \
  --gin_bindings="generation.neuron_direction = None" \
  --gin_bindings="generation.work_dir = 'game_work/dsprites_ellipse3_random'" \
  --gin_bindings="generation.output_dir = 'results/perturbations/dsprites_ellipse3_random'"
$PY -m perturbations.generate --gin_file=perturbations/dsprites_ellipse3_penalty_cpu.gin \
  --gin_bindings="generation.work_dir = 'game_work/dsprites_ellipse3_penalty'"
# step 4: the objective's positive control
$PY -m perturbations.readapt results/perturbations/dsprites_ellipse_modified \
  --steps=1000 --eval_every=100 --seeds=0,1,2 --match_to=naive@1 \
  --arms=original,modified,naive@1,noisy@matched,modified@matched,wave@matched,wave_entangled@matched \
  --compare_to=noisy@matched --out=results/objective_check_ellipse/readaptation_seeds.json
