"""The `memdex` command: problems it can explain are one line with exit code 2; its reports are readable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from fake_openai import FakeOpenAI
from helpers import TEST_MODEL


def _memdex(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``memdex ARGS`` keyword-only (unless ``env`` says otherwise), in isolation from the user's settings."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    environment |= {"MEMDEX_EMBEDDING__PROVIDER": "none", **env}
    command = [sys.executable, "-m", "memdex.server.cli", *args]
    return subprocess.run(command, env=environment, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("memdex: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr


def test_an_unusable_index_path_is_one_line_and_exit_code_2(tmp_path: Path, workspace: Path) -> None:
    """An index under a file (not a folder) is explained without a traceback."""
    (tmp_path / "state").write_text("a file where a folder should be\n")
    error = _one_line_error(_memdex("status", "--workspace", str(workspace), "--index", str(tmp_path / "state" / "idx.sqlite")))
    assert str(tmp_path / "state") in error and "--index" in error


def test_a_missing_workspace_is_refused_saying_how_to_create_it(tmp_path: Path) -> None:
    """A mistyped --workspace is not silently created by the first append: serve and status refuse it."""
    missing = tmp_path / "agnet-memory"
    for command in ("serve", "status"):
        error = _one_line_error(_memdex(command, "--workspace", str(missing)))
        assert f"workspace {missing} does not exist" in error and f"mkdir -p {missing / 'memory'}" in error
    assert not missing.exists()


def test_the_root_and_home_folders_are_refused_unless_they_hold_memory(tmp_path: Path) -> None:
    """A desktop client's working folder (/ or home) is not a workspace by accident; one holding memory/ is fine."""
    assert "is the file system root" in _one_line_error(_memdex("status", cwd=Path("/")))
    home = tmp_path / "home"
    home.mkdir()
    error = _one_line_error(_memdex("serve", cwd=home, HOME=str(home)))
    assert f"workspace {home} is your home folder" in error and "--workspace" in error
    (home / "memory").mkdir()
    assert _memdex("status", cwd=home, HOME=str(home)).returncode == 0


def test_malformed_toml_is_one_line_naming_the_file_line_and_column(tmp_path: Path, workspace: Path) -> None:
    config = tmp_path / "memdex.toml"
    config.write_text('workspace = "."\n[query\nmax_results = 3\n', encoding="utf-8")
    error = _one_line_error(_memdex("status", "--config", str(config), "--workspace", str(workspace)))
    assert f"config file {config} is not valid TOML" in error and "line 2, column 7" in error


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path, workspace: Path) -> None:
    """`memdex status | head -1`: stdout's reader is gone before memdex writes; no BrokenPipeError traceback."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"MEMDEX_EMBEDDING__PROVIDER": "none"}
    command = [sys.executable, "-m", "memdex.server.cli", "status", "--workspace", str(workspace)]
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # like `head` exiting
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == 0, stderr
    assert stderr == ""


def _rows(stdout: str) -> dict[str, str]:
    """``key: value`` lines, checking that the values start in one column."""
    lines = stdout.splitlines()
    assert all(re.fullmatch(r"[a-z][a-z -]*: +\S.*", line) for line in lines), stdout
    assert len({len(re.match(r"[^:]+: +", line).group()) for line in lines}) == 1, stdout
    return {key: value.strip() for key, value in (line.split(":", 1) for line in lines)}


def test_status_is_aligned_lines_consistent_about_the_provider_and_json_on_request(workspace: Path) -> None:
    """No Python dict repr; the configured provider and the index's vectors are told apart, and agree."""
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The deploy key is ORBIT-7734.\n", encoding="utf-8")
    assert _memdex("index", "--workspace", str(workspace)).returncode == 0
    rows = _rows(_memdex("status", "--workspace", str(workspace)).stdout)
    assert rows["memory files"] == "1 on disk, 1 indexed in 1 chunks"
    assert rows["embeddings"] == "none: keyword-only search"
    assert rows["index vectors"] == "none: keyword-only search, as configured"  # no vectors are coming
    configured = _rows(_memdex("status", "--workspace", str(workspace), MEMDEX_EMBEDDING__PROVIDER="openai").stdout)
    assert configured["embeddings"].startswith("openai (fallback none)")
    assert configured["index vectors"] == "none yet: searches are keyword-only until the index is embedded"
    info = json.loads(_memdex("status", "--workspace", str(workspace), "--json").stdout)
    assert info["filesOnDisk"] == info["filesIndexed"] == 1 and info["indexVectors"] is None
    assert info["embedding"] == {"provider": "none", "fallback": "none"}


