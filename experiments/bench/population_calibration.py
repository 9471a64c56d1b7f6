"""Calibration of the population contrasts where the paper's data are (issue 53): S simulated
studies per scenario of the paper's size (15 chatbots, 6 of the late-2025 cohort vs 9 earlier,
30 days, 3 raters, recognition only), each analysed three ways on the same study:

- ``group``: the joint model refitted with the cohort grouping
  (:func:`delusion_bayes.models.population.population_contrasts`, the main job's column);
- ``two_stage``: the ordinary joint fit plus the pooled-SD Student-t second stage
  (:func:`~delusion_bayes.models.population.two_stage_contrasts`, the column before issue 53);
- ``permutation``: the exact rank-sum test on the consensus milestones and least-squares t50
  (the paper's test; ``baselines.analyse_trajectory`` without bootstrap).

Scenarios (``data.simulate._null_models``' ``group_shift``): ``exchangeable`` (t50 ~ N(16, 8)
in both cohorts), ``unequal`` (mean 14, SD 10 in the small cohort vs 3: some never turn or
turned before day 1), ``never`` (mean 24, SD 10 vs 3: the never-turners in the small cohort),
``shift`` (SD 8, the small cohort's t50 8 days earlier: a known shift in t50 and in every
milestone). Truth: :func:`delusion_bayes.sweep.truth.population_mean_truth`.

    .venv/bin/python experiments/bench/population_calibration.py --studies 30 --out cal.csv
    .venv/bin/python experiments/bench/population_calibration.py --summary cal.csv [more.csv ...]

``--main-job``: the grouped fit as the main job makes it (``stages.fit_plan.population_fits``:
the sampler's defaults, 4 chains x 1,000 draws on one core here, started at the refit target,
refitted by the gate's remedies, the package's gate verdict): its ``gate_clean`` column is the
issue's "gate-clean in >= 95% of the studies", ``attempts`` counts the fits it took.

One CSV row per study x method x quantity (appended as it goes; a rerun skips done studies).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

SCENARIOS = {
    "exchangeable": {"by": "cohort", "level": "late-2025"},
    "unequal": {"by": "cohort", "level": "late-2025", "t50_mean": 14.0, "t50_sd": 10.0,
                "t50_sd_rest": 3.0},
    "never": {"by": "cohort", "level": "late-2025", "t50_mean": 24.0, "t50_sd": 10.0,
              "t50_sd_rest": 3.0},
    "shift": {"by": "cohort", "level": "late-2025", "t50": -8.0},
}  # fmt: skip
CONTRAST = {
    "name": "cohort",
    "by": "cohort",
    "a": ["late-2025"],
    "b": ["earlier"],
    "alternative": "two-sided",
    "quantities": ["t50", "first_clinical"],
}
QUANTITIES = CONTRAST["quantities"]


def _group_target_accept() -> float:
    from delusion_bayes.inference.config import InferenceConfig

    return float(InferenceConfig().refit_target_accept)


GROUP_TA = _group_target_accept()


def study(scenario: str, seed: int):
    """One simulated study of ``scenario`` (module docstring), recognition only."""
    from delusion_bayes.data import simulate_study

    return simulate_study("null", seed, n_raters=3, n_days=30, group_shift=SCENARIOS[scenario])


def realised_difference(ds) -> float:
    """The difference of the simulated t50 means of this study's chatbots, A - B: how far the
    study's own draws put the cohorts apart (the estimand is the populations' difference).
    Every scenario draws from the same seeds (common random numbers), so a run of seeds whose
    draws lean one way moves every scenario's ``error`` alike: ``luck`` shows it."""
    a = np.isin(np.asarray(ds["cohort"]).astype(str), CONTRAST["a"])
    t50 = np.asarray(ds["true_t50"])
    return float(t50[a].mean() - t50[~a].mean())


