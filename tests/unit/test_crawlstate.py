"""The e2e "same state" helper (tests/e2e/crawlstate.py) fails where two crawls differ: in any
column it does not name as varying, in any table, with either side empty or holding a row twice."""
import pytest

from pipelines.crawldir import DELTA_TABLES, SNAPSHOT_TABLES
from schemas import tables
from tests.e2e import crawlstate


def _state(n=1, **rows):
    """A state of round n: every table empty but those given as {table: [row dict]}."""
    out = {}
    for t in crawlstate.TABLES:
        cols = crawlstate.columns(t)
        out[t] = (cols, [tuple(crawlstate._freeze(r.get(c)) for c in cols) for r in rows.get(t, [])])
    out["warc"] = (crawlstate.WARC_COLUMNS, [tuple(r) for r in rows.get("warc", [])])
    return {"round": n, "tables": out}


PAGE = {"fp": 1, "url": "http://a.test/", "host": "a.test", "round": 1, "outcome": "ok", "bytes": 10,
        "content_fp": 7, "minhash": [3, 1, 2], "fetch_time": 100.0, "elapsed_ms": 5.0}
LINK = {"src_fp": 1, "dst_fp": 2, "src": "http://a.test/", "dst": "http://a.test/b", "round": 1}


def test_every_committed_table_and_every_column_but_the_named_ones_is_compared():
    assert set(crawlstate.TABLES) == set(SNAPSHOT_TABLES + DELTA_TABLES)
    for table in crawlstate.TABLES:
        names = set(tables.TABLES[table].names)
        varies = set(crawlstate.VARIES.get(table, {}))
        assert varies <= names, (table, varies - names)
        assert set(crawlstate.columns(table)) == names - varies
        assert set(crawlstate.KEYS.get(table, ())) <= set(crawlstate.columns(table))
    assert all(reason for why in crawlstate.VARIES.values() for reason in why.values())


def test_equal_states_pass_and_varying_columns_are_ignored():
    later = dict(PAGE, fetch_time=999.0, elapsed_ms=77.0, minhash=[1, 2, 3])
    crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK]), _state(visited=[later], links=[LINK]))


@pytest.mark.parametrize("column,value", [("bytes", 11), ("content_fp", 8), ("minhash", [3, 1, 9])])
def test_a_difference_in_any_other_column_fails(column, value):
    with pytest.raises(AssertionError, match=f"visited: 1 rows only in the first.*columns \\['{column}'\\] differ"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK]),
                                     _state(visited=[dict(PAGE, **{column: value})], links=[LINK]))


def test_a_table_the_old_helper_left_out_is_compared():
    near = {"fp": 1, "url": PAGE["url"], "round": 1, "of_fp": 3, "jaccard": 0.9}
    with pytest.raises(AssertionError, match="near_duplicates: 1 rows only in the first"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK], near_duplicates=[near]),
                                     _state(visited=[PAGE], links=[LINK]))
    warc = (1, "response", PAGE["url"], "200", "ab")
    with pytest.raises(AssertionError, match="warc: 0 rows only in the first state, 1 only in the second"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK]),
                                     _state(visited=[PAGE], links=[LINK], warc=[warc]))


def test_two_empty_crawls_do_not_compare_equal():
    with pytest.raises(AssertionError, match=r"first state \(round 1\) has no rows in \['visited', 'links'\]"):
        crawlstate.assert_same_state(_state(), _state())
    with pytest.raises(AssertionError, match=r"second state \(round 1\) has no rows in \['visited'\]"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK]), _state(links=[LINK]))
    with pytest.raises(AssertionError, match=r"round 0\) has no rows in \['frontier'\]"):
        crawlstate.assert_same_state(_state(0), _state(0))


def test_a_row_held_twice_fails_on_either_side():
    twice = _state(visited=[PAGE, dict(PAGE, bytes=12)], links=[LINK])
    with pytest.raises(AssertionError, match=r"second state, visited: 1 \('fp', 'round'\) held twice"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK]), twice)
    with pytest.raises(AssertionError, match=r"first state, links: 1 rows held twice"):
        crawlstate.assert_same_state(_state(visited=[PAGE], links=[LINK, LINK]),
                                     _state(visited=[PAGE], links=[LINK, LINK]))
