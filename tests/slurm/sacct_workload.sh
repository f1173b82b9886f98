#!/usr/bin/env bash
# A few dozen short jobs on the local Slurm (tests/slurm/local_slurm.sh start), then their
# accounting as sacct exports it (the sacct export the job-log reader is tested on was made this way).
#   tests/slurm/sacct_workload.sh OUT.txt
# Three accounts (vision, nlp, speech) and three Unix users (alice, bob, carol; made here if
# absent), jobs with --gres=gpu:1/2/4 and typed gpu:t4:2 / gpu:a100:1, one CPU or two, a job
# array, a job with srun steps; some fail (exit 1), some are cancelled (running and pending),
# two time out (--time=0:01, sleep 300), one is requeued while it runs. Root only; takes ~4 min.
set -euo pipefail
OUT=${1:?usage: $0 OUT.txt}
DIR=${FAIRSIM_SLURM_DIR:-/tmp/fairsim-slurm}
export SLURM_CONF=$DIR/slurm.conf
START=$(date +%Y-%m-%dT%H:%M:%S)
WORK=$DIR/jobs
mkdir -p "$WORK" && chmod 1777 "$WORK"

for u in alice bob carol; do id "$u" >/dev/null 2>&1 || useradd -M -s /bin/bash "$u"; done
sacctmgr -i add account vision,nlp,speech cluster=fairsim >/dev/null || true
sacctmgr -i add user alice account=vision >/dev/null || true
sacctmgr -i add user bob account=vision,speech >/dev/null || true
sacctmgr -i add user carol account=nlp >/dev/null || true

# sub USER ACCOUNT SBATCH-ARGS... : submit as USER from $WORK, print the job id
sub() {
    local user=$1 account=$2; shift 2
    (cd "$WORK" && runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable -A "$account" -o /dev/null "$@")
}

ids=()
# ordinary jobs that complete
ids+=("$(sub alice vision -J resnet50 --gres=gpu:1 --wrap 'sleep 4')")
ids+=("$(sub alice vision -J resnet50-2g --gres=gpu:2 --wrap 'sleep 5')")
ids+=("$(sub bob vision -J vit-4g --gres=gpu:4 -c 2 --wrap 'sleep 6')")
ids+=("$(sub bob speech -J conformer --gres=gpu:t4:2 --wrap 'sleep 4')")
ids+=("$(sub carol nlp -J bert --gres=gpu:a100:1 --wrap 'sleep 3')")
ids+=("$(sub carol nlp -J gpt2 --gres=gpu:a100:4 --mem=2G --wrap 'sleep 5')")
ids+=("$(sub bob speech -J wav2vec --gres=gpu:t4:4 --wrap 'sleep 3')")
ids+=("$(sub alice vision -J cpu-prep --wrap 'sleep 2')")
ids+=("$(sub carol nlp -J tokenize -c 2 --wrap 'sleep 2')")
ids+=("$(sub alice vision -J steps --gres=gpu:t4:1 --wrap 'srun sleep 2; srun sleep 1')")
ids+=("$(sub bob vision -J sweep --array=0-3 --gres=gpu:1 --wrap 'sleep 3')")
for i in 1 2 3 4 5 6; do
    ids+=("$(sub carol nlp -J "lm-$i" --gres=gpu:$((i % 2 + 1)) --wrap "sleep $((2 + i % 3))")")
done
# failures
ids+=("$(sub alice vision -J crash --gres=gpu:1 --wrap 'sleep 2; exit 1')")
ids+=("$(sub bob speech -J oom-like --gres=gpu:t4:2 --wrap 'sleep 1; exit 137')")
ids+=("$(sub carol nlp -J badarg --wrap 'exit 2')")
# time-outs: one minute allowed, five asked
ids+=("$(sub alice vision -J too-long --time=0:01 --gres=gpu:2 --wrap 'sleep 300')")
ids+=("$(sub carol nlp -J too-long-2 --time=0:01 --wrap 'sleep 300')")
# cancelled: one while it runs, one still pending (it asks for all 8 GPUs behind the others)
running=$(sub bob vision -J cancel-me --gres=gpu:1 --wrap 'sleep 120')
pending=$(sub alice vision -J cancel-pending --gres=gpu:8 --wrap 'sleep 5')
# requeued while it runs, then it completes
requeue=$(sub carol nlp -J requeue-me --requeue --gres=gpu:a100:2 --wrap 'sleep 15')
ids+=("$running" "$pending" "$requeue")

state() { squeue -h -j "$1" -o %T 2>/dev/null || true; }
for _ in $(seq 300); do [ "$(state "$running")" = RUNNING ] && break; sleep 1; done
sleep 3
scancel "$running"
scancel "$pending"
for _ in $(seq 300); do [ "$(state "$requeue")" = RUNNING ] && break; sleep 1; done
sleep 3
scontrol requeue "$requeue"
# a few more after the requeue, then wait for everything to leave the queue
ids+=("$(sub bob speech -J late --gres=gpu:t4:1 --wrap 'sleep 2')")
ids+=("$(sub alice vision -J late-2 --gres=gpu:a100:2 --wrap 'sleep 2')")
for _ in $(seq 600); do [ -z "$(squeue -h -o %i)" ] && break; sleep 2; done
sleep 5  # the last records reach slurmdbd
sacct -a -P -S "$START" \
    --format=JobID,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,NNodes,NCPUS,AllocTRES,ReqTRES \
    >"$OUT"
echo "sacct_workload: $(($(wc -l <"$OUT") - 1)) rows (jobs and steps) since $START in $OUT" >&2
