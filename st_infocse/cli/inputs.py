"""What the command line checks before the heavy work, beyond one flag's own value (checked where it is declared):
the model source, the output folder and an earlier run in it, and the model loaded by the flags."""

from __future__ import annotations

import re
from pathlib import Path

from st_infocse.cli.arguments import ModelArguments
from st_infocse.cli.errors import CLIError
from st_infocse.files import looks_local


def check_model_source(source: str, flag: str | None = None) -> None:
    if looks_local(source) and not Path(source).expanduser().exists():
        raise CLIError(f"{flag + ': ' if flag else ''}model not found: {source}")


def check_output_dir(output_dir: str | None, flag: str = "--output_dir") -> None:
    """A folder to write into, tried by creating it and a file in it (what the try created is removed): a file in
    its place or a folder that cannot be written would fail only after the model loaded."""
    if not output_dir:
        return
    import tempfile

    folder = Path(output_dir).expanduser()
    if folder.is_file():
        raise CLIError(f"{flag}: {output_dir} is a file, not a folder")
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as exc:
        raise CLIError(f"{flag}: cannot write into {output_dir} ({exc.strerror or exc})") from None
    finally:
        for path in missing:  # deepest first: the run creates them again when it writes
            if path.is_dir():
                path.rmdir()


def model_from_args(args: ModelArguments, seed: int | None = None):
    """The model the flags name (:func:`st_infocse.training.load_model`), seeded first where ``seed`` is given."""
    from st_infocse.training.builder import load_model

    return load_model(args.model, args.pooling, args.max_seq_length, args.trust_remote_code, seed)


# What a run writes into its output folder: checkpoints, IDC rounds, stage 1's model and decoder, the summary, and a
# saved Sentence Transformer's files and numbered module folders.
_RUN_FILES = re.compile(r"^(checkpoint-\d+|rounds|model|decoder|decoder_warmup|run_summary\.json|modules\.json|"
                        r"config(_sentence_transformers)?\.json|sentence_bert_config\.json|model\.safetensors|"
                        r"tokenizer(_config)?\.json|special_tokens_map\.json|vocab\.txt|README\.md|\d+_\w+)$")


def check_earlier_run(output_dir: str, resume: object, overwrite: bool) -> str | None:
    """A folder that holds an earlier run is refused (a second run would mix its files with the first's), unless the
    run resumes it or ``--overwrite_output_dir`` replaces it, its files removed first; returns a note for the start-up
    summary when something was removed."""
    folder = Path(output_dir).expanduser()
    earlier = sorted(p for p in folder.iterdir() if _RUN_FILES.match(p.name)) if folder.is_dir() else []
    if not earlier or resume is not None:
        return None
    names = ", ".join(p.name for p in earlier[:4]) + (f" and {len(earlier) - 4} more" if len(earlier) > 4 else "")
    if not overwrite:
        raise CLIError(f"--output_dir {output_dir} holds an earlier run ({names}); resume it with "
                       "--resume_from_checkpoint, write to another folder, or replace it with --overwrite_output_dir true")
    import shutil

    for path in earlier:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return f"the earlier run in it removed ({names})"
