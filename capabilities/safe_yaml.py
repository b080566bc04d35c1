"""Reading config documents safely: YAML or JSON text to plain data (US-10 import).

- YAML goes through ``capabilities.strict_yaml.read_yaml``, the one YAML reader of the
  product (skill-index.yaml and workflows use it too), so one policy holds everywhere: safe
  loading into plain data by the YAML 1.2 core schema, no anchors or aliases (a "billion
  laughs" document is refused before anything is built), no merge keys, no explicit tags
  but the core ones (``!!python/...`` and custom tags refused), no duplicate keys, one
  document.
- JSON goes through ``teamclaw.strict_json.loads``, the one bounded JSON parser of every
  entry point: no duplicate keys, no ``NaN`` / ``Infinity`` / ``1e400``.
- Both refuse text over the size limit (``TEAMCLAW_MAX_CONFIG_BYTES``, 2 MB by default),
  text that is not UTF-8, nesting deeper than ``MAX_DEPTH`` (64) levels, and a top level
  that is not a mapping.

Every refusal is a ``DocumentError`` whose ``errors`` name a location (``line 3`` for YAML,
``line 3, column 5`` for a JSON syntax error, ``document`` for the whole text).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from capabilities.strict_yaml import YamlError, read_yaml
from teamclaw.errors import DomainError
from teamclaw.strict_json import JsonRefused, loads


class DocumentError(DomainError, ValueError):
    """The text cannot be read as a config document (400); ``errors`` is ``{where: [reasons]}``."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        where, reasons = next(iter(errors.items()))
        self.first = f"{where}: {reasons[0]}"
        super().__init__(f"the document cannot be read: {self.first}", errors=errors)

    def __str__(self) -> str:
        return self.first


def max_config_bytes() -> int:
    """The size limit of an imported document (bytes)."""
    return int(settings.TEAMCLAW.get("MAX_CONFIG_BYTES", 2_000_000))


def _decode(raw: bytes | str) -> str:
    limit = max_config_bytes()
    size = len(raw.encode("utf-8")) if isinstance(raw, str) else len(raw)
    if size > limit:
        raise DocumentError({"document": [f"is {size:,} bytes; the limit is {limit:,} bytes"]})
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError({"document": [f"is not UTF-8 text (byte {exc.start})"]}) from None
    if "\x00" in text:
        raise DocumentError({"document": ["contains NUL characters; it looks binary"]})
    if not text.strip():
        raise DocumentError({"document": ["is empty"]})
    return text


def load_yaml(text: str) -> Any:
    """Parse YAML by the product's one YAML policy (``strict_yaml.read_yaml``; see module
    docstring). Raises DocumentError with each problem under ``line N`` (``document`` when
    it has no line), its message as the skill loader words it."""
    try:
        return read_yaml(text, max_bytes=max_config_bytes()).data
    except YamlError as exc:
        errors: dict[str, list[str]] = {}
        for problem in exc.problems:
            reason = f"{problem.path}: {problem.message}" if problem.path else problem.message
            errors.setdefault(f"line {problem.line}" if problem.line else "document", []).append(reason)
        raise DocumentError(errors) from None


def load_json(text: str) -> Any:
    """Parse JSON with the one bounded parser (``teamclaw.strict_json.loads``: no duplicate
    keys, no NaN/Infinity, at most ``max_config_bytes()`` and ``MAX_DEPTH`` levels). Raises
    DocumentError under ``line L, column C`` for a syntax error, else ``document``."""
    try:
        return loads(text, max_bytes=max_config_bytes())
    except JsonRefused as exc:
        raise DocumentError({exc.where or "document": [exc.message]}) from None


def guess_format(text: str, content_type: str = "") -> str:
    """``json`` or ``yaml`` from the content type, else from the first character."""
    content_type = content_type.split(";")[0].strip().lower()
    if content_type == "application/json":
        return "json"
    if content_type in {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}:
        return "yaml"
    return "json" if text.lstrip().startswith(("{", "[")) else "yaml"


def load_document(raw: bytes | str, fmt: str = "") -> dict[str, Any]:
    """Read a config document from ``raw`` (``fmt`` ``yaml``/``json``, or guessed).

    Returns the top-level mapping. Raises DocumentError naming where and why.
    """
    text = _decode(raw)
    fmt = fmt or guess_format(text)
    if fmt not in {"yaml", "json"}:
        raise DocumentError({"format": ["must be yaml or json"]})
    data = load_json(text) if fmt == "json" else load_yaml(text)
    if not isinstance(data, dict):
        raise DocumentError({"document": ["the top level must be a mapping (format, roles, capabilities, ...)"]})
    return data
