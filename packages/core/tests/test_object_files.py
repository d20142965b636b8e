"""Whole objects in checkpoints without pickle (pullback._object_tree, pullback._safe_globals):
plain classes round trip as data, loading is weights-only by default and refuses classes
outside the allow-list with PyTorch's words, crafted files give typed errors, and no code of
a rebuilt class (``__init__``, ``__setstate__``, ``__setattr__``) and no import named by a file
ever runs."""

from __future__ import annotations

import io
import json
import struct
import sys
from collections import OrderedDict
from typing import Any, Callable

import numpy as np
import pytest

import pullback
from pullback.errors import CheckpointError
from pullback.serialization import UnsafeGlobalError

CALLS: list[str] = []


def scale(x: Any) -> Any:
    """A module-level function objects may hold (stored by name)."""
    return x * 2


class Config:
    """A plain object with every kind of attribute a checkpoint holds."""

    def __init__(self) -> None:
        self.name = "tiny"
        self.sizes = [1, 2, (3, 4)]
        self.options = {"dropout": 0.1, "bias": None, 3: True}
        self.ordered = OrderedDict([("b", 1), ("a", 2)])
        self.tags = {"x", "y"}
        self.frozen = frozenset({1, 2})
        self.dtype = pullback.float64
        self.device = pullback.Device("cpu")
        self.weights = pullback.arange(6.0).reshape(2, 3)
        self.array = np.array([1, 2], dtype=np.int16)
        self.activation = scale
        self.kind = Config


class Noisy:
    """Every hook an unpickler would call records itself: none may run on load."""

    def __init__(self) -> None:
        CALLS.append("__init__")
        self.value = 1

    def __setstate__(self, state: dict[str, Any]) -> None:
        CALLS.append("__setstate__")

    def __setattr__(self, name: str, value: Any) -> None:
        CALLS.append("__setattr__")
        object.__setattr__(self, name, value)

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            CALLS.append("__getattribute__")
        return object.__getattribute__(self, name)


class WithNew:
    def __new__(cls) -> WithNew:
        CALLS.append("__new__")
        return super().__new__(cls)


class WithFinalizer:
    def __del__(self) -> None:
        CALLS.append("__del__")


class Slotted:
    __slots__ = ("x",)


class Node:
    def __init__(self) -> None:
        self.children: list[Node] = []
        self.parent: Node | None = None


def _round_trip(obj: Any, **kwargs: Any) -> Any:
    buffer = io.BytesIO()
    pullback.save(obj, buffer)
    buffer.seek(0)
    return pullback.load(buffer, **kwargs)


def craft(obj: Any, edit: Callable[[Any], Any]) -> bytes:
    """The bytes of ``pullback.save(obj)`` with its JSON structure changed in place by ``edit``:
    a hand-made, hostile file."""
    buffer = io.BytesIO()
    pullback.save(obj, buffer)
    data = buffer.getvalue()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    structure = json.loads(header["__metadata__"]["pullback.structure"])
    edit(structure)
    header["__metadata__"]["pullback.structure"] = json.dumps(structure)
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data[8 + n:]


def _load(data: bytes, **kwargs: Any) -> Any:
    return pullback.load(io.BytesIO(data), **kwargs)


@pytest.fixture(autouse=True)
def _clean() -> Any:
    CALLS.clear()
    yield
    pullback.serialization.clear_safe_globals()


def test_a_plain_object_round_trips_with_every_kind_of_attribute() -> None:
    config = Config()
    with pullback.serialization.safe_globals([Config, scale]):
        back = _round_trip(config)
    assert type(back) is Config and back is not config
    assert back.name == "tiny" and back.sizes == [1, 2, (3, 4)]
    assert back.options == {"dropout": 0.1, "bias": None, 3: True}
    assert type(back.ordered) is OrderedDict and list(back.ordered) == ["b", "a"]
    assert back.tags == {"x", "y"} and back.frozen == frozenset({1, 2})
    assert type(back.frozen) is frozenset
    assert back.dtype == pullback.float64 and back.device == pullback.Device("cpu")
    np.testing.assert_array_equal(back.weights.numpy(), config.weights.numpy())
    assert back.array.dtype == np.int16 and back.activation is scale and back.kind is Config


