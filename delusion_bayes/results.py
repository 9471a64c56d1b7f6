"""The results contract: every file a stage writes for another reader, declared once and checked
by :func:`write` and :func:`read` (``read(run_dir, "baselines/tableD1_logistic.csv")``, None when
absent). The table of docs/dev/contract.md is :func:`contract_table`."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import UserError
from .result_views import BH, COLUMN_KINDS, HOLM, VIEWS, Column

DTYPES = ("str", "float", "int", "bool")

#: what a column means, wherever it appears in the files below
COLUMN_MEANINGS: dict[str, str] = {
    "model": "chatbot model (the study's `model` coord)",
    "estimate": "point estimate (baseline: on the observed data)",
    "median": "posterior median",
    "mean": "mean (posterior mean for posterior tables)",
    "ci_low": "lower bound of the equal-tailed interval of probability `ci_prob`",
    "ci_high": "upper bound of that interval",
    "ci_prob": "interval probability",
    "ci_kind": "interval kind: eti (equal-tailed) or hdi",
    "n_boot": "bootstrap resamples",
    "pvalue": "p-value (two-sided unless `alternative` says otherwise)",
    "p": "p-value",
    "rho": "Spearman rank correlation",
    "cluster": "resampling unit of the bootstrap (two-stage, participant, conversation, none)",
    "level": "row level: category (pooled over its codes) or code",
    "n_hits": "samples the judge flagged",
    "n": "samples (or units) in the cell",
    "truth": "simulated truth (simulated studies only)",
    "L": "plateau of the logistic trajectory (1-4 scale)",
    "k": "steepness of the logistic trajectory (per day)",
    "t50": "day of the logistic midpoint",
    "prior": "power-scaling sensitivity (CJS distance per log2 of the power) to the prior",
    "likelihood": "power-scaling sensitivity (CJS distance per log2 of the power) to the "
    "likelihood",
}


@dataclass(frozen=True)
class ResultFile:
    """One file between stages: where it lives, what it holds, its columns (CSV only): all
    ``columns`` present, ``optional`` ones maybe, ``extra`` describes any more (``""``: none).
    A table a reader renders also has a ``title`` (``{fit}``: the fit's name), the one-line
    ``question`` it answers and its ``view``: the :class:`Column` s shown, in order."""

    stage: str
    name: str
    meaning: str
    columns: tuple[tuple[str, str], ...] = ()
    optional: tuple[tuple[str, str], ...] = ()
    extra: str = ""
    readers: tuple[str, ...] = ("report",)
    title: str = ""
    question: str = ""
    view: tuple[Column, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.stage}/{self.name}"

    @property
    def kind(self) -> str:
        return Path(self.name).suffix.lstrip(".")

    def path(self, run_dir: str | Path, fit: str | None = None) -> Path:
        if "{fit}" in self.name and fit is None:
            raise ValueError(f"{self.key} is one file per fitted model: pass fit=<model name>")
        return Path(run_dir) / self.stage / self.name.format(fit=fit)

    def dtypes(self) -> dict[str, str]:
        return dict(self.columns + self.optional)


class ResultFileError(UserError, ValueError):
    """A results file that does not match its declaration (names the file and the columns)."""


def _cols(spec: str) -> tuple[tuple[str, str], ...]:
    """``"model:str L:float"`` -> ``(("model", "str"), ("L", "float"))``."""
    out = []
    for item in spec.split():
        name, dtype = item.rsplit(":", 1)
        if dtype not in DTYPES:
            raise ValueError(f"column {name!r}: dtype {dtype!r}, expected one of {DTYPES}")
        out.append((name, dtype))
    return tuple(out)


def _f(stage, name, meaning, columns="", optional="", extra="", readers=("report",)):
    return ResultFile(stage, name, meaning, _cols(columns), _cols(optional), extra, readers)


_CI = "ci_low:float ci_high:float"
REPORTED_SENSITIVITY = (
    "quantity:str kind:str item:str median:float prior:float likelihood:float "
    "prior_mean_shift_sd:float likelihood_mean_shift_sd:float diagnosis:str verdict:str "
    "pareto_k_prior:float pareto_k_likelihood:float pareto_k_ok:bool refit_shift_sd:float "
    "threshold:float"
)
#: the columns a PSIS-LOO comparison may have (az.compare's where it ran, az.loo's per fit else)
_LOO_OPTIONAL = (
    "rank:int elpd_diff:float dse:float p_loo:float p:float weight:float n_data_points:int "
    "n_k_bad:int n_k_very_bad:int max_k:float note:str"
)
# fmt: off
_FILES = (
    # baselines ---------------------------------------------------------------------------
    _f("baselines", "table1_milestones.csv", "Table 1: milestone latencies (censored at the "
       "censoring day) and day counts per model, from the consensus trajectory",
       "model:str first_clinical:float first_stable:float first_level_b:float "
       "days_stage4:float days_level_a:float days_level_b:float",
       extra="one column per model coord (vendor, generation, ...)",
       readers=("report", "sweep")),
    _f("baselines", "table2_interventions.csv", "Table 2: mean intervention intensity (1-3) on "
       "stage-4 days per model",
       "model:str n_stage4_days:int education:float psychoeducation:float "
       "emotional_support:float interpretation:float recommendation:float",
       optional="days_level_b:float"),
    _f("baselines", "tableC1_reliability.csv", "Table C1: Krippendorff's alpha with bootstrap "
       "CI, quadratic-weighted kappa over rater pairs, % agreement, ICC(2,1)/ICC(2,k) per rated "
       "variable (and adjudication agreement rows when the study has re-coded codes)",
       "variable:str alpha:float kappa_q_mean:float kappa_q_min:float kappa_q_max:float "
       "pct_agreement:float icc2_1:float icc2_k:float n_units:float n_raters:float",
       optional="alpha_ci_low:float alpha_ci_high:float",
       extra="adjudication columns (kappa, agreement)"),
    _f("baselines", "tableD1_logistic.csv", "Table D1: least-squares logistic fit of the "
       "consensus per model with rater-bootstrap percentile CIs",
       "model:str L:float k:float t50:float r2:float rss:float converged:bool status:str "
       "at_bound:str n_obs:int L_ci_low:float L_ci_high:float k_ci_low:float k_ci_high:float "
       "t50_ci_low:float t50_ci_high:float n_boot_used:int n_boot:int",
       readers=("report", "sweep")),
    _f("baselines", "contrasts.csv", "pre-specified group contrasts: exact (or Monte Carlo) "
       "rank-sum permutation tests over models",
       "contrast:str quantity:str by:str a:str b:str n_a:int n_b:int median_a:float "
       "median_b:float dropped:str statistic:float expected:float pvalue:float alternative:str "
       "n_arrangements:float exact:bool method:str", "p_holm:float p_bh:float family_size:int",
       readers=("report", "sweep")),
    *(_f(stage, name, f"each model's rank on the milestones over {over} (>= 3 models): median "
         "rank, rank interval, P(best), P(worst), the group not told apart from the best",
         "model:str estimate:float rank_mean:float rank_median:float rank_lower:float "
         "rank_upper:float p_best:float p_worst:float group:int tied_with_best:bool "
         "quantity:str n_draws:int")
      for stage, name, over in (("baselines", "rankings.csv", "the rater bootstrap's resamples"),
                                ("models", "{fit}/rankings_posterior.csv", "the posterior"))),
    *(_f(stage, name, f"each chatbot's rank per {what} over {over} (>= 3 chatbots; "
         "higher_is says the direction): median rank, rank interval, P(best), P(worst), group",
         "model:str estimate:float rank_mean:float rank_median:float rank_lower:float "
         "rank_upper:float p_best:float p_worst:float group:int tied_with_best:bool "
         "quantity:str higher_is:str n_draws:int")
      for stage, name, what, over in (
          ("replay", "rankings.csv", "category prevalence", "the cluster bootstrap"),
          ("replay", "rankings_posterior.csv", "category prevalence", "the posterior"),
          ("replicated", "rankings.csv", "behaviour mean", "the conversation bootstrap"),
          ("replicated", "bayes_rankings.csv", "behaviour mean of a new conversation",
           "the behaviour model's posterior"))),
    _f("baselines", "figure2_intensity_by_stage.csv", "Figure 2 data: mean intervention "
       "intensity per consensus stage and type, Spearman rho over model-days",
       "intervention_type:str stage:float mean:float sd:float n:int rho:float pvalue:float "
       "n_pairs:int"),
    _f("baselines", "sectionF_naive_profiles.csv", "section F: Spearman rho of each "
       "intervention type with day in the never-turning models",
       "model:str intervention_type:str rho:float pvalue:float n:int mean_first_week:float "
       "mean_last_week:float"),
    _f("baselines", "consensus.nc", "consensus per model-day of the rated variables (attrs: "
       "rule, half rule)", readers=("text", "report")),
    _f("baselines", "logistic_bootstrap.nc", "rater-bootstrap replicates of L, k, t50 "
       "(resample x model), the rater draws and the warm starts"),
    # text --------------------------------------------------------------------------------
    _f("text", "metrics_by_model_day.csv", "entrainment (canonical config; others as "
       "entrainment_configN), modality and its marker counts, consensus stage per model-day",
       "model:str day:int entrainment:float modality:float modality_boosters:float "
       "modality_hedges:float modality_questions:float modality_sentences:float "
       "consensus:float", extra="entrainment_config<N> for the other embedding configs"),
    _f("text", "model_means.csv", "per-model mean/sd/n_days of every metric (Figure 3 data), "
       "Level-B days, mean consensus, turn day",
       "model:str entrainment_mean:float entrainment_sd:float entrainment_n_days:int "
       "modality_mean:float modality_sd:float modality_n_days:int mean_consensus:float "
       "turn_day:float", optional="days_level_b:float",
       extra="entrainment_config<N>_{mean,sd,n_days}; one column per model coord"),
    _f("text", "correlations.csv", "model-level Spearman rho of each metric's model means with "
       "Level-B days (Figure 3) and with the mean consensus",
       "metric:str against:str rho:float p:float n_models:int", readers=("report", "sweep")),
    _f("text", "by_consensus_stage.csv", "metric mean/sd/n over model-days per consensus stage",
       "metric:str stage:float mean:float sd:float n_days:int n_models:int"),
    _f("text", "within_model.csv", "within-model Spearman rho with the consensus; mean on "
       "naive vs clinical days", "metric:str model:str rho:float p:float n_days:int "
       "escalating:bool mean_naive:float mean_clinical:float n_naive:int n_clinical:int "
       "lower_when_clinical:bool"),
    _f("text", "turn_contrast.csv", "metric means before vs from each model's first clinical "
       "day (Figure 4 data)", "metric:str model:str turn_day:float before:float after:float "
       "n_before:int n_after:int change:float"),
    # models (one folder per fit) -------------------------------------------------------------
    _f("models", "{fit}/posterior.nc", "posterior DataTree (provenance in attrs)",
       readers=("report", "coverage")),
    _f("models", "{fit}/diagnostics.csv", "per-parameter R-hat, ESS bulk/tail, interval, pass",
       "parameter:str variable:str mean:float sd:float ci_low:float ci_high:float r_hat:float "
       "ess_bulk:float ess_tail:float constant:bool pass:bool"),
    _f("models", "{fit}/gate.json", "diagnostics gate: passed, divergences, max R-hat, min "
       "ESS, E-BFMI, reasons, thresholds", readers=("report", "sweep")),
    _f("models", "{fit}/summary.csv", "az.summary with the interval set explicitly",
       "parameter:str mean:float sd:float", extra="ArviZ's interval, ESS, R-hat, MCSE columns"),
    _f("models", "{fit}/t50_posterior.csv", "posterior L, k, t50 per model (onset models), "
       "P(t50 beyond the last day)",
       "model:str L_median:float L_ci_low:float L_ci_high:float k_median:float k_ci_low:float "
       "k_ci_high:float t50_median:float t50_ci_low:float t50_ci_high:float "
       "p_beyond_last_day:float ci_prob:float ci_kind:str", readers=("report", "sweep")),
    _f("models", "{fit}/milestones_posterior.csv", "posterior milestone latencies with "
       "P(censored)", "model:str milestone:str median:float ci_low:float ci_high:float "
       "p_censored:float mean:float ci_prob:float ci_kind:str censor_day:int",
       readers=("report", "sweep")),
    _f("models", "{fit}/contrasts_posterior.csv", "posterior group contrasts of these N models "
       "(mean A - mean B per draw) and P(> 0)", "name:str quantity:str median:float ci_low:float "
       "ci_high:float p_gt_0:float mean:float n_a:int n_b:int alternative:str note:str "
       "ci_prob:float ci_kind:str", readers=("report", "sweep")),
    _f("models", "{fit}/contrasts_population.csv", "population group contrasts of the primary "
       "model: the difference of the groups' population means, mu_A - mu_B (a milestone: of the "
       "expected censored milestone of a new chatbot), from a fit with the grouping "
       "(models.population), and P(> 0)", "name:str quantity:str median:float ci_low:float "
       "ci_high:float p_gt_0:float mean:float n_a:int n_b:int alternative:str estimand:str "
       "scale:str note:str ci_prob:float ci_kind:str", "sd:float p_sign_error:float"),
    _f("models", "{fit}/consensus_posterior.csv", "Bayesian consensus per model-day: modal "
       "stage, P(stage >= 3), P(stage >= 4), mean, P(stage = s)",
       "model:str day:int modal_stage:float p_ge3:float p_ge4:float mean:float p1:float "
       "p2:float p3:float p4:float"),
    _f("models", "{fit}/raters_posterior.csv", "rater severity and discrimination",
       "rater:str severity_median:float severity_ci_low:float severity_ci_high:float "
       "severity_mean:float discrimination_median:float discrimination_ci_low:float "
       "discrimination_ci_high:float discrimination_mean:float ci_prob:float ci_kind:str"),
    _f("models", "{fit}/reliability_posterior.csv", "posterior reliability (single rater, "
       "consensus of k raters) beside ICC(2,1)/ICC(2,k) of Table C1",
       "quantity:str median:float ci_low:float ci_high:float mean:float analogue:str "
       "ci_prob:float ci_kind:str frequentist:float"),
    _f("models", "{fit}/level_b_posterior.csv", "disengagement model: P(Level A/B | stage 4) "
       "and model effects", "model:str p_level_b_at_stage4_median:float "
       "p_level_b_at_stage4_ci_low:float p_level_b_at_stage4_ci_high:float",
       extra="the same for p_level_a_at_stage4 and u"),
    _f("models", "{fit}/loo.csv", "PSIS-LOO per left-out model-day and per left-out rating",
       "model:str unit:str elpd_loo:float se:float p_loo:float n_data_points:int "
       "k_threshold:float n_k_good:int n_k_bad:int n_k_very_bad:int max_k:float"),
    _f("models", "{fit}/sensitivity.csv", "power-scaling prior and likelihood sensitivity "
       "(CJS, Kallioinen et al. 2024) per parameter and priorsense's verdict at the threshold: "
       "prior-data conflict, weak likelihood or -",
       "parameter:str variable:str prior:float likelihood:float diagnosis:str verdict:str "
       "threshold:float"),
    _f("models", "{fit}/sensitivity_reported.csv", "power-scaling prior and likelihood "
       "sensitivity of each reported number (t50, milestones, population and finite-sample "
       "contrasts, consensus mean stage), the mean's shift in posterior SD per doubling of the "
       "power, Pareto k of the weights (refit needed above 0.7) and the shift under refits",
       REPORTED_SENSITIVITY, readers=("report",)),
    _f("models", "{fit}/refit_priors.csv", "shift of each reported number and parameter "
       "under refits with the flagged priors' scales doubled and halved, in posterior SD "
       "(experiments/bench/refit_priors.py; not written by the pipeline)",
       "quantity:str kind:str item:str refit_shift_sd:float", extra="shift_x<factor> per factor"),
    *(_f("models", name, meaning, "model:str unit:str elpd:float se:float", _LOO_OPTIONAL,
         extra="az.compare's or az.loo's other columns")
      for name, meaning in (
          ("comparison.csv", "PSIS-LOO comparison (az.compare of the primary's variants, or the "
           "PSIS-LOO of each fit when inference.compare is false), per inference.loo_unit"),
          ("comparison_by_rating.csv", "the same comparison per left-out rating"),
          ("comparison_by_model_day.csv", "the same comparison per left-out model-day (when "
           "inference.loo_unit is rating)"))),
    # replay ------------------------------------------------------------------------------
    _f("replay", "prevalence.csv", "prevalence per model x category (pooled over its codes) "
       "and per model x code, cluster-bootstrap percentile CIs",
       f"model:str level:str category:str code:str estimate:float {_CI} n_hits:float n:float "
       "n_unscored:float cluster:str support:str n_boot:int ci_prob:float unscored:str",
       optional="truth:float"),
    _f("replay", "deltas.csv", "each model minus the original transcript, paired resamples",
       f"model:str level:str category:str code:str baseline:str estimate:float {_CI} "
       "prevalence:float baseline_prevalence:float p_boot:float cluster:str support:str "
       "paired:bool n_boot:int ci_prob:float",
       optional="family:str p_holm:float p_bh:float family_size:int se_boot:float "
       "ci_low_maxt:float ci_high_maxt:float p_maxt:float p_sign_error:float"),
    _f("replay", "cluster_bootstrap.csv", "category CIs under every resampling scheme and "
       "their width relative to samples i.i.d.",
       f"model:str category:str cluster:str estimate:float {_CI} width:float n_hits:float "
       "n:float n_boot:int ci_prob:float", optional="width_vs_iid:float truth:float"),
    _f("replay", "lopo.csv", "category prevalence (and delta) leaving out each participant",
       "left_out:str model:str level:str category:str code:str estimate:float "
       "full_estimate:float change:float", optional="delta:float full_delta:float"),
    _f("replay", "family.csv", "category prevalence pooled per model family",
       f"family:str level:str category:str code:str estimate:float {_CI} n_hits:float "
       "n:float n_unscored:float cluster:str support:str n_boot:int ci_prob:float unscored:str"),
    _f("replay", "context_depth.csv", "category prevalence per context-depth bin",
       f"model:str level:str category:str code:str depth_bin:str estimate:float {_CI} "
       "n_hits:float n:float cluster:str n_boot:int ci_prob:float depth_mean:float"),
    _f("replay", "context_depth_lpm.csv", "linear probability model hit ~ depth/10 + prior "
       "assistant content per model x category",
       f"model:str category:str term:str estimate:float {_CI} n:float cluster:str n_boot:int "
       "ci_prob:float"),
    _f("replay", "onset.csv", "per window: share with a hit, onset, persistence, emergence",
       f"model:str category:str quantity:str estimate:float {_CI} n_hits:float n:float "
       "cluster:str n_boot:int ci_prob:float level:str code:str unit:str"),
    _f("replay", "turn_profile.csv", "category prevalence by user-turn position in the window",
       f"model:str level:str category:str code:str turn:int estimate:float {_CI} n_hits:float "
       "n:float cluster:str n_boot:int ci_prob:float"),
    _f("replay", "bayes_prevalence.csv", "hierarchical Bayesian prevalence per model x "
       "category/code and deltas vs the original, beside the bootstrap estimate and CI",
       f"model:str level:str label:str quantity:str mean:float {_CI} prob_below_zero:float "
       "ci_prob:float boot_estimate:float boot_ci_low:float boot_ci_high:float",
       optional="truth:float"),
    _f("replay", "bayes_diagnostics.json", "sampler diagnostics and gate verdict of the "
       "Bayesian prevalence model"),
    _f("replay", "sensitivity_reported.csv", "power-scaling sensitivity of the replay fit's "
       "prevalences and deltas (as models/<fit>/sensitivity_reported.csv)", REPORTED_SENSITIVITY,
       readers=("report",)),
    _f("replay", "sensitivity.csv", "power-scaling prior and likelihood sensitivity of the "
       "Bayesian prevalence model's parameters and prevalences, priorsense's verdict",
       "parameter:str variable:str prior:float likelihood:float diagnosis:str verdict:str "
       "threshold:float"),
    _f("replay", "refit_priors.csv", "shift of each prevalence, delta and parameter under "
       "refits with the flagged priors' scales doubled and halved, in posterior SD "
       "(experiments/bench/refit_priors.py --fit replay; not written by the pipeline)",
       "quantity:str kind:str item:str refit_shift_sd:float", extra="shift_x<factor> per factor"),
    # design (experiment=design: simulated studies only) -----------------------------------
    _f("design", "replicates.csv", "study design, SIMULATED: one row per simulated study x "
       "method x quantity (intervals, contrasts, reliability, never-turner classification, "
       "seconds), the coverage study's rows plus the cell",
       "n_raters:int n_models:int n_days:int discrimination_mean:float replicate:int "
       "preset:str seed:int method:str kind:str quantity:str item:str regime:str truth:float "
       "estimate:float low_90:float high_90:float low_95:float high_95:float alternative:str "
       "stat:float reject:float truth_diff:float seconds:float note:str", readers=("sweep",)),
    _f("design", "cell.csv", "study design, SIMULATED: per method the power of each contrast "
       "(binomial SE), t50 interval width and coverage, alpha and ICC(2,k) CI widths, "
       "never-turner classification, seconds per study, with Monte Carlo SEs",
       "data:str n_raters:int n_models:int n_days:int discrimination_mean:float method:str "
       "metric:str item:str value:float se:float n:int n_sims:int", readers=("sweep",)),
    _f("design", "replicated_rows.csv", "replicated study design, SIMULATED: one row per "
       "simulated study of the cell (permutation p, bootstrap width, the truth; the behaviour "
       "model's columns for the first design.n_sims_bayes)",
       "n_conversations:int n_turns:int n_raters:int rater_kind:str shift:float seed:int "
       "true_diff:float diff:float pvalue:float width95:float seconds:float",
       optional="bayes_reject:bool bayes_diff:float bayes_width95:float bayes_cover95:bool "
       "bayes_gate:bool bayes_seconds:float", readers=("sweep",)),
)

_FILES += tuple(
    _f(stage, "index.json", "what the stage wrote: {files: {name: description}, headline: "
       "{...}, notes: [...]} (the baselines' also its settings: consensus rule, n_days, "
       "censor_day, seed, n_boot)", readers=("report", "sweep"))
    for stage in ("baselines", "text", "models", "replay", "replicated", "design", "report")
) + (_f("models", "{fit}/index.json", "the files, headline and gate of one fit"),)


_FILES = tuple(replace(f, **VIEWS.get(f.key, {})) for f in _FILES)
# fmt: on

#: every declared file by its key ``<stage>/<name>``
FILES: dict[str, ResultFile] = {f.key: f for f in _FILES}


def spec(key: str) -> ResultFile:
    """The declaration of ``key`` (``"baselines/table1_milestones.csv"``)."""
    try:
        return FILES[key]
    except KeyError:
        raise KeyError(
            f"{key!r} is not a declared results file; declared: {sorted(FILES)}"
        ) from None


def _check(f: ResultFile, columns: list[str], where: str) -> None:
    missing = [c for c, _ in f.columns if c not in columns]
    extra = [c for c in columns if c not in f.dtypes()]
    if missing or (extra and not f.extra):
        raise ResultFileError(
            f"{where} does not match the results contract of {f.key}: "
            + (f"missing columns {missing}; " if missing else "")
            + (f"undeclared columns {extra}; " if extra and not f.extra else "")
            + f"declared: {[c for c, _ in f.columns]} (delusion_bayes/results.py)"
        )


def _cast(df: Any, f: ResultFile) -> Any:
    import pandas as pd

    df = df.copy()
    for col, dtype in f.dtypes().items():
        if col not in df:
            continue
        if dtype == "float":
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
        elif dtype == "int":
            values = pd.to_numeric(df[col], errors="coerce")
            df[col] = values.astype("Int64") if values.isna().any() else values.astype(int)
        elif dtype == "bool":
            df[col] = df[col].map(_as_bool).astype(object if df[col].isna().any() else bool)
        else:
            df[col] = df[col].astype(object).where(df[col].notna(), "").astype(str)
    return df


def _as_bool(v: Any) -> Any:
    if isinstance(v, str):
        return {"true": True, "false": False, "1": True, "0": False}.get(v.strip().lower())
    return None if v is None or v != v else bool(v)


def write(run_dir: str | Path, key: str, data: Any, fit: str | None = None) -> Path:
    """Write ``data`` (a DataFrame for a CSV, a dict for JSON, an xarray object for netCDF) to
    the declared file ``key`` of ``run_dir``, checking a table's columns; returns the path."""
    f = spec(key)
    path = f.path(run_dir, fit)
    path.parent.mkdir(parents=True, exist_ok=True)
    if f.kind == "csv":
        _check(f, [str(c) for c in data.columns], f"the table for {path}")
        declared = [c for c, _ in f.columns + f.optional if c in data.columns]
        data = _cast(data[declared + [c for c in data.columns if c not in declared]], f)
        data.to_csv(path, index=False)
    elif f.kind == "json":
        path.write_text(json.dumps(data, indent=2, default=_json_default))
    else:
        data.to_netcdf(path, engine="h5netcdf")
    return path


def _json_default(v: Any) -> Any:
    """numpy scalars as Python numbers, anything else as its text."""
    try:
        return v.item()
    except (AttributeError, TypeError, ValueError):
        return str(v)


def read(run_dir: str | Path, key: str, fit: str | None = None) -> Any:
    """The declared file ``key`` of ``run_dir`` (DataFrame, dict, Dataset or DataTree), or None
    when absent; :class:`ResultFileError` when it breaks its declaration or cannot be read."""
    f = spec(key)
    path = f.path(run_dir, fit)
    if not path.is_file():
        return None
    try:
        if f.kind == "csv":
            import pandas as pd

            df = pd.read_csv(path, keep_default_na=True)
            _check(f, [str(c) for c in df.columns], str(path))
            return _cast(df, f)
        if f.kind == "json":
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ResultFileError(f"{path}: expected a JSON object")
            return data
        import xarray as xr

        if f.name.endswith("posterior.nc"):
            return xr.open_datatree(path, engine="h5netcdf").load()
        return xr.load_dataset(path, engine="h5netcdf")
    except ResultFileError:
        raise
    except Exception as err:  # noqa: BLE001 - a damaged file: the package's error, naming it
        raise ResultFileError(f"{path}: cannot be read ({type(err).__name__}: {err})") from err


def fits(run_dir: str | Path) -> list[str]:
    """The fitted models of a run: the ``models/<fit>/`` folders, sorted."""
    root = Path(run_dir) / "models"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def contract_table() -> str:
    """The contract as a Markdown table (docs/dev/contract.md)."""
    lines = ["| file | meaning | columns (dtype) | readers |", "|---|---|---|---|"]
    for f in _FILES:
        cols = ", ".join(f"{c}:{t}" for c, t in f.columns)
        cols += "".join(f", [{c}:{t}]" for c, t in f.optional)
        cols += f"; + {f.extra}" if f.extra else ""
        lines.append(f"| `{f.key}` | {f.meaning} | {cols or '-'} | {', '.join(f.readers)} |")
    return "\n".join(lines)


__all__ = [
    "BH",
    "COLUMN_KINDS",
    "HOLM",
    "COLUMN_MEANINGS",
    "Column",
    "FILES",
    "ResultFile",
    "ResultFileError",
    "contract_table",
    "fits",
    "read",
    "spec",
    "write",
]
