"""Calibration of the paired verdict: how often its interval covers the true change, how often it calls noise a gain
or a loss, and how often it finds a real change, at the query counts users have.

The populations are the committed per-query nDCG@10 changes of the adaptation benchmark: all-MiniLM-L6-v2 as shipped
against ``informin`` (three seeds averaged per query) on the Reuters pool (5,458 articles, a->h) and on SciFact's
300 test queries, A user with ``n`` queries is a draw of ``n`` queries (with replacement)
from a population. Two nulls: the same changes centred at zero (as skewed as the real ones: most queries a little
worse, a few much better), and the changes with random signs (exchangeable before and after: no change at all).
Three procedures judge every draw: the one ``st_infocse.evaluation.paired`` uses (a paired sign-flip randomization test
with its interval from inverting the test) and the percentile bootstrap with a p-value from the same resamples
shifted to zero (``percentile_bootstrap`` below, kept here for comparison), and for reference the BCa bootstrap
interval (``scipy.stats.bootstrap``, ``method="BCa"``; it gives no p-value).

STS-B dev, judged over pairs by the change of Spearman's correlation, is calibrated the same way on the 1,500 pairs
shipped with the package: the similarities of all-MiniLM-L6-v2 pooled three ways (its [CLS] token, as the demo
starts; the mean, as shipped; the max) from one encoding. A user with ``n`` pairs is a draw of ``n`` pairs; the null
is every pair twice, once with the two models' similarities swapped (no change at all); the real changes are CLS ->
mean and CLS -> max as measured, the truth the change of Spearman on all 1,500 pairs. The package's procedure
(randomization over which model each pair's similarity came from, interval by inversion) is judged beside the one
it used before (a percentile bootstrap of the pairs resampled jointly, p from the same resamples).

``--confirm_share``'s cost in power: the real changes of both domains drawn as a user's ``n`` queries, the keep rule
judging ``n * (1 - share)`` of them and the confirmation the other ``n * share``: how often each finds the gain,
beside the rule on all ``n``.

    python -m benchmarks.calibration            # JSON, markdown and PNG under benchmarks/results/
    python -m benchmarks.calibration --draws 40 --sizes 20 50 --stsb_draws 20   # a quick look
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import commit, minilm_path
from st_infocse.evaluation.paired import (
    CONFIDENCE,
    RESAMPLES,
    SPEARMAN_RESAMPLES,
    paired_mean_changes,
    paired_spearman_change,
)

REPO = Path(__file__).resolve().parent.parent
JOBS = REPO / "benchmarks" / "results" / "adaptation_jobs"
RESULTS = REPO / "benchmarks" / "results"
DOMAINS = {"reuters": "a2h_ndcg@10", "scifact": "ndcg@10"}
ROW = "informin"
SIZES = (20, 30, 50, 100, 150, 300)
METHODS = {"randomization": "sign-flip randomization, interval by inversion (the package's)",
           "percentile": "percentile bootstrap, p from the resamples shifted to zero (the package's before)",
           "bca": "BCa bootstrap interval, verdict from the interval (for reference: no p)"}
KINDS = {"centred": "the changes minus their mean: mean zero, as skewed as the real ones",
         "symmetric": "the changes and their negatives: what no change at all looks like to a paired test",
         "real": "the changes as measured"}
GOAL = {"coverage": (0.94, 0.96), "false_rate": 0.025}
STSB_METHODS = {"randomization": "swaps of the two models' ranks of each pair, interval by inversion (the package's)",
                "percentile": "percentile bootstrap of the pairs resampled jointly, p from the same resamples (before)"}
STSB_REAL = (("cls", "mean"), ("cls", "max"))  # (before, after) poolings of all-MiniLM-L6-v2
SHARES = (0.3, 0.5)


def population(domain: str, row: str) -> np.ndarray:
    """Each test query's change of nDCG@10 (x100) from the shipped model to ``row``, the row's seeds averaged."""
    metric = DOMAINS[domain]
    base = json.loads((JOBS / f"{domain}__shipped__queries.json").read_text())["test_per_query"][metric]
    ends = [json.loads(path.read_text())["test_per_query"][metric]
            for path in sorted(JOBS.glob(f"{domain}__{row}__s*__queries.json"))]
    if not ends:
        raise FileNotFoundError(f"no per-query scores of {row} on {domain} in {JOBS}")
    ids = sorted(base)
    return np.array([np.mean([end[q] for end in ends]) - base[q] for q in ids]), len(ends)  # stored x100


def percentile_bootstrap(draws: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, np.ndarray]:
    """The procedure the package used before: ``scipy.stats.bootstrap`` percentile interval over the queries, the
    p-value two-sided from the same resamples shifted to a change of zero, the verdict from the interval."""
    from scipy.stats import bootstrap

    result = bootstrap((draws,), np.mean, vectorized=True, n_resamples=resamples, confidence_level=CONFIDENCE,
                       method="percentile", axis=-1, batch=max(1, 4_000_000 // draws.size),
                       rng=np.random.default_rng(seed))
    delta = draws.mean(axis=1)
    spread = np.asarray(result.bootstrap_distribution) - delta[:, None]
    p = np.maximum(np.mean(np.abs(spread) >= np.abs(delta)[:, None], axis=1), 1.0 / resamples)
    p = np.where(delta == 0, 1.0, p)
    low, high = np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)
    flat = ~np.isfinite(low) | ~np.isfinite(high) | (np.ptp(draws, axis=1) == 0)  # every resample equal
    low, high = np.where(flat, delta, low), np.where(flat, delta, high)
    verdict = np.where(low > 0, 1, np.where(high < 0, -1, 0))
    return {"delta": delta, "low": low, "high": high, "p": p, "verdict": verdict}


def bca(draws: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, np.ndarray]:
    """The BCa interval of ``scipy.stats.bootstrap`` (skew- and bias-corrected), the verdict from the interval."""
    from scipy.stats import bootstrap

    delta = draws.mean(axis=1)
    with np.errstate(all="ignore"), warnings.catch_warnings():  # all-equal draws: a degenerate distribution
        warnings.simplefilter("ignore")
        result = bootstrap((draws,), np.mean, vectorized=True, n_resamples=resamples, confidence_level=CONFIDENCE,
                           method="BCa", axis=-1, batch=max(1, 4_000_000 // draws.size),
                           rng=np.random.default_rng(seed))
    low, high = np.asarray(result.confidence_interval.low), np.asarray(result.confidence_interval.high)
    flat = ~np.isfinite(low) | ~np.isfinite(high)
    low, high = np.where(flat, delta, low), np.where(flat, delta, high)
    verdict = np.where(low > 0, 1, np.where(high < 0, -1, 0))
    return {"delta": delta, "low": low, "high": high, "p": np.full(len(delta), np.nan), "verdict": verdict}


def randomization(draws: np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, np.ndarray]:
    """The package's procedure, each draw judged as ``paired_change`` judges a user's queries."""
    changes = paired_mean_changes(draws, resamples=resamples, seed=seed)
    out = {key: np.array([getattr(c, key) for c in changes], dtype=float) for key in ("delta", "low", "high", "p")}
    out["verdict"] = np.array([{"a gain": 1, "a loss": -1}.get(c.verdict, 0) for c in changes])
    return out


def stsb_similarities() -> dict[str, np.ndarray]:
    """Gold scores of the shipped STS-B dev pairs and all-MiniLM-L6-v2's cosine similarity of each pair, pooled by
    its [CLS] token, by the mean and by the max of its token embeddings (one encoding)."""
    from sentence_transformers import SentenceTransformer

    from st_infocse.data import demo_stsb_dev

    pairs = demo_stsb_dev()
    model = SentenceTransformer(minilm_path(), device="cpu")
    tokens = model.encode(pairs.sentences1 + pairs.sentences2, output_value="token_embeddings", batch_size=64)
    pooled = {"cls": [t[0] for t in tokens], "mean": [t.mean(0) for t in tokens],
              "max": [t.max(0).values for t in tokens]}
    out = {"gold": np.asarray(pairs.scores, dtype=float)}
    n = len(pairs.scores)
    for name, vectors in pooled.items():
        v = np.stack([x.float().numpy() for x in vectors])
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[name] = np.sum(v[:n] * v[n:], axis=1)
    return out


def _spearman_both(gold: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Spearman's correlation row by row, both arguments ranked per row (the bootstrap resamples gold too)."""
    from scipy.stats import rankdata

    g, v = (rankdata(x, axis=-1) for x in (gold, values))
    g, v = g - g.mean(axis=-1, keepdims=True), v - v.mean(axis=-1, keepdims=True)
    spread = np.sqrt(np.sum(g * g, axis=-1) * np.sum(v * v, axis=-1))
    return np.where(spread > 0, np.sum(g * v, axis=-1) / np.where(spread > 0, spread, 1), 0.0)


