"""The translation catalogs in pure Python: read a gettext ``.po`` file, write its ``.mo``.

The compiled ``locale/<lang>/LC_MESSAGES/*.mo`` files are committed, so ``make run`` and
``make test`` need no GNU gettext on a clean machine; ``manage.py compile_catalogs`` writes
them again from the ``.po`` files without ``msgfmt`` and ``tests/web/test_translations.py``
fails when a committed ``.mo`` says something other than its ``.po`` (docs/architecture.md
"Translations").

Only what ``makemessages`` writes is read: ``msgctxt``, ``msgid``, ``msgid_plural``,
``msgstr`` / ``msgstr[n]``, continued string lines, ``#,`` flag comments. Fuzzy entries
are left out of the ``.mo``, as ``msgfmt`` does.
"""

from __future__ import annotations

import ast
import struct
from dataclasses import dataclass, field
from pathlib import Path


class CatalogError(ValueError):
    """A ``.po`` file that cannot be read: the message names the file and line."""


@dataclass
class CatalogEntry:
    """One message of a ``.po`` file.

    ``msgid`` is the English text ("" for the header), ``plural`` the plural English text
    or None, ``strings`` the translations (one, or one per plural form), ``context`` the
    ``msgctxt`` or None, ``flags`` the ``#,`` flags (``fuzzy``, ``python-format``...).
    """

    msgid: str = ""
    plural: str | None = None
    strings: list[str] = field(default_factory=list)
    context: str | None = None
    flags: set[str] = field(default_factory=set)

    @property
    def fuzzy(self) -> bool:
        """True when a translator marked the entry as unchecked (``#, fuzzy``)."""
        return "fuzzy" in self.flags

    @property
    def translated(self) -> bool:
        """True when every translation string is non-empty."""
        return bool(self.strings) and all(self.strings)

    def key(self) -> str:
        """The entry's key in a ``.mo`` file: ``context\\x04msgid[\\x00plural]``."""
        key = self.msgid if self.plural is None else f"{self.msgid}\x00{self.plural}"
        return key if self.context is None else f"{self.context}\x04{key}"


def read_po(path: Path) -> list[CatalogEntry]:
    """The entries of the ``.po`` file at ``path`` (UTF-8), header first.

    Raises CatalogError for a line that is not a comment, keyword or string.
    """
    entries: list[CatalogEntry] = []
    entry: CatalogEntry | None = None
    target: tuple[str, int] = ("", 0)
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or (line.startswith("#") and not line.startswith("#,")):
            continue
        keyword, text = _split(line, f"{path}:{number}")
        starts_entry = keyword in ("#,", "msgctxt") or (keyword == "msgid" and target[0] != "msgctxt")
        if entry is None or (starts_entry and target[0] not in ("", "#,")):
            entry = CatalogEntry()
            entries.append(entry)
        if keyword == "#,":
            entry.flags.update(flag.strip() for flag in text.split(","))
        elif keyword == "":
            if target[0] in ("", "#,"):
                raise CatalogError(f"{path}:{number}: a continued string without a keyword")
            _append(entry, target, text)
            continue
        else:
            _start(entry, keyword, text, f"{path}:{number}")
        target = (keyword, 0) if not keyword.startswith("msgstr[") else ("msgstr", int(keyword[7:-1]))
        if keyword == "msgstr":
            target = ("msgstr", 0)
    return entries


def _split(line: str, where: str) -> tuple[str, str]:
    """``(keyword, text)`` of one line: ``("#,", flags)``, ``("", string)`` for a continued
    string, else the keyword and its decoded string."""
    if line.startswith("#,"):
        return "#,", line[2:]
    keyword, _, rest = line.partition(" ")
    if keyword.startswith('"'):
        keyword, rest = "", line
    try:
        text = ast.literal_eval(rest) if rest.startswith('"') else None
    except (SyntaxError, ValueError):
        text = None
    if not isinstance(text, str):
        raise CatalogError(f"{where}: not a quoted string: {line!r}")
    return keyword, text


