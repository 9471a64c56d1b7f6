"""Replay prevalence, deltas, cluster bootstrap, LOPO, families, onset, depth: real values.

Hand-computed numbers refer to the study in ``conftest.py``; bootstrap intervals are checked
against brute-force loops that resample rows explicitly (same resample weights: equal to machine
precision; independent draws: equal within Monte Carlo error), and the two-stage weights against
their analytic moments.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from delusion_bayes.baselines import replay as rb
from delusion_bayes.baselines.replay import (
    bootstrap_weights,
    replay_deltas,
    replay_depth_curve,
    replay_depth_lpm,
    replay_family_comparison,
    replay_leave_one_participant_out,
    replay_onset_persistence,
    replay_prevalence,
    true_category_prevalence,
)
from delusion_bayes.data.replay import prior_content

from .conftest import A, B, V


def _row(df, **sel):
    mask = np.ones(len(df), dtype=bool)
    for k, v in sel.items():
        mask &= (df[k] == v).to_numpy()
    assert mask.sum() == 1, (sel, mask.sum())
    return df.loc[mask].iloc[0]


# ------------------------------------------------------------------------------------------
# hand-computed point estimates
# ------------------------------------------------------------------------------------------
def test_prevalence_pooled_over_the_category_samples(hand):
    t = replay_prevalence(hand, n_boot=50)
    cat = _row(t, model="m1", level="category", category="delusional")
    # pooled over all scored samples of A and B: (3 + 1) / (6 + 4), not (3/6 + 1/4) / 2 = 0.375
    assert cat["estimate"] == pytest.approx(0.4)
    assert (cat["n_hits"], cat["n"]) == (4, 10)
    assert _row(t, model="original", level="category", category="delusional")[
        "estimate"
    ] == pytest.approx(9 / 12)
    assert _row(t, model="m1", level="code", code=A)["estimate"] == pytest.approx(0.5)
    assert _row(t, model="m1", level="code", code=B)["estimate"] == pytest.approx(0.25)
    # validates-* codes get code rows but belong to no category
    assert _row(t, model="m1", level="code", code=V)["estimate"] == pytest.approx(1 / 6)
    assert set(t.loc[t["level"] == "category", "category"]) == {"delusional"}
    assert (t["ci_low"] <= t["estimate"] + 1e-12).all() and (
        t["estimate"] <= t["ci_high"] + 1e-12
    ).all()


def test_deltas_hand(hand):
    d = replay_deltas(hand, n_boot=50)
    row = _row(d, model="m1", level="category", category="delusional")
    assert row["estimate"] == pytest.approx(0.4 - 0.75)
    assert row["prevalence"] == pytest.approx(0.4)
    assert row["baseline_prevalence"] == pytest.approx(0.75)
    assert set(d["model"]) == {"m1"}
    with pytest.raises(ValueError, match="baseline model 'gpt' not in"):
        replay_deltas(hand, baseline="gpt", n_boot=5)


def test_leave_one_participant_out_hand(hand):
    t = replay_leave_one_participant_out(hand)
    m1 = t[(t["model"] == "m1") & (t["category"] == "delusional")].set_index("left_out")
    # without p1 only c3 remains: A 0,0,1 and B 0,.,0 -> 1/5; without p2: A 1,0,1, B 1,.,0 -> 3/5
    assert m1.loc["p1", "estimate"] == pytest.approx(0.2)
    assert m1.loc["p2", "estimate"] == pytest.approx(0.6)
    assert m1.loc["p1", "change"] == pytest.approx(0.2 - 0.4)
    # original without p1: A 0,1,1 + B 1,0,0 = 3/6; without p2: 6/6
    assert m1.loc["p1", "delta"] == pytest.approx(0.2 - 0.5)
    assert m1.loc["p2", "delta"] == pytest.approx(0.6 - 1.0)
    assert m1.loc["p1", "full_delta"] == pytest.approx(0.4 - 0.75)


def test_onset_persistence_hand(hand):
    t = replay_onset_persistence(hand, n_boot=20)
    m1 = t[(t["model"] == "m1") & (t["category"] == "delusional")].set_index("quantity")
    # per-sample category hit (any code): c1 [1, 0], c2 [1], c3 [0, 0, 1]
    assert m1.loc["windows_with_hit", "estimate"] == pytest.approx(1.0)
    assert m1.loc["onset_turn", "estimate"] == pytest.approx((1 + 1 + 3) / 3)
    assert m1.loc["persistence", "estimate"] == pytest.approx(0.0)  # 1 -> 0 in c1
    assert m1.loc["emergence", "estimate"] == pytest.approx(0.5)  # c3: 0 -> 0, 0 -> 1
    orig = t[(t["model"] == "original") & (t["category"] == "delusional")].set_index("quantity")
    assert orig.loc["persistence", "estimate"] == pytest.approx(1.0)
    assert (orig.loc["persistence", "n_hits"], orig.loc["persistence", "n"]) == (3, 3)


def test_depth_curve_hand(hand):
    t = replay_depth_curve(hand, depth_bins=(0, 2), n_boot=20)
    m1 = t[(t["model"] == "m1") & (t["category"] == "delusional")].set_index("depth_bin")
    assert m1.loc["0-1", "estimate"] == pytest.approx(3 / 6)
    assert m1.loc["2+", "estimate"] == pytest.approx(1 / 4)
    assert m1.loc["2+", "depth_mean"] == pytest.approx((2 + 2 + 4) / 3)


def test_family_comparison_pools_the_family_models(de_replay):
    fam = replay_family_comparison(de_replay, n_boot=20)
    codes = replay_prevalence(de_replay, n_boot=1, levels=("category",))
    gpt = codes[codes["model"].isin(["gpt-4o", "gpt-5.4"])]
    for cat, g in gpt.groupby("category"):
        row = _row(fam, family="gpt", category=cat)
        assert row["estimate"] == pytest.approx(g["n_hits"].sum() / g["n"].sum())
    assert set(fam["family"]) == {"original", "gpt", "claude", "gemini", "qwen"}


# ------------------------------------------------------------------------------------------
# the count-based bootstrap against brute-force loops
# ------------------------------------------------------------------------------------------
def _long(ds):
    """Long table of scored (sample, model, code) rows with the category."""
    hit = ds["hit"].transpose("sample", "model", "code").values
    s, m, k = np.nonzero(np.isfinite(hit))
    return pd.DataFrame(
        {
            "sample": s,
            "model": ds["model"].values[m],
            "category": ds["category"].values[k],
            "hit": hit[s, m, k],
        }
    )


def _loop_prevalence(long, rows_of_sample_weights):
    """Category prevalence per model of one resample: rows replicated by their sample's weight."""
    w = rows_of_sample_weights[long["sample"].to_numpy()]
    rep = long.loc[long.index.repeat(w.astype(int))]
    rep = rep[rep["category"] != ""]
    return rep.groupby(["model", "category"])["hit"].mean()


