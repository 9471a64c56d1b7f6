"""Posterior quantities of the replay prevalence model: population prevalence per model x
code/category and contrasts against the original transcript, and the post-processing of a fit
(:func:`finish_replay_fit`; the model: :mod:`delusion_bayes.models.replay`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit

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


def replay_posterior_prevalence(
    tree,
    spec: Any,
    target: str = "population",
    n_nodes: int = 16,
    seed: int = 0,
) -> tuple[xr.DataArray, xr.DataArray]:
    """Posterior prevalence per ``(model, effect)`` and ``(model, category)``.

    The cell-size-weighted mean of ``logit^-1(eta)`` over the study's cells, per draw.

    ``target="population"`` (default): the participant and conversation intercepts are integrated
    out, ``E[logit^-1(eta_fixed + u + v)]`` with ``u + v ~ Normal(0, sigma_p^2 + sigma_c^2)``
    (Gauss-Hermite, ``n_nodes`` nodes): the prevalence among new participants with this study's
    design, the superpopulation quantity the cluster bootstrap's interval is about (and
    ``simulate_replay``'s ``true_prevalence``). The intercepts are zero-sum, so the population
    mean is ``theta`` minus the intercepts' unconstrained mean, drawn (``seed``) from its
    ``Normal(0, sigma_p^2/P + sigma_c^2/C)`` law. ``target="sample"``: the fitted intercepts of the
    study's own participants (in-sample prevalence; narrower).
    """
    if target not in ("population", "sample"):
        raise ValueError(f"target must be 'population' or 'sample', got {target!r}")
    import scipy.sparse as sp

    post = (
        tree["posterior"].to_dataset()
        if hasattr(tree["posterior"], "to_dataset")
        else tree["posterior"]
    )
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    theta = _posterior_array(post, "theta")
    beta = _posterior_array(post, "beta_depth")
    gamma = _posterior_array(post, "gamma_prior")
    uc = _posterior_array(post, "u_conversation")
    single = "u_participant" not in post  # one clustering level: no participant term
    up = (
        np.zeros(uc.shape[:1] + (len(spec.coords["participant"]),))
        if single
        else _posterior_array(post, "u_participant")
    )
    c = spec.cells
    m = c["model"].to_numpy()
    e = c["effect"].to_numpy()
    g = spec.effect_group[e]
    n = c["n"].to_numpy().astype(float)
    n_m, n_e = len(spec.coords[MODEL]), len(spec.coords["effect"])
    groups = spec.coords["group"]
    cats = [x for x in groups if x != UNCATEGORISED]
    col_e = m * n_e + e
    a_e = sp.csr_matrix((n, (np.arange(len(c)), col_e)), shape=(len(c), n_m * n_e))
    cat_of_cell = np.array([cats.index(groups[x]) if groups[x] in cats else -1 for x in g])
    ok = cat_of_cell >= 0
    a_g = sp.csr_matrix(
        (n[ok], (np.flatnonzero(ok), m[ok] * len(cats) + cat_of_cell[ok])),
        shape=(len(c), n_m * len(cats)),
    )
    den_e = np.asarray(a_e.sum(0)).ravel()
    den_g = np.asarray(a_g.sum(0)).ravel()
    total = n_chain * n_draw
    prev_e = np.empty((total, n_m * n_e))
    prev_g = np.empty((total, n_m * len(cats)))
    chunk = max(1, 20_000_000 // max(len(c), 1))
    pi, ci = c["participant"].to_numpy(), c["conversation"].to_numpy()
    depth, prior = c["depth"].to_numpy(), c["prior"].to_numpy()
    sig_c = _posterior_array(post, "sigma_conversation")
    sig_p = np.zeros_like(sig_c) if single else _posterior_array(post, "sigma_participant")
    nodes, weights = np.polynomial.hermite.hermgauss(n_nodes)
    weights = weights / np.sqrt(np.pi)
    if target == "population":
        chunk = max(1, chunk // n_nodes)
    if target == "population" and not spec.single_level:
        # zero-sum intercepts: theta = mu + mean(w_p) + mean(w_c); draw the means to get mu
        # (the single-level graph's intercepts are i.i.d.: theta is the location already)
        rng = np.random.default_rng(seed)
        n_p, n_c = up.shape[1], uc.shape[1]
        shift = rng.standard_normal(total) * np.sqrt(sig_p**2 / n_p + sig_c**2 / n_c)
        theta = theta - shift[:, None, None]
    for lo in range(0, total, chunk):
        sl = slice(lo, min(lo + chunk, total))
        fixed = (
            theta[sl][:, m, e]
            + beta[sl][:, m, g] * depth
            + gamma[sl][:, m, g] * (prior - spec.prior_center)
        )
        if target == "sample":
            p = expit(fixed + up[sl][:, pi] + uc[sl][:, ci])
        else:
            scale = np.sqrt(2.0 * (sig_p[sl] ** 2 + sig_c[sl] ** 2))[:, None]
            p = np.zeros_like(fixed)
            for x, w in zip(nodes, weights, strict=True):
                p += w * expit(fixed + scale * x)
        prev_e[sl] = np.asarray((a_e.T @ p.T).T) / np.where(den_e > 0, den_e, np.nan)
        prev_g[sl] = np.asarray((a_g.T @ p.T).T) / np.where(den_g > 0, den_g, np.nan)
    coords = {"chain": post["chain"].values, "draw": post["draw"].values, MODEL: spec.coords[MODEL]}
    pe = xr.DataArray(
        prev_e.reshape(n_chain, n_draw, n_m, n_e),
        dims=("chain", "draw", MODEL, spec.level),
        coords={**coords, spec.level: spec.coords["effect"]},
        name="prevalence",
    )
    pg = xr.DataArray(
        prev_g.reshape(n_chain, n_draw, n_m, len(cats)),
        dims=("chain", "draw", MODEL, "category"),
        coords={**coords, "category": cats},
        name="category_prevalence",
    )
    return pe, pg


def replay_posterior_contrasts(
    tree, baseline: str = ORIGINAL, ci_prob: float = 0.95
) -> pd.DataFrame:
    """Posterior prevalence and model - baseline contrasts with equal-tailed intervals.

    Returns
    -------
    pandas.DataFrame
        ``model, level, category, code, quantity (prevalence | delta), mean, ci_low, ci_high,
        prob_below_zero`` (``prob_below_zero`` only for deltas).
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
                rows.append({**entry, "quantity": "prevalence", "mean": float(np.mean(x)),
                             **_bounds(x, ci_prob), "prob_below_zero": np.nan})  # fmt: skip
                if baseline in models and mname != baseline:
                    d = x - stacked[:, models.index(baseline), j]
                    rows.append({**entry, "quantity": "delta", "mean": float(np.mean(d)),
                                 **_bounds(d, ci_prob),
                                 "prob_below_zero": float(np.mean(d < 0))})  # fmt: skip
    out = pd.DataFrame(rows)
    out["ci_prob"] = ci_prob
    return out


