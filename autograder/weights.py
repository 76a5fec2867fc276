"""Read a ``.keras`` file's weights, without running anything it defines: its parameters, and what model
similarity compares.

    python -m autograder.weights model.keras
        ->  {"parameters": 13039, "fingerprint": "9f2c...",
             "matrices": [{"shape": [32, 64], "sample": "...", "block": "...", "rows": "...", "columns":
             "..."}, ...]}

The grader's parameter budget must not rest on what the sandboxed child reports (student code
runs there and could say anything). So the sandbox runs this first, before any student code, in
the same isolation (an HDF5 file is parsed here, and a parser is attack surface too), and hands
its answer to the grader over a descriptor the student's code never gets; the grader checks its
shape before it reads it (:func:`autograder.sandbox.read_weights`).

A Keras 3 weights file keeps the model's variables under ``layers/`` and ``vars/`` and the
optimizer's state under ``optimizer/``; the parameters are the elements of every dataset
outside ``optimizer/``, trainable or not (what ``model.count_params()`` counts). Whatever else the
file holds counts too, so that no data rides beside the parameters for a layer to read: a dataset
that is not plain numbers (a record, a sub-array type, bytes) as the 4-byte numbers its bytes would
hold, the optimizer's state beyond ``OPTIMIZER_SLOTS`` values per parameter (Adam keeps two) and
attributes beyond ``FREE_ATTRIBUTE_BYTES`` (Keras writes a few names) the same way.

For model similarity (:mod:`autograder.similarity`) it also gives

- ``fingerprint``: a SHA-256 over the model's weight arrays that does not depend on the layers'
  names or order, the HDF5 file's bytes, nor the order of the values inside each array: each
  array's values are sorted before they are hashed, so reordering hidden units (the same
  function) keeps the fingerprint, and two models share it only when they hold the same numbers;
- ``matrices``: for every weight array of two or more dimensions (kernels and embeddings, which
  start random; one-dimensional biases and norms are left out, a GRU's two-row bias is not), read
  as a 2-D matrix (rows: all dimensions but the last; columns: the last), a :class:`Matrix`:
  its values at up to ``SAMPLE`` positions drawn from a generator seeded by the shape alone (two
  models of the same architecture are sampled at the same positions), and a block of its rows and
  columns of largest magnitude with each one's *profile* (its sorted magnitudes), by which
  another model's hidden units can be matched to these whatever their order and signs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import sys
import zipfile
from dataclasses import dataclass
from functools import cached_property

import numpy as np

MAX_WEIGHTS_BYTES = 500_000_000
SAMPLE = 512  # values per matrix kept for the near-identical comparison (sampled; and in the block)
PROFILE = 8  # sorted magnitudes kept per row and column of the block
MIN_MATRIX = 64  # smaller matrices say too little to compare
MAX_MATRICES = 128  # at most about 9 kB each: the answer stays under the sandbox's 2 MB
MAX_READ = 50_000_000  # values read for similarity at most (far above every rubric's parameter budget)
MAX_DEPTH = 32  # group nesting a weights file may have (a Keras model's is under 10)
MAX_LINKS = 100_000  # entries a weights file may have
OPTIMIZER_SLOTS = 3  # values of optimizer state per parameter that count as none (Adam keeps 2, plus a step)
FREE_ATTRIBUTE_BYTES = 65_536  # bytes of HDF5 attributes that count as none (Keras writes under 1 kB)


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
        reachable, attribute_bytes = _reachable(weights)
        found = [item for name, item in reachable if not name.startswith("optimizer/")]
        total = sum(_numbers(item) for item in found)
        optimizer = sum(_numbers(item) for name, item in reachable if name.startswith("optimizer/"))
        total += max(0, optimizer - OPTIMIZER_SLOTS * total - 64)
        total += _words(max(0, attribute_bytes - FREE_ATTRIBUTE_BYTES))
        if total >= 2**63:
            raise ValueError("the weights file declares more parameters than any model can hold")
        if total > MAX_READ:
            return total, None
        try:
            return total, [
                np.asarray(item[()], dtype=np.float32).reshape(item.shape or ())
                for item in found
                if item.dtype.kind in "fiub" and not item.dtype.shape
            ]
        except BaseException as error:  # MemoryError too: the count stands, the comparison goes without
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            return total, None


def _numbers(item) -> int:
    """What a dataset counts as: its elements when they are plain numbers, else the 4-byte numbers its
    bytes would hold (a record of two million floats is one element; a parameter budget must see two
    million)."""
    elements = math.prod(item.shape or ())
    dtype = item.dtype
    plain = dtype.kind in "fiub" or (dtype.kind == "V" and dtype.itemsize == 2)  # Keras' bfloat16 is 2 bytes
    if plain and not dtype.shape and dtype.names is None:
        return elements
    if dtype.hasobject:  # variable-length strings or arrays: their data is elsewhere in the file, read it
        return max(elements, _words(_stored_bytes(item[()])))
    return _words(elements * max(dtype.itemsize, 1))


def _words(nbytes: int) -> int:
    """The 4-byte numbers ``nbytes`` bytes would hold, rounded up."""
    return -(-nbytes // 4)


def _stored_bytes(value) -> int:
    """The bytes a value read from a dataset holds: a string's, an array's data, a record's fields; anything
    else (a reference to another object) 8."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, np.void) and value.dtype.names:
        return sum(_stored_bytes(value[name]) for name in value.dtype.names)
    if isinstance(value, np.ndarray):
        return sum(map(_stored_bytes, value.ravel())) if value.dtype.hasobject else value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(map(_stored_bytes, value))
    if isinstance(value, (np.generic, int, float, complex)):
        return np.asarray(value).nbytes
    return 8


