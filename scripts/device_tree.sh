#!/usr/bin/env bash
# What a device call sends: the tracked and untracked-not-ignored files plus its carry, 64 MiB at most. Since round 63
# the tree (~49 MiB) and the FlashInfer bundle (.carry/fi, 15.1 MiB) no longer fit together. The session drivers'
# campaigns and test files read neither the figures nor the executed notebook snapshots under data/, so a call that
# carries FlashInfer runs between `slim` and `restore`. The whole suite (h200_suite.sh, also r56a with H100_SUITE=1)
# reads the figures (README's cited files) but not the snapshots: `slim snapshots` for it (~59 MiB with the bundle).
# h200_live_reproduce.sh (`make reproduce`) reads neither (it rewrites the figures): slim, and carry .whl beside the bundle.
#   bash scripts/device_tree.sh size             # MiB that would travel, with and without .carry/fi
#   bash scripts/device_tree.sh slim [snapshots] # delete those files (or the snapshots only) from the working tree
#                                                # (refuses changes under them)
#   bash scripts/device_tree.sh restore   # bring back the deleted ones from HEAD (staged deletions too); edits stay
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
SNAPSHOTS=data/measured/h200/live-2026-12-01/notebooks
SLIM=(figures "$SNAPSHOTS")
mib() { awk '{s += $1} END {printf "%.1f", s / 1048576}'; }
size() {
  local tree carry
  # deleted files stay listed until committed: count the ones present
  tree=$( { git ls-files -z; git ls-files -z --others --exclude-standard; } \
    | { xargs -0 -r stat -c %s 2>/dev/null || true; } | mib)
  carry=$( [ -d .carry/fi ] && find .carry/fi -type f -printf '%s\n' | mib || echo 0)
  echo "tree ${tree} MiB, .carry/fi ${carry} MiB, together $(awk -v a="$tree" -v b="$carry" 'BEGIN {printf "%.1f", a + b}')" \
    "MiB (the tool refused 63.7 in round 63: keep well under 64)"
}
case "${1:?size, slim or restore}" in
size) size ;;
slim)
  case "${2:-all}" in all) ;; snapshots) SLIM=("$SNAPSHOTS") ;;
    *) echo "device_tree.sh: slim takes nothing or 'snapshots', not '$2'" >&2; exit 2 ;; esac
  if [ -n "$(git status --porcelain --untracked-files=all -- "${SLIM[@]}")" ]; then
    echo "device_tree.sh: changed or untracked files under ${SLIM[*]}:" >&2
    git status --short --untracked-files=all -- "${SLIM[@]}" >&2
    echo "commit, restore or remove them first (slim deletes tracked files only; these would travel or be lost)" >&2
    exit 2
  fi
  git ls-files -z -- "${SLIM[@]}" | xargs -0 -r rm -f
  size ;;
restore)
  # the files slim deleted: missing from the tree, whether or not the deletion was staged since (`git add -A`)
  # (a file present again, e.g. a figure regenerated since, stays as it is)
  gone=()
  while IFS= read -r -d '' f; do [ -e "$f" ] || gone+=("$f"); done < <(
    { git ls-files -z --deleted -- "${SLIM[@]}"
      git diff -z --cached --name-only --diff-filter=D -- "${SLIM[@]}"; } | sort -zu)
  (( ${#gone[@]} )) && git checkout HEAD -- "${gone[@]}"
  echo "restored ${#gone[@]} files"
  size ;;
*) echo "device_tree.sh: unknown command '$1' (size, slim or restore)" >&2; exit 2 ;;
esac