def _gate(dt) -> tuple[int, float]:
    """Divergences and the largest R-hat of the hyper-parameters."""
    import arviz_stats as azs

    post = dt["posterior"].to_dataset()
    div = int(dt["sample_stats"]["diverging"].sum())
    names = [v for v in ("mu_t50", "sigma_t50", "mu_log_k", "sigma_log_k") if v in post]
    rhat = max(float(np.nanmax(azs.rhat(post[v]).values)) for v in names)
    return div, rhat


def _rows(method, table, truth, base, gate=(0, np.nan)):
    """Scored rows of a contrast table with ``ci_low``/``ci_high`` at 95% and 90%."""
    out = []
    for q in QUANTITIES:
        t95, t90 = (table[lvl].set_index("quantity").loc[q] for lvl in (0.95, 0.9))
        out.append(
            {**base, "method": method, "quantity": q, "truth": truth[q],
             "median": t95["median"], "lo95": t95["ci_low"], "hi95": t95["ci_high"],
             "lo90": t90["ci_low"], "hi90": t90["ci_high"], "p": np.nan,
             "divergences": gate[0], "rhat": gate[1]}
        )  # fmt: skip
    return out


def _main_job_fit(ds, fit_kw: dict, scale: str):
    """The grouped fit with the main job's refits and gate: ``(tree, (divergences, rhat),
    passed, attempts)`` (divergences and R-hat of the returned attempt)."""
    import json

    from delusion_bayes.inference.config import InferenceConfig
    from delusion_bayes.inference.refits import fit_with_refits
    from delusion_bayes.models.population import fit_population
    from delusion_bayes.stages.fit_plan import gated

    def one(**more):
        kw = {**fit_kw, "target_accept": GROUP_TA, **more}
        return fit_population(ds, "joint", CONTRAST, scale=scale, **kw)

    dt = gated(fit_with_refits(one, None), InferenceConfig())
    attempts = json.loads(dt.attrs.get("gate_attempts", "[]") or "[]")
    return dt, _gate(dt), bool(dt.attrs["gate_passed"]), max(len(attempts), 1)


METHODS = ("group", "two_stage", "permutation")
COLS_DONE = ["scenario", "seed", "method"]


def group_scales() -> str:
    """The grouped model's version as its rows record it: the scales it has per group
    (:data:`delusion_bayes.models.blocks.GROUP_SCALES`). Rows of another version are of
    another model; :func:`current` drops them and a run refits only their grouped fit."""
    from delusion_bayes.models.blocks import GROUP_SCALES

    return ",".join(sorted(GROUP_SCALES))