def log_binomial_coefficients(n: np.ndarray, y: np.ndarray) -> float:
    """``sum_i log C(n_i, y_i)``: the binomial likelihood's constant."""
    from scipy.special import gammaln

    return float((gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)).sum())


def replay_loglik(tree: xr.DataTree, spec: Any) -> xr.Dataset:
    """The ``log_likelihood`` group of a replay fit: ``y (chain, draw)``, the binomial
    log-likelihood of all cells at each draw, ``sum_i log Binomial(y_i | n_i, logit^-1 eta_i)``
    with ``eta`` from the module's parameters (``theta``, the clusters' intercepts, the slopes).

    One total per draw is what power-scaling the likelihood needs (``psense`` sums the group);
    PyMC's ``compute_log_likelihood`` sees observed variables only, and the graph's likelihood
    is a Potential. ``eta = X @ params`` with the cells' sparse design matrix ``X``, in chunks of
    draws (the Potential's vectorised graph in PyTensor's Python mode took minutes at
    DelusionEval size, fancy indexing per parameter 3x longer than the sparse product)."""
    import scipy.sparse as sp

    post = tree["posterior"].to_dataset()
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    c = spec.cells
    m, e = c["model"].to_numpy(), c["effect"].to_numpy()
    mg = m * len(spec.coords["group"]) + spec.effect_group[e]
    # (posterior variable, column of each cell within the variable, coefficient)
    blocks = [("theta", m * len(spec.coords["effect"]) + e, 1.0),
              ("u_conversation", c["conversation"].to_numpy(), 1.0),
              ("beta_depth", mg, c["depth"].to_numpy()),
              ("gamma_prior", mg, c["prior"].to_numpy() - spec.prior_center)]  # fmt: skip
    if "u_participant" in post:
        blocks.append(("u_participant", c["participant"].to_numpy(), 1.0))
    cols, vals, params, offset = [], [], [], 0
    for name, col, coef in blocks:
        a = _posterior_array(post, name)
        a = a.reshape(a.shape[0], -1)
        cols.append(col + offset)
        vals.append(np.broadcast_to(coef, (len(c),)))
        params.append(a)
        offset += a.shape[1]
    rows = np.tile(np.arange(len(c)), len(blocks))
    x = sp.csr_matrix((np.concatenate(vals), (rows, np.concatenate(cols))), shape=(len(c), offset))
    p = np.concatenate(params, axis=1)
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
    ds.attrs["description"] = ("binomial log-likelihood of all cells per draw: the input of "
                               "the likelihood power-scaling")  # fmt: skip
    return ds


