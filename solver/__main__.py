"""`python -m solver` is the `confsolve` command."""

from solver.cli.commands import main

raise SystemExit(main())
