"""``python -m st_infocse.cli``: the ``st-infocse`` command."""

import sys

from st_infocse.cli import main

sys.exit(main())
