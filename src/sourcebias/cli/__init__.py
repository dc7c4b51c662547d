"""The ``sourcebias`` command line (typer); the only module that knows every capability."""
