"""Read a model's ``config.json`` as data and decide, before loading it, whether it may be loaded.

Keras rebuilds a model from the classes and functions its config names. A hostile config can
name any importable module, or carry a ``Lambda`` layer's Python bytecode. So every object in
the config (any JSON object with a ``class_name``) must be one of:

- a Keras built-in (``module`` is ``keras`` or ``keras.*``), except the layers that run
  arbitrary code or load other files (``Lambda``, ``TFSMLayer`` and the wrappers of other
  frameworks' modules), and a lookup layer whose vocabulary is a file path, read as it loads;
- a structural marker Keras itself writes (``__keras_tensor__``, ``__tensor__``, ...);
- a registered custom layer named in the rubric (``attention_lab>KeyValueAttention``), and only
  when the rubric lets the bundle carry ``custom_layers.py`` and the bundle does.

Anything else is refused, naming the object and where it sits in the config.

The rubric's architecture requirement ("uses AdditiveAttention") is judged on the model's real
layer graph (:func:`graph_classes`): the layers its outputs are computed through, with those
inside nested models and wrappers. A class named elsewhere in the file (a decoy object, or a
layer that feeds nothing) earns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.common.submission import EXPORT_ADVICE

REFUSED_CLASSES = {"Lambda", "TFSMLayer", "TorchModuleWrapper", "JaxLayer", "FlaxLayer", "__lambda__"}
STRUCTURAL = {
    "__keras_tensor__",
    "__tensor__",
    "__numpy__",
    "__typespec__",
    "__slice__",
    "__ellipsis__",
    "__bytes__",
    "__tuple__",
}


@dataclass
class Verdict:
    allowed: bool
    message: str
    classes: set[str]  # classes on the model's real layer graph (the rubric's architecture)
    registered: set[str]  # registered custom names found (``package>Name``)


MAX_DEPTH = 200  # Keras nests a model's config a few dozen levels deep at most
NESTED_LAYER_KEYS = ("layer", "forward_layer", "backward_layer", "cell", "cells")  # wrappers and RNNs
MODEL_CLASSES = {"Functional", "Sequential", "Model"}


class ConfigError(ValueError):
    """A config the grader will not walk (nested too deeply)."""


def _objects(config):
    """Every JSON object with a ``class_name``, with the way to it (iteratively, depth-bounded): a chain of
    ``(parent, key)`` links that :func:`_path_text` writes out only for the object a message names. Written
    out for every object, a config of 60,000 objects under one 115,000-character key held 7 GB of paths."""
    stack = [(config, None, 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(f"the model config is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, dict):
            if "class_name" in node:
                yield node, path
            stack += [(value, (path, key), depth + 1) for key, value in reversed(list(node.items()))]
        elif isinstance(node, list):
            stack += [(value, (path, i), depth + 1) for i, value in reversed(list(enumerate(node)))]


def _where(class_name: str, path) -> str:
    """``'Lambda' at config.layers[3]``, for a message (a hostile class name is cut to 80 characters)."""
    return f"{class_name[:80]!r} at {_path_text(path)}"


def _path_text(path, key_chars: int = 40) -> str:
    """``config.layers[3].config.layer``: a path from :func:`_objects`, each key cut to ``key_chars``."""
    parts = []
    while path is not None:
        path, key = path
        if isinstance(key, int):
            parts.append(f"[{key}]")
        else:
            key = str(key)
            parts.append(f".{key[:key_chars]}{'…' if len(key) > key_chars else ''}")
    return "config" + "".join(reversed(parts))


def _references(node) -> list[tuple[str, int, int]]:
    """``(layer, node index, tensor index)`` of every tensor that ``node`` (a layer's inbound node) takes
    in."""
    found, stack = [], [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(f"the model config is nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            history = (
                item.get("config", {}).get("keras_history")
                if item.get("class_name") == "__keras_tensor__"
                else None
            )
            if _is_reference(history):
                found.append(tuple(history))
            else:
                stack += [(value, depth + 1) for value in item.values()]
        elif isinstance(item, list):
            stack += [(value, depth + 1) for value in item]
    return found


def _is_reference(item) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 3
        and isinstance(item[0], str)
        and all(isinstance(i, int) and not isinstance(i, bool) for i in item[1:])
    )


def _flat_outputs(outputs, depth: int = 0) -> list[tuple[str, int, int]]:
    """A model's ``output_layers`` in the order Keras flattens them (lists in order, dicts by sorted key)."""
    if depth > MAX_DEPTH:
        raise ConfigError(f"the model config is nested more than {MAX_DEPTH} levels deep")
    if _is_reference(outputs):
        return [tuple(outputs)]
    if isinstance(outputs, dict):
        return [r for key in sorted(outputs) for r in _flat_outputs(outputs[key], depth + 1)]
    if isinstance(outputs, list):
        return [r for item in outputs for r in _flat_outputs(item, depth + 1)]
    return []


MAX_REFERENCES = 100_000  # layer references one walk of the graph follows; a real model has hundreds


class _Walk:
    """One walk of a config's layer graph: what each layer's used outputs go through, found once (a model can
    refer to a nested one many times: walked afresh each time, 20 nested levels of 4 references would be 4^20
    walks), and how many references the walk has followed, within :data:`MAX_REFERENCES`."""

    def __init__(self):
        self.found: dict[tuple[int, tuple[int, ...]], set[str]] = {}
        self.followed = 0

    def follow(self) -> None:
        self.followed += 1
        if self.followed > MAX_REFERENCES:
            raise ConfigError(
                f"the model's layer graph has more than {MAX_REFERENCES:,} layer references; Keras writes no "
                "such model"
            )


def graph_classes(
    model: dict, outputs: tuple[int, ...] = (0,), depth: int = 0, walk: _Walk | None = None
) -> set[str]:
    """The classes of the layers a model's outputs (by default the first: the probabilities, which decoding
    reads) are computed through, nested models and wrapped layers included.

    A functional model is walked back from those outputs along the inbound node each tensor
    came from; inside a nested model, only from the outputs the outer graph uses. A Sequential
    model uses every layer it lists. A class named anywhere else in the file earns nothing.
    Each layer is read once per output used; ConfigError for a graph no Keras model has.
    """
    walk = walk or _Walk()
    if depth > 20 or not isinstance(model, dict) or not isinstance(model.get("config"), dict):
        return set()
    config = model["config"]
    layers = (
        [l for l in config.get("layers", []) if isinstance(l, dict)]
        if isinstance(config.get("layers"), list)
        else []
    )
    if model.get("class_name") == "Sequential":
        return {c for layer in layers for c in _layer_classes(layer, (0,), depth, walk)}
    by_name = {l.get("name") or l.get("config", {}).get("name"): l for l in layers}
    flat = _flat_outputs(config.get("output_layers", []))
    todo = [flat[i] for i in outputs if 0 <= i < len(flat)]
    seen, classes = set(), set()
    while todo:
        reference = todo.pop()
        walk.follow()
        name, node, tensor = reference
        if reference in seen or name not in by_name:
            continue
        seen.add(reference)
        layer = by_name[name]
        classes |= _layer_classes(layer, (tensor,), depth, walk)
        nodes = layer.get("inbound_nodes") if isinstance(layer.get("inbound_nodes"), list) else []
        index = (
            node - 1 if layer.get("class_name") in MODEL_CLASSES else node
        )  # a model's node 0 is its own input
        for inbound in [nodes[index]] if 0 <= index < len(nodes) else nodes:
            todo += _references(inbound)
    return classes


def _layer_classes(layer: dict, outputs: tuple[int, ...], depth: int, walk: _Walk) -> set[str]:
    """A used layer's class, and those of the layers it wraps or, for a model, that its used outputs go
    through (found once per walk)."""
    if depth > 20 or not isinstance(layer.get("class_name"), str):
        return set()
    key = (id(layer), outputs)
    if key in walk.found:
        return walk.found[key]
    classes = {layer["class_name"]}
    if layer["class_name"] in MODEL_CLASSES:
        classes |= graph_classes(layer, outputs, depth + 1, walk)
    inner = layer.get("config") if isinstance(layer.get("config"), dict) else {}
    for key_name in NESTED_LAYER_KEYS:
        value = inner.get(key_name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                classes |= _layer_classes(item, (0,), depth + 1, walk)
    walk.found[key] = classes
    return classes


def check_config(
    config: dict, *, allowed_custom: tuple[str, ...] = (), custom_layers_present: bool = False
) -> Verdict:
    """Whether ``config`` (a model's ``config.json``) names only allowed classes and functions."""
    classes, registered = graph_classes(config), set()
    for node, path in _objects(config):
        class_name, module = node.get("class_name"), node.get("module")
        name = node.get("registered_name")
        if not isinstance(class_name, str) or not (module is None or isinstance(module, str)):
            message = f"{_path_text(path)}: class_name and module must be strings"
            return Verdict(False, message, classes, registered)
        if class_name in REFUSED_CLASSES:
            return Verdict(
                False,
                f"the model uses {_where(class_name, path)}, which runs arbitrary code and is never loaded; "
                "build it from Keras layers (or the kit's registered layers) instead",
                classes,
                registered,
            )
        # Keras' lookup layers (StringLookup, IntegerLookup, TextVectorization) take a file path for their
        # vocabulary in place of a list, and read it as the model loads: any file of the grading machine.
        inner = node.get("config") if isinstance(node.get("config"), dict) else {}
        if isinstance(inner.get("vocabulary"), str):
            return Verdict(
                False,
                f"the model's {_where(class_name, path)} reads its vocabulary from a file of the machine "
                f"that loads it ({inner['vocabulary'][:80]!r}); a model is graded on what its bundle holds: "
                "give the layer its vocabulary as a list",
                classes,
                registered,
            )
        if isinstance(name, str) and ">" in name:
            if name not in allowed_custom:
                return Verdict(
                    False,
                    f"the model uses the custom object {name!r} ({_path_text(path)}); this task allows "
                    f"{', '.join(allowed_custom) or 'no custom objects'}",
                    classes,
                    registered,
                )
            if not custom_layers_present:
                return Verdict(
                    False,
                    f"the model uses {name!r}, but the bundle has no custom_layers.py to define "
                    f"it; {EXPORT_ADVICE}, which adds it",
                    classes,
                    registered,
                )
            registered.add(name)
            continue
        if module is None:
            if class_name not in STRUCTURAL:
                message = f"the model config names {_where(class_name, path)} without a module"
                return Verdict(False, message, classes, registered)
            continue
        if module == "keras" or module.startswith("keras."):
            continue
        if module == "builtins" and class_name == "function":
            continue  # a Keras built-in function by name (Keras resolves these only among its own)
        return Verdict(
            False,
            f"the model config names {_where(class_name, path)} from the module {module!r}; only Keras' own "
            "layers and the kit's registered layers are loaded",
            classes,
            registered,
        )
    return Verdict(True, "", classes, registered)
