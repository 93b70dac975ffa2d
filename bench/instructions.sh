#!/bin/sh
# bench/instructions.sh - `make bench-instructions`: the policy overhead in
# instructions, the stable figure on machines without hardware counters.
#
# Runs `draengine bench policy-overhead` (gpu-nic-5000: 5,000 nodes x 8 GPUs
# + 8 NICs, 40,000 pods) under callgrind once without and once with the
# shipped policies, counting only inside bench_overhead_step (the policy
# host's cycle boundary and al_schedule_pod, per pod: the whole stream,
# first pod included) and, with policies, inside pol_host_new (the initial
# facts of every device).  A third run with one pod gives the first pod's
# cost.  Prints BENCH lines; needs valgrind (apt-get install valgrind).
set -eu
BIN=${1:-build/draengine}
NODES=${NODES:-5000}
command -v valgrind >/dev/null || { echo "bench-instructions: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/draengine-instr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Instruction counts do not depend on the machine's load, so the runs go two
# at a time (JOBS=1: one after another; the whole takes about 8 minutes with 2).
JOBS=${JOBS:-2}

# inclusive instructions of function $2 in callgrind output $1
incl() {
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk -v f="$2" '$0 ~ (":" f " ") || $0 ~ (":" f "$") { gsub(",", "", $1); print $1; exit }'
}
run() { # name, toggles, bench flags...
  name=$1; shift; toggles=$1; shift
  DRAENGINE_THP=0 valgrind --tool=callgrind $toggles --callgrind-out-file="$tmp/$name.out" \
    "$BIN" bench policy-overhead -- --nodes "$NODES" --rounds 1 "$@" >"$tmp/$name.txt" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.err" >&2; return 1; }
}
# two runs, side by side when JOBS > 1; fails when either does
pair() { # name1 toggles1 flags1 name2 toggles2 flags2 (flags as one word list)
  if [ "$JOBS" -gt 1 ]; then
    run "$1" "$2" $3 & p1=$!
    run "$4" "$5" $6 & p2=$!
    ok=0
    wait "$p1" || ok=1
    wait "$p2" || ok=1
    [ "$ok" = 0 ] || exit 1
  else
    run "$1" "$2" $3 || exit 1
    run "$4" "$5" $6 || exit 1
  fi
}
pair off "--toggle-collect=bench_overhead_step" "--only off" \
     on "--toggle-collect=bench_overhead_step --toggle-collect=pol_host_new" "--only on"
pair first-off "--toggle-collect=bench_overhead_step" "--only off --pods 1" \
     first-on "--toggle-collect=bench_overhead_step" "--only on --pods 1"
off=$(incl "$tmp/off.out" bench_overhead_step)
on=$(incl "$tmp/on.out" bench_overhead_step)
facts=$(incl "$tmp/on.out" pol_host_new)
f_off=$(incl "$tmp/first-off.out" bench_overhead_step)
f_on=$(incl "$tmp/first-on.out" bench_overhead_step)
devices=$((NODES * 16))
awk -v off="$off" -v on="$on" -v facts="$facts" -v d="$devices" -v foff="$f_off" -v fon="$f_on" 'BEGIN {
  printf "BENCH policy-overhead-instr-off %.0f instructions\n", off
  printf "BENCH policy-overhead-instr-on %.0f instructions\n", on
  printf "BENCH policy-overhead-instr-ratio %.4g x\n", on / off
  printf "BENCH policy-overhead-first-pod-instr-off %.0f instructions\n", foff
  printf "BENCH policy-overhead-first-pod-instr-on %.0f instructions\n", fon
  printf "BENCH policy-facts-instr %.0f instructions\n", facts
  printf "BENCH policy-facts-instr-per-device %.0f instructions\n", facts / d
}'
