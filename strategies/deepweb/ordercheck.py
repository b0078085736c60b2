"""Presentation-only inputs on a site that states no result count (ISIT's second look).

A result page's signature leaves out the order of its records (`transforms.page.forms`),
and where the page states its count, an input that only sorts gives its parent's signature
(`isit`). Where it states none and the list goes on past the first page (a next link), a
sort shows other records first: its first pages differ and the input looks informative.

So a one-input template that passes the test is *suspect* when none of its pages (nor
the baseline) states a count and one of their lists goes on. It is tested again inside
narrower queries whose whole list fits on one page, the *contexts*: first the form's other
one-input samples that listed at least two records and no next page (already fetched),
then, when fewer than `MAX_CONTEXTS`, made ones: `MAX_CONTEXTS` queries setting two other
inputs to values their samples used and `MAX_CONTEXTS` setting three (`WIDTHS`; which of
them lists a whole page depends on the site's size, so both are sent at once). For each context and up to `VALUES_PER_CONTEXT` values of the input other
than its default, the context plus that value is submitted, and the two record *sets*
compared, ignoring order. An input that gives the same set in another order adds nothing:

    order marginal = pairs whose record set differs (or whose list now goes on)
                     / conclusive pairs (the context's list is whole: no next page, ≥ 2 records)

Below the informativeness threshold the template fails, as a sort fails on a site with a
count. No conclusive pair (every context too broad or empty): the first test stands.
"""
from __future__ import annotations

from itertools import combinations

MAX_CONTEXTS = 3
VALUES_PER_CONTEXT = 2
WIDTHS = (2, 3)        # other inputs a made context sets: a narrower list, more likely whole


def _done(qs, u):
    q = qs.get(u) if u else None
    return q if q is not None and q["state"] == "done" else None


def _whole(q) -> bool:
    return q is not None and not q["next"] and len(q["records"]) >= 2


def suspect(qs, template: dict, baseline) -> bool:
    """No page of the template's samples (nor the baseline) states a count, and a list goes on."""
    pages = [q for q in (_done(qs, u) for u in template["samples"] + [baseline]) if q is not None]
    return bool(pages) and all(q["count"] is None for q in pages) and any(q["next"] for q in pages)


def plan(form: dict, inputs: dict, temps: dict, qs: dict, name: str) -> list:
    """[(context values, context + one value of `name`)] to submit for the second look."""
    default = next((i["default"] for i in form["inputs"] if i["name"] == name), "")
    values = [a for a in inputs[name] if a != default][:VALUES_PER_CONTEXT]
    found = []
    for n, t in sorted(temps.items()):
        if t["dim"] == 1 and n != name:
            found += [(-len(q["records"]), u, v) for u, v in zip(t["samples"], t["values"])
                      if _whole(q := _done(qs, u))]
    contexts = [v for _, _, v in sorted(found)][:MAX_CONTEXTS]
    others = [n for n in inputs if n != name and n in temps]
    for width in WIDTHS if len(contexts) < MAX_CONTEXTS else ():
        made = []
        for group in combinations(others, width):
            for vs in zip(*(temps[n]["values"] for n in group)):
                if len(made) < MAX_CONTEXTS:
                    made.append({k: v for d in vs for k, v in d.items()})
        contexts += made
    return [(c, {**c, name: a}) for c in contexts for a in values]


def order_marginal(qs, checks) -> float | None:
    """Share of conclusive (context, with-input) pairs whose record sets differ; None when
    no pair is conclusive."""
    differ = []
    for c, r in checks:
        qc, qr = _done(qs, c), _done(qs, r)
        if _whole(qc) and qr is not None:
            differ.append(bool(qr["next"]) or set(qr["records"]) != set(qc["records"]))
    return sum(differ) / len(differ) if differ else None