def reported_replay_vars(tree: xr.DataTree) -> tuple[list[str], list[str]]:
    """``(parameters, prevalences)``: the posterior variables the replay fit reports (its
    diagnostics and sensitivity table), not the per-cluster effects; the gate is on the
    prevalences (``docs/design-notes.md#modelsreplay_posteriorpy``)."""
    post = tree["posterior"]
    params = [v for v in ("theta", "beta_depth", "gamma_prior", "sigma_conversation",
                          "sigma_participant") if v in post.data_vars]  # fmt: skip
    prevalences = [v for v in ("category_prevalence", "prevalence") if v in post.data_vars]
    return params, prevalences


def finish_replay_fit(tree: xr.DataTree, spec: Any, seed: int = 0) -> xr.DataTree:
    """After sampling (:func:`delusion_bayes.models.fit`): the population prevalences as
    posterior variables and the diagnostics of the parameters and of the prevalences in attrs."""
    from ..inference.diagnostics import diagnose

    pe, pg = replay_posterior_prevalence(tree, spec, seed=seed)
    post = tree["posterior"].to_dataset()
    # at category level pe and pg share a dim name with other coords (pe also has the
    # uncategorised group): keep pg only, else xarray would outer-join them into NaN rows
    post = post.assign(
        category_prevalence=pg, **({} if spec.level == "category" else {"prevalence": pe})
    )
    tree["posterior"] = xr.DataTree(post)
    params, prevalences = reported_replay_vars(tree)
    tree.attrs.update(
        model="replay_prevalence", level=spec.level, seed=int(seed), n_cells=int(spec.n_cells),
        sampler=str(tree["posterior"].attrs.get("sampler", "")),
        n_rows=int(spec.cells["n"].sum()), depth_center=DEPTH_CENTER, depth_unit=DEPTH_UNIT,
        clustering_levels="cluster" if spec.single_level else "participant/conversation",
        divergences=int(tree["sample_stats"]["diverging"].sum()),
    )  # fmt: skip
    for suffix, names in (("", params), ("_prevalence", prevalences)):
        diag = diagnose(tree, var_names=names)
        tree.attrs[f"max_rhat{suffix}"] = float(diag["r_hat"].max())
        tree.attrs[f"min_ess_bulk{suffix}"] = float(diag["ess_bulk"].min())
        tree.attrs[f"min_ess_tail{suffix}"] = float(diag["ess_tail"].min())
    return tree
