"""The batcher without HTTP: batch formation, delay, deadlines, queue limit, isolation, drain."""

import asyncio
import time

import pytest

from turboinfer.serve.errors import DeadlineExceeded, QueueFull, ShuttingDown
from turboinfer.serve.v2.batcher import (
    Batcher,
    BatcherConfig,
    BatchReport,
    Pending,
)


def run(coro):
    return asyncio.run(coro)


async def started(config: BatcherConfig, run_batch, reports: list[BatchReport]) -> Batcher:
    batcher = Batcher(config, run_batch, reports.append)
    batcher.start()
    return batcher


async def echo(batch: list[Pending]) -> list:
    await asyncio.sleep(0.001)
    return [p.payload * 10 for p in batch]


def test_concurrent_requests_form_full_batches():
    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=8, max_delay_s=0.05), echo, reports)
        results = await asyncio.gather(*(batcher.submit(i) for i in range(20)))
        await batcher.stop()
        return results, reports

    results, reports = run(scenario())
    assert results == [i * 10 for i in range(20)]  # one output per input, in order
    assert [r.size for r in reports] == [8, 8, 4]
    assert [r.reason for r in reports] == ["full", "full", "delay"]


def test_a_lone_request_waits_for_the_delay_then_runs():
    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=8, max_delay_s=0.03), echo, reports)
        start = time.perf_counter()
        result = await batcher.submit(7)
        waited = time.perf_counter() - start
        await batcher.stop()
        return result, waited, reports

    result, waited, reports = run(scenario())
    assert result == 70
    assert waited >= 0.03
    assert reports[0].reason == "delay" and reports[0].queue_s[0] >= 0.029


def test_expired_requests_are_dropped_before_compute():
    seen: list[int] = []

    async def slow(batch: list[Pending]) -> list:
        seen.extend(p.payload for p in batch)
        await asyncio.sleep(0.05)
        return [p.payload for p in batch]

    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0), slow, reports)
        first = asyncio.create_task(batcher.submit(1))
        await asyncio.sleep(0.005)
        late = asyncio.create_task(batcher.submit(2, deadline=time.perf_counter() + 0.01))
        results = await asyncio.gather(first, late, return_exceptions=True)
        await batcher.stop()
        return results, reports

    results, reports = run(scenario())
    assert results[0] == 1
    assert isinstance(results[1], DeadlineExceeded)
    assert seen == [1]
    assert reports[-1].expired == 1


def test_full_queue_refuses_at_once():
    release = asyncio.Event

    async def scenario():
        gate = release()

        async def blocked(batch: list[Pending]) -> list:
            await gate.wait()
            return [p.payload for p in batch]

        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0, queue_size=2), blocked, [])
        running = asyncio.create_task(batcher.submit(0))
        await asyncio.sleep(0.01)  # request 0 is computing
        queued = [asyncio.create_task(batcher.submit(i)) for i in (1, 2)]
        await asyncio.sleep(0.01)
        start = time.perf_counter()
        with pytest.raises(QueueFull, match="queue full"):
            await batcher.submit(3)
        refused_in = time.perf_counter() - start
        gate.set()
        results = await asyncio.gather(running, *queued)
        await batcher.stop()
        return results, refused_in

    results, refused_in = run(scenario())
    assert results == [0, 1, 2]
    assert refused_in < 0.01


def test_a_failing_batch_fails_only_its_requests():
    async def fragile(batch: list[Pending]) -> list:
        if any(p.payload == "bad" for p in batch):
            raise ValueError("model blew up on this batch")
        return [p.payload for p in batch]

    async def scenario():
        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0), fragile, [])
        results = await asyncio.gather(batcher.submit("a"), batcher.submit("bad"), batcher.submit("b"),
                                       return_exceptions=True)  # fmt: skip
        after = await batcher.submit("c")
        await batcher.stop()
        return results, after

    results, after = run(scenario())
    assert results[0] == "a" and results[2] == "b" and after == "c"
    assert isinstance(results[1], ValueError)


def test_stop_drains_accepted_requests_and_refuses_new_ones():
    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=4, max_delay_s=0.01), echo, reports)
        accepted = [asyncio.create_task(batcher.submit(i)) for i in range(10)]
        await asyncio.sleep(0)
        await batcher.stop()
        with pytest.raises(ShuttingDown):
            await batcher.submit(99)
        return await asyncio.gather(*accepted)

    assert run(scenario()) == [i * 10 for i in range(10)]


def test_row_counts_fill_batches_by_rows():
    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=8, max_delay_s=0.05), echo, reports)
        await asyncio.gather(*(batcher.submit(i, size=4) for i in range(4)))
        await batcher.stop()
        return reports

    assert [(r.size, r.requests) for r in run(scenario())] == [(8, 2), (8, 2)]


