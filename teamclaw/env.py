"""Environment readers for settings that refuse bad values at start-up.

Each helper reads one variable, applies a safe default when it is unset, and raises
``django.core.exceptions.ImproperlyConfigured`` naming the variable and the reason when
the value cannot be used, so a typo stops the server instead of running it wrongly.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """Return ``$name`` stripped, or ``default`` when unset."""
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    """Return ``$name`` as a boolean (1/true/yes/on or 0/false/no/off).

    Raises ImproperlyConfigured for any other value.
    """
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``$name`` as an integer within ``[minimum, maximum]``.

    Raises ImproperlyConfigured when it is not an integer or out of bounds.
    """
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Return ``$name`` split on commas (blank items dropped), or ``default`` when unset."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")
"""A project slug as ``capabilities.Project.slug`` takes it (Django's SlugField, 64 at most)."""


def env_slug_list(name: str, default: list[str], *, wildcard: str = "*") -> list[str]:
    """``env_list`` of project slugs or ``wildcard``. Raises ImproperlyConfigured naming
    ``$name`` and the item for anything else (a typo would otherwise match no project, and
    the option would silently do nothing)."""
    items = env_list(name, default)
    for item in items:
        if item != wildcard and not SLUG.match(item):
            raise ImproperlyConfigured(
                f"{name}: {item[:80]!r} is not a project slug (letters, digits, '-' or '_', "
                f"at most 64) nor {wildcard!r} for every project"
            )
    return items


def env_url(name: str, schemes: set[str], *, credentials: bool = True, hint: str = "") -> str:
    """Return ``$name`` when it is a URL with one of ``schemes``, '' when unset.

    Raises ImproperlyConfigured for another scheme, a URL without a host/path, or (with
    ``credentials=False``) a user or password in the URL. Messages never repeat the URL,
    which may hold a password.
    """
    raw = env_str(name)
    if not raw:
        return ""
    parsed = urlparse(raw)
    if parsed.scheme not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise ImproperlyConfigured(f"{name} must start with one of {allowed}; got {parsed.scheme or 'no scheme'!r}")
    if not (parsed.netloc or parsed.path):
        raise ImproperlyConfigured(f"{name} names no server or database")
    if not credentials and (parsed.username or parsed.password):
        raise ImproperlyConfigured(f"{name} must not carry a user or password{'; ' + hint if hint else ''}")
    return raw


def redis_channel_layer(url: str, **config: Any) -> dict[str, Any]:
    """The channels-redis layer on ``url`` (``CHANNEL_LAYERS["default"]``), with ``config``
    added (a test's ``prefix``). Its connections wait on reads without a client timeout:
    the layer's receive is a blocking pop of up to 5 s on the server, and redis-py 8 gives
    every socket a 5 s read timeout by default, which otherwise ended each idle live socket
    with 1011 after about 5 s (django/channels_redis#422)."""
    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": url, "socket_timeout": None}], "capacity": 1000, "expiry": 30, **config},
    }


def data_dir(base_dir: Path) -> Path:
    """Return the git-ignored data folder (``$TEAMCLAW_DATA_DIR`` or ``<base>/data``), created 0700."""
    path = Path(env_str("TEAMCLAW_DATA_DIR") or base_dir / "data").resolve()
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ImproperlyConfigured(f"cannot create the data folder {path}: {exc}") from exc
    return path


def persistent_secret(path: Path, nbytes: int = 50) -> str:
    """Return the secret kept in ``path``, generating it (mode 600) on first use.

    Processes that start at once (a server and a worker, the test run's parallel workers) all
    get the one secret: the new value is written to a file of its own and linked in under
    ``path`` only if no other process did so first, whose value is then returned instead (an
    ``O_TRUNC`` write let the last starter replace a secret an earlier one already used). An
    empty file at ``path`` is replaced."""
    if path.exists():
        value = path.read_text().strip()
        if value:
            return value
    value = secrets.token_urlsafe(nbytes)
    fd, written = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(value + "\n")
        try:
            os.link(written, path)
        except FileExistsError:
            first = path.read_text().strip()
            if first:
                return first
            os.replace(written, path)
    finally:
        Path(written).unlink(missing_ok=True)
    return value


def env_choice(name: str, choices: set[str], default: str) -> str:
    """Return ``$name`` when it is one of ``choices``, ``default`` when unset.

    Raises ImproperlyConfigured naming the allowed values.
    """
    value = env_str(name)
    if not value:
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(sorted(choices))}")
    return value


def env_model_endpoints(name: str = "TEAMCLAW_MODEL_ENDPOINTS") -> dict[str, dict[str, Any]]:
    """Extra chat-completions endpoints: ``$name`` = ``local=http://127.0.0.1:8080/v1,...``.

    Each endpoint's key comes from ``TEAMCLAW_MODEL_ENDPOINT_<NAME>_API_KEY`` (optional), so
    roles and projects pick an endpoint by name and no key is ever stored in the database;
    ``TEAMCLAW_MODEL_ENDPOINT_<NAME>_STRUCTURED_OUTPUT`` (on unless set off) says whether its
    answers are asked for through ``response_format``.
    Returns ``{name: {"base_url", "api_key", "structured_output"}}``; raises
    ImproperlyConfigured for a malformed item, a bad name (lowercase letters, digits, '_'),
    a duplicate or a non-http(s) URL.
    """
    endpoints: dict[str, dict[str, Any]] = {}
    for item in env_list(name, []):
        label, sep, url = item.partition("=")
        label, url = label.strip(), url.strip()
        if not sep or not re.match(r"^[a-z][a-z0-9_]{0,39}$", label) or label == "default":
            raise ImproperlyConfigured(f"{name}: {item!r} must be name=url with a lowercase name other than 'default'")
        if label in endpoints:
            raise ImproperlyConfigured(f"{name}: endpoint {label!r} is listed twice")
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ImproperlyConfigured(f"{name}: the URL of {label!r} must start with http:// or https://")
        prefix = f"TEAMCLAW_MODEL_ENDPOINT_{label.upper()}"
        endpoints[label] = {
            "base_url": url,
            "api_key": env_str(f"{prefix}_API_KEY"),
            "structured_output": env_bool(f"{prefix}_STRUCTURED_OUTPUT", True),
        }
    return endpoints


def env_time_zone(name: str, default: str) -> str:
    """Return ``$name`` when it is an IANA time zone name (``Asia/Shanghai``), ``default`` when unset.

    Raises ImproperlyConfigured for a name ``zoneinfo`` does not know.
    """
    value = env_str(name)
    if not value:
        return default
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(f"{name}={value!r} is not a known IANA time zone name") from None
    return value
