"""jobs.simweb.test: a vertical search site over a table of job postings (the deep web).

``/`` holds a GET form (``/search``) with selects ``category``, ``industry``, ``city``, a
free-text box ``q`` (every word must occur in the title or keywords, case-insensitive), a
``sort`` select (``date`` | ``salary`` | ``title``: presentation only, the result set is the
same) and ``page`` (1-based, ``results_per_page`` per page); result pages say "N jobs
found" unless ``jobs_count`` is off (a site that states no count). Records live at
``/job/<id>`` and are linked only from result pages, so only a form-filling crawler finds
them. :func:`query` is the reference implementation tests compare against.
"""
from __future__ import annotations

import html
from urllib.parse import parse_qsl, urlencode

import numpy as np
import pyarrow as pa

CATEGORIES = ["Engineering", "Sales", "Marketing", "Finance", "Design", "Support", "Legal",
              "Operations", "Research", "Education", "Healthcare", "Logistics"]
INDUSTRIES = ["Software", "Banking", "Retail", "Energy", "Telecom", "Automotive", "Media",
              "Pharma", "Agriculture", "Construction"]
CITIES = ["Amsterdam", "Berlin", "Boston", "Chicago", "Dublin", "Lisbon", "London", "Madrid",
          "Milan", "Munich", "Oslo", "Paris", "Prague", "Seattle", "Tokyo", "Toronto",
          "Vienna", "Warsaw", "Zurich", "Austin"]
ADJ = ["Senior", "Junior", "Lead", "Principal", "Staff", "Associate", "Chief", "Remote"]
ROLES = {
    "Engineering": ["Software Engineer", "Data Engineer", "Site Reliability Engineer", "QA Engineer"],
    "Sales": ["Account Executive", "Sales Manager", "Business Developer"],
    "Marketing": ["Marketing Manager", "Content Strategist", "SEO Specialist"],
    "Finance": ["Accountant", "Financial Analyst", "Controller"],
    "Design": ["Product Designer", "UX Researcher", "Graphic Designer"],
    "Support": ["Support Agent", "Customer Success Manager"],
    "Legal": ["Paralegal", "Legal Counsel", "Compliance Officer"],
    "Operations": ["Operations Manager", "Office Administrator", "Project Manager"],
    "Research": ["Research Scientist", "Data Scientist", "Lab Technician"],
    "Education": ["Teacher", "Curriculum Designer", "Tutor"],
    "Healthcare": ["Nurse", "Physician", "Pharmacist"],
    "Logistics": ["Warehouse Lead", "Supply Chain Planner", "Driver"],
}
KEYWORDS = ["python", "java", "sql", "cloud", "excel", "negotiation", "leadership", "kubernetes",
            "spanish", "german", "french", "travel", "startup", "parttime", "nightshift", "onsite"]
SORTS = ("date", "salary", "title")


class Records:
    def __init__(self, table: pa.Table):
        self.table = table
        d = table.to_pydict()
        self.rows = [dict(zip(d, vals)) for vals in zip(*d.values())]
        self._tokens = [set((r["title"] + " " + r["keywords"]).lower().split()) for r in self.rows]


def make_records(web) -> Records:
    n = web.cfg.n_records
    rng = np.random.default_rng([web.seed, 0x10B5])
    cat = rng.integers(0, len(CATEGORIES), n)
    ind = rng.integers(0, len(INDUSTRIES), n)
    city = rng.integers(0, len(CITIES), n)
    adj = rng.integers(0, len(ADJ), n)
    role = rng.integers(0, 1000, n)
    salary = (rng.lognormal(11.0, 0.35, n) // 1000 * 1000).astype(np.int64)
    posted = web.cfg.epoch - rng.integers(0, 90 * 86400, n).astype(np.float64)
    kw_idx = rng.integers(0, len(KEYWORDS), (n, 2))
    base = web.base_url(web.jobs.name) if web.jobs else ""
    titles, kws = [], []
    for r in range(n):
        roles = ROLES[CATEGORIES[cat[r]]]
        titles.append(f"{ADJ[adj[r]]} {roles[role[r] % len(roles)]}")
        kws.append(" ".join(sorted({KEYWORDS[kw_idx[r, 0]], KEYWORDS[kw_idx[r, 1]]})))
    t = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "url": [f"{base}/job/{r}" for r in range(n)],
        "title": titles,
        "category": [CATEGORIES[c] for c in cat],
        "industry": [INDUSTRIES[c] for c in ind],
        "city": [CITIES[c] for c in city],
        "salary": pa.array(salary, pa.int64()),
        "posted": pa.array(posted, pa.float64()),
        "keywords": kws,
    })
    return Records(t)


