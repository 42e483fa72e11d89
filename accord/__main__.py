"""``python -m accord``: the same command line as ``accord``."""

from accord.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
