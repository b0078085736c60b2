"""The deep-web settings (#17; docs/deep-web.md), one definition each.

`pipelines.settings` builds them with its own `Setting` class and checks (passed in, so
this module imports nothing of it: `python -m pipelines.settings` runs settings.py as
__main__ and a circular import would load a second copy). Also the parsing of the
per-host flags, shared by their checks and by `pipelines.config`.
"""
from __future__ import annotations


def _csv(text):
    return [p.strip() for p in str(text or "").split(",") if p.strip()]


def _host_problem(host):
    if "/" in host or " " in host or host.startswith(":") or host.count(":") > 1:
        return f"{host!r} is not a host name (write host or host:port, no scheme or path)"
    name, _, port = host.partition(":")
    if port and not port.isdigit():
        return f"{host!r} has a bad port"
    return None


def parse_post_hosts(text) -> tuple:
    """--deep_web_post_hosts as a tuple of lower-case host or host:port entries."""
    return tuple(h.lower() for h in _csv(text))


def parse_host_budgets(text) -> tuple:
    """--deep_web_host_budgets "host=N,host2=M" as ((host, N), ...); ValueError names the
    first bad entry."""
    out = {}
    for part in _csv(text):
        host, sep, n = part.partition("=")
        host = host.strip().lower()
        if not sep or not host:
            raise ValueError(f"entry {part!r} is not host=N")
        problem = _host_problem(host)
        if problem:
            raise ValueError(problem)
        try:
            budget = int(n.strip())
        except ValueError:
            raise ValueError(f"entry {part!r}: {n.strip()!r} is not a whole number") from None
        if budget < 0:
            raise ValueError(f"entry {part!r}: the budget must be at least 0")
        if host in out:
            raise ValueError(f"host {host!r} is given twice")
        out[host] = budget
    return tuple(sorted(out.items()))


def check_post_hosts(text):
    for h in parse_post_hosts(text):
        problem = _host_problem(h)
        if problem:
            return problem
    return None


def check_host_budgets(text):
    try:
        parse_host_budgets(text)
    except ValueError as e:
        return f"{e}; expected host=N[,host2=M...]"
    return None


def settings(S, at_least, between, one_of):
    """The deepweb group's settings, as `pipelines.settings.Setting`s."""
    return [
        S("deep_web", str, "off", "deepweb", "forms: record the forms of fetched pages and submit "
          "GET forms (ISIT query templates over selects, radios and checkboxes, then keyword "
          "probing of the text box); off: never. POST forms are recorded, and submitted only on "
          "--deep_web_post_hosts.", one_of("off", "forms")),
        S("deep_web_budget", int, 500, "deepweb", "Form submissions per host over the whole crawl "
          "(result pages after the first do not count); --deep_web_host_budgets overrides it "
          "per host.", at_least(1)),
        S("deep_web_host_budgets", str, "", "deepweb", "Per-host budgets overriding "
          "--deep_web_budget: host=N[,host2=M...] (host, or host:port for one port; 0 = submit "
          "nothing there).", check_host_budgets),
        S("deep_web_post_hosts", str, "", "deepweb", "Comma-separated hosts (host, or host:port) "
          "whose POST forms are submitted like GET forms (a form-encoded POST body; never "
          "retried once sent). Empty = no POST anywhere.", check_post_hosts),
        S("deep_web_informative", float, 0.2, "deepweb", "A query template is informative when its "
          "sampled submissions' distinct result signatures, and what each input adds, reach this "
          "share.", between(0.0, 1.0)),
        S("deep_web_max_dimension", int, 3, "deepweb", "Most inputs a query template sets.",
          at_least(1)),
        S("deep_web_samples", int, 20, "deepweb", "Submissions sampled to test one template.",
          at_least(2)),
        S("deep_web_words_per_round", int, 10, "deepweb", "Keyword queries per batch; the next "
          "batch is chosen when this one's results are in.", at_least(1)),
        S("deep_web_seed_words", str, "", "deepweb", "Comma-separated first words for text boxes; "
          "empty = the words of the form's page."),
    ]