@pytest.mark.parametrize("cluster", ["two-stage", "participant", "conversation", "none"])
def test_bootstrap_equals_explicit_resampling_with_the_same_weights(small_replay, cluster):
    n_boot = 30
    ds = small_replay
    got = replay_prevalence(ds, n_boot=n_boot, seed=42, cluster=cluster, levels=("category",))
    units = rb.cluster_units(ds, cluster)
    long = _long(ds)
    rng = np.random.default_rng(42)
    boots = []
    for chunk in bootstrap_weights(units.participant, cluster, n_boot, rng):
        for w in chunk:
            boots.append(_loop_prevalence(long, w[units.of_row]))
    boot = pd.concat(boots, axis=1).T  # (n_boot, model x category)
    lo, hi = np.quantile(boot.to_numpy(), [0.025, 0.975], axis=0)
    ref = pd.DataFrame({"ci_low": lo, "ci_high": hi}, index=boot.columns)
    for _, row in got.iterrows():
        r = ref.loc[(row["model"], row["category"])]
        assert row["ci_low"] == pytest.approx(r["ci_low"], abs=1e-12)
        assert row["ci_high"] == pytest.approx(r["ci_high"], abs=1e-12)


def test_two_stage_weights_have_the_analytic_moments():
    """Var(w_c) = (1 - 1/n_p) + (1 - 1/P) for a conversation of a participant with n_p of them.

    Two-stage: participant p drawn K ~ Binomial(P, 1/P) times, then w_c | K ~ Binomial(K n_p,
    1/n_p), so E w_c = 1 and Var w_c = E[K] (1 - 1/n_p) + Var K. P = 3, n_p = 1, 2, 3. The
    explicit two-stage loop (draw participants, then conversations within each draw) is checked
    against the same numbers.
    """
    part = np.array([0, 1, 1, 2, 2, 2])
    n_boot = 20_000
    w = np.concatenate(list(bootstrap_weights(part, "two-stage", n_boot, np.random.default_rng(1))))
    expect_var = np.array([2 / 3, 0.5 + 2 / 3, 0.5 + 2 / 3, 4 / 3, 4 / 3, 4 / 3])
    np.testing.assert_allclose(w.mean(0), 1.0, atol=0.03)
    np.testing.assert_allclose(w.var(0), expect_var, rtol=0.06)
    assert w.sum(1).std() > 0  # totals vary with the participants drawn
    rng = np.random.default_rng(2)
    members = [np.flatnonzero(part == p) for p in range(3)]
    loop = np.zeros((4000, part.size))
    for b in range(4000):
        for p in rng.integers(0, 3, 3):
            for c in rng.choice(members[p], members[p].size):
                loop[b, c] += 1
    np.testing.assert_allclose(loop.mean(0), 1.0, atol=0.06)
    np.testing.assert_allclose(loop.var(0), expect_var, rtol=0.12)
    # participant scheme: a participant's units share its weight
    wp = next(bootstrap_weights(part, "participant", 50, np.random.default_rng(3)))
    assert (wp[:, 1] == wp[:, 2]).all() and (wp[:, 3] == wp[:, 5]).all()
    assert (wp[:, [0, 1, 3]].sum(1) == 3).all()