def test_a_class_outside_the_allow_list_is_refused_with_pytorchs_message() -> None:
    buffer = io.BytesIO()
    pullback.save(Config(), buffer)
    name = f"{__name__}.Config"
    buffer.seek(0)
    with pytest.raises(UnsafeGlobalError) as info:
        pullback.load(buffer)
    message = str(info.value)
    assert "Weights only load failed" in message
    assert f"Unsupported global: GLOBAL {name} was not an allowed global by default" in message
    assert f"`torch.serialization.add_safe_globals([{name}])`" in message
    assert f"`torch.serialization.safe_globals([{name}])` context manager" in message
    assert isinstance(info.value, CheckpointError) and isinstance(info.value, ValueError)
    buffer.seek(0)
    with pytest.raises(UnsafeGlobalError, match=f"GLOBAL {__name__}.scale"):  # the function
        with pullback.serialization.safe_globals([Config]):
            pullback.load(buffer)


def test_add_safe_globals_lasts_and_safe_globals_only_inside_its_block() -> None:
    with pullback.serialization.safe_globals([Node]):
        assert Node in pullback.serialization.get_safe_globals()
    assert Node not in pullback.serialization.get_safe_globals()
    pullback.serialization.add_safe_globals([Node, (Config, "old.place.Config")])
    assert pullback.serialization.get_safe_globals() == [Node, Config]
    renamed = craft(Config(), lambda s: s.__setitem__("class", "old.place.Config"))
    with pullback.serialization.safe_globals([scale, Config]):  # Config.kind names it too
        assert type(_load(renamed)) is Config  # found under the name the file gives it
    pullback.serialization.clear_safe_globals()
    assert pullback.serialization.get_safe_globals() == []


def test_the_allow_list_takes_what_pytorchs_does() -> None:
    with pytest.raises(TypeError, match="not a class or function"):
        pullback.serialization.add_safe_globals([3])
    with pytest.raises(TypeError, match="tuple entry"):
        pullback.serialization.add_safe_globals([(Config,)])


def test_weights_only_false_rebuilds_imported_classes_but_imports_nothing(capsys: Any) -> None:
    config = Config()
    back = _round_trip(config, weights_only=False)
    assert type(back) is Config and back.activation is scale
    assert "this" not in sys.modules  # "import this" prints the Zen of Python
    hostile = craft(Node(), lambda s: s.__setitem__("class", "this.Zen"))
    with pytest.raises(CheckpointError, match="this.Zen is not defined in this process"):
        _load(hostile, weights_only=False)
    assert "this" not in sys.modules and capsys.readouterr().out == ""
    with pytest.raises(UnsafeGlobalError, match="GLOBAL this.Zen"):
        _load(hostile)
    assert "this" not in sys.modules


def test_no_method_of_a_rebuilt_class_runs() -> None:
    noisy = Noisy()
    CALLS.clear()
    with pullback.serialization.safe_globals([Noisy]):
        back = _round_trip(noisy)
    assert type(back) is Noisy and object.__getattribute__(back, "value") == 1
    assert CALLS == []  # no __init__, __setstate__, __setattr__ or __getattribute__


@pytest.mark.parametrize("cls,what", [(WithNew, "__new__"), (WithFinalizer, "__del__")])
def test_classes_with_their_own_new_or_finalizer_are_not_stored_or_rebuilt(cls: type,
                                                                          what: str) -> None:
    with pytest.raises(CheckpointError, match=f"cannot store a {cls.__name__}.*{what}"):
        pullback.save(cls(), io.BytesIO())
    CALLS.clear()
    hostile = craft(Node(), lambda s: s.__setitem__("class", f"{__name__}.{cls.__name__}"))
    with pullback.serialization.safe_globals([cls]):
        with pytest.raises(CheckpointError, match=f"{cls.__name__} at '<root>' is not a class"):
            _load(hostile)
    assert CALLS == []


