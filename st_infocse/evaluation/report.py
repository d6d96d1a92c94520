"""Results out: JSON, markdown tables, and plots (matplotlib, from the ``eval`` extra).

Tables and plots show every score x100 as the papers do; the JSON keeps each result's own values and names their
scale in ``"scale"``: ``"x100"`` (STS, transfer, in-domain recall) or ``"0-1"`` (BEIR metrics, as beir and mteb
return them). Alignment and uniformity are distances, not scores: left as is.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from st_infocse.files import existing_path

from ._deps import require
from ._format import cell, markdown_table
from .loaders import PathLike
from .results import EvaluationResult
from .retrieval import BEIRResult
from .sts import STSB_DEV_METRIC, STSResult


def environment() -> dict[str, str]:
    """Versions of Python and of the packages that shape the numbers (``"not installed"`` when absent), for the JSON.

    Example:
        >>> "python" in environment()
        True
    """
    out = {"python": platform.python_version()}
    for package in ("st-infocse", "sentence-transformers", "transformers", "torch", "mteb", "beir", "scikit-learn"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def to_jsonable(value: Any) -> Any:
    """Result objects (anything with ``to_dict``), numpy scalars and paths as JSON-ready values; non-finite floats
    become ``None`` (JSON has no NaN).

    Example:
        >>> to_jsonable({"x": float("nan"), "p": Path("a")})
        {'x': None, 'p': 'a'}
    """
    if hasattr(value, "to_dict"):
        return to_jsonable(value.to_dict())
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(results: Mapping[str, Any], path: PathLike, include_environment: bool = True,
               settings: Mapping[str, Any] | None = None) -> Path:
    """Write results as indented JSON (parent folders created): ``settings`` (how they were produced) first, then
    each result by name, then with ``include_environment`` the package versions and the UTC time.

    Example:
        >>> import tempfile
        >>> p = write_json({"score": 1.0}, Path(tempfile.mkdtemp()) / "r.json", include_environment=False)
        >>> p.read_text()
        '{\\n  "score": 1.0\\n}\\n'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"settings": to_jsonable(settings)} if settings is not None else {}
    if "settings" in payload and "settings" in results:
        raise ValueError("a result is titled 'settings', which the settings would overwrite")
    payload.update(to_jsonable(results))
    if include_environment:
        payload["environment"] = environment()
        payload["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def sts_markdown(results: Sequence[STSResult]) -> str:
    """Several models' STS rows (same tasks) in one markdown table, the papers' Table 2 layout, notes below."""
    if not results:
        raise ValueError("no results")
    table = markdown_table(["Model", *results[0].scores], [r.row() for r in results])
    notes = list(dict.fromkeys(note for r in results for note in r.notes()))
    return table + "".join(f"\n\n- {note}" if i == 0 else f"\n- {note}" for i, note in enumerate(notes))


def markdown_report(results: Mapping[str, Any], settings: Mapping[str, Any] | None = None) -> str:
    """One markdown document with a "Settings" section, then a section per result (scores x100): title -> an
    ``STSResult`` (or a list of them), any :class:`EvaluationResult`, or any JSON-able value."""
    sections = []
    if settings:
        sections.append("## Settings\n\n" + "\n".join(f"- {key}: {cell(v)}" for key, v in settings.items()))
    for title, value in results.items():
        # STS results go through sts_markdown, which also lists the notes under the table (several models in one)
        if isinstance(value, STSResult):
            body = sts_markdown([value])
        elif isinstance(value, Sequence) and value and all(isinstance(v, STSResult) for v in value):
            body = sts_markdown(list(value))
        elif isinstance(value, EvaluationResult):
            body = value.to_markdown()
        else:
            body = f"```json\n{json.dumps(to_jsonable(value), indent=2)}\n```"
        sections.append(f"## {title}\n\n{body}")
    return "\n\n".join(sections) + "\n"


def _figure(width: float, height: float) -> Any:
    # the object-oriented API needs no pyplot and no global backend switch
    require("matplotlib", "Plots")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _grouped_bars(axes: Any, labels: Sequence[str], series: dict[str, list[float]], fontsize: int,
                  horizontal: bool = False) -> None:
    """One bar per series at each label, side by side, each bar labelled with its value."""
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        positions = [t + (i - (len(series) - 1) / 2) * width for t in range(len(labels))]
        bars = (axes.barh if horizontal else axes.bar)(positions, values, width, label=name)
        axes.bar_label(bars, fmt="%.1f", fontsize=fontsize)


def plot_sts(results: Sequence[STSResult], path: PathLike, reference: Mapping[str, float] | None = None) -> Path:
    """Spearman x100 per STS task, a bar per model; ``reference`` (task -> value, e.g. published numbers) is drawn as
    black ticks."""
    tasks = list(results[0].scores)
    # At most 10 inches wide, so that the labels stay readable where a documentation column shows it (~750 px).
    figure = _figure(min(10.0, 1.2 * len(tasks) + 2), 4.5)
    axes = figure.add_subplot()
    _grouped_bars(axes, tasks, {r.model: [r.scores.get(t, math.nan) for t in tasks] for r in results}, 10)
    if reference:
        xs = [i for i, t in enumerate(tasks) if t in reference]
        axes.scatter(xs, [reference[tasks[i]] for i in xs], marker="_", s=400, color="black", label="reference")
    axes.set_xticks(range(len(tasks)), tasks, fontsize=11)
    axes.tick_params(axis="y", labelsize=10)
    axes.set_ylabel("Spearman x100 (cosine)", fontsize=11)
    axes.set_ylim(max(0.0, min(v for r in results for v in r.scores.values()) - 10), 100)
    axes.legend(fontsize=10)
    return _save(figure, path)


def plot_beir(results: Sequence[BEIRResult], path: PathLike, metric: str = "ndcg@10") -> Path:
    """One retrieval metric (x100) per dataset, a horizontal bar per model."""
    datasets = list(results[0].datasets)
    figure = _figure(6, 0.5 * len(datasets) * max(1, len(results)) + 1.5)
    axes = figure.add_subplot()
    series = {r.model: [100 * r.datasets[d].metrics.get(metric, math.nan) if d in r.datasets else math.nan
                        for d in datasets] for r in results}
    _grouped_bars(axes, datasets, series, 7, horizontal=True)
    axes.set_yticks(range(len(datasets)), datasets)
    axes.invert_yaxis()
    axes.set_xlabel(f"{metric} x100")
    axes.legend(fontsize=8)
    return _save(figure, path)


def _log_history(source: Any) -> list[dict[str, Any]]:
    if hasattr(source, "log_history"):
        return list(source.log_history)
    if not isinstance(source, (str, Path)):
        return list(source)
    path = Path(source) / "trainer_state.json" if Path(source).is_dir() else Path(source)
    path = existing_path(path, expected="expected a trainer_state.json")
    from transformers import TrainerState

    try:  # an empty log is refused by the caller, as a log without the metric is
        return list(TrainerState.load_from_json(str(path)).log_history)  # the trainer's own reader
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"{path}: not a trainer_state.json with a log_history ({exc})") from None


