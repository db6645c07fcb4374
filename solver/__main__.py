"""`python -m solver` is the `confsolve` command."""

from solver import _command_line

raise SystemExit(_command_line())
