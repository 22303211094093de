"""``python -m morlog``: the same as the ``morlog`` command."""

import sys

from morlog.cli import main

sys.exit(main())