def test_preferred_size_closes_without_waiting_out_the_delay():
    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=8, max_delay_s=1.0, preferred=(2,)), echo, reports)
        start = time.perf_counter()
        await asyncio.gather(batcher.submit(1), batcher.submit(2))
        waited = time.perf_counter() - start
        await batcher.stop()
        return waited, reports

    waited, reports = run(scenario())
    assert waited < 0.5
    assert (reports[0].size, reports[0].reason) == (2, "preferred")


def test_higher_priority_requests_run_first():
    order: list[str] = []

    async def record(batch: list[Pending]) -> list:
        order.extend(p.payload for p in batch)
        await asyncio.sleep(0.02)
        return [p.payload for p in batch]

    async def scenario():
        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0), record, [])
        first = asyncio.create_task(batcher.submit("busy"))
        await asyncio.sleep(0.005)  # "busy" is computing; the rest queue up
        rest = [
            asyncio.create_task(batcher.submit(name, priority=p)) for name, p in (("low", 5), ("high", 0), ("mid", 2))
        ]
        await asyncio.gather(first, *rest)
        await batcher.stop()

    run(scenario())
    assert order == ["busy", "high", "mid", "low"]


def test_requests_share_a_batch_only_with_equal_keys_and_keep_their_place():
    async def scenario():
        reports: list[BatchReport] = []
        seen: list[list[str]] = []

        async def record(batch: list[Pending]) -> list:
            seen.append([p.payload for p in batch])
            return [p.payload for p in batch]

        batcher = await started(BatcherConfig(max_batch=8, max_delay_s=0.02), record, reports)
        submits = [batcher.submit(f"{key}{i}", key=key) for i, key in enumerate("aabab")]
        results = await asyncio.gather(*submits)
        await batcher.stop()
        return results, seen

    results, seen = run(scenario())
    assert results == ["a0", "a1", "b2", "a3", "b4"]
    assert seen == [["a0", "a1", "a3"], ["b2", "b4"]]


def test_a_cancelled_caller_whose_deadline_passed_leaves_the_loop_running():
    async def scenario():
        gate = asyncio.Event()
        reports: list[BatchReport] = []

        async def blocked(batch: list[Pending]) -> list:
            await gate.wait()
            return [p.payload for p in batch]

        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0), blocked, reports)
        busy = asyncio.create_task(batcher.submit("busy"))
        await asyncio.sleep(0.01)
        doomed = asyncio.create_task(batcher.submit("gone", deadline=time.perf_counter() + 0.001))
        await asyncio.sleep(0.01)
        doomed.cancel()  # the client left, and its deadline passed too
        gate.set()
        after = await batcher.submit("after")
        await batcher.stop()
        return await busy, after, reports

    busy, after, reports = run(scenario())
    assert (busy, after) == ("busy", "after")
    assert sum(r.cancelled for r in reports) == 1 and sum(r.expired for r in reports) == 0


def test_per_request_exceptions_and_a_wrong_result_count_fail_only_their_requests():
    async def mixed(batch: list[Pending]) -> list:
        if any(p.payload == "short" for p in batch):
            return []  # a broken run_batch: no results at all
        return [ValueError("engine failed on this one") if p.payload == "bad" else p.payload for p in batch]

    async def scenario():
        reports: list[BatchReport] = []
        batcher = await started(BatcherConfig(max_batch=4, max_delay_s=0.02), mixed, reports)
        first = await asyncio.gather(batcher.submit("a"), batcher.submit("bad"), batcher.submit("b"),
                                     return_exceptions=True)  # fmt: skip
        short = await asyncio.gather(batcher.submit("short"), return_exceptions=True)
        after = await batcher.submit("c")
        await batcher.stop()
        return first, short, after, reports

    first, short, after, reports = run(scenario())
    assert first[0] == "a" and first[2] == "b" and isinstance(first[1], ValueError)
    assert isinstance(short[0], RuntimeError) and "0 results for 1 requests" in str(short[0])
    assert after == "c"
    assert [r.failed for r in reports] == [1, 1, 0]


def test_stop_returns_even_when_a_loop_has_died():
    async def scenario():
        batcher = await started(BatcherConfig(max_batch=1, max_delay_s=0.0), echo, [])
        for task in batcher._tasks:  # what a bug in the loop would do
            task.cancel()
        await asyncio.sleep(0)
        stranded = asyncio.create_task(batcher.submit(1))
        await asyncio.sleep(0.01)
        await asyncio.wait_for(batcher.stop(), 5)
        return await asyncio.gather(stranded, return_exceptions=True)

    (result,) = run(scenario())
    assert isinstance(result, ShuttingDown)