def stsb_percentile(gold: np.ndarray, before: np.ndarray, after: np.ndarray, resamples: int,
                    seed: int = 0) -> tuple[float, float, float, float]:
    """What the package did before: the pairs resampled jointly (``scipy.stats.bootstrap``, ``paired=True``), the
    percentile interval, p twice the share of resampled changes on the far side of zero."""
    from scipy.stats import bootstrap

    def statistic(g, b, a, axis=-1):
        return 100 * (_spearman_both(g, a) - _spearman_both(g, b))

    delta = float(statistic(gold, before, after))
    result = bootstrap((gold, before, after), statistic, paired=True, vectorized=True, n_resamples=resamples,
                       confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(seed))
    spread = np.asarray(result.bootstrap_distribution)
    p = min(1.0, (2 * min(np.sum(spread <= 0), np.sum(spread >= 0)) + 1) / (resamples + 1))
    return delta, float(result.confidence_interval.low), float(result.confidence_interval.high), p


def stsb_judge(method: str, picked: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
               resamples: int) -> dict[str, np.ndarray]:
    """Each draw of pairs judged by ``method``: the package's verdict, or the percentile bootstrap's read off its
    interval, as the package read it."""
    rows = []
    for gold, before, after in picked:
        if method == "randomization":
            c = paired_spearman_change(gold, before, after, resamples=resamples)
            rows.append((c.delta, c.low, c.high, c.p, {"a gain": 1, "a loss": -1}.get(c.verdict, 0)))
        else:
            delta, low, high, p = stsb_percentile(gold, before, after, resamples)
            rows.append((delta, low, high, p, 1 if low > 0 else -1 if high < 0 else 0))
    delta, low, high, p, verdict = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    return {"delta": delta, "low": low, "high": high, "p": p, "verdict": verdict.astype(int)}


