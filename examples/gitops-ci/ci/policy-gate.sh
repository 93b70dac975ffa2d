#!/bin/sh
# policy-gate.sh - the CI gate of a policy repository: lint the proposed
# policies, run their specs, and diff them against the current ones on a
# snapshot of the cluster.
#
#   ci/policy-gate.sh BASE_POLICIES HEAD_POLICIES SNAPSHOT...
#
# BASE_POLICIES is the directory as it is on the target branch, HEAD_POLICIES
# as the pull request leaves it; SNAPSHOT files come from `draengine snapshot`
# (or the kubectl recipe in draengine's README).  Environment: DRAENGINE (the
# binary, default `draengine`), OUT (where the reports go, default gate-out).
#
# Reports in $OUT: lint.txt, junit.xml (the specs, for a test reporter),
# diff.md (the pull-request comment), diff.json (everything, as data).
#
# Exit status - what the CI job reports:
#   0  the revision may merge (changes, if any, are in diff.md for review)
#   1  lint found errors or a spec failed
#   2  the revision's hooks fail on the snapshot's devices - `serve`,
#      `allocate` and `run` would refuse it - or an input is invalid
set -u

if [ $# -lt 3 ]; then
    echo "usage: $0 BASE_POLICIES HEAD_POLICIES SNAPSHOT..." >&2
    exit 2
fi
base=$1
head=$2
shift 2
# every snapshot becomes "-f SNAPSHOT"
for snapshot do
    shift
    set -- "$@" -f "$snapshot"
done
D=${DRAENGINE:-draengine}
OUT=${OUT:-gate-out}
mkdir -p "$OUT" || exit 2

"$D" policy lint "$head" >"$OUT/lint.txt" 2>&1
lint=$?
cat "$OUT/lint.txt"

"$D" policy test "$head" -o junit >"$OUT/junit.xml" 2>"$OUT/test.err"
test=$?
cat "$OUT/test.err" >&2

"$D" policy diff --from "$base" --to "$head" "$@" -o markdown >"$OUT/diff.md" 2>"$OUT/diff.err"
diff=$?
"$D" policy diff --from "$base" --to "$head" "$@" -o json >"$OUT/diff.json" 2>/dev/null
cat "$OUT/diff.err" >&2

echo "policy gate: lint exit $lint, specs exit $test, diff exit $diff (reports in $OUT)"
if [ "$diff" -ge 2 ]; then
    echo "policy gate: refused - see the hook failures in $OUT/diff.md" >&2
    exit 2
fi
if [ "$lint" -ne 0 ] || [ "$test" -ne 0 ]; then
    [ "$lint" -ge 2 ] || [ "$test" -ge 2 ] && exit 2
    exit 1
fi
exit 0
