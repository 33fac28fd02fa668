"""Settings come from CLI flags > MEMDEX_* environment > TOML file > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdex.memory_core import ConfigError, load_settings
from memdex.server.cli import _parser, _settings


@pytest.fixture
def toml_file(tmp_path: Path) -> Path:
    path = tmp_path / "memdex.toml"
    path.write_text(
        'timezone = "Asia/Tokyo"\nread_only = true\n[query]\nmax_results = 9\nmin_score = 0.5\n'
        '[server]\nport = 9001\ntransport = "http"\n',
        encoding="utf-8",
    )
    return path


def test_defaults_apply_without_other_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With no file, env or flags, the documented defaults hold."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    settings = load_settings()
    assert (settings.query.max_results, settings.query.min_score) == (8, 0.35)
    assert (settings.chunking.tokens, settings.chunking.overlap) == (400, 80)
    assert (settings.server.transport, settings.server.host, settings.server.port) == ("stdio", "127.0.0.1", 8765)


def test_toml_overrides_defaults(toml_file: Path) -> None:
    settings = load_settings(toml_file)
    assert settings.query.max_results == 9 and settings.server.port == 9001 and settings.timezone == "Asia/Tokyo"
    assert settings.chunking.tokens == 400  # untouched keys keep their defaults


def test_env_overrides_toml_including_nested_keys(toml_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEX_QUERY__MAX_RESULTS", "12")
    monkeypatch.setenv("MEMDEX_AUTH_TOKEN", "from-env-0123456789")
    settings = load_settings(toml_file)
    assert settings.query.max_results == 12
    assert settings.query.min_score == 0.5  # sibling key still from the file
    assert settings.auth_token is not None and settings.auth_token.get_secret_value() == "from-env-0123456789"


def test_cli_flags_override_env_and_toml(toml_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMDEX_SERVER__PORT", "9002")
    monkeypatch.setenv("MEMDEX_AUTH_TOKEN", "from-env-0123456789")
    args = _parser().parse_args(
        ["serve", "--config", str(toml_file), "--port", "9003", "--auth-token", "from-cli-0123456789", "--workspace", str(tmp_path)]
    )
    settings = _settings(args)
    assert settings.server.port == 9003
    assert settings.auth_token.get_secret_value() == "from-cli-0123456789"
    assert settings.server.transport == "http"  # not given on the command line: the file's value
    assert settings.workspace == tmp_path


def test_unset_cli_flags_do_not_hide_lower_sources(toml_file: Path) -> None:
    """A flag left out (None) must not override the file's value."""
    settings = _settings(_parser().parse_args(["serve", "--config", str(toml_file)]))
    assert settings.read_only is True and settings.server.port == 9001


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[query]\nmax_result = 3\n", "max_result"),
        ("[query]\nmax_results = 99\n", "max_results"),
        ('timezone = "Mars/Base"\n', "unknown timezone"),
        ("[chunking]\ntokens = 100\noverlap = 100\n", "overlap"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, content: str, fragment: str) -> None:
    """Typos and out-of-range values stop startup with the key named."""
    path = tmp_path / "bad.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=fragment):
        load_settings(path)


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("token", "says"),
    [("", "set but empty"), ("fifteen-chars15", "is 15 characters"), ("sixteen chars 16", "printable ASCII"), ("tökenü-0123456789", "ASCII")],
)
def test_a_set_token_must_be_a_real_one(token: str, says: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Flag, environment and config file all go through one check: empty, short or unsendable tokens are refused."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    config = tmp_path / "memdex.toml"
    config.write_text(f"auth_token = {token!r}\n".replace("'", '"'), encoding="utf-8")
    refused = pytest.raises(ConfigError, match=f"auth_token: Value error, .*{says}")
    with refused:
        load_settings(auth_token=token)
    with refused:
        load_settings(config)
    monkeypatch.setenv("MEMDEX_AUTH_TOKEN", token)
    with refused:
        load_settings()
    assert load_settings(auth_token="x" * 16).auth_token is not None