def run_stsb(draws: int, sizes: tuple[int, ...], resamples: int, seed: int) -> list[dict[str, Any]]:
    """The STS-B dev cells: the swap null and each real change of :data:`STSB_REAL`, at each n of ``sizes``."""
    from scipy.stats import spearmanr

    sims = stsb_similarities()
    gold = sims["gold"]
    rng = np.random.default_rng(seed)
    first, second = STSB_REAL[0]
    pools = {"symmetric": (np.concatenate([gold, gold]), np.concatenate([sims[first], sims[second]]),
                           np.concatenate([sims[second], sims[first]]))}
    pools |= {f"{b} -> {a}": (gold, sims[b], sims[a]) for b, a in STSB_REAL}
    cases = []
    for kind, (g, b, a) in pools.items():
        truth = 100 * (spearmanr(g, a).statistic - spearmanr(g, b).statistic)
        for n in sizes:
            index = rng.integers(0, len(g), size=(draws, n))
            picked = [(g[i], b[i], a[i]) for i in index]
            case = {"kind": kind, "n": n, "target": round(float(truth), 4), "pairs": len(g), "methods": {}}
            for method in STSB_METHODS:
                start = time.perf_counter()
                result = measure(g, truth, stsb_judge(method, picked, resamples))
                case["methods"][method] = {k: (round(v, 4) if v is not None else None) for k, v in result.items()} | {
                    "seconds": round(time.perf_counter() - start, 2)}
            cases.append(case)
            print("stsb", kind, n, {m: (r["coverage"], r["gain"], r["loss"]) for m, r in case["methods"].items()},
                  flush=True)
    return cases