def plot_training_curve(source: Any, path: PathLike, metric: str = STSB_DEV_METRIC) -> Path:
    """An evaluation metric over training steps, the best step marked. ``source`` is a ``TrainerState``, its
    ``log_history``, a ``trainer_state.json`` or a checkpoint folder holding one; ``metric`` a logged key (default:
    :func:`~st_infocse.evaluation.stsb_dev_evaluator`'s)."""
    points = [(entry["step"], entry[metric]) for entry in _log_history(source) if metric in entry and "step" in entry]
    if not points:
        raise ValueError(f"no {metric!r} entries in the training log")
    steps, values = zip(*points, strict=True)
    figure = _figure(6, 3.5)
    axes = figure.add_subplot()
    axes.plot(steps, values, marker="o", markersize=3)
    best = max(range(len(values)), key=values.__getitem__)
    axes.annotate(f"best {values[best]:.4f} @ {steps[best]}", (steps[best], values[best]),
                  textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    axes.set_xlabel("step")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    return _save(figure, path)


def _save(figure: Any, path: PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def save_report(results: Mapping[str, Any], out_dir: PathLike, name: str = "evaluation", plots: bool = True,
                settings: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Write ``<name>.json``, ``<name>.md`` and a plot per STS/BEIR result into ``out_dir``; returns kind
    (``"json"``, ``"markdown"``, ``"plot:<title>"``) -> path written.

    Args:
        plots: Draw bar charts (needs matplotlib; without it, none are drawn).
        settings: How the results were produced, written first in both files.
    """
    out_dir = Path(out_dir)
    written = {"json": write_json(results, out_dir / f"{name}.json", settings=settings),
               "markdown": out_dir / f"{name}.md"}
    written["markdown"].write_text(markdown_report(results, settings), encoding="utf-8")
    if not plots:
        return written
    try:
        require("matplotlib", "Plots")
    except ImportError:
        return written
    for title, value in results.items():
        slug = "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")
        plot = plot_sts if isinstance(value, STSResult) else plot_beir if isinstance(value, BEIRResult) else None
        if plot is not None:
            written[f"plot:{title}"] = plot([value], out_dir / f"{name}_{slug}.png")
    return written