def query(records: Records, q: str = "", category: str = "", industry: str = "",
          city: str = "", sort: str = "date") -> list[int]:
    """Record ids matching the form fields, in the order the site lists them."""
    toks = q.lower().split()
    out = []
    for r, row in enumerate(records.rows):
        if category and row["category"] != category:
            continue
        if industry and row["industry"] != industry:
            continue
        if city and row["city"] != city:
            continue
        if toks and not all(t in records._tokens[r] for t in toks):
            continue
        out.append(r)
    rows = records.rows
    if sort == "salary":
        out.sort(key=lambda r: (-rows[r]["salary"], r))
    elif sort == "title":
        out.sort(key=lambda r: (rows[r]["title"], r))
    else:
        out.sort(key=lambda r: (-rows[r]["posted"], r))
    return out


def _page(title: str, body: str) -> bytes:
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}'
            f"</title></head><body>{body}</body></html>").encode()


def form_html(web) -> str:
    def sel(name, opts, label):
        o = "".join(f'<option value="{html.escape(x)}">{html.escape(x)}</option>' for x in opts)
        return f'<label>{label} <select name="{name}"><option value="">Any</option>{o}</select></label>'
    return ('<form action="/search" method="get" id="jobsearch">'
            '<label>Keywords <input type="text" name="q" value=""></label>'
            + sel("category", CATEGORIES, "Category") + sel("industry", INDUSTRIES, "Industry")
            + sel("city", CITIES, "City")
            + '<label>Sort by <select name="sort"><option value="date">Newest</option>'
              '<option value="salary">Salary</option><option value="title">Title</option>'
              '</select></label><input type="submit" value="Search"></form>')


def respond(web, host, target: str, headers: dict, now: float):
    from .model import Response
    path, _, qs = target.split("#", 1)[0].partition("?")
    ok = lambda body: Response(200, [("Content-Type", "text/html; charset=utf-8")], body)
    if path == "/robots.txt":
        return Response(404, [("Content-Type", "text/html")], b"not found")
    if path == "/":
        return ok(_page("Job search", "<h1>Find your next job</h1>"
                        f"<p>{web.cfg.n_records} open positions.</p>" + form_html(web)
                        + '<p><a href="/about">About this site</a></p>'))
    if path == "/about":
        return ok(_page("About job search", '<p>A vertical search engine. <a href="/">Search</a></p>'))
    recs = web.records
    if path.startswith("/job/"):
        try:
            r = int(path[5:])
            row = recs.rows[r]
        except (ValueError, IndexError):
            return Response(404, [("Content-Type", "text/html")], b"no such job")
        body = (f"<h1>{html.escape(row['title'])}</h1><dl>"
                + "".join(f'<dt>{k}</dt><dd class="{k}">{html.escape(str(row[k]))}</dd>'
                          for k in ("category", "industry", "city", "salary", "keywords"))
                + '</dl><p><a href="/">New search</a></p>')
        return ok(_page(row["title"], body))
    if path == "/search":
        args = dict(parse_qsl(qs, keep_blank_values=True))
        sort = args.get("sort", "date")
        if sort not in SORTS:
            sort = "date"
        try:
            page = max(1, int(args.get("page", "1") or 1))
        except ValueError:
            page = 1
        ids = query(recs, args.get("q", ""), args.get("category", ""), args.get("industry", ""),
                    args.get("city", ""), sort)
        per = web.cfg.results_per_page
        chunk = ids[(page - 1) * per: page * per]
        items = "".join(
            f'<li class="result"><a href="/job/{r}">{html.escape(recs.rows[r]["title"])}</a> '
            f'<span class="city">{recs.rows[r]["city"]}</span> '
            f'<span class="salary">{recs.rows[r]["salary"]}</span></li>' for r in chunk)
        nav = []
        keep = {k: v for k, v in args.items() if k != "page"}
        if page > 1:
            nav.append(f'<a rel="prev" href="/search?{html.escape(urlencode({**keep, "page": page - 1}))}">Previous</a>')
        if page * per < len(ids):
            nav.append(f'<a rel="next" href="/search?{html.escape(urlencode({**keep, "page": page + 1}))}">Next</a>')
        count = f'<p id="count">{len(ids)} jobs found</p>' if web.cfg.jobs_count else ""
        body = (f'<h1>Search results</h1>{count}'
                f'<ol start="{(page - 1) * per + 1}">{items}</ol><p>{" ".join(nav)}</p>'
                + form_html(web))
        return ok(_page("Search results", body))
    return Response(404, [("Content-Type", "text/html")], b"not found")
