"""Count a ``.keras`` file's parameters from its weights file, without running anything it defines.

    python -m autograder.weights model.keras      ->  {"parameters": 13039}  (on standard output)

The grader's parameter budget must not rest on what the sandboxed child reports (student code
runs there and could say anything). So the sandbox runs this first, before any student code, in
the same isolation (an HDF5 file is parsed here, and a parser is attack surface too), and hands
its answer to the grader over a descriptor the student's code never gets.

A Keras 3 weights file keeps the model's variables under ``layers/`` and ``vars/`` and the
optimizer's state under ``optimizer/``; the parameters are the elements of every dataset
outside ``optimizer/``, trainable or not (what ``model.count_params()`` counts).
"""

from __future__ import annotations

import io
import json
import sys
import zipfile

MAX_WEIGHTS_BYTES = 500_000_000


def count_parameters(model_path: str) -> int:
    import h5py

    with zipfile.ZipFile(model_path) as archive:
        info = archive.getinfo("model.weights.h5")
        if info.file_size > MAX_WEIGHTS_BYTES:
            raise ValueError("the weights file is too large")
        data = archive.read(info)
    total = 0
    with h5py.File(io.BytesIO(data), "r") as weights:
        def visit(name, item):
            nonlocal total
            if isinstance(item, h5py.Dataset) and not name.startswith("optimizer/"):
                size = 1
                for dimension in item.shape or ():
                    size *= int(dimension)
                total += size
        weights.visititems(visit)
    if total >= 2 ** 63:
        raise ValueError("the weights file declares more parameters than any model can hold")
    return total


def main(argv: list[str]) -> int:
    try:
        answer = {"parameters": count_parameters(argv[0])}
    except Exception as error:   # a broken or hostile file: no count, and the grader says so
        answer = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
