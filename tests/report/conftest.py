"""A fake run directory, laid out as the stages write it (team contract), for the report tests.

The numbers in the fake stage CSVs are arbitrary but distinct (e.g. t50 = 3.25 + model index), so
a test can check that a value reaches the supplement unchanged from its one source.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from delusion_bayes.data import save_study, simulate_study
from delusion_bayes.data.schema import DAY, INTERVENTION_TYPES, MODEL

CONFIG_YAML = """\
data:
  kind: trajectory
  source: simulate
  preset: small
  seed: 0
baselines:
  n_boot: 50
  seed: 3
  censor_day: null
model:
  name: joint
sampler:
  chains: 2
  seed: 11
inference:
  rhat_max: 1.01
  ess_min_per_chain: 100.0
  max_divergences: 0
seed: 7
stages: [baselines, text, models, report]
"""


def _index(folder: Path, files: dict[str, str], headline: dict) -> None:
    (folder / "index.json").write_text(json.dumps({"files": files, "headline": headline}))


def make_run(
    root: Path,
    stages: tuple[str, ...] = ("baselines", "text", "models"),
    failed_fit: bool = False,
) -> Path:
    """Write a run directory under ``root`` with the given stages' outputs."""
    root.mkdir(parents=True, exist_ok=True)
    ds = simulate_study("small", seed=0)
    save_study(ds, root / "study.nc")
    (root / ".hydra").mkdir(exist_ok=True)
    (root / ".hydra" / "config.yaml").write_text(CONFIG_YAML)
    (root / ".hydra" / "overrides.yaml").write_text("- data=small\n- seed=7\n")
    models = [str(m) for m in ds[MODEL].values]
    n_days = ds.sizes[DAY]
    censor = n_days + 1
    nm = len(models)
    i = np.arange(nm)

    if "baselines" in stages:
        b = root / "baselines"
        b.mkdir()
        cons = ds["recognition"].median("rater").rename("consensus")
        cons.to_dataset().to_netcdf(b / "consensus.nc")
        t1 = pd.DataFrame(
            {
                "model": models,
                "first_clinical": [3, 7, censor, 21, 5][:nm],
                "first_stable": [5, 10, censor, censor, 9][:nm],
                "first_level_b": [3, censor, censor, 22, censor][:nm],
                "days_stage4": [8, 3, 0, 0, 2][:nm],
                "days_level_a": [10, 5, 1, 3, 4][:nm],
                "days_level_b": [9, 0, 0, 2, 1][:nm],
            }
        )
        t1.to_csv(b / "table1_milestones.csv", index=False)
        t2 = pd.DataFrame({"model": models, "n_days": [8, 3, 0, 0, 2][:nm]})
        for j, t in enumerate(INTERVENTION_TYPES):
            t2[t] = 1.0 + (i * 0.13 + j * 0.31) % 2
        t2.to_csv(b / "table2_interventions.csv", index=False)
        pd.DataFrame(
            {
                "variable": ["recognition", "confidence", "emotional_support"],
                "alpha": [0.761, 0.412, 0.35],
                "alpha_ci_low": [0.70, 0.35, 0.28],
                "alpha_ci_high": [0.81, 0.47, 0.41],
                "kappa_q_mean": [0.70, 0.40, 0.33],
                "kappa_q_min": [0.61, 0.31, 0.20],
                "kappa_q_max": [0.79, 0.52, 0.45],
                "pct_agreement": [61.5, 40.2, 38.0],
                "icc2_1": [0.82, 0.41, 0.30],
                "icc2_k": [0.948, 0.61, 0.52],
                "n_units": [60, 60, 60],
                "n_raters": [3, 3, 3],
            }
        ).to_csv(b / "tableC1_reliability.csv", index=False)
        d1 = pd.DataFrame(
            {
                "model": models,
                "L": 3.5 + 0.1 * i,
                "L_ci_low": 3.2 + 0.1 * i,
                "L_ci_high": 3.9 + 0.1 * i,
                "k": 0.8 + 0.05 * i,
                "k_ci_low": 0.4 + 0.05 * i,
                "k_ci_high": 1.9 + 0.05 * i,
                "t50": 3.25 + i,
                "t50_ci_low": 2.5 + i,
                "t50_ci_high": 4.75 + i,
                "r2": 0.9 - 0.1 * i,
                "status": ["ok"] * (nm - 1) + ["flat"],
            }
        )
        d1.to_csv(b / "tableD1_logistic.csv", index=False)
        pd.DataFrame(
            {
                "contrast": ["new_vs_old", "new_vs_old"],
                "quantity": ["first_clinical", "t50"],
                "alternative": ["less", "less"],
                "n_a": [2, 2],
                "n_b": [3, 3],
                "statistic": [3.0, 4.0],
                "pvalue": [0.1, 0.3],
            }
        ).to_csv(b / "contrasts.csv", index=False)
        rows = []
        for s in (1, 2, 3, 4):
            for j, t in enumerate(INTERVENTION_TYPES):
                rows.append(
                    {
                        "stage": s,
                        "intervention_type": t,
                        "mean": 1 + (s * (j + 1)) % 3 * 0.9,
                        "n": 10,
                    }
                )
        pd.DataFrame(rows).to_csv(b / "figure2_intensity_by_stage.csv", index=False)
        pd.DataFrame(
            [
                {
                    "model": mo,
                    "intervention_type": t,
                    "rho": round(-0.9 + 0.4 * j, 2),
                    "pvalue": 0.001 * (j + 1),
                    "n": n_days,
                }
                for mo in models[2:4]
                for j, t in enumerate(INTERVENTION_TYPES)
            ]
        ).to_csv(b / "sectionF_naive_profiles.csv", index=False)
        _index(
            b,
            {
                "table1_milestones.csv": "milestone latencies and day counts per model",
                "table2_interventions.csv": "intervention profiles on stage-4 days",
                "tableC1_reliability.csv": "reliability",
                "tableD1_logistic.csv": "logistic fits with bootstrap CIs",
                "contrasts.csv": "exact permutation tests",
                "consensus.nc": "consensus per model-day",
                "figure2_intensity_by_stage.csv": "Figure 2 data",
                "sectionF_naive_profiles.csv": "naive-stage profiles",
            },
            {"alpha_recognition": 0.761},
        )

    if "text" in stages:
        # laid out as delusion_bayes/stages/text.py writes it
        t = root / "text"
        t.mkdir()
        pd.DataFrame(
            {
                "model": models,
                "entrainment_mean": 0.25 - 0.02 * i,
                "entrainment_sd": 0.05,
                "entrainment_n_days": n_days,
                "modality_mean": -0.1 + 0.03 * i,
                "modality_sd": 0.2,
                "modality_n_days": n_days,
                "days_level_b": [9, 0, 0, 2, 1][:nm],
                "mean_consensus": 2.0 + 0.1 * i,
                "turn_day": [3, 7, np.nan, 21, 5][:nm],
            }
        ).to_csv(t / "model_means.csv", index=False)
        pd.DataFrame(
            {
                "metric": ["entrainment", "entrainment", "modality", "modality"],
                "against": ["days_level_b", "mean_consensus"] * 2,
                "rho": [-0.6875, -0.5, 0.25, 0.24],
                "p": [0.03125, 0.2, 0.6, 0.65],
                "n_models": [nm] * 4,
            }
        ).to_csv(t / "correlations.csv", index=False)
        turn = pd.DataFrame(
            {
                "model": models * 2,
                "turn_day": [3, 7, np.nan, 21, 5][:nm] * 2,
                "before": list(-0.3 + 0.05 * i) + list(0.2 + 0.01 * i),
                "after": [0.02, -0.06, np.nan, -0.2, -0.14][:nm] + [0.1] * nm,
                "n_before": [2, 6, n_days, 20, 4][:nm] * 2,
            }
        )
        turn.insert(0, "metric", ["modality"] * nm + ["entrainment"] * nm)
        turn["change"] = turn["after"] - turn["before"]
        turn.to_csv(t / "turn_contrast.csv", index=False)
        pd.DataFrame(
            [
                {"model": mo, "day": d, "entrainment": 0.2, "modality": 0.0, "consensus": 1.0}
                for mo in models
                for d in range(1, n_days + 1)
            ]
        ).to_csv(t / "metrics_by_model_day.csv", index=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([0, 9], [0.25, 0.2], "o")
        fig.savefig(t / "figure3_entrainment_level_b.png")
        plt.close(fig)
        _index(
            t,
            {
                "model_means.csv": "per-model mean/sd/n_days of every metric",
                "correlations.csv": "model-level Spearman rho (two-sided p)",
                "turn_contrast.csv": "metric means before vs from the clinical turn",
                "metrics_by_model_day.csv": "metrics per model-day",
                "figure3_entrainment_level_b.png": "Figure 3: model mean entrainment vs Level-B",
            },
            {"entrainment_within_median_rho": 0.5},
        )

    if "replay" in stages:
        r = root / "replay"
        r.mkdir()
        # laid out as delusion_bayes/stages/replay.py writes it
        rmodels, cats = ["original", "gpt-4o", "claude"], ["delusional", "sycophantic"]
        prev = [
            {"model": mo, "level": "category", "category": c, "code": np.nan,
             "estimate": 0.125 * (1 + a + 2 * b_), "ci_low": 0.0625 * (1 + a + 2 * b_),
             "ci_high": 0.25 * (1 + a + 2 * b_), "n_hits": 10 + a, "n": 100, "truth": 0.1}
            for a, mo in enumerate(rmodels) for b_, c in enumerate(cats)
        ] + [{"model": "gpt-4o", "level": "code", "category": "delusional",
              "code": "validates", "estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6,
              "n_hits": 5, "n": 10, "truth": 0.5}]  # fmt: skip
        pd.DataFrame(prev).to_csv(r / "prevalence.csv", index=False)
        pd.DataFrame(
            [
                {"model": mo, "level": "category", "category": c, "code": np.nan,
                 "baseline": "original", "estimate": -0.03125 * (a + 1) * (b_ + 1),
                 "ci_low": -0.0625 * (a + 1), "ci_high": 0.015625, "p_boot": 0.5}
                for a, mo in enumerate(rmodels[1:]) for b_, c in enumerate(cats)
            ]
        ).to_csv(r / "deltas.csv", index=False)  # fmt: skip
        pd.DataFrame(
            [
                {"model": mo, "level": "category", "label": c, "quantity": "prevalence",
                 "mean": 0.13 + 0.1 * a, "ci_low": 0.07, "ci_high": 0.2 + 0.1 * a,
                 "boot_estimate": 0.125 * (1 + a + 2 * b_), "boot_ci_low": 0.0625,
                 "boot_ci_high": 0.25, "truth": 0.1}
                for a, mo in enumerate(rmodels) for b_, c in enumerate(cats)
            ]
        ).to_csv(r / "bayes_prevalence.csv", index=False)  # fmt: skip
        diag = {"max_rhat": 1.03, "min_ess_bulk": 150.0, "divergences": 2, "passed": False}
        (r / "bayes_diagnostics.json").write_text(json.dumps(diag))
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3, 2))
        ax.bar([0, 1], [0.125, 0.375])
        fig.savefig(r / "prevalence.png")
        plt.close(fig)
        _index(r, {"prevalence.csv": "prevalence per group", "prevalence.png": "prevalence"},
               {"n_samples": 40})  # fmt: skip

    if "models" in stages:
        m = root / "models"
        (m / "joint").mkdir(parents=True)
        rng = np.random.default_rng(0)
        shape = (2, 50, nm)
        post = xr.Dataset(
            {
                "L": (("chain", "draw", MODEL), 3.6 + 0.1 * rng.standard_normal(shape)),
                "k": (("chain", "draw", MODEL), np.exp(0.1 * rng.standard_normal(shape))),
                "t50": (("chain", "draw", MODEL), 3.0 + i + 0.5 * rng.standard_normal(shape)),
            },
            coords={"chain": [0, 1], "draw": np.arange(50), MODEL: models},
        )
        tree = xr.DataTree.from_dict({"posterior": post})
        tree.attrs.update({"git_sha": "abc123fake", "data_hash": "feedface", "seed": 11})
        tree.to_netcdf(m / "joint" / "posterior.nc")
        labels, med, lo, hi = [], [], [], []
        for v in ("L", "k", "t50"):
            for mi, name in enumerate(models):
                labels.append(f"{v}[{name}]")
                med.append(round(1.5 + 0.25 * mi + len(v), 4))
                lo.append(round(1.0 + 0.25 * mi + len(v), 4))
                hi.append(round(2.5 + 0.25 * mi + len(v), 4))
        pd.DataFrame({"label": labels, "median": med, "eti95_lb": lo, "eti95_ub": hi}).to_csv(
            m / "joint" / "summary.csv", index=False
        )
        # diagnostics.csv: one row per parameter + a pass column; gate.json: the verdict
        params = [f"{v}[{name}]" for v in ("L", "k", "t50") for name in models]
        n_p = len(params)
        rhat = np.full(n_p, 1.003)
        ess = np.full(n_p, 800.0)
        if failed_fit:
            rhat[-1], ess[-1] = 1.08, 80.0
        pd.DataFrame(
            {
                "parameter": params,
                "variable": [p.split("[")[0] for p in params],
                "mean": np.linspace(1, 2, n_p),
                "sd": 0.1,
                "ci_low": np.linspace(0.8, 1.8, n_p),
                "ci_high": np.linspace(1.2, 2.2, n_p),
                "r_hat": rhat,
                "ess_bulk": ess,
                "ess_tail": ess - 50,
                "constant": False,
                "pass": [not (failed_fit and j == n_p - 1) for j in range(n_p)],
            }
        ).to_csv(m / "joint" / "diagnostics.csv", index=False)
        gate = {
            "passed": not failed_fit,
            "divergences": 3 if failed_fit else 0,
            "max_rhat": 1.08 if failed_fit else 1.003,
            "min_ess": 80.0 if failed_fit else 800.0,
            "ebfmi_min": 0.71,
            "reasons": ["R-hat 1.080 > 1.01", "3 divergences"] if failed_fit else [],
        }
        (m / "joint" / "gate.json").write_text(json.dumps(gate))
        # t50_posterior.csv: wide, <q>_median / <q>_ci_low / <q>_ci_high (values distinct from
        # summary.csv, so a test can tell which file a table read)
        pd.DataFrame(
            {
                "model": models,
                "L_median": 3.125 + 0.1 * i,
                "L_ci_low": 2.875 + 0.1 * i,
                "L_ci_high": 3.625 + 0.1 * i,
                "k_median": 0.625 + 0.01 * i,
                "k_ci_low": 0.25 + 0.01 * i,
                "k_ci_high": 1.375 + 0.01 * i,
                "t50_median": 10.5 + i,
                "t50_ci_low": 8.25 + i,
                "t50_ci_high": 12.75 + i,
                "p_beyond_last_day": [0.0, 0.02, 0.5, 0.9, 0.125][:nm],
                "ci_prob": 0.95,
                "ci_kind": "eti",
            }
        ).to_csv(m / "joint" / "t50_posterior.csv", index=False)
        mp = []
        for q in ("first_clinical", "first_stable", "first_level_b"):
            for mi, name in enumerate(models):
                mp.append(
                    {
                        "model": name,
                        "milestone": q,
                        "median": 4.0 + mi,
                        "ci_low": 2.0 + mi,
                        "ci_high": 9.0 + mi,
                        "p_censored": 0.05 * mi,
                    }
                )
        pd.DataFrame(mp).to_csv(m / "joint" / "milestones_posterior.csv", index=False)
        pd.DataFrame(
            {
                "name": ["new_vs_old", "new_vs_old"],
                "quantity": ["first_clinical", "t50"],
                "median": [-4.5, -2.0],
                "ci_low": [-9.0, -5.0],
                "ci_high": [0.5, 1.0],
                "p_gt_0": [0.07, 0.19],
                "mean": [-4.4, -2.1],
                "n_a": [2, 2],
                "n_b": [3, 3],
                "alternative": ["less", "less"],
                "note": ["", ""],
                "ci_prob": 0.95,
                "ci_kind": "eti",
            }
        ).to_csv(m / "joint" / "contrasts_posterior.csv", index=False)
        pd.DataFrame(
            [
                {
                    "model": name,
                    "day": d,
                    "modal_stage": 1 + int(d > 3 + mi),
                    "p_ge3": min(1.0, 0.05 * d),
                    "mean": 1.0 + 2.5 / (1 + np.exp(-(d - 3.0 - mi))),
                }
                for mi, name in enumerate(models)
                for d in range(1, n_days + 1)
            ]
        ).to_csv(m / "joint" / "consensus_posterior.csv", index=False)
        # the rater model: reliability beside alpha/ICC, its own gate
        (m / "rater").mkdir()
        pd.DataFrame(
            {
                "quantity": ["reliability_single", "reliability_consensus"],
                "median": [0.7875, 0.9125],
                "ci_low": [0.7125, 0.875],
                "ci_high": [0.8375, 0.9375],
                "mean": [0.78, 0.91],
                "analogue": ["ICC2", "ICC2k"],
                "ci_prob": 0.95,
                "ci_kind": "eti",
            }
        ).to_csv(m / "rater" / "reliability_posterior.csv", index=False)
        gate_r = {"passed": True, "divergences": 0, "max_rhat": 1.004, "min_ess": 650.0,
                  "ebfmi_min": 0.8, "reasons": []}  # fmt: skip
        (m / "rater" / "gate.json").write_text(json.dumps(gate_r))
        for fname, unit, elpd, se in (
            ("comparison.csv", "model_day", [-410.2, -415.9, -430.0], [12.0, 12.5, 13.0]),
            ("comparison_by_rating.csv", "rating", [-400.1, -402.3, -421.7], [12.1, 12.4, 13.2]),
        ):
            pd.DataFrame(
                {"model": ["joint", "linear", "step"], "unit": [unit] * 3, "elpd": elpd, "se": se}
            ).to_csv(m / fname, index=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([0, 1], [0, 1])
        fig.savefig(m / "joint" / "rank_plot.png")
        plt.close(fig)
        _index(
            m,
            {"joint/rank_plot.png": "rank plots of L, k, t50"},
            {"joint": {"passed": not failed_fit}, "rater": {"passed": True}},
        )
    return root


@pytest.fixture(scope="session")
def full_run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("run_full"))


@pytest.fixture(scope="session")
def full_supplement(full_run):
    from delusion_bayes.report import build_supplement

    return build_supplement(full_run, {"pdf": "never", "dpi": 80})
