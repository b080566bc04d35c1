"""The ``http`` executor for plugin capabilities registered through the API (PRD §3 US-12,
architecture §8): POST the params as JSON to the card's ``executor_config.url``.

A registration must not make the server call arbitrary addresses (SSRF), so:

- the URL's host must be listed in ``TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS`` (exact host name
  or IP literal, optionally ``:port``; the default is an empty list, which allows nothing);
  URLs with user info, or schemes other than http/https, are refused;
- the host is resolved and every address checked: link-local (cloud metadata such as
  169.254.169.254), multicast, unspecified and reserved addresses are always refused;
  loopback and private addresses only when the allowed entry is that IP literal (or the
  name ``localhost``), so a DNS name that resolves to an internal address is refused;
- plain-http requests go to the address that was checked (the ``Host`` header carries the
  name), so DNS cannot change between the check and the connection; https relies on
  certificate verification for the same guarantee;
- redirects are followed only to the same scheme, host and port with 307/308 (which keep
  the POST), at most 3 times; any other redirect is an error naming the target host;
- environment proxies are ignored; the request times out at the invoke's deadline; the
  response is read up to ``MAX_RESPONSE_BYTES`` and must be a JSON object (the runtime then
  validates it against the card's ``output_schema``).

Failures: 5xx, 408, 429 and connection errors are ``unavailable`` and read timeouts
``timeout``; everything else is ``executor_error``. The runtime's invoke retries (PRD §4.7)
only repeat what is safe to repeat: a failure before the request was sent (the host cannot be
resolved, the connection is refused or cannot be opened in time), a 408 or 429 (the plugin
says it did not take the request), and, for a card that declares itself ``idempotent``,
anything else. A 500, a dropped connection or a read timeout of a card that is not
idempotent (the default for plugins) may mean the work was done, so it is not repeated.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx2

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.progress import CALLING_PLUGIN
from teamclaw.strict_json import JsonRefused, loads

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall

MAX_RESPONSE_BYTES = 5_000_000
"""Largest plugin response read (bytes)."""
MAX_REDIRECTS = 3
USER_AGENT = "TeamClaw-http-executor/1"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``(host, port) -> [address]``: DNS resolution (replaceable in tests)."""


@dataclass(frozen=True, slots=True)
class AllowedHost:
    """One entry of the allowed-hosts setting: a lower-case host name or IP literal, and a
    port (None = any port)."""

    host: str
    port: int | None = None

    @property
    def is_literal(self) -> bool:
        return _ip(self.host) is not None


def _ip(host: str) -> IPAddress | None:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _normal_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    address = _ip(host)
    return str(address) if address is not None else host


def parse_allowed_hosts(entries: Iterable[str]) -> list[AllowedHost]:
    """Parse ``host``, ``host:port``, ``1.2.3.4:80``, ``[::1]:8080`` entries.

    Raises ValueError naming a malformed entry.
    """
    allowed = []
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        if "/" in entry or "@" in entry or "*" in entry:
            raise ValueError(f"{raw!r} is not a host name or address (no scheme, path or wildcard)")
        try:
            parts = urlsplit(f"//{entry}")
            host, port = parts.hostname, parts.port
        except ValueError:
            raise ValueError(f"{raw!r} is not a host or host:port") from None
        if not host:
            raise ValueError(f"{raw!r} names no host")
        allowed.append(AllowedHost(_normal_host(host), port))
    return allowed


def check_plugin_url(url: Any, allowed: Iterable[AllowedHost]) -> list[str]:
    """Static problems with a plugin URL (no DNS): scheme, user info, host not allowed.

    Returns human-readable reasons (empty when the URL may be registered); for the
    registration API's ``executor_config.url`` field errors.
    """
    if not isinstance(url, str) or not url.strip():
        return ["a URL is required"]
    try:
        parts = urlsplit(url.strip())
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        return [f"is not a valid URL ({exc})"]
    problems = []
    if parts.scheme not in ("http", "https"):
        problems.append("must start with http:// or https://")
    if parts.username is not None or parts.password is not None:
        problems.append("must not contain a user name or password")
    if not host:
        problems.append("names no host")
    elif _match(host, port or (443 if parts.scheme == "https" else 80), allowed) is None:
        listed = [a.host + (f":{a.port}" if a.port else "") for a in allowed]
        problems.append(
            f"host {host!r} is not in TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS ({', '.join(listed) or 'empty'})"
        )
    return problems


