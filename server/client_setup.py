"""``memdex setup``: add memdex to an MCP client's own config file, or take it out again.

Each client keeps its servers in its own file and shape: Claude Desktop, Claude Code and Cursor under
``mcpServers`` in JSON, VS Code under ``servers`` (with a ``type``), Codex as a ``[mcp_servers.memdex]``
table in TOML. Only memdex's entry is touched: other servers and keys stay as they are (a JSON file is
written back with two-space indentation; in a TOML file only memdex's table changes, comments included).
A run shows the change as a diff, keeps a backup of the file it replaces, writes it atomically, and
does nothing when the entry is already there. With ``hooks`` it sets the command hooks that run
``memdex hook`` instead (``SessionStart``, and ``Stop`` with the marker), in Claude Code's settings file
or Codex's ``hooks.json``, which share one shape.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdex.memory_core import ConfigError

from . import client_toml
from .client_toml import Json

NAME = "memdex"
CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "codex")
TITLES = {"claude-desktop": "Claude Desktop", "claude-code": "Claude Code", "cursor": "Cursor", "vscode": "VS Code",
          "codex": "Codex"}
TOKEN_VARIABLE = "MEMDEX_AUTH_TOKEN"  # Codex reads the token from the environment, not from its config file
HOOK_CLIENTS = ("claude-code", "codex")
HOOK_EVENTS = {"SessionStart": "session-start", "Stop": "stop"}  # Claude Code event -> `memdex hook` event


@dataclass(frozen=True)
class Launch:
    """How a client reaches memdex: a command line it starts (stdio), or the URL of a running server."""

    argv: tuple[str, ...] = ()
    url: str | None = None
    token: str | None = None  # the bearer token the server at ``url`` wants


def memdex_command() -> list[str]:
    """The absolute command that runs memdex: the console script beside this Python, else ``python -m``."""
    script = Path(sys.executable).parent / ("memdex.exe" if sys.platform == "win32" else "memdex")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memdex.server.cli"]


def config_path(client: str, scope: str, *, hooks: bool = False) -> Path:
    """Where ``client`` reads its MCP servers (with ``hooks``: its command hooks) for ``scope``."""
    home, here = Path.home(), Path.cwd()
    project = scope == "project"
    if client == "codex":
        folder = here / ".codex" if project else Path(os.environ.get("CODEX_HOME") or home / ".codex")
        return folder / ("hooks.json" if hooks else "config.toml")
    if client == "claude-code":
        if hooks:
            return (here if project else home) / ".claude" / "settings.json"
        return here / ".mcp.json" if project else home / ".claude.json"
    if client == "cursor":
        return (here if project else home) / ".cursor" / "mcp.json"
    if project:
        if client == "vscode":
            return here / ".vscode" / "mcp.json"
        raise ConfigError(f"{TITLES[client]} has no project config; drop --scope project")
    folder = {"claude-desktop": "Claude", "vscode": str(Path("Code") / "User")}[client]
    name = "claude_desktop_config.json" if client == "claude-desktop" else "mcp.json"
    return _app_config_dir() / folder / name


def _app_config_dir() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def server_entry(client: str, launch: Launch) -> Json:
    """memdex's entry in ``client``'s server list (any other client: the common ``mcpServers`` shape)."""
    typed = client in ("claude-code", "vscode")
    if launch.url is not None:
        if client == "claude-desktop":
            raise ConfigError(
                "Claude Desktop's config file only starts local (stdio) servers; drop --url, or add the URL "
                "under Settings > Connectors"
            )
        entry: Json = {"type": "http", "url": launch.url} if typed else {"url": launch.url}
        if launch.token is not None:
            if client == "codex":  # Codex sends the value of this variable as the bearer token
                entry["bearer_token_env_var"] = TOKEN_VARIABLE
            else:
                entry["headers"] = {"Authorization": f"Bearer {launch.token}"}
        return entry
    command, *args = launch.argv
    return {"type": "stdio", "command": command, "args": args} if typed else {"command": command, "args": args}


def snippet(client: str, launch: Launch) -> str:
    """The config text to paste by hand: the entry inside its file's shape."""
    entry = server_entry(client, launch)
    if client == "codex":
        return client_toml.table_text(("mcp_servers", NAME), entry)
    return json.dumps({"servers" if client == "vscode" else "mcpServers": {NAME: entry}}, indent=2) + "\n"


