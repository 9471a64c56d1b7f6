"""Population-level group contrasts: the difference between the groups' *populations* of chatbots,
not between the means of the models in the study (:func:`population_contrasts`).

Two questions about one contrast (docs/dev/design-decisions.md, "Two posterior contrasts"):

- the finite-sample contrast (:func:`delusion_bayes.models.derived.posterior_contrasts`) asks
  how the means of *these N models* differ. Its interval only carries the measurement
  uncertainty of each model's quantity; two groups of chatbots drawn from one population differ
  by chance, and that interval says so with near certainty.
- the population contrast asks how a *new* chatbot of group A is expected to differ from a new
  one of group B. Its interval also carries the between-model variation: with 2-6 members per
  group the group means are known only to within a few between-model SDs over sqrt(n).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..data.schema import MODEL
from ..intervals import interval, sample_dims

SAMPLE_DIMS: tuple[str, ...] = ("chain", "draw")
#: at least this many population draws per contrast (t draws per posterior draw are repeated
#: until there are), so the interval's Monte Carlo error stays below the posterior's own
MIN_DRAWS: int = 4000
COLUMNS = ("name", "quantity", "median", "ci_low", "ci_high", "p_gt_0", "mean", "n_a", "n_b")


def population_draws(
    x: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray, rng: np.random.Generator, reps: int = 1
) -> np.ndarray:
    """Draws of ``mu_A - mu_B`` (module docstring, :func:`population_contrasts`) from per-model
    draws ``x`` ``(n_samples, n_models)``: per posterior draw and replicate,
    ``xbar_A - xbar_B + s_p sqrt(1/n_A + 1/n_B) t``, ``t ~ Student-t(n_A + n_B - 2)``.

    Models with a NaN draw are left out of that draw (NaN if a group is then empty or fewer
    than 3 models remain). Returns ``(n_samples * reps,)``.
    """
    x = np.asarray(x, float)
    xa, xb = x[:, mask_a], x[:, mask_b]
    na, nb = np.isfinite(xa).sum(1), np.isfinite(xb).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = np.nanmean(xa, 1) if xa.size else na * np.nan, np.nanmean(xb, 1)
        ss = np.nansum((xa - ma[:, None]) ** 2, 1) + np.nansum((xb - mb[:, None]) ** 2, 1)
        df = na + nb - 2
        sp = np.sqrt(ss / df)
        se = sp * np.sqrt(1.0 / na + 1.0 / nb)
    ok = (na >= 1) & (nb >= 1) & (df >= 1)
    dfs = np.where(ok, df, 1).astype(float)
    t = stats.t.rvs(np.repeat(dfs, reps), random_state=rng)
    out = np.repeat(ma - mb, reps) + np.repeat(se, reps) * t
    return np.where(np.repeat(ok, reps), out, np.nan)


def population_contrasts(
    quantities: xr.Dataset,
    contrasts: Iterable[Any],
    ci_prob: float = 0.95,
    ci_kind: str = "eti",
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """Posterior of the difference between the population means of groups A and B.

    The quantity: ``mu_A - mu_B``, where ``mu_g`` is the expected value of the quantity (t50, a
    milestone day censored at ``n_days + 1``, a day count) for a NEW chatbot drawn from the
    population of group g. Second stage: the study's models of group g are draws
    ``x_m ~ N(mu_g, sigma^2)`` with one between-model SD ``sigma`` for both groups (as the
    fitted hierarchy has one ``sigma_t50``, ``sigma_log_k`` for all models) and the reference
    prior ``p(mu_A, mu_B, sigma) ∝ 1/sigma``. Given the models' values the posterior is
    ``mu_A - mu_B = xbar_A - xbar_B + s_p sqrt(1/n_A + 1/n_B) t_{n_A+n_B-2}`` with ``s_p`` the
    pooled SD (Box & Tiao 1973, *Bayesian Inference in Statistical Analysis*, §2.5); this is
    drawn per posterior draw of the per-model quantities (``quantities``, the same draws as
    :func:`delusion_bayes.models.derived.posterior_contrasts`), so the interval carries each
    model's measurement uncertainty and the between-model variation. Its 95% interval excludes
    0 in about 5% of studies whose groups share one population (normal populations).

    Why not group terms on the fitted hyper-means (``model.group_terms``): a contrast's groups
    are often two levels (cohort) of 2-6 models, where a group-effect SD is set by its prior;
    and a milestone of a new chatbot needs its plateau ``L``, which has a fixed prior per model
    and no population in these fits (``models.blocks.onset_trajectory``), so it would be
    prior-driven. Caveats: the fit's hierarchy shrinks each model towards the common mean,
    which pulls the difference towards 0 (conservative); censored milestones and never-turners'
    prior-driven t50 are not normal across models; groups of 2-3 give heavy t tails.

    ``contrasts``: the permutation tests' specs ``{name, by, a, b, alternative, quantities}``;
    ``seed`` seeds the t draws (same seed, same table). Returns a ``pandas.DataFrame`` with the
    columns of ``contrasts_posterior.csv``: ``name``, ``quantity``, ``median``, ``ci_low``,
    ``ci_high``, ``p_gt_0`` (P(mu_A > mu_B)), ``mean``, ``n_a``, ``n_b``, ``alternative``,
    ``note`` (why a row is NaN), ``ci_prob``, ``ci_kind``.
    """
    from ..baselines.permutation import as_contrast, contrast_groups

    rng = np.random.default_rng(seed)
    rows = []
    for spec in contrasts:
        c = as_contrast(spec)
        mask_a, mask_b = contrast_groups(quantities, c)
        for q in c.quantities or []:
            row: dict[str, Any] = {
                "name": c.name,
                "quantity": q,
                "n_a": int(mask_a.sum()),
                "n_b": int(mask_b.sum()),
                "alternative": c.alternative,
                "note": "",
            }
            rows.append(_contrast_row(row, quantities, q, (mask_a, mask_b), rng, ci_prob, ci_kind))
    df = pd.DataFrame(rows, columns=[*COLUMNS, "alternative", "note"])
    df["ci_prob"], df["ci_kind"] = ci_prob, ci_kind
    return df


def _contrast_row(
    row: dict[str, Any],
    quantities: xr.Dataset,
    q: str,
    masks: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    ci_prob: float,
    ci_kind: str,
) -> dict[str, Any]:
    """``row`` completed with the posterior summary of quantity ``q``'s population contrast
    between the models of ``masks`` (A, B), or NaN and a ``note`` saying why not."""
    nan = dict.fromkeys(("median", "ci_low", "ci_high", "p_gt_0", "mean"), np.nan)
    if q not in quantities:
        return {**row, **nan, "note": f"{q!r} is not a quantity of this model"}
    if row["n_a"] + row["n_b"] < 3:
        return {**row, **nan, "note": "a population contrast needs >= 3 models"}
    da = quantities[q]
    dims = sample_dims(da, SAMPLE_DIMS)
    x = da.transpose(*dims, MODEL).values.reshape(-1, da.sizes[MODEL])
    reps = max(1, -(-MIN_DRAWS // x.shape[0]))
    diff = population_draws(x, *masks, rng, reps)
    if not np.isfinite(diff).all():
        return {**row, **nan, "note": "a group has no finite value in some draws"}
    lo, hi = interval(xr.DataArray(diff, dims="draw"), ci_prob, ci_kind, dims=["draw"])
    row.update(
        median=float(np.median(diff)),
        ci_low=float(lo),
        ci_high=float(hi),
        p_gt_0=float((diff > 0).mean()),
        mean=float(diff.mean()),
    )
    return row


__all__ = ["population_contrasts", "population_draws"]
