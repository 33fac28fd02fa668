"""`memdex setup`: real config files of each client, merged, backed up, diffed, removed, refused when malformed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from memdex.server.cli import main
from memdex.server.client_setup import memdex_command

EXE = memdex_command()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and the current folder in tmp; the workspace is <tmp>/ws."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(tmp_path / "project")
    (tmp_path / "ws").mkdir()
    return home


def setup(tmp_path: Path, *args: str) -> int:
    return main(["setup", *args, "--workspace", str(tmp_path / "ws")])


def stdio(tmp_path: Path) -> dict[str, object]:
    return {"command": EXE[0], "args": [*EXE[1:], "serve", "--workspace", str(tmp_path / "ws")]}


def test_cursor_entry_is_created_with_its_folders(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert setup(tmp_path, "cursor") == 0
    path = home / ".cursor" / "mcp.json"
    assert json.loads(path.read_text()) == {"mcpServers": {"memdex": stdio(tmp_path)}}
    out = capsys.readouterr().out
    assert out.startswith(f"--- /dev/null\n+++ {path}\n")
    assert out.endswith(f"memdex: wrote memdex's entry in {path}; restart Cursor to load it\n")
    assert not list(path.parent.glob("*.bak*"))  # nothing to back up


def test_other_servers_and_keys_are_kept_and_a_backup_is_made(home: Path, tmp_path: Path) -> None:
    path = home / ".claude.json"
    old = {"numStartups": 7, "projects": {"/p": {"x": 1}}, "mcpServers": {"git": {"command": "git-mcp", "args": []}}}
    path.write_text(json.dumps(old))
    os.chmod(path, 0o600)
    assert setup(tmp_path, "claude-code") == 0
    data = json.loads(path.read_text())
    assert data == {**old, "mcpServers": {"git": old["mcpServers"]["git"], "memdex": {"type": "stdio", **stdio(tmp_path)}}}
    assert list(data) == ["numStartups", "projects", "mcpServers"]
    assert (home / ".claude.json.bak").read_text() == json.dumps(old)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_second_run_changes_nothing(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    setup(tmp_path, "cursor")
    path = home / ".cursor" / "mcp.json"
    before = path.read_text(), path.stat().st_mtime_ns
    capsys.readouterr()
    assert setup(tmp_path, "cursor") == 0
    assert capsys.readouterr().out == f"memdex: {path} already has memdex's entry; nothing to do\n"
    assert (path.read_text(), path.stat().st_mtime_ns) == before
    assert not (path.parent / "mcp.json.bak").exists()


def test_a_changed_entry_is_replaced_and_backups_are_never_overwritten(home: Path, tmp_path: Path) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"memdex": {"command": "old"}}}')
    setup(tmp_path, "cursor")
    (tmp_path / "other").mkdir()
    main(["setup", "cursor", "--workspace", str(tmp_path / "other")])
    assert json.loads((path.parent / "mcp.json.bak").read_text()) == {"mcpServers": {"memdex": {"command": "old"}}}
    assert json.loads((path.parent / "mcp.json.bak.1").read_text()) == {"mcpServers": {"memdex": stdio(tmp_path)}}
    assert json.loads(path.read_text())["mcpServers"]["memdex"]["args"][-1] == str(tmp_path / "other")


def test_dry_run_prints_the_diff_and_writes_nothing(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {}}\n')
    assert setup(tmp_path, "cursor", "--dry-run") == 0
    out = capsys.readouterr().out
    assert f"--- {path}\n+++ {path}\n" in out
    assert '-{"mcpServers": {}}\n' in out and f'+        "{tmp_path / "ws"}"\n' in out
    assert out.endswith(f"memdex: dry run; {path} was not written\n")
    assert path.read_text() == '{"mcpServers": {}}\n'
    assert not (path.parent / "mcp.json.bak").exists()


def test_remove_takes_out_only_memdex(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"theme": "dark", "mcpServers": {"git": {"command": "g"}}}')
    setup(tmp_path, "cursor")
    assert setup(tmp_path, "cursor", "--remove") == 0
    assert json.loads(path.read_text()) == {"theme": "dark", "mcpServers": {"git": {"command": "g"}}}
    capsys.readouterr()
    assert setup(tmp_path, "cursor", "--remove") == 0
    assert capsys.readouterr().out == f"memdex: {path} has no memdex's entry; nothing to do\n"


def test_malformed_json_is_refused_in_one_line(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {,}}')
    assert setup(tmp_path, "cursor") == 2
    err = capsys.readouterr().err
    assert err == (
        f"memdex: {path} is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 17 "
        "(char 16)); fix it by hand, then run memdex setup again\n"
    )
    assert path.read_text() == '{"mcpServers": {,}}'
    assert not (path.parent / "mcp.json.bak").exists()


def test_vscode_uses_servers_with_a_type(home: Path, tmp_path: Path) -> None:
    assert setup(tmp_path, "vscode", "--scope", "project") == 0
    assert json.loads((tmp_path / "project" / ".vscode" / "mcp.json").read_text()) == {
        "servers": {"memdex": {"type": "stdio", **stdio(tmp_path)}}
    }
    assert setup(tmp_path, "vscode") == 0  # the user's file: under XDG_CONFIG_HOME on Linux
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "Code" / "User" / "mcp.json"
    assert json.loads(user.read_text())["servers"]["memdex"]["type"] == "stdio"


def test_claude_code_project_scope_and_http(home: Path, tmp_path: Path) -> None:
    assert setup(tmp_path, "claude-code", "--scope", "project", "--url", "http://127.0.0.1:8765/mcp") == 0
    assert json.loads((tmp_path / "project" / ".mcp.json").read_text()) == {
        "mcpServers": {"memdex": {"type": "http", "url": "http://127.0.0.1:8765/mcp"}}
    }


def test_claude_desktop_config_file_override_and_no_url(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep" / "claude_desktop_config.json"
    assert setup(tmp_path, "claude-desktop", "--config-file", str(path)) == 0
    assert json.loads(path.read_text()) == {"mcpServers": {"memdex": stdio(tmp_path)}}
    assert setup(tmp_path, "claude-desktop", "--url", "http://127.0.0.1:8765/mcp") == 2
    assert capsys.readouterr().err.startswith("memdex: Claude Desktop's config file only starts local (stdio) servers")


CODEX = """\
# my codex config
model = "gpt-5"