def test_slots_and_local_classes_are_refused_when_saving() -> None:
    with pytest.raises(CheckpointError, match="cannot store a Slotted at 'x'.*__slots__"):
        pullback.save({"x": Slotted()}, io.BytesIO())

    class Local:
        pass

    with pytest.raises(CheckpointError, match="Local at '<root>': only classes and functions "
                                              "defined at a module's top level"):
        pullback.save(Local(), io.BytesIO())


def test_shared_objects_and_cycles_come_back_as_one_object() -> None:
    root, child = Node(), Node()
    root.children = [child, child]
    child.parent = root
    with pullback.serialization.safe_globals([Node]):
        back = _round_trip(root)
    assert back.children[0] is back.children[1] and back.children[0].parent is back


def test_an_object_file_is_an_ordinary_safetensors_file_without_pickle() -> None:
    buffer = io.BytesIO()
    pullback.save(Config(), buffer)
    data = buffer.getvalue()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    assert b"\x80\x04" not in data[:8 + n]
    assert {k for k in header if k != "__metadata__"} == {"weights", "array"}
    structure = json.loads(header["__metadata__"]["pullback.structure"])
    assert structure["class"] == f"{__name__}.Config"
    assert structure["state"]["activation"] == {"__global__": f"{__name__}.scale"}


@pytest.mark.parametrize("edit,message", [
    (lambda s: s.__setitem__("class", "os.system"), "GLOBAL os.system"),
    (lambda s: s.__setitem__("class", "subprocess.Popen"), "GLOBAL subprocess.Popen"),
    (lambda s: s["state"].__setitem__("children", {"__global__": "builtins.eval"}),
     "GLOBAL builtins.eval"),
    (lambda s: s.__setitem__("class", 7), "malformed class name 7"),
], ids=["function-as-class", "popen", "eval-as-attribute", "class-not-a-name"])
def test_crafted_names_are_refused_with_a_typed_error(edit: Any, message: str) -> None:
    with pullback.serialization.safe_globals([Node]):
        with pytest.raises(CheckpointError, match=message):
            _load(craft(Node(), edit))


@pytest.mark.parametrize("edit,message", [
    (lambda s: s.__setitem__("state", [1, 2]), "attributes of .*Node at '<root>' are list"),
    (lambda s: s["state"].__setitem__("parent", {"__ref__": "object:nowhere"}),
     "reference 'object:nowhere'"),
    (lambda s: s["state"].__setitem__("parent", {"__object__": "object:<root>",
                                                 "class": f"{__name__}.Node", "state": {}}),
     "repeated object key"),
    (lambda s: s["state"].__setitem__("parent", {"__dtype__": "evil"}), "unknown dtype name"),
    (lambda s: s["state"].__setitem__("parent", {"__dtype__": ["float32"]}),
     "malformed dtype"),
    (lambda s: s["state"].__setitem__("parent", {"__set__": [[1], [2]]}), "unhashable"),
    (lambda s: s["state"].__setitem__("parent", {"__ordered_dict__": [[None, 1]]}),
     "malformed OrderedDict"),
    (lambda s: s["state"].__setitem__("parent", {"__frozenset__": 5}), "malformed __frozenset"),
], ids=["state-not-a-dict", "dangling-ref", "repeated-key", "dtype-name", "dtype-type",
        "set-of-lists", "ordered-dict-key", "frozenset-not-a-list"])
def test_crafted_values_are_refused_with_a_typed_error(edit: Any, message: str) -> None:
    with pullback.serialization.safe_globals([Node]):
        with pytest.raises(CheckpointError, match=message):
            _load(craft(Node(), edit))


