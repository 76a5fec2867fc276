"""The one exception type for mistakes a user can fix."""


class InputError(ValueError):
    """A bad argument or file from the user: the message says what is wrong and what to do.

    The command line prints the message on one line and exits with status 2, without a
    traceback. Library callers can catch it as a plain ``ValueError``.
    """

    def _render_traceback_(self) -> list[str]:
        """In a notebook (IPython), the message alone: a user's mistake needs no traceback."""
        return [f"{type(self).__name__}: {self}"]
