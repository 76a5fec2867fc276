"""The grader's own Keras floor: the releases with the model-loading security fixes it relies on.

Students train on whatever Keras ``requirements.txt`` allows (Colab's own release, so that Colab
installs nothing heavy). The grader is another matter: it loads bundles it does not trust, and
its defences (``safe_mode=True``, the ``.keras`` format's checks) hold only from :data:`FLOOR`
on: 3.14 keeps an archive's asset paths inside it, and 3.15 adds the HDF5 and zip bomb checks and
refuses a ``Lambda`` when ``safe_mode`` is left unset (it was let through when no scope set it). So the
commands that grade refuse to start below it, with one line that names the fix;
``make`` (requirements-dev.txt) and the Gradescope package's ``setup.sh`` install it.
"""

from __future__ import annotations

import re
from importlib import metadata

from labs.common.errors import InputError

FLOOR = (3, 15)
REQUIREMENT = f"keras>={FLOOR[0]}.{FLOOR[1]}"  # as pip reads it, in requirements-dev.txt and setup.sh
FIX = f'pip install -U "{REQUIREMENT}"'


def installed_keras() -> str | None:
    """The installed Keras release (``"3.15.1"``), read without importing it; None when there is none."""
    try:
        return metadata.version("keras")
    except metadata.PackageNotFoundError:
        return None


def check_keras(version: str | None = None) -> str:
    """Return the installed Keras release (or ``version``), or raise InputError when it is below the floor."""
    version = installed_keras() if version is None else version
    if version is None:
        raise InputError(f"the autograder needs Keras, which is not installed here; run: {FIX}")
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or (int(found[1]), int(found[2])) < FLOOR:
        raise InputError(
            f"the autograder needs Keras {FLOOR[0]}.{FLOOR[1]} or newer (the releases with the "
            f"model-loading security fixes it relies on); this environment has Keras {version}; "
            f"run: {FIX}"
        )
    return version
