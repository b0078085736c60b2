"""Fetch: one host's URLs fetched politely and robustly; many hosts at once per worker.

- `records`: `FetchConfig`, `FetchRequest`, `FetchResult`, `HostState` (a HOSTS row).
- `hostfetcher`: `HostFetcher.fetch_host`, one host sequentially with its delay, robots.txt, retries.
- `prepared`, `curlsender`, `curlhead`: a request as it goes out, sent over libcurl, its response head read.
- `connection`: a response's body read within the deadline and the cap, one request's failure kinds.
- `netguard`, `robots`, `httpbody`: the address guard and resolver, robots.txt rules, bounded decoding.
- `hostjob`: `fetch_one_host`, the never-raising unit the Beam step runs per host.
- `step`: `Fetch`, the Beam step (scope check, host state join, `FetchHosts`).
"""
