"""``python -m pterun.llm``: the ``pterun generate`` command."""

import sys

from pterun.llm.cli import main

sys.exit(main())