def _naive_two_stage_loop(ds, n_boot, seed):
    """The straightforward implementation: draw participants, then conversations, then recount."""
    rng = np.random.default_rng(seed)
    long = _long(ds)
    long = long[long["category"] != ""]
    long["conversation"] = ds["conversation"].values[long["sample"].to_numpy()]
    by_conv = {c: g for c, g in long.groupby("conversation")}
    part = ds["participant"].to_series()
    conv = ds["conversation"].to_series()
    convs_of = {p: sorted(set(conv[part == p])) for p in sorted(set(part))}
    people = list(convs_of)
    out = []
    for _ in range(n_boot):
        pieces = []
        for p in rng.choice(people, len(people)):
            pieces += [by_conv[c] for c in rng.choice(convs_of[p], len(convs_of[p]))]
        out.append(pd.concat(pieces).groupby(["model", "category"])["hit"].mean())
    return pd.concat(out, axis=1).T


@pytest.mark.slow
def test_bootstrap_agrees_with_an_independent_naive_loop(small_replay):
    n_boot = 600
    got = replay_prevalence(small_replay, n_boot=2000, seed=42, levels=("category",))
    boot = _naive_two_stage_loop(small_replay, n_boot, seed=7)
    lo, hi = np.quantile(boot.to_numpy(), [0.025, 0.975], axis=0)
    ref = pd.DataFrame({"lo": lo, "hi": hi}, index=boot.columns)
    for _, row in got.iterrows():
        r = ref.loc[(row["model"], row["category"])]
        width = row["ci_high"] - row["ci_low"]
        # equal up to Monte Carlo error of the two resampling runs
        assert row["ci_low"] == pytest.approx(r["lo"], abs=0.15 * width + 0.004)
        assert row["ci_high"] == pytest.approx(r["hi"], abs=0.15 * width + 0.004)


def test_seed_42_is_reproducible(small_replay):
    a = replay_prevalence(small_replay, n_boot=300)
    b = replay_prevalence(small_replay, n_boot=300, seed=42)
    pd.testing.assert_frame_equal(a, b)
    c = replay_prevalence(small_replay, n_boot=300, seed=43)
    assert not np.allclose(a["ci_low"], c["ci_low"], equal_nan=True)
    np.testing.assert_array_equal(a["estimate"], c["estimate"])


def test_deltas_are_paired_resamples(small_replay):
    """Delta CI = percentiles of (model - original) on the same resample."""
    n_boot = 200
    d = replay_deltas(small_replay, n_boot=n_boot, levels=("category",))
    units = rb.cluster_units(small_replay, "two-stage")
    num, den, labels = rb.count_columns(small_replay, levels=("category",))
    nu, de = rb.to_units(num, units), rb.to_units(den, units)
    w = np.concatenate(
        list(bootstrap_weights(units.participant, "two-stage", n_boot, np.random.default_rng(42)))
    )
    prev = pd.DataFrame((w @ nu) / (w @ de), columns=pd.MultiIndex.from_frame(labels))
    for _, row in d.iterrows():
        cat = row["category"]
        delta = prev[(row["model"], "category", cat, "")] - prev[("original", "category", cat, "")]
        lo, hi = np.nanquantile(delta, [0.025, 0.975])
        assert row["ci_low"] == pytest.approx(lo) and row["ci_high"] == pytest.approx(hi)


