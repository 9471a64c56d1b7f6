"""Benchmark: the Bayesian replay prevalence fit at DelusionEval scale, with a timing breakdown.

    nice -n 10 .venv/bin/python experiments/bench/bench_replay_bayes.py [--draws 500] [--tune 300]
        [--chains 2] [--level code] [--reference]

Study: ``simulate_replay(seed=0, scale="delusioneval")`` (18 participants, 123 conversations,
6,637 samples, 16 codes, the original transcript + 5 models). The fit is
:func:`delusion_bayes.models.replay.fit_replay_model` with the ``conf/replay/default.yaml``
settings (level ``code``, nutpie, 2 chains x 500 draws after 300 tuning steps, target_accept 0.9,
4 depth x 3 prior-content bins). Printed in one run:

- the size of the problem: cells (binomial likelihood terms), unconstrained parameters;
- wall and CPU time of each step: aggregation into cells, graph, nutpie compile, sampling, derived
  prevalences; CPU time is ``time.process_time`` (all threads of this process) and the load
  average is printed, because wall time on a shared machine says little;
- gradient evaluations: leapfrog steps per draw (``n_steps``), tree depth, step size, CPU time per
  gradient evaluation;
- the gate on the result: divergences, max R-hat and min bulk/tail ESS per chain over the
  parameters and over the derived prevalences;
- the fit is what :func:`~delusion_bayes.models.replay.fit_replay_model` runs
  (``pm.sample(nuts_sampler="nutpie")`` = ``nutpie.compile_pymc_model`` + ``nutpie.sample``),
  called step by step here so that compile and sampling are timed apart;
- the exactness check of the sampling coordinates: the log density of the sampled model equals the
  docstring's parameterisation (``build_reference_model``) at a random point.

``--reference`` also samples the docstring's parameterisation directly (the pre-change model:
``pm.Binomial``, zero-sum ``u`` and ``v``, uncentred covariates) for the before/after comparison
(about 6 minutes more on 2 free cores).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


class Clock:
    """Wall and CPU time of named steps."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []
        self._w, self._c = time.perf_counter(), time.process_time()

    def lap(self, name: str) -> tuple[float, float]:
        w, c = time.perf_counter(), time.process_time()
        self.rows.append((name, w - self._w, c - self._c))
        self._w, self._c = w, c
        return self.rows[-1][1:]

    def print(self) -> None:
        tot_w = sum(r[1] for r in self.rows)
        tot_c = sum(r[2] for r in self.rows)
        for name, w, c in self.rows + [("total", tot_w, tot_c)]:
            print(f"  {name:<34s} {w:8.1f} s wall {c:8.1f} s CPU")


def step_stats(tree) -> dict[str, float]:
    out: dict[str, float] = {}
    for group, label in (("warmup_sample_stats", "tune"), ("sample_stats", "draws")):
        if group not in tree.children:
            continue
        s = tree[group]
        n = s["n_steps"].values
        out[f"{label}_grads"] = float(n.sum())
        out[f"{label}_steps_mean"] = float(n.mean())
        out[f"{label}_steps_median"] = float(np.median(n))
        out[f"{label}_depth_mean"] = float(s["depth"].values.mean())
        out[f"{label}_divergences"] = int(s["diverging"].values.sum())
        out[f"{label}_step_size"] = float(s["step_size"].values[:, -1].mean())
    return out


def gate(tree, var_names, chains: int) -> dict[str, float]:
    import arviz as az

    summ = az.summary(tree, var_names=var_names, kind="diagnostics")
    worst = summ["r_hat"].astype(float).nlargest(3)
    return {
        "worst": ", ".join(f"{k} {v:.3f}" for k, v in worst.items()),
        "max_rhat": float(summ["r_hat"].max()),
        "min_ess_bulk_per_chain": float(summ["ess_bulk"].min()) / chains,
        "min_ess_tail_per_chain": float(summ["ess_tail"].min()) / chains,
    }


def exactness(spec, seed: int = 0) -> float:
    """|log density(sampled coordinates) - log density(docstring parameterisation)| at a point."""
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ZeroSumTransform

    from delusion_bayes.models.replay import (
        build_reference_model,
        build_replay_model,
        to_sampling_coordinates,
    )

    rng = np.random.default_rng(seed)
    n_m, n_e = len(spec.coords["model"]), len(spec.coords["effect"])
    n_g = len(spec.coords["group"])
    n_p, n_c = len(spec.coords["participant"]), len(spec.coords["conversation"])
    theta = rng.normal(-2, 1, (n_m, n_e))
    beta, gamma = rng.normal(0, 0.3, (n_m, n_g)), rng.normal(0, 0.5, (n_m, n_g))
    sp, sc = 0.7, 0.3
    up = rng.normal(0, sp, n_p)
    up -= up.mean()
    v = rng.normal(0, sc, n_c)
    v -= v.mean()

    def zs(x):
        return ZeroSumTransform([-1]).forward(pt.as_tensor(x)).eval()

    common = {
        "beta_depth": beta,
        "gamma_prior": gamma,
        "sigma_participant_log__": np.log(sp),
        "sigma_conversation_log__": np.log(sc),
        "u_participant_zerosum__": zs(up),
    }
    ref = build_reference_model(spec).compile_logp()(
        {**common, "theta": theta, "u_conversation_zerosum__": zs(v)}
    )
    to = to_sampling_coordinates(spec, theta, beta, gamma, up, v)
    new = build_replay_model(spec).compile_logp()(
        {
            **common,
            "theta_centred": to["theta_centred"],
            "conversation_total_zerosum": zs(to["conversation_total"]),
        }
    )
    return abs(float(new) - float(ref))


