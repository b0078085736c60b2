"""Named parameters with defaults, shared by orderings and revisit policies (pure).

A strategy declares `params()` -> {name: default}; each becomes an attribute, a
`--strategy_params` / `--refetch_params` key, and part of its repr. Unknown names fail."""


class WithParams:
    name: str = ""

    def __init__(self, **params):
        unknown = set(params) - set(self.params())
        if unknown:
            raise TypeError(f"{self.name}: unknown parameter(s) {sorted(unknown)}")
        for k, v in self.params().items():
            setattr(self, k, params.get(k, v))

    @classmethod
    def params(cls) -> dict:
        """Parameter names and defaults."""
        return {}

    def __repr__(self):
        ps = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.params())
        return f"{type(self).__name__}({ps})"