def current(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without grouped rows of another version of the grouped model (rows written
    before the ``group_scales`` column had log k's and the day noise's scales per group too)."""
    rec = df["group_scales"] if "group_scales" in df else pd.Series(np.nan, df.index)
    stale = (df["method"] == "group") & (rec.astype(object) != group_scales())  # NaN: stale
    return df[~stale]


def analyse(
    scenario: str,
    seed: int,
    fit_kw: dict,
    methods: Iterable[str] = METHODS,
    scale: str = "group",
    main_job: bool = False,
):
    """The rows of ``methods`` (:data:`METHODS`) on one study."""
    from delusion_bayes.models import fit
    from delusion_bayes.models.population import two_stage_contrasts
    from delusion_bayes.sweep.truth import population_mean_truth

    ds = study(scenario, seed)
    truth = {q: population_mean_truth(ds, CONTRAST, q) for q in QUANTITIES}
    base = {"scenario": scenario, "seed": seed}
    rows: list[dict] = []
    if "group" in methods:
        rows += _group_rows(ds, seed, fit_kw, truth, base, scale, main_job)
    if "two_stage" in methods:
        from delusion_bayes.models.derived import contrast_quantities, posterior_milestones

        t0 = time.perf_counter()
        dt0 = fit(ds, "joint", **fit_kw)
        q = contrast_quantities(dt0, posterior_milestones(dt0, stable_run=3))
        tabs = {p: two_stage_contrasts(q, [CONTRAST], p, seed=seed) for p in (0.95, 0.9)}
        b = {**base, "seconds": time.perf_counter() - t0}
        rows += _rows("two_stage", tabs, truth, b, _gate(dt0))
    if "permutation" in methods:
        rows += _permutation_rows(ds, truth, base)
    return rows


def _group_rows(ds, seed, fit_kw, truth, base, scale, main_job) -> list[dict]:
    """The grouped fit's rows, with the version of the grouped model (:func:`group_scales`)."""
    from delusion_bayes.models.population import fit_population, population_contrasts

    t0 = time.perf_counter()
    # the main job starts its grouped fits at inference.refit_target_accept (stages/fit_plan.py)
    if main_job:
        dt, gate, passed, attempts = _main_job_fit(ds, fit_kw, scale)
        more = {"gate_passed": passed, "attempts": attempts}
    else:
        dt = fit_population(
            ds, "joint", CONTRAST, scale=scale, **{**fit_kw, "target_accept": GROUP_TA}
        )
        gate, more = _gate(dt), {}
    tabs = {p: population_contrasts({"cohort": dt}, [CONTRAST], p, seed=seed) for p in (0.95, 0.9)}
    b = {**base, "seconds": time.perf_counter() - t0}
    more["group_scales"] = group_scales()
    return [{**r, **more} for r in _rows("group", tabs, truth, b, gate)]


def _permutation_rows(ds, truth, base) -> list[dict]:
    """The exact permutation test's p-value per quantity (the paper's test; no interval)."""
    from delusion_bayes.baselines import analyse_trajectory
    from delusion_bayes.baselines.config import BaselinesConfig

    cfg = BaselinesConfig(n_boot=0, alpha_boot=0, contrasts=[CONTRAST])
    res = analyse_trajectory(ds, cfg, seed=0)
    summ = res.contrasts.summary.set_index("quantity")
    return [
        {**base, "method": "permutation", "quantity": q, "truth": truth[q],
         "p": float(summ.loc[q, "pvalue"]) if q in summ.index else np.nan}
        for q in QUANTITIES
    ]  # fmt: skip


def _scored(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with their scores: ``error``, ``luck``, ``reject``, ``cover90/95`` and the two
    gate columns (:func:`summarise`)."""
    df = df.copy()
    if "realised" not in df or df["realised"].isna().any():  # rows written before the column
        pairs = df[["scenario", "seed"]].drop_duplicates().itertuples(index=False)
        real = {(sc, s): realised_difference(study(sc, int(s))) for sc, s in pairs}
        df["realised"] = [real[sc, s] for sc, s in zip(df["scenario"], df["seed"], strict=True)]
    df["error"] = df["median"] - df["truth"]
    df["luck"] = np.where(df["quantity"] == "t50", df["realised"] - df["truth"], np.nan)
    iv = df["method"] != "permutation"
    df["reject"] = np.where(iv, (df["lo95"] > 0) | (df["hi95"] < 0), df["p"] < 0.05)
    df["cover95"] = np.where(iv, (df["lo95"] <= df["truth"]) & (df["truth"] <= df["hi95"]), np.nan)
    df["cover90"] = np.where(iv, (df["lo90"] <= df["truth"]) & (df["truth"] <= df["hi90"]), np.nan)
    # two gate columns, never mixed: ``gate_clean`` is the package's verdict after the main
    # job's refits (--main-job rows only, ``S_gate`` of them); ``clean_short`` is the proxy of
    # one short fit without refits (0 divergences, R-hat < 1.01 of the hyper-parameters)
    main = df["gate_passed"].notna() if "gate_passed" in df else pd.Series(False, df.index)
    short = (df["divergences"] == 0) & (df["rhat"] < 1.01)
    df["clean_short"] = np.where(iv & ~main, short, np.nan)
    df["gate"] = np.where(main, df.get("gate_passed", np.nan), np.nan).astype(float)
    return df


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per scenario x method x quantity: S, rejection rate of 0 at 95% (type-I on a null truth,
    power on a shift) with its binomial SE, 90/95% coverage of the true difference, gate-clean
    (the main job's verdict, and a short fit's proxy), the mean ``error`` of the median and,
    for t50, the mean ``luck`` of the studies' own draws (:func:`realised_difference` minus the
    truth; the part of ``error`` no method can avoid)."""
    df = _scored(df)
    g = df.groupby(["scenario", "quantity", "method"], sort=False)
    out = g.agg(
        S=("reject", "size"),
        truth=("truth", "mean"),
        reject=("reject", "mean"),
        cover90=("cover90", "mean"),
        cover95=("cover95", "mean"),
        width95=("hi95", "mean"),
        gate_clean=("gate", "mean"),
        S_gate=("gate", "count"),
        clean_short=("clean_short", "mean"),
        error=("error", "mean"),
        luck=("luck", "mean"),
    )
    out["width95"] = g.apply(lambda x: float((x["hi95"] - x["lo95"]).mean()))
    out.insert(3, "reject_se", np.sqrt(out["reject"] * (1 - out["reject"]) / out["S"]))
    return out.round(3)


def _markdown_row(sc: str, q: str, m: pd.DataFrame) -> str:
    """One scenario x quantity of :func:`markdown` (``m``: its rows by method)."""

    def cell(method, col, fmt="{:.2f}"):
        return fmt.format(m.loc[method, col]) if method in m.index else "-"

    def rej(method):
        return f"{cell(method, 'reject')} ({cell(method, 'reject_se')})"

    n_gate = int(m.loc["group", "S_gate"]) if "group" in m.index else 0
    gate = f"{cell('group', 'gate_clean')} ({n_gate})" if n_gate else "-"
    truth = float(m["truth"].iloc[0])
    name = q if abs(truth) < 0.05 else f"{q} (true {truth:.1f})"
    return (
        f"| {sc} | {name} | {cell('group', 'S', '{:.0f}')} / {cell('two_stage', 'S', '{:.0f}')} | "
        f"{rej('group')} | {rej('two_stage')} | "
        f"{rej('permutation')} | {cell('group', 'cover90')} / {cell('group', 'cover95')} | "
        f"{cell('two_stage', 'cover90')} / {cell('two_stage', 'cover95')} | "
        f"{cell('group', 'width95', '{:.1f}')} / {cell('two_stage', 'width95', '{:.1f}')} | "
        f"{gate} | {cell('group', 'clean_short')} / {cell('two_stage', 'clean_short')} |"
    )


def markdown(summ: pd.DataFrame) -> str:
    """:func:`summarise`'s table as docs/validation.md prints it: one row per scenario x
    quantity, the grouped fit, the two-stage column and the permutation test side by side."""
    head = (
        "| scenario | quantity | S: grouped / two-stage | reject 0 at 95%: grouped (SE) | "
        "two-stage (SE) | "
        "permutation p < .05 (SE) | coverage 90 / 95%: grouped | two-stage | "
        "width 95%: grouped / two-stage | gate-clean, main job: grouped (studies) | "
        "one short fit clean: grouped / two-stage |"
    )
    lines = [head, "|" + "---|" * 11]
    for (sc, q), part in summ.groupby(level=["scenario", "quantity"], sort=False):
        lines.append(_markdown_row(sc, q, part.droplevel(["scenario", "quantity"])))
    return "\n".join(lines)


def pooled(df: pd.DataFrame) -> str:
    """Coverage pooled over the scenarios per method and quantity: a per-scenario rate at
    S ~ 100 has SE ~ 0.02, too coarse to tell 0.95 from 0.98. Its SE is clustered by seed
    (a ratio estimator over seeds): the scenarios draw from the same seeds (common random
    numbers), so their intervals are not independent and a plain binomial SE would be too
    small. ``error SD / interval SD``: the SD of ``(truth - median) / s`` with ``s`` the 90%
    half-width over 1.645 (a normal posterior's SD); 1 when the intervals are as wide as the
    errors need, below 1 when they are wider (conservative)."""
    df = _scored(df)
    lines = []
    for (q, method), g in df[df["method"] != "permutation"].groupby(["quantity", "method"]):
        per_seed = g.groupby("seed").agg(n=("cover95", "size"), c90=("cover90", "sum"),
                                         c95=("cover95", "sum"))  # fmt: skip
        k, n = len(per_seed), per_seed["n"].sum()
        cells = []
        for level in (90, 95):
            p = per_seed[f"c{level}"].sum() / n
            resid = per_seed[f"c{level}"] - p * per_seed["n"]
            se = np.sqrt(k / (k - 1) * (resid**2).sum()) / n if k > 1 else np.nan
            cells.append(f"{level}%: {p:.3f} (SE {se:.3f})")
        z = (g["truth"] - g["median"]) / ((g["hi90"] - g["lo90"]) / (2 * 1.645))
        cells.append(f"error SD / interval SD {z.std():.2f}")
        lines.append(
            f"pooled coverage, {q}, {method}, {n} intervals from {k} seeds: " + ", ".join(cells)
        )
    return "\n".join(lines)


def _append(out: Path, rows: list[dict]) -> None:
    """Add ``rows`` to the CSV ``out``, rewriting it whole: a later version's rows may carry a
    column the file's header lacks, which an appended line would misalign."""
    new = pd.DataFrame(rows)
    df = pd.concat([pd.read_csv(out), new], ignore_index=True) if out.exists() else new
    df.to_csv(out, index=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=100)
    ap.add_argument("--first", type=int, default=0, help="first seed")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--scale", default="group", choices=("group", "shared"))
    ap.add_argument("--no-two-stage", action="store_true")
    ap.add_argument("--main-job", action="store_true", help="main job's draws, refits and gate")
    ap.add_argument("--out", default="population_calibration.csv")
    ap.add_argument("--summary", nargs="+", help="print the table of these CSVs and stop")
    ap.add_argument("--markdown", action="store_true", help="print docs' table")
    a = ap.parse_args(argv)
    if a.summary:
        # several runs' files (e.g. one per process over disjoint seeds) make one table
        parts = pd.concat([pd.read_csv(f) for f in a.summary], ignore_index=True)
        parts = current(parts).drop_duplicates(["scenario", "seed", "method", "quantity"])
        summ = summarise(parts)
        print(markdown(summ) if a.markdown else summ.to_string())
        print(pooled(parts))
        return 0
    fit_kw = dict(
        sampler="nutpie", draws=a.draws, tune=a.tune, chains=2, cores=1, share_graph=True,
        progressbar=False, posterior_predictive=False, log_likelihood=False, log_prior=False,
    )  # fmt: skip
    if a.main_job:  # the sampler group's defaults (4 x 1,000 after 500), one core per worker
        fit_kw.update(draws=None, tune=None, chains=None)
    out = Path(a.out)
    want = [m for m in METHODS if not (a.no_two_stage and m == "two_stage")]
    # a study's methods already in the file (grouped rows of this model version) stay; read once
    done = current(pd.read_csv(out)) if out.exists() else pd.DataFrame(columns=COLS_DONE)
    seen = set(zip(done["scenario"], done["seed"], done["method"], strict=True))
    for s in range(a.first, a.first + a.studies):
        for sc in a.scenarios:  # interleaved: a stopped run has every scenario at similar S
            todo = [m for m in want if (sc, s, m) not in seen]
            if todo:
                _append(out, analyse(sc, s, fit_kw, todo, a.scale, a.main_job))
    rows = current(pd.read_csv(out))
    summ = summarise(rows)
    print(markdown(summ) if a.markdown else summ.to_string())
    print(pooled(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