# Changes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """A file's text before (None: absent) and after the edit."""

    path: Path
    before: str | None
    after: str
    absent: bool = False  # the file is not there, and is to stay so

    @property
    def changed(self) -> bool:
        return not self.absent and self.before != self.after

    def diff(self) -> str:
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(old, new, label if self.before is not None else "/dev/null", label)
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def plan_server(client: str, path: Path, launch: Launch, *, remove: bool = False) -> Change:
    """The edit that adds (or with ``remove``, takes out) memdex's server entry in ``path``."""
    before = _read(path)
    if remove and before is None:
        return Change(path, None, "", absent=True)  # nothing to take out of a file that is not there
    if client == "codex":
        entry = None if remove else server_entry(client, launch)
        return Change(path, before, client_toml.with_table(path, before or "", ("mcp_servers", NAME), entry))
    key = "servers" if client == "vscode" else "mcpServers"

    def edit(data: Json) -> None:
        servers = _object(data, key, path)
        servers.pop(NAME, None)
        if not remove:
            servers[NAME] = server_entry(client, launch)
        elif not servers:
            del data[key]

    return Change(path, before, _json_edited(path, before, edit))


def plan_hooks(path: Path, commands: dict[str, str], *, remove: bool = False) -> Change:
    """The edit that sets memdex's command hooks in Claude Code's settings file: ``commands`` maps an event
    (``SessionStart``, ``Stop``) to its command line; memdex's hooks of the other events go (all with ``remove``).
    """
    before = _read(path)
    if remove and before is None:
        return Change(path, None, "", absent=True)

    def edit(data: Json) -> None:
        hooks = _object(data, "hooks", path)
        for event in HOOK_EVENTS:
            groups = [kept for group in _array(hooks, event, path) if (kept := _without_memdex(group)) is not None]
            if not remove and event in commands:
                groups.append({"hooks": [{"type": "command", "command": commands[event]}]})
            if groups:
                hooks[event] = groups
            else:
                hooks.pop(event, None)
        if not hooks:
            del data["hooks"]

    return Change(path, before, _json_edited(path, before, edit))


def _without_memdex(group: Any) -> Any:
    """A hook group without memdex's commands; None when nothing else was in it."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    kept = [hook for hook in group["hooks"] if not _is_memdex_hook(hook)]
    if not kept:
        return None
    return group if len(kept) == len(group["hooks"]) else {**group, "hooks": kept}


def _is_memdex_hook(hook: Any) -> bool:
    """A command hook that runs ``memdex hook …`` (whichever memdex executable)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        argv = shlex.split(hook["command"])
    except ValueError:
        return False
    for i, word in enumerate(argv[:-1]):
        if argv[i + 1] == "hook" and (Path(word).stem == NAME or word == "memdex.server.cli"):
            return True
    return False


def apply(change: Change) -> Path | None:
    """Write ``change`` atomically, keeping the old file's mode; returns the backup of the old file, if any."""
    backup = None
    if change.before is not None:
        backup = _free_backup_name(change.path)
        shutil.copy2(change.path, backup)
    change.path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{change.path.name}.", dir=change.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(change.after)
            handle.flush()
            os.fsync(handle.fileno())
        if change.before is not None:
            shutil.copymode(change.path, temp)
        else:
            os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, change.path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return backup


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _free_backup_name(path: Path) -> Path:
    """``<file>.bak``, or ``<file>.bak.<n>`` when earlier backups exist: no backup is overwritten."""
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    return candidate


# JSON -----------------------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _json_edited(path: Path, before: str | None, edit: Callable[[Json], None]) -> str:
    """``before`` parsed, edited in place by ``edit`` and written back; unchanged text when nothing changed."""
    comments = False
    if before is None or not before.strip():
        data: Json = {}
    else:
        plain, comments = _strip_jsonc(before)
        try:
            data = json.loads(plain)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not valid JSON ({exc}); fix it by hand, then run memdex setup again") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} holds a JSON {type(data).__name__}, not an object; fix it by hand first")
    original = json.loads(json.dumps(data))
    edit(data)
    if before is not None and data == original:
        return before
    if comments:
        raise ConfigError(
            f"{path} has comments, which writing it back as JSON would lose; add the entry by hand "
            "(memdex setup <client> --print shows it), or remove the comments and run memdex setup again"
        )
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _strip_jsonc(text: str) -> tuple[str, bool]:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as VS Code reads its files, as plain JSON
    (comments blanked out, so the parser's line and column numbers still hold); and whether it had comments."""
    out: list[str] = []
    comments = False
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            comments, i = True, end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            comments, i = True, end
        elif char == ",":
            rest = re.match(r"(?:\s|//[^\n]*|/\*.*?\*/)*[}\]]", text[i + 1 :], re.S)
            after_value = "".join(out).rstrip()[-1:] not in ("{", "[", ",", "")
            out.append(" " if rest and after_value else ",")  # a trailing comma (not one standing alone)
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), comments


