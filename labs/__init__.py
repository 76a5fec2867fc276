"""Attention Lab: a course-lab kit for recurrent networks and attention.

Three labs share one spine (generator -> vocabulary -> pipeline -> model -> decoder -> metrics):

- ``labs.date_generation``: a one-to-many character RNN that writes ISO dates;
- ``labs.date_translation``: human dates to ISO with additive (Bahdanau) attention;
- ``labs.name_transliteration``: Thai names to English with key-value attention.

Everything the labs share lives once in ``labs.common``.
"""

import os

# pythainlp must never reach the network: the kit uses only what ships in its wheel. The variable has to be
# set before pythainlp is first imported, so it is set here, on import of the kit itself.
os.environ.setdefault("PYTHAINLP_OFFLINE", "1")

# TensorFlow's C++ and absl start-up lines (CPU instruction sets, oneDNN, "failed call to cuInit"
# on a machine without a GPU) say nothing a student can act on, and the last one alarms. They are
# hidden unless the user set the level themselves; ``python -m labs --verbose`` shows them. Like
# the variable above, this must happen before TensorFlow is first imported (labs.common.quiet).
# A level of 3 (the kit's own, inherited by the processes it starts, or the user's) asks for quiet too.
TENSORFLOW_LOG_LEVEL_SET_BY_USER = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3") != "3"
if not TENSORFLOW_LOG_LEVEL_SET_BY_USER:
    from labs.common.quiet import hide_start_up_lines

    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    hide_start_up_lines()

__version__ = "0.1.0"
