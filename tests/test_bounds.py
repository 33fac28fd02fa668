"""Bounded work per request: an argument's cost grows at most with its length.

Checking a path is linear in its components; a query's words that name files cost a lookup each, not a
pass over the files. CPU bounds are generous (the bench measures speed): each is several times under the
cost before the fix.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from memdex.memory_core.search.named_files import NameIndex
from memdex.memory_core.workspace.spelling import as_listed


def test_spelling_a_path_costs_linear_work_in_its_components(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check handed the file system every prefix of a missing path, from the root, for each component.

    The characters it passes to ``lstat`` for 5,000 and 10,000 components: 25M and 100M before (quadratic),
    a few dozen now. The CPU: 0.18 s, 0.63 s and 2.3 s for 5k, 10k and 20k components before, ~5 ms now.
    """
    handed: list[int] = []
    lstat = os.lstat

    def counting(path: object, *args: object, **kwargs: object) -> os.stat_result:
        handed.append(len(os.fsencode(path)))  # type: ignore[arg-type]
        return lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    work = {}
    for n in (5_000, 10_000):
        handed.clear()
        with monkeypatch.context() as patch:
            patch.setattr(os, "lstat", counting)
            spelled = as_listed(workspace, ["a"] * n)
        work[n] = sum(handed)
        assert spelled == workspace.joinpath(*["a"] * n)
    assert work[10_000] <= 2.5 * work[5_000] and work[10_000] < 100 * len(str(workspace)), work
    started = time.process_time()
    as_listed(workspace, ["a"] * 20_000)
    assert time.process_time() - started < 1.0


def test_words_naming_paths_cost_a_lookup_each_not_a_pass_over_the_files() -> None:
    """A query of 2,000 characters, all words with a slash, over 50k files: 2.3 s of CPU before, ~0 now."""
    paths = [f"memory/p{i % 100}/n{i}.md" for i in range(50_000)]
    index = NameIndex(paths)
    named = [p for p in paths if p == "memory/p7/n7.md" or p.startswith(("memory/p9/", "memory/p1/"))]
    assert index.named("p7/n7.md memory/p9/ memory/p1") == named  # a tail, folders (p1 is not p10)
    query = " ".join(f"x/y{i}" for i in range(2_000 // 6))[:2_000]
    started = time.process_time()
    assert index.named(query) == []
    assert time.process_time() - started < 0.5