def test_doctor_ends_with_a_verdict_and_a_matching_exit_code(tmp_path: Path, workspace: Path, fake: FakeOpenAI) -> None:
    ok = _memdex("doctor", "--workspace", str(workspace))
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1].startswith("OK: keyword search ready"), ok.stdout
    openai = {"MEMDEX_EMBEDDING__PROVIDER": "openai", "MEMDEX_EMBEDDING__OPENAI__BASE_URL": fake.url,
              "MEMDEX_EMBEDDING__OPENAI__API_KEY": "sk-test"}  # fmt: skip
    hybrid = _memdex("doctor", "--workspace", str(workspace), **openai)
    assert hybrid.returncode == 0, hybrid.stdout + hybrid.stderr
    assert hybrid.stdout.splitlines()[-1] == "OK: keyword and vector search ready (openai text-embedding-3-small)"
    broken = _memdex("doctor", "--workspace", str(tmp_path / "missing"), MEMDEX_EMBEDDING__PROVIDER="openai")
    last = broken.stdout.splitlines()[-1]
    assert broken.returncode == 1 and last.startswith("PROBLEMS: 2: workspace "), broken.stdout
    assert "does not exist" in last and "no embedding provider loaded" in last


def test_doctor_warns_when_the_model_cannot_read_the_memorys_script(workspace: Path, fake: FakeOpenAI) -> None:
    """An English-only model (all-MiniLM, the test model) over notes mostly in Chinese: a warning naming
    both, the verdict still OK. No warning for English notes, nor for a multilingual model."""
    (workspace / "MEMORY.md").write_text("# 记忆\n\n- 用户喜欢喝乌龙茶，不喜欢咖啡。\n- 数据库迁移推迟到下个月。\n", encoding="utf-8")
    local = {"MEMDEX_EMBEDDING__PROVIDER": "local", "MEMDEX_EMBEDDING__LOCAL__MODEL": str(TEST_MODEL)}
    chinese = _memdex("doctor", "--workspace", str(workspace), **local)
    warning = [line for line in chinese.stdout.splitlines() if line.startswith("WARNING:")]
    assert chinese.returncode == 0 and chinese.stdout.splitlines()[-1].startswith("OK: keyword and vector"), chinese.stdout
    assert len(warning) == 1 and "Chinese/Japanese" in warning[0] and "all-MiniLM-L6-v2" in warning[0], chinese.stdout
    openai = {"MEMDEX_EMBEDDING__PROVIDER": "openai", "MEMDEX_EMBEDDING__OPENAI__BASE_URL": fake.url,
              "MEMDEX_EMBEDDING__OPENAI__API_KEY": "sk-test"}  # fmt: skip
    assert "WARNING:" not in _memdex("doctor", "--workspace", str(workspace), **openai).stdout
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The user prefers oolong tea to coffee (乌龙茶).\n", encoding="utf-8")
    assert "WARNING:" not in _memdex("doctor", "--workspace", str(workspace), **local).stdout