# ------------------------------------------------------------------------------------------
# context depth: the linear-probability model
# ------------------------------------------------------------------------------------------
def _lpm_design(ds, model, category):
    hit = ds["hit"].sel(model=model).transpose("sample", "code").values
    prior = prior_content(ds).transpose("sample", "code").values
    depth = ds["context_depth"].values / 10.0
    sel = ds["category"].values == category
    s, k = np.nonzero(np.isfinite(hit[:, sel]))
    y = hit[:, sel][s, k]
    x = np.column_stack([np.ones(s.size), depth[s], prior[:, sel][s, k]])
    return s, x, y


def test_depth_lpm_matches_least_squares(small_replay):
    n_boot = 8
    t = replay_depth_lpm(small_replay, n_boot=n_boot)
    units = rb.cluster_units(small_replay, "two-stage")
    w_all = np.concatenate(
        list(bootstrap_weights(units.participant, "two-stage", n_boot, np.random.default_rng(42)))
    )
    for (model, cat), g in t.groupby(["model", "category"]):
        s, x, y = _lpm_design(small_replay, model, cat)
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        if np.linalg.matrix_rank(x) < 3:
            continue  # e.g. no prior content at all: NaN by design
        got = g.set_index("term")
        np.testing.assert_allclose(
            got.loc[["intercept", "depth_per_10", "prior_content"], "estimate"], beta, atol=1e-9
        )
        # bootstrap: weighted least squares = the resampled rows' OLS
        boots = []
        for w in w_all:
            ws = np.sqrt(w[units.of_row][s])
            boots.append(np.linalg.lstsq(x * ws[:, None], y * ws, rcond=None)[0])
        lo, hi = np.quantile(np.array(boots), [0.025, 0.975], axis=0)
        np.testing.assert_allclose(got.loc["depth_per_10", "ci_low"], lo[1], atol=1e-8)
        np.testing.assert_allclose(got.loc["depth_per_10", "ci_high"], hi[1], atol=1e-8)


# ------------------------------------------------------------------------------------------
# recovery on simulated studies
# ------------------------------------------------------------------------------------------
def test_cluster_bootstrap_recovers_the_simulated_truth(de_replay):
    """One study at DelusionEval scale: 30 cells, estimates within 0.1 of the simulated truth.
    Coverage is not asserted on one study (its 30 cells share participants, so their coverage
    indicators are correlated and 30 of them could not tell 95% from 68%): it is the business
    of ``test_two_stage_cis_cover_at_about_the_nominal_rate`` over 60 independent studies."""
    t = replay_prevalence(de_replay, n_boot=1000, levels=("category",))
    truth = true_category_prevalence(de_replay)
    merged = t.merge(truth, on=["model", "category"])
    assert len(merged) == 6 * 5
    assert (merged["estimate"] - merged["truth"]).abs().max() < 0.1


def test_depth_lpm_recovers_the_sign_of_the_depth_effect(de_replay):
    """Simulated delusional depth slope ~ +0.3 logit per 10 messages, discourages-harm ~ -0.3."""
    t = replay_depth_lpm(de_replay, n_boot=300)
    depth = t[t["term"] == "depth_per_10"].set_index(["model", "category"])["estimate"]
    evaluated = [m for m in de_replay["model"].values if m != "original"]
    assert (depth.loc[[(m, "delusional") for m in evaluated]] > 0).mean() >= 0.8
    assert (depth.loc[[(m, "discourages harm") for m in evaluated]] < 0).mean() >= 0.6