def _reachable(root) -> tuple[list[tuple[str, object]], int]:
    """Every dataset of an HDF5 file by every path that reaches it, in the file's order (depth first, names in
    order): what a reader that opens ``layers/<name>/vars/<i>`` can load. Soft links are followed, so a
    variable linked to a dataset under ``optimizer/`` (or to another variable) counts where it is used;
    h5py's ``visititems`` would see each dataset once, under one name. An external link (data outside the
    file), a link to nothing, a cycle or a tree deeper or wider than any model's is refused: no count. Also
    returns the bytes of the attributes on the way (the file's, and each group's and dataset's)."""
    import h5py

    found, visited, attribute_bytes = [], 0, 0

    def attributes(item) -> int:
        return sum(item.attrs.get_id(name).get_storage_size() for name in item.attrs)

    def walk(group, prefix: str, depth: int) -> None:
        nonlocal visited, attribute_bytes
        attribute_bytes += attributes(group)
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
                attribute_bytes += attributes(item)

    walk(root, "", 0)
    return found, attribute_bytes


def fingerprint(arrays: list[np.ndarray]) -> str:
    """A SHA-256 of the arrays as a multiset of sorted value lists (``-0.0`` taken as ``0.0``)."""
    digests = sorted(
        hashlib.sha256(np.sort(a.ravel() + np.float32(0.0)).astype("<f4").tobytes()).hexdigest()
        for a in arrays
    )
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def sample_positions(shape: tuple[int, ...]) -> np.ndarray:
    """The flat positions sampled in every matrix of ``shape``: the same for every model."""
    size = math.prod(shape)
    seed = int.from_bytes(hashlib.sha256(repr(tuple(shape)).encode()).digest()[:8], "little")
    if size <= SAMPLE:
        return np.arange(size)
    return np.sort(np.random.default_rng(seed).choice(size, SAMPLE, replace=False))


