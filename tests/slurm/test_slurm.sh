#!/usr/bin/env bash
# A sharded sweep on a real one-node Slurm (issue 18): scripts/slurm-local starts a private
# cluster in a temporary folder; `isim sweep submit --slurm --tasks 4 --now` queues the array
# and its merge job; one task is cancelled after its first finished run; the merge job, whose
# afterok dependency can then never be met, is cancelled; the task is resubmitted with
# `sbatch --array=T` and must skip the runs its journal holds; the merge (as a Slurm job and
# locally) must equal an unsharded `--jobs 2` run byte for byte.
#
# Usage: tests/slurm/test_slurm.sh [ISIM]   (ISIM: the isim binary; default $ISIM_BIN, else
#        build/release/bin/isim, relative to the repository). Runs as root (slurmd runs the jobs); scripts/test-slurm runs it
#        as the CTest test slurm_sweep (label slurm, left out of the presets' suites).
# Exit: 0 pass; 1 fail (the daemons' logs and the jobs' output are printed).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
isim=${1:-$(cd "$repo" && realpath "${ISIM_BIN:-build/release/bin/isim}")}
isim=$(realpath "$isim")
spec=$repo/tests/slurm/sweep.yaml
tasks=4
t0=$SECONDS

say() { printf '[%3d s] %s\n' $((SECONDS - t0)) "$*"; }
fail() { say "FAIL: $*"; exit 1; }

work=$(mktemp -d /tmp/isim-slurm.XXXXXX)
chmod 755 "$work"  # munged wants every folder above its socket searchable by all
cd "$work"         # the jobs' working folder
out=$work/sweep

dump() {
  local f
  say "--- squeue, and the jobs slurmctld still knows"
  squeue 2>&1
  scontrol -o show job 2>&1 | cut -c1-200
  for f in "$work"/slurm/log/*.log "$work"/slurm/munge/munged.log "$out"/submit/logs/* \
           "$work/local.log"; do
    [[ -f $f ]] && { echo "--- last lines of $f"; tail -n 40 "$f"; }
  done
  for f in "$out"/shards/*.jsonl; do
    [[ -f $f ]] && echo "--- $f: $(records "$f") record(s)"
  done
}

finish() {
  local rc=$?
  trap - EXIT
  set +e
  ((rc == 0)) || dump
  "$repo/scripts/slurm-local" stop "$work/slurm" || rc=1
  rm -rf "$work"
  if ((rc == 0)); then say "PASS"; else say "FAILED"; fi
  exit $((rc == 0 ? 0 : 1))
}
trap finish EXIT

# Bounded polling: wait_for SECONDS WHAT COMMAND... until COMMAND succeeds.
wait_for() {
  local limit=$1 what=$2 end=$((SECONDS + $1))
  shift 2
  say "waiting up to $limit s for $what"
  until "$@"; do
    ((SECONDS < end)) || fail "$what: not after $limit s"
    sleep 0.5
  done
}

gone() { [[ -z $(squeue -h -j "$1" -o %i 2>/dev/null) ]]; }
job_state() { scontrol -o show job "$1" | grep -oE 'JobState=[A-Z_]+' | head -n1 | cut -d= -f2; }
task_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
# Finished runs in a shard journal: its complete lines after the header.
records() { local n; n=$(wc -l <"$1"); echo $((n > 0 ? n - 1 : 0)); }
journal() { echo "$out/shards/shard-$1-of-$tasks.jsonl"; }

start_slurm() {
  local line
  line=$("$repo/scripts/slurm-local" start "$work/slurm")
  [[ $line == "export SLURM_CONF="* ]] || fail "scripts/slurm-local start printed '$line'"
  eval "$line"
  say "slurm up: $line"
  sinfo
}

check_isim() {
  [[ -x $isim ]] || fail "no isim binary at $isim"
  grep -q -- '--shard' <<<"$("$isim" sweep --help)" || fail "$isim sweep has no --shard"
  "$isim" sweep submit --help >/dev/null || fail "$isim has no 'sweep submit'"
  runs=$("$isim" sweep "$spec" --list | wc -l)
  local k
  for ((k = 1; k <= tasks; k++)); do
    shard_runs[k]=$("$isim" sweep "$spec" --shard "$k/$tasks" --list | wc -l)
  done
  say "$runs runs; per shard: ${shard_runs[*]}"
}

submit() {
  "$isim" sweep submit --slurm "$spec" --tasks "$tasks" --jobs 1 --out "$out" --now |
    tee "$work/submit.txt"
  array=$(sed -n 's/^submitted array job \([0-9]*\).*/\1/p' "$work/submit.txt")
  merge=$(sed -n 's/^submitted merge job \([0-9]*\).*/\1/p' "$work/submit.txt")
  [[ -n $array && -n $merge ]] || fail "no job ids in the output of isim sweep submit"
  [[ -f $out/submit/sweep-array.sbatch && -f $out/submit/sweep-merge.sbatch ]] ||
    fail "isim sweep submit wrote no $out/submit/sweep-{array,merge}.sbatch"
}

# A task found running with at least one finished run and one to go. Never task 0: resubmitted
# alone, its id and its array's minimum are both 0, which would hide a shard number taken from
# SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN.
victim() {
  local t f
  gone "$array" && fail "array job $array ended before a task could be cancelled: runs too short?"
  for ((t = 1; t < tasks; t++)); do
    f=$(journal $((t + 1)))
    [[ $(task_state "${array}_$t") == RUNNING && -f $f ]] || continue
    local n
    n=$(records "$f")
    if ((n >= 1 && n < shard_runs[t + 1])); then killed=$t; return 0; fi
  done
  return 1
}

