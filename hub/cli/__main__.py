"""``python -m hub.cli``: the same as the ``tiny-hub`` command."""

from hub.cli.main import main

raise SystemExit(main())
