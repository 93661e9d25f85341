"""`python -m lstmgraph_cli`: the `lstmgraph` command, through the same entry point (`entry.main`)."""

from .entry import main

main()
