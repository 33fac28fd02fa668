"""A line that writes a web address, an email address, an IP address or a task is found by the word for its kind: the
index adds "url", "email", "ip" or "task todo open" after it, and the Python side counts them as the index does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import keyword_answer

from memdex.memory_core import MemoryEngine
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import index_stems, query_terms
from memdex.memory_core.text.value_kinds import value_kinds

MakeEngine = Callable[..., MemoryEngine]


@pytest.mark.parametrize(
    ("line", "kinds"),
    [
        ("Grafana at https://grafana.internal.acme.io, login via SSO", ["url", "link", "website"]),
        ("DSN postgres://app@db-1/billing", ["url", "link", "website"]),
        ("Dana Ruiz <dana.ruiz+memdex@acme.co.uk>", ["email"]),
        ("NAS at 192.168.1.20, router 192.168.1.1.", ["ip"]),
        ("mail me at dana@acme.io from 10.0.0.7", ["email", "ip"]),
        ("NAS at 2001:db8::20, link-local fe80::1ff:fe23:4567:890a%eth0", ["ip"]),
        ("localhost is ::1; the prefix 2001:0db8:85a3::/48", ["ip"]),
        # not these: a time, a MAC address, C++ and Haskell, a word of hex letters, an IPv4 address's parts over 255
        ("at 10:30:00, MAC 00:1a:2b:3c:4d:5e, std::vector, x :: Int, dead::beef, 1.299.000.000 users", []),
        # not these: a mention, a version, a date, a time, a price, a decimal
        ("ping @dana about v1.2.3 on 2026.10.05 at 10:30, 1,299.00 EUR, 3.14159", []),
        ("version 1.2.3.4.5 and 1234.1.1.1", []),
        ("- [ ] Call the plumber about the leak", ["task", "todo", "open", "pending"]),
        ("  * [x] Renewed passport", ["task", "todo", "done", "completed", "finished"]),
        ("3. [X] Paid the invoice", ["task", "todo", "done", "completed", "finished"]),
        ("## To-do", ["todo"]),
        ("- [ ] Put the to-dos on https://todo.acme.io", ["url", "link", "website", "task", "todo", "open", "pending"]),
        # not these: a box that is not a list item's first word, a link, an ordinary "to do"
        ("- see [x] in the legend; [ ] marks a gap; - [link](https://x)[ ]", ["url", "link", "website"]),
        ("-[ ] no space, - [] no box, - [ ]no space after", []),
        ("things to do: dishes; a how-to-do-it course", []),
        ("# 2026-12-03", ["thursday"]),
        ("- Audit moved from 2026-12-08 to 2026-12-09, not 2026-12-15", ["tuesday", "wednesday"]),
        # not these: no such day, a build's name, a range of years
        ("- 2026-02-30, build v2026-12-03-1, 1999-2001", []),
        ("- Plumber: Marco, 0176 555 0101 (cash only)", ["phone", "telephone"]),
        ("Dana +49 (0)176 5550101, office (555) 123-4567", ["phone", "telephone"]),
        ("call +1 555 123 4567 or 555-123-4567 or 030/12345678 or 0176-55-0101", ["phone", "telephone"]),
        # not these: a time, a price, a decimal run, an ISBN, an order or ticket number, a postcode, a large number
        ("10:30-11:00, 1,299.00 EUR, CI 0.76-0.98, ISBN 0-306-40615-2, 978-3-16-148410-0", []),
        ("order 12345678901, INC0012345678, 01067 Dresden, 1,299,000,000 users, SSN 123-45-6789, +15%", []),
    ],
)
def test_a_line_names_the_kind_of_each_value_it_writes(line: str, kinds: list[str]) -> None:
    assert value_kinds(line) == kinds


def test_the_index_and_the_python_side_add_the_same_words() -> None:
    text = "# Contacts\n\n- Dana: dana@acme.io\n- Marco: marco@acme.io, NAS 192.168.1.20\n- Grafana: https://grafana.io"
    indexed = index_text(text)
    assert indexed.split()[-6:] == ["email", "email", "ip", "url", "link", "website"]
    assert {"email", "ip", "url", "link", "websit"} <= index_stems(text)
    assert index_text("- no values here, only 3.5 stars") == "- no values here, only 3.5 stars"
    added = "task todo done completed finished task todo open pending"
    assert index_text("- [x] Renewed passport\n- [ ] Call the plumber").endswith(f"plumber {added}")


def test_a_query_names_the_tasks_by_the_word_task_items_are_held_to_say() -> None:
    """"to" and "do" are stop words: "to-do list" searched for "list" alone, a word no task item holds."""
    assert query_terms("my to-do list") == query_terms("my To-Dos") == query_terms("TODO list") == ["todo"]
    assert query_terms("what's on my task list for the NAS?") == query_terms("NAS tasks")[::-1] == ["task", "nas"]
    assert query_terms("what is left to do?") == query_terms("what do I still need to do?") == ["open", "todo"]
    assert query_terms("who left the team, and what does Dana need?") == ["left", "team", "dana", "need"]
    assert query_terms("the how-to-do-it course") == ["course"]
    assert query_terms("a to-do-list app") == ["todo", "app"]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("¿Qué tareas tengo pendientes?", ["task", "tengo", "pending"]),
        ("Welche Aufgaben sind noch offen?", ["task", "open"]),
        ("Was habe ich schon erledigt?", ["done"]),
        ("Quelles tâches sont terminées ?", ["task", "done"]),
        ("Qu'y a-t-il à faire ?", ["y", "t", "todo"]),
        ("Qu'est-ce qui reste à faire ?", ["open", "todo"]),
        ("¿Qué tengo que hacer todavía?", ["open", "todo"]),
        ("Was ist noch zu tun?", ["open", "todo"]),
        ("Quali compiti sono completati?", ["task", "completed"]),
        ("Quais tarefas estão pendentes?", ["task", "pending"]),
        ("Какие задачи выполнены?", ["task", "completed"]),
        # not these: Dutch "taken" ("tasks") is also English, asked as its base form
        ("what was taken?", ["take"]),
    ],
)
def test_a_query_in_another_language_names_the_tasks_by_the_english_words(query: str, terms: list[str]) -> None:
    assert query_terms(query) == terms


def test_a_task_named_in_another_language_is_held_under_the_english_word_too() -> None:
    """A German note that says "Aufgaben" answers "tasks", as a task item does."""
    assert index_text("## Aufgaben (offen)").endswith("task open")
    assert index_text("- Tareas pendientes: ninguna").endswith("task pending")


NOTES = {  # the person, the service and the box are in every note; one writes each value
    "MEMORY.md": "# Team\n\n- Dana runs billing; Marco runs infra.\n- Grafana dashboards are owned by Marco.\n"
    "- The NAS holds the backups.\n",
    "memory/2026-10-01.md": "# 2026-10-01\n\n- Marco asked about the Grafana alerts on the NAS again.\n"
    "- New contact for billing: d.ruiz@acme.io (Dana)\n",
    "memory/2026-10-02.md": "# 2026-10-02\n\n- Grafana moved to https://grafana.acme.io; the NAS is at 10.0.3.12.\n",
    "memory/2026-10-03.md": "# 2026-10-03\n\n- Dana and Marco reviewed Grafana panels for the NAS; Dana wants NAS disk alerts.\n",
    "memory/2026-10-04.md": "# 2026-10-04\n\n- Marco is on call for the NAS this week: +49 176 5550101.\n",
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("what's Dana's email?", "memory/2026-10-01.md"),
        ("grafana link", "memory/2026-10-02.md"),
        ("what's the IP of the NAS?", "memory/2026-10-02.md"),
        ("what's Marco's phone number?", "memory/2026-10-04.md"),
        ("Telefonnummer von Marco", "memory/2026-10-04.md"),
    ],
)
async def test_a_question_for_a_kind_of_value_ranks_first_the_note_that_writes_one(
    make_engine: MakeEngine, write: Callable[[str, str], Path], query: str, found: str
) -> None:
    """Before, each question ranked first the note that names Dana, Grafana or the NAS most often."""
    hits = (await keyword_answer(make_engine, write, NOTES, query)).results
    assert [hit.path for hit in hits][:1] == [found], [(hit.path, hit.score) for hit in hits]


TASK_NOTES = {  # the plumber and the flights are in every note; one holds open tasks, one done ones
    "MEMORY.md": "# Home\n\n- Plumber: Marco, 0176 555 0101. Flights: always book with the Lisbon office open on Saturdays.\n",
    "memory/2026-11-02.md": "# 2026-11-02\n\n- [ ] Call the plumber about the kitchen leak\n- [ ] Book flights to Lisbon\n",
    "memory/2026-11-05.md": "# 2026-11-05\n\n- [x] Called the plumber\n- [x] Booked flights to Lisbon\n",
    "memory/2026-11-06.md": "# 2026-11-06\n\n- The plumber fixed the leak; flights to Lisbon are cheaper on Tuesdays, done deal.\n",
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("open tasks", {"memory/2026-11-02.md"}),
        ("what's still open?", {"memory/2026-11-02.md"}),
        ("which tasks have I completed?", {"memory/2026-11-05.md"}),
        ("what did I finish?", {"memory/2026-11-05.md"}),
        ("to-do list", {"memory/2026-11-02.md", "memory/2026-11-05.md"}),
        ("what's left to do?", {"memory/2026-11-02.md"}),
    ],
)
async def test_a_question_for_open_or_done_tasks_ranks_first_the_notes_that_list_them(
    make_engine: MakeEngine, write: Callable[[str, str], Path], query: str, found: set[str]
) -> None:
    """Before, "open tasks" ranked first the note on the office that is open, "to-do list" and "what's still open?"
    found nothing, "which tasks have I completed?" ranked the open tasks as high as the done ones, and "what did I
    finish?" found nothing."""
    hits = (await keyword_answer(make_engine, write, TASK_NOTES, query)).results
    assert {hit.path for hit in hits[: len(found)]} == found, [(hit.path, hit.score) for hit in hits]


