"""``python -m labs``: the kit's command line (see ``labs.cli``)."""

from labs.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
