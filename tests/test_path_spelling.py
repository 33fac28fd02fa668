"""One answer path per file, however its name is spelled: case and Unicode normalisation.

On macOS, Windows or an ext4 casefold folder, ``MEMORY.md`` opens ``memory.md`` and an NFC name opens
the NFD file; discovery, the watcher's ``classify``, ``file_for``, ``resolve`` and the well-known files
must all give the name as the folder lists it. Hard links that differ only in case or normalisation
mimic that on any file system; a loop-mounted case-folding file system tests it for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdex.memory_core.workspace.files import Workspace
from memdex.memory_core.workspace.spelling import Listings

NFC = unicodedata.normalize("NFC", "café-Übersicht.md")
NFD = unicodedata.normalize("NFD", NFC)


def rels(ws: Workspace) -> list[str]:
    return [f.rel for f in ws.discover()]


def folds_case(folder: Path) -> bool:
    probe = folder / "Case-Probe.md"
    probe.write_text("probe")
    try:
        return (folder / "case-probe.md").exists()
    finally:
        probe.unlink()


def folds_normalisation(folder: Path) -> bool:
    probe = folder / NFD
    probe.write_text("probe")
    try:
        return (folder / NFC).exists()
    finally:
        probe.unlink()


def agree(ws: Workspace, spelled: Path, expected: str) -> None:
    """Every way in to the file at ``spelled`` gives the answer path ``expected``, which discovery lists."""
    assert expected in rels(ws)
    assert ws.classify(spelled) == expected
    assert ws.classify(spelled, Listings()) == expected  # as the watcher spells a burst of events
    assert ws.resolve(str(spelled.relative_to(ws.root))).rel == expected
    assert ws.resolve(str(spelled)).rel == expected
    assert ws.file_for(expected) == {f.rel: f for f in ws.discover()}[expected]


# Spellings that are one file, on any file system (hard links) ---------------------------------------


def test_memory_md_linked_as_lower_case_is_one_file_answered_as_upper_case(workspace: Path) -> None:
    if folds_case(workspace):
        pytest.skip("this file system folds case itself (see the test on a case-folding file system)")
    (workspace / "MEMORY.md").write_text("long term\n")
    os.link(workspace / "MEMORY.md", workspace / "memory.md")
    ws = Workspace(workspace)
    assert rels(ws) == ["MEMORY.md"]
    agree(ws, workspace / "memory.md", "MEMORY.md")
    agree(ws, workspace / "MEMORY.md", "MEMORY.md")
    assert ws.long_term_file().rel == "MEMORY.md"


def test_nfc_and_nfd_names_of_one_file_have_one_answer_path(workspace: Path) -> None:
    if folds_normalisation(workspace):
        pytest.skip("this file system folds Unicode normalisation itself (see the test on a case-folding one)")
    (workspace / "memory" / NFD).write_text("accents\n")
    os.link(workspace / "memory" / NFD, workspace / "memory" / NFC)
    ws = Workspace(workspace)
    expected = f"memory/{min(NFC, NFD)}"  # the first listed spelling in code-point order
    assert rels(ws) == [expected]
    agree(ws, workspace / "memory" / NFC, expected)
    agree(ws, workspace / "memory" / NFD, expected)
    assert ws.files_in(workspace / "memory") == [expected]


def test_two_different_files_memory_md_and_lower_case_are_both_memory(workspace: Path) -> None:
    if folds_case(workspace):
        pytest.skip("this file system folds case: MEMORY.md and memory.md cannot be two files")
    (workspace / "MEMORY.md").write_text("upper\n")
    (workspace / "memory.md").write_text("lower\n")
    ws = Workspace(workspace)
    assert rels(ws) == ["MEMORY.md", "memory.md"]
    agree(ws, workspace / "memory.md", "memory.md")
    agree(ws, workspace / "MEMORY.md", "MEMORY.md")
    assert ws.long_term_file().rel == "MEMORY.md"


def test_a_listing_shared_by_a_burst_of_events_sees_a_spelling_linked_after_it(workspace: Path) -> None:
    """The watcher spells a burst of events from one listing per folder, taken again once the folder changed."""
    if folds_case(workspace):
        pytest.skip("this file system folds case: Note.md and note.md cannot be two links")
    note = workspace / "memory" / "note.md"
    note.write_text("notes\n")
    os.link(note, workspace.parent / "backup.md")  # a second link: its spelling is checked against the listing
    ws, listings = Workspace(workspace), Listings()
    assert ws.classify(note, listings) == "memory/note.md"
    time.sleep(0.05)  # past a tick of the file system's clock, so that the folder's mtime changes
    os.link(note, workspace / "memory" / "Note.md")
    assert ws.classify(note, listings) == "memory/Note.md" == ws.classify(note)


def test_a_gone_file_keeps_the_spelling_it_was_given(workspace: Path) -> None:
    ws = Workspace(workspace)
    assert ws.classify(workspace / "memory" / NFC) == f"memory/{NFC}"
    assert ws.classify(workspace / "memory.md") == "memory.md"


# A real case-folding file system ---------------------------------------------------------------------


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)


def _mounted(image: Path, mount: Path, mkfs: list[str], options: list[str]) -> str | None:
    """Make and loop-mount a file system image; None on success, else why not."""
    if shutil.which(mkfs[0]) is None:
        return f"{mkfs[0]} is not installed"
    if "casefold" in mkfs and not Path("/sys/fs/ext4/features/casefold").exists():
        return "the kernel has no ext4 casefold support (CONFIG_UNICODE)"
    try:
        with image.open("wb") as handle:
            handle.truncate(32 * 1024 * 1024)
        _run(*mkfs, str(image))
        _run("mount", "-o", "loop", *options, str(image), str(mount))
    except subprocess.CalledProcessError as exc:
        return f"{exc.cmd[0]} failed: {(exc.stderr or '').strip().splitlines()[:1]}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None


@pytest.fixture
def folding_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder on a file system that folds case: tmp_path itself (macOS, Windows), else a
    loop-mounted ext4 casefold or vfat image (Linux, as root); skipped when none can be had."""
    here = tmp_path / "here"
    here.mkdir()
    if folds_case(here):
        yield here
        return
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("no case-folding file system: tmp is case-sensitive and loop mounts need Linux and root")
    mount = tmp_path / "mnt"
    mount.mkdir()
    reasons = []
    attempts = [
        ("ext4 casefold", ["mkfs.ext4", "-q", "-F", "-O", "casefold", "-E", "encoding=utf8"], []),
        ("vfat", ["mkfs.vfat"], ["-t", "vfat", "-o", "utf8"]),
    ]
    for name, mkfs, options in attempts:
        reason = _mounted(tmp_path / f"{mkfs[0]}.img", mount, mkfs, options)
        if reason is None:
            break
        reasons.append(f"{name}: {reason}")
    else:
        pytest.skip("no case-folding file system can be mounted here (" + "; ".join(reasons) + ")")
    try:
        folder = mount / "ws"
        folder.mkdir()
        if name == "ext4 casefold":
            _run("chattr", "+F", str(folder))
        yield folder
    finally:
        _run("umount", str(mount))


