"""The Scrapy side of the real-web benchmark (run with the bench venv's python, not the
project's): ``python scrapy_spider.py EXPORT_DIR PORT CONNS OUT_JSON [DELAY [PAGECOUNT]]``.

A CrawlSpider following every link (a, area, iframe, frame, meta refresh; not rel=nofollow,
like the ground truth and beamcrawl's --honour_nofollow) within the exported hosts,
ROBOTSTXT_OBEY, DOWNLOAD_DELAY 0, CONCURRENT_REQUESTS_PER_DOMAIN = CONNS, Scrapy's
broad-crawl settings (DownloaderAwarePriorityQueue), dedup on. Host names resolve to
127.0.0.1 through a resolver override (nothing reaches the system resolver); URLs keep the
names and the port, so the Host header is the page's host. Dedup fingerprints are the
canonical URL of the ground truth (lower-case host, dot segments resolved, unreserved
percent-escapes decoded, no fragment, query in the order written), so URL variants count as
the truth counts them.

Scrapy 2.19 with DOWNLOAD_DELAY 0 does not hold CONCURRENT_REQUESTS_PER_DOMAIN: its
Downloader._process_queue pops the slot's whole queue in one loop (``while slot.queue and
slot.free_transfer_slots() > 0``) before the scheduled ``_download`` coroutines add the requests
to ``slot.transferring``, so a host gets bursts of requests in parallel (the nginx log shows up
to ~30 connections to one host in flight with CONCURRENT_REQUESTS_PER_DOMAIN = 1; Scrapy
2.13.3 holds 1). The optional 5th argument sets DOWNLOAD_DELAY; any delay > 0 takes the
loop's ``break`` branch (run.py --scrapy_delay).
"""
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from canon import canonical  # noqa: E402  (shared with the analysis; no dependencies)

from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse, Request
from scrapy.linkextractors import LinkExtractor
from scrapy.resolver import CachingThreadedResolver
from scrapy.spiders import CrawlSpider, Rule
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

HOSTS: set = set()
class MapResolver(CachingThreadedResolver):
    def getHostByName(self, name, timeout=()):
        if name.lower() in HOSTS:
            return defer.succeed("127.0.0.1")
        return defer.fail(DNSLookupError(f"{name}: not an exported host"))


class CanonicalFingerprinter:
    @classmethod
    def from_crawler(cls, crawler):
        return cls()

    def fingerprint(self, request):
        return hashlib.sha1(f"{request.method} {canonical(request.url)}".encode()).digest()


REFRESH = re.compile(rb"""<meta\s+http-equiv=["']?refresh["']?\s+content=["'][^"']*?url=([^"'>\s]+)""", re.I)


class BenchSpider(CrawlSpider):
    name = "bench"
    pages = 0
    # (LinkExtractor's allow_domains compares the netloc with its port: filter hosts here)
    rules = (Rule(LinkExtractor(tags=("a", "area", "iframe", "frame"), attrs=("href", "src"),
                                deny_extensions=[], canonicalize=False),
                  callback="parse_page", follow=True, process_links="in_scope"),)

    def __init__(self, seeds=(), domain="simweb.test", **kw):
        self.start_urls = list(seeds)
        self.allowed_domains = [domain]
        super().__init__(**kw)

    async def start(self):
        # Scrapy's default start requests are dont_filter=True, so a later link to a seed
        # would fetch it again; dedup covers the seeds too
        for url in self.start_urls:
            yield Request(url)

    def in_scope(self, links):
        return [l for l in links if not l.nofollow and (urlsplit(l.url).hostname or "") in HOSTS]

    def parse_start_url(self, response, **kw):
        return self.parse_page(response)

    def parse_page(self, response):
        BenchSpider.pages += 1
        if isinstance(response, HtmlResponse):
            m = REFRESH.search(response.body[:4096])
            if m and (urlsplit(response.urljoin(m.group(1).decode("latin-1"))).hostname or "") in HOSTS:
                yield Request(response.urljoin(m.group(1).decode("latin-1")))


def main(export_dir, port, conns, out_json, delay="0", pagecount="0"):
    export_dir = Path(export_dir)
    manifest = json.loads((export_dir / "manifest.json").read_text())
    HOSTS.update(manifest["hosts"])
    seeds = (export_dir / "seeds.txt").read_text().split()
    conns = int(conns)
    settings = {
        "ROBOTSTXT_OBEY": True, "DOWNLOAD_DELAY": float(delay), "RANDOMIZE_DOWNLOAD_DELAY": False,
        "AUTOTHROTTLE_ENABLED": False, "CONCURRENT_REQUESTS_PER_DOMAIN": conns,
        "CONCURRENT_REQUESTS": max(64, 16 * conns), "CONCURRENT_ITEMS": 100,
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "DNS_RESOLVER": f"{__name__}.MapResolver", "DNSCACHE_ENABLED": True,
        "REQUEST_FINGERPRINTER_CLASS": f"{__name__}.CanonicalFingerprinter",
        "METAREFRESH_ENABLED": False,     # the spider queues refresh targets as links
        "COOKIES_ENABLED": False, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO",
        "DEPTH_LIMIT": 0, "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024, "RETRY_TIMES": 2,
        "DOWNLOAD_TIMEOUT": 60, "REACTOR_THREADPOOL_MAXSIZE": 4,
        "CLOSESPIDER_PAGECOUNT": int(pagecount),     # 0: no limit (run.py --short sets one)
    }
    t0 = time.time()
    proc = CrawlerProcess(settings)
    crawler = proc.create_crawler(BenchSpider)
    proc.crawl(crawler, seeds=seeds, domain=manifest.get("domain", "simweb.test"))
    proc.start()
    stats = crawler.stats.get_stats()
    Path(out_json).write_text(json.dumps({"wall": time.time() - t0, "pages": BenchSpider.pages,
                                          "stats": {k: v for k, v in stats.items()
                                                    if isinstance(v, (int, float, str))}}, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:7])