def _match(host: str, port: int, allowed: Iterable[AllowedHost]) -> AllowedHost | None:
    name = _normal_host(host)
    for entry in allowed:
        if entry.host == name and (entry.port is None or entry.port == port):
            return entry
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the system resolver (getaddrinfo, in the loop's thread pool)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def address_problem(address: IPAddress, entry: AllowedHost) -> str | None:
    """Why ``address`` may not be called for the allowed ``entry`` (None = it may)."""
    if address.is_link_local or address.is_multicast or address.is_unspecified or address.is_reserved:
        return f"{address} is a link-local, multicast, unspecified or reserved address"
    if address.is_global:
        return None
    if entry.is_literal and _ip(entry.host) == address:
        return None
    if entry.host == "localhost" and address.is_loopback:
        return None
    return (
        f"{entry.host} resolves to {address}, an internal address; list the address itself in "
        "TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS to allow it"
    )


@dataclass(frozen=True, slots=True)
class PluginTarget:
    """A checked request target: the URL to send, the ``Host`` header and the checked address."""

    url: str
    host_header: str
    address: str


class HttpExecutor:
    """``http`` (docs/architecture.md §8): plugin capabilities behind an allowed URL (module docstring)."""

    kind = "http"

    def __init__(self, allowed_hosts: Iterable[str], *, resolver: Resolver | None = None) -> None:
        self.allowed = parse_allowed_hosts(allowed_hosts)
        self.resolver = resolver or system_resolver

    def _refuse(self, message: str, url: str, **details: Any) -> AgentFailure:
        return AgentFailure(ErrorCode.EXECUTOR_ERROR, message, {"url": _public(url), **details}, retryable=False)

    async def target(self, url: str) -> PluginTarget:
        """Check ``url`` (allowed host, resolved addresses) and pin plain http to the
        checked address. Raises AgentFailure(executor_error) naming the reason."""
        problems = check_plugin_url(url, self.allowed)
        if problems:
            raise self._refuse(f"plugin URL refused: {problems[0]}", url if isinstance(url, str) else "")
        parts = urlsplit(url)
        assert parts.hostname is not None
        port = parts.port or (443 if parts.scheme == "https" else 80)
        entry = _match(parts.hostname, port, self.allowed)
        assert entry is not None
        literal = _ip(parts.hostname)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = [a for a in (_ip(r) for r in await self.resolver(parts.hostname, port)) if a is not None]
            except OSError as exc:
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"cannot resolve plugin host {parts.hostname}: {exc}",
                    {"url": _public(url)},
                ) from None
            if not addresses:
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE, f"plugin host {parts.hostname} has no address", {"url": _public(url)}
                )
        for address in addresses:
            problem = address_problem(address, entry)
            if problem:
                raise self._refuse(f"plugin URL refused: {problem}", url, address=str(address))
        chosen = str(addresses[0])
        host_header = parts.netloc
        netloc = parts.netloc
        if parts.scheme == "http" and literal is None:
            netloc = (f"[{chosen}]" if ":" in chosen else chosen) + (f":{parts.port}" if parts.port else "")
        # The request URL is rebuilt from the parts that were checked, so the HTTP client can
        # never read a different host out of the original string (parser differentials).
        return PluginTarget(urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")), host_header, chosen)

    async def execute(self, call: ExecutionCall) -> dict[str, Any]:
        """POST ``call.params`` to the card's URL and return the JSON object it answers."""
        url = (call.card.executor_config or {}).get("url")
        if not isinstance(url, str) or not url:
            raise self._refuse(f"capability {call.card.capability_id} has no executor_config.url", "")
        clock = call.clock
        deadline = call.deadline(call.card.timeout_s)
        repeatable = call.card.is_idempotent  # may a failure after sending be retried?
        headers = {
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            "X-TeamClaw-Capability": call.card.capability_id,
            "X-TeamClaw-Role": call.role,
            "X-TeamClaw-Task": call.task.task_id,
        }
        call.progress(10, CALLING_PLUGIN % {"url": _public(url)})
        async with httpx2.AsyncClient(follow_redirects=False, trust_env=False) as client:
            for _hop in range(MAX_REDIRECTS + 1):
                target = await self.target(url)
                timeout = max(0.1, deadline - clock.now())
                try:
                    async with client.stream(
                        "POST",
                        target.url,
                        json=call.params,
                        headers={**headers, "Host": target.host_header},
                        timeout=timeout,
                    ) as response:
                        if response.is_redirect:
                            url = self._follow(url, response)
                            continue
                        body = await _read_capped(response)
                        status = response.status_code
                except httpx2.TimeoutException as exc:
                    unsent = isinstance(exc, httpx2.ConnectTimeout | httpx2.PoolTimeout)
                    raise AgentFailure(
                        ErrorCode.TIMEOUT,
                        f"the plugin at {_public(url)} did not answer in time",
                        {"url": _public(url), "sent": not unsent},
                        retryable=unsent or repeatable,
                    ) from None
                except httpx2.TransportError as exc:
                    unsent = isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.UnsupportedProtocol)
                    raise AgentFailure(
                        ErrorCode.UNAVAILABLE,
                        f"cannot reach the plugin at {_public(url)}: {type(exc).__name__}",
                        {"url": _public(url), "sent": not unsent},
                        retryable=unsent or repeatable,
                    ) from None
                return self._result(url, status, body, repeatable)
        raise self._refuse(f"the plugin redirected more than {MAX_REDIRECTS} times", url)

    def _follow(self, url: str, response: httpx2.Response) -> str:
        location = response.headers.get("location", "")
        target = urljoin(url, location)
        here, there = urlsplit(url), urlsplit(target)
        same_origin = (here.scheme, here.hostname, here.port) == (there.scheme, there.hostname, there.port)
        if not same_origin:
            raise self._refuse(
                f"the plugin redirected to another host ({there.hostname or location[:100]}); not followed",
                url,
                location=_public(target),
            )
        if response.status_code not in (307, 308):
            raise self._refuse(
                f"the plugin answered {response.status_code} (a redirect that would drop the POST); not followed",
                url,
                location=_public(target),
            )
        return target

    def _result(self, url: str, status: int, body: bytes, repeatable: bool) -> dict[str, Any]:
        text = body.decode("utf-8", errors="replace")
        if status >= 500 or status in (408, 429):
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"the plugin at {_public(url)} answered {status}: {text[:200]}",
                {"url": _public(url), "status": status},
                retryable=repeatable or status in (408, 429),  # those two say the request was not taken
            )
        if status >= 300:
            raise self._refuse(f"the plugin at {_public(url)} answered {status}: {text[:300]}", url, status=status)
        try:
            data = loads(text, max_bytes=MAX_RESPONSE_BYTES, strict=False)
        except JsonRefused as exc:
            raise self._refuse(
                f"the plugin at {_public(url)} answered something that is not JSON ({exc})", url
            ) from None
        if not isinstance(data, dict):
            raise self._refuse(
                f"the plugin at {_public(url)} answered a JSON {type(data).__name__}, not an object", url
            )
        return data


async def _read_capped(response: httpx2.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_RESPONSE_BYTES:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"the plugin's response exceeded {MAX_RESPONSE_BYTES:,} bytes",
                {"limit_bytes": MAX_RESPONSE_BYTES},
                retryable=False,
            )
    return bytes(body)


def _public(url: str) -> str:
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
    except ValueError:
        return "(invalid URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
