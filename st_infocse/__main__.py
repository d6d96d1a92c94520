import sys

from st_infocse.cli import main

sys.exit(main())
