#!/usr/bin/env bash
# One published row with one command: train a recipe, then evaluate it on the STS suite.
#   bash recipes/run_recipe.sh NAME [any st-infocse train flag, e.g. --train_data wiki1m_for_simcse.txt]
# NAME: simcse-bert-base, infocse-bert-base, infocse-bert-large, informin-bert-base, cmlm-cse-bert-base
# (`st-infocse recipes` shows each one's settings, source and published numbers). Set OUT for the output folder
# (not --output_dir, which the evaluation would not see) and SENTEVAL for a local SentEval data/downstream folder.
set -euo pipefail
NAME=${1:?usage: bash recipes/run_recipe.sh NAME [st-infocse train flags]   (st-infocse recipes lists the names)}
shift
OUT=${OUT:-runs/$NAME}
st-infocse train --recipe "$NAME" --output_dir "$OUT" "$@"
st-infocse evaluate --model "$OUT" --sts "${SENTEVAL:-mteb}" --output_dir "$OUT/eval"
