"""Revisit policies, change-rate estimation and freshness (strategies/recrawl, issue #13)."""
import math

import numpy as np
import pytest
from scipy.stats import gamma

from strategies.recrawl import POLICIES, PageSet, get_policy
from strategies.recrawl import freshness as F
from strategies.recrawl.changeratio import change_ratio, synthetic_web
from strategies.recrawl.base import within_rounds
from strategies.recrawl.bayes import posterior_rate
from strategies.recrawl.cluster import Cluster, explained_share, url_pattern
from strategies.recrawl.estimate import (expired, improved_rate, mle_rate, naive_rate,
                                         prob_changed)
from strategies.recrawl.optimal import optimal_frequencies


def test_improved_estimator_exact_values():
    assert improved_rate(10, 6, 1.0) == pytest.approx(0.847, abs=5e-4)
    assert naive_rate(10, 6, 1.0) == pytest.approx(0.6)
    assert improved_rate(10, 10, 1.0) == pytest.approx(3.04, abs=5e-3)   # finite
    assert improved_rate(10, 0, 1.0) == 0.0
    assert improved_rate(10, 6, 2.0) == pytest.approx(0.847 / 2, abs=5e-4)   # per day at 2-day visits
    assert math.isnan(float(improved_rate(0, 0, 1.0)))                    # one visit: unknown


@pytest.mark.parametrize("n", [50, 100])
@pytest.mark.parametrize("r", [0.2, 1.0, 3.0])
def test_improved_estimator_is_unbiased_monte_carlo(n, r):
    rng = np.random.default_rng(7)
    interval = 1.0
    changes = rng.binomial(n, -math.expm1(-r * interval), 40_000)   # X: intervals with ≥ 1 change
    est = improved_rate(n, changes, interval)
    assert abs(est.mean() / r - 1) < 0.02


def test_irregular_intervals_mle_agrees_with_improved_on_regular_visits_and_recovers_rate():
    rng = np.random.default_rng(3)
    r = 0.7
    t = rng.uniform(0.2, 2.0, 4000)                      # irregular revisit intervals
    changed = rng.random(4000) < -np.expm1(-r * t)
    assert mle_rate(t[changed], t[~changed]) == pytest.approx(r, rel=0.05)
    assert mle_rate([1.0] * 5, []) == math.inf
    assert mle_rate([], [1.0] * 5) == 0.0


def test_expired_set_uses_probability_of_change_since_last_visit():
    rates = np.array([0.1, 1.0, 3.0, np.nan])
    assert prob_changed(1.0, 1.0) == pytest.approx(1 - math.exp(-1))
    assert expired(rates, 1.0, 0.5).tolist() == [False, True, True, False]


def _gamma_pages(n=10_000):
    # the rates at the midpoints of n quantiles: Gamma(0.5, scale 2) to quadrature accuracy
    return gamma.ppf((np.arange(n) + 0.5) / n, 0.5, scale=2.0)


@pytest.mark.parametrize("per_page,targets", [
    (1.0, {"optimal": 0.765, "uniform": 0.728, "proportional": 0.623}),
    (0.5, {"optimal": 0.650, "uniform": 0.614, "proportional": 0.423}),
    (2.0, {"optimal": 0.862, "uniform": 0.825, "proportional": 0.781}),
])
def test_simulated_freshness_matches_the_issue_targets(per_page, targets):
    rates = _gamma_pages()
    got = {name: F.average(rates, get_policy(name).frequencies(PageSet(rates), per_page * len(rates)))[0]
           for name in targets}
    for name, want in targets.items():
        assert got[name] == pytest.approx(want, abs=0.01), (name, got)
    # closed forms over the Gamma(k=0.5, θ=2) law: uniform ∫0^I (1+2t)^-½ dt / I, proportional (1-e^-x)/x
    interval = 1 / per_page
    assert got["uniform"] == pytest.approx((math.sqrt(1 + 2 * interval) - 1) / interval, abs=2e-3)
    assert got["proportional"] == pytest.approx(-math.expm1(-interval) / interval, abs=2e-3)
    assert got["optimal"] > got["uniform"] > got["proportional"]


def test_optimal_spends_the_budget_and_drops_pages_too_fast_for_it():
    rates = np.array([0.01, 0.5, 1.0, 50.0])
    f = optimal_frequencies(rates, budget=1.0)
    assert f.sum() == pytest.approx(1.0, rel=1e-6)
    assert f[3] == 0.0 and f[1] > 0 and f[2] > 0
    # no reallocation of a small step between two pages improves freshness
    base = F.freshness(rates, f).sum()
    for i, j in [(1, 2), (2, 1), (0, 1), (1, 0)]:
        g = f.copy()
        g[i] += 1e-3
        g[j] -= 1e-3
        assert F.freshness(rates, g).sum() <= base + 1e-9


def test_monte_carlo_freshness_agrees_with_analytic():
    rng = np.random.default_rng(5)
    rates = rng.gamma(0.5, 2.0, 5000)
    for name in ("uniform", "optimal", "proportional"):
        f = get_policy(name).frequencies(PageSet(rates), len(rates))
        assert F.simulate(rates, f, 50.0, rng) == pytest.approx(F.average(rates, f)[0], abs=0.01)


