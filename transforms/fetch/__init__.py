"""Fetch: one host's URLs fetched politely and robustly; many hosts at once per worker.

- `records`: `FetchConfig`, `FetchRequest`, `FetchResult`, `HostState` (a HOSTS row).
- `hostfetcher`: `HostFetcher.fetch_host`, one host sequentially with its delay, robots.txt, retries.
- `prepared`, `curlsender`, `curlhead`: a request as it goes out, sent over libcurl, its response head read.
- `connection`: a response's body read within the deadline and the cap, one request's failure kinds.
- `netguard`, `robots`, `httpbody`: the address guard, robots.txt rules, bounded decoding.
- `resolver`, `dnslookup`: host names to addresses, DNS answers kept for their TTL.
- `politeness`, `unitfetch`: the politeness unit of a host (--politeness_key) and the hosts
  of one unit fetched over one delay and one connection budget.
- `hostjob`: `fetch_unit`, the never-raising unit the Beam step runs per politeness unit.
- `step`: `Fetch`, the Beam step (scope check, host state join, `PolitenessUnits`, `FetchHosts`).
"""
