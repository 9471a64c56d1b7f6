"""Posterior quantities of the replay prevalence model: population prevalence per model x
code/category and contrasts against the original transcript, and the post-processing of a fit
(:func:`finish_replay_fit`; the model: :mod:`delusion_bayes.models.replay`)."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pandas as pd
import scipy.sparse as sp
import xarray as xr
from scipy.special import expit, gammaln

from ..data.replay_schema import DEPTH_CENTER, DEPTH_UNIT, MODEL, ORIGINAL
from ..intervals import eti

#: the effect group of codes without a category
UNCATEGORISED = "uncategorised"


def _bounds(x: np.ndarray, ci_prob: float) -> dict[str, float]:
    lo, hi = eti(x, ci_prob)
    return {"ci_low": float(lo), "ci_high": float(hi)}


def _posterior_array(post: xr.Dataset, name: str) -> np.ndarray:
    v = post[name]
    return v.values.reshape((-1,) + v.shape[2:])


@numba.njit(cache=True, parallel=True)
def _normal_mean_expit(eta, scale, nodes, weights):
    """``sum_q weights_q expit(eta[i, j] + scale[i] nodes_q)`` for every draw ``i`` and row
    ``j``: Gauss-Hermite's ``E[expit(eta + u)]``, ``u ~ N(0, scale^2 / 2)``. Fused in numba:
    in numpy each node costs three temporaries of the whole chunk."""
    out = np.empty(eta.shape)
    for i in numba.prange(eta.shape[0]):
        for j in range(eta.shape[1]):
            acc = 0.0
            for q in range(nodes.shape[0]):
                acc += weights[q] / (1.0 + np.exp(-(eta[i, j] + scale[i] * nodes[q])))
            out[i, j] = acc
    return out


def _design(spec: Any, cells: pd.DataFrame, arrays: dict[str, np.ndarray]):
    """``eta = X @ params`` for ``cells``: the sparse design matrix ``X`` (cell x parameter
    column) and the draws of ``arrays`` (posterior variable -> ``(draw, ...)``; ``theta``,
    ``beta_depth``, ``gamma_prior`` and, if given, ``u_conversation``, ``u_participant``) side
    by side, ``(draw, column)``. One sparse product instead of fancy indexing per parameter."""
    m, e = cells["model"].to_numpy(), cells["effect"].to_numpy()
    mg = m * len(spec.coords["group"]) + spec.effect_group[e]

    def column(name: str):  # (column of each cell within the variable, coefficient)
        if name == "theta":
            return m * len(spec.coords["effect"]) + e, 1.0
        if name == "beta_depth":
            return mg, cells["depth"].to_numpy()
        if name == "gamma_prior":
            return mg, cells["prior"].to_numpy() - spec.prior_center
        return cells[name.removeprefix("u_")].to_numpy(), 1.0  # a cluster's intercept

    cols, vals, params, offset = [], [], [], 0
    for name, a in arrays.items():
        col, coef = column(name)
        a = a.reshape(a.shape[0], -1)
        cols.append(col + offset)
        vals.append(np.broadcast_to(coef, (len(cells),)))
        params.append(a)
        offset += a.shape[1]
    rows = np.tile(np.arange(len(cells)), len(arrays))
    x = sp.csr_matrix(
        (np.concatenate(vals), (rows, np.concatenate(cols))), shape=(len(cells), offset)
    )
    return x, np.concatenate(params, axis=1)


def replay_posterior_prevalence(
    tree, spec: Any, target: str = "population", n_nodes: int = 16, seed: int = 0
) -> tuple[xr.DataArray, xr.DataArray]:
    """Posterior prevalence per ``(model, effect)`` and ``(model, category)``: the
    cell-size-weighted mean of ``logit^-1(eta)`` over the study's cells, per draw.

    ``target="population"``: ``E[logit^-1(eta_fixed + u + v)]``, ``u + v ~ Normal(0, sigma_p^2 +
    sigma_c^2)`` (Gauss-Hermite, ``n_nodes``), for new participants (``simulate_replay``'s
    ``true_prevalence``), ``theta`` shifted by the zero-sum intercepts' mean drawn (``seed``) from
    ``Normal(0, sigma_p^2/P + sigma_c^2/C)``; ``"sample"``: the study's own intercepts.
    """
    if target not in ("population", "sample"):
        raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
    post = tree["posterior"]
    post = post.to_dataset() if hasattr(post, "to_dataset") else post
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    total = n_chain * n_draw
    rows, arrays, sigmas = _prevalence_rows(post, spec, target, seed)
    x, params = _design(spec, rows, arrays)
    a_e, a_g, cats = _averaging_weights(spec, rows)
    den_e = np.asarray(a_e.sum(0)).ravel()
    den_g = np.asarray(a_g.sum(0)).ravel()
    prev_e = np.empty((total, a_e.shape[1]))
    prev_g = np.empty((total, a_g.shape[1]))
    chunk = max(1, 20_000_000 // max(len(rows), 1))
    nodes, weights = np.polynomial.hermite.hermgauss(n_nodes)
    weights = weights / np.sqrt(np.pi)
    if target == "population":
        chunk = max(1, chunk // n_nodes)
    for lo in range(0, total, chunk):
        sl = slice(lo, min(lo + chunk, total))
        eta = (x @ params[sl].T).T  # (draw, row)
        if sigmas is None:
            p = expit(eta)
        else:
            sig_p, sig_c = sigmas
            scale = np.sqrt(2.0 * (sig_p[sl] ** 2 + sig_c[sl] ** 2))
            p = _normal_mean_expit(eta, scale, nodes, weights)
        prev_e[sl] = np.asarray((a_e.T @ p.T).T) / np.where(den_e > 0, den_e, np.nan)
        prev_g[sl] = np.asarray((a_g.T @ p.T).T) / np.where(den_g > 0, den_g, np.nan)
    n_m, n_e = len(spec.coords[MODEL]), len(spec.coords["effect"])
    coords = {"chain": post["chain"].values, "draw": post["draw"].values, MODEL: spec.coords[MODEL]}
    pe = xr.DataArray(
        prev_e.reshape(n_chain, n_draw, n_m, n_e),
        name="prevalence",
        dims=("chain", "draw", MODEL, spec.level),
        coords={**coords, spec.level: spec.coords["effect"]},
    )
    pg = xr.DataArray(
        prev_g.reshape(n_chain, n_draw, n_m, len(cats)),
        name="category_prevalence",
        dims=("chain", "draw", MODEL, "category"),
        coords={**coords, "category": cats},
    )
    return pe, pg


def _prevalence_rows(post: xr.Dataset, spec: Any, target: str, seed: int):
    """The rows averaged over (``sample``: the study's cells; ``population``: one per model,
    effect and covariates, the intercepts integrated out), the parameter draws the linear
    predictor needs, and ``(sigma_participant, sigma_conversation)`` draws for the
    ``population`` integral (None for ``sample``)."""
    arrays = {v: _posterior_array(post, v) for v in ("theta", "beta_depth", "gamma_prior")}
    single = "u_participant" not in post  # one clustering level: no participant term
    c = spec.cells
    if target == "sample":
        arrays["u_conversation"] = _posterior_array(post, "u_conversation")
        if not single:
            arrays["u_participant"] = _posterior_array(post, "u_participant")
        return c, arrays, None
    # integrated out, a cell's prevalence depends on its model, effect and covariates only
    keys = ["model", "effect", "depth", "prior"]
    rows = c.groupby(keys, sort=False, dropna=False, as_index=False)["n"].sum()
    sig_c = _posterior_array(post, "sigma_conversation")
    sig_p = np.zeros_like(sig_c) if single else _posterior_array(post, "sigma_participant")
    if not spec.single_level:
        # zero-sum intercepts: theta = mu + mean(w_p) + mean(w_c) (single-level: i.i.d.)
        rng = np.random.default_rng(seed)
        n_p, n_c = len(spec.coords["participant"]), len(spec.coords["conversation"])
        shift = rng.standard_normal(sig_c.shape[0]) * np.sqrt(sig_p**2 / n_p + sig_c**2 / n_c)
        arrays["theta"] = arrays["theta"] - shift[:, None, None]
    return rows, arrays, (sig_p, sig_c)


def _averaging_weights(spec: Any, rows: pd.DataFrame):
    """Sparse ``(row, model x effect)`` and ``(row, model x category)`` matrices of the rows'
    cell sizes (a row of an uncategorised effect has no category), and the categories."""
    m, e = rows["model"].to_numpy(), rows["effect"].to_numpy()
    g = spec.effect_group[e]
    n = rows["n"].to_numpy().astype(float)
    n_m, n_e = len(spec.coords[MODEL]), len(spec.coords["effect"])
    groups = spec.coords["group"]
    cats = [x for x in groups if x != UNCATEGORISED]
    a_e = sp.csr_matrix((n, (np.arange(len(rows)), m * n_e + e)), shape=(len(rows), n_m * n_e))
    cat_of_row = np.array([cats.index(groups[x]) if groups[x] in cats else -1 for x in g])
    ok = cat_of_row >= 0
    a_g = sp.csr_matrix(
        (n[ok], (np.flatnonzero(ok), m[ok] * len(cats) + cat_of_row[ok])),
        shape=(len(rows), n_m * len(cats)),
    )
    return a_e, a_g, cats


def replay_posterior_contrasts(
    tree, baseline: str = ORIGINAL, ci_prob: float = 0.95
) -> pd.DataFrame:
    """Posterior prevalence and model - baseline contrasts with equal-tailed intervals.

    Returns a ``pandas.DataFrame``: ``model, level, category, code, quantity (prevalence |
    delta), mean, ci_low, ci_high, prob_below_zero`` (``prob_below_zero`` only for deltas).
    """
    post = tree["posterior"]
    rows = []
    for var, level in (("category_prevalence", "category"), ("prevalence", None)):
        if var not in post:
            continue
        da = post[var]
        dim = [d for d in da.dims if d not in ("chain", "draw", MODEL)][0]
        if var == "prevalence" and dim == "category" and "category_prevalence" in post:
            continue  # a category-level fit: category_prevalence already holds these rows
        level = level or dim
        models = [str(x) for x in da[MODEL].values]
        stacked = da.stack(sample_=("chain", "draw")).transpose("sample_", MODEL, dim).values
        for i, mname in enumerate(models):
            for j, lab in enumerate(da[dim].values):
                x = stacked[:, i, j]
                entry = {"model": mname, "level": level, "label": str(lab)}
                rows.append(
                    {
                        **entry,
                        "quantity": "prevalence",
                        "mean": float(np.mean(x)),
                        **_bounds(x, ci_prob),
                        "prob_below_zero": np.nan,
                    }
                )
                if baseline in models and mname != baseline:
                    d = x - stacked[:, models.index(baseline), j]
                    rows.append(
                        {
                            **entry,
                            "quantity": "delta",
                            "mean": float(np.mean(d)),
                            **_bounds(d, ci_prob),
                            "prob_below_zero": float(np.mean(d < 0)),
                        }
                    )
    out = pd.DataFrame(rows)
    out["ci_prob"] = ci_prob
    return out


def log_binomial_coefficients(n: np.ndarray, y: np.ndarray) -> float:
    """``sum_i log C(n_i, y_i)``."""
    return float((gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)).sum())


def replay_loglik(tree: xr.DataTree, spec: Any) -> xr.Dataset:
    """The ``log_likelihood`` group of a replay fit: ``y (chain, draw)``, the binomial
    log-likelihood of all cells per draw (what power-scaling needs; PyMC's
    ``compute_log_likelihood`` does not see the graph's Potential)."""
    post = tree["posterior"].to_dataset()
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    c = spec.cells
    names = ["theta", "beta_depth", "gamma_prior", "u_conversation", "u_participant"]
    x, p = _design(spec, c, {v: _posterior_array(post, v) for v in names if v in post})
    y, n = c["y"].to_numpy().astype(float), c["n"].to_numpy().astype(float)
    out = np.empty(len(p))
    chunk = max(1, 20_000_000 // max(len(c), 1))
    for lo in range(0, len(p), chunk):
        eta = x @ p[lo : lo + chunk].T  # (cell, draw)
        out[lo : lo + chunk] = y @ eta - n @ np.logaddexp(0.0, eta)
    out += log_binomial_coefficients(n, y)
    ds = xr.Dataset(
        {"y": (("chain", "draw"), out.reshape(n_chain, n_draw))},
        coords={"chain": post["chain"].values, "draw": post["draw"].values},
    )
    ds.attrs["description"] = (
        "binomial log-likelihood of all cells per draw: the input of the likelihood power-scaling"
    )
    return ds


def reported_replay_vars(tree: xr.DataTree) -> tuple[list[str], list[str]]:
    """``(parameters, prevalences)``: the posterior variables the replay fit reports (not the
    per-cluster effects; the gate is on the prevalences)."""
    post = tree["posterior"]
    params = [
        v
        for v in ("theta", "beta_depth", "gamma_prior", "sigma_conversation", "sigma_participant")
        if v in post.data_vars
    ]
    prevalences = [v for v in ("category_prevalence", "prevalence") if v in post.data_vars]
    return params, prevalences


def finish_replay_fit(
    tree: xr.DataTree, spec: Any, seed: int = 0, log_likelihood: bool = True
) -> xr.DataTree:
    """After sampling: the population prevalences as posterior variables, the diagnostics in
    attrs and, with ``log_likelihood``, the ``log_likelihood`` group (:func:`replay_loglik`)."""
    from ..inference.diagnostics import diagnose

    if log_likelihood:
        tree["log_likelihood"] = xr.DataTree(replay_loglik(tree, spec))

    pe, pg = replay_posterior_prevalence(tree, spec, seed=seed)
    post = tree["posterior"].to_dataset()
    # at category level pe would outer-join with pg into NaN rows (pe has "uncategorised")
    post = post.assign(
        category_prevalence=pg, **({} if spec.level == "category" else {"prevalence": pe})
    )
    tree["posterior"] = xr.DataTree(post)
    params, prevalences = reported_replay_vars(tree)
    tree.attrs.update(
        model="replay_prevalence",
        level=spec.level,
        seed=int(seed),
        n_cells=int(spec.n_cells),
        sampler=str(tree["posterior"].attrs.get("sampler", "")),
        n_rows=int(spec.cells["n"].sum()),
        depth_center=DEPTH_CENTER,
        depth_unit=DEPTH_UNIT,
        clustering_levels="cluster" if spec.single_level else "participant/conversation",
        divergences=int(tree["sample_stats"]["diverging"].sum()),
    )
    for suffix, names in (("", params), ("_prevalence", prevalences)):
        diag = diagnose(tree, var_names=names)
        tree.attrs[f"max_rhat{suffix}"] = float(diag["r_hat"].max())
        tree.attrs[f"min_ess_bulk{suffix}"] = float(diag["ess_bulk"].min())
        tree.attrs[f"min_ess_tail{suffix}"] = float(diag["ess_tail"].min())
    return tree
