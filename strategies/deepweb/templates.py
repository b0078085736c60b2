"""Query templates of a GET form (Madhavan et al. 2008, section 4).

A *binding input* is one a template may set: a select or radio group with at least two
non-empty values, or a checkbox (checked or not). Text boxes are filled by keyword probing
(`keywords`), hidden fields always keep their value, other inputs (password, file, ...) are
never filled. A *template* is a set of binding inputs (sorted names); its *submissions* set
each of them to one of its values and leave every other input at its default. The form's
*baseline* is the submission with every input at its default.
"""
from __future__ import annotations

import random
import zlib
from itertools import combinations
from urllib.parse import urlencode

BINDING_KINDS = ("select", "radio", "checkbox")


def form_key(form: dict) -> str:
    """A form's identity across the pages that carry it: action and sorted input names."""
    return form["action"] + "|" + ",".join(sorted(i["name"] for i in form["inputs"]))


def binding_values(inp: dict) -> list[str]:
    """The values a template gives an input ([] when it is not a binding input)."""
    if inp["kind"] == "checkbox":
        return ["", inp["values"][0] if inp["values"] else "on"]
    if inp["kind"] not in ("select", "radio"):
        return []
    values = list(dict.fromkeys(v for v in inp["values"] if v != ""))
    return values if len(values) >= 2 else []


def binding_inputs(form: dict) -> dict[str, list[str]]:
    """name -> values of the form's binding inputs, in form order."""
    out = {}
    for inp in form["inputs"]:
        vals = binding_values(inp)
        if vals and inp["name"] not in out:
            out[inp["name"]] = vals
    return out


def text_input(form: dict) -> str | None:
    """The name of the form's first text box, or None."""
    return next((i["name"] for i in form["inputs"] if i["kind"] == "text"), None)


def fields(form: dict, values: dict[str, str]) -> list[tuple[str, str]]:
    """The (name, value) pairs a browser submits with `values` set and the rest at default."""
    out = []
    for inp in form["inputs"]:
        name, kind = inp["name"], inp["kind"]
        if kind == "other":
            continue
        value = values.get(name, inp["default"])
        if kind in ("checkbox", "radio") and value == "":
            continue                      # an unchecked box is not submitted
        out.append((name, value))
    return out


def submission_url(form: dict, values: dict[str, str]) -> str:
    """The GET URL of a submission (query in the form's input order, as browsers build it)."""
    action = form["action"].split("#", 1)[0].split("?", 1)[0]
    return action + "?" + urlencode(fields(form, values))


POST = "POST"


def request_key(url: str, method: str | None = None, body: str | None = None) -> str:
    """The planner's name of a request: the URL for a GET, "POST <url> <body>" for a POST
    (a canonical URL and a form-encoded body hold no space: the key splits back)."""
    return f"{POST} {url} {body or ''}" if (method or "").upper() == POST else url


def split_key(key: str) -> tuple[str, str | None, str | None]:
    """(url, method, body) of a request key: (url, None, None) for a GET."""
    if key.startswith(POST + " "):
        _, url, body = key.split(" ", 2)
        return url, POST, body
    return key, None, None


def as_url(key: str) -> str:
    """A request key as one URL (a POST's body as its query), for comparing it with the GET
    links of its result pages (pagination)."""
    url, method, body = split_key(key)
    if method is None or not body:
        return url
    return url.split("?", 1)[0] + "?" + body


def submission_request(form: dict, values: dict[str, str], normalize=lambda u: u) -> str | None:
    """The request key of a submission: its GET URL, or for a POST form "POST <action> <body>"
    (the form-encoded fields, in the form's input order, as browsers send them). None when
    `normalize` refuses the URL."""
    if form.get("method") == "post":
        url = normalize(form["action"].split("#", 1)[0])
        return request_key(url, POST, urlencode(fields(form, values))) if url else None
    return normalize(submission_url(form, values))


def size(template, inputs) -> int:
    n = 1
    for name in template:
        n *= len(inputs[name])
    return n


def submission(template, inputs, index: int) -> dict[str, str]:
    """The index-th submission of a template (mixed-radix over its inputs' values)."""
    values = {}
    for name in reversed(template):
        vals = inputs[name]
        index, r = divmod(index, len(vals))
        values[name] = vals[r]
    return values


def sample(template, inputs, k: int, seed: str) -> list[dict[str, str]]:
    """k submissions of a template drawn without replacement (all of them when it has ≤ k),
    the same for the same form, template and k."""
    n = size(template, inputs)
    rng = random.Random(zlib.crc32(f"{seed}|{','.join(template)}".encode()))
    idx = range(n) if n <= k else sorted(rng.sample(range(n), k))
    return [submission(template, inputs, i) for i in idx]


def one_input_templates(inputs) -> list[tuple[str, ...]]:
    return [(name,) for name in inputs]


def extensions(informative, inputs, dimension: int) -> list[tuple[str, ...]]:
    """Apriori: the templates of `dimension` inputs all of whose (dimension-1)-subsets are
    in `informative` (each template a sorted tuple of names)."""
    keep = {tuple(sorted(t)) for t in informative}
    out = set()
    for t in keep:
        for name in inputs:
            if name in t:
                continue
            cand = tuple(sorted(t + (name,)))
            if len(cand) == dimension and all(tuple(sorted(s)) in keep
                                              for s in combinations(cand, dimension - 1)):
                out.add(cand)
    order = {name: i for i, name in enumerate(inputs)}
    return sorted(out, key=lambda t: [order[n] for n in t])