def _start(entry: CatalogEntry, keyword: str, text: str, where: str) -> None:
    if keyword == "msgctxt":
        entry.context = text
    elif keyword == "msgid":
        entry.msgid = text
    elif keyword == "msgid_plural":
        entry.plural = text
    elif keyword == "msgstr":
        entry.strings = [text]
    elif keyword.startswith("msgstr[") and keyword.endswith("]") and keyword[7:-1].isdigit():
        index = int(keyword[7:-1])
        entry.strings.extend([""] * (index + 1 - len(entry.strings)))
        entry.strings[index] = text
    else:
        raise CatalogError(f"{where}: unknown keyword {keyword!r}")


def _append(entry: CatalogEntry, target: tuple[str, int], text: str) -> None:
    name, index = target
    if name == "msgctxt":
        entry.context = (entry.context or "") + text
    elif name == "msgid":
        entry.msgid += text
    elif name == "msgid_plural":
        entry.plural = (entry.plural or "") + text
    else:
        entry.strings[index] += text


def compiled_messages(entries: list[CatalogEntry]) -> dict[str, str]:
    """``{key: translation}`` as a ``.mo`` holds them: translated, non-fuzzy entries (the
    header always), plural forms joined by NUL."""
    messages: dict[str, str] = {}
    for entry in entries:
        if entry.msgid and (entry.fuzzy or not entry.translated):
            continue
        messages[entry.key()] = "\x00".join(entry.strings)
    return messages


def mo_bytes(messages: dict[str, str]) -> bytes:
    """The GNU ``.mo`` file (little-endian, revision 0, no hash table) of ``messages``,
    keys sorted as ``msgfmt`` sorts them, UTF-8."""
    keys = sorted(messages)
    ids = [key.encode("utf-8") for key in keys]
    strs = [messages[key].encode("utf-8") for key in keys]
    header_size = 7 * 4
    table_size = len(keys) * 8
    ids_start = header_size + 2 * table_size
    offsets_ids: list[tuple[int, int]] = []
    offsets_strs: list[tuple[int, int]] = []
    blob = b""
    for data in ids:
        offsets_ids.append((len(data), ids_start + len(blob)))
        blob += data + b"\x00"
    for data in strs:
        offsets_strs.append((len(data), ids_start + len(blob)))
        blob += data + b"\x00"
    output = struct.pack("<7I", 0x950412DE, 0, len(keys), header_size, header_size + table_size, 0, ids_start)
    for length, offset in offsets_ids:
        output += struct.pack("<2I", length, offset)
    for length, offset in offsets_strs:
        output += struct.pack("<2I", length, offset)
    return output + blob


def read_mo(path: Path) -> dict[str, str]:
    """``{key: translation}`` of the GNU ``.mo`` file at ``path`` (either byte order), keyed
    as ``compiled_messages``. Raises CatalogError for a file that is not a ``.mo``."""
    data = path.read_bytes()
    magic = data[:4]
    order = "<" if magic == b"\xde\x12\x04\x95" else ">" if magic == b"\x95\x04\x12\xde" else ""
    if not order:
        raise CatalogError(f"{path}: not a .mo file")
    _, count, ids_at, strs_at = struct.unpack(order + "4I", data[4:20])
    messages = {}
    for index in range(count):
        id_length, id_offset = struct.unpack(order + "2I", data[ids_at + 8 * index : ids_at + 8 * index + 8])
        str_length, str_offset = struct.unpack(order + "2I", data[strs_at + 8 * index : strs_at + 8 * index + 8])
        key = data[id_offset : id_offset + id_length].decode("utf-8")
        messages[key] = data[str_offset : str_offset + str_length].decode("utf-8")
    return messages


def compile_catalog(po_path: Path) -> Path:
    """Write the ``.mo`` beside ``po_path`` from it; returns the ``.mo``'s path.

    Raises CatalogError when the ``.po`` cannot be read.
    """
    mo_path = po_path.with_suffix(".mo")
    mo_path.write_bytes(mo_bytes(compiled_messages(read_po(po_path))))
    return mo_path
