"""Java ``.properties`` files (``hoodie.properties``): the subset of the format Hudi writes
plus what ``java.util.Properties`` accepts (comments, ``=``/``:``/space separators, escapes,
``\\uXXXX``, line continuations)."""

from __future__ import annotations

from collections.abc import Mapping

from morlog.logformat.errors import ContentError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, path: str | None) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            code = text[i + 2 : i + 6]
            try:
                out.append(chr(int(code, 16)))
            except ValueError:
                raise ContentError(f"bad \\u escape {code!r}", path=path) from None
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            key = line[:i]
            rest = line[i:].lstrip(" \t\f")
            if rest[:1] in ("=", ":") and c in " \t\f":
                rest = rest[1:].lstrip(" \t\f")
            elif c in "=:":
                rest = line[i + 1 :].lstrip(" \t\f")
            return key, rest
        i += 1
    return line, ""


def parse_properties(text: str, path: str | None = None) -> dict[str, str]:
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # a line ending in an odd number of backslashes continues on the next one
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        key, value = _split(line)
        props[_unescape(key, path)] = _unescape(value, path)
    return props


def format_properties(props: Mapping[str, str]) -> str:
    """Properties in the form Java writes them (``:`` and ``=`` escaped in values too)."""

    def esc(s: str, is_key: bool) -> str:
        out = []
        for ch in s:
            if ch in "\\=:#!" or (is_key and ch == " "):
                out.append("\\" + ch)
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\t":
                out.append("\\t")
            elif ord(ch) > 0x7E or ord(ch) < 0x20:
                out.append(f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return "".join(out)

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in props.items())
