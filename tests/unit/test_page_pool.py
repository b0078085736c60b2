"""The page step on worker processes (--page_processes) gives exactly the inline outputs."""
import glob
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.unit.test_page_fate import CONFIG, fetched
from transforms.page.fate import page_fate
from transforms.page.pool import FatePool, auto_processes
from transforms.page.step import PageFates

NAMES = sorted(Path(p).stem for p in glob.glob(str(Path(__file__).parent / "data" / "page_fate" / "*.json")))


def _pages():
    return [fetched(n) for n in NAMES] * 3


def test_a_pool_computes_the_same_fates_as_inline():
    pages = _pages()
    pool = FatePool(CONFIG, processes=2, batch=4, inflight=2)
    got = []
    try:
        for p in pages[:4]:   # the first batch starts the workers and is parsed here meanwhile
            for fates, seconds in pool.submit(p):
                got.extend(fates)
        pool.wait_started()
        for p in pages[4:]:
            for fates, seconds in pool.submit(p):
                got.extend(fates)
                assert seconds >= 0
        for fates, _ in pool.drain():
            got.extend(fates)
    finally:
        pool.close()
    assert len(got) == len(pages)
    assert pool.sent > 0 and pool.broken is None
    key = lambda f: repr(sorted(f.result.items()))
    assert sorted(map(repr, got), key=str) == sorted((repr(page_fate(p, CONFIG)) for p in pages), key=str)
    assert sorted(map(key, got)) == sorted(key(page_fate(p, CONFIG)) for p in pages)


def _fates_through(pool, pages):
    """The fates of `pages` submitted to `pool` once its workers are up, then drained; closed."""
    got = []
    try:
        pool.wait_started()
        for p in pages:
            got += [f for fates, _ in pool.submit(p) for f in fates]
        got += [f for fates, _ in pool.drain() for f in fates]
    finally:
        pool.close()
    return got


def test_workers_can_hand_back_link_bundles_pickled_for_the_spill():
    """With `pickled_links`, the workers' fates carry each link bundle `Pickled` (as a spill
    file holds it), the same bundles as inline once unpickled; the rest of each fate as is."""
    import pickle

    from transforms.tableio.pickled import Pickled
    pages = _pages()
    pool = FatePool(CONFIG, processes=1, batch=4, inflight=1000, pickled_links=True)   # none inline
    got = _fates_through(pool, pages)
    assert pool.sent > 0 and len(got) == len(pages)
    want = [page_fate(p, CONFIG) for p in pages]
    key = lambda f: repr(sorted(f.result.items()))
    got, want = sorted(got, key=key), sorted(want, key=key)
    links = [b for f in got for b in f.links]
    assert links and all(type(b) is Pickled for b in links)
    for g, w in zip(got, want):
        assert [pickle.loads(b) for b in g.links] == w.links
        g.links, w.links = [], []
        assert repr(g) == repr(w)


def _through_a_busy_pool(inline_max_bytes):
    """(fates, batches sent to the worker, batches in all) of the test pages through one worker
    that may hold one batch: every later batch finds it busy."""
    pages = _pages() * 2
    pool = FatePool(CONFIG, processes=1, batch=2, inflight=1, inline_max_bytes=inline_max_bytes)
    got = _fates_through(pool, pages)
    assert pool.broken is None
    return got, pool.sent, len(pages) // 2


def test_a_batch_with_a_big_page_waits_for_a_worker_and_is_never_parsed_inline():
    """A page's parse tree is 20-30 times its size: a batch holding a page of at least
    `inline_max_bytes` waits for the worker instead of being parsed in the fetching process.
    The same fates either way."""
    key = lambda f: repr(sorted(f.result.items()))
    want = sorted((page_fate(p, CONFIG) for p in _pages() * 2), key=key)
    waited, sent, batches = _through_a_busy_pool(inline_max_bytes=0)   # every batch is big
    assert sent == batches
    assert [repr(f) for f in sorted(waited, key=key)] == [repr(f) for f in want]
    parsed_here, sent, batches = _through_a_busy_pool(inline_max_bytes=1 << 30)   # none is
    assert sent < batches   # the worker was busy: without the limit, batches were parsed here
    assert [repr(f) for f in sorted(parsed_here, key=key)] == [repr(f) for f in want]


