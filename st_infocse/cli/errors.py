"""The command line's error."""

from __future__ import annotations

from st_infocse.files import InputError


class CLIError(InputError):
    """A problem with the user's input: reported in one line, exit code 2."""