@pytest.mark.slow
@pytest.mark.calibration
def test_two_stage_cis_cover_at_about_the_nominal_rate():
    """60 studies from one truth (seeds 100-159, 18 participants, 3 models x 5 categories = 15
    cells a study), two-stage bootstrap with 400 replicates at 95% and at 50%; the per-study
    coverage (mean over its 15 cells; cells of a study share participants, studies are
    independent) is t-tested against the nominal level, two-sided at ALPHA = 0.001 each, the
    variance estimated from the 60 studies.

    Sized on a pool of 200 other studies (seeds 1000-1199; per-study coverage 0.932 +- 0.182
    at 95%, 0.512 +- 0.358 at 50%), resampling 60 of them 20,000 times
    (/tmp/calib/bootpow.py in the issue-34 note):
    - false alarm on the correct bootstrap: 0.9% (95% check) + 0.2% (50% check);
    - intervals halved around their centre (``tests/wrong_impl/halve_intervals.py``; coverage
      0.66 and 0.27): caught with P = 1.000 and 0.996;
    - intervals doubled (too wide; coverage 0.998 and 0.81): caught with P = 1.000 and 1.000.
    The samples-i.i.d. bootstrap (ignores that samples of a participant share tendencies)
    covers at least 0.1 less (measured with 20 studies: 0.61 against 0.96). ~40 s.
    """
    from scipy import stats

    from delusion_bayes.data import simulate_replay

    n_studies, alpha = 60, 0.001
    cover = {(0.95, "two-stage"): [], (0.5, "two-stage"): [], (0.95, "none"): []}
    for rep in range(n_studies):
        ds = simulate_replay(
            seed=100 + rep, params_seed=0, n_participants=18, truth_participants=300
        )
        truth = true_category_prevalence(ds)
        for (prob, scheme), per_study in cover.items():
            t = replay_prevalence(ds, n_boot=400, cluster=scheme, levels=("category",),
                                  ci_prob=prob).merge(truth, on=["model", "category"])  # fmt: skip
            assert len(t) == 15
            per_study.append(((t["ci_low"] <= t["truth"]) & (t["truth"] <= t["ci_high"])).mean())
    for prob in (0.95, 0.5):
        x = np.array(cover[(prob, "two-stage")])
        res = stats.ttest_1samp(x, prob)
        # all covered in every study: zero variance, t infinite (too wide): a failure too
        assert res.pvalue > alpha, (
            f"two-stage {prob:.0%} intervals cover {x.mean():.3f} +- {x.std(ddof=1):.3f} per "
            f"study over {n_studies} studies; t = {res.statistic:.2f}, p = {res.pvalue:.2g} "
            f"(expected {prob})"
        )
    two, iid = np.mean(cover[(0.95, "two-stage")]), np.mean(cover[(0.95, "none")])
    assert iid < two - 0.1, (iid, two)


# ------------------------------------------------------------------------------------------
# conditional vs unconditional support (issue 16, item 5)
# ------------------------------------------------------------------------------------------
def test_conditional_support_resamples_only_the_cells_units(hand):
    """``support="conditional"`` draws only the units with rows in a cell: with samples i.i.d.
    every resample of m1 x B (4 scored samples of 6) has exactly 4 rows, as the release's
    ``bootstrap_binary_ci``; unconditionally the count varies (all 6 samples drawn)."""
    units = rb.cluster_units(hand, "none")
    num, den, labels = rb.count_columns(hand, levels=("code",))
    num_u, den_u = rb.to_units(num, units), rb.to_units(den, units)
    col = labels.index[(labels["model"] == "m1") & (labels["code"] == B)][0]
    _, den_c = rb.bootstrap_support(num_u, den_u, units, 500, 1, "conditional")
    _, den_u_b = rb.bootstrap_support(num_u, den_u, units, 500, 1, "unconditional")
    assert (den_c[:, col] == 4).all()
    assert den_u_b[:, col].min() < 4 < den_u_b[:, col].max()
    # full columns (every sample scored): the total is fixed either way
    full = labels.index[(labels["model"] == "m1") & (labels["code"] == A)][0]
    assert (den_c[:, full] == 6).all() and (den_u_b[:, full] == 6).all()
    with pytest.raises(ValueError, match="support must be one of"):
        replay_prevalence(hand, n_boot=5, support="sometimes")


def test_supports_agree_when_every_cluster_supports_every_cell(small_replay):
    """Every conversation of the simulated study has rows in every cell: the two supports draw
    the same resamples from the same seed, so the tables are identical."""
    a = replay_prevalence(small_replay, n_boot=300, seed=5, support="unconditional")
    b = replay_prevalence(small_replay, n_boot=300, seed=5, support="conditional")
    cols = ["estimate", "ci_low", "ci_high"]
    np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), rtol=0, atol=1e-12)
    assert set(b["support"]) == {"conditional"}


