"""One module per reconciler; each exposes a class with `setup(manager)` (see each module's docstring)."""