[mcp_servers.docs]
command = "docs-mcp"  # keep this comment

[mcp_servers.memdex]
command = "old-memdex"
args = ["serve"]

[mcp_servers.memdex.env]
A = "1"

# the next table's own comment
[profiles.fast]
model = "gpt-5-mini"
"""


def test_codex_table_is_replaced_in_place_keeping_the_rest(home: Path, tmp_path: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX)
    assert setup(tmp_path, "codex") == 0
    args = ", ".join(json.dumps(a) for a in [*EXE[1:], "serve", "--workspace", str(tmp_path / "ws")])
    table = f'[mcp_servers.memdex]\ncommand = "{EXE[0]}"\nargs = [{args}]\n'
    old_table = '[mcp_servers.memdex]\ncommand = "old-memdex"\nargs = ["serve"]\n\n[mcp_servers.memdex.env]\nA = "1"\n'
    assert path.read_text() == CODEX.replace(old_table, table)
    assert (path.parent / "config.toml.bak").read_text() == CODEX
    assert setup(tmp_path, "codex") == 0  # idempotent
    assert not (path.parent / "config.toml.bak.1").exists()
    assert setup(tmp_path, "codex", "--remove") == 0
    assert path.read_text() == CODEX.replace(old_table + "\n", "")
    assert tomllib.loads(path.read_text())["mcp_servers"] == {"docs": {"command": "docs-mcp"}}


def test_codex_table_is_appended_and_malformed_toml_refused(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "gpt-5"  # mine\n')
    assert setup(tmp_path, "codex", "--url", "http://127.0.0.1:8765/mcp") == 0
    assert path.read_text() == 'model = "gpt-5"  # mine\n\n[mcp_servers.memdex]\nurl = "http://127.0.0.1:8765/mcp"\n'
    path.write_text("model = \n")
    capsys.readouterr()
    assert setup(tmp_path, "codex") == 2
    assert capsys.readouterr().err == (
        f"memdex: {path} is not valid TOML (Invalid value (at line 1, column 9)); fix it by hand, then run memdex "
        "setup again\n"
    )
    assert path.read_text() == "model = \n"


def test_codex_inline_entry_is_left_to_the_user(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('mcp_servers = { memdex = { command = "x" } }\n')
    assert setup(tmp_path, "codex") == 2
    assert "defines mcp_servers.memdex in a form memdex setup does not edit" in capsys.readouterr().err
    assert path.read_text() == 'mcp_servers = { memdex = { command = "x" } }\n'


def test_print_gives_an_entry_for_any_client(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert setup(tmp_path, "windsurf", "--print") == 0
    assert json.loads(capsys.readouterr().out) == {"mcpServers": {"memdex": stdio(tmp_path)}}
    assert not list(home.rglob("*"))
    assert setup(tmp_path, "windsurf") == 2
    assert "unknown client 'windsurf'" in capsys.readouterr().err


def test_claude_code_hooks_merge_and_remove(home: Path, tmp_path: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"hooks": [{"type": "command", "command": "echo hi"}]}
    path.write_text(json.dumps({"model": "opus", "hooks": {"SessionStart": [mine], "PreToolUse": [mine]}}))
    assert setup(tmp_path, "claude-code", "--hooks", "--marker") == 0
    where = ["--workspace", str(tmp_path / "ws")]
    start = " ".join([*EXE, "hook", "session-start", *where])
    stop = " ".join([*EXE, "hook", "stop", "--marker", *where])
    assert json.loads(path.read_text()) == {
        "model": "opus",
        "hooks": {
            "SessionStart": [mine, {"hooks": [{"type": "command", "command": start}]}],
            "PreToolUse": [mine],
            "Stop": [{"hooks": [{"type": "command", "command": stop}]}],
        },
    }
    once = path.read_text()
    assert setup(tmp_path, "claude-code", "--hooks", "--marker") == 0
    assert path.read_text() == once
    assert setup(tmp_path, "claude-code", "--hooks") == 0  # without the marker: the Stop hook goes
    assert "Stop" not in json.loads(path.read_text())["hooks"]
    assert setup(tmp_path, "claude-code", "--hooks", "--remove") == 0
    assert json.loads(path.read_text()) == {"model": "opus", "hooks": {"SessionStart": [mine], "PreToolUse": [mine]}}


def test_setup_runs_as_a_real_command(home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(home)}
    command = [sys.executable, "-m", "memdex.server.cli", "setup", "codex", "--workspace", str(tmp_path / "ws")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    path = home / ".codex" / "config.toml"
    assert done.stdout.endswith(f"memdex: wrote memdex's entry in {path}; restart Codex to load it\n")
    assert tomllib.loads(path.read_text()) == {"mcp_servers": {"memdex": stdio(tmp_path)}}
    hooks = [*command[:4], "claude-code", "--hooks", "--dry-run", "--workspace", str(tmp_path / "ws")]
    done = subprocess.run(hooks, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"memdex: dry run; {home / '.claude' / 'settings.json'} was not written\n" in done.stdout
    assert not (home / ".claude").exists()


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_hooks_come_with_the_server_entry_and_one_remove_takes_out_both(
    home: Path, tmp_path: Path, client: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The session-start hook names memdex's tools, so `--hooks` alone also writes the server entry; one
    `--remove` (with or without --hooks) takes out everything that call wrote, and leaves the files' other keys."""
    if client == "claude-code":
        entry_file, hooks_file = home / ".claude.json", home / ".claude" / "settings.json"
        entry = lambda: json.loads(entry_file.read_text()).get("mcpServers", {}).get("memdex")  # noqa: E731
    else:
        entry_file, hooks_file = home / ".codex" / "config.toml", home / ".codex" / "hooks.json"
        entry = lambda: tomllib.loads(entry_file.read_text()).get("mcp_servers", {}).get("memdex")  # noqa: E731
    hooks_file.parent.mkdir(parents=True, exist_ok=True)
    hooks_file.write_text(json.dumps({"model": "x"}))
    assert setup(tmp_path, client, "--hooks", "--marker") == 0
    assert entry() is not None and entry()["args"][-3:] == ["serve", "--workspace", str(tmp_path / "ws")]
    assert set(json.loads(hooks_file.read_text())["hooks"]) == {"SessionStart", "Stop"}
    out = capsys.readouterr().out
    assert f"memdex: wrote memdex's entry in {entry_file}" in out and f"wrote memdex's hooks in {hooks_file}" in out
    for remove in (["--remove"], ["--remove", "--hooks"]):
        assert setup(tmp_path, client, "--hooks") == 0
        assert setup(tmp_path, client, *remove) == 0
        assert entry() is None
        assert json.loads(hooks_file.read_text()) == {"model": "x"}
    capsys.readouterr()
    assert setup(tmp_path, client, "--remove") == 0
    assert capsys.readouterr().out == f"memdex: {entry_file} has no memdex's entry; nothing to do\n"
    hooks_file.unlink()
    entry_file.unlink()
    assert setup(tmp_path, client, "--remove", "--hooks") == 0  # no file is created to take nothing out of
    assert not entry_file.exists() and not hooks_file.exists()


