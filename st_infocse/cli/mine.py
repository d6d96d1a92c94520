"""``st-infocse mine``: IDC positive pairs mined from documents into a dataset on disk (paper 002).

    st-infocse mine --model out --docs docs.jsonl.gz --output_dir pairs
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from st_infocse.cli.arguments import MineArguments, SavedModelArguments
from st_infocse.cli.errors import CLIError
from st_infocse.cli.inputs import check_model_source, check_output_dir, model_from_args
from st_infocse.cli.output import summary
from st_infocse.cli.parsing import parse_command
from st_infocse.mining.documents import DOCUMENT_FORMATS, load_documents

SECTIONS = (SavedModelArguments, MineArguments)


def cmd_mine(argv: Sequence[str]) -> int:
    parsed = parse_command(SECTIONS, argv, "st-infocse mine")
    if parsed is None:  # --help
        return 0
    model_args, mine_args = parsed
    if not mine_args.docs:
        raise CLIError(f"--docs is required (documents: {DOCUMENT_FORMATS})")
    documents = load_documents(mine_args.docs, mine_args.max_docs)  # checked first, before the model loads
    check_model_source(model_args.model)
    check_output_dir(mine_args.output_dir)
    from st_infocse.evaluation import quiet_logs
    from st_infocse.mining import mine_pairs

    loaded = model_from_args(model_args)
    model = loaded.model
    summary("Mining", {"model": f"{model_args.model} ({loaded.how})", "max length": model.max_seq_length})
    # The miner logs its report at INFO; the command prints it once below, and keeps the miner's warnings.
    with quiet_logs(("st_infocse.mining.idc",)):
        # every flag of the section but the command's own is the miner's argument of the same name
        mined = mine_pairs(documents, model, show_progress_bar=True, **{
            item.name: getattr(mine_args, item.name) for item in fields(mine_args)
            if item.name not in ("docs", "output_dir", "max_docs")})
    written = mined.save(mine_args.output_dir)
    print(mined.report.summary())
    summary("Mining done", {"pairs": len(mined.pairs), "time": f"{mined.report.total_seconds:.0f} s", **written})
    return 0