def run_shares(draws: int, sizes: tuple[int, ...], resamples: int, seed: int) -> list[dict[str, Any]]:
    """``--confirm_share``'s power: each domain's real change drawn as ``n`` queries, the rule on ``n - k`` of them
    and the confirmation on the other ``k = round(share * n)`` (a draw's queries are independent, so its first and
    last ones are a random split), beside the rule on all ``n``."""
    rng = np.random.default_rng(seed + 1)
    cases = []
    for domain in DOMAINS:
        values, _ = population(domain, ROW)
        for n in sizes:
            picked = values[rng.integers(0, len(values), size=(draws, n))]
            whole = randomization(picked, resamples)["verdict"]
            for share in SHARES:
                held = round(share * n)
                decide = randomization(picked[:, :n - held], resamples)["verdict"]
                confirm = randomization(picked[:, n - held:], resamples)["verdict"]
                case = {"domain": domain, "n": n, "share": share, "decided_on": n - held, "held_out": held,
                        "kept_on_all": float(np.mean(whole == 1)), "kept": float(np.mean(decide == 1)),
                        "confirmed": float(np.mean(confirm == 1)),
                        "kept_and_confirmed": float(np.mean((decide == 1) & (confirm == 1)))}
                cases.append(case)
                print("share", domain, n, share, case["kept_on_all"], case["kept"], case["confirmed"], flush=True)
    return cases


def measure(values: np.ndarray, truth: float, judged: dict[str, np.ndarray]) -> dict[str, float]:
    verdict, p = judged["verdict"], judged["p"]
    out = {"coverage": float(np.mean((judged["low"] <= truth) & (truth <= judged["high"]))),
           "gain": float(np.mean(verdict == 1)), "loss": float(np.mean(verdict == -1)),
           "disagree": (float(np.mean((p < 1 - CONFIDENCE) != (verdict != 0))) if np.all(np.isfinite(p))
                        else None),
           "median_width": float(np.median(judged["high"] - judged["low"]))}
    return out