def test_doctor_names_the_memory_files_saved_as_utf16(workspace: Path) -> None:
    """memdex reads them, but refuses to append to or edit them: doctor says so before an agent's write is refused."""
    (workspace / "MEMORY.md").write_bytes("# Memory\r\n\r\n- Prefers tea\r\n".encode("utf-16"))
    (workspace / "memory" / "2026-11-02.md").write_text("- Ran the backup\n", encoding="utf-8")
    doctor = _memdex("doctor", "--workspace", str(workspace))
    warnings = [line for line in doctor.stdout.splitlines() if line.startswith("WARNING:")]
    assert doctor.returncode == 0 and doctor.stdout.splitlines()[-1].startswith("OK: keyword search ready"), doctor.stdout
    assert warnings == ["WARNING: MEMORY.md is saved as UTF-16: memdex searches it, but memory_append and memory_edit "
                        "refuse to write to it; save it as UTF-8"]  # fmt: skip
    (workspace / "MEMORY.md").write_text("# Memory\n\n- Prefers tea\n", encoding="utf-8")
    assert "WARNING:" not in _memdex("doctor", "--workspace", str(workspace)).stdout


def test_doctor_names_the_memory_files_skipped_for_a_name_no_answer_path_spells(workspace: Path) -> None:
    with open(os.path.join(os.fsencode(workspace / "memory"), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"- latin-1 name\n")
    doctor = _memdex("doctor", "--workspace", str(workspace))
    warnings = [line for line in doctor.stdout.splitlines() if line.startswith("WARNING:")]
    assert doctor.returncode == 0, doctor.stdout
    assert warnings == [f"WARNING: {workspace}/memory/caf\\xe9.md: not indexed, since a name there is not UTF-8 text "
                        "or holds a backslash; rename it"]  # fmt: skip


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path: Path, workspace: Path) -> None:
    """Latin-1, UTF-16 and UTF-8 with a byte-order mark: each one line that says what to save it as, not a
    UnicodeDecodeError traceback or "line 1, column 1"."""
    config = tmp_path / "memdex.toml"
    text = '# Café notes\n[query]\nmax_results = 3\n'
    for encoding, says in (("latin-1", "is not UTF-8 text (byte 0xe9 on line 1;"),
                           ("utf-16", "is UTF-16 text, and TOML is UTF-8"),
                           ("utf-8-sig", "starts with a UTF-8 byte-order mark")):
        config.write_bytes(text.encode(encoding))
        error = _one_line_error(_memdex("status", "--config", str(config), "--workspace", str(workspace)))
        assert f"config file {config} {says}" in error, error
        assert error.rstrip().endswith("save it as UTF-8 (without a byte-order mark)")
    config.write_text(text, encoding="utf-8")
    assert _memdex("status", "--config", str(config), "--workspace", str(workspace)).returncode == 0


def test_version_prints_the_installed_version() -> None:
    done = _memdex("--version")
    assert done.returncode == 0 and re.fullmatch(r"memdex \d+\.\d+\.\d+\S*\n", done.stdout), done.stdout + done.stderr


def test_search_filters_no_file_can_pass_are_one_line(workspace: Path) -> None:
    """pathPrefix above the workspace (with no extra folder there) and source 'sessions' with sessions off are
    refused like pathPrefix '/etc', not answered 'no results'."""
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The deploy key is ORBIT-7734.\n", encoding="utf-8")
    base = ("search", "ORBIT-7734", "--workspace", str(workspace))
    for prefix in ("../", "..", "../../etc"):
        error = _one_line_error(_memdex(*base, "--path", prefix))
        assert "is outside the workspace and holds no memory files" in error, error
    assert "must be relative to the workspace" in _one_line_error(_memdex(*base, "--path", "/etc"))
    error = _one_line_error(_memdex(*base, "--source", "sessions"))
    assert "sessions are off here" in error
    assert "ORBIT-7734" in _memdex(*base, "--source", "memory").stdout
    # With an extra folder beside the workspace, '../' is where it is, and finds it.
    team = workspace.parent / "team"
    team.mkdir()
    (team / "notes.md").write_text("- The team key is ORBIT-7734 too.\n", encoding="utf-8")
    error = _one_line_error(_memdex(*base, MEMDEX_EXTRA_PATHS=str(team)))  # not JSON: one line, not a traceback
    assert "a list or table in an environment variable is JSON" in error
    found = _memdex(*base, "--path", "../", MEMDEX_EXTRA_PATHS=json.dumps([str(team)]))
    assert found.returncode == 0 and "../team/notes.md" in found.stdout and "MEMORY.md" not in found.stdout, found


