#!/usr/bin/env bash
# The GPU check: about 7 minutes on one H100, 9 at most (each phase has its own time limit).
#
#   MINILM_DIR=<all-MiniLM-L6-v2 folder> [OUT_DIR=benchmarks/results] bash benchmarks/gpu_check.sh
#
# 1. the GPU-marked tests, python -m pytest -m gpu tests/training/test_gpu.py tests/training/test_distributed.py:
#    bf16 autocast, torch.compile with inductor, no host synchronisation in the package's part of a step, two-process
#    DDP over NCCL where two GPUs are;
# 2. the training-step time of SimCSE, InfoCSE, CMLM-CSE, InforMin-CL and stage 1 at BERT-base's shape (random
#    weights), bf16 autocast and fp32, each eager and with the fast step (--fast_step: static shapes, SDPA, CUDA
#    graphs) side by side: ms/step, peak memory, share of a matmul peak timed in the same run, host syncs per step
#    (python -m benchmarks.gpu_check step-time; rows not started within its budget are reported as skipped);
# 3. InfoCSE from all-MiniLM-L6-v2 through the command line (st-infocse train --fast_step true, bf16, MINILM_STEPS
#    steps of 64 of the shipped Wikipedia sentences) with the shipped STS-B dev before and after.
# Writes OUT_DIR/gpu_check.json, OUT_DIR/gpu_check.md and OUT_DIR/gpu_check.log. A phase that fails or runs out of
# time is reported as such and the others still run; the exit status is 0 only when every phase passed.
#
# Without a CUDA GPU it stops at once with one line and exit status 2, unless GPU_CHECK_DRY_RUN=1, which runs every
# phase tiny on the CPU (a 2-layer BERT for the table, 4 MiniLM steps, 200 STS-B dev pairs) to test the script.
# Environment: MINILM_DIR (required: a Sentence Transformer folder of all-MiniLM-L6-v2, e.g. the one
# `python -m benchmarks.gpu_check shrink-model` writes), OUT_DIR, WORK_DIR (default: a new temporary folder), PYTHON
# (default python3), MINILM_STEPS (default 250), STEP_BATCHES (default "256"), GPU_CHECK_COMMIT (the commit to
# name in the report where the tree has no .git).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
PYTHON="${PYTHON:-python3}"
DRY_RUN="${GPU_CHECK_DRY_RUN:-0}"
OUT_DIR="${OUT_DIR:-$REPO/benchmarks/results}"
KEEP_WORK="${WORK_DIR:+1}"  # a WORK_DIR given is kept; a temporary one is removed at the end
WORK_DIR="${WORK_DIR:-$(mktemp -d -t gpu_check.XXXXXX)}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"  # the package from this tree, installed or not

if [ "$DRY_RUN" != 1 ] && ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 2)' 2>/dev/null; then
    echo "gpu_check: no CUDA GPU visible to $PYTHON (torch.cuda.is_available() is false, or torch did not import); GPU_CHECK_DRY_RUN=1 runs it tiny on the CPU" >&2
    exit 2
fi
if [ -z "${MINILM_DIR:-}" ] || [ ! -f "${MINILM_DIR}/config.json" ]; then
    echo "gpu_check: MINILM_DIR must name an all-MiniLM-L6-v2 folder (got '${MINILM_DIR:-}')" >&2
    exit 2
fi
MINILM_DIR="$(cd "$MINILM_DIR" && pwd)"
mkdir -p "$OUT_DIR" "$WORK_DIR"
LOG="$OUT_DIR/gpu_check.log"
: >"$LOG"
START=$SECONDS
PHASES="$WORK_DIR/phases.json"
echo '{}' >"$PHASES"