async def test_a_memory_of_task_lists_answers_for_its_tasks_by_any_name(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """Where every note holds tasks, "todo" is in every chunk and weighs little: with a word no note holds beside
    it ("list", "still"), the answer was that nothing matches."""
    notes = {f"memory/2026-11-0{day}.md": f"# 2026-11-0{day}\n\n- [x] Standup notes {day}\n- [ ] Review PR {day}\n" for day in range(1, 6)}
    for query in ("to-do list", "what's still on my task list?", "what's still open?"):
        answer = await keyword_answer(make_engine, write, notes, query)
        assert len(answer.results) == 5 and answer.warning is None, (query, answer.warning)


WEEK = {f"memory/2026-12-0{day}.md": f"# 2026-12-0{day}\n\n- Standup: worked on the billing export, part {day}.\n" for day in range(1, 6)}


@pytest.mark.both_stores
@pytest.mark.parametrize("query", ["thursday standup", "what happened on Thursday?"])
async def test_a_weekday_finds_the_log_of_that_day(
    make_engine: MakeEngine, write: Callable[[str, str], Path], query: str
) -> None:
    """A daily log's heading writes its date, not its weekday: asked by the weekday, every log was as good as
    another, and with nothing else asked the answer was that nothing matches."""
    hits = (await keyword_answer(make_engine, write, WEEK, query)).results
    assert [hit.path for hit in hits][:1] == ["memory/2026-12-03.md"], [(hit.path, hit.score) for hit in hits]
