#!/bin/bash
# Carries the ellipse games' unfinished state between checkouts. game_work/ is git-ignored
# and a new checkout starts without it, while one game takes longer (~2 h of updates and a
# 42 min gate on the 2-core AMD EPYC) than a session has CPU left. Run from anywhere:
#   bash results/manipulation_cpu/carry.sh save     # after stopping the games
#   bash results/manipulation_cpu/carry.sh restore  # before resuming them (campaign.sh does)
# save: for each game in game_work/ that has not written its outputs (no generated.json),
#   copies its latest checkpoint (14 MB: m, both decoders, their Adam states, the step),
#   game_settings.json and TensorBoard log into results/manipulation_cpu/in_progress/<game>/
#   (written beside, then renamed over the last copy).
# restore: copies each carried game back into game_work/<game>/ unless a game is there, so
#   `perturbations.generate --resume` goes on from that update (a resumed game draws the
#   same batches: benchmark.train).
# clean: removes the carried copy of each game whose artefact is published.
set -e
cd "$(dirname "$0")/../.."
CARRY=results/manipulation_cpu/in_progress
case "$1" in
save)
  for work in game_work/dsprites_ellipse3_*; do
    [ -d "$work" ] || continue
    game=$(basename "$work")
    manipulation=$work/manipulation
    [ -f "$work/generated.json" ] && continue
    [ -f "$manipulation/checkpoints/checkpoint" ] || continue
    latest=$(sed -n 's/^model_checkpoint_path: "\(.*\)"$/\1/p' "$manipulation/checkpoints/checkpoint")
    [ -n "$latest" ] || { echo "carry: $manipulation/checkpoints/checkpoint names no checkpoint" >&2; exit 2; }
    dest=$CARRY/$game/manipulation
    rm -rf "$dest.tmp"
    mkdir -p "$dest.tmp/checkpoints"
    cp "$manipulation/game_settings.json" "$dest.tmp/"
    cp -r "$manipulation/tb" "$dest.tmp/"
    cp "$manipulation/checkpoints/$latest".* "$dest.tmp/checkpoints/"
    printf 'model_checkpoint_path: "%s"\nall_model_checkpoint_paths: "%s"\n' "$latest" "$latest" \
      > "$dest.tmp/checkpoints/checkpoint"
    rm -rf "$dest"
    mv "$dest.tmp" "$dest"
    echo "carry: saved $game at $latest into $dest"
  done;;
restore)
  [ -d "$CARRY" ] || exit 0
  for carried in "$CARRY"/*/; do
    [ -d "$carried" ] || continue
    game=$(basename "$carried")
    if [ -f "results/perturbations/$game/metadata.json" ]; then
      echo "carry: $game is published; its carried copy can be removed"; continue
    fi
    [ -d "game_work/$game/manipulation" ] && continue
    mkdir -p "game_work/$game"
    cp -r "$carried/manipulation" "game_work/$game/"
    echo "carry: restored $game from $carried"
  done;;
clean)
  [ -d "$CARRY" ] || exit 0
  for carried in "$CARRY"/*/; do
    [ -d "$carried" ] || continue
    game=$(basename "$carried")
    if [ -f "results/perturbations/$game/metadata.json" ]; then
      rm -rf "$carried"
      echo "carry: removed the carried copy of $game (published)"
    fi
  done
  rmdir "$CARRY" 2>/dev/null || true;;
*)
  echo "usage: carry.sh save|restore|clean" >&2; exit 2;;
esac
