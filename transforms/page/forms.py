"""Forms and form results, read from the page step's one lxml parse (no Beam, no network).

`page_forms(root, base)`: every ``<form>`` of a page with its inputs, as plain dicts
(the deep-web stage keeps them, `strategies.deepweb` decides what to submit):

    {"action": canonical URL, "method": "get"|"post", "enctype": str,
     "inputs": [{"name", "kind", "values", "default"}]}

`kind` is ``select``, ``radio``, ``checkbox``, ``text`` (text/search/unknown-type text
boxes and textareas), ``hidden``, ``submit`` or ``other`` (password, file, date, ... never
filled); `values` lists a select's option values (in order) or a radio group's values, a
checkbox's value, a hidden field's value; `default` is what a browser submits untouched
(the selected option, else the first; the checked radio; '' for an unchecked box).

`result_digest(root, url, base)`: what a page answering a form submission tells the
deep-web stage, independent of a site's layout:

- `records`: the record links, one per item of the page's result list. The list is the
  element with the most child elements that each hold a link to another path than the
  page's own (the search endpoint); ties go to the deeper element;
- `words`: per record, the words of its item (mined for new query words);
- `next`: the ``rel=next`` target (``<a>`` or ``<link>``);
- `count`: the largest number in the page text outside the items (sites state their
  result count: "1280 jobs found", "Showing 1-20 of 345"), None when there is none; a page
  whose count is 0 lists no records (its only links are the site's own);
- `signature`: a fingerprint of the text outside the items (the page's "frame": counts,
  headings, the echo of the query). The order of the results does not change it, so a
  presentation-only input (sort order) gives its parent's signature; on a page that shows
  no number at all, the sorted record links are part of it.
"""
from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit

from transforms.urls.canonical import classify

__all__ = ["page_forms", "result_digest", "WORD_RE", "page_words"]

TEXT_TYPES = ("text", "search", "")
OTHER_TYPES = ("password", "file", "image", "button", "reset", "email", "tel", "url", "number",
               "date", "datetime-local", "month", "week", "time", "color", "range")
WORD_RE = re.compile(r"[^\W\d_]{3,}", re.UNICODE)
NUMBER_RE = re.compile(r"\d[\d,]*")
MAX_FORMS = 20
MAX_OPTIONS = 500
MAX_WORDS_PER_ITEM = 60


def _text(el) -> str:
    return " ".join("".join(el.itertext()).split())


def _input(el):
    tag = el.tag
    name = el.get("name")
    if not name:
        return None
    if tag == "select":
        opts = el.findall(".//option")[:MAX_OPTIONS]
        values = [o.get("value") if o.get("value") is not None else _text(o) for o in opts]
        chosen = [v for o, v in zip(opts, values) if o.get("selected") is not None]
        default = chosen[0] if chosen else (values[0] if values else "")
        return {"name": name, "kind": "select", "values": values, "default": default}
    if tag == "textarea":
        return {"name": name, "kind": "text", "values": [], "default": _text(el)}
    kind = (el.get("type") or "").strip().lower()
    value = el.get("value") or ""
    if kind in TEXT_TYPES:
        return {"name": name, "kind": "text", "values": [], "default": value}
    if kind == "hidden":
        return {"name": name, "kind": "hidden", "values": [value], "default": value}
    if kind == "submit":
        return {"name": name, "kind": "submit", "values": [value], "default": value}
    if kind in ("radio", "checkbox"):
        value = el.get("value") if el.get("value") is not None else "on"
        checked = el.get("checked") is not None
        return {"name": name, "kind": kind, "values": [value], "default": value if checked else ""}
    return {"name": name, "kind": "other", "values": [], "default": value}


