"""The documentation pages that are written from the code, so that they cannot drift from it.

Each page comes from one function of the package, named here once:

- the command-line reference: the ``--help`` of every ``st-infocse`` command, from :func:`cli_commands` and
  :func:`cli_help` (they call the command line's own entry point, so the page shows exactly what a user sees);
- the recipes table and each recipe's flags: from :func:`recipes`, the registry in ``st_infocse/recipes.py``;
- the numbers of the recipes measured by this package: read by :func:`measured` from the results file each recipe
  cites (``benchmarks/results/*.json``), since the package names the file but does not copy its numbers;
- the benchmark results: ``benchmarks/README.md`` itself, with its links pointed at the site's pages.

The API reference needs nothing here: Sphinx's autodoc reads the docstrings (``docs/reference/api/*.md``).

``conf.py`` calls :func:`write_generated_pages` before every build; they go to ``docs/_generated/`` (which git
ignores), and the pages of the site include them. ``python docs/generate.py`` writes them without building the site.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import statistics
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"
HELP_WIDTH = "88"  # argparse wraps --help at $COLUMNS; fixed, so the page does not depend on the terminal


# --------------------------------------------------------------------------------------------- the package


def cli_commands() -> Mapping[str, tuple[Callable, str]]:
    """Every ``st-infocse`` command with its one-line description, as ``st-infocse --help`` lists them."""
    from st_infocse.cli import COMMANDS

    return COMMANDS


def cli_help(command: str, *flags: str) -> str:
    """What ``st-infocse COMMAND [FLAGS] --help`` prints, produced by the command line's own entry point."""
    from st_infocse.cli import main

    out = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([command, *flags, "--help"])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    text = out.getvalue().rstrip()
    if not text:
        raise RuntimeError(f"st-infocse {command} --help printed nothing")
    return text


def recipes():
    """The recipe registry: name -> :class:`st_infocse.recipes.Recipe`, in the order ``st-infocse recipes`` lists."""
    from st_infocse.recipes import RECIPES

    return RECIPES


# ------------------------------------------------------------------------------------ measured numbers

# A measured recipe cites "benchmarks/results/FILE.json, [domain DOMAIN, ](row|setting) ROW".
_CITATION = re.compile(
    r"benchmarks/results/(?P<file>[\w.-]+\.json), (?:domain (?P<domain>\w+), )?(?:row|setting) (?P<row>[\w.-]+)"
)
# A recipe's metric -> its key in the results files.
_METRIC_KEYS = {
    "STS avg": "sts_avg",
    "STS-B dev": "stsb_dev",
    "Reuters article -> headline nDCG@10": "a2h_ndcg@10",
    "SciFact nDCG@10": "ndcg@10",
}


class Measured(NamedTuple):
    """A measured recipe's number as its results file holds it (x100)."""

    mean: float  # over the row's seeds, at the last step
    sd: float | None  # sample standard deviation over the seeds (None with one seed)
    seeds: tuple[int, ...]
    baseline: float  # what the benchmark compares the row with, scored the same way
    baseline_name: str
    # the adaptation benchmark's claim: the change on the half of the test queries no choice used, its 95% interval
    # over those queries and verdict, and the seeds whose models were scored query by query
    confirmation: Mapping | None = None
    confirmation_seeds: tuple[int, ...] = ()

    def __str__(self) -> str:
        spread = f" ± {self.sd:.2f}" if self.sd is not None else ""
        return f"{self.mean:.2f}{spread}, seeds {','.join(map(str, self.seeds))}"

    def confirmed(self) -> str:
        """The confirmation half's change, e.g. ``+8.56 (95% CI +7.61 to +9.48): a gain, seed 0``."""
        if self.confirmation is None:
            return ""
        change = self.confirmation
        seeds = ",".join(map(str, self.confirmation_seeds))
        verdict = change.get("verdict_holm", change["verdict"])  # the report's verdict: Holm over the rows judged
        return (f"{change['delta']:+.2f} (95% CI {change['low']:+.2f} to {change['high']:+.2f}): {verdict}, "
                f"{change['n']:,} queries, seed{'s' if len(self.confirmation_seeds) > 1 else ''} {seeds}")


