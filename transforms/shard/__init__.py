"""Sharding: keep this fleet's hosts, forward the rest to their owners' inboxes (issue #15).
Beam step: `step.py`; the split itself, without a runner: `split.py`."""
