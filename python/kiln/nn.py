"""PyTorch-style modules. Parameters are kiln Tensors held by name; when kiln.compile(module)
traces, each one is read as F.constant_external under its dotted name, so the graph binds it from
the compiled module's weights."""

from . import _kiln
from . import _jit
from . import _tree
from . import functional as F

__all__ = ["Module", "Linear", "ReLU", "GELU", "Sequential"]


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_prefix", "")

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise _tree.error("spec", f"{type(self).__name__}.__init__ must call super().__init__() before "
                                      f"setting '{name}'")
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, _kiln.Tensor) or hasattr(value, "__dlpack__"):
            self._parameters[name] = _kiln.Tensor(value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        parameters = self.__dict__.get("_parameters", {})
        if name in parameters:
            value = parameters[name]
            if _jit.tracing_module():
                return F.constant_external(self._prefix + name, value.layout)
            return value
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def _set_prefixes(self, prefix=""):
        """Names each module's parameters by their dotted path from this one (the compiled root)."""
        object.__setattr__(self, "_prefix", prefix)
        for name, child in self._modules.items():
            child._set_prefixes(f"{prefix}{name}.")

    def named_modules(self, prefix=""):
        yield prefix.rstrip("."), self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}{name}.")

    def named_parameters(self):
        for prefix, module in self.named_modules():
            for name, value in module._parameters.items():
                yield (f"{prefix}.{name}" if prefix else name), value

    def parameters(self):
        return [value for _, value in self.named_parameters()]

    def state_dict(self):
        return dict(self.named_parameters())

    def load_state_dict(self, state):
        """Replaces parameters by name; every name must exist and keep its dtype and shape."""
        own = self.state_dict()
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise _tree.error("weight", f"load_state_dict: missing {missing}, unexpected {unexpected}")
        for name, value in state.items():
            tensor = _kiln.Tensor(value)
            if tensor.layout != own[name].layout:
                raise _tree.error("weight", f"load_state_dict: '{name}' is {own[name].layout}, got {tensor.layout}")
            *path, leaf = name.split(".")
            module = self
            for part in path:
                module = module._modules[part]
            module._parameters[leaf] = tensor


class Linear(Module):
    """torch.nn.Linear: y = x @ weight.T + bias, weight [out_features, in_features]."""

    def __init__(self, in_features, out_features, bias=True, seed=0):
        super().__init__()
        bound = 1.0 / max(in_features, 1) ** 0.5
        self.weight = _kiln.Tensor.rand([out_features, in_features], seed, -bound, bound)
        if bias:
            self.bias = _kiln.Tensor.rand([out_features], seed + 1, -bound, bound)
        self._has_bias = bias

    def forward(self, x):
        return F.linear(x, self.weight, self.bias if self._has_bias else None)


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)


class Sequential(Module):
    def __init__(self, *layers):
        super().__init__()
        for i, layer in enumerate(layers):
            setattr(self, str(i), layer)

    def forward(self, x):
        for layer in self._modules.values():
            x = layer(x)
        return x