def test_a_crafted_device_is_a_device_error() -> None:
    edit = lambda s: s["state"].__setitem__("parent", {"__device__": "nowhere:3"})  # noqa: E731
    with pullback.serialization.safe_globals([Node]):
        with pytest.raises(pullback.DeviceError):
            _load(craft(Node(), edit))


# -- Modules (pullback.nn): the registries they are given are checked ----------------------------

@pytest.mark.parametrize("field,value,message", [
    ("_parameters", [1, 2], "'_parameters' is a list, not a OrderedDict"),
    ("training", "yes", "'training' is a str, not a bool"),
    ("_modules", None, "'_modules' is a NoneType"),
    ("_buffers", {"__ordered_dict__": [["b", 3]]}, r"_buffers\['b'\] is a int"),
    ("_forward_hooks", {"__ordered_dict__": [["1", 3]]}, "_forward_hooks holds something"),
])
def test_a_module_given_registries_of_the_wrong_type_is_refused(field: str, value: Any,
                                                                message: str) -> None:
    nn = pytest.importorskip("pullback.nn")

    def edit(structure: dict[str, Any]) -> None:
        structure["state"][field] = value

    with pytest.raises(CheckpointError, match=f"Linear at '<root>': .*{message}"):
        _load(craft(nn.Linear(2, 3), edit))


def test_a_module_missing_a_registry_is_refused() -> None:
    nn = pytest.importorskip("pullback.nn")
    def drop(structure: dict[str, Any]) -> None:
        del structure["state"]["_modules"]

    hostile = craft(nn.Linear(2, 3), drop)
    with pytest.raises(CheckpointError, match="attribute '_modules' is missing"):
        _load(hostile)


def test_a_parameter_slot_holding_a_plain_tensor_is_refused() -> None:
    nn = pytest.importorskip("pullback.nn")

    def plain_tensor(structure: dict[str, Any]) -> None:
        del structure["state"]["_parameters"]["__ordered_dict__"][0][1]["class"]

    with pytest.raises(CheckpointError,
                       match=r"_parameters\['weight'\] is a Tensor, not a Parameter"):
        _load(craft(nn.Linear(2, 3), plain_tensor))


def test_a_tensor_of_a_class_that_is_not_a_tensor_is_refused() -> None:
    nn = pytest.importorskip("pullback.nn")

    def not_a_tensor(structure: dict[str, Any]) -> None:
        weight = structure["state"]["_parameters"]["__ordered_dict__"][0][1]
        weight["class"] = "pullback.nn.modules.linear.Linear"

    with pytest.raises(CheckpointError, match="Linear is not a Tensor class"):
        _load(craft(nn.Linear(2, 3), not_a_tensor))


def test_a_user_module_needs_allowing_and_its_layers_do_not() -> None:
    nn = pytest.importorskip("pullback.nn")
    model = _user_model(nn)
    CALLS.clear()
    buffer = io.BytesIO()
    pullback.save(model, buffer)
    for _ in range(2):
        buffer.seek(0)
        with pytest.raises(UnsafeGlobalError, match=f"GLOBAL {__name__}.TwoLayers "):
            pullback.load(buffer)
    buffer.seek(0)
    with pullback.serialization.safe_globals([type(model)]):
        back = pullback.load(buffer)
    assert CALLS == []  # the model's __init__ did not run
    x = pullback.randn(4, 3)
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())


def _user_model(nn: Any) -> Any:
    global TwoLayers

    class TwoLayers(nn.Module):  # made at module level (so files can name it) once nn exists
        def __init__(self) -> None:
            super().__init__()
            CALLS.append("TwoLayers.__init__")
            self.first, self.second = nn.Linear(3, 5), nn.Linear(5, 2)

        def forward(self, x: Any) -> Any:
            return self.second(self.first(x).relu())

    TwoLayers.__qualname__ = "TwoLayers"
    return TwoLayers()
