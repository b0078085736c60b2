"""The informativeness test of ISIT (Madhavan et al., VLDB 2008, section 4.2).

A template is *informative* when the submissions sampled from it give result pages that
are sufficiently distinct: distinct signatures / submissions ≥ τ (0.2 in the paper). A
page's signature (`transforms.page.forms.result_digest`) ignores the order of the results,
so an input that only changes presentation (sort order) gives its parent's page again.

That alone does not stop a presentation input: three sort orders give one signature out of
three submissions (1/3 ≥ 0.2), and {category, sort} is as distinct as {category}. So the
test also asks, for every input x of the template, what x itself adds: the samples are
grouped by their values on the other inputs, each group with the page of its *parent*
submission (x left at its default; for a one-input template the form's baseline), and

    marginal(x) = Σ_groups (distinct signatures in group ∪ {parent} − 1) / Σ_groups |group|

(without a known parent page: (distinct − 1) / (|group| − 1)). A template is informative
when its share and every marginal reach τ. Sort: all three orders give the baseline's
signature, marginal 0. ISIT (`templates.extensions`) extends only informative templates.
"""
from __future__ import annotations


def informativeness(template, samples, parent_sig, threshold: float = 0.2) -> dict:
    """Test one template. `samples`: [(values dict, signature)] of its fetched submissions;
    `parent_sig(values)`: the signature of the submission with only `values` set (None when
    not fetched). Returns {"share", "marginal": {input: ratio}, "informative"}."""
    samples = [(v, s) for v, s in samples if s is not None]
    if not samples:
        return {"share": 0.0, "marginal": {}, "informative": False}
    share = len({s for _, s in samples}) / len(samples)
    marginal = {}
    for x in template:
        rest = [n for n in template if n != x]
        groups = {}
        for values, sig in samples:
            groups.setdefault(tuple(values[n] for n in rest), []).append(sig)
        new = extra = 0
        for key, sigs in groups.items():
            parent = parent_sig(dict(zip(rest, key)))
            if parent is not None:
                new += len(set(sigs) | {parent}) - 1
                extra += len(sigs)
            else:
                new += len(set(sigs)) - 1
                extra += len(sigs) - 1
        if extra:
            marginal[x] = new / extra
    informative = share >= threshold and all(m >= threshold for m in marginal.values())
    return {"share": round(share, 4), "marginal": {k: round(v, 4) for k, v in marginal.items()},
            "informative": informative}
