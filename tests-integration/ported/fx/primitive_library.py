"""Composite operations kept as calls with wrap(), inlined afterwards and while tracing, after
pytorch/examples' fx/primitive_library.py (rewritten, same API use)."""

import torch
import torch.fx


def sigmoid_lowp(x):
    x = x.float()
    x = x.sigmoid()
    return x.half()


torch.fx.wrap(sigmoid_lowp)


def add_lowp(a, b):
    a, b = a.float(), b.float()
    c = a + b
    return c.half()


torch.fx.wrap(add_lowp)


class Foo(torch.nn.Module):
    def forward(self, x, y):
        x = sigmoid_lowp(x)
        y = sigmoid_lowp(y)
        return add_lowp(x, y)


traced = torch.fx.symbolic_trace(Foo())
print(traced.code)
x, y = torch.tensor([0.5, -1.0]), torch.tensor([2.0, 0.25])
expected = Foo()(x, y).tolist()


def inline_lowp_func(n):
    if n.op == "call_function" and n.target.__module__ == inline_lowp_func.__module__:
        tracer = torch.fx.proxy.GraphAppendingTracer(n.graph)
        with n.graph.inserting_before(n):
            proxy_args = torch.fx.node.map_arg(n.args, lambda a: torch.fx.Proxy(a, tracer))
            proxy_kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: torch.fx.Proxy(a, tracer))
            output_proxy = n.target(*proxy_args, **proxy_kwargs)
            n.replace_all_uses_with(output_proxy.node)
            n.graph.erase_node(n)


for node in traced.graph.nodes:
    if node.op == "call_function" and node.target is sigmoid_lowp:
        inline_lowp_func(node)
traced.recompile()
print(traced.code)
print(traced(x, y).tolist() == expected, traced(x, y).dtype == torch.float16)


class InliningTracer(torch.fx.Tracer):
    FNS_TO_INLINE = [add_lowp]

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        if kind == "call_function" and target in self.FNS_TO_INLINE:
            tracer = torch.fx.proxy.GraphAppendingTracer(self.graph)
            proxy_args = torch.fx.node.map_arg(args, lambda a: torch.fx.Proxy(a, tracer))
            proxy_kwargs = torch.fx.node.map_arg(kwargs, lambda a: torch.fx.Proxy(a, tracer))
            return target(*proxy_args, **proxy_kwargs).node
        return super().create_node(kind, target, args, kwargs, name, type_expr)


foo = Foo()
module = torch.fx.GraphModule(foo, InliningTracer().trace(foo))
print(module.code)
print(module(x, y).tolist() == expected)