def _object(data: Json, key: str, path: Path) -> Json:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} is a JSON {type(value).__name__}, not an object; fix it by hand first")
    return value


def _array(data: Json, key: str, path: Path) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(f"{path}: hooks.{key} is a JSON {type(value).__name__}, not an array; fix it by hand first")
    return value


# The command ------------------------------------------------------------------------------------


def run(
    client: str,
    where: Sequence[str],
    *,
    scope: str = "user",
    url: str | None = None,
    token: str | None = None,
    config_file: Path | None = None,
    dry_run: bool = False,
    remove: bool = False,
    hooks: bool = False,
    marker: bool = False,
    show: bool = False,
) -> int:
    """``memdex setup``: print the entry (``show``), or add/remove it in the client's file, diff first.

    ``where`` are the arguments naming memdex's memory (``--workspace DIR`` …), given to ``serve``
    and to ``hook``. With ``hooks`` the server entry is written too (the hooks name its tools), and
    ``remove`` takes out both, whichever of them one earlier run wrote. Every change is planned (and
    may be refused) before any file is written.
    """
    command = memdex_command()
    if hooks and client not in HOOK_CLIENTS:
        raise ConfigError(f"--hooks is for claude-code and codex; {client} has no command hooks")
    if token is not None and url is None:
        raise ConfigError("--auth-token goes with --url (a server started over stdio needs no token); drop it or add --url")
    events = {"SessionStart": ["session-start"], **({"Stop": ["stop", "--marker"]} if marker else {})}
    commands = {event: shlex.join([*command, "hook", *words, *where]) for event, words in events.items()}
    launch = Launch(url=url, token=token) if url is not None else Launch(argv=(*command, "serve", *where))
    if show:
        text = json.dumps({"hooks": {e: [{"hooks": [{"type": "command", "command": c}]}] for e, c in commands.items()}},
                          indent=2) + "\n" if hooks else snippet(client, launch)
        sys.stdout.write(text)
        return 0
    if client not in CLIENTS:
        raise ConfigError(f"unknown client {client!r}; use one of {', '.join(CLIENTS)}, or --print for an entry to paste")
    path = (config_file or config_path(client, scope)).expanduser().absolute()
    changes = [("memdex's entry", plan_server(client, path, launch, remove=remove))]
    if client in HOOK_CLIENTS and (hooks or remove):
        hooks_path = config_path(client, scope, hooks=True).expanduser().absolute()
        change = plan_hooks(hooks_path, commands, remove=remove)
        if hooks or change.changed:  # --remove takes out hooks an earlier --hooks wrote
            changes.append(("memdex's hooks", change))
    todo = [(what, change) for what, change in changes if change.changed]
    for what, change in changes:
        if not change.changed:
            print(f"memdex: {change.path} {'has no' if remove else 'already has'} {what}{'' if todo else '; nothing to do'}")
    for _, change in todo:
        sys.stdout.write(change.diff())
    if dry_run:
        for _, change in todo:
            print(f"memdex: dry run; {change.path} was not written")
        return 0
    for what, change in todo:
        backup = apply(change)
        kept = f" (backup: {backup})" if backup else ""
        trust = "; Codex asks you to review and trust new hooks" if what.endswith("hooks") and client == "codex" else ""
        print(f"memdex: {'removed' if remove else 'wrote'} {what} in {change.path}{kept}; restart {TITLES[client]} "
              f"to load it{trust}")
    if token is not None and client == "codex" and not remove:
        print(f"memdex: Codex sends the token from ${TOKEN_VARIABLE}; set it in the environment Codex starts in")
    return 0
