"""Read a ``.keras`` file's weights, without running anything it defines: its parameters, and what
model similarity compares.

    python -m autograder.weights model.keras
        ->  {"parameters": 13039, "fingerprint": "9f2c...", "matrices": [{"shape": [32, 64], "sample": "..."}, ...]}

The grader's parameter budget must not rest on what the sandboxed child reports (student code
runs there and could say anything). So the sandbox runs this first, before any student code, in
the same isolation (an HDF5 file is parsed here, and a parser is attack surface too), and hands
its answer to the grader over a descriptor the student's code never gets; the grader checks its
shape before it reads it (:func:`autograder.sandbox.read_weights`).

A Keras 3 weights file keeps the model's variables under ``layers/`` and ``vars/`` and the
optimizer's state under ``optimizer/``; the parameters are the elements of every dataset
outside ``optimizer/``, trainable or not (what ``model.count_params()`` counts).

For model similarity (:mod:`autograder.similarity`) it also gives

- ``fingerprint``: a SHA-256 over the model's weight arrays that does not depend on the layers'
  names or order, the HDF5 file's bytes, nor the order of the values inside each array: each
  array's values are sorted before they are hashed, so reordering hidden units (the same
  function) keeps the fingerprint, and two models share it only when they hold the same numbers;
- ``matrices``: for every weight array of two or more dimensions (kernels and embeddings, which
  start random; one-dimensional biases and norms are left out, a GRU's two-row bias is not), its
  shape and the values at up to ``SAMPLE``
  positions drawn from a generator seeded by the shape alone, so that two models of the same
  architecture are sampled at the same positions and can be correlated array by array.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import sys
import zipfile

import numpy as np

MAX_WEIGHTS_BYTES = 500_000_000
SAMPLE = 512            # values per matrix kept for the near-identical comparison
MIN_MATRIX = 64         # smaller matrices say too little to compare
MAX_MATRICES = 512
MAX_READ = 50_000_000   # values read for similarity at most (far above every rubric's parameter budget)
MAX_DEPTH = 32          # group nesting a weights file may have (a Keras model's is under 10)
MAX_LINKS = 100_000     # entries a weights file may have


def _datasets(model_path: str) -> tuple[int, list[np.ndarray] | None]:
    """The model's parameter count and, when it holds at most ``MAX_READ`` values, its numeric weight
    arrays as float32 (optimizer state left out), in the file's order.

    The count comes from the datasets' shapes (and their element types' own shapes: a dataset of
    sub-arrays holds more numbers than its shape says), so nothing read afterwards can lose it:
    a dataset that is not numbers is counted and not read, and a read that fails for any reason
    leaves the count and only gives up the comparison (``None``).
    """
    import h5py

    with zipfile.ZipFile(model_path) as archive:
        info = archive.getinfo("model.weights.h5")
        if info.file_size > MAX_WEIGHTS_BYTES:
            raise ValueError("the weights file is too large")
        data = archive.read(info)
    with h5py.File(io.BytesIO(data), "r") as weights:
        found = [item for name, item in _reachable(weights) if not name.startswith("optimizer/")]
        total = sum(math.prod(item.shape or ()) * math.prod(item.dtype.shape) for item in found)
        if total >= 2 ** 63:
            raise ValueError("the weights file declares more parameters than any model can hold")
        if total > MAX_READ:
            return total, None
        try:
            return total, [np.asarray(item[()], dtype=np.float32).reshape(item.shape or ()) for item in found
                           if item.dtype.kind in "fiub" and not item.dtype.shape]
        except BaseException as error:   # MemoryError too: the count stands, the comparison goes without
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            return total, None


def _reachable(root) -> list[tuple[str, object]]:
    """Every dataset of an HDF5 file by every path that reaches it, in the file's order (depth first, names in
    order): what a reader that opens ``layers/<name>/vars/<i>`` can load. Soft links are followed, so a
    variable linked to a dataset under ``optimizer/`` (or to another variable) counts where it is used;
    h5py's ``visititems`` would see each dataset once, under one name. An external link (data outside the
    file), a link to nothing, a cycle or a tree deeper or wider than any model's is refused: no count."""
    import h5py

    found, visited = [], 0

    def walk(group, prefix: str, depth: int) -> None:
        nonlocal visited
        if depth > MAX_DEPTH:
            raise ValueError("the weights file nests groups deeper than any model does (a link cycle?)")
        for name in group:
            visited += 1
            if visited > MAX_LINKS:
                raise ValueError("the weights file holds more entries than any model does")
            link = group.get(name, getlink=True)
            if not isinstance(link, (h5py.HardLink, h5py.SoftLink)):
                raise ValueError(f"the weights file links {prefix}{name} outside itself")
            item = group.get(name)
            if item is None:
                raise ValueError(f"the weights file links {prefix}{name} to nothing")
            if isinstance(item, h5py.Group):
                walk(item, f"{prefix}{name}/", depth + 1)
            elif isinstance(item, h5py.Dataset):
                found.append((f"{prefix}{name}", item))

    walk(root, "", 0)
    return found


def fingerprint(arrays: list[np.ndarray]) -> str:
    """A SHA-256 of the arrays as a multiset of sorted value lists (``-0.0`` taken as ``0.0``)."""
    digests = sorted(hashlib.sha256(np.sort(a.ravel() + np.float32(0.0)).astype("<f4").tobytes()).hexdigest()
                     for a in arrays)
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def sample_positions(shape: tuple[int, ...]) -> np.ndarray:
    """The flat positions sampled in every matrix of ``shape``: the same for every model."""
    size = math.prod(shape)
    seed = int.from_bytes(hashlib.sha256(repr(tuple(shape)).encode()).digest()[:8], "little")
    if size <= SAMPLE:
        return np.arange(size)
    return np.sort(np.random.default_rng(seed).choice(size, SAMPLE, replace=False))


def pack(values: np.ndarray) -> str:
    """Sampled values as text: base64 of little-endian float32 (how they travel and are kept)."""
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def unpack(text: str) -> np.ndarray:
    """The values :func:`pack` wrote (``binascii.Error`` or ``ValueError`` for text it did not write)."""
    return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float64)


def matrices(arrays: list[np.ndarray]) -> list[dict]:
    """Each matrix's shape and sampled values (base64 of little-endian float32)."""
    kept = []
    for array in arrays:
        if array.ndim >= 2 and array.size >= MIN_MATRIX and len(kept) < MAX_MATRICES:
            kept.append({"shape": [int(d) for d in array.shape], "sample": pack(array.ravel()[sample_positions(array.shape)])})
    return kept


def read(model_path: str) -> dict:
    """``{"parameters": n, "fingerprint": hex or None, "matrices": [...]}`` of a ``.keras`` file."""
    total, arrays = _datasets(model_path)
    if not arrays:   # too many to read, or none at all (every weightless model would share a fingerprint)
        return {"parameters": total, "fingerprint": None, "matrices": []}
    return {"parameters": total, "fingerprint": fingerprint(arrays), "matrices": matrices(arrays)}


def main(argv: list[str]) -> int:
    try:
        answer = read(argv[0])
    except Exception as error:   # a broken or hostile file: no count, and the grader says so
        answer = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