def _outputs(processes):
    tags = ("results", "pages", "links", "filtered")
    with TestPipeline() as p:
        out = (p | beam.Create(_pages(), reshuffle=False)
               | beam.ParDo(PageFates(CONFIG, processes, min_pages=2)).with_outputs(*tags, "stats", main="visited"))
        expected = {"visited": [], **{t: [] for t in tags}}
        for page in _pages():
            fate = page_fate(page, CONFIG)
            expected["results"].append(fate.result)
            expected["links"].extend(fate.links)
            expected["filtered"].extend(fate.filtered)
            if fate.visited is not None:
                expected["visited"].append(fate.visited)
            if fate.stored is not None:
                expected["pages"].append(fate.stored)
        for tag, rows in expected.items():
            as_repr = out[tag] | f"Repr{tag}" >> beam.Map(lambda r: repr(sorted(r.items())))
            assert_that(as_repr, equal_to([repr(sorted(r.items())) for r in rows]), label=f"Check{tag}")


def test_the_page_step_on_worker_processes_emits_what_it_emits_inline():
    _outputs(1)
    _outputs(0)


def test_auto_leaves_one_core_to_the_fetch():
    assert auto_processes(1) == 0
    assert auto_processes(2) == 1
    assert auto_processes(8) == 7


def test_a_dead_worker_loses_no_page(caplog):
    """A worker killed mid-round: its batch and every later one are parsed in this process."""
    import os
    import signal

    pages = _pages()
    pool = FatePool(CONFIG, processes=1, batch=4, inflight=2)
    got = []
    try:
        assert pool.submit(pages[0]) == []
        for p in pages[1:4]:
            for fates, _ in pool.submit(p):
                got.extend(fates)
        pool.wait_started()
        sent = pool.sent          # (0, or 1 when the worker started before the first batch was full)
        for p in pages[4:8]:      # a batch in the worker when it dies
            for fates, _ in pool.submit(p):
                got.extend(fates)
        assert pool.sent == sent + 1
        for worker in pool._workers:
            os.kill(worker._proc.pid, signal.SIGKILL)
        for p in pages[8:]:
            for fates, _ in pool.submit(p):
                got.extend(fates)
        for fates, _ in pool.drain():
            got.extend(fates)
    finally:
        pool.close()
    assert pool.broken is not None
    key = lambda f: repr(sorted(f.result.items()))
    assert sorted(map(key, got)) == sorted(key(page_fate(p, CONFIG)) for p in pages)


def test_a_process_that_may_not_start_workers_parses_inline(monkeypatch):
    """E.g. a daemonic worker process of a cluster engine: no pool, same fates, one warning."""
    import transforms.procs as procs

    def refuse(*args, **kwargs):
        raise AssertionError("daemonic processes are not allowed to have children")
    monkeypatch.setattr(procs, "start_helper", refuse)
    pages = _pages()[:10]
    pool = FatePool(CONFIG, processes=2, batch=4)
    pool.wait_started()
    got = [f for p in pages for fates, _ in pool.submit(p) for f in fates]
    got += [f for fates, _ in pool.drain() for f in fates]
    pool.close()
    assert "daemonic" in pool.broken
    assert sorted(map(repr, got)) == sorted(repr(page_fate(p, CONFIG)) for p in pages)


_NO_GUARD_SCRIPT = '''
import concurrent.futures as cf, sys
sys.path.insert(0, {repo!r})
import apache_beam                          # the main module of a round imports Beam
from transforms.procs import helper_context, main_module_hidden
print("MAIN RAN", flush=True)               # no __main__ guard: a worker importing it would print too
with main_module_hidden():
    ex = cf.ProcessPoolExecutor(1, mp_context=helper_context())
    fut = ex.submit(eval, "sorted(m for m in ('apache_beam', 'pipelines') if m in __import__('sys').modules)"
                          " + [getattr(__import__('sys').modules.get('__mp_main__'), '__file__', None)]")
print("WORKER HAS", fut.result(), flush=True)
ex.shutdown()
print("MAIN FILE KEPT", __file__ == {path!r}, flush=True)
'''


