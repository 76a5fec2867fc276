"""Attention Lab: a course-lab kit for recurrent networks and attention.

Three labs share one spine (generator -> vocabulary -> pipeline -> model -> decoder -> metrics):

- ``labs.date_generation``: a one-to-many character RNN that writes ISO dates;
- ``labs.date_translation``: human dates to ISO with additive (Bahdanau) attention;
- ``labs.name_transliteration``: Thai names to English with key-value attention.

Everything the labs share lives once in ``labs.common``.
"""

import os

# pythainlp must never reach the network: the kit uses only what ships in its wheel. The
# variable has to be set before pythainlp is first imported, so it is set here, on import of
# the kit itself.
os.environ.setdefault("PYTHAINLP_OFFLINE", "1")

__version__ = "0.1.0"