def run(draws: int, sizes: tuple[int, ...], resamples: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    judges = {"randomization": randomization, "percentile": percentile_bootstrap, "bca": bca}
    cases = []
    for domain in DOMAINS:
        values, seeds = population(domain, ROW)
        truth = float(values.mean())
        pools = {"centred": (values - truth, 0.0), "symmetric": (np.concatenate([values, -values]), 0.0),
                 "real": (values, truth)}
        for kind, (pool, target) in pools.items():
            for n in sizes:
                picked = pool[rng.integers(0, len(pool), size=(draws, n))]
                case = {"domain": domain, "row": ROW, "seeds": seeds, "kind": kind, "n": n, "target": target,
                        "population": {"queries": len(pool), "mean": round(float(pool.mean()), 4),
                                       "sd": round(float(pool.std()), 3),
                                       "unchanged": round(float(np.mean(pool == 0)), 3)},
                        "methods": {}}
                for method, judge in judges.items():
                    start = time.perf_counter()
                    result = measure(pool, target, judge(picked, resamples))
                    case["methods"][method] = {k: (round(v, 4) if v is not None else None)
                                               for k, v in result.items()} | {
                        "seconds": round(time.perf_counter() - start, 2)}
                cases.append(case)
                print(domain, kind, n, {m: (r["coverage"], r["gain"], r["loss"], r["disagree"])
                                        for m, r in case["methods"].items()}, flush=True)
    return {"cases": cases}


def smallest_n(cases: list[dict[str, Any]], domain: str, method: str, null: str, draws: int,
               slack: float = 0.0, reals: tuple[str, ...] = ("real",)) -> int | None:
    """The smallest n from which, at every larger n measured too, the ``null``'s coverage and the real changes'
    (the cases of kinds ``reals``) are within the goal and each false rate on the ``null`` at most the goal's, each
    widened by ``slack`` standard errors of a rate over ``draws`` draws; None when the largest n misses it."""
    low, high = GOAL["coverage"]
    cover_slack = slack * (0.95 * 0.05 / draws) ** 0.5
    low, high = low - cover_slack, high + cover_slack
    false_rate = GOAL["false_rate"] + slack * (0.025 * 0.975 / draws) ** 0.5
    ok: dict[int, bool] = {}
    for case in cases:
        if case["domain"] != domain or case["kind"] not in (null, *reals):
            continue
        m = case["methods"][method]
        good = low <= m["coverage"] <= high
        if case["kind"] == null:
            good = good and m["gain"] <= false_rate and m["loss"] <= false_rate
        ok[case["n"]] = ok.get(case["n"], True) and good
    passing = None
    for n in sorted(ok, reverse=True):
        if not ok[n]:
            break
        passing = n
    return passing


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Calibration of the paired verdict", "",
             f"Command: `{result['command']}` at commit {result['commit']}; {result['draws']} draws of n queries "
             f"(with replacement) per cell, {result['resamples']:,} resamples per judgement, draw seed "
             f"{result['seed']}; {result['seconds']:.0f} s on one core.", "",
             f"Populations: each test query's nDCG@10 change (x100) from all-MiniLM-L6-v2 as shipped to `{ROW}` "
             "(its seeds averaged per query), from `benchmarks/results/adaptation_jobs/*__queries.json`; "
             + "; ".join(f"*{k}*: {v}" for k, v in KINDS.items()) + ". On both nulls every verdict other than "
             "\"within noise\" is false. Methods: " + "; ".join(f"**{k}**: {v}" for k, v in METHODS.items()) + ".",
             "",
             f"Goal: coverage {_pct(GOAL['coverage'][0])}-{_pct(GOAL['coverage'][1])} and each false rate at most "
             f"{_pct(GOAL['false_rate'])}. With {result['draws']} draws a rate's standard error is about "
             f"{100 * (0.05 * 0.95 / result['draws']) ** 0.5:.1f} points at 95% and "
             f"{100 * (0.025 * 0.975 / result['draws']) ** 0.5:.1f} at 2.5%.", ""]
    for domain in DOMAINS:
        cases = [c for c in result["cases"] if c["domain"] == domain]
        real_pop = next(c["population"] for c in cases if c["kind"] == "real")
        direction = "gain" if real_pop["mean"] > 0 else "loss"
        lines += [f"## {domain} ({real_pop['queries']:,} queries; real mean change {real_pop['mean']:+.2f}, "
                  f"sd {real_pop['sd']:.1f}, {_pct(real_pop['unchanged'])} unchanged)", "",
                  "| n | method | centred null: coverage | false gain | false loss | symmetric null: false gain | "
                  "false loss | real: coverage | \"a " + direction + "\" | verdict and p disagree (any case) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for n in sorted({c["n"] for c in cases}):
            by_kind = {c["kind"]: c["methods"] for c in cases if c["n"] == n}
            for method in METHODS:
                cen, sym, real = (by_kind[k][method] for k in ("centred", "symmetric", "real"))
                disagree = [by_kind[k][method]["disagree"] for k in by_kind]
                worst = None if None in disagree else max(disagree)
                lines.append(f"| {n} | {method} | {_pct(cen['coverage'])} | {_pct(cen['gain'])} | "
                             f"{_pct(cen['loss'])} | {_pct(sym['gain'])} | {_pct(sym['loss'])} | "
                             f"{_pct(real['coverage'])} | {_pct(real[direction])} | {_pct(worst)} |")
        lines.append("")
    se95, se25 = ((rate * (1 - rate) / result["draws"]) ** 0.5 for rate in (0.05, 0.025))
    lines += ["## Smallest n that meets the goal", "",
              "From this n on, at every n measured, the null's coverage and the real change's are within the goal "
              "and both false rates on the null at most the goal's: as stated / within two standard errors of "
              f"{result['draws']} draws of it (coverage {_pct(GOAL['coverage'][0] - 2 * se95)} to "
              f"{_pct(GOAL['coverage'][1] + 2 * se95)}, false rates at most {_pct(GOAL['false_rate'] + 2 * se25)}).",
              "",
              "| domain | null | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for domain in DOMAINS:
        for null in ("centred", "symmetric"):
            cells = [" / ".join(str(n or "none") for n in result["smallest_n"][domain][null][m]) for m in METHODS]
            lines.append(f"| {domain} | {null} | " + " | ".join(cells) + " |")
    if result.get("stsb"):
        lines += ["", *stsb_markdown(result)]
    if result.get("shares"):
        lines += ["", *shares_markdown(result)]
    return "\n".join(lines) + "\n"


def stsb_markdown(result: dict[str, Any]) -> list[str]:
    cases, draws = result["stsb"], result["stsb_draws"]
    reals = [kind for kind in dict.fromkeys(c["kind"] for c in cases) if kind != "symmetric"]
    targets = {c["kind"]: c["target"] for c in cases}
    se25 = (0.025 * 0.975 / draws) ** 0.5
    pairs = next(c["pairs"] for c in cases if c["kind"] != "symmetric")
    lines = [f"## STS-B dev over pairs ({pairs:,} pairs; all-MiniLM-L6-v2 "
             + ", ".join(f"{kind} {targets[kind]:+.2f}" for kind in reals) + ")", "",
             f"{draws} draws of n pairs per cell, {result['stsb_resamples']:,} resamples per judgement. The change of "
             "Spearman's correlation x100 between two poolings of all-MiniLM-L6-v2 ([CLS] token, mean, max of the "
             "token embeddings) on the STS-B dev pairs shipped with the package. *symmetric*: every pair twice, the "
             "two models' similarities swapped in one copy (no change at all); the real changes: their change on all "
             f"the pairs. A rate's standard error is about {100 * se25:.1f} points at 2.5%. Methods: "
             + "; ".join(f"**{k}**: {v}" for k, v in STSB_METHODS.items()) + ".", "",
             "| n | method | no change: coverage | false gain | false loss | "
             + " | ".join(f"{kind}: coverage | \"a gain\"" for kind in reals) + " | verdict and p disagree (any case) |",
             "|---|---|---|---|---|" + "---|---|" * len(reals) + "---|"]
    for n in sorted({c["n"] for c in cases}):
        by_kind = {c["kind"]: c["methods"] for c in cases if c["n"] == n}
        for method in STSB_METHODS:
            null = by_kind["symmetric"][method]
            cells = [f"{_pct(by_kind[k][method]['coverage'])} | {_pct(by_kind[k][method]['gain'])}" for k in reals]
            worst = max(by_kind[k][method]["disagree"] for k in by_kind)
            lines.append(f"| {n} | {method} | {_pct(null['coverage'])} | {_pct(null['gain'])} | {_pct(null['loss'])} | "
                         + " | ".join(cells) + f" | {_pct(worst)} |")
    smallest = result["stsb_smallest_n"]
    lines += ["", "Smallest n that meets the goal (as stated / within two standard errors), no-change null and the real "
              "changes' coverage: " + "; ".join(f"{m}: " + " / ".join(str(n or "none") for n in smallest[m])
                                                 for m in STSB_METHODS) + "."]
    return lines


def shares_markdown(result: dict[str, Any]) -> list[str]:
    lines = ["## `--confirm_share`: the power it costs", "",
             f"How often the rule finds each domain's real change (\"a gain\", p < 0.05; {result['draws']} draws per "
             "cell): on all n queries (no share: it decides and reports on the same queries), on the n - k it decides "
             "on, and on the k = share x n held out (the confirmation printed), and both.", "",
             "| domain | real change | n | share | rule on all n | rule on n - k | confirmation on k | both |",
             "|---|---|---|---|---|---|---|---|"]
    means = {c["domain"]: c["population"]["mean"] for c in result["cases"] if c["kind"] == "real"}
    for c in result["shares"]:
        lines.append(f"| {c['domain']} | {means.get(c['domain'], float('nan')):+.2f} | {c['n']} | {c['share']:g} | "
                     f"{_pct(c['kept_on_all'])} | {_pct(c['kept'])} ({c['decided_on']}) | {_pct(c['confirmed'])} "
                     f"({c['held_out']}) | {_pct(c['kept_and_confirmed'])} |")
    return lines


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, len(DOMAINS), figsize=(11, 7), sharex=True)
    styles = {"randomization": "-o", "percentile": "--s", "bca": ":^"}
    for col, domain in enumerate(DOMAINS):
        null = [c for c in result["cases"] if c["domain"] == domain and c["kind"] == "centred"]
        sizes = [c["n"] for c in null]
        top, bottom = axes[0][col], axes[1][col]
        top.axhspan(100 * GOAL["coverage"][0], 100 * GOAL["coverage"][1], color="0.9")
        bottom.axhline(100 * GOAL["false_rate"], color="0.6", lw=1)
        for method, style in styles.items():
            top.plot(sizes, [100 * c["methods"][method]["coverage"] for c in null], style, label=method)
            bottom.plot(sizes, [100 * c["methods"][method]["gain"] for c in null], style, color="tab:green",
                        label=f"{method}: false gain")
            bottom.plot(sizes, [100 * c["methods"][method]["loss"] for c in null], style, color="tab:red",
                        label=f"{method}: false loss")
        top.set_title(f"{domain}: {ROW}'s changes centred at 0")
        top.set_ylabel("interval covers 0 (%)")
        bottom.set_ylabel("false verdicts (%)")
        bottom.set_xlabel("queries")
        bottom.set_xscale("log")
        bottom.set_xticks(sizes, [str(s) for s in sizes])
        bottom.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        top.legend(fontsize=8)
        bottom.legend(fontsize=6, ncol=2)
    fig.suptitle(f"Calibration of the paired verdict ({result['draws']} draws per point; shaded, line: goal)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stsb_draws", type=int, default=200, help="draws per STS-B cell (0: no STS-B block)")
    parser.add_argument("--stsb_resamples", type=int, default=SPEARMAN_RESAMPLES)
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for calibration.{json,md,png}")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = {"command": "python -m benchmarks.calibration " + shlex.join(sys.argv[1:] if argv is None else argv),
              "commit": commit(), "draws": args.draws, "sizes": args.sizes, "resamples": args.resamples,
              "seed": args.seed, "methods": METHODS, "goal": GOAL}
    result |= run(args.draws, tuple(args.sizes), args.resamples, args.seed)
    result["shares"] = run_shares(args.draws, tuple(args.sizes), args.resamples, args.seed)
    result |= {"stsb_draws": args.stsb_draws, "stsb_resamples": args.stsb_resamples, "stsb_methods": STSB_METHODS}
    if args.stsb_draws:
        stsb = run_stsb(args.stsb_draws, tuple(args.sizes), args.stsb_resamples, args.seed)
        result["stsb"] = stsb
        reals = tuple(c["kind"] for c in stsb if c["kind"] != "symmetric")
        result["stsb_smallest_n"] = {m: [smallest_n([c | {"domain": "stsb"} for c in stsb], "stsb", m, "symmetric",
                                                    args.stsb_draws, slack, reals) for slack in (0.0, 2.0)]
                                     for m in STSB_METHODS}
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["smallest_n"] = {d: {null: {m: [smallest_n(result["cases"], d, m, null, args.draws, slack)
                                           for slack in (0.0, 2.0)] for m in METHODS}
                                for null in ("centred", "symmetric")} for d in DOMAINS}
    result["command"] = result["command"].strip()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "calibration.md").write_text(markdown(result))
    plot(result, args.out / "calibration.png")
    print(markdown(result))


if __name__ == "__main__":
    main()
