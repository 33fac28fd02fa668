"""Who may talk to the HTTP transports: the bearer token, the Host/Origin guard, and no open memory.

* A host other than loopback needs ``auth_token`` (or ``server.insecure_no_auth``, which is logged loudly).
* The SDK's DNS-rebinding guard stays on for every host: a request's ``Host`` must be a loopback name,
  ``server.host`` or one of ``server.allowed_hosts``; a browser's ``Origin`` must be ``http(s)://`` one of
  those or one of ``server.allowed_origins``.
* With a token, every request must carry ``Authorization: Bearer <token>`` (the scheme in any letter
  case, the token compared in constant time) except ``/.well-known/*``, which answers 404: a 401 there
  would send OAuth-aware clients looking for an authorization server memdex does not have.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from memdex.memory_core import ConfigError, ServerSettings, Settings
from memdex.memory_core.limits import MIN_AUTH_TOKEN_CHARS

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings) -> None:
    """Refuse to serve a non-loopback host without a token, unless told to; warn when told to."""
    host = settings.server.host
    if settings.auth_token is not None or is_loopback(host):
        return
    if not settings.server.insecure_no_auth:
        raise ConfigError(
            f"serving on {host} makes this memory reachable from other machines, and no auth token is set: pass "
            "--auth-token (or set MEMDEX_AUTH_TOKEN), or --insecure-no-auth to serve it to anyone who can reach it"
        )
    logger.warning(
        "INSECURE: serving on %s with no auth token (--insecure-no-auth): anyone who can reach this port can "
        "read this memory%s", host, " and write to it" if settings.appends else "",
    )


def transport_security(server: ServerSettings) -> TransportSecuritySettings:
    """The SDK's Host/Origin guard, on whatever the bound host (the SDK turns it off beyond loopback)."""
    hosts: list[str] = []
    for name in dict.fromkeys(bracketed(h) for h in (*LOOPBACK_NAMES, server.host, *server.allowed_hosts)):
        hosts += [name] if _has_port(name) else [name, f"{name}:*"]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[*origins, *server.allowed_origins],
    )


def bracketed(host: str) -> str:
    """A host as a Host header spells it: an IPv6 address in brackets."""
    return f"[{host}]" if host.count(":") > 1 and not host.startswith("[") else host


def _has_port(host: str) -> bool:
    return ":" in host.rpartition("]")[2]


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if len(token) < MIN_AUTH_TOKEN_CHARS:  # settings refuse it first; never let an empty token match
            raise ConfigError(f"the auth token must be at least {MIN_AUTH_TOKEN_CHARS} characters")
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["path"].startswith("/.well-known/"):
            await _answer(send, 404, {"error": "not_found", "error_description": "memdex has no OAuth metadata"})
        elif self._authorized(dict(scope["headers"]).get(b"authorization", b"")):
            await self.app(scope, receive, send)
        else:
            await _answer(
                send,
                401,
                {"error": "unauthorized", "error_description": "missing or wrong bearer token"},
                (b"www-authenticate", b'Bearer realm="memdex"'),
            )

    def _authorized(self, header: bytes) -> bool:
        scheme, _, given = header.strip().partition(b" ")
        given = given.strip()
        return scheme.lower() == b"bearer" and bool(given) and hmac.compare_digest(given, self.token)


async def _answer(send: Send, status: int, body: dict[str, str], *headers: tuple[bytes, bytes]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
