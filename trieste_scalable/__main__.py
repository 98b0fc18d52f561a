"""``python -m trieste_scalable``: the command line."""

import sys

from .cli import main

sys.exit(main())
