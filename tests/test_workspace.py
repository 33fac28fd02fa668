"""Workspace: which files are memory (discovery) and which paths may be read or written (resolve)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core.errors import PathError
from memdex.memory_core.workspace.files import Workspace


def rels(ws: Workspace) -> list[str]:
    return [f.rel for f in ws.discover()]


# Discovery -------------------------------------------------------------------------------------


def test_discovery_finds_memory_md_and_every_md_under_memory_recursively(
    workspace: Path, write: Callable[[str, str], Path]
) -> None:
    write("MEMORY.md", "long term")
    write("memory/2026-01-01.md", "day one")
    write("memory/projects/alpha.md", "alpha")
    write("memory/projects/2026/q1/plan.md", "deep")
    ws = Workspace(workspace)
    assert rels(ws) == [
        "MEMORY.md",
        "memory/2026-01-01.md",
        "memory/projects/2026/q1/plan.md",
        "memory/projects/alpha.md",
    ]
    files = {f.rel: f for f in ws.discover()}
    assert files["memory/projects/alpha.md"].path == workspace / "memory" / "projects" / "alpha.md"
    assert all("\\" not in rel for rel in files)


def test_discovery_ignores_markdown_outside_memory_files(workspace: Path, write: Callable[[str, str], Path]) -> None:
    write("README.md", "not memory")
    write("notes/other.md", "not memory either")
    write("memory/kept.md", "kept")
    assert rels(Workspace(workspace)) == ["memory/kept.md"]


def test_discovery_of_an_empty_workspace_or_a_missing_memory_folder_is_empty(tmp_path: Path) -> None:
    assert rels(Workspace(tmp_path)) == []
    assert rels(Workspace(tmp_path / "does-not-exist")) == []


def test_discovery_skips_hidden_folders_git_node_modules_and_non_markdown(
    workspace: Path, write: Callable[[str, str], Path]
) -> None:
    write("memory/kept.md", "kept")
    write("memory/.obsidian/workspace.md", "hidden folder")
    write("memory/.git/COMMIT_EDITMSG.md", "git")
    write("memory/node_modules/pkg/README.md", "dependency")
    write("memory/__pycache__/x.md", "cache")
    write("memory/sub/.hidden.md", "hidden file")
    write("memory/sub/notes.txt", "text")
    write("memory/sub/notes.markdown", "other extension")
    write("memory/sub/notes.md.bak", "backup")
    write("memory/sub/real.md", "real")
    assert rels(Workspace(workspace)) == ["memory/kept.md", "memory/sub/real.md"]


def test_discovery_skips_names_no_answer_path_spells_and_names_each_once(
    workspace: Path, write: Callable[[str, str], Path], caplog: pytest.LogCaptureFixture
) -> None:
    """A name of Latin-1 bytes (an old archive unpacked, a Samba share) is held by Python as lone surrogates, which
    no index row or JSON answer can carry: one such file made every sync fail, so nothing was searchable. A name
    with a backslash was returned by search, and memory_get could not read it back."""
    write("memory/kept.md", "kept")
    memory = os.fsencode(workspace / "memory")
    with open(os.path.join(memory, b"caf\xe9.md"), "wb") as handle:
        handle.write(b"- latin-1 name\n")
    os.makedirs(os.path.join(memory, b"r\xe9sum\xe9s", b"inner"))
    with open(os.path.join(memory, b"r\xe9sum\xe9s", b"inner", b"cv.md"), "wb") as handle:
        handle.write(b"- in a latin-1 folder\n")
    with open(os.path.join(memory, b"photo\xe9.jpg"), "wb") as handle:
        handle.write(b"not memory")
    write("memory/back\\slash.md", "a name a Windows tool made on a share: given back, it reads as back/slash.md")
    ws = Workspace(workspace)
    assert rels(ws) == rels(ws) == ["memory/kept.md"]
    assert ws.misnamed == {f"{workspace}/memory/caf\\xe9.md", f"{workspace}/memory/r\\xe9sum\\xe9s",
                           f"{workspace}/memory/back\\slash.md"}  # fmt: skip
    assert sorted(r.getMessage() for r in caplog.records if "rename it" in r.getMessage()) == [
        f"skipping {workspace}/memory/back\\slash.md: its name holds a backslash, which memdex reads as a folder "
        "separator; rename it to have it indexed",
        f"skipping {workspace}/memory/caf\\xe9.md: its name is not UTF-8 text; rename it to have it indexed",
        f"skipping {workspace}/memory/r\\xe9sum\\xe9s: its name is not UTF-8 text; rename it to have it indexed",
    ]
    watched = os.fsdecode(os.path.join(memory, b"r\xe9sum\xe9s", b"inner", b"cv.md"))
    assert ws.classify(Path(os.fsdecode(os.path.join(memory, b"caf\xe9.md")))) is None
    assert ws.classify(Path(watched)) is None


def test_discovery_skips_symlinked_files_and_folders_inside_memory(
    workspace: Path, tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    write("MEMORY.md", "long term")
    write("memory/real.md", "real")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (workspace / "memory" / "link-inside.md").symlink_to(workspace / "MEMORY.md")
    (workspace / "memory" / "link-outside.md").symlink_to(outside / "secret.md")
    (workspace / "memory" / "linked-dir").symlink_to(outside, target_is_directory=True)
    (workspace / "memory" / "linked-sibling").symlink_to(workspace / "memory", target_is_directory=True)
    assert rels(Workspace(workspace)) == ["MEMORY.md", "memory/real.md"]


def test_a_symlinked_memory_folder_is_not_followed(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.md").write_text("a")
    (workspace / "memory").rmdir()
    (workspace / "memory").symlink_to(elsewhere, target_is_directory=True)
    assert rels(Workspace(workspace)) == []


def test_a_symlinked_memory_md_is_not_a_memory_file(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "target.md").write_text("x")
    (workspace / "MEMORY.md").symlink_to(tmp_path / "target.md")
    ws = Workspace(workspace)
    assert rels(ws) == []
    with pytest.raises(PathError, match="symlink"):
        ws.resolve("MEMORY.md")


def test_an_extra_folder_inside_the_workspace_is_searched_recursively(
    workspace: Path, write: Callable[[str, str], Path]
) -> None:
    write("docs/a.md", "a")
    write("docs/deep/b.md", "b")
    write("docs/.hidden/c.md", "hidden")
    write("docs/node_modules/d.md", "dependency")
    write("docs/e.txt", "text")
    ws = Workspace(workspace, ["docs"])
    assert rels(ws) == ["docs/a.md", "docs/deep/b.md"]
    assert ws.resolve("docs/deep/b.md").path == workspace / "docs" / "deep" / "b.md"
    with pytest.raises(PathError):
        ws.resolve("docs/.hidden/c.md")


def test_an_extra_single_markdown_file_is_a_memory_file(workspace: Path, write: Callable[[str, str], Path]) -> None:
    write("notes/extra.md", "extra")
    write("notes/other.md", "not configured")
    ws = Workspace(workspace, ["notes/extra.md"])
    assert rels(ws) == ["notes/extra.md"]
    assert ws.resolve("notes/extra.md").path == workspace / "notes" / "extra.md"
    with pytest.raises(PathError):
        ws.resolve("notes/other.md")


def test_an_extra_folder_outside_the_workspace_gives_dotdot_paths_that_resolve_back(
    workspace: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "x"
    (extra / "sub").mkdir(parents=True)
    (extra / "a.md").write_text("a")
    (extra / "sub" / "b.md").write_text("b")
    ws = Workspace(workspace, [str(extra)])
    assert rels(ws) == ["../x/a.md", "../x/sub/b.md"]
    for file in ws.discover():
        back = ws.resolve(file.rel)
        assert back.rel == file.rel
        assert back.path == file.path
    with pytest.raises(PathError):
        ws.resolve("../x/../secret.md")


def test_a_relative_extra_path_is_taken_from_the_workspace_not_the_cwd(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "in-ws.md").write_text("x")
    decoy = tmp_path / "cwd"
    (decoy / "docs").mkdir(parents=True)
    (decoy / "docs" / "in-cwd.md").write_text("y")
    monkeypatch.chdir(decoy)
    assert rels(Workspace(workspace, ["docs"])) == ["docs/in-ws.md"]


def test_a_tilde_extra_path_expands_to_home(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "h.md").write_text("home note")
    monkeypatch.setenv("HOME", str(home))
    ws = Workspace(workspace, ["~/notes"])
    assert rels(ws) == ["../home/notes/h.md"]
    assert ws.resolve("../home/notes/h.md").path == home / "notes" / "h.md"


def test_extra_paths_that_are_missing_or_not_markdown_are_skipped(
    workspace: Path, write: Callable[[str, str], Path]
) -> None:
    write("notes.txt", "text")
    write("memory/a.md", "a")
    latin1 = os.path.join(os.fsencode(workspace), b"caf\xe9-notes")  # --extra-path given Latin-1 bytes
    os.mkdir(latin1)
    with open(os.path.join(latin1, b"b.md"), "wb") as handle:
        handle.write(b"b")
    ws = Workspace(workspace, ["missing-dir", "notes.txt", os.fsdecode(latin1)])
    assert ws.extra_roots == []
    assert rels(ws) == ["memory/a.md"]


def test_a_file_reached_through_two_roots_is_listed_once(workspace: Path, write: Callable[[str, str], Path]) -> None:
    write("memory/a.md", "a")
    ws = Workspace(workspace, ["memory", "memory/a.md"])
    assert rels(ws) == ["memory/a.md"]


# Path policy: refused --------------------------------------------------------------------------


@pytest.fixture
def populated(workspace: Path, tmp_path: Path, write: Callable[[str, str], Path]) -> Workspace:
    write("MEMORY.md", "long term")
    write("notes.md", "root note, not memory")
    write("memory/2026-01-01.md", "day")
    write("memory/a.md", "a")
    write("memory/x.txt", "text")
    write("memory/.hidden/h.md", "hidden")
    write("memory/node_modules/n.md", "dependency")
    (tmp_path / "secret.md").write_text("secret")
    (workspace / "memory" / "link-in.md").symlink_to(workspace / "MEMORY.md")
    (workspace / "memory" / "link-out.md").symlink_to(tmp_path / "secret.md")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "o.md").write_text("o")
    (workspace / "memory" / "linkdir").symlink_to(tmp_path / "outdir", target_is_directory=True)
    (workspace / "memory" / "folder.md").mkdir()
    return Workspace(workspace)


REFUSED = {
    "empty": "",
    "blank": "   ",
    "parent": "../secret.md",
    "etc passwd": "/etc/passwd",
    "climbs out of memory": "memory/../../x.md",
    "climbs out to a real file": "memory/../../secret.md",
    "root note": "notes.md",
    "text file": "memory/x.txt",
    "no extension": "memory/a",
    "upper-case extension": "memory/A.MD",
    "nul byte": "memory/a.md\x00.md",
    "symlink inside": "memory/link-in.md",
    "symlink outside": "memory/link-out.md",
    "through a symlinked folder": "memory/linkdir/o.md",
    "hidden folder": "memory/.hidden/h.md",
    "node_modules": "memory/node_modules/n.md",
    "missing": "memory/missing.md",
    "memory folder itself": "memory",
    "a folder named .md": "memory/folder.md",
    "backslash climb": "memory\\..\\..\\secret.md",
}


@pytest.mark.parametrize("raw", REFUSED.values(), ids=REFUSED.keys())
def test_resolve_refuses_paths_that_are_not_memory_files(populated: Workspace, raw: str) -> None:
    with pytest.raises(PathError):
        populated.resolve(raw)


def test_resolve_refuses_a_path_that_is_not_unicode_though_the_file_exists(workspace: Path) -> None:
    """``memdex get`` given Latin-1 bytes on the command line read a file that discovery skips."""
    with open(os.path.join(os.fsencode(workspace / "memory"), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"- latin-1 name\n")
    for must_exist in (True, False):
        with pytest.raises(PathError, match=r"'memory/caf\\udce9.md' is not Unicode text .*UTF-8 names"):
            Workspace(workspace).resolve("memory/caf\udce9.md", must_exist=must_exist)


def test_resolve_refuses_an_absolute_path_outside_the_workspace(populated: Workspace, tmp_path: Path) -> None:
    assert (tmp_path / "secret.md").is_file()
    with pytest.raises(PathError, match="outside the memory files"):
        populated.resolve(str(tmp_path / "secret.md"))


def test_resolve_refuses_a_missing_file_only_when_it_must_exist(populated: Workspace, workspace: Path) -> None:
    with pytest.raises(PathError, match="no memory file"):
        populated.resolve("memory/2099-12-31.md")
    fresh = populated.resolve("memory/2099-12-31.md", must_exist=False)
    assert fresh.rel == "memory/2099-12-31.md"
    assert fresh.path == workspace / "memory" / "2099-12-31.md"
    nested = populated.resolve("memory/new/deeper/n.md", must_exist=False)
    assert nested.rel == "memory/new/deeper/n.md"


def test_must_exist_false_still_refuses_symlinks_hidden_folders_and_climbing(populated: Workspace) -> None:
    for raw in ["memory/link-out.md", "memory/linkdir/new.md", "memory/.hidden/new.md", "../new.md", "new.md"]:
        with pytest.raises(PathError):
            populated.resolve(raw, must_exist=False)


def test_resolve_refuses_a_non_string(populated: Workspace) -> None:
    with pytest.raises(PathError):
        populated.resolve(None)  # type: ignore[arg-type]


# Path policy: accepted -------------------------------------------------------------------------

ACCEPTED = {
    "MEMORY.md": "MEMORY.md",
    "memory/2026-01-01.md": "memory/2026-01-01.md",
    "./memory/a.md": "memory/a.md",
    "memory/./a.md": "memory/a.md",
    "memory/../MEMORY.md": "MEMORY.md",
    "  memory/a.md  ": "memory/a.md",
    "memory\\a.md": "memory/a.md",
}


@pytest.mark.parametrize(("raw", "rel"), ACCEPTED.items(), ids=ACCEPTED.keys())
def test_resolve_accepts_memory_files_and_normalises_their_path(
    populated: Workspace, workspace: Path, raw: str, rel: str
) -> None:
    file = populated.resolve(raw)
    assert file.rel == rel
    assert file.path == workspace / rel
    assert file.path.is_file()


def test_resolve_accepts_an_absolute_path_inside_the_workspace(populated: Workspace, workspace: Path) -> None:
    file = populated.resolve(str(workspace / "memory" / "a.md"))
    assert file.rel == "memory/a.md"
    assert populated.resolve(str(workspace / "MEMORY.md")).rel == "MEMORY.md"


def test_every_discovered_path_resolves_to_itself(populated: Workspace) -> None:
    found = populated.discover()
    assert [f.rel for f in found] == ["MEMORY.md", "memory/2026-01-01.md", "memory/a.md"]
    for file in found:
        assert populated.resolve(file.rel) == file


def test_well_known_files_are_at_their_documented_paths(workspace: Path) -> None:
    import datetime as dt

    ws = Workspace(workspace)
    assert ws.daily_file(dt.date(2026, 1, 2)).rel == "memory/2026-01-02.md"
    assert ws.long_term_file().rel == "MEMORY.md"
    (workspace / "memory.md").write_text("lower-case long-term file")
    assert ws.long_term_file().rel == "memory.md"
    assert os.path.samefile(ws.long_term_file().path, workspace / "memory.md")
