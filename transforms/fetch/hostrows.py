"""A host's fetch-list rows as a fetch holds them: columns, a row a dict only while it is used.

A fetch process holds the rows of every host it fetches until the host is done, and the
biggest hosts are sent first (`FetchHosts` fetches the longest first), so in a round of
45 000 URLs the two fetch processes held ~37 000 rows at once. As one dict per row they
took ~830 bytes a row once unpickled; as columns ~410 (bench150k's biggest host, 15 389
rows, tracemalloc), with a column whose rows all hold one value (the host, most often the
source) kept as that one value repeated, which pickles once. Pickled, the columns are
also smaller (~142 against ~197 bytes a row), and quicker: a 35-row host took 72 against
100 us to convert in the round's process and 13.5 against 31.7 us to load (timeit).
"""
from __future__ import annotations


class HostRows:
    """Rows of `names` as lists of values, one list per column. `rows[i]` and iteration
    give dicts (built then, not kept); `column(name)` a column's list."""

    __slots__ = ("names", "columns")

    def __init__(self, names, columns):
        self.names, self.columns = list(names), list(columns)

    @classmethod
    def from_table(cls, table, names) -> HostRows:
        """The columns of `table` among `names` (in that order)."""
        have = set(table.column_names)
        names = [c for c in names if c in have]
        return cls(names, [_values(table.column(c)) for c in names])

    def __len__(self):
        return len(self.columns[0]) if self.columns else 0

    def __getitem__(self, i) -> dict:
        return {name: column[i] for name, column in zip(self.names, self.columns)}

    def __iter__(self):
        for values in zip(*self.columns):
            yield dict(zip(self.names, values))

    def column(self, name) -> list:
        """A column's values (None for each row when the rows have no such column)."""
        if name in self.names:
            return self.columns[self.names.index(name)]
        return [None] * len(self)

    def __reduce__(self):
        return HostRows, (self.names, self.columns)


def _values(column) -> list:
    """A chunked array's values as a list; one value for every row is one object, repeated."""
    values = column.to_pylist()
    if len(values) > 1 and values.count(values[0]) == len(values):
        return [values[0]] * len(values)
    return values
