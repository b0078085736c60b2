"""Refusals by a setting: which setting refused a URL, its signature, and the hint to change it.

A URL is *refused* when a setting, not the web, kept it from being downloaded: the address
guard (outcome `forbidden_address` in visited) or the scope filter (a row in filtered).
Each refusal row stores `refused_by`, the signature of the settings that decided it:

    "address_guard:<digest>"   --allow_loopback, --deny_addresses, --resolve/--resolve_file
    "<flag>:<digest>"          the one scope flag behind the filter reason (SCOPE_FLAGS)

A refusal whose signature is not among the round's current signatures is *stale*: the
setting has changed since, so the URL may be tried again. Only the setting of the failing
rule matters: the scope rules are checked in order and the first failing one is recorded,
so a URL refused for `extension` can only pass once --deny_extensions changes (the rules
before it passed already). Pure: no Beam, no I/O.
"""
from __future__ import annotations

import hashlib
import json

GUARD = "address_guard"

# scope filter reason -> the flag whose value decides it
SCOPE_FLAGS = {
    "url_too_long": "max_url_length",
    "host_not_allowed": "allow_hosts",
    "domain_not_allowed": "allow_domains",
    "regex_not_allowed": "url_regex_allow",
    "regex_deny": "url_regex_deny",
    "extension": "deny_extensions",
    "depth": "max_depth",
}

_SCOPE_HINTS = {
    "url_too_long": "raise --max_url_length to allow them",
    "host_not_allowed": "add their hosts to --allow_hosts (or clear it) to allow them",
    "domain_not_allowed": "add their domains to --allow_domains (or clear it) to allow them",
    "regex_not_allowed": "widen --url_regex_allow to allow them",
    "regex_deny": "narrow --url_regex_deny to allow them",
    "extension": "remove their extensions from --deny_extensions to allow them",
    "depth": "raise --max_depth (0 = no limit) to allow them",
}

_GUARD_HINTS = {
    "loopback": "add --allow_loopback true to allow it",
    "denied_by_flag": "remove its range from --deny_addresses to allow it",
}


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def guard_signature(allow_loopback, deny_addresses=(), resolve=()) -> str:
    """Signature of the address guard's settings (and the resolver overrides it judges)."""
    return f"{GUARD}:" + _digest([bool(allow_loopback), sorted(str(d) for d in deny_addresses),
                                  sorted([str(h), int(p), str(a)] for h, p, a in resolve)])


def scope_signatures(url_filter) -> dict:
    """{filter reason: signature of the flag that decides it} for a UrlFilter."""
    values = {
        "max_url_length": int(url_filter.max_url_length),
        "allow_hosts": sorted(url_filter.allow_hosts),
        "allow_domains": sorted(url_filter.allow_domains),
        "url_regex_allow": list(url_filter.url_regex_allow),
        "url_regex_deny": list(url_filter.url_regex_deny),
        "deny_extensions": sorted(url_filter.deny_extensions),
        "max_depth": url_filter.max_depth or 0,
    }
    return {reason: f"{flag}:{_digest(values[flag])}" for reason, flag in SCOPE_FLAGS.items()}


def signatures(allow_loopback, deny_addresses, resolve, url_filter) -> dict:
    """{GUARD or filter reason: signature}: every refusal signature a round writes."""
    return {GUARD: guard_signature(allow_loopback, deny_addresses, resolve),
            **scope_signatures(url_filter)}


def changed(current: dict, previous: dict | None) -> list:
    """Keys whose signature differs from the previous round's (all keys when unknown)."""
    if previous is None:
        return sorted(current)
    return sorted(k for k, v in current.items() if previous.get(k) != v)


def guard_hint(reason: str, count: int) -> str:
    what = _GUARD_HINTS.get(reason, "no flag allows such addresses; check --resolve/--resolve_file "
                                    "or the host's DNS")
    return (f"refused by the address guard ({reason}): {count} URL{'s' if count != 1 else ''}; "
            f"{what}")


def scope_hint(reason: str, count: int) -> str:
    what = _SCOPE_HINTS.get(reason, "change the scope flags to allow them")
    return f"refused by the scope ({reason}): {count} URL{'s' if count != 1 else ''}; {what}"