def test_on_a_case_folding_file_system_every_spelling_gives_the_listed_name(folding_dir: Path) -> None:
    assert folds_case(folding_dir)
    (folding_dir / "memory").mkdir()
    (folding_dir / "memory.md").write_text("long term, stored lower-case\n")
    (folding_dir / "memory" / "Notes.md").write_text("notes\n")
    ws = Workspace(folding_dir)
    assert rels(ws) == ["memory.md", "memory/Notes.md"]
    agree(ws, folding_dir / "MEMORY.md", "memory.md")
    agree(ws, folding_dir / "memory" / "NOTES.md", "memory/Notes.md")
    assert ws.long_term_file().rel == "memory.md"
    assert ws.files_in(folding_dir / "MEMORY") == ["memory/Notes.md"]
    if folds_normalisation(folding_dir):
        (folding_dir / "memory" / NFD).write_text("accents\n")
        agree(ws, folding_dir / "memory" / NFC, f"memory/{NFD}")


def test_on_a_case_folding_file_system_an_odd_spelling_of_memory_md_is_answered_as_memory_md(
    folding_dir: Path,
) -> None:
    (folding_dir / "Memory.md").write_text("long term, stored in an odd case\n")
    ws = Workspace(folding_dir)
    assert rels(ws) == ["MEMORY.md"]
    agree(ws, folding_dir / "Memory.md", "MEMORY.md")
    agree(ws, folding_dir / "memory.md", "MEMORY.md")
    assert ws.long_term_file().rel == "MEMORY.md"
