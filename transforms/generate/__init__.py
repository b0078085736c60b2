"""Generate: pick the round's fetch list from the frontier.

- `select`: the selection (top K by score, host caps, due rows), plain numpy/pyarrow.
- `step`: `Generate`, the Beam combine over frontier row groups and one element per host.
"""