def test_workers_do_not_import_the_main_module(tmp_path):
    """The fork server and workers run without the main module: no Beam in them, and a
    script without a `__main__` guard is not run again."""
    import subprocess
    import sys
    script = tmp_path / "noguard.py"
    script.write_text(_NO_GUARD_SCRIPT.format(repo=str(Path(__file__).parents[2]), path=str(script)))
    out = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("MAIN RAN") == 1, out.stdout
    assert "WORKER HAS [None]" in out.stdout, out.stdout     # no Beam, no pipeline, not the script
    assert "MAIN FILE KEPT True" in out.stdout, out.stdout


def test_the_memory_budget_sets_how_many_batches_the_workers_may_hold():
    assert FatePool(CONFIG, processes=1, batch=16, inflight_pages=256).inflight == 16
    assert FatePool(CONFIG, processes=2, batch=16, inflight_pages=16).inflight == 8   # at least 4 each
    dofn = PageFates(CONFIG, processes=1, min_pages=2, inflight_pages=512)
    dofn.setup()
    dofn.start_bundle()
    try:
        for p in _pages()[:dofn.min_pages + 1]:
            list(dofn.process(p))
        assert dofn._pool.inflight == 32
    finally:
        dofn.teardown()


def test_a_round_planning_min_pages_or_more_parses_on_the_workers_from_its_first_page():
    """The fetch list's size (side input `planned`) starts the pool with the first page of a
    big round; a smaller round keeps its first `min_pages` pages here (no process start)."""
    pages = _pages()[:3]

    def pool_after(planned):
        dofn = PageFates(CONFIG, processes=1, min_pages=1000)
        dofn.setup()
        dofn.start_bundle()
        try:
            list(dofn.process(pages[0], planned=planned))
            started = dofn._pool is not None
            for p in pages[1:]:
                list(dofn.process(p, planned=planned))
            list(dofn.finish_bundle())
            return started
        finally:
            dofn.teardown()

    assert pool_after(1000)
    assert not pool_after(999)
    assert not pool_after(0)


def _texts(n, seed=1):
    import random
    rnd = random.Random(seed)
    words = [f"w{i}" for i in range(3000)]
    return [" ".join(rnd.choices(words, k=rnd.randint(0, 150))) for _ in range(n)]


def test_the_sign_pool_gives_minhash_signatures_bit_for_bit():
    """Big batches go half to the helper (it did sign), small ones stay here; the signatures
    and has-flags equal one `minhash_signatures` call over the whole batch."""
    import numpy as np

    from transforms.contentseen.fingerprints import minhash_signatures
    from transforms.page.pool import SignPool
    pool = SignPool(min_texts=50).start()
    try:
        pool._starter.join()
        for n in (10, 50, 301):
            texts = _texts(n, seed=n)
            want, got = minhash_signatures(texts), pool.sign(texts)
            assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
        assert pool.sent == 2 and pool.broken is None
    finally:
        pool.close()


def test_the_first_big_batch_waits_for_the_sign_helper_to_start():
    """A big batch signed while the helper is still starting waits for it (up to
    WAIT_START) and sends it half, instead of signing the whole batch alone."""
    import numpy as np

    from transforms.contentseen.fingerprints import minhash_signatures
    from transforms.page.pool import SignPool
    pool = SignPool(min_texts=50)
    pool.WAIT_START = 60.0   # no race with a slow machine: only the wait is checked here
    pool.start()
    try:
        texts = _texts(301, seed=3)
        got = pool.sign(texts)   # at once, while the start is under way
        assert pool.sent == 1
        assert np.array_equal(got[0], minhash_signatures(texts)[0])
    finally:
        pool.close()


def test_a_dead_sign_helper_only_makes_signing_local():
    import numpy as np

    from transforms.contentseen.fingerprints import minhash_signatures
    from transforms.page.pool import SignPool
    pool = SignPool(min_texts=10).start()
    pool._starter.join()
    pool._proc.kill()
    pool._proc.join()
    texts = _texts(40)
    got = pool.sign(texts)
    assert np.array_equal(got[0], minhash_signatures(texts)[0]) and pool.broken
    assert np.array_equal(pool.sign(texts)[0], got[0])
    pool.close()


