"""Record the responses test_page_fate.py replays, from the simulated web in-process.

    python -m tests.unit.data.page_fate.record

Each case becomes <name>.json (url, status, headers) and <name>.body (the body bytes, as
the server sends them for a request without Accept-Encoding). The web is the small preset
with the hostile hosts, seed 1, port 8000, at a fixed time, so a re-recording is identical.
"""
import json
from pathlib import Path

from tests.simweb.config import load_config
from tests.simweb.model import SimWeb

HERE = Path(__file__).parent
NOW = 1.8e9
CASES = {   # name: (host, path)
    "html_links": ("slow.simweb.test", "/"),
    "redirect": ("hostile.simweb.test", "/chain/0"),
    "not_found": ("site0.simweb.test", "/nope.html"),
    "unavailable": ("flaky.simweb.test", "/"),
    "sitemap_index": ("site0.simweb.test", "/sitemap_index.xml"),
    "noindex": ("hostile.simweb.test", "/meta-noindex.html"),
    "nofollow": ("hostile.simweb.test", "/meta-nofollow.html"),
    "binary_as_html": ("hostile.simweb.test", "/binary.html"),
}


def main():
    web = SimWeb(load_config("small", hostile=True), seed=1, port=8000, clock=lambda: NOW)
    for name, (host, path) in CASES.items():
        r = web.respond(host, path, {}, now=NOW)
        meta = {"url": f"http://{host}:8000{path}", "status": r.status,
                "headers": [[k, v] for k, v in r.headers]}
        (HERE / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
        (HERE / f"{name}.body").write_bytes(r.body)


if __name__ == "__main__":
    main()
