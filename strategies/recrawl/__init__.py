"""Revisit (recrawl) policies: the registry, and the estimation and freshness maths.

A policy is one module with a `Policy` subclass and one line in POLICIES. An incremental
round gives it the visited pages' estimated rates (and scores, hosts, features) and the
round's revisit budget; it answers a revisit frequency per page (`base.Policy.frequencies`);
a page is due once `(now − last visit) × f ≥ 1`.

    from strategies.recrawl import get_policy
    freqs = get_policy("optimal").frequencies(PageSet(rates), budget=len(rates))
"""
from __future__ import annotations

from strategies.recrawl.base import PageSet, Policy, due_priority
from strategies.recrawl.cluster import Cluster
from strategies.recrawl.importance import Importance
from strategies.recrawl.optimal import Optimal
from strategies.recrawl.proportional import Proportional
from strategies.recrawl.sampling import Sampling
from strategies.recrawl.uniform import Uniform

POLICIES: dict[str, type] = {
    "uniform": Uniform,
    "proportional": Proportional,
    "optimal": Optimal,
    "importance": Importance,
    "sampling": Sampling,
    "cluster": Cluster,
}


def get_policy(name: str, **params) -> Policy:
    try:
        cls = POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown revisit policy {name!r}; known: {', '.join(POLICIES)}") from None
    return cls(**params)


__all__ = ["POLICIES", "PageSet", "Policy", "due_priority", "get_policy"]