def measured(published) -> Measured:
    """The number a measured recipe's :class:`~st_infocse.recipes.Published` cites, read from its results file."""
    match = _CITATION.fullmatch(published.where)
    if match is None:
        raise ValueError(f"not a results citation: {published.where!r}")
    data = json.loads((ROOT / "benchmarks" / "results" / match["file"]).read_text())
    key, row = _METRIC_KEYS[published.metric], match["row"]
    if match["file"] == "adaptation.json":
        domain = data["domains"][match["domain"]]
        jobs = domain["rows"][row]
        queries = data["queries"][match["domain"]]["rows"][row]
        extra = dict(baseline=domain["shipped"]["test"][key], baseline_name="the model as shipped",
                     confirmation=queries[key]["confirmation"], confirmation_seeds=tuple(queries["seeds"]))
        values = [job["test"][key] for job in jobs]
    else:  # aux_mechanism.json: settings compared with SimCSE in the same steps
        def jobs_of(setting: str) -> list[Mapping]:
            return sorted((job for job in data["jobs"].values() if job.get("setting") == setting),
                          key=lambda job: job["seed"])

        jobs = jobs_of(row)
        extra = dict(baseline=statistics.mean(job[key] for job in jobs_of("simcse")),
                     baseline_name="SimCSE in the same steps")
        values = [job[key] for job in jobs]
    if not values:
        raise ValueError(f"{published.where}: no such row")
    return Measured(mean=statistics.mean(values), sd=statistics.stdev(values) if len(values) > 1 else None,
                    seeds=tuple(job["seed"] for job in jobs), **extra)


def published_text(published) -> str:
    """A published number as the pages show it: a paper's as written, a measured one read from its results file."""
    if published.value is not None:
        return str(published)
    return f"{published.metric} {measured(published)} ({published.where})"