def test_get_and_search_refuse_an_over_long_path_in_one_line(workspace: Path) -> None:
    """A 100 KB path (quadratic work before: tens of seconds) is refused by its length, naming the limit."""
    huge = "a/" * 50_000
    error = _one_line_error(_memdex("get", huge, "--workspace", str(workspace)))
    assert "path is 100,000 characters long; memory paths have at most 1,024 characters" in error, error[:300]
    error = _one_line_error(_memdex("search", "x", "--path", huge, "--workspace", str(workspace)))
    assert "pathPrefix is 100,000 characters long" in error, error[:300]


def _core_only(tmp_path: Path) -> dict[str, str]:
    """The environment of a Python without the `local` extra (as `uvx memdex-mcp` or `pip install memdex-mcp`
    has it): a sitecustomize hides llama-cpp-python from imports; no API key."""
    site = tmp_path / "core-only"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\nfrom importlib.machinery import PathFinder\n\n\n"
        "class _WithoutLocalExtra(PathFinder):\n"
        "    @classmethod\n"
        "    def find_spec(cls, name, path=None, target=None):\n"
        "        return None if name.split('.')[0] == 'llama_cpp' else PathFinder.find_spec(name, path, target)\n\n\n"
        "sys.meta_path = [_WithoutLocalExtra if f is PathFinder else f for f in sys.meta_path]\n"
    )
    return {"PYTHONPATH": str(site), "OPENAI_API_KEY": "", "MEMDEX_EMBEDDING__PROVIDER": "auto"}


def test_keyword_only_is_a_supported_mode_for_status_and_doctor(tmp_path: Path, workspace: Path) -> None:
    """The install README shows (no local model, no key) is keyword-only by design: doctor says OK and exits 0,
    and status does not promise vectors 'until the index is embedded'. Likewise with embedding.provider none."""
    env = _core_only(tmp_path)
    probe = _memdex("status", "--workspace", str(workspace), "--json", **env)
    assert probe.returncode == 0, probe.stderr
    doctor = _memdex("doctor", "--workspace", str(workspace), **env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.splitlines()[-1] == ("OK: keyword search ready (keyword-only: no local model installed and "
                                              "no API key; either one adds vector search)")
    rows = _rows(_memdex("status", "--workspace", str(workspace), **env).stdout)
    assert rows["embeddings"].startswith("auto, which finds no provider to try, so keyword-only search (local: ")
    assert rows["index vectors"] == "none: keyword-only search, as configured"
    rows = _rows(_memdex("status", "--workspace", str(workspace)).stdout)  # provider none
    assert rows["index vectors"] == "none: keyword-only search, as configured"
    none = _memdex("doctor", "--workspace", str(workspace))
    assert none.returncode == 0 and none.stdout.splitlines()[-1].startswith("OK: keyword search ready (keyword-only")


def test_doctor_says_why_a_provider_failed_once(tmp_path: Path, workspace: Path) -> None:
    """A local model that cannot be downloaded (offline) is a problem, told once, not three times."""
    env = {"MEMDEX_EMBEDDING__PROVIDER": "local", "MEMDEX_EMBEDDING__LOCAL__MODEL": "hf:memdex/absent-GGUF/absent.gguf",
           "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    doctor = _memdex("doctor", "--workspace", str(workspace), **env)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert doctor.stdout.splitlines()[-1] == "PROBLEMS: 1: no embedding provider loaded (the reason is under embeddings above)"
    assert (doctor.stdout + doctor.stderr).count("hf:memdex/absent-GGUF/absent.gguf") == 1, doctor.stdout + doctor.stderr
