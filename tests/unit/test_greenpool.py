"""GreenPool: synchronous jobs as greenlets on one event loop (transforms/fetch/greenpool.py)."""
import asyncio
import threading

import pytest

from transforms.fetch.greenpool import GreenPool, await_only, in_green, run_concurrently


def _sleep(seconds):
    await_only(asyncio.sleep(seconds))


def test_jobs_run_at_most_max_workers_at_once_and_start_in_the_order_submitted():
    pool = GreenPool(3)
    started, running, peak = [], [0], [0]

    def job(i):
        started.append(i)
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        _sleep(0.02)
        running[0] -= 1
        return i * i

    futures = [pool.submit(job, i) for i in range(10)]
    assert [f.result(timeout=10) for f in futures] == [i * i for i in range(10)]
    pool.shutdown()
    assert started == list(range(10)) and peak[0] == 3


def test_waiting_jobs_overlap_on_the_one_loop_thread():
    pool = GreenPool(8)
    threads = set()

    def job():
        threads.add(threading.get_ident())
        _sleep(0.2)

    futures = [pool.submit(job) for _ in range(8)]
    for f in futures:
        f.result(timeout=10)
    pool.shutdown()
    assert len(threads) == 1 and threads != {threading.get_ident()}


def test_an_exception_reaches_the_future_and_one_awaited_reaches_the_job():
    pool = GreenPool(2)

    async def fails():
        raise ConnectionResetError("peer reset")

    def caught():
        try:
            await_only(fails())
        except ConnectionResetError as e:
            return f"caught {e}"

    def raises():
        raise ValueError("bad job")

    assert pool.submit(caught).result(timeout=10) == "caught peer reset"
    with pytest.raises(ValueError, match="bad job"):
        pool.submit(raises).result(timeout=10)
    pool.shutdown()


def test_await_only_outside_a_pool_job_is_an_error():
    assert not in_green()
    coro = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="outside a GreenPool job"):
        await_only(coro)
    coro.close()


def test_shutdown_with_cancel_lets_running_jobs_finish_and_drops_waiting_ones():
    pool = GreenPool(1)
    done = []

    def job(i):
        _sleep(0.1)
        done.append(i)

    futures = [pool.submit(job, i) for i in range(3)]
    _wait_until(lambda: pool._running)
    pool.shutdown(wait=True, cancel_futures=True)
    assert done == [0] and futures[0].result() is None
    assert all(f.cancelled() for f in futures[1:])
    with pytest.raises(RuntimeError):
        pool.submit(job, 9)


def test_run_concurrently_overlaps_calls_as_greenlets_in_a_job_and_as_threads_outside():
    def calls(log):
        def call(name):
            def run():
                log.append(f"{name} start")
                (_sleep if in_green() else __import__("time").sleep)(0.05)
                log.append(f"{name} end")
            return run
        return [call("a"), call("b")]

    pool = GreenPool(1)
    green_log = []
    pool.submit(run_concurrently, calls(green_log)).result(timeout=10)
    pool.shutdown()
    thread_log = []
    run_concurrently(calls(thread_log))
    for log in (green_log, thread_log):   # both started before either ended
        assert sorted(log[:2]) == ["a start", "b start"] and sorted(log[2:]) == ["a end", "b end"]


def _wait_until(predicate, seconds=5.0):
    import time
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end
        time.sleep(0.005)


def test_the_fetch_engine_flag_picks_the_pool_and_the_fetchers():
    import concurrent.futures as cf

    from transforms.fetch.hostjob import fetch_pool
    from transforms.fetch.records import FetchConfig

    pool, factory = fetch_pool(FetchConfig(engine="loop"), 4)
    assert isinstance(pool, GreenPool) and factory.green and factory.tls is not None
    assert pool.submit(lambda: factory().green).result(timeout=10) is True
    pool.shutdown()
    for config, renderer in ((FetchConfig(engine="threads"), None), (FetchConfig(engine="loop"), object())):
        pool, factory = fetch_pool(config, 4, renderer)   # --render: the browser needs threads
        assert isinstance(pool, cf.ThreadPoolExecutor) and not factory.green
        pool.shutdown()
