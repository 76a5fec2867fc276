"""Read a model's ``config.json`` as data and decide, before loading it, whether it may be loaded.

Keras rebuilds a model from the classes and functions its config names. A hostile config can
name any importable module, or carry a ``Lambda`` layer's Python bytecode. So every object in
the config (any JSON object with a ``class_name``) must be one of:

- a Keras built-in (``module`` is ``keras`` or ``keras.*``), except the layers that run
  arbitrary code or load other files (``Lambda``, ``TFSMLayer`` and the wrappers of other
  frameworks' modules);
- a structural marker Keras itself writes (``__keras_tensor__``, ``__tensor__``, ...);
- a registered custom layer named in the rubric (``attention_lab>KeyValueAttention``), and only
  when the rubric lets the bundle carry ``custom_layers.py`` and the bundle does.

Anything else is refused, naming the object and where it sits in the config.
"""

from __future__ import annotations

from dataclasses import dataclass

REFUSED_CLASSES = {"Lambda", "TFSMLayer", "TorchModuleWrapper", "JaxLayer", "FlaxLayer", "__lambda__"}
STRUCTURAL = {"__keras_tensor__", "__tensor__", "__numpy__", "__typespec__", "__slice__", "__ellipsis__",
              "__bytes__", "__tuple__"}


@dataclass
class Verdict:
    allowed: bool
    message: str
    classes: set[str]                # class names found (for the rubric's architecture requirements)
    registered: set[str]             # registered custom names found (``package>Name``)


def _objects(node, path: str = "config"):
    """Every JSON object with a ``class_name``, with a readable path to it."""
    if isinstance(node, dict):
        if "class_name" in node:
            yield node, path
        for key, value in node.items():
            yield from _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _objects(value, f"{path}[{index}]")


def check_config(config: dict, *, allowed_custom: tuple[str, ...] = (), custom_layers_present: bool = False) -> Verdict:
    """Whether ``config`` (a model's ``config.json``) names only allowed classes and functions."""
    classes, registered = set(), set()
    for node, path in _objects(config):
        class_name, module = node.get("class_name"), node.get("module")
        name = node.get("registered_name")
        if not isinstance(class_name, str) or not (module is None or isinstance(module, str)):
            return Verdict(False, f"{path}: class_name and module must be strings", classes, registered)
        where = f"{class_name!r} at {path}"
        if class_name in REFUSED_CLASSES:
            return Verdict(False, f"the model uses {where}, which runs arbitrary code and is never loaded; "
                                  "build it from Keras layers (or the kit's registered layers) instead",
                           classes, registered)
        if isinstance(name, str) and ">" in name:
            if name not in allowed_custom:
                return Verdict(False, f"the model uses the custom object {name!r} ({path}); this task allows "
                                      f"{', '.join(allowed_custom) or 'no custom objects'}", classes, registered)
            if not custom_layers_present:
                return Verdict(False, f"the model uses {name!r}, but the bundle has no custom_layers.py to define "
                                      "it; export with labs.common.submission.export(...), which adds it",
                               classes, registered)
            registered.add(name)
            classes.add(class_name)
            continue
        if module is None:
            if class_name not in STRUCTURAL:
                return Verdict(False, f"the model config names {where} without a module", classes, registered)
            continue
        if module == "keras" or module.startswith("keras."):
            classes.add(class_name)
            continue
        if module == "builtins" and class_name == "function":
            continue   # a Keras built-in function by name (Keras resolves these only among its own)
        return Verdict(False, f"the model config names {where} from the module {module!r}; only Keras' own "
                              "layers and the kit's registered layers are loaded", classes, registered)
    return Verdict(True, "", classes, registered)
