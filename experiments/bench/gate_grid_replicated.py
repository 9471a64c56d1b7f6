"""Do the replicated stage's default fits pass their gate over the designs labs run (issue 54,
item 5)? Replicated studies (many conversations per chatbot) from 2 to 12 chatbots, 1 to 30
conversations, 8 to 30 turns, 1 to 4 raters, human raters or one LLM judge, with and without
missing turns, each fitted exactly as ``experiment=replicated`` fits it:

- the behaviour model (:func:`delusion_bayes.stages.replicated.fit_bayes`, every item, the
  stage's scoring rule, gated on its reported variables as the stage gates it);
- the trajectory model with a conversation level
  (:func:`delusion_bayes.stages.replicated_trajectory.fit_trajectory`, when the study has the
  recognition item; gated on every parameter),

both with the default config's sampler and the gate's automatic refits. Every study is SIMULATED
(``simulate_replicated``); the numbers describe the simulator, not real chatbots.

    .venv/bin/python experiments/bench/gate_grid_replicated.py [--designs all] [--out F.csv]
        [--fits behaviour,trajectory]

One row per design and fit goes to ``--out`` as it finishes; the end prints the pass rate per
fit and the table of docs/dev/models.md ("Gate over replicated designs").
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path
from typing import Any

#: name -> (preset, overrides); every axis of the issue's grid reaches its ends somewhere
DESIGNS: dict[str, tuple[str, dict[str, Any]]] = {
    "m2_c1_t8_r1_judge": ("replicated", {"n_models": 2, "n_conversations": 1, "n_turns": 8,
                                         "n_raters": 1, "rater_kind": "judge"}),
    "m4_c1_t12_r2": ("replicated", {"n_conversations": 1}),
    "m4_c12_t12_r2": ("replicated", {}),
    "m12_c5_t12_r2": ("replicated", {"n_models": 12, "n_conversations": 5}),
    "m6_c30_t8_r1_judge": ("replicated", {"n_models": 6, "n_conversations": 30, "n_turns": 8,
                                          "n_raters": 1, "rater_kind": "judge"}),
    "m3_c10_t30_r4": ("replicated", {"n_models": 3, "n_conversations": 10, "n_turns": 30,
                                     "n_raters": 4}),
    "m8_c3_t20_r3_miss20": ("replicated", {"n_models": 8, "n_conversations": 3, "n_turns": 20,
                                           "n_raters": 3, "missing_share": 0.2}),
    "spiral_like": ("spiral_like", {}),
}  # fmt: skip
#: the stage's two kinds of default fit: the behaviour model, the trajectory model
FITS = ("behaviour", "trajectory")
FIELDS = (
    *("design", "fit", "n_models", "n_conversations", "n_turns", "n_raters", "rater_kind"),
    *("status", "attempts", "divergences", "max_rhat", "min_ess", "seconds", "note"),
)


def build(name: str):
    """The simulated study of design ``name`` (seed 0; few truth conversations: the gate
    needs no truth)."""
    from delusion_bayes.data import simulate_replicated

    preset, over = DESIGNS[name]
    return simulate_replicated(preset, seed=0, n_truth=10, **over)


def _row(name: str, fit: str, ds, verdict: dict, attempts: list, secs: float) -> dict:
    return {
        "design": name,
        "fit": fit,
        **{k: ds.sizes[d] for k, d in (("n_models", "model"), ("n_turns", "turn"),
                                       ("n_conversations", "conversation"), ("n_raters", "rater"))},
        "rater_kind": json.loads(ds.attrs["design"])["rater_kind"],
        "status": "passed" if verdict["passed"] else "failed",
        "attempts": len(attempts) or 1,
        "divergences": verdict["divergences"],
        "max_rhat": round(float(verdict["max_rhat"]), 4),
        "min_ess": round(float(verdict["min_ess"])),
        "seconds": round(secs, 1),
        "note": "; ".join(verdict["reasons"]),
    }  # fmt: skip


def fit_design(name: str, ds, cfg: Any, fits: tuple[str, ...] = FITS) -> list[dict]:
    """The stage's default fits of one design (those of ``fits``), gated as the stage gates
    them."""
    from delusion_bayes.baselines.replicated import rule_of
    from delusion_bayes.baselines.replicated_agreement import milestone_item
    from delusion_bayes.baselines.replicated_config import ReplicatedConfig
    from delusion_bayes.inference.diagnostics import diagnose, gate
    from delusion_bayes.models.behaviour_posterior import reported_vars
    from delusion_bayes.stages.replicated import fit_bayes
    from delusion_bayes.stages.replicated_trajectory import fit_trajectory

    c = ReplicatedConfig()
    rows = []
    if "behaviour" in fits:
        t0 = time.perf_counter()
        tree = fit_bayes(ds, cfg, c, rule_of(ds, c.rule).name)
        verdict = gate(
            tree, diagnose(tree, cfg.inference, var_names=reported_vars(tree)), cfg.inference
        )
        attempts = json.loads(tree.attrs.get("gate_attempts", "[]") or "[]")
        rows.append(_row(name, "behaviour", ds, verdict, attempts, time.perf_counter() - t0))
    if "trajectory" in fits and c.trajectory_model and not milestone_item(ds)[1]:
        t0 = time.perf_counter()
        tree = fit_trajectory(ds, cfg, c)
        verdict = json.loads(tree.attrs["gate_verdict"])
        attempts = json.loads(tree.attrs.get("gate_attempts", "[]") or "[]")
        fit = tree.attrs["trajectory_model"]
        rows.append(_row(name, fit, ds, verdict, attempts, time.perf_counter() - t0))
    return rows


def table(rows: list[dict]) -> str:
    """Markdown: one line per design, a column per fit, and the pass rate."""
    import pandas as pd

    df = pd.DataFrame(rows)
    cell = df.apply(
        lambda r: (
            f"{'pass' if r['status'] == 'passed' else '**fail**'} {r['max_rhat']:.3f} / "
            f"{r['min_ess']:,} / {r['divergences']} ({r['attempts']} att., {r['seconds']:.0f} s)"
        ),
        axis=1,
    )
    wide = df.assign(cell=cell).pivot(index="design", columns="fit", values="cell").fillna("-")
    size = df.groupby("design").first()
    wide.insert(0, "chatbots x conversations x turns x raters", [
        f"{size.loc[d, 'n_models']} x {size.loc[d, 'n_conversations']} x "
        f"{size.loc[d, 'n_turns']} x {size.loc[d, 'n_raters']} {size.loc[d, 'rater_kind']}"
        for d in wide.index
    ])  # fmt: skip
    wide = wide.reset_index()
    lines = ["| " + " | ".join(wide.columns) + " |", "|" + "---|" * len(wide.columns)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in wide.itertuples(index=False)]
    ok = int((df["status"] == "passed").sum())
    return (
        f"SIMULATED studies; default fits gate-clean: {ok} of {len(df)} "
        f"({ok / len(df):.0%}); R-hat / min ESS / divergences of the returned attempt\n\n"
        + "\n".join(lines)
    )


def main(argv: list[str] | None = None) -> None:
    from delusion_bayes.config import compose

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", default="all", help=f"comma list of {list(DESIGNS)} or all")
    ap.add_argument("--out", default="/tmp/gate_grid_replicated.csv")
    ap.add_argument("--fits", default=",".join(FITS), help=f"comma list of {list(FITS)}")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. sampler.draws=200")
    a = ap.parse_args(argv)
    names = list(DESIGNS) if a.designs == "all" else a.designs.split(",")
    unknown = sorted(set(names) - set(DESIGNS))
    if unknown:
        raise SystemExit(f"--designs: unknown {unknown}; expected some of {list(DESIGNS)}")
    fits = tuple(a.fits.split(","))
    if set(fits) - set(FITS):
        raise SystemExit(f"--fits: unknown {sorted(set(fits) - set(FITS))}; expected {FITS}")
    cfg = compose(list(a.overrides))
    rows: list[dict] = []
    with open(Path(a.out), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        for i, name in enumerate(names, 1):
            for row in fit_design(name, build(name), cfg, fits):
                w.writerow(row)
                fh.flush()
                print(f"[{i}/{len(names)}] " + json.dumps(row), flush=True)
                rows.append(row)
    print("\n" + table(rows))


if __name__ == "__main__":
    main()
