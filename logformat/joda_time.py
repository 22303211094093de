"""The subset of Joda-Time that Hudi's timestamp key generator relies on: date patterns
(``yyyy-MM-dd HH``), Java time-zone IDs, formatting an instant and parsing a date string.

Pure functions, no I/O. Facts, in our own words, from Joda-Time's ``DateTimeFormat`` pattern
letters and ``DateTimeZone.forTimeZone`` (which Hudi's ``TimestampBasedAvroKeyGenerator`` and
``HoodieDateTimeParser`` use):

- A pattern is a sequence of letters (a run of one letter is one field; its length selects the
  style), text between single quotes (``''`` is a quote), and any other character as itself.
- Numeric fields are zero-padded to the run length; ``yy`` is the two-digit year; ``MMM`` and
  ``EEE`` are English short names, four letters or more the full names; ``S`` is the fraction
  of the second; ``a`` is ``AM``/``PM``; ``Z`` the offset as ``+0800``, ``ZZ`` as ``+08:00``.
- Time-zone IDs are Java's: ``UTC``/``GMT``, ``GMT+8:00`` style fixed offsets, region IDs such as
  ``Asia/Shanghai``, and the three-letter IDs that Joda maps to regions (``EST`` is
  ``America/New_York``, so it observes daylight saving time).
- Parsing with ``hh`` and no ``a`` reads the hour in the morning (``12`` is midnight).

Only the letters listed in :data:`SUPPORTED_LETTERS` are implemented; any other pattern letter
raises :class:`UnsupportedPatternError` (a :class:`ValueError`), as do zone IDs outside the
forms above (Java would silently fall back to GMT for an unknown ID).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: pattern letters implemented here (Joda letters G C Y x w e z K k ... are not)
SUPPORTED_LETTERS = frozenset("yMdHhmsSaEDZ")
_NUMERIC = frozenset("yMdHhmsSD")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
#: Joda's conversions of Java's three-letter zone IDs that morlog accepts
_JODA_ALIASES = {"EST": "America/New_York", "MST": "America/Denver",
                 "HST": "Pacific/Honolulu"}
_GMT_OFFSET = re.compile(r"GMT([+-])(\d{1,2})(?::?(\d{2}))?")


class UnsupportedPatternError(ValueError):
    """A date pattern letter or zone ID outside the supported subset."""


@dataclass(frozen=True)
class Token:
    """One element of a pattern: a field (``letter`` repeated ``count`` times) or literal
    ``text`` (``letter`` empty)."""

    letter: str
    count: int = 0
    text: str = ""


def parse_pattern(pattern: str) -> tuple[Token, ...]:
    """The tokens of a Joda pattern; :class:`UnsupportedPatternError` for unknown letters,
    an unterminated quote or an empty pattern."""
    if not pattern:
        raise UnsupportedPatternError("empty date pattern")
    out: list[Token] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            j = i + 1
            buf = []
            while True:
                if j >= n:
                    raise UnsupportedPatternError(f"unterminated quote in {pattern!r}")
                if pattern[j] == "'":
                    if j + 1 < n and pattern[j + 1] == "'":
                        buf.append("'")
                        j += 2
                        continue
                    break
                buf.append(pattern[j])
                j += 1
            # '' outside text is a quote character
            out.append(Token("", text="".join(buf) if j > i + 1 else "'"))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and pattern[j] == c:
                j += 1
            if c not in SUPPORTED_LETTERS or (c == "Z" and j - i > 2):
                raise UnsupportedPatternError(
                    f"pattern letter {pattern[i:j]!r} of {pattern!r} is not supported")
            out.append(Token(c, j - i))
            i = j
        else:
            out.append(Token("", text=c))
            i += 1
    return tuple(out)


def java_zone(zone_id: str) -> tzinfo:
    """The zone Joda's ``DateTimeZone.forTimeZone(TimeZone.getTimeZone(zone_id))`` gives."""
    zid = zone_id.strip()
    if zid in ("UTC", "GMT", "UT", "UCT", "Etc/UTC", "Etc/GMT", "Zulu", "Universal"):
        return UTC
    m = _GMT_OFFSET.fullmatch(zid)
    if m:
        hours, minutes = int(m[2]), int(m[3] or 0)
        if hours > 23 or minutes > 59:
            raise UnsupportedPatternError(f"time-zone offset {zone_id!r} out of range")
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if m[1] == "-" else delta)
    zid = _JODA_ALIASES.get(zid, zid)
    if "/" not in zid:
        raise UnsupportedPatternError(f"time-zone ID {zone_id!r} is not supported (use a "
                                      "region such as 'Asia/Shanghai' or 'GMT+8:00')")
    try:
        return ZoneInfo(zid)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnsupportedPatternError(f"unknown time-zone ID {zone_id!r}") from None


