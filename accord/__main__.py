"""``python -m accord``: the same command line as ``accord``."""

from accord.cli import main

raise SystemExit(main())
