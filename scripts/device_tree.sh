#!/usr/bin/env bash
# What a device call sends: the tracked and untracked-not-ignored files plus its carry, 64 MiB at most. Since round 63
# the tree (48.6 MiB) and the FlashInfer bundle (.carry/fi, 15.1 MiB) no longer fit together. The session drivers'
# campaigns and test files read neither the figures nor the executed notebook snapshots under data/, so a call that
# carries FlashInfer runs between `slim` and `restore`. Not for h200_suite.sh or h200_live_reproduce.sh: the whole
# suite and `make reproduce` read them.
#   bash scripts/device_tree.sh size      # MiB that would travel, with and without .carry/fi
#   bash scripts/device_tree.sh slim      # delete those files from the working tree (refuses a dirty tree)
#   bash scripts/device_tree.sh restore   # bring them back from git
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
SLIM=(figures data/measured/h200/live-2026-12-01/notebooks)
mib() { awk '{s += $1} END {printf "%.1f", s / 1048576}'; }
size() {
  local tree carry
  # deleted files stay listed until committed: count the ones present
  tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } \
    | { xargs -0 -r stat -c %s 2>/dev/null || true; } | mib)
  carry=$( [ -d .carry/fi ] && find .carry/fi -type f -printf '%s\n' | mib || echo 0)
  echo "tree ${tree} MiB, .carry/fi ${carry} MiB, together $(echo "$tree $carry" | awk '{print $1 + $2}') MiB" \
    "(the tool refused 63.7 in round 63: keep well under 64)"
}
case "${1:?size, slim or restore}" in
size) size ;;
slim)
  if [ -n "$(git status --porcelain -- "${SLIM[@]}")" ]; then
    echo "device_tree.sh: ${SLIM[*]} have uncommitted changes; commit them first" >&2; exit 2
  fi
  git ls-files -z -- "${SLIM[@]}" | xargs -0 rm -f
  size ;;
restore) git checkout -- "${SLIM[@]}"; size ;;
*) echo "device_tree.sh: unknown command '$1' (size, slim or restore)" >&2; exit 2 ;;
esac