def measured_recipes_page() -> str:
    """The numbers of the recipes measured by this package, each read from the results file the recipe cites."""
    lines = [
        "| recipe | metric | measured (mean ± sd over seeds) | compared with | on the confirmation half of the test "
        "queries | results file |",
        "|---|---|---|---|---|---|",
    ]
    for recipe in recipes().values():
        for published in recipe.published:
            if published.value is not None:
                continue
            number = measured(published)
            lines.append(
                f"| [`{recipe.name}`](#recipe-{recipe.name}) | {published.metric} | {number} | "
                f"{number.baseline_name}: {number.baseline:.2f} | {_cell(number.confirmed() or '-')} | "
                f"`{published.where}` |"
            )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- pages


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def cli_reference_page() -> str:
    commands = cli_commands()
    lines = [
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{name}`](#st-infocse-{name}) | {_cell(description)} |" for name, (_, description) in commands.items()]
    lines += ["", "```text", cli_help_overview(), "```", ""]
    for name in commands:
        lines += [f"(st-infocse-{name})=", f"## `st-infocse {name}`", "", "```text", cli_help(name), "```", ""]
        if name == "train":
            lines += objective_flag_sections()
    return "\n".join(lines)


def objective_flag_sections() -> list[str]:
    """Each objective's own flags, as ``st-infocse train --objective NAME --help`` lists them between the run's
    sections and the trainer's (every objective takes those two alike)."""
    from st_infocse.cli.objective_flags import OBJECTIVES

    lines = ["Each objective takes its own flags besides those above; `st-infocse train --objective NAME --help` lists "
             "them, and a flag of another objective is refused by name.", ""]
    variants = [[name] for name in OBJECTIVES]
    variants.insert(OBJECTIVES.index("idc") + 1, ["idc", "--idc_loss", "infocse"])
    for variant in variants:
        text = cli_help("train", "--objective", *variant)
        start = text.index("\n\n", text.index("\nthe output folder:")) + 2
        own = text[start:text.index("\ntraining (every")].rstrip()
        title = " ".join(["--objective", *variant])
        lines += [f"### `{title}`", "", "```text", own, "```", ""]
    return lines


def cli_help_overview() -> str:
    """What ``st-infocse --help`` prints."""
    from st_infocse.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["--help"])
    return out.getvalue().rstrip()


def recipes_table() -> str:
    """The recipes as a Markdown table: source, every flag and the published numbers."""
    registry = recipes()
    lines = [
        "| recipe | source | settings | published (x100; Spearman for STS) |",
        "|---|---|---|---|",
    ]
    for recipe in registry.values():
        flags = recipe.flags
        settings = ", ".join(
            f"{flag.removeprefix('--')} {value}"
            for flag, value in flags.items()
            if flag not in ("--objective", "--output_dir")
        )
        published = "; ".join(published_text(number) for number in recipe.published)
        lines.append(
            f"| [`{recipe.name}`](#recipe-{recipe.name}) | {_cell(recipe.source)} | {_cell(settings)} | "
            f"{_cell(published)} |"
        )
    return "\n".join(lines)


def recipe_flags_tables() -> str:
    """Every recipe's flags, each with the script line or paper section its value comes from, and the notes."""
    lines: list[str] = []
    for recipe in recipes().values():
        lines += [
            "",
            f"(recipe-{recipe.name})=",
            f"### `{recipe.name}`",
            "",
            f"Objective `{recipe.objective}`; source: {recipe.source}. Published: "
            + "; ".join(published_text(number) for number in recipe.published)
            + "."
            + (f" Requires {' and '.join(f'`{flag}`' for flag in recipe.requires)}." if recipe.requires else ""),
            "",
            "| flag | value | where the value comes from |",
            "|---|---|---|",
        ]
        lines += [
            f"| `{flag}` | `{value}` | {_cell(recipe.origins[flag])} |" for flag, value in recipe.flags.items()
        ]
        if recipe.notes:
            lines += ["", "Notes:", ""] + [f"- {_cell(note)}" for note in recipe.notes]
    return "\n".join(lines)


# links of benchmarks/README.md (relative to benchmarks/) -> the same target from docs/benchmark-results.md
_BENCHMARK_LINKS = (
    (re.compile(r"\]\(\.\./docs/([^)#]+\.md(#[^)]*)?)\)"), r"](\1)"),
    (re.compile(r"\]\(\.\./README\.md(#references)?\)"), r"](index.md\1)"),
)


def benchmark_results_page() -> str:
    """``benchmarks/README.md`` as a page of the site: its links to the repository's Markdown files point at the
    site's pages, and links to files under ``benchmarks/results/`` become their repository paths."""
    text = (ROOT / "benchmarks" / "README.md").read_text()
    text = re.sub(r"\A# Benchmarks\n", "# Benchmark results\n", text)  # the site's summary page is "Benchmarks"
    for pattern, replacement in _BENCHMARK_LINKS:
        text = pattern.sub(replacement, text)
    text = re.sub(r"\[([^\]]+)\]\((results/[^)]+)\)", r"\1 (`benchmarks/\2`)", text)
    # its sections are ### under the # title; a page needs ## next
    levels = sorted({len(m.group(1)) for m in re.finditer(r"^(#{2,6}) ", text, flags=re.M)})
    if levels and levels[0] > 2:
        shift = levels[0] - 2
        text = re.sub(r"^(#{3,6}) ", lambda m: "#" * (len(m.group(1)) - shift) + " ", text, flags=re.M)
    return text


PAGES: dict[str, Callable[[], str]] = {
    "cli-reference.md": cli_reference_page,  # included by docs/reference/cli.md
    "recipes-table.md": recipes_table,  # included by docs/recipes.md
    "recipe-flags.md": recipe_flags_tables,  # included by docs/recipes.md
    "measured-recipes.md": measured_recipes_page,  # included by docs/recipes.md
    "benchmark-results.md": benchmark_results_page,  # included by docs/benchmark-results.md
}


def write_generated_pages(folder: Path = GENERATED) -> list[Path]:
    """Write every generated fragment into ``folder``; a page whose text is unchanged is left untouched."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        path = folder / name
        text = page().rstrip() + "\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_generated_pages():
        print(written_path.relative_to(ROOT))
