"""`python -m attnflow`: the command line."""

import sys

from ._start import main

sys.exit(main())