cancel_one_task() {
  wait_for 180 "a task with a finished run and more to go" victim
  local k=$((killed + 1))
  say "scancel ${array}_$killed (shard $k: $(records "$(journal $k)") of ${shard_runs[k]} done)"
  scancel "${array}_$killed"
  wait_for 30 "task ${array}_$killed to leave the queue" gone "${array}_$killed"
  [[ $(job_state "${array}_$killed") == CANCELLED ]] ||
    fail "task ${array}_$killed ended $(job_state "${array}_$killed"), not CANCELLED"
  cp "$(journal $k)" "$work/before.jsonl"
  before=$(records "$work/before.jsonl")
  ((before < shard_runs[k])) || fail "shard $k finished all its runs before the cancel took effect"
  say "shard $k journal after the cancel: $before of ${shard_runs[k]} run(s)"
}

merge_never_runs() {
  gone "$merge" && return 0
  [[ $(squeue -h -j "$merge" -o %r) == DependencyNeverSatisfied ]]
}

finish_first_array() {
  wait_for 240 "array job $array to finish" gone "$array"
  local t
  for ((t = 0; t < tasks; t++)); do
    ((t == killed)) || [[ $(job_state "${array}_$t") == COMPLETED ]] ||
      fail "task ${array}_$t ended $(job_state "${array}_$t")"
  done
  wait_for 30 "merge job $merge to be unrunnable (afterok:$array failed)" merge_never_runs
  gone "$merge" || { say "scancel $merge (DependencyNeverSatisfied)"; scancel "$merge"; }
  wait_for 30 "merge job $merge to leave the queue" gone "$merge"
  [[ ! -e $out/results.csv ]] || fail "the merge ran although a task was cancelled"
}

resubmit() {
  local t=$killed
  again=$(sbatch --parsable --array="$t" "$out/submit/sweep-array.sbatch")
  merge2=$(sbatch --parsable --dependency=afterok:"$again" "$out/submit/sweep-merge.sbatch")
  say "sbatch --array=$t: job $again; merge: job $merge2 (afterok:$again)"
  wait_for 180 "task ${again}_$t and merge job $merge2" gone_both "${again}" "$merge2"
}
gone_both() { gone "$1" && gone "$2"; }

check_resume() {
  local k=$((killed + 1)) log line f extra=""
  log=$out/submit/logs/${again}_${killed}.out
  [[ -f $log ]] || fail "no log $log"
  line=$(grep 'already finished' "$log") || fail "$log has no 'already finished' line"
  say "resumed: $line"
  for f in "$out"/shards/*; do
    [[ ${f##*/} =~ ^shard-[0-9]+-of-$tasks\.jsonl$ ]] || extra+=" ${f##*/}"
  done
  [[ -z $extra ]] || fail "task ${again}_$killed wrote$extra, not $(journal $k):" \
    "it took itself for another shard (alone in its array, it has SLURM_ARRAY_TASK_MIN=$killed" \
    "and SLURM_ARRAY_TASK_COUNT=1)"
  [[ $(job_state "${again}_$killed") == COMPLETED ]] ||
    fail "task ${again}_$killed ended $(job_state "${again}_$killed")"
  grep -Eq "(^|[^0-9])$before of ${shard_runs[k]}([^0-9]|\$)" <<<"$line" ||
    fail "the resumed shard did not report keeping $before of its ${shard_runs[k]} run(s)"
  cmp <(head -n $((before + 1)) "$(journal $k)") <(head -n $((before + 1)) "$work/before.jsonl") ||
    fail "shard $k's journal lost or changed the lines it had before the resubmit"
  python3 - "$runs" "$out"/shards/*.jsonl <<'EOF' || fail "the journals do not hold each run once"
import json, sys
runs, keys = int(sys.argv[1]), []
for path in sys.argv[2:]:
    with open(path) as f:
        lines = f.read().splitlines()
    assert "isim_sweep_shard" in json.loads(lines[0]), f"{path}: no header"
    keys += [json.loads(l)["key"] for l in lines[1:]]
dups = sorted({k for k in keys if keys.count(k) > 1})
print(f"journals: {len(keys)} record(s) for {runs} runs, repeated keys: {dups or 'none'}")
sys.exit(0 if len(keys) == runs and not dups else 1)
EOF
}

check_merge() {
  [[ $(job_state "$merge2") == COMPLETED ]] || fail "merge job $merge2 ended $(job_state "$merge2")"
  say "isim sweep merge, and an unsharded --jobs 2 run"
  "$isim" sweep merge "$work/merged.csv" "$out"/shards/*.jsonl
  "$isim" sweep "$spec" --jobs 2 --out "$work/local" >"$work/local.log" 2>&1 ||
    fail "the unsharded run failed"
  cmp "$work/merged.csv" "$work/local/results.csv" || fail "the merge differs from the local run"
  cmp "$out/results.csv" "$work/local/results.csv" || fail "the merge job's results.csv differs"
  say "merged results.csv (local and Slurm's merge job) == unsharded results.csv ($runs runs)"
}

declare -a shard_runs
check_isim
start_slurm
submit
cancel_one_task
finish_first_array
resubmit
check_resume
check_merge