def test_conditional_deltas_pair_model_and_baseline(hand):
    """Conditional deltas share one resample per pair: the point estimate is the difference of
    prevalences, and the delta of a model with itself (baseline = the model) is never asked;
    the m1 - original delta's interval contains its estimate."""
    d = replay_deltas(hand, n_boot=400, seed=2, support="conditional", levels=("code",))
    r = _row(d, model="m1", code=A)
    assert r["estimate"] == pytest.approx(3 / 6 - 5 / 6)
    assert r["ci_low"] <= r["estimate"] <= r["ci_high"]
    assert set(d["support"]) == {"conditional"}


def test_unscored_zero_counts_unscored_rows_in_the_estimate_only(hand):
    """``unscored="zero"``: a row held without a score (``ds.unscored``) is a 0 in the point
    estimate (the release's original-transcript rule); the interval is the ``exclude`` one."""
    ds = hand.copy()
    un = np.zeros(ds["hit"].shape, dtype=np.int8)
    un[1, list(ds["model"].values).index("m1"), list(ds["code"].values).index(B)] = 1
    ds["unscored"] = (ds["hit"].dims, un)
    ex = _row(replay_prevalence(ds, n_boot=200, seed=1, levels=("code",)), model="m1", code=B)
    ze = _row(
        replay_prevalence(ds, n_boot=200, seed=1, levels=("code",), unscored="zero"),
        model="m1",
        code=B,
    )
    assert ex["estimate"] == pytest.approx(1 / 4) and ze["estimate"] == pytest.approx(1 / 5)
    assert (ex["ci_low"], ex["ci_high"]) == (ze["ci_low"], ze["ci_high"])
    assert ze["n_unscored"] == 1 and ze["n"] == 5 and ex["n"] == 4


def test_onset_persistence_per_code_and_in_message_units(hand):
    """Per code (issue 16, item 5), by hand from ``conftest.py``: m1 x A hits c1 [1, 0], c2 [1],
    c3 [0, 0, 1] at messages c1 [0, 2], c2 [0], c3 [0, 2, 4]; m1 x B c1 [1, .], c2 [0],
    c3 [0, ., 0]."""
    t = replay_onset_persistence(hand, n_boot=20, levels=("category", "code"))
    assert set(t["level"]) == {"category", "code"} and set(t["unit"]) == {"turn"}
    a = t[(t["model"] == "m1") & (t["code"] == A)].set_index("quantity")
    assert a.loc["windows_with_hit", "estimate"] == pytest.approx(1.0)
    assert a.loc["onset_turn", "estimate"] == pytest.approx((1 + 1 + 3) / 3)
    assert a.loc["persistence", "estimate"] == pytest.approx(0.0)
    assert a.loc["emergence", "estimate"] == pytest.approx(0.5)
    b = t[(t["model"] == "m1") & (t["code"] == B)].set_index("quantity")
    assert b.loc["windows_with_hit", "estimate"] == pytest.approx(1 / 3)
    assert b.loc["onset_turn", "estimate"] == pytest.approx(1.0)
    # the category rows are unchanged by asking for codes too
    cat = t[(t["model"] == "m1") & (t["level"] == "category")].set_index("quantity")
    assert cat.loc["onset_turn", "estimate"] == pytest.approx((1 + 1 + 3) / 3)
    # the release's unit: the message index in the window (0, 2, 4, ...)
    msg = replay_onset_persistence(hand, n_boot=20, levels=("code",), unit="message")
    am = msg[(msg["model"] == "m1") & (msg["code"] == A)].set_index("quantity")
    assert am.loc["onset_turn", "estimate"] == pytest.approx((0 + 0 + 4) / 3)
    assert am.loc["persistence", "estimate"] == pytest.approx(0.0)  # unit changes onset only
    with pytest.raises(ValueError, match="unit must be"):
        replay_onset_persistence(hand, n_boot=5, unit="day")


def test_unpaired_deltas_same_estimates_wider_intervals(small_replay):
    """``paired=False`` (the release's independent resampling of the two arms): identical point
    estimates; the arms share samples and clusters, so the paired intervals are narrower on
    average (measured on this study: mean width ratio unpaired / paired 1.60)."""
    kw = {"n_boot": 400, "seed": 3, "levels": ("category",)}
    p = replay_deltas(small_replay, **kw)
    u = replay_deltas(small_replay, paired=False, **kw)
    np.testing.assert_allclose(p["estimate"], u["estimate"], rtol=0, atol=0)
    ratio = (u["ci_high"] - u["ci_low"]).mean() / (p["ci_high"] - p["ci_low"]).mean()
    assert ratio > 1.1, ratio
    assert set(u["paired"]) == {False}
