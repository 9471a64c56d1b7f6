"""Sensitivity of derived (reported) quantities and the prior-refit helpers, on a conjugate
normal toy where the power-scaled posterior is known in closed form. numpy/ArviZ only."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats as _st

from delusion_bayes.models import refit as rf
from delusion_bayes.models.sensitivity import sensitivity_table
from delusion_bayes.models.sensitivity_reported import (
    COLUMNS,
    REFIT_NEEDED,
    reported_sensitivity,
)

TAU, SIGMA, N, YBAR = 1.0, 1.0, 4, 1.5


def _post(a_prior=1.0, a_like=1.0):
    """Mean and SD of the normal posterior with the prior N(0, TAU) raised to ``a_prior`` and the
    likelihood of N observations with mean YBAR raised to ``a_like``."""
    prec = a_prior / TAU**2 + a_like * N / SIGMA**2
    return a_like * N * YBAR / SIGMA**2 / prec, 1 / np.sqrt(prec)


def _toy(seed=1, draws=20000):
    m, s = _post()
    th = np.random.default_rng(seed).normal(m, s, (4, draws))
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"theta": (("chain", "draw"), th)}),
            "log_prior": xr.Dataset({"theta": (("chain", "draw"), -0.5 * th**2 / TAU**2)}),
            "log_likelihood": xr.Dataset({"y": (("chain", "draw"), -0.5 * N * (YBAR - th) ** 2)}),
        }
    )


def _closed_form_shift(which: str) -> float:
    """d E[exp(theta)] / d log2(alpha) at alpha = 1, over the posterior SD of exp(theta)."""

    def e_exp(a):
        m, s = _post(a, 1.0) if which == "prior" else _post(1.0, a)
        return np.exp(m + s**2 / 2)

    m, s = _post()
    sd = np.sqrt((np.exp(s**2) - 1) * np.exp(2 * m + s**2))
    eps = 1e-5
    return (e_exp(2**eps) - e_exp(2**-eps)) / (2 * eps) / sd


def test_derived_quantity_shift_matches_the_closed_form():
    dt = _toy()
    h = np.exp(dt["posterior"]["theta"])
    df = reported_sensitivity(dt, {("exp theta", "toy", ""): h})
    assert list(df.columns) == list(COLUMNS)
    # closed forms: prior -0.383, likelihood +0.236 SD per doubling of the power. Tolerance 0.02:
    # the importance-weighted mean over 80,000 draws; seeds 1-5 measured within 0.0031
    assert df["prior_mean_shift_sd"].iloc[0] == pytest.approx(_closed_form_shift("prior"), abs=0.02)
    assert df["likelihood_mean_shift_sd"].iloc[0] == pytest.approx(
        _closed_form_shift("likelihood"), abs=0.02
    )
    assert _closed_form_shift("prior") == pytest.approx(-0.383, abs=0.001)
    # both sensitivities above 0.05 on this toy (informative prior, informative data)
    assert df["verdict"].iloc[0] == "prior-data conflict"
    assert bool(df["pareto_k_ok"].iloc[0]) and np.isnan(df["refit_shift_sd"].iloc[0])


def test_a_parameter_scores_as_in_the_parameter_table():
    # the same weights: a parameter given as a "reported number" gets the CJS of sensitivity.csv
    dt = _toy(seed=2, draws=4000)
    df = reported_sensitivity(dt, {("theta", "toy", ""): dt["posterior"]["theta"]})
    par = sensitivity_table(dt, ["theta"]).set_index("parameter")
    # sensitivity_table rounds to 4 decimals (psense_summary's round_to)
    assert df["prior"].iloc[0] == pytest.approx(par.loc["theta", "prior"], abs=1e-4)
    assert df["likelihood"].iloc[0] == pytest.approx(par.loc["theta", "likelihood"], abs=1e-4)


def test_heavy_tailed_weights_say_refit_needed():
    # log prior draws log-normal with SD 3 on the log scale: the importance ratios' right tail is
    # very heavy (measured Pareto k 0.78 at this seed), so no verdict is trusted
    rng = np.random.default_rng(0)
    th = rng.normal(0, 1, (2, 2000))
    dt = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"theta": (("chain", "draw"), th)}),
            "log_prior": xr.Dataset(
                {"p": (("chain", "draw"), -np.exp(3 * rng.normal(size=(2, 2000))))}
            ),
            "log_likelihood": xr.Dataset({"y": (("chain", "draw"), -0.5 * th**2)}),
        }
    )
    df = reported_sensitivity(dt, {("theta", "toy", ""): dt["posterior"]["theta"]})
    assert df["pareto_k_prior"].iloc[0] > 0.7
    assert not df["pareto_k_ok"].iloc[0] and df["verdict"].iloc[0] == REFIT_NEEDED


def test_nan_draws_are_refused_with_their_names():
    dt = _toy(draws=100)
    bad = dt["posterior"]["theta"].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN draws.*'bad'"):
        reported_sensitivity(dt, {("bad", "toy", ""): bad})


def test_scaled_priors_multiply_the_scale():
    priors = {
        "mu_t50": {"dist": "Normal", "mu": 0.6, "sigma": 0.4},
        "sigma_log_k": {"dist": "Gamma", "alpha": 3.0, "beta": 4.0},
        "severity": {"dist": "ZeroSumNormal", "sigma": 0.5},
    }
    out = rf.scaled_priors(priors, ["mu_t50", "sigma_log_k"], 2.0)
    assert out["mu_t50"] == {"dist": "Normal", "mu": 0.6, "sigma": 0.8}
    assert out["sigma_log_k"]["beta"] == 2.0  # Gamma scale 1/beta doubled
    assert rf.scaled_priors(priors, ["severity"], 0.5)["severity"]["sigma"] == 0.25
    with pytest.raises(ValueError, match="'nope' is not in the prior table"):
        rf.scaled_priors(priors, ["nope"], 2.0)


def test_flagged_priors_map_parameters_to_the_prior_table():
    sens = pd.DataFrame(
        {
            "variable": ["t50", "L", "severity", "k"],
            "verdict": ["weak likelihood", "prior-data conflict", "-", "-"],
        }
    )
    priors = {n: {} for n in ("mu_t50", "sigma_t50", "log_L1", "severity", "mu_log_k")}
    assert rf.flagged_priors(sens, priors) == ["mu_t50", "sigma_t50", "log_L1"]


def test_refit_shifts_and_confirmations():
    rng = np.random.default_rng(3)
    x = xr.DataArray(rng.normal(0, 2, (2, 500)), dims=("chain", "draw"))
    sd = float(x.std())
    base = {("a", "k", ""): x, ("b", "k", ""): x}
    refits = {
        2.0: {("a", "k", ""): x + 1.0, ("b", "k", ""): x + 0.1},
        0.5: {("a", "k", ""): x - 0.2, ("b", "k", ""): x},
    }
    sh = rf.refit_shifts(base, refits).set_index("quantity")
    assert sh.loc["a", "refit_shift_sd"] == pytest.approx(1.0 / sd)
    assert sh.loc["a", "shift_x0.5"] == pytest.approx(-0.2 / sd)
    reported = pd.DataFrame(
        {
            "quantity": ["a", "b"],
            "kind": "k",
            "item": "",
            "verdict": ["prior-data conflict", "weak likelihood"],
            "refit_shift_sd": np.nan,
        }
    )
    res = rf.confirm(reported, sh.reset_index())
    # a moves 0.5 SD (>= 0.25): confirmed; b moves 0.05 SD: not
    assert (res["flagged"], res["confirmed"], res["moved_unflagged"]) == (2, 1, 0)
    assert res["table"]["refit_shift_sd"].notna().all()


@pytest.mark.parametrize(
    ("spec", "logpdf"),
    [
        ({"dist": "Normal", "mu": 0.3, "sigma": 1.7},
         lambda x, s: _st.norm.logpdf(x, s["mu"], s["sigma"])),
        ({"dist": "HalfNormal", "sigma": 0.8}, lambda x, s: _st.halfnorm.logpdf(x, 0, s["sigma"])),
        ({"dist": "Exponential", "lam": 2.5}, lambda x, s: _st.expon.logpdf(x, 0, 1 / s["lam"])),
        ({"dist": "Gamma", "alpha": 3.0, "beta": 1.5},
         lambda x, s: _st.gamma.logpdf(x, s["alpha"], 0, 1 / s["beta"])),
    ],
)  # fmt: skip
@pytest.mark.parametrize("alpha", rf.POWERS)
def test_powered_priors_are_the_density_raised_to_the_power(spec, logpdf, alpha):
    """log p_new(x) - alpha log p(x) is one constant over x (the normalising term): the refit's
    prior IS the prior to the power alpha, which is what power-scaling approximates."""
    x = np.linspace(0.05, 6.0, 40)
    new = rf.powered_priors({"p": spec}, ["p"], alpha)["p"]
    diff = logpdf(x, new) - alpha * logpdf(x, spec)
    assert np.ptp(diff) < 1e-10
    assert new["dist"] == spec["dist"]


def test_powered_priors_refuse_a_family_a_power_leaves():
    with pytest.raises(ValueError, match=r"'nu_p' \(StudentT\) stays in no family"):
        rf.powered_priors({"nu_p": {"dist": "StudentT", "nu": 3, "sigma": 1}}, ["nu_p"], 2.0)
    with pytest.raises(ValueError, match="'x' is not in the prior table"):
        rf.powered_priors({}, ["x"], 2.0)


def test_recall_and_precision_of_the_flag_and_its_proxy():
    """Five refitted numbers (one not refitted: left out): three moved >= 0.25 SD. The CJS flag
    marks two, one of which moved (recall 1/3, precision 1/2); the mean-shift proxy marks
    three, all moved (recall 1, precision 1)."""
    t = pd.DataFrame(
        {
            "verdict": ["weak", "-", "-", "weak", "-", "weak"],
            "prior_mean_shift_sd": [0.3, 0.4, -0.5, 0.1, 0.0, 0.9],
            "refit_shift_sd": [0.6, -0.3, 0.26, 0.1, 0.02, np.nan],
        }
    )
    r = rf.recall_precision(t)
    assert (r["n"], r["moved"]) == (5, 3)
    assert r["flag"] == {"flagged": 2, "caught": 1, "recall": 1 / 3, "precision": 0.5}
    assert r["proxy"] == {"flagged": 3, "caught": 3, "recall": 1.0, "precision": 1.0}


def test_proxy_agreement_is_one_when_the_refits_are_the_derivative():
    """A refit at power 2 that moves every number by exactly its predicted +d and at power 0.5
    by -d gives r = 1 and slope 1; half the prediction gives slope 0.5."""
    d = np.array([0.3, -0.1, 0.05, 0.6])
    t = pd.DataFrame({"prior_mean_shift_sd": d, "shift_x2": d, "shift_x0.5": -0.5 * d})
    a = rf.proxy_agreement(t)
    assert a["power_2"]["r"] == pytest.approx(1.0) and a["power_2"]["slope"] == pytest.approx(1.0)
    assert a["power_0.5"]["slope"] == pytest.approx(0.5) and a["power_0.5"]["n"] == 4
