"""A fuzz of ``pullback.compiler.import_onnx``: mutated ONNX models, each imported and run
once in a child process with a timeout and a memory cap.

Seeds are real models: the light model-zoo CNNs bundled with onnx and a spread of ONNX's
node-test models. Each case draws one seed and mutates either its bytes (flipped, truncated,
repeated or inserted bytes) or its protobuf fields (dims and element types of initializers,
raw data lengths, node inputs and outputs, operator names, attributes, node order, subgraph
nesting, external data locations). The importer may accept a mutant (it is then run on zero
inputs) or refuse it with ``OnnxImportError``; anything else is a finding: another exception
type, a crash of the process, or a hang.

    python tools/onnx_fuzz.py --cases 2000          # prints a JSON summary, exits 1 on findings
    python tools/onnx_fuzz.py --cases 100 --seed 7  # a short run (what the test runs)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import warnings
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child_pool import ChildPool  # noqa: E402

MEMORY_CAP = 2 << 30  # bytes of address space a child may map: a huge allocation fails


def seed_models(limit_nodes: int = 150) -> list[bytes]:
    """Serialized seeds: the light CNNs and every 12th node-test model."""
    import onnx
    from onnx.backend.test.loader import load_model_tests

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    seeds = [p.read_bytes() for p in sorted(light.glob("light_*.onnx"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    seeds += [c.model.SerializeToString() for c in cases[::12][:limit_nodes]]
    return seeds


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    kind = rng.choice(["flip", "truncate", "repeat", "insert", "zero"])
    if not data:
        return bytes(data)
    at = rng.randrange(len(data))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "truncate":
        del data[at:]
    elif kind == "repeat":
        chunk = data[at:at + rng.randint(1, 64)]
        data[at:at] = chunk * rng.randint(1, 4)
    elif kind == "insert":
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        data[at:at + rng.randint(1, 32)] = b"\0" * len(data[at:at + 32])
    return bytes(data)


_HUGE = [2 ** 40, -1, -(2 ** 40), 0, 2 ** 31, 2 ** 63 - 1]


def _mutate_proto(data: bytes, rng: random.Random) -> bytes:
    import onnx
    from onnx import TensorProto, helper

    model = onnx.ModelProto()
    model.ParseFromString(data)
    graph = model.graph
    choices = ["dims", "dtype", "raw", "input", "output", "op", "attr", "order", "drop",
               "graph_output", "nest", "external", "opset", "duplicate"]
    kind = rng.choice(choices)
    nodes, inits = graph.node, graph.initializer
    if kind == "dims" and inits:
        t = rng.choice(inits)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(_HUGE)
        else:
            t.dims.append(rng.choice(_HUGE))
    elif kind == "dtype" and inits:
        rng.choice(inits).data_type = rng.randrange(0, 30)
    elif kind == "raw" and inits:
        t = rng.choice(inits)
        t.raw_data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    elif kind == "input" and nodes:
        n = rng.choice(nodes)
        names = [o for m in nodes for o in m.output] + ["", "nowhere"]
        if n.input:
            n.input[rng.randrange(len(n.input))] = rng.choice(names)
        else:
            n.input.append(rng.choice(names))
    elif kind == "output" and nodes:
        n = rng.choice(nodes)
        if n.output:
            n.output[rng.randrange(len(n.output))] = rng.choice(
                [o for m in nodes for o in m.input] + [""])
    elif kind == "op" and nodes:
        rng.choice(nodes).op_type = rng.choice(
            ["Add", "Conv", "Reshape", "Loop", "If", "Gather", "NotAnOp", "Split", "Resize",
             "ConstantOfShape", "Expand", "Tile", "Range", "TopK", "Slice"])
    elif kind == "attr" and nodes:
        n = rng.choice(nodes)
        name = rng.choice(["axis", "kernel_shape", "pads", "strides", "perm", "to", "value",
                           "split", "group", "mode", "body", "then_branch"])
        value: Any = rng.choice([rng.randint(-5, 5), [rng.randint(-3, 3)] * rng.randint(0, 4),
                                 "nearest", 2 ** 40, [2 ** 40, 1],
                                 TensorProto(name="v", data_type=TensorProto.FLOAT,
                                             dims=[2 ** 33])])
        try:
            n.attribute.append(helper.make_attribute(name, value))
        except Exception:  # noqa: BLE001  (a value the helper cannot encode: skip it)
            pass
    elif kind == "order" and len(nodes) > 1:
        order = list(nodes)
        rng.shuffle(order)
        del nodes[:]
        nodes.extend(order)
    elif kind == "drop" and nodes:
        del nodes[rng.randrange(len(nodes))]
    elif kind == "graph_output":
        graph.output.add().CopyFrom(helper.make_tensor_value_info("missing", TensorProto.FLOAT,
                                                                  [1]))
    elif kind == "nest" and nodes:
        leaf = helper.make_graph([], "leaf", [], [])
        leaf.CopyFrom(graph)
        body = leaf
        for _ in range(rng.randint(1, 60)):  # one branch nests, the other is the leaf
            body = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=body,
                                                       else_branch=leaf)], "n", [], [])
        nodes.add().CopyFrom(body.node[0])
    elif kind == "external" and inits:
        t = rng.choice(inits)
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        entry = t.external_data.add()
        entry.key, entry.value = "location", rng.choice(
            ["../../etc/passwd", "/etc/passwd", "weights.bin", "", "a/../../b", "/dev/zero"])
    elif kind == "opset":
        for entry in model.opset_import:
            entry.version = rng.choice([0, 1, 7, 30, 2 ** 40])
    elif kind == "duplicate" and nodes:
        nodes.add().CopyFrom(rng.choice(nodes))
    return model.SerializeToString()


def mutant(seeds: list[bytes], case: int, seed: int) -> bytes:
    rng = random.Random(seed * 1_000_003 + case)
    data = rng.choice(seeds)
    for _ in range(rng.randint(1, 3)):
        try:
            data = _mutate_bytes(data, rng) if rng.random() < 0.35 else \
                _mutate_proto(data, rng)
        except Exception:  # noqa: BLE001  (bytes too broken to mutate as a proto: keep them)
            pass
    return data


def _inputs(net: Any, model: Any) -> list[Any]:
    """Zeros of each graph input's declared type, symbolic or absurd sizes taken as 1."""
    import numpy as np
    from onnx import helper

    by_name = {i.name: i for i in model.graph.input}
    arrays = []
    for name in net.input_names:
        if by_name[name].type.WhichOneof("value") != "tensor_type":
            arrays.append([])  # a sequence input: empty
            continue
        t = by_name[name].type.tensor_type
        dims = [d.dim_value if 0 < d.dim_value <= 64 else 1 for d in t.shape.dim]
        arrays.append(np.zeros(dims, helper.tensor_dtype_to_np_dtype(t.elem_type)))
    return arrays


