"""`python -m solver` is the `confsolve` command."""

from solver.cli import main

raise SystemExit(main())
