"""The ChangeRatio experiment of Cho & Ntoulas 2002 (and Tan & Mitra's comparison): over
download cycles, a policy samples `sample_size` pages of every group, measures the share
of the sample that changed since its last download, and spends the rest of the cycle's
budget on whole groups in decreasing order of that share. ChangeRatio = changed pages
downloaded / pages downloaded (samples included), averaged over cycles after the first.

`synthetic_web` builds pages whose change rate depends either on page features that cut
across hosts (`driver="features"`: the URL pattern / content type / size of a page kind) or
on the host alone (`driver="host"`), so `sampling` (groups = hosts) and `cluster` (groups =
k-means clusters on the features, re-clustered every cycle with the feature weights the
sampled history supports) can be compared on both.
"""
from __future__ import annotations

import numpy as np

KINDS = (  # (url pattern, content type, mean size, depth, rate per cycle)
    ("/news/*.html", "text/html", 8_000, 1, 3.0),
    ("/blog/*.html", "text/html", 20_000, 2, 0.5),
    ("/docs/*.html", "text/html", 40_000, 3, 0.05),
    ("/files/*.pdf", "application/pdf", 300_000, 4, 0.0),
)


def synthetic_web(n_pages, n_hosts, driver, rng):
    """(rates per cycle, features dict, host ids)."""
    host = rng.integers(0, n_hosts, n_pages)
    kind = rng.integers(0, len(KINDS), n_pages)
    feats = {"url_pattern": [KINDS[k][0] for k in kind], "content_type": [KINDS[k][1] for k in kind],
             "size": np.array([KINDS[k][2] for k in kind]) * rng.lognormal(0, 0.3, n_pages),
             "depth": np.array([KINDS[k][3] for k in kind]) + rng.integers(0, 2, n_pages),
             "host": [f"h{h}" for h in host]}
    if driver == "features":
        rates = np.array([KINDS[k][4] for k in kind]) * rng.lognormal(0, 0.3, n_pages)
    elif driver == "host":
        host_rate = rng.choice([k[4] for k in KINDS], n_hosts)
        rates = host_rate[host] * rng.lognormal(0, 0.3, n_pages)
    else:
        raise ValueError(f"driver must be features or host, not {driver!r}")
    return rates, feats, host


def change_ratio(group_ids, rates, budget, sample_size, cycles, rng):
    """Mean ChangeRatio over cycles 2..cycles of the sample-then-greedy policy on groups.
    `group_ids`: the groups (an array), or a function (visits, changes) -> groups called at
    every cycle with each page's history so far (intervals observed, changes detected), for
    groupings learnt from the sample (`cluster`)."""
    n = len(rates)
    last = np.zeros(n)             # time of the last download (all fetched at t = 0)
    visits, changes = np.zeros(n), np.zeros(n)
    ratios = []
    for t in range(1, cycles + 1):
        groups = group_ids(visits.copy(), changes.copy()) if callable(group_ids) else group_ids
        ids = np.unique(np.asarray(groups), return_inverse=True)[1]
        members = [np.flatnonzero(ids == g) for g in range(ids.max() + 1)]
        # a page changed since its last download with P = 1 − e^{−r (t − last)}: drawn once
        changed = rng.random(n) < -np.expm1(-rates * (t - last))
        sample = np.concatenate([rng.permutation(m)[:sample_size] for m in members])
        sample = sample[:budget]
        picked = np.zeros(n, dtype=bool)
        picked[sample] = True
        share = np.array([changed[m[picked[m]]].mean() if picked[m].any() else 0.0 for m in members])
        left = budget - picked.sum()
        for g in np.argsort(-share, kind="stable"):
            if left <= 0:
                break
            rest = members[g][~picked[members[g]]][:left]
            picked[rest] = True
            left -= len(rest)
        if t > 1:
            ratios.append(changed[picked].mean())
        last[picked] = t
        visits[picked] += 1
        changes[picked] += changed[picked]
    return float(np.mean(ratios))