def test_age_formula_against_monte_carlo():
    lam, f = 2.0, 1.0
    rng = np.random.default_rng(11)
    since = rng.uniform(0, 1 / f, 400_000)                 # time since last visit
    first = rng.exponential(1 / lam, since.size)           # first change after the visit
    assert np.mean(np.maximum(since - first, 0)) == pytest.approx(F.age(lam, f), rel=0.02)


def test_importance_keeps_important_fast_pages_fresher_than_optimal():
    rates = np.array([5.0, 0.2, 0.2, 0.2])
    w = np.array([100.0, 1.0, 1.0, 1.0])
    pages = PageSet(rates, weights=w)
    imp = get_policy("importance").frequencies(pages, 2.0)
    opt = get_policy("optimal").frequencies(pages, 2.0)
    assert imp[0] > opt[0]
    assert F.average(rates, imp, w)[0] > F.average(rates, opt, w)[0]


def test_every_policy_stays_within_budget():
    rng = np.random.default_rng(2)
    rates, feats, host = synthetic_web(600, 6, "features", rng)
    pages = PageSet(rates, weights=rng.random(600), groups=host, features=feats,
                    visits=np.full(600, 3.0), changes=rng.integers(0, 4, 600).astype(float))
    for name in POLICIES:
        f = get_policy(name).frequencies(pages, 150.0)
        assert f.sum() <= 150.0 + 1e-6 and f.sum() > 100.0, name
        assert (f >= 0).all()


def test_url_pattern():
    assert url_pattern("http://a.test:80/news/p17.html") == "/news/*.html"
    assert url_pattern("http://a.test/shop/item.php?id=3") == "/shop/*.php?"


def test_cluster_beats_sampling_when_change_follows_features_across_hosts():
    rng = np.random.default_rng(1)
    rates, feats, host = synthetic_web(3000, 30, "features", rng)
    clusters = Cluster(k=30).group_ids(PageSet(rates, features=feats))
    cl = change_ratio(clusters, rates, 600, 2, 8, np.random.default_rng(2))
    sa = change_ratio(host, rates, 600, 2, 8, np.random.default_rng(2))
    assert cl > sa + 0.1, (cl, sa)


def test_bayes_estimate_shrinks_few_visits_toward_the_crawls_rates():
    rng = np.random.default_rng(4)
    rates = np.r_[np.zeros(400), rng.lognormal(0, 0.7, 1300), rng.lognormal(math.log(24), 0.3, 300)]
    n = np.full(rates.size, 3)
    x = rng.binomial(3, -np.expm1(-rates))
    est = posterior_rate(n, x, 1.0)
    by_x = [est[x == k][0] for k in range(4)]
    assert 0 < by_x[0] < by_x[1] < by_x[2] < by_x[3]          # never 0, monotone in X
    assert by_x[3] > improved_rate(3, 3, 1.0)                 # not saturated at ln(2n + 1)
    assert np.isfinite(posterior_rate([0, 3], [0, 3], [np.nan, 1.0])).all()   # n = 0: the prior's
    # the point: optimal acting on it keeps the copy fresher than on the paper's estimate,
    # and than uniform (budget half a visit per page per round, ≤ one visit per round)
    fresh = {name: F.average(rates, within_rounds(get_policy("optimal"), PageSet(e), rates.size / 2, 1.0))[0]
             for name, e in (("bayes", est), ("improved", improved_rate(n, x, 1.0)))}
    uniform = F.average(rates, np.full(rates.size, 0.5))[0]
    assert fresh["bayes"] > fresh["improved"] + 0.01 and fresh["bayes"] > uniform, (fresh, uniform)


def test_within_rounds_caps_at_one_visit_per_round_and_spends_the_rest():
    rates = np.array([50.0, 1.0, 2.0, 3.0])
    f = within_rounds(get_policy("proportional"), PageSet(rates), 2.0, cycle=1.0)
    assert f[0] == pytest.approx(1.0) and f.sum() == pytest.approx(2.0)
    assert f[1:] == pytest.approx([1 / 6, 2 / 6, 3 / 6])     # the rest, still proportional
    f = within_rounds(get_policy("optimal"), PageSet(np.array([0.5, 0.6, 0.01, 30.0])), 3.0, 1.0)
    assert f.max() <= 1.0 + 1e-9 and f.sum() == pytest.approx(3.0, rel=1e-6)


def test_explained_share_ignores_chance_levels_and_sees_the_driving_feature():
    rng = np.random.default_rng(0)
    driver = rng.integers(0, 4, 2000)
    y = np.array([0.0, 0.2, 0.6, 1.0])[driver] + rng.normal(0, 0.1, 2000)
    assert explained_share(driver, y) > 0.9
    assert explained_share(rng.integers(0, 40, 2000), y) < 0.02   # 40 random levels explain nothing


@pytest.mark.parametrize("driver", ["features", "host"])
def test_cluster_learns_which_features_drive_change(driver):
    rates, feats, host = synthetic_web(3000, 30, driver, np.random.default_rng(1))
    nan = np.full(len(rates), np.nan)

    def groups(visits, changes):     # re-clustered on the history sampled so far
        return Cluster(k=30).group_ids(PageSet(nan, features=feats, visits=visits, changes=changes))
    cl = change_ratio(groups, rates, 600, 2, 8, np.random.default_rng(2))
    sa = change_ratio(host, rates, 600, 2, 8, np.random.default_rng(2))
    if driver == "features":
        assert cl > sa + 0.1, (cl, sa)
    else:                            # clusters become hosts: roughly a tie
        assert abs(cl - sa) < 0.08, (cl, sa)
