"""The adaptation report's statistics over test queries: each query's score averaged over a row's seeds, the change
against the shipped model with the package's paired test (sign-flip randomization, its interval the test inverted)
on the whole test and on two fixed halves (rows chosen on the selection half, claims made on the confirmation half),
Holm's adjustment over the rows judged together on the confirmation half, and the table that shows them."""

from __future__ import annotations

import random
import statistics
from typing import Any

from benchmarks.adaptation_config import QUERY_METRICS
from benchmarks.harness import against_fixed
from st_infocse.evaluation import paired_change, queries_needed
from st_infocse.evaluation.paired import PairedChange, holm

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


def adjust_confirmation(rows: dict[str, Any], keys: tuple[str, ...]) -> int:
    """Holm's adjustment over the rows judged on the confirmation half, each metric its own family: every row's
    confirmation change gains ``p_holm`` and ``verdict_holm`` (the verdict read off the adjusted p). Reading each
    row's own p at 5% would expect one false verdict in twenty rows; the adjusted p holds 5% for the table as a
    whole. Returns how many rows the headline metric's family holds."""
    family = 0
    for key in keys:
        judged = [row for row, entry in rows.items() if key in entry]
        adjusted = holm([rows[row][key]["confirmation"]["p"] for row in judged])
        for row, p in zip(judged, adjusted, strict=True):
            change = rows[row][key]["confirmation"]
            change["p_holm"] = p
            fields = {k: change[k] for k in ("delta", "low", "high", "n", "unit")}
            change["verdict_holm"] = PairedChange(p=p, **fields).verdict  # the package's rule, on the adjusted p
        family = family or len(judged)
    return family


def query_statistics(name: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Every row with per-query scores against the shipped model: the change with its 95% interval and p over the
    queries (each query's score averaged over the row's seeds), on the whole test and on each half, the confirmation
    half's p adjusted over the rows (Holm); the row chosen on the selection half, whose confirmation is the claim."""
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
    family = adjust_confirmation(rows, QUERY_METRICS[name])
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
            "references": references, "lexical": lexical.get("lexical"), "chosen_on_selection": chosen,
            "multiple_rows": {"rule": "holm", "family": family, "half": "confirmation"},
            "per_query_sd": round(spread, 2),
            "queries_for_1_point": queries_needed(1.0, spread),
            "half_width_on_confirmation": round(1.96 * spread / len(confirmation) ** 0.5, 2)}


def _p(value: float) -> str:
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _change_cell(change: dict[str, Any]) -> str:
    return f"{change['delta']:+.2f} ({change['low']:+.2f} to {change['high']:+.2f}, {_p(change['p'])})"


def _holm_cell(change: dict[str, Any]) -> str:
    return f"{_change_cell(change)[:-1]}; Holm {_p(change['p_holm'])})" if "p_holm" in change else _change_cell(change)


def query_table(name: str, stats: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """The rows' changes over queries, on the selection half (where rows are chosen) and the confirmation half
    (where they are judged, every row's p adjusted over the rows judged there), beside the seeds' spread on the
    whole test; the row chosen on the selection half is marked as the claim."""
    headline, other = QUERY_METRICS[name]
    n_sel, n_conf = len(stats["selection"]), len(stats["confirmation"])
    family = stats.get("multiple_rows", {}).get("family", len(stats["rows"]))
    lines = [f"Over queries ({headline}; each query's score averaged over the row's seeds; Δ against the shipped model "
             "with its 95% interval over queries and p from the paired sign-flip randomization test, the interval "
             "the test inverted; selection and confirmation: two fixed halves of the test queries, split seed "
             f"{stats['split_seed']}). **Many rows**: the {family} trained rows are judged together on the "
             "confirmation half, so each row's p is adjusted for them by Holm's step-down rule (per domain, each "
             "metric its own family) and the verdict is read off the adjusted p at 5%, which keeps the chance of any "
             "false verdict in the table at 5%; the interval stays the row's own (it excludes zero exactly when the raw p is below "
             "0.05), so a row whose interval excludes zero can be within noise once adjusted. The reference lines "
             "are not in the family (their verdict is their own p's).", "",
             f"| Row | seeds | whole test Δ over seeds (t-test) | selection Δ ({n_sel} queries) | confirmation Δ "
             f"({n_conf} queries) | Holm p ({family} rows) | confirmation verdict (Holm) | {other}, confirmation Δ |",
             "|---|---|---|---|---|---|---|---|"]
    shipped = data["shipped"]["test"][headline]
    order = sorted(stats["rows"], key=lambda r: stats["rows"][r][headline]["selection"]["delta"], reverse=True)
    for row in order:
        entry = stats["rows"][row]
        group = [d for d in data["rows"][row] if "test" in d]
        seeds_cell = versus(values_of(group, headline), shipped) if group else "-"
        confirm = entry[headline]["confirmation"]
        second = _holm_cell(entry[other]["confirmation"]) if other in entry else "-"
        mark = " (chosen on the selection half: the claim)" if row == stats["chosen_on_selection"] else ""
        lines.append(f"| {row}{mark} | {','.join(map(str, entry['seeds']))} | {seeds_cell} | "
                     f"{_change_cell(entry[headline]['selection'])} | {_change_cell(confirm)} | "
                     f"{_p(confirm['p_holm'])} | {confirm['verdict_holm']} | {second} |")
    for ref, parts in stats.get("references", {}).items():
        lines.append(f"| {ref} (reference: not trained) | - | {parts['whole']['delta']:+.2f} | "
                     f"{_change_cell(parts['selection'])} | {_change_cell(parts['confirmation'])} | - | "
                     f"{parts['confirmation']['verdict']} | - |")
    claim = stats["rows"][stats["chosen_on_selection"]][headline]["confirmation"]
    lines += ["", f"The claim is {stats['chosen_on_selection']}, the row chosen on the selection half: "
              f"{claim['verdict_holm']} with the table's rule"
              + ("." if claim["verdict"] == claim["verdict_holm"] else
                 f"; taken alone, as the one row chosen before its confirmation was read, its own p gives "
                 f"{claim['verdict']}.")]
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
