"""One host's deep-web probing, advanced once per round: `advance(state, forms, digests, ...)`.

The state is a plain JSON-able dict (the crawl keeps it per host in its `deepweb` table):

- `forms`: form key -> the form (action, method, inputs), the page it was found on, its phase
  (`isit` -> `keywords` -> `done`; `nothing` is never submitted, nor `post`: a POST form of a
  host whose config has no `post` allowance, taken up again when it gets one), ISIT's level,
  the queue of informative templates to enumerate, the keyword batches;
- `templates`: form key -> template ("a,b") -> dimension, status (sampling, informative,
  uninformative, enumerating, done, covered), share and marginals of the test, its samples;
- `queries`: submission (its request key: the URL, or "POST <url> <body>" for a POST form;
  `templates.request_key`) -> form, kind (baseline, sample, enum, keyword), values or
  word, round sent, state (pending, done, lost), signature, stated count, its first page's
  record ids, the new records it brought (with its pages), the pages emitted;
- `pages`: result-page URL (page 2..) -> its submission, state, new records;
- `chrome`: ids of the links of the forms' pages (never counted as records);
- `records` (every record id seen), `listed` (records seen on result lists followed to
  their end: a submission is paged only when its first page shows a record not listed),
  `df` (document frequency of words among records), `sent` (submissions made).

ISIT per form: sample every one-input template (and the baseline); when the samples are
in, test each (`isit.informativeness`; on pages stating no count, a second look with
`ordercheck`); enumerate the informative ones one after another (most distinct first),
paging a submission only while its first page shows unlisted records; a level that
enumerated something is extended by one input (Apriori, `templates.extensions`) up to
`max_dimension`. Then the text box (`keywords`). A
submission counts against `budget`; result pages do not.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from strategies.deepweb import isit, keywords, ordercheck, pagination, templates as tpl


@dataclass(frozen=True)
class ProbeConfig:
    informative: float = 0.2     # --deep_web_informative
    max_dimension: int = 3       # --deep_web_max_dimension
    samples: int = 20            # submissions sampled per template
    budget: int = 500            # --deep_web_budget: submissions per host
    words_per_round: int = 10    # --deep_web_words_per_round
    seed_words: tuple = ()       # --deep_web_seed_words
    max_pages: int = 1000        # result pages followed per submission
    page_window: int = 20        # result pages of one submission emitted at a time
    stall_rounds: int = 3        # a URL pending this long while its host answers nothing is lost
    templates: bool = True       # ISIT over the binding inputs
    keywords: bool = True        # keyword probing of the text box
    post: bool = False           # this host's POST forms are submitted (for_host)
    post_hosts: tuple = ()       # --deep_web_post_hosts: host or host:port entries
    host_budgets: tuple = ()     # --deep_web_host_budgets: ((host or host:port, budget), ...)

    def for_host(self, host: str) -> "ProbeConfig":
        """This config for one host (a politeness key, name[:port]): its budget (an entry
        with the port wins over one without) and whether its POST forms are submitted."""
        h = host.lower()
        name = h.rsplit(":", 1)[0] if ":" in h else h
        budgets = dict(self.host_budgets)
        budget = budgets.get(h, budgets.get(name, self.budget))
        return replace(self, budget=budget, post=h in self.post_hosts or name in self.post_hosts)


def new_state() -> dict:
    return {"forms": {}, "templates": {}, "queries": {}, "pages": {}, "records": [], "listed": [],
            "df": {}, "sent": 0}


def record_id(url: str) -> int:
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big", signed=True)


def _name(t) -> str:
    return ",".join(t)


class _Run:
    """One call of `advance`: the state with sets for the record ids, and what to emit."""

    def __init__(self, state, round_no, cfg, normalize):
        self.s, self.round, self.cfg, self.norm = state, round_no, cfg, normalize
        self.records, self.listed = set(state["records"]), set(state["listed"])
        self.chrome = set(state.get("chrome", []))
        self.emit = []

    # ---- submissions and pages
    def submit(self, key, kind, values=None, word=None, template=None) -> str | None:
        form = self.s["forms"][key]
        vals = dict(values or {})
        if word is not None:
            vals[tpl.text_input(form)] = word
        url = tpl.submission_request(form, vals, self.norm)   # a POST's key: "POST <url> <body>"
        if not url:
            return None
        q = self.s["queries"].get(url)
        if q is not None:
            return url
        if self.s["sent"] >= self.cfg.budget:
            return None
        self.s["sent"] += 1
        self.s["queries"][url] = {"form": key, "kind": kind, "values": values or {}, "word": word,
                                  "template": template, "round": self.round, "state": "pending",
                                  "sig": None, "count": None, "records": [], "next": None,
                                  "new": 0, "pages": 0, "per_page": 0}
        self.emit.append((url, form["depth"] + 1, form["page"]))
        return url

    def page_results(self, url):
        """Page submission `url` (when its first page shows unlisted records): its result
        pages are emitted `page_window` at a time, the next window once these are in, until
        a page lists nothing (a site that pages fewer results than it counts)."""
        q = self.s["queries"][url]
        if q["pages"] or q["state"] != "done":
            return
        if not any(r not in self.listed for r in q["records"]):
            return
        self.listed.update(q["records"])
        q["pages"] = -1   # paged (no further pages when the list fits on one)
        q["rest"] = pagination.result_pages(tpl.as_url(url), q["next"], q["count"], q["per_page"], self.cfg.max_pages)
        q["open"] = 0
        self.page_window(url, q)

    def page_window(self, url, q):
        form = self.s["forms"][q["form"]]
        rest, q["rest"] = q["rest"][:self.cfg.page_window], q["rest"][self.cfg.page_window:]
        for p in rest:
            p = self.norm(p)
            if p and p not in self.s["pages"] and p not in self.s["queries"]:
                self.s["pages"][p] = {"query": url, "state": "pending", "round": self.round, "new": 0}
                self.emit.append((p, form["depth"] + 1, url))
                q["pages"] = max(q["pages"], 0) + 1
                q["open"] += 1

    def take(self, digest):
        """A result page's record ids (links the form's page also has are the site's chrome,
        not records) and how many were new."""
        pairs = [(record_id(u), w) for u, w in zip(digest["records"], digest["words"])]
        pairs = [(i, w) for i, w in pairs if i not in self.chrome]
        ids = [i for i, _ in pairs]
        new = [(i, w) for i, w in pairs if i not in self.records]
        self.records.update(i for i, _ in new)
        keywords.count_new_words(self.s["df"], [w for _, w in new])
        return ids, len(new)

    def digest(self, url, d):
        if url in self.s["queries"]:
            q = self.s["queries"][url]
            ids, new = self.take(d)
            q.update(state="done", sig=d["signature"], count=d["count"], records=ids, next=d["next"],
                     per_page=len(ids), new=q["new"] + new)
            if q["kind"] in ("enum", "keyword"):
                self.page_results(url)
        elif url in self.s["pages"]:
            pg = self.s["pages"][url]
            if pg["state"] != "pending":
                return
            ids, new = self.take(d)
            pg.update(state="done", new=new)
            self.listed.update(ids)
            q = self.s["queries"].get(pg["query"])
            if q is None:
                return
            q["new"] += new
            q["open"] = max(q.get("open", 1) - 1, 0)
            if not ids:
                q["rest"] = []          # past the last page the site shows
            if q.get("rest") and not q["open"]:
                self.page_window(pg["query"], q)
            nxt = self.norm(d["next"]) if d["next"] else None
            # followed page by page (no count to infer the rest): the next one, while new
            if nxt and not q.get("rest") and nxt not in self.s["pages"] and nxt not in self.s["queries"] and new:
                self.s["pages"][nxt] = {"query": pg["query"], "state": "pending", "round": self.round, "new": 0}
                self.emit.append((nxt, self.s["forms"][q["form"]]["depth"] + 1, url))
                q["open"] += 1

    def lose_stalled(self):
        for table in (self.s["queries"], self.s["pages"]):
            for item in table.values():
                if item["state"] == "pending" and item["round"] <= self.round - self.cfg.stall_rounds:
                    item["state"] = "lost"
                    q = self.s["queries"].get(item.get("query"))
                    if q is not None:
                        q["open"], q["rest"] = max(q.get("open", 1) - 1, 0), []

    # ---- progress of a form
    def open_urls(self, urls) -> bool:
        qs, pgs = self.s["queries"], self.s["pages"]
        for u in urls:
            if u in qs and (qs[u]["state"] == "pending" or qs[u].get("rest")):
                return True
        owners = set(urls)
        return any(p["state"] == "pending" and p["query"] in owners for p in pgs.values())

    def isit(self, key, form):
        inputs = tpl.binding_inputs(form)
        temps = self.s["templates"].setdefault(key, {})
        if form["level"] == 0:
            if not inputs:
                form["phase"] = "keywords"
                return
            form["level"] = 1
            form["baseline"] = self.submit(key, "baseline", {})
            self.sample(key, tpl.one_input_templates(inputs), inputs, temps)
            return
        level = form["level"]
        testing = [n for n, t in temps.items() if t["dim"] == level and t["status"] in ("sampling", "rechecking")]
        if testing:
            if self.open_urls([u for n in testing for u in temps[n]["samples"] + sum(temps[n].get("checks", []), [])]
                              + [form["baseline"]]):
                return
            if self.evaluate(key, form, inputs, temps, testing):
                return                  # a second look without a count (ordercheck) is out
        while form["current"] or form["queue"]:
            if form["current"] is None:
                form["current"] = form["queue"].pop(0)
                self.enumerate(key, form, inputs, temps[form["current"]])
                if form["current"] is None:
                    continue
            t = temps[form["current"]]
            if self.open_urls(t["samples"] + t.get("enumerated", [])):
                return
            t["status"] = "done"
            form["current"] = None
        productive = [n for n, t in temps.items() if t["dim"] == level and t["status"] == "done"]
        informative = [tuple(n.split(",")) for n, t in temps.items()
                       if t["dim"] == level and t["status"] in ("done", "covered")]
        nxt = tpl.extensions(informative, inputs, level + 1) if productive else []
        nxt = [t for t in nxt if _name(t) not in temps]
        if level < self.cfg.max_dimension and nxt and self.s["sent"] < self.cfg.budget:
            form["level"] = level + 1
            self.sample(key, nxt, inputs, temps)
        else:
            form["phase"] = "keywords"

    def sample(self, key, templates, inputs, temps):
        for t in templates:
            picked = [(self.submit(key, "sample", v, template=_name(t)), v)
                      for v in tpl.sample(t, inputs, self.cfg.samples, key)]
            picked = [(u, v) for u, v in picked if u]
            temps[_name(t)] = {"dim": len(t), "status": "sampling", "samples": [u for u, _ in picked],
                               "values": [v for _, v in picked], "size": tpl.size(t, inputs),
                               "round": self.round}

    def evaluate(self, key, form, inputs, temps, names):
        qs = self.s["queries"]
        sig_of = {}
        for t in temps.values():
            for u, v in zip(t["samples"], t["values"]):
                if qs[u]["state"] == "done":
                    sig_of.setdefault(tuple(sorted(v.items())), qs[u]["sig"])
        if form["baseline"] and qs[form["baseline"]]["state"] == "done":
            sig_of[()] = qs[form["baseline"]]["sig"]
        for n in names:
            t = temps[n]
            if t["status"] == "rechecking":   # the second look is in: the record sets decide
                m = ordercheck.order_marginal(qs, t["checks"])
                t.update(order_marginal=m, status="informative" if m is None or m >= self.cfg.informative
                         else "uninformative")
                continue
            samples = [(v, qs[u]["sig"]) for u, v in zip(t["samples"], t["values"]) if qs[u]["state"] == "done"]
            test = isit.informativeness(n.split(","), samples,
                                        lambda v: sig_of.get(tuple(sorted(v.items()))),
                                        self.cfg.informative)
            t.update(share=test["share"], marginal=test["marginal"],
                     status="informative" if test["informative"] else "uninformative")
            if test["informative"] and t["dim"] == 1 and ordercheck.suspect(qs, t, form["baseline"]):
                pairs = [(self.submit(key, "context", c, template=n), self.submit(key, "recheck", v, template=n))
                         for c, v in ordercheck.plan(form, inputs, temps, qs, n)]
                t["checks"] = [[c, r] for c, r in pairs if c and r]
                t["status"] = "rechecking" if t["checks"] else t["status"]
        if any(temps[n]["status"] == "rechecking" for n in names):
            return True
        level = [(n, t) for n, t in temps.items() if t["dim"] == temps[names[0]]["dim"]]
        form["queue"] = [n for _, _, n in sorted((-min([t["share"]] + list(t["marginal"].values())), t["size"], n)
                                                 for n, t in level if t["status"] == "informative")]
        return False

    def enumerate(self, key, form, inputs, t):
        """Start enumerating a template: page its samples that show unlisted records; submit
        the rest of its submissions (when some sample did). Nothing new: `covered`."""
        name = form["current"]
        fresh = [u for u in t["samples"] if self.s["queries"][u]["state"] == "done"
                 and any(r not in self.listed for r in self.s["queries"][u]["records"])]
        if not fresh:
            t["status"] = "covered"
            form["current"] = None
            return
        t["status"] = "enumerating"
        for u in t["samples"]:
            self.page_results(u)
        sampled = set(t["samples"])
        template = tuple(name.split(","))
        t["enumerated"] = []
        for i in range(t["size"]):
            u = self.submit(key, "enum", tpl.submission(template, inputs, i), template=name)
            if u and u not in sampled:
                t["enumerated"].append(u)

    def keyword_round(self, key, form):
        kw = form.setdefault("kw", {"used": [], "batches": []})
        if kw["batches"]:
            last = kw["batches"][-1]
            if self.open_urls(last["queries"]):
                return
            qs = self.s["queries"]
            last["new"] = sum(qs[u]["new"] for u in last["queries"])
            if last["new"] == 0 and self.records:
                form["phase"] = "done"
                return
        words = keywords.next_words(kw["used"], self.s["df"],
                                    keywords.seed_words(self.cfg.seed_words, form["words"]),
                                    self.cfg.words_per_round)
        batch = []
        for w in words:
            u = self.submit(key, "keyword", word=w)
            if u is None:
                break
            kw["used"].append(w)
            batch.append(u)
        if not batch:
            form["phase"] = "done"
            return
        kw["batches"].append({"round": self.round, "words": words[:len(batch)], "queries": batch, "new": None})

    def finish(self):
        self.s["records"] = sorted(self.records)
        self.s["listed"] = sorted(self.listed)
        return self.s, self.emit


def _register(state, found, cfg):
    chrome = set(state.setdefault("chrome", []))
    for f in found:
        chrome.update(record_id(u) for u in f.get("links") or ())
        form = f["form"]
        key = tpl.form_key(form)
        if key in state["forms"]:
            continue
        phase = _first_phase(form, cfg)
        state["forms"][key] = {"action": form["action"], "method": form["method"],
                               "inputs": form["inputs"], "page": f["page"], "depth": int(f.get("depth") or 0),
                               "words": f.get("words") or [], "phase": phase, "level": 0,
                               "queue": [], "current": None, "baseline": None, "found_round": f.get("round")}
    state["chrome"] = sorted(chrome)
    for form in state["forms"].values():   # the host's POST allowance may have changed
        if form["method"] == "post" and form["phase"] == "post" and cfg.post:
            form["phase"] = _first_phase(form, cfg)
        elif form["method"] == "post" and not cfg.post and form["phase"] in ("isit", "keywords"):
            form["phase"] = "post"


def _first_phase(form, cfg):
    """A new form's phase: `post` (a POST form on a host not in --deep_web_post_hosts:
    recorded, never submitted), `isit`, `keywords`, or `nothing` (no input to fill)."""
    if form["method"] not in ("get", "post") or (form["method"] == "post" and not cfg.post):
        return "post" if form["method"] == "post" else "nothing"
    if (cfg.templates and tpl.binding_inputs(form)) or (cfg.keywords and tpl.text_input(form)):
        return "isit" if cfg.templates else "keywords"
    return "nothing"


def advance(state: dict | None, found: list, digests: list, round_no: int, cfg: ProbeConfig,
            normalize=lambda u: u):
    """One round of a host's probing. `found`: forms seen this round on the host's pages
    ({"page", "depth", "form", "words", "links"}); `digests`: ({"url", "result"}) of the result pages
    fetched this round. Returns (new state, [(url, depth, parent url)] to add to the frontier)."""
    state = state or new_state()
    # one order whatever order the runner delivered them in: a rerun gives the same state
    found = sorted(found, key=lambda f: (f["page"], f["form"]["action"], tpl.form_key(f["form"])))
    digests = sorted(digests, key=lambda d: d["url"])
    _register(state, found, cfg)
    run = _Run(state, round_no, cfg, normalize)
    for d in digests:
        run.digest(d["url"], d["result"])
    if not digests:
        run.lose_stalled()
    for key, form in state["forms"].items():
        if form["phase"] == "isit":
            run.isit(key, form)
        if form["phase"] == "keywords":
            if cfg.keywords and tpl.text_input(form) and state["sent"] < cfg.budget:
                run.keyword_round(key, form)
            else:
                form["phase"] = "done"
    return run.finish()


def summary(state: dict) -> dict:
    """Counters for the round's report."""
    temps = [t for ts in state["templates"].values() for t in ts.values()]
    return {"forms": len(state["forms"]), "submissions": state["sent"], "records": len(state["records"]),
            "result_pages": len(state["pages"]),
            "templates": {s: sum(t["status"] == s for t in temps)
                          for s in sorted({t["status"] for t in temps})},
            "words": sum(len(f.get("kw", {}).get("used", [])) for f in state["forms"].values())}
