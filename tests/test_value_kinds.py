"""A line that writes a web address, an email address or an IP address is found by the word for its kind: the index
adds "url", "email" or "ip" after it, and the Python side counts them as the index does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import keyword_answer

from memdex.memory_core import MemoryEngine
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import index_stems
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
        # not these: a mention, a version, a date, a time, a price, a decimal
        ("ping @dana about v1.2.3 on 2026.10.05 at 10:30, 1,299.00 EUR, 3.14159", []),
        ("version 1.2.3.4.5 and 1234.1.1.1", []),
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


NOTES = {  # the person, the service and the box are in every note; one writes each value
    "MEMORY.md": "# Team\n\n- Dana runs billing; Marco runs infra.\n- Grafana dashboards are owned by Marco.\n"
    "- The NAS holds the backups.\n",
    "memory/2026-10-01.md": "# 2026-10-01\n\n- Marco asked about the Grafana alerts on the NAS again.\n"
    "- New contact for billing: d.ruiz@acme.io (Dana)\n",
    "memory/2026-10-02.md": "# 2026-10-02\n\n- Grafana moved to https://grafana.acme.io; the NAS is at 10.0.3.12.\n",
    "memory/2026-10-03.md": "# 2026-10-03\n\n- Dana and Marco reviewed Grafana panels for the NAS; Dana wants NAS disk alerts.\n",
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("what's Dana's email?", "memory/2026-10-01.md"),
        ("grafana link", "memory/2026-10-02.md"),
        ("what's the IP of the NAS?", "memory/2026-10-02.md"),
    ],
)
async def test_a_question_for_a_kind_of_value_ranks_first_the_note_that_writes_one(
    make_engine: MakeEngine, write: Callable[[str, str], Path], query: str, found: str
) -> None:
    """Before, each question ranked first the note that names Dana, Grafana or the NAS most often."""
    hits = (await keyword_answer(make_engine, write, NOTES, query)).results
    assert [hit.path for hit in hits][:1] == [found], [(hit.path, hit.score) for hit in hits]