def block_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """``(R, C)``: how many rows and columns of a matrix of ``shape`` its block keeps, at most ``SAMPLE``
    values in all, as square as the matrix allows (rows: all dimensions but the last; columns: the last)."""
    rows, columns = math.prod(shape[:-1]), shape[-1]
    r = min(rows, math.isqrt(SAMPLE))
    c = min(columns, SAMPLE // r)
    return min(rows, SAMPLE // c), c


def profiles(units: np.ndarray) -> np.ndarray:
    """``(n, m) -> (n, k)``: each row's magnitudes, sorted, at ``k = min(PROFILE, m)`` evenly spaced ranks
    from the smallest to the largest. A hidden unit's profile is the same whatever the order and the signs of
    the units it connects to, so it can be found again in a copy whose units were reordered."""
    ranked = np.sort(np.abs(units), axis=1)
    return ranked[:, np.round(np.linspace(0, ranked.shape[1] - 1, min(PROFILE, ranked.shape[1]))).astype(int)]


@dataclass(frozen=True, eq=False)
class Matrix:
    """What model similarity keeps of one weight matrix ``W``, read as 2-D: (rows, columns) = (all dimensions
    but the last, the last); ``(R, C) = block_shape(shape)``, ``k``: :data:`PROFILE` or fewer.

    - ``sample`` (up to ``SAMPLE``,): ``W``'s values at :func:`sample_positions`, the same in every model;
    - ``block`` (R, C): ``W`` at its R rows and C columns of largest mean magnitude, largest first: which rows
    and
      columns these are does not depend on the order of the hidden units;
    - ``rows`` (R, k), ``columns`` (C, k): the :func:`profiles` of the block's rows and columns, taken over
    the
      whole of ``W``, by which another model's block is aligned to this one.
    """

    shape: tuple[int, ...]
    sample: np.ndarray
    block: np.ndarray
    rows: np.ndarray
    columns: np.ndarray

    @classmethod
    def of(cls, array: np.ndarray) -> "Matrix":
        """The matrix kept of a weight array of two or more dimensions."""
        shape = tuple(int(d) for d in array.shape)
        w = np.asarray(array).reshape(-1, shape[-1])  # (rows, columns)
        r, c = block_shape(shape)
        magnitude = np.abs(w)
        rows = np.argsort(-magnitude.mean(axis=1, dtype=np.float64), kind="stable")[:r]  # (R,)
        columns = np.argsort(-magnitude.mean(axis=0, dtype=np.float64), kind="stable")[:c]  # (C,)
        parts = (
            w.ravel()[sample_positions(shape)],
            w[np.ix_(rows, columns)],
            profiles(w[rows]),
            profiles(w[:, columns].T),
        )
        return cls(shape, *(np.asarray(part, dtype=np.float64) for part in parts))

    @cached_property
    def pattern(self) -> np.ndarray:
        """(R, C): ``log |block|`` (floored at a thousandth of its mean magnitude) less each row's and each
        column's mean: where a unit's large and small weights are, once the units' own scales are taken out.
        What :func:`autograder.similarity.aligned_correlation` correlates (kept, since every pair uses it)."""
        magnitude = np.abs(self.block)
        logs = np.log(magnitude + 1e-3 * magnitude.mean() + 1e-30)
        return logs - logs.mean(axis=0, keepdims=True) - logs.mean(axis=1, keepdims=True) + logs.mean()

    def to_json(self) -> dict:
        """``{"shape": [...], "sample": text, "block": text, "rows": text, "columns": text}``
        (:func:`pack`)."""
        return {"shape": list(self.shape), **{part: pack(getattr(self, part).ravel()) for part in _PARTS}}

    @classmethod
    def from_json(cls, item) -> "Matrix | None":
        """The matrix that :meth:`to_json` wrote, or None when any part is not of the shape this reader
        writes: two to eight positive dimensions, ``MIN_MATRIX`` to ``MAX_READ`` values in all, each part the
        right number of finite values for that shape."""
        if not isinstance(item, dict) or not isinstance(item.get("shape"), list):
            return None
        shape = item["shape"]
        if not 2 <= len(shape) <= 8 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 < d for d in shape
        ):
            return None
        shape = tuple(shape)
        if not MIN_MATRIX <= math.prod(shape) <= MAX_READ:
            return None
        r, c = block_shape(shape)
        expected = {
            "sample": (len(sample_positions(shape)),),
            "block": (r, c),
            "rows": (r, min(PROFILE, shape[-1])),
            "columns": (c, min(PROFILE, math.prod(shape[:-1]))),
        }
        parts = {}
        for part, part_shape in expected.items():
            text, size = item.get(part), math.prod(part_shape)
            if not isinstance(text, str) or len(text) != 4 * -(-4 * size // 3):  # base64 of 4 bytes a value
                return None
            try:
                values = unpack(text)
            except ValueError:  # binascii.Error is one
                return None
            if values.size != size or not np.isfinite(values).all():
                return None
            parts[part] = values.reshape(part_shape)
        return cls(shape, **parts)


_PARTS = ("sample", "block", "rows", "columns")


def pack(values: np.ndarray) -> str:
    """Values as text: base64 of little-endian float32 (how they travel and are kept)."""
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def unpack(text: str) -> np.ndarray:
    """The values :func:`pack` wrote (``binascii.Error`` or ``ValueError`` for text it did not write)."""
    return np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float64)


def matrices(arrays: list[np.ndarray]) -> list[dict]:
    """What model similarity keeps of each matrix (:class:`Matrix`), as JSON: its shape and its parts as
    text."""
    kept = []
    for array in arrays:
        if array.ndim >= 2 and array.size >= MIN_MATRIX and len(kept) < MAX_MATRICES:
            kept.append(Matrix.of(array).to_json())
    return kept


def read(model_path: str) -> dict:
    """``{"parameters": n, "fingerprint": hex or None, "matrices": [...]}`` of a ``.keras`` file."""
    total, arrays = _datasets(model_path)
    if not arrays:  # too many to read, or none at all (every weightless model would share a fingerprint)
        return {"parameters": total, "fingerprint": None, "matrices": []}
    return {"parameters": total, "fingerprint": fingerprint(arrays), "matrices": matrices(arrays)}


def main(argv: list[str]) -> int:
    try:
        answer = read(argv[0])
    except Exception as error:  # a broken or hostile file: no count, and the grader says so
        answer = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
