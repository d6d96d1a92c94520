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

    python -m benchmarks.calibration            # JSON, markdown and PNG under benchmarks/results/
    python -m benchmarks.calibration --draws 40 --sizes 20 50   # a quick look
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

from benchmarks.harness import commit
from st_infocse.evaluation.paired import CONFIDENCE, RESAMPLES, paired_mean_changes

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
               slack: float = 0.0) -> int | None:
    """The smallest n from which, at every larger n measured too, the ``null``'s coverage and the real change's are
    within the goal and each false rate on the ``null`` at most the goal's, each widened by ``slack`` standard errors
    of a rate over ``draws`` draws; None when the largest n misses it."""
    low, high = GOAL["coverage"]
    cover_slack = slack * (0.95 * 0.05 / draws) ** 0.5
    low, high = low - cover_slack, high + cover_slack
    false_rate = GOAL["false_rate"] + slack * (0.025 * 0.975 / draws) ** 0.5
    ok: dict[int, bool] = {}
    for case in cases:
        if case["domain"] != domain or case["kind"] not in (null, "real"):
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
    return "\n".join(lines) + "\n"


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
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for calibration.{json,md,png}")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = {"command": "python -m benchmarks.calibration " + shlex.join(sys.argv[1:] if argv is None else argv),
              "commit": commit(), "draws": args.draws, "sizes": args.sizes, "resamples": args.resamples,
              "seed": args.seed, "methods": METHODS, "goal": GOAL}
    result |= run(args.draws, tuple(args.sizes), args.resamples, args.seed)
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
