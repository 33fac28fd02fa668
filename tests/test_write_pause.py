"""WritePause: one task holds the other writers of this process off; waiters wait on events, not timers."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from memdex.memory_core.stores.write_pause import WritePause


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Every ``anyio.sleep`` made while the test runs (a polling waiter would make them)."""
    made: list[float] = []
    real_sleep = anyio.sleep

    async def counted(delay: float) -> None:
        made.append(delay)
        await real_sleep(delay)

    monkeypatch.setattr(anyio, "sleep", counted)
    yield made


async def test_a_held_writer_enters_as_soon_as_the_pause_ends_without_polling(sleeps: list[float]) -> None:
    """While paused, the pausing task's own writes pass and another task's write waits, asleep; once
    the pause ends, that write is in by the time every task is idle again: no timer stood between."""
    pause, order = WritePause(), []
    end_pause = anyio.Event()

    async def pauser() -> None:
        async with pause.paused():
            async with pause.writing() as own:
                order.append(("pauser writes", own))
            await end_pause.wait()
            order.append(("pause ends", None))

    async def writer() -> None:
        async with pause.writing() as own:
            order.append(("writer writes", own))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pauser)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(writer)
            await anyio.wait_all_tasks_blocked()
            assert order == [("pauser writes", True)]  # the other write is held off
            end_pause.set()
            await anyio.wait_all_tasks_blocked()
            assert order[1:] == [("pause ends", None), ("writer writes", False)]
    assert sleeps == []


async def test_a_pause_waits_for_writes_already_started_without_polling(sleeps: list[float]) -> None:
    """A pause begins only when the writes in progress have finished, and wakes as the last one ends."""
    pause, order = WritePause(), []
    finish = [anyio.Event(), anyio.Event()]

    async def writer(n: int) -> None:
        async with pause.writing():
            order.append(f"writer {n} in")
            await finish[n].wait()
        order.append(f"writer {n} out")

    async def pauser() -> None:
        async with pause.paused():
            order.append("paused")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, 0)
            tg.start_soon(writer, 1)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(pauser)
            await anyio.wait_all_tasks_blocked()
            assert pause.writers == 2 and "paused" not in order
            finish[0].set()
            await anyio.wait_all_tasks_blocked()
            assert "paused" not in order  # one write still runs
            finish[1].set()
            await anyio.wait_all_tasks_blocked()
            assert order[-2:] == ["writer 1 out", "paused"] or order[-2:] == ["paused", "writer 1 out"]
    assert pause.writers == 0
    assert sleeps == []


async def test_two_pauses_take_turns_and_a_held_writer_enters_once_outside_them() -> None:
    """A second pausing task waits for the first; a writer held by the first enters between or after them."""
    pause, order = WritePause(), []
    ends = [anyio.Event(), anyio.Event()]

    async def pauser(n: int) -> None:
        async with pause.paused():
            order.append(f"pause {n}")
            await ends[n].wait()

    async def writer() -> None:
        async with pause.writing():
            order.append("write")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pauser, 0)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(pauser, 1)
            tg.start_soon(writer)
            await anyio.wait_all_tasks_blocked()
            assert order == ["pause 0"]
            ends[0].set()
            await anyio.wait_all_tasks_blocked()
            assert order[-1] == "pause 1" or order[-2:] == ["write", "pause 1"]
            ends[1].set()
    assert order.count("write") == 1 and order.index("pause 0") < order.index("pause 1")
