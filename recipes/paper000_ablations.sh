#!/usr/bin/env bash
# Paper 000 Tables 4-8: STS-B dev (best checkpoint, evaluated every 125 steps), BERT-base, one GPU, hub access.
# Each run prints "best STS-B dev" in its final summary. Paper values are in the comments.
set -euo pipefail
OUT=${OUT:-runs/paper000-ablations}
STAGE1=${STAGE1:?set STAGE1 to the output_dir of the stage-1 run in paper000_table2.sh}
BASE=(--model "$STAGE1/model" --decoder "$STAGE1/decoder" --learning_rate 3e-5 --eval_steps 125 --save_steps 125)

# Table 4: InfoCSE 85.49; w/o auxiliary pre-training 83.73.
st-infocse train --objective infocse "${BASE[@]}" --output_dir "$OUT/t4-infocse"
st-infocse train --objective infocse --model bert-base-uncased --learning_rate 3e-5 --output_dir "$OUT/t4-no-pretraining"

# Table 5: w/o MLM loss (= SimCSE) 82.45; w/o contrastive loss (conditional MLM alone) 40.00.
st-infocse train --objective infocse "${BASE[@]}" --lambda 0 --output_dir "$OUT/t5-no-mlm"
st-infocse train --objective cmlm "${BASE[@]}" --output_dir "$OUT/t5-no-contrastive"

# Table 6: w/o gradient detach (the decoder's lower copy trains) 84.41.
st-infocse train --objective infocse "${BASE[@]}" --detach false --output_dir "$OUT/t6-no-detach"

# Table 7: mask rate 0.10 83.97, 0.15 84.62, 0.20 84.74, 0.25 85.08, 0.30 84.19, 0.35 84.70, 0.40 85.49, 0.45 84.13.
for rate in 0.10 0.15 0.20 0.25 0.30 0.35 0.40 0.45; do
  st-infocse train --objective infocse "${BASE[@]}" --mask_rate "$rate" --output_dir "$OUT/t7-mask-$rate"
done

# Table 8: lambda 0 82.45, 1e-5 85.49, 5e-5 84.7, 1e-4 84.29, 5e-3 80.48, 5e-2 75.27.
for lam in 0 1e-5 5e-5 1e-4 5e-3 5e-2; do
  st-infocse train --objective infocse "${BASE[@]}" --lambda "$lam" --output_dir "$OUT/t8-lambda-$lam"
done
