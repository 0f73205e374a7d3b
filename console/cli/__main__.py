"""`python -m console.cli …` is `lab …` (tests and bench scripts run it this way)."""

import sys

from console.cli import main

sys.exit(main())
