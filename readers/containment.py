"""Containment: a path built from data or table files (a partition from commit metadata, a
file name from a listing) must name something under the table root before it is read,
written or deleted.

Plain string work on ``/``-separated paths: local paths (absolute or relative), store paths
(``bucket/table``) and URIs (``s3://bucket/table?endpoint_override=...``: the query stays on
the result). Optionally, for local paths, symbolic links are resolved too.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse

from morlog.logformat.errors import UsageError
from morlog.logformat.partition_path import UnsafePathError


def _split_root(root: str) -> tuple[str, str, str]:
    """(prefix ``scheme://netloc`` or "", path, suffix ``?query#fragment`` or "")."""
    if "://" in root:
        parts = urllib.parse.urlsplit(root)
        prefix = f"{parts.scheme}://{parts.netloc}"
        suffix = (f"?{parts.query}" if parts.query else "") + (
            f"#{parts.fragment}" if parts.fragment else "")
        return prefix, parts.path, suffix
    return "", root, ""


def _normalise(path: str) -> str:
    n = posixpath.normpath(path) if path else "."
    # POSIX keeps a leading "//"; for containment it is the same as "/"
    return "/" + n.lstrip("/") if n.startswith("//") else n


def resolve_under(root: str, relative: str, *, follow_symlinks: bool = False) -> str:
    """``root`` joined with ``relative``, normalised; :class:`UnsafePathError` unless the
    result is ``root`` itself or lies under it.

    ``relative`` must be relative: an absolute path, a URI, a backslash, a NUL or other
    control character is refused even when it happens to point under ``root``.
    ``follow_symlinks`` (local paths only): also resolve symbolic links on both sides."""
    if not isinstance(relative, str):
        raise UnsafePathError("a relative path is a string", actual=type(relative).__name__)
    if relative.startswith("/") or "://" in relative:
        raise UnsafePathError("absolute path where a relative one is expected",
                              actual=relative)
    if "\\" in relative:
        raise UnsafePathError("backslash in a relative path", actual=relative)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in relative):
        raise UnsafePathError("control character in a relative path", actual=relative)
    if not root:
        raise UsageError("empty table root")
    prefix, root_path, suffix = _split_root(root)
    base = _normalise(root_path)
    rel = _normalise(relative)
    if rel == ".." or rel.startswith("../"):
        raise UnsafePathError("path leaves the table", path=root, actual=relative)
    joined = base if rel == "." else _normalise(posixpath.join(base, rel))
    if not is_under(base, joined):
        raise UnsafePathError("path leaves the table", path=root, actual=relative)
    if follow_symlinks and not prefix:
        real_base = os.path.realpath(base)
        real = os.path.realpath(joined)
        if not (real == real_base or real.startswith(real_base.rstrip("/") + "/")):
            raise UnsafePathError("path leaves the table through a symbolic link", path=root,
                                  actual=relative)
    return f"{prefix}{joined}{suffix}"


def is_under(root: str, path: str) -> bool:
    """Whether normalised ``path`` is ``root`` or below it (both in the same form)."""
    r = _normalise(root)
    p = _normalise(path)
    if r == ".":
        return not (p == ".." or p.startswith("../") or p.startswith("/"))
    if r == "/":
        return p.startswith("/")
    return p == r or p.startswith(r + "/")


def check_file_name(name: str) -> str:
    """``name`` if it is a single plain file name (no separator, not ``.``/``..``, no
    control character); names listed by a store or read from metadata go through this
    before they are joined to a directory."""
    if (not name or name in (".", "..") or "/" in name or "\\" in name
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name)):
        raise UnsafePathError("not a plain file name", actual=name)
    return name


__all__ = ["UnsafePathError", "check_file_name", "is_under", "resolve_under"]
