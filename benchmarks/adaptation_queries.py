"""The adaptation report's statistics over test queries: each query's score averaged over a row's seeds, the change
against the shipped model with its paired-bootstrap interval on the whole test and on two fixed halves (rows chosen
on the selection half, claims made on the confirmation half), and the table that shows them."""

from __future__ import annotations

import random
import statistics
from typing import Any

from benchmarks.adaptation_config import QUERY_METRICS
from benchmarks.harness import against_fixed
from st_infocse.evaluation import paired_change, queries_needed

# Rows are chosen on the selection half of each domain's test queries and claims are made on the confirmation half,
# which no choice has used: the sorted query ids shuffled by random.Random(SPLIT_SEED), the first half selecting.
SPLIT_SEED = 0


def split_queries(ids: list[str]) -> tuple[list[str], list[str]]:
    """(selection, confirmation): two halves of the query ids, fixed by ``SPLIT_SEED``."""
    order = sorted(ids)
    random.Random(SPLIT_SEED).shuffle(order)
    half = len(order) // 2
    return sorted(order[:half]), sorted(order[half:])


def seed_mean(group: list[dict[str, Any]], key: str) -> tuple[dict[str, float], list[int]] | None:
    """Each query's score averaged over the row's seeds that kept per-query scores, and those seeds."""
    runs = [d for d in group if key in d.get("test_per_query", {})]
    if not runs:
        return None
    ids = runs[0]["test_per_query"][key]
    return {q: statistics.mean(d["test_per_query"][key][q] for d in runs) for q in ids}, [d["seed"] for d in runs]


def query_statistics(name: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Every row with per-query scores against the shipped model: the change with its paired-bootstrap 95% interval
    and p over the queries (each query's score averaged over the row's seeds), on the whole test and on each half;
    the row chosen on the selection half and its confirmation."""
    shipped = data["shipped"]
    if not shipped or "test_per_query" not in shipped:
        return None
    headline = QUERY_METRICS[name][0]
    ids = sorted(shipped["test_per_query"][headline])
    selection, confirmation = split_queries(ids)
    halves = {"whole": ids, "selection": selection, "confirmation": confirmation}
    rows: dict[str, Any] = {}
    for row, group in data["rows"].items():
        out: dict[str, Any] = {}
        for key in QUERY_METRICS[name]:
            averaged = seed_mean(group, key)
            if averaged is None or key not in shipped["test_per_query"]:
                continue
            scores, seeds = averaged
            base = shipped["test_per_query"][key]
            out[key] = {part: paired_change({q: base[q] for q in chosen}, {q: scores[q] for q in chosen}).to_dict()
                        for part, chosen in halves.items()}
            out["seeds"] = seeds
            out["reproduced"] = [d.get("queries_reproduced") for d in group if "test_per_query" in d]
        if out:
            rows[row] = out
    if not rows:
        return None
    chosen = max(rows, key=lambda r: rows[r][headline]["selection"]["delta"])
    base = shipped["test_per_query"][headline]
    averaged = {r: seed_mean(data["rows"][r], headline)[0] for r in rows}
    differences = [statistics.pstdev([averaged[r][q] - base[q] for q in selection]) for r in rows]
    spread = statistics.median(differences)
    lexical = data["jobs"].get("references", {})  # issue 38: BM25 and the hybrid, reference lines, never chosen
    references = {ref: {part: paired_change({q: base[q] for q in chosen_ids},
                                            {q: scores[q] for q in chosen_ids}).to_dict()
                        for part, chosen_ids in halves.items()}
                  for ref, scores in lexical.get("test_per_query", {}).items()}
    return {"split_seed": SPLIT_SEED, "selection": selection, "confirmation": confirmation, "rows": rows,
            "references": references, "lexical": lexical.get("lexical"), "chosen_on_selection": chosen, "per_query_sd": round(spread, 2),
            "queries_for_1_point": queries_needed(1.0, spread),
            "half_width_on_confirmation": round(1.96 * spread / len(confirmation) ** 0.5, 2)}


def _change_cell(change: dict[str, Any]) -> str:
    p = "p < 0.001" if change["p"] < 0.001 else f"p = {change['p']:.3f}"
    return f"{change['delta']:+.2f} ({change['low']:+.2f} to {change['high']:+.2f}, {p})"


def query_table(name: str, stats: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """The rows' changes over queries, on the selection half (where rows are chosen) and the confirmation half
    (where claims are made), beside the seeds' spread on the whole test."""
    headline, other = QUERY_METRICS[name]
    n_sel, n_conf = len(stats["selection"]), len(stats["confirmation"])
    lines = [f"Over queries ({headline}; each query's score averaged over the row's seeds; Δ against the shipped model "
             "with its paired-bootstrap 95% interval over queries and p; selection and confirmation: two fixed halves "
             f"of the test queries, split seed {stats['split_seed']}):", "",
             f"| Row | seeds | whole test Δ over seeds (t-test) | selection Δ ({n_sel} queries) | confirmation Δ "
             f"({n_conf} queries) | confirmation verdict | {other}, confirmation Δ |", "|---|---|---|---|---|---|---|"]
    shipped = data["shipped"]["test"][headline]
    order = sorted(stats["rows"], key=lambda r: stats["rows"][r][headline]["selection"]["delta"], reverse=True)
    for row in order:
        entry = stats["rows"][row]
        group = [d for d in data["rows"][row] if "test" in d]
        seeds_cell = versus(values_of(group, headline), shipped) if group else "-"
        confirm = entry[headline]["confirmation"]
        second = _change_cell(entry[other]["confirmation"]) if other in entry else "-"
        mark = " (chosen)" if row == stats["chosen_on_selection"] else ""
        lines.append(f"| {row}{mark} | {','.join(map(str, entry['seeds']))} | {seeds_cell} | "
                     f"{_change_cell(entry[headline]['selection'])} | {_change_cell(confirm)} | {confirm['verdict']} | "
                     f"{second} |")
    for ref, parts in stats.get("references", {}).items():
        lines.append(f"| {ref} (reference: not trained) | - | {parts['whole']['delta']:+.2f} | "
                     f"{_change_cell(parts['selection'])} | {_change_cell(parts['confirmation'])} | "
                     f"{parts['confirmation']['verdict']} | - |")
    if stats.get("lexical"):
        lines += ["", f"{stats['lexical']}, the hybrid fusing BM25 with the shipped model."]
    lines += ["", f"Each query's change has a standard deviation of about {stats['per_query_sd']:.1f} points here "
              f"(median over the rows, selection half): {n_conf} queries resolve a change of about "
              f"±{stats['half_width_on_confirmation']:.1f} points, and a true change of +1.0 needs about "
              f"{stats['queries_for_1_point']:,} queries for its interval to exclude zero half of the time.", ""]
    return lines


def values_of(group: list[dict[str, Any]], key: str) -> list[float]:
    return [d["test"][key] for d in group if key in d.get("test", {})]


def versus(values: list[float], reference: float) -> str:
    """The mean change against the shipped model and, with several seeds, the one-sample t-test's p."""
    diff = statistics.mean(values) - reference
    tested = against_fixed(values, reference)
    return f"{diff:+.2f}" + ((" (p < 0.001)" if tested[1] < 0.001 else f" (p = {tested[1]:.3f})") if tested else "")