def _inputs(form):
    out, radios = [], {}
    for el in form.iter("input", "select", "textarea"):
        got = _input(el)
        if got is None:
            continue
        if got["kind"] == "radio":   # one input per group, its values in document order
            group = radios.get(got["name"])
            if group is None:
                group = radios[got["name"]] = dict(got, values=[])
                out.append(group)
            group["values"].append(got["values"][0])
            if got["default"] and not group["default"]:
                group["default"] = got["default"]
            continue
        out.append(got)
    for group in radios.values():
        if not group["default"] and group["values"]:
            group["default"] = group["values"][0]   # browsers submit nothing; the first is the site's default
    return out


def page_forms(root, base) -> list[dict]:
    """The forms of a parsed page (see the module docstring); `base`: the effective base URL."""
    forms = []
    for form in root.iter("form"):
        if len(forms) >= MAX_FORMS:
            break
        action = form.get("action")
        url = classify(base, action)[0] if action and action.strip() else classify(base, "")[0]
        if url is None:
            continue
        method = (form.get("method") or "get").strip().lower()
        forms.append({"action": url, "method": "post" if method == "post" else "get",
                      "enctype": (form.get("enctype") or "").strip().lower(),
                      "inputs": _inputs(form)})
    return forms


def page_words(text: str, limit: int = 200) -> list[str]:
    """Distinct lower-case words (letters only, 3+) of a text, first occurrence first."""
    seen = {}
    for w in WORD_RE.findall(text.lower()):
        if w not in seen:
            seen[w] = None
            if len(seen) >= limit:
                break
    return list(seen)


def _path(url):
    parts = urlsplit(url)
    return (parts.netloc, parts.path)


def _links(el, base):
    for a in el.iter("a"):
        href = a.get("href")
        if href:
            u = classify(base, href)[0]
            if u is not None:
                yield a, u


def _result_list(root, base, own):
    """(container, [(item, record url)]) of the page's result list, or (None, [])."""
    best, best_items, best_depth = None, [], -1
    for depth, el in _walk(root):
        items = []
        for child in el:
            if not isinstance(child.tag, str) or child.tag in ("form", "script", "style"):
                continue
            for _, u in _links(child, base):
                if _path(u) != own:
                    items.append((child, u))
                    break
        if len(items) > len(best_items) or (len(items) == len(best_items) and items and depth > best_depth):
            best, best_items, best_depth = el, items, depth
    return best, best_items


def _walk(root):
    stack = [(0, root)]
    while stack:
        depth, el = stack.pop()
        if not isinstance(el.tag, str) or el.tag == "form":
            continue
        yield depth, el
        stack.extend((depth + 1, c) for c in reversed(el))


def _next_link(root, base):
    for el in root.iter("a", "link"):
        rel = el.get("rel")
        if rel and "next" in rel.lower().split() and el.get("href"):
            u = classify(base, el.get("href"))[0]
            if u is not None:
                return u
    return None


def result_digest(root, url: str, base: str) -> dict:
    """What a form's result page says (module docstring). Removes the items from `root`:
    call it last on a tree."""
    own = _path(url)
    nxt = _next_link(root, base)
    _, items = _result_list(root, base, own)
    records, words = [], []
    for item, u in items:
        records.append(u)
        words.append(page_words(_text(item), MAX_WORDS_PER_ITEM))
    for item, _ in items:
        parent = item.getparent()
        if parent is not None:
            parent.remove(item)
    body = root.find("body")
    frame = " ".join(" ".join((body if body is not None else root).itertext()).split()).lower()
    numbers = [int(n.replace(",", "")) for n in NUMBER_RE.findall(frame)]
    numbers = [n for n in numbers if n < 10 ** 9]
    count = max(numbers) if numbers else None
    if count == 0:               # "0 results": whatever links are left are the site's chrome
        records, words = [], []
    sig_text = frame if numbers else frame + "\n" + "\n".join(sorted(records))
    signature = int.from_bytes(hashlib.blake2b(sig_text.encode(), digest_size=8).digest(),
                               "big", signed=True)
    return {"records": records, "words": words, "next": nxt, "count": count,
            "signature": signature}
