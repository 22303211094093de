"""Partition paths: Hudi's URL-encoding of partition values, Hive-style joining, and the
check that a relative partition path stays inside its table.

Pure string functions (no file I/O). Facts, in our own words, from Apache Hudi's
``hudi-common/src/main/java/org/apache/hudi/common/util/PartitionPathEncodeUtils.java``
(itself taken from Hive's ``FileUtils``):

- With ``hoodie.datasource.write.partitionpath.urlencode=true`` every character of a
  partition value that is an ASCII control character (U+0000..U+001F), DEL (U+007F) or one of
  ``" # % ' * / : = ? \\ { [ ] ^`` is written as ``%`` and two upper-case hex digits. Every
  other character (``.``, ``-``, ``_``, space, non-ASCII) is kept as it is.
- An empty or null value becomes ``__HIVE_DEFAULT_PARTITION__`` (Hudi before 0.12 wrote
  ``default``).
- Decoding turns ``%`` followed by two hexadecimal digits back into that character; any
  other ``%`` stays. (Java parses the two characters with ``Integer.parseInt(_, 16)``, which
  also accepts a sign such as ``%+F``; we decode hex digits only, so the two agree on every
  value Hudi's encoder produces.)
- URL-encoding does not escape ``.``, so ``..`` is not neutralised by it: Hudi refuses a
  ``..`` segment whatever the option says (``validateNoPathTraversal``). morlog refuses more
  (see :func:`check_relative_partition_path`).

Hive-style partitioning (``hoodie.datasource.write.hive_style_partitioning=true``) writes
each field as ``field=value``; several partition fields are joined with ``/``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .errors import UnsafePathError, UsageError

#: Hudi's marker for a null or empty partition value (and the pre-0.12 one)
DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"
DEPRECATED_DEFAULT_PARTITION_PATH = "default"
#: longest file name most file systems (ext4, xfs, APFS) and S3 key segments accept, in bytes
MAX_SEGMENT_BYTES = 255
#: the name of the timeline directory: no partition may start with it
HOODIE_DIR = ".hoodie"

_ESCAPED = frozenset([chr(c) for c in range(0x20)] + ['"', "#", "%", "'", "*", "/", ":", "=",
                                                      "?", "\\", "\x7f", "{", "[", "]", "^"])
_HEX_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")


def escape_partition_value(value: str | None) -> str:
    """``value`` as Hudi writes it with URL-encoding on (empty or None: the default
    partition)."""
    if value is None or value == "":
        return DEFAULT_PARTITION_PATH
    if not any(c in _ESCAPED for c in value):
        return value
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def unescape_partition_value(text: str) -> str:
    """The inverse of :func:`escape_partition_value` for every non-empty value."""
    if "%" not in text:
        return text
    return _HEX_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)


def is_default_partition(value: str) -> bool:
    """Whether ``value`` (a value or a ``field=value`` directory) is the null marker."""
    v = value.split("=", 1)[1] if "=" in value else value
    return v in (DEFAULT_PARTITION_PATH, DEPRECATED_DEFAULT_PARTITION_PATH)


def partition_path(fields: Sequence[str], values: Sequence[str | None], *,
                   urlencode: bool = False, hive_style: bool = False) -> str:
    """The relative partition path of one record, as Hudi's key generators build it, checked
    with :func:`check_relative_partition_path`.

    Per field: a null or empty value becomes the default partition, the value is URL-encoded
    when ``urlencode``, and prefixed with ``field=`` when ``hive_style``; fields are joined
    with ``/``. Without URL-encoding a value may hold ``/`` (Hudi's simple key generator
    allows nested partitions that way); the result is refused if it is not a safe path."""
    if len(fields) != len(values):
        raise UsageError("one value per partition field", expected=len(fields),
                         actual=len(values))
    parts = []
    for name, value in zip(fields, values, strict=True):
        v = DEFAULT_PARTITION_PATH if value is None or value == "" else value
        if urlencode:
            v = escape_partition_value(v)
        parts.append(f"{name}={v}" if hive_style else v)
    return check_relative_partition_path("/".join(parts))


def check_relative_partition_path(path: str) -> str:
    """``path`` if it is a safe relative partition path, else :class:`UnsafePathError`.

    Safe: non-empty; ``/``-separated segments none of which is empty, ``.`` or ``..``; not
    absolute; no backslash; no control character (U+0000..U+001F, U+007F); the first segment
    does not start with ``.hoodie``; every segment at most 255 bytes in UTF-8. Such a path,
    joined to a table root, always names a directory strictly under that root."""
    if not isinstance(path, str):
        raise UnsafePathError("a partition path is a string", actual=type(path).__name__)
    if path == "":
        raise UnsafePathError("empty partition path", actual=path)
    if path.startswith("/"):
        raise UnsafePathError("absolute partition path", actual=path)
    if "\\" in path:
        raise UnsafePathError("backslash in partition path", actual=path)
    bad = next((c for c in path if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise UnsafePathError(f"control character U+{ord(bad):04X} in partition path",
                              actual=path)
    try:
        segments = [s.encode("utf-8") for s in path.split("/")]
    except UnicodeEncodeError:
        raise UnsafePathError("partition path is not valid Unicode (lone surrogate)",
                              actual=path) from None
    for seg in segments:
        if seg in (b"", b".", b".."):
            raise UnsafePathError(f"partition path segment {seg.decode()!r} not allowed",
                                  actual=path)
        if len(seg) > MAX_SEGMENT_BYTES:
            raise UnsafePathError("partition path segment longer than the file-name limit",
                                  expected=MAX_SEGMENT_BYTES, actual=len(seg))
    if segments[0].startswith(HOODIE_DIR.encode()):
        raise UnsafePathError("partition path inside the .hoodie metadata folder", actual=path)
    return path


__all__ = ["DEFAULT_PARTITION_PATH", "MAX_SEGMENT_BYTES", "UnsafePathError",
           "check_relative_partition_path", "escape_partition_value", "is_default_partition",
           "partition_path", "unescape_partition_value"]