def _offset_text(dt: datetime, colon: bool) -> str:
    off = dt.utcoffset() or timedelta(0)
    secs = int(off.total_seconds())
    sign = "-" if secs < 0 else "+"
    secs = abs(secs)
    hh, mm = secs // 3600, (secs % 3600) // 60
    return f"{sign}{hh:02d}:{mm:02d}" if colon else f"{sign}{hh:02d}{mm:02d}"


def local_datetime(ms: int, zone: tzinfo) -> datetime:
    """The instant ``ms`` (milliseconds since the epoch) in ``zone``."""
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).astimezone(zone)


def format_instant(tokens: tuple[Token, ...], ms: int, zone: tzinfo) -> str:
    """``ms`` formatted with ``tokens`` in ``zone`` as Joda's ``DateTime.toString`` does."""
    dt = local_datetime(ms, zone)
    frac_ms = ms % 1000
    out = []
    for t in tokens:
        c, n = t.letter, t.count
        if not c:
            out.append(t.text)
        elif c == "y":
            y = dt.year
            out.append(f"{y % 100:02d}" if n == 2 else f"{y:0{n}d}")
        elif c == "M":
            out.append(_MONTHS[dt.month - 1][:3] if n == 3 else _MONTHS[dt.month - 1]
                       if n > 3 else f"{dt.month:0{n}d}")
        elif c == "d":
            out.append(f"{dt.day:0{n}d}")
        elif c == "H":
            out.append(f"{dt.hour:0{n}d}")
        elif c == "h":
            out.append(f"{(dt.hour % 12) or 12:0{n}d}")
        elif c == "m":
            out.append(f"{dt.minute:0{n}d}")
        elif c == "s":
            out.append(f"{dt.second:0{n}d}")
        elif c == "S":
            digits = f"{frac_ms:03d}"
            out.append(digits[:n] if n <= 3 else digits + "0" * (n - 3))
        elif c == "a":
            out.append("AM" if dt.hour < 12 else "PM")
        elif c == "E":
            name = _DAYS[dt.weekday()]
            out.append(name[:3] if n <= 3 else name)
        elif c == "D":
            out.append(f"{dt.timetuple().tm_yday:0{n}d}")
        elif c == "Z":
            out.append(_offset_text(dt, colon=n == 2))
    return "".join(out)


#: Joda letters (by run length) that Arrow's strftime writes the same way, for a column-wise path
_STRFTIME = {("y", 4): "%Y", ("M", 2): "%m", ("d", 2): "%d", ("H", 2): "%H", ("h", 2): "%I",
             ("m", 2): "%M", ("s", 2): "%S", ("a", 1): "%p", ("D", 3): "%j", ("Z", 1): "%z"}


def strftime_format(tokens: tuple[Token, ...]) -> str | None:
    """An Arrow ``strftime`` format equivalent to ``tokens`` for instants truncated to whole
    seconds in years 1000..9999, or None when a token has no exact equivalent."""
    parts = []
    for t in tokens:
        if not t.letter:
            parts.append(t.text.replace("%", "%%"))
            continue
        f = _STRFTIME.get((t.letter, t.count))
        if f is None:
            return None
        parts.append(f)
    return "".join(parts)


@dataclass(frozen=True)
class _Parser:
    regex: re.Pattern[str]
    fields: tuple[Token, ...]
    has_offset: bool


