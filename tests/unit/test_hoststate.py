"""The round's hosts picked out of the HOSTS table by Arrow (transforms.fetch.hoststate): the
rows the old row-by-row Python test picked, and the rest untouched."""
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import tables
from transforms.fetch.hoststate import host_rows, other_hosts

NAMES = [f"h{i}.test" for i in range(12)]


def _table(hosts):
    rows = [{"host": h, "robots_body": f"User-agent: *\nDisallow: /{i}\n".encode(), "fetches": i}
            for i, h in enumerate(hosts)]
    return pa.Table.from_pylist([{name: r.get(name) for name in tables.HOSTS.names} for r in rows],
                                schema=tables.HOSTS)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(NAMES), unique=True), st.lists(st.sampled_from(NAMES + ["x.test"])))
def test_the_chosen_rows_and_the_others_split_the_table_as_a_row_by_row_test_does(hosts, chosen):
    t = _table(hosts)
    want = set(chosen)
    expected = [(r["host"], r) for r in t.to_pylist() if r["host"] in want]
    assert host_rows(t, chosen) == expected
    rest = other_hosts(t, chosen)
    assert rest.schema == t.schema
    assert rest.to_pylist() == [r for r in t.to_pylist() if r["host"] not in want]


def test_a_record_batch_and_no_chosen_host():
    t = _table(NAMES[:3])
    batch = t.to_batches()[0]
    assert host_rows(batch, []) == []
    assert other_hosts(batch, []).to_pylist() == t.to_pylist()
    assert [h for h, _ in host_rows(batch, [NAMES[2], NAMES[0]])] == [NAMES[0], NAMES[2]]