def test_visited_tables_with_a_sign_helper_equal_the_inline_tables():
    """The round's VisitedTables step with a helper allowed: the tables are the inline
    `visited_table`'s (MinHash and LSH columns included). Whether this one batch went half to
    the helper depends on how fast it started; the split itself is checked above."""
    from transforms.page.step import VisitedTables
    from transforms.page.visited import TEXT_FOR_MINHASH, visited_table

    def rows():
        return [{"fp": i, "url": f"http://h.test/{i}", "host": "h.test", TEXT_FOR_MINHASH: t}
                for i, t in enumerate(_texts(600))]
    want = visited_table(rows()).to_pylist()
    with TestPipeline() as p:
        got = (p | beam.Create([rows()]) | beam.ParDo(VisitedTables(processes=1))
               | beam.FlatMap(lambda t: t.to_pylist()))
        assert_that(got, equal_to(want))
    assert any(r["minhash"] for r in want) and any(r["minhash"] is None for r in want)


def test_visited_tables_of_many_batches_signed_ahead_equal_the_inline_tables():
    """Several batches through VisitedTables (each table goes out when the next batch comes,
    the last at the bundle's end) give the inline tables, none lost or doubled; the pool's
    share may move, the signatures not."""
    from transforms.page.step import VisitedTables
    from transforms.page.visited import TEXT_FOR_MINHASH, visited_table

    def batch(b):
        return [{"fp": 1000 * b + i, "url": f"http://h.test/{b}/{i}", "host": "h.test", TEXT_FOR_MINHASH: t}
                for i, t in enumerate(_texts(300, seed=b))]
    want = [r for b in range(5) for r in visited_table(batch(b)).to_pylist()]
    with TestPipeline() as p:
        got = (p | beam.Create([batch(b) for b in range(5)], reshuffle=False)
               | beam.ParDo(VisitedTables(processes=1)) | beam.FlatMap(lambda t: t.to_pylist()))
        assert_that(got, equal_to(want))


def test_the_sign_pool_signs_batches_begun_ahead_in_order_within_its_share_bounds():
    """begin/end with two batches out at once: each batch's signatures are its own, and the
    helper's share stays within its bounds."""
    import numpy as np

    from transforms.contentseen.fingerprints import minhash_signatures
    from transforms.page.pool import SignPool
    pool = SignPool(min_texts=50)
    pool.WAIT_START = 60.0
    pool.start()
    try:
        batches = [_texts(300, seed=s) for s in range(6)]
        out, shares = [], []

        def end_oldest():
            j, signing = out.pop(0)
            done, want = pool.end(signing), minhash_signatures(batches[j])
            shares.append(pool.share)
            assert np.array_equal(done[0], want[0]) and np.array_equal(done[1], want[1])
        for i, texts in enumerate(batches):
            out.append((i, pool.begin(texts)))
            if len(out) == 2:        # two batches out at once from the second on
                end_oldest()
        while out:
            end_oldest()
        assert pool.sent == 6
        assert all(pool.MIN_SHARE <= s <= pool.MAX_SHARE for s in shares)
        # ending the later of two batches first is refused (the helper answers in order)
        first, second = pool.begin(batches[0]), pool.begin(batches[1])
        with pytest.raises(ValueError, match="in the order"):
            pool.end(second)
        for j, signing in ((0, first), (1, second)):
            done, want = pool.end(signing), minhash_signatures(batches[j])
            assert np.array_equal(done[0], want[0]) and np.array_equal(done[1], want[1])
    finally:
        pool.close()


def test_the_main_module_stays_hidden_while_another_thread_starts_a_process(monkeypatch):
    """Two threads hiding `__main__` at once (the fork server warming while a stage starts a
    helper): the one still starting a process must not see `__file__` back because the other
    finished, and both leave `__main__` as it was."""
    import sys
    import threading
    import time
    import types

    from transforms.procs import main_module_hidden
    main = types.ModuleType("__main__")
    main.__file__, main.__spec__ = "/somewhere/script.py", "a spec"
    monkeypatch.setitem(sys.modules, "__main__", main)
    first_in, second_started, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with main_module_hidden():
            first_in.set()
            second_started.wait(5)
            time.sleep(0.2)    # the second thread would be inside by now, were it let in
        first_out.set()

    def second():
        first_in.wait(5)
        second_started.set()
        with main_module_hidden():
            first_out.wait(5)
            seen["file"], seen["spec"] = main.__dict__.get("__file__"), main.__spec__

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads) and first_out.is_set()
    assert seen == {"file": None, "spec": None}
    assert (main.__file__, main.__spec__) == ("/somewhere/script.py", "a spec")