def _worker(conn: Connection, seed: int, folder: str) -> None:
    import resource

    warnings.simplefilter("ignore")
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    import onnx

    import pullback as pb
    from pullback.compiler import OnnxImportError, import_onnx

    seeds = [p.read_bytes() for p in sorted(Path(folder).glob("*.onnx"))]
    conn.send("ready")
    while True:
        case = conn.recv()
        if case is None:
            return
        data = mutant(seeds, case, seed)
        try:
            net = import_onnx(data)
            model = onnx.ModelProto.FromString(data)
            with pb.no_grad():
                net(*_inputs(net, model))
            outcome, detail = "accepted", ""
        except OnnxImportError as exc:
            outcome, detail = "refused", str(exc)[:200]
        except Exception as exc:  # noqa: BLE001  (the finding this fuzz looks for)
            outcome, detail = "untyped", f"{type(exc).__name__}: {str(exc)[:300]}"
        conn.send((case, outcome, detail))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    args = parser.parse_args(argv)
    counts: Counter = Counter()
    findings: list[dict[str, Any]] = []

    def report(case: int, outcome: str, detail: str) -> None:
        counts[outcome] += 1
        if outcome not in ("accepted", "refused"):
            findings.append({"case": case, "outcome": outcome, "detail": detail})

    with tempfile.TemporaryDirectory() as folder:  # the seeds, built once for the workers
        for i, data in enumerate(seed_models()):
            (Path(folder) / f"seed{i:04d}.onnx").write_bytes(data)
        pool = ChildPool(args.jobs, _worker, (args.seed, folder), args.timeout)
        try:
            pool.run(list(range(args.cases)), report, report)
        finally:
            pool.close()
    summary = {"cases": args.cases, "seed": args.seed, **counts, "findings": findings[:50]}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    sys.exit(1 if main()["findings"] else 0)
