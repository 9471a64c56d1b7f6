"""nutpie's diagonal against its low-rank mass-matrix adaptation on one of the package's models.

    .venv/bin/python experiments/bench/bench_adaptation.py [--model joint] [--preset paper_like]
        [--seed 0] [--draws 1000] [--tune 500] [--chains 4]

Compiles the model once, samples it with ``adaptation=diag`` and ``adaptation=low_rank`` (same
seed, the model's own target_accept) and prints, per adaptation, the wall time, leapfrog steps per
draw, divergences, the minimum bulk ESS and maximum R-hat over the posterior's parameters (the
per-model-day ``trajectory``/``stage`` deterministics left out) and ESS per gradient, then the
ratios low_rank / diag. docs/dev/models.md ("Speed") quotes its numbers.
"""

from __future__ import annotations

import argparse
import time
import warnings


def run(model: str, preset: str, seed: int, draws: int, tune: int, chains: int) -> dict:
    import arviz as az
    import nutpie

    from delusion_bayes.data import simulate_study
    from delusion_bayes.models.build import build_model
    from delusion_bayes.models.registry import model_def
    from delusion_bayes.models.spec import build_spec

    ds = simulate_study(preset, seed=seed)
    compiled = nutpie.compile_pymc_model(build_model(build_spec(ds, model)))
    out = {}
    for adaptation in ("diag", "low_rank"):
        t = time.perf_counter()
        dt = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=min(chains, 2),
            seed=seed,
            progress_bar=False,
            adaptation=adaptation,
            target_accept=model_def(model).target_accept,
        )
        wall = time.perf_counter() - t
        post = dt["posterior"].to_dataset()
        keep = [v for v in post.data_vars if not {"day"} & set(post[v].dims)]
        ess, rhat = az.ess(post[keep]), az.rhat(post[keep])
        steps = float(dt["sample_stats"]["n_steps"].mean())
        min_ess = min(float(ess[v].min()) for v in keep)
        out[adaptation] = {
            "wall_s": wall,
            "steps_per_draw": steps,
            "divergences": int(dt["sample_stats"]["diverging"].sum()),
            "min_ess": min_ess,
            "max_rhat": max(float(rhat[v].max()) for v in keep),
            "ess_per_gradient": min_ess / (steps * chains * draws),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="joint")
    ap.add_argument("--preset", default="paper_like")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=500)
    ap.add_argument("--chains", type=int, default=4)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    res = run(a.model, a.preset, a.seed, a.draws, a.tune, a.chains)
    print(
        f"{a.model}, {a.preset} seed {a.seed}, {a.chains} x {a.draws} after {a.tune} tuning steps"
    )
    for name, r in res.items():
        print(
            f"  {name:9s} wall {r['wall_s']:6.1f} s  steps/draw {r['steps_per_draw']:5.1f}  "
            f"divergences {r['divergences']}  min ESS {r['min_ess']:6.0f}  "
            f"max R-hat {r['max_rhat']:.4f}  ESS/gradient {r['ess_per_gradient']:.4f}"
        )
    lr, dg = res["low_rank"], res["diag"]
    print(
        f"  low_rank / diag: wall {lr['wall_s'] / dg['wall_s']:.2f}x, "
        f"ESS/gradient {lr['ess_per_gradient'] / dg['ess_per_gradient']:.2f}x, "
        f"ESS per second {(lr['min_ess'] / lr['wall_s']) / (dg['min_ess'] / dg['wall_s']):.2f}x"
    )


if __name__ == "__main__":
    main()