def test_a_workspace_serve_would_refuse_is_refused_at_setup(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing folder (unless --create), a file, and the home folder without memory: one line, exit 2, no file
    written; --create makes the folder with memory/ and then writes the entry."""
    missing = tmp_path / "new-memory"
    (tmp_path / "afile").write_text("x")
    cases = {
        str(missing): f"memdex: workspace {missing} does not exist; add --create to make it, or pass --workspace "
                      "with your memory folder\n",
        str(tmp_path / "afile"): f"memdex: workspace {tmp_path / 'afile'} is not a folder; pass --workspace with your "
                                 "memory folder\n",
        str(home): f"memdex: workspace {home} is your home folder and holds no MEMORY.md or memory/ (is it just the "
                   "current folder?); pass --workspace with your memory folder, e.g. --workspace ~/agent-memory\n",
    }
    for workspace, error in cases.items():
        for client in ("cursor", "claude-desktop"):
            assert main(["setup", client, "--workspace", workspace]) == 2
            assert capsys.readouterr().err == error
    assert not [p for p in home.rglob("*") if p.is_file()]
    assert main(["setup", "cursor", "--workspace", str(missing), "--create", "--dry-run"]) == 0
    assert not missing.exists() and not (home / ".cursor").exists()  # a dry run creates nothing
    assert main(["setup", "cursor", "--workspace", str(missing), "--create"]) == 0
    assert (missing / "memory").is_dir()
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["memdex"]["args"][-1] == str(missing)
    # Taking the entry out works whatever became of the folder.
    shutil.rmtree(missing)
    assert main(["setup", "cursor", "--workspace", str(missing), "--remove"]) == 0
    assert json.loads((home / ".cursor" / "mcp.json").read_text()) == {}


JSONC = """{
  // my servers
  "servers": {
    "git": {"type": "stdio", "command": "git-mcp", "args": ["--x", "a // not a comment", "b /* nor this */"],},
  },
  /* inputs */ "inputs": [1, 2,],
}
"""


def test_vscode_jsonc_is_read_and_its_comments_are_never_dropped(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """VS Code's mcp.json may have comments and trailing commas. Such a file is read; one with comments is not
    rewritten (the line says why and what to do); one with trailing commas only is written as JSON."""
    path = tmp_path / "project" / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(JSONC)
    assert setup(tmp_path, "vscode", "--scope", "project") == 2
    assert capsys.readouterr().err == (
        f"memdex: {path} has comments, which writing it back as JSON would lose; add the entry by hand (memdex setup "
        "<client> --print shows it), or remove the comments and run memdex setup again\n"
    )
    assert path.read_text() == JSONC and not list(path.parent.glob("*.bak*"))
    no_comments = "\n".join(line for line in JSONC.replace("/* inputs */ ", "").splitlines() if "// my" not in line)
    path.write_text(no_comments)
    assert setup(tmp_path, "vscode", "--scope", "project") == 0
    data = json.loads(path.read_text())
    assert data["servers"]["git"]["args"] == ["--x", "a // not a comment", "b /* nor this */"]
    assert data["inputs"] == [1, 2] and data["servers"]["memdex"]["type"] == "stdio"
    # A file with comments that already has memdex's entry is read and left as it is.
    commented = "// mine\n" + path.read_text()
    path.write_text(commented)
    assert setup(tmp_path, "vscode", "--scope", "project") == 0
    assert path.read_text() == commented


def test_url_carries_the_bearer_token(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--auth-token with --url: the Authorization header in JSON clients; Codex's bearer_token_env_var (Codex
    reads the token from the environment). Without --url it is refused in one line."""
    url, token = "http://127.0.0.1:8765/mcp", "s3cret-token-of-length-32-chars!"
    assert setup(tmp_path, "cursor", "--url", url, "--auth-token", token) == 0
    assert json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["memdex"] == {
        "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    assert setup(tmp_path, "vscode", "--url", url, "--auth-token", token, "--scope", "project") == 0
    assert json.loads((tmp_path / "project" / ".vscode" / "mcp.json").read_text())["servers"]["memdex"] == {
        "type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    assert setup(tmp_path, "codex", "--url", url, "--auth-token", token) == 0
    assert tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["memdex"] == {
        "url": url, "bearer_token_env_var": "MEMDEX_AUTH_TOKEN"}
    assert "Codex sends the token from $MEMDEX_AUTH_TOKEN" in capsys.readouterr().out
    assert setup(tmp_path, "cursor", "--auth-token", token) == 2
    assert capsys.readouterr().err == ("memdex: --auth-token goes with --url (a server started over stdio needs no "
                                       "token); drop it or add --url\n")
    for bad in ("", "short"):  # an unset $TOKEN or a weak one is refused before anything is written
        before = (home / ".cursor" / "mcp.json").read_bytes()
        assert setup(tmp_path, "cursor", "--url", url, "--auth-token", bad) == 2
        assert "auth_token" in capsys.readouterr().err and (home / ".cursor" / "mcp.json").read_bytes() == before
