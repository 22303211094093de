"""``python -m morlog.config``: print the options reference (docs/options.md)."""

from morlog.config import render_markdown

print(render_markdown(), end="")