# run_phase NAME LIMIT_S COMMAND...: runs it under `timeout`, logs it, records its status and seconds.
run_phase() {
    local name="$1" limit="$2" begin=$SECONDS status
    shift 2
    echo "=== $name (limit ${limit}s): $*" | tee -a "$LOG"
    # straight into the log (no pipe a leftover child could hold open); its end is shown once the phase is over
    timeout --kill-after=10 "$limit" "$@" >>"$LOG" 2>&1
    local rc=$?
    tail -n 25 "$LOG"
    case $rc in
        0) status=passed ;;
        124 | 137) status="timed out after ${limit}s" ;;
        *) status="failed (exit $rc)" ;;
    esac
    echo "=== $name: $status in $((SECONDS - begin))s" | tee -a "$LOG"
    "$PYTHON" - "$PHASES" "$name" "$status" "$((SECONDS - begin))" <<'EOF'
import json, sys
path, name, status, seconds = sys.argv[1:]
phases = json.load(open(path))
phases[name] = {"status": status, "seconds": int(seconds)}
json.dump(phases, open(path, "w"))
EOF
    [ "$rc" = 0 ]
}

OK=0
if [ "$DRY_RUN" = 1 ]; then
    # pytest's own -m gpu runs the same tests, skipped without CUDA; the phases below run tiny on the CPU.
    STEP_ARGS=(--dry-run --batch-sizes 8 --warmup 2 --steps 1 --repeats 2 --budget-s 150)
    "$PYTHON" - "$WORK_DIR/stsb_dev_small.jsonl" <<'EOF'
import gzip, sys
from pathlib import Path
import st_infocse.data as data
lines = gzip.decompress((Path(data.__file__).parent / data.STSB_DEV_FILE).read_bytes()).decode().splitlines()
Path(sys.argv[1]).write_text("\n".join(lines[:200]) + "\n")
EOF
    TRAIN_ARGS=(--stsb_dev "$WORK_DIR/stsb_dev_small.jsonl" --max_steps 4 --per_device_train_batch_size 16
                --max_train_samples 256 --bf16 false --fast_step true)
    LIMITS=(240 240 240)
else
    # shellcheck disable=SC2206
    # batch 256 alone by default: each fast row compiles for 20-45 s, so two batch sizes do not fit the budget
    STEP_ARGS=(--batch-sizes ${STEP_BATCHES:-256} --budget-s 170)
    TRAIN_ARGS=(--stsb_dev demo --max_steps "${MINILM_STEPS:-250}" --per_device_train_batch_size 64 --bf16 true
                --fast_step true)
    LIMITS=(200 215 120)  # the fast-step tests compile with inductor; with the start and the report, under 9 minutes
fi

run_phase "GPU-marked tests" "${LIMITS[0]}" "$PYTHON" -m pytest -m gpu tests/training/test_gpu.py \
    tests/training/test_distributed.py -p no:cacheprovider -rfEs --junitxml="$WORK_DIR/gpu_tests.xml" || OK=1
run_phase "step time" "${LIMITS[1]}" "$PYTHON" -m benchmarks.gpu_check step-time --out "$WORK_DIR/step_time.json" \
    --tokenizer "$MINILM_DIR" "${STEP_ARGS[@]}" || OK=1
run_phase "InfoCSE from all-MiniLM-L6-v2" "${LIMITS[2]}" "$PYTHON" -m st_infocse.cli train --model "$MINILM_DIR" \
    --pooling cls --objective infocse --train_data demo --seed 0 --output_dir "$WORK_DIR/minilm" \
    --overwrite_output_dir true "${TRAIN_ARGS[@]}" || OK=1

REPORT_ARGS=(--work "$WORK_DIR" --out-dir "$OUT_DIR" --wall-seconds "$((SECONDS - START))")
[ "$DRY_RUN" = 1 ] && REPORT_ARGS+=(--dry-run)
"$PYTHON" -m benchmarks.gpu_check report "${REPORT_ARGS[@]}" 2>&1 | tee -a "$LOG" || OK=1
[ -z "$KEEP_WORK" ] && rm -rf "$WORK_DIR"
echo "gpu_check: $([ $OK = 0 ] && echo 'every phase passed' || echo 'some phase failed (see above)') in $((SECONDS - START))s; wrote $OUT_DIR/gpu_check.json, gpu_check.md, gpu_check.log"
exit $OK