def compile_parser(tokens: tuple[Token, ...]) -> _Parser:
    """A parser for ``tokens``; :class:`UnsupportedPatternError` for fields it cannot read
    back (two-digit years, names of days)."""
    parts = []
    fields = []
    for i, t in enumerate(tokens):
        if not t.letter:
            parts.append(re.escape(t.text))
            continue
        c, n = t.letter, t.count
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        adjacent = nxt is not None and nxt.letter in _NUMERIC
        if c == "y" and n == 2:
            raise UnsupportedPatternError("parsing two-digit years ('yy') is not supported")
        if c in _NUMERIC and not (c == "M" and n >= 3):
            if adjacent:
                parts.append(f"(\\d{{{n}}})")
            elif c == "y":
                parts.append("(\\d{1,9})")
            elif c == "S":
                parts.append(f"(\\d{{1,{max(n, 3)}}})")
            else:
                parts.append(f"(\\d{{1,{max(n, 3 if c == 'D' else 2)}}})")
        elif c == "M":
            names = "|".join(m if n > 3 else m[:3] for m in _MONTHS)
            parts.append(f"((?i:{names}))")
        elif c == "a":
            parts.append("((?i:AM|PM))")
        elif c == "Z":
            parts.append("(Z|[+-]\\d{2}(?::?\\d{2})?)")
        else:
            raise UnsupportedPatternError(f"parsing pattern letter {c * n!r} is not supported")
        fields.append(t)
    return _Parser(re.compile("".join(parts)), tuple(fields),
                   any(t.letter == "Z" for t in fields))


class ParseFailure(ValueError):
    """A string matches none of the input patterns, or names no valid instant."""


def parse_instant(parsers: tuple[_Parser, ...], text: str,
                  zone: tzinfo | None) -> tuple[int, tzinfo]:
    """(milliseconds since the epoch, zone of the parsed date) of ``text`` read with the
    first of ``parsers`` that matches it whole. Local fields are in ``zone``; an offset in the
    text takes precedence, and without ``zone`` the date's zone is that offset (Joda's
    ``withOffsetParsed``). :class:`ParseFailure` when nothing matches or when neither the text
    nor ``zone`` says which zone the date is in (Joda would use the JVM's default zone)."""
    for p in parsers:
        m = p.regex.fullmatch(text)
        if m is None:
            continue
        f = {"y": 1970, "M": 1, "d": 1, "H": 0, "h": -1, "m": 0, "s": 0, "S": 0, "D": -1}
        pm = None
        offset: tzinfo | None = None
        for t, g in zip(p.fields, m.groups(), strict=True):
            if t.letter == "M" and t.count >= 3:
                f["M"] = [x[:3].lower() for x in _MONTHS].index(g[:3].lower()) + 1
            elif t.letter == "a":
                pm = g.upper() == "PM"
            elif t.letter == "Z":
                if g == "Z":
                    offset = UTC
                else:
                    digits = g[1:].replace(":", "")
                    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
                    offset = timezone(-delta if g[0] == "-" else delta)
            elif t.letter == "S":
                f["S"] = int((g + "000")[:3])
            else:
                f[t.letter] = int(g)
        hour = f["H"]
        if f["h"] >= 0:
            if not 1 <= f["h"] <= 12:
                raise ParseFailure(f"hour {f['h']} out of range in {text!r}")
            hour = f["h"] % 12 + (12 if pm else 0)
        elif pm:
            hour = f["H"] % 12 + 12
        try:
            if f["D"] >= 0:
                local = datetime(f["y"], 1, 1) + timedelta(days=f["D"] - 1)
                local = local.replace(hour=hour, minute=f["m"], second=f["s"])
            else:
                local = datetime(f["y"], f["M"], f["d"], hour, f["m"], f["s"])
        except (ValueError, OverflowError):
            raise ParseFailure(f"{text!r} is not a valid date") from None
        local = local.replace(microsecond=f["S"] * 1000)
        tz = offset if offset is not None else zone
        if tz is None:
            raise ParseFailure(
                f"{text!r} carries no offset and no input time zone is set (Hudi would use "
                "the JVM's default time zone)")
        aware = local.replace(tzinfo=tz)
        # a local time in a daylight-saving gap does not exist (Joda refuses it)
        if aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) != local:
            raise ParseFailure(f"{text!r} does not exist in time zone {tz}")
        delta = aware - datetime(1970, 1, 1, tzinfo=UTC)
        ms = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
        return ms, (zone if zone is not None else tz)
    raise ParseFailure(f"{text!r} matches none of the input date formats")