def run(ds, args, reference: bool) -> None:
    import nutpie
    import xarray as xr

    from delusion_bayes.models.replay import (
        build_reference_model,
        build_replay_model,
        replay_model_spec,
        replay_posterior_prevalence,
    )

    label = "reference (docstring parameterisation, pm.Binomial)" if reference else "default"
    print(
        f"\n== {label}: {args.chains} chains x {args.draws} draws, {args.tune} tuning steps, "
        f"level {args.level}, target_accept {args.target_accept}"
    )
    clock = Clock()
    spec = replay_model_spec(ds, level=args.level)
    clock.lap("aggregate into cells")
    model = (build_reference_model if reference else build_replay_model)(spec)
    n_par = int(sum(np.prod(model.initial_point()[v.name].shape) for v in model.value_vars))
    clock.lap("build pm.Model")
    compiled = nutpie.compile_pymc_model(model)
    clock.lap("nutpie compile (numba)")
    tree = nutpie.sample(
        compiled,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=args.chains,
        seed=args.seed,
        target_accept=args.target_accept,
        progress_bar=False,
        save_warmup=True,
    )
    _, c_sample = clock.lap("sampling (chains in parallel)")
    from pymc.sampling.mcmc import patch_nutpie_idata

    patch_nutpie_idata(tree, model, sampling_time=0.0)
    _, pg = replay_posterior_prevalence(tree, spec, seed=args.seed)
    post = tree["posterior"].to_dataset().assign(category_prevalence=pg)
    tree["posterior"] = xr.DataTree(post)
    clock.lap("derived prevalences")
    load = os.getloadavg()
    print(
        f"cells {spec.n_cells:,} (from {int(spec.cells['n'].sum()):,} sample x model x code "
        f"verdicts); unconstrained parameters {n_par}"
    )
    clock.print()
    print(f"  load average at the end (1/5/15 min): {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    st = step_stats(tree)
    grads = st.get("tune_grads", 0.0) + st["draws_grads"]
    print(
        f"gradient evaluations: {grads:,.0f} ({st.get('tune_grads', 0):,.0f} tuning); per draw "
        f"mean {st['draws_steps_mean']:.1f}, median {st['draws_steps_median']:.0f}, tree depth "
        f"{st['draws_depth_mean']:.2f}, step size {st['draws_step_size']:.3f}; "
        f"{1e3 * c_sample / grads:.2f} ms CPU per gradient evaluation"
    )
    print(
        f"divergences: {st['draws_divergences']} after tuning "
        f"({st.get('tune_divergences', 0)} during tuning)"
    )
    names = ["theta", "beta_depth", "gamma_prior", "sigma_participant", "sigma_conversation"]
    g_par = gate(tree, names, args.chains)
    g_prev = gate(tree, ["category_prevalence"], args.chains)
    print(
        f"parameters: max R-hat {g_par['max_rhat']:.4f}, min ESS per chain bulk "
        f"{g_par['min_ess_bulk_per_chain']:.0f} tail {g_par['min_ess_tail_per_chain']:.0f}; "
        f"highest R-hat: {g_par['worst']}"
    )
    print(
        f"category prevalences: max R-hat {g_prev['max_rhat']:.4f}, min ESS per chain bulk "
        f"{g_prev['min_ess_bulk_per_chain']:.0f} tail {g_prev['min_ess_tail_per_chain']:.0f}"
    )


def main() -> None:
    from delusion_bayes.data import simulate_replay
    from delusion_bayes.models.replay import replay_model_spec

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--tune", type=int, default=300)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--target-accept", type=float, default=0.9)
    ap.add_argument("--level", default="code")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", action="store_true", help="also sample the pre-change model")
    ap.add_argument(
        "--scale", default="delusioneval", help="simulated study size (small: a smoke test)"
    )
    args = ap.parse_args()

    ds = simulate_replay(seed=0, scale=args.scale, truth_participants=0)
    print(
        f"study: {ds.sizes['sample']} samples, {ds.sizes['model']} models (incl. original), "
        f"{ds.sizes['code']} codes; {os.cpu_count()} CPUs"
    )
    diff = exactness(replay_model_spec(ds, level=args.level))
    print(
        f"exactness: |log p(sampled coordinates) - log p(docstring parameterisation)| = {diff:.1e}"
    )
    run(ds, args, reference=False)
    if args.reference:
        run(ds, args, reference=True)


if __name__ == "__main__":
    main()
