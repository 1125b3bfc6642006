"""PyTorch-style modules: torch.nn's constructor arguments, state_dict names and module API, so a
model written as torch and torchvision write it loads a torch state_dict unchanged (zero-copy).

Parameters and buffers are kiln Tensors held by name; when kiln.compile(module) traces, each one is
read as F.constant_external under its dotted name, so the graph binds it from the compiled module's
weights. kiln runs inference: modules start in training mode as torch's do, and a forward whose
training mode computes something else (dropout, batch statistics that update running ones) is
refused until .eval() is called. Argument values kiln cannot honour are refused by name."""

import collections
import copy
import math

from . import _kiln
from . import _jit
from . import _tree
from . import functional as F

__all__ = ["Module", "IncompatibleKeys", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Conv2d",
           "ConvTranspose2d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "MaxPool2d", "AvgPool2d",
           "AdaptiveAvgPool2d", "BatchNorm2d", "GroupNorm", "InstanceNorm2d", "LayerNorm", "RMSNorm", "Embedding",
           "Dropout", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "ReLU", "ReLU6",
           "GELU", "SiLU", "Sigmoid", "Tanh", "Hardsigmoid", "Hardswish", "LeakyReLU", "ELU", "Softplus", "Softmax",
           "LogSoftmax", "Flatten"]


def _is_tensor_like(value):
    return isinstance(value, _kiln.Tensor) or hasattr(value, "__dlpack__")


def _as_tensor(value):
    """A kiln Tensor sharing value's memory; torch tensors that require grad are detached first."""
    if not isinstance(value, _kiln.Tensor) and hasattr(value, "detach"):
        value = value.detach()
    return _kiln.Tensor(value)


def _unsupported(layer, argument, value, why):
    return _tree.error("unsupported", f"{layer}: {argument}={value!r} is not supported: {why}")


class IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns, as torch's: the names it lacked and the names it did not use."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


class Module:
    """torch.nn.Module: parameters, buffers and submodules by name, in registration order."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_ignored_when_loading", set())
        object.__setattr__(self, "_prefix", "")

    # Registration --------------------------------------------------------------------------------

    def _check_initialised(self, name):
        if "_parameters" not in self.__dict__:
            raise _tree.error("spec", f"{type(self).__name__}.__init__ must call super().__init__() before "
                                      f"setting '{name}'")

    def _check_new_name(self, name, what):
        self._check_initialised(name)
        if not isinstance(name, str) or not name or "." in name:
            raise _tree.error("spec", f"{type(self).__name__}: a {what} name is a non-empty string without dots, "
                                      f"got {name!r}")

    def _forget(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self._non_persistent_buffers.discard(name)
        self.__dict__.pop(name, None)

    def register_parameter(self, name, param):
        """A parameter (None: declared but absent, as torch's bias=False)."""
        self._check_new_name(name, "parameter")
        self._forget(name)
        self._parameters[name] = None if param is None else _as_tensor(param)

    def register_buffer(self, name, tensor, persistent=True):
        """State that is not learned (running statistics). A non-persistent buffer is left out of
        state_dict and baked into a traced graph as a constant."""
        self._check_new_name(name, "buffer")
        self._forget(name)
        self._buffers[name] = None if tensor is None else _as_tensor(tensor)
        if not persistent:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        self._check_new_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise _tree.error("spec", f"{type(self).__name__}.add_module('{name}'): expected a kiln.nn.Module, "
                                      f"got {type(module).__name__}")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        self._check_initialised(name)
        if isinstance(value, Module):
            self.add_module(name, value)
        elif name in self._buffers:
            self._buffers[name] = None if value is None else _as_tensor(value)
        elif name in self._modules and value is None:
            self._modules[name] = None
        elif _is_tensor_like(value) or (name in self._parameters and value is None):
            self.register_parameter(name, value)  # kiln has no Parameter type: a tensor attribute is one
        else:
            self._forget(name)
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers"):
            tensors = self.__dict__.get(table, {})
            if name in tensors:
                return self._tensor_for_forward(name, tensors[name])
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._parameters or name in self._buffers or name in self._modules:
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def _tensor_for_forward(self, name, value):
        """While a compiled module traces, a weight read by name from its session (a non-persistent
        buffer, not in the session, as a constant); otherwise the tensor itself."""
        if value is None or not _jit.tracing_module():
            return value
        if name in self._non_persistent_buffers:
            return F.constant(value)
        return F.constant_external(self._prefix + name, value.layout)

    def _set_prefixes(self, prefix=""):
        """Names each module's parameters by their dotted path from this one (the compiled root)."""
        object.__setattr__(self, "_prefix", prefix)
        for name, child in self._modules.items():
            if child is not None:
                child._set_prefixes(f"{prefix}{name}.")

    # Calling and modes ---------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def train(self, mode=True):
        """Sets training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise _tree.error("spec", f"train(mode): mode must be a bool, got {type(mode).__name__}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def _describe(self):
        """"module 'layer1.0.bn1' (BatchNorm2d)" once compiled (named), else "BatchNorm2d"."""
        name = self._prefix.rstrip(".")
        return f"module '{name}' ({type(self).__name__})" if name else type(self).__name__

    def _training_refusal(self):
        """What this module's forward would do in training mode that kiln cannot, or None."""
        return None

    def _refuse_training(self):
        what = self._training_refusal() if self.training else None
        if what is not None:
            raise _tree.error("unsupported", f"{self._describe()} is in training mode, where {what}; kiln runs "
                                             "inference only: call .eval() on the model first")

    def _check_modes(self):
        """Refuses a call while any module is in a training mode kiln cannot run: a compiled module's
        graph, traced in eval mode, would otherwise run as if in eval after a later .train()."""
        for module in self.modules():
            module._refuse_training()

    # The tree ------------------------------------------------------------------------------------

    def named_children(self):
        for name, module in self._modules.items():
            if module is not None:
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module and every submodule, depth first, by dotted name ("" for this one)."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self.named_children():
            yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def _named_tensors(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix,
                                                                                                          self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_tensors("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        return [value for _, value in self.named_parameters(recurse=recurse)]

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_tensors("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        return [value for _, value in self.named_buffers(recurse=recurse)]

    def get_submodule(self, target):
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule '{part}' (in '{target}')")
            module = child
        return module

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # State ---------------------------------------------------------------------------------------

    def _state_entries(self, prefix=""):
        """(full name, owning module, local name) of every parameter and persistent buffer, as torch
        lists them: a module's own parameters, then its buffers, then its children's."""
        for name, value in self._parameters.items():
            if value is not None:
                yield prefix + name, self, name
        for name, value in self._buffers.items():
            if value is not None and name not in self._non_persistent_buffers:
                yield prefix + name, self, name
        for name, module in self.named_children():
            yield from module._state_entries(f"{prefix}{name}.")

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """Every parameter and persistent buffer by dotted name: the tensors themselves, not copies."""
        state = collections.OrderedDict() if destination is None else destination
        for name, module, local in self._state_entries(prefix):
            table = module._parameters if local in module._parameters else module._buffers
            state[name] = table[local]
        return state

    def _ignored_names(self, prefix=""):
        for name in self._ignored_when_loading:
            yield prefix + name
        for name, module in self.named_children():
            yield from module._ignored_names(f"{prefix}{name}.")

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Replaces parameters and buffers by the tensors of state_dict, shared without a copy (so
        assign makes no difference). Each must keep its dtype and shape. With strict, names missing
        from state_dict or unknown to the module are errors too; all problems are reported at once
        and nothing is replaced when there is one. PyTorch state that inference never reads
        (BatchNorm's num_batches_tracked) is accepted and dropped. Returns IncompatibleKeys."""
        entries = {name: (module, local) for name, module, local in self._state_entries()}
        ignored = set(self._ignored_names())
        missing = [name for name in entries if name not in state_dict]
        unexpected = [name for name in state_dict if name not in entries and name not in ignored]
        problems = []
        if strict and missing:
            problems.append(f"missing {missing}")
        if strict and unexpected:
            problems.append(f"unexpected {unexpected}")
        replacements = []
        for name, value in state_dict.items():
            if name not in entries:
                continue
            module, local = entries[name]
            current = module._parameters[local] if local in module._parameters else module._buffers[local]
            tensor = _as_tensor(value)
            if tensor.layout != current.layout:
                problems.append(f"'{name}' is {current.layout}, got {tensor.layout} (kiln shares the tensor without "
                                "a copy: convert it first)")
            replacements.append((module, local, tensor))
        if problems:
            raise _tree.error("weight", f"load_state_dict of {type(self).__name__}: " + "; ".join(problems))
        for module, local, tensor in replacements:
            table = module._parameters if local in module._parameters else module._buffers
            table[local] = tensor
        return IncompatibleKeys(missing, unexpected)

    # Printing ------------------------------------------------------------------------------------

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(module).replace("\n", "\n  ") for name, module in self.named_children()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = [extra] if extra else []
        return f"{type(self).__name__}(\n  " + "\n  ".join(head + lines) + "\n)"


# Containers ----------------------------------------------------------------------------------------


def _index(container, index):
    if not isinstance(index, int):
        raise TypeError(f"{type(container).__name__} indices must be integers or slices, not {type(index).__name__}")
    size = len(container)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of range for {type(container).__name__} of length {size}")
    return index % size


class ModuleList(Module):
    """Submodules named "0", "1", ... in order; no forward of its own (the parent iterates them)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_index(self, index))]

    def __setitem__(self, index, module):
        self.add_module(str(_index(self, index)), module)

    def __delitem__(self, index):
        modules = list(self._modules.values())
        del modules[index if isinstance(index, slice) else _index(self, index)]
        self._modules.clear()
        for module in modules:
            self.append(module)

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for m in modules:
            self.append(m)


class Sequential(Module):
    """torch.nn.Sequential(*modules) or Sequential(OrderedDict(name=module)): feeds each output to the
    next module."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(collections.OrderedDict(items[index]))
        return items[_index(self, index)][1]

    def __setitem__(self, index, module):
        self.add_module(list(self._modules)[_index(self, index)], module)

    def __delitem__(self, index):
        keys = list(self._modules)
        for key in keys[index] if isinstance(index, slice) else [keys[_index(self, index)]]:
            del self._modules[key]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleDict(Module):
    """Submodules by name, in insertion order; no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def __contains__(self, key):
        return key in self._modules

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        for key, module in (modules.items() if hasattr(modules, "items") else modules):
            self.add_module(key, module)

    def pop(self, key):
        return self._modules.pop(key)

    def clear(self):
        self._modules.clear()


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


# Argument checks -----------------------------------------------------------------------------------


def _pair(layer, argument, value):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise _tree.error("spec", f"{layer}: {argument} is an int or a pair of ints, got {value!r}")


def _check_factory(layer, device, dtype):
    """torch's device and dtype arguments: kiln's layers are f32 on the CPU."""
    on_cpu = device == _kiln.CPU() if isinstance(device, _kiln.Device) else str(device) in ("cpu", "cpu:0")
    if device is not None and not on_cpu:
        raise _unsupported(layer, "device", device, "kiln's layers live on the CPU")
    if dtype is not None and str(dtype) not in ("torch.float32", "float32", "DType.float32"):
        raise _unsupported(layer, "dtype", dtype, "kiln's layers are created in float32 (load other dtypes "
                                                  "with load_state_dict)")


def _check_positive(layer, argument, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _tree.error("spec", f"{layer}: {argument} must be a positive int, got {value!r}")


def _check_padding_mode(layer, padding_mode):
    if padding_mode != "zeros":
        raise _unsupported(layer, "padding_mode", padding_mode, "kiln pads with zeros only")


def _uniform(shape, fan_in, seed):
    """torch's default Linear and Conv init range, ±1/sqrt(fan_in), from a fixed seed."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return _kiln.Tensor.rand(list(shape), seed, -bound, bound)


def _static_size(layer, x, axis, why):
    size = x.shape[axis]
    if not isinstance(size, int):
        raise _unsupported(layer, "input", f"a symbolic axis {axis}", why)
    return size


# Linear and convolutions -----------------------------------------------------------------------------


class Linear(Module):
    """y = x @ weight.T + bias; weight [out_features, in_features]. seed (kiln's) picks the init."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, seed=0):
        super().__init__()
        _check_factory("Linear", device, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.weight = _uniform([out_features, in_features], in_features, seed)
        self.register_parameter("bias", _uniform([out_features], in_features, seed + 1) if bias else None)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Conv2d(Module):
    """NCHW; weight [out_channels, in_channels / groups, kh, kw], bias [out_channels]. padding is an
    int, a pair, "valid" or "same" (stride 1); zero padding only."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _check_factory("Conv2d", device, dtype)
        _check_padding_mode("Conv2d", padding_mode)
        for argument, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            _check_positive("Conv2d", argument, value)
        if in_channels % groups or out_channels % groups:
            raise _tree.error("spec", f"Conv2d: in_channels {in_channels} and out_channels {out_channels} must be "
                                      f"divisible by groups {groups}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _pair("Conv2d", "kernel_size", kernel_size)
        self.stride = _pair("Conv2d", "stride", stride)
        self.dilation = _pair("Conv2d", "dilation", dilation)
        self.padding = padding if isinstance(padding, str) else _pair("Conv2d", "padding", padding)
        self._pads = self._explicit_padding(padding)
        fan_in = in_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        self.weight = _uniform([out_channels, in_channels // groups, *self.kernel_size], fan_in, 3)
        self.register_parameter("bias", _uniform([out_channels], fan_in, 4) if bias else None)

    def _explicit_padding(self, padding):
        """(top, bottom, left, right) for the string forms; None when padding is a pair."""
        if not isinstance(padding, str):
            return None
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise _unsupported("Conv2d", "padding", padding, 'padding is an int, a pair, "valid" or "same"')
        if self.stride != (1, 1):
            raise _unsupported("Conv2d", "padding", padding, f"torch allows it only with stride 1, got {self.stride}")
        pads = []
        for k, d in zip(self.kernel_size, self.dilation):
            total = d * (k - 1)
            pads += [total // 2, total - total // 2]  # torch puts the odd one at the end
        return tuple(pads)

    def forward(self, input):
        if self._pads is None:
            return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        top, bottom, left, right = self._pads
        if top == bottom and left == right:
            return F.conv2d(input, self.weight, self.bias, self.stride, (top, left), self.dilation, self.groups)
        padded = F.pad(input, [0, 0, 0, 0, top, bottom, left, right])
        return F.conv2d(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, groups={self.groups}")


class ConvTranspose2d(Module):
    """NCHW; weight [in_channels, out_channels / groups, kh, kw], bias [out_channels]; zero padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _check_factory("ConvTranspose2d", device, dtype)
        _check_padding_mode("ConvTranspose2d", padding_mode)
        for argument, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            _check_positive("ConvTranspose2d", argument, value)
        if in_channels % groups or out_channels % groups:
            raise _tree.error("spec", f"ConvTranspose2d: in_channels {in_channels} and out_channels {out_channels} "
                                      f"must be divisible by groups {groups}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _pair("ConvTranspose2d", "kernel_size", kernel_size)
        self.stride = _pair("ConvTranspose2d", "stride", stride)
        self.padding = _pair("ConvTranspose2d", "padding", padding)
        self.output_padding = _pair("ConvTranspose2d", "output_padding", output_padding)
        self.dilation = _pair("ConvTranspose2d", "dilation", dilation)
        fan_in = out_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        self.weight = _uniform([in_channels, out_channels // groups, *self.kernel_size], fan_in, 3)
        self.register_parameter("bias", _uniform([out_channels], fan_in, 4) if bias else None)

    def forward(self, input, output_size=None):
        if output_size is not None:
            raise _unsupported("ConvTranspose2d.forward", "output_size", output_size,
                               "set output_padding in the constructor instead")
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


# Resampling and pooling ------------------------------------------------------------------------------


class Upsample(Module):
    """NCHW nearest or bilinear resampling, by size or scale_factor (exactly one)."""

    _modes = ("nearest", "bilinear")

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        name = type(self).__name__
        if mode not in self._modes:
            raise _unsupported(name, "mode", mode, f"kiln resamples with {' or '.join(self._modes)}")
        if align_corners is not None and mode == "nearest":
            raise _unsupported(name, "align_corners", align_corners, "as in torch, only the interpolating modes "
                                                                     "take it")
        if (size is None) == (scale_factor is None):
            raise _tree.error("spec", f"{name}: give exactly one of size and scale_factor")
        self.size = None if size is None else _pair(name, "size", size)
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = bool(align_corners)
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        if self.size is not None:
            return F.interpolate(input, self.size, None, self.mode, self.align_corners)
        scales = (list(self.scale_factor) if isinstance(self.scale_factor, (tuple, list))
                  else [float(self.scale_factor)] * 2)
        if not self.recompute_scale_factor:
            return F.interpolate(input, None, scales, self.mode, self.align_corners)
        # torch then maps coordinates by in / out, which is what giving the size does.
        why = "recompute_scale_factor needs static spatial sizes"
        size = [math.floor(_static_size("Upsample", input, axis, why) * s) for axis, s in zip((-2, -1), scales)]
        return F.interpolate(input, size, None, self.mode, self.align_corners)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", align_corners=True)


def _check_pool_options(layer, ceil_mode, dilation=1, return_indices=False):
    if ceil_mode:
        raise _unsupported(layer, "ceil_mode", ceil_mode, "kiln's pooling rounds the output size down")
    if dilation not in (1, (1, 1), [1, 1]):
        raise _unsupported(layer, "dilation", dilation, "kiln's pooling windows are dense")
    if return_indices:
        raise _unsupported(layer, "return_indices", return_indices, "kiln's pooling returns the values only")


class MaxPool2d(Module):
    """NCHW max pooling; padding never wins the max. stride defaults to kernel_size."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        _check_pool_options("MaxPool2d", ceil_mode, dilation, return_indices)
        self.kernel_size = _pair("MaxPool2d", "kernel_size", kernel_size)
        self.stride = self.kernel_size if stride is None else _pair("MaxPool2d", "stride", stride)
        self.padding = _pair("MaxPool2d", "padding", padding)

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding)


class AvgPool2d(Module):
    """NCHW average pooling; count_include_pad (torch's default True) divides by the whole window."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        _check_pool_options("AvgPool2d", ceil_mode)
        if divisor_override is not None:
            raise _unsupported("AvgPool2d", "divisor_override", divisor_override,
                               "kiln divides by the window (count_include_pad says which)")
        self.kernel_size = _pair("AvgPool2d", "kernel_size", kernel_size)
        self.stride = self.kernel_size if stride is None else _pair("AvgPool2d", "stride", stride)
        self.padding = _pair("AvgPool2d", "padding", padding)
        self.count_include_pad = bool(count_include_pad)

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.count_include_pad)


class AdaptiveAvgPool2d(Module):
    """NCHW adaptive average pooling to output_size: an int, or a pair whose None keeps that size."""

    def __init__(self, output_size):
        super().__init__()
        if isinstance(output_size, (tuple, list)) and len(output_size) == 2 and None in output_size:
            self.output_size = tuple(output_size)
        else:
            self.output_size = _pair("AdaptiveAvgPool2d", "output_size", output_size)

    def forward(self, input):
        why = "output_size None keeps the input's size, which must be static"
        size = [_static_size("AdaptiveAvgPool2d", input, axis, why) if s is None else s
                for axis, s in zip((-2, -1), self.output_size)]
        return F.adaptive_avg_pool2d(input, size)


# Normalisation ------------------------------------------------------------------------------------


class BatchNorm2d(Module):
    """NCHW batch normalisation. With track_running_stats (the default), eval mode normalises with the
    buffers running_mean and running_var, and training mode (which would update them) is refused;
    without, both modes use the batch's statistics, as torch's. num_batches_tracked is accepted by
    load_state_dict and dropped (inference never reads it)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        _check_factory("BatchNorm2d", device, dtype)
        _check_positive("BatchNorm2d", "num_features", num_features)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", _kiln.Tensor.ones([num_features]) if affine else None)
        self.register_parameter("bias", _kiln.Tensor.zeros([num_features]) if affine else None)
        self.register_buffer("running_mean", _kiln.Tensor.zeros([num_features]) if track_running_stats else None)
        self.register_buffer("running_var", _kiln.Tensor.ones([num_features]) if track_running_stats else None)
        self._ignored_when_loading.add("num_batches_tracked")

    def _training_refusal(self):
        return "batch normalisation updates its running statistics" if self.track_running_stats else None

    def forward(self, input):
        if input.rank != 4:
            raise _tree.error("shape", f"{self._describe()}: expected an NCHW input of rank 4, got {input.shape}")
        if self.track_running_stats:
            self._refuse_training()
            mean, var = self.running_mean, self.running_var
        else:
            mean, var = F.mean(input, [0, 2, 3]), F.var(input, [0, 2, 3], correction=0)
        return F.batch_norm(input, mean, var, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, eps={self.eps}, affine={self.affine}"


class GroupNorm(Module):
    """Normalises each sample's groups of num_channels / num_groups channels; weight 1, bias 0."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        _check_factory("GroupNorm", device, dtype)
        _check_positive("GroupNorm", "num_groups", num_groups)
        _check_positive("GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise _tree.error("spec", f"GroupNorm: num_channels {num_channels} must be divisible by num_groups "
                                      f"{num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.register_parameter("weight", _kiln.Tensor.ones([num_channels]) if affine else None)
        self.register_parameter("bias", _kiln.Tensor.zeros([num_channels]) if affine else None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


class InstanceNorm2d(Module):
    """Normalises each sample's channels over H and W. With track_running_stats, eval mode uses the
    buffers running_mean and running_var (training mode, which updates them, is refused)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__()
        _check_factory("InstanceNorm2d", device, dtype)
        _check_positive("InstanceNorm2d", "num_features", num_features)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.register_parameter("weight", _kiln.Tensor.ones([num_features]) if affine else None)
        self.register_parameter("bias", _kiln.Tensor.zeros([num_features]) if affine else None)
        self.register_buffer("running_mean", _kiln.Tensor.zeros([num_features]) if track_running_stats else None)
        self.register_buffer("running_var", _kiln.Tensor.ones([num_features]) if track_running_stats else None)
        self._ignored_when_loading.add("num_batches_tracked")

    def _training_refusal(self):
        return "instance normalisation updates its running statistics" if self.track_running_stats else None

    def forward(self, input):
        unbatched = input.rank == 3
        x = F.unsqueeze(input, 0) if unbatched else input
        if x.rank != 4:
            raise _tree.error("shape", f"{self._describe()}: expected a CHW or NCHW input, got {input.shape}")
        if self.track_running_stats:
            self._refuse_training()
            y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
        else:
            y = F.instance_norm(x, self.weight, self.bias, self.eps)
        return F.squeeze(y, 0) if unbatched else y


def _normalized_shape(layer, normalized_shape):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    if not shape:
        raise _tree.error("spec", f"{layer}: normalized_shape needs at least one size")
    for size in shape:
        _check_positive(layer, "each size of normalized_shape", size)
    return tuple(shape)


def _over_trailing_axes(module, input, normalized_shape, norm, *weights):
    """norm(x, *weights) over the last axis, with the trailing normalized_shape axes made one."""
    if len(normalized_shape) == 1:
        return norm(input, *weights)
    shape = list(input.shape)
    kept = len(shape) - len(normalized_shape)
    if kept < 0 or tuple(shape[kept:]) != normalized_shape:
        raise _tree.error("shape", f"{module._describe()}: input {shape} does not end in normalized_shape "
                                   f"{list(normalized_shape)}")
    width = math.prod(normalized_shape)
    flat = [None if w is None else F.reshape(w, [width]) for w in weights]
    return F.reshape(norm(F.reshape(input, shape[:kept] + [width]), *flat), shape)


class LayerNorm(Module):
    """Normalises over the trailing normalized_shape axes; weight and bias of that shape."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        _check_factory("LayerNorm", device, dtype)
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", _kiln.Tensor.ones(list(self.normalized_shape)) if elementwise_affine
                                else None)
        self.register_parameter("bias", _kiln.Tensor.zeros(list(self.normalized_shape)) if elementwise_affine and bias
                                else None)

    def forward(self, input):
        return _over_trailing_axes(self, input, self.normalized_shape,
                                   lambda x, w, b: F.layer_norm(x, w, b, self.eps), self.weight, self.bias)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


# torch.finfo(dtype).eps: RMSNorm's eps when none is given.
_MACHINE_EPSILON = {_kiln.DType.float64: 2.0 ** -52, _kiln.DType.float16: 2.0 ** -10, _kiln.DType.bfloat16: 2.0 ** -7}


class RMSNorm(Module):
    """x / sqrt(mean(x², trailing axes) + eps) * weight; eps None is the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        _check_factory("RMSNorm", device, dtype)
        self.normalized_shape = _normalized_shape("RMSNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", _kiln.Tensor.ones(list(self.normalized_shape)) if elementwise_affine
                                else None)

    def forward(self, input):
        eps = self.eps if self.eps is not None else _MACHINE_EPSILON.get(input.dtype, 2.0 ** -23)
        return _over_trailing_axes(self, input, self.normalized_shape, lambda x, w: F.rms_norm(x, w, eps),
                                   self.weight)


# Embedding, dropout, attention ------------------------------------------------------------------------


class Embedding(Module):
    """weight [num_embeddings, embedding_dim], standard normal (row padding_idx zero); maps integer
    indices of any shape to indices.shape + [embedding_dim]."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        _check_factory("Embedding", device, dtype)
        _check_positive("Embedding", "num_embeddings", num_embeddings)
        _check_positive("Embedding", "embedding_dim", embedding_dim)
        if max_norm is not None:
            raise _unsupported("Embedding", "max_norm", max_norm, "kiln does not renormalise rows as it reads them")
        # scale_grad_by_freq, sparse and _freeze only shape gradients, which kiln never computes.
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise _tree.error("spec", f"Embedding: padding_idx {padding_idx} is outside [{-num_embeddings}, "
                                          f"{num_embeddings})")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        if _weight is not None:
            self.weight = _weight
        else:
            self.weight = self._initial_weight()

    def _initial_weight(self):
        weight = _kiln.Tensor.randn([self.num_embeddings, self.embedding_dim], 5)
        if self.padding_idx is None:
            return weight
        rows = F.arange(0.0, float(self.num_embeddings), 1.0, _kiln.DType.int64)
        is_padding = F.reshape(F.eq(rows, _kiln.Tensor(self.padding_idx)), [self.num_embeddings, 1])
        return F.masked_fill(weight, is_padding, 0.0)

    def forward(self, input):
        return F.embedding(input, self.weight)


class Dropout(Module):
    """The identity in eval mode; training mode with p > 0 (random zeroing) is refused."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise _tree.error("spec", f"Dropout: probability must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def _training_refusal(self):
        return f"dropout zeroes elements at random (p={self.p})" if self.p > 0 else None

    def forward(self, input):
        self._refuse_training()
        return input

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


def _additive_mask(mask, what):
    """torch's attention masks as one added to the scores: a bool mask's True is -inf (not attended)."""
    mask = mask if isinstance(mask, _kiln.Tensor) else _as_tensor(mask)
    if mask.dtype == _kiln.DType.bool:
        return F.masked_fill(F.cast(mask, _kiln.DType.float32) * 0.0, mask, float("-inf"))
    if mask.dtype != _kiln.DType.float32:
        raise _tree.error("dtype", f"MultiheadAttention: {what} is bool or f32, got {mask.dtype}")
    return mask


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: in_proj_weight [3E, E] (or q/k/v_proj_weight when kdim or vdim
    differ from E), in_proj_bias [3E], out_proj a Linear(E, E). Inputs [L, N, E] (query) and
    [S, N, E] (key, value), [N, L, E] with batch_first, or unbatched [L, E]. forward returns
    (output, attention weights or None) as torch's."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        _check_factory("MultiheadAttention", device, dtype)
        _check_positive("MultiheadAttention", "embed_dim", embed_dim)
        _check_positive("MultiheadAttention", "num_heads", num_heads)
        if embed_dim % num_heads:
            raise _tree.error("spec", f"MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads "
                                      f"{num_heads}")
        if add_bias_kv:
            raise _unsupported("MultiheadAttention", "add_bias_kv", add_bias_kv, "kiln has no bias_k/bias_v rows")
        if add_zero_attn:
            raise _unsupported("MultiheadAttention", "add_zero_attn", add_zero_attn, "kiln adds no zero key")
        if not 0.0 <= dropout <= 1.0:
            raise _tree.error("spec", f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _uniform([3 * embed_dim, embed_dim], embed_dim, 6)
        else:
            self.q_proj_weight = _uniform([embed_dim, embed_dim], embed_dim, 6)
            self.k_proj_weight = _uniform([embed_dim, self.kdim], self.kdim, 7)
            self.v_proj_weight = _uniform([embed_dim, self.vdim], self.vdim, 8)
        self.register_parameter("in_proj_bias", _kiln.Tensor.zeros([3 * embed_dim]) if bias else None)
        self.out_proj = Linear(embed_dim, embed_dim, bias)

    def _training_refusal(self):
        return f"attention weights are dropped at random (dropout={self.dropout})" if self.dropout > 0 else None

    def _projections(self, query, key, value):
        """q, k, v [N, *, E], each from its rows of the packed projection (one matmul for self-attention)."""
        E = self.embed_dim
        bias = self.in_proj_bias
        biases = [None] * 3 if bias is None else F.split(bias, [E, E, E], 0)
        if not self._qkv_same_embed_dim:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            return [F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]
        if query is key and key is value:
            return F.split(F.linear(query, self.in_proj_weight, bias), [E, E, E], -1)
        weights = F.split(self.in_proj_weight, [E, E, E], 0)
        return [F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases)]

    def _split_heads(self, x):
        """[N, L, E] -> [N, heads, L, head_dim]"""
        n, length = x.shape[0], x.shape[1]
        return F.permute(F.reshape(x, [n, length, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def _mask(self, attn_mask, key_padding_mask, n):
        """The additive mask [N or 1, heads or 1, L, S], or None."""
        mask = None
        if attn_mask is not None:
            mask = _additive_mask(attn_mask, "attn_mask")
            if mask.rank == 3:  # [N * heads, L, S]
                mask = F.reshape(mask, [n, self.num_heads, mask.shape[1], mask.shape[2]])
        if key_padding_mask is not None:
            padding = _additive_mask(key_padding_mask, "key_padding_mask")
            padding = F.reshape(padding, [n, 1, 1, padding.shape[-1]])
            mask = padding if mask is None else mask + padding
        return mask

    def _attend_with_weights(self, q, k, v, mask, causal):
        """softmax(q kᵀ / sqrt(head_dim) + mask) v, and the weights [N, heads, L, S] themselves."""
        scores = F.matmul(q, F.transpose(k, -2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if causal:  # key j > query i is not attended
            mask = F.triu(F.full([scores.shape[-2], scores.shape[-1]], float("-inf")), 1)
        weights = F.softmax(scores if mask is None else scores + mask, -1)
        return F.matmul(weights, v), weights

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        self._refuse_training()
        unbatched = query.rank == 2
        expected = "[seq, E]" if unbatched else "[batch, seq, E]" if self.batch_first else "[seq, batch, E]"
        for role, x in (("query", query), ("key", key), ("value", value)):
            if x.rank != (2 if unbatched else 3):
                raise _tree.error("shape", f"{self._describe()}: {role} must be {expected}, got {x.shape}")

        def batch_major(x):
            if unbatched:
                return F.unsqueeze(x, 0)
            return x if self.batch_first else F.transpose(x, 0, 1)

        same = query is key and key is value
        q_in = batch_major(query)
        k_in, v_in = (q_in, q_in) if same else (batch_major(key), batch_major(value))
        if unbatched and key_padding_mask is not None:
            key_padding_mask = F.unsqueeze(key_padding_mask, 0)
        q, k, v = (self._split_heads(t) for t in self._projections(q_in, k_in, v_in))
        n = q_in.shape[0]
        mask = self._mask(attn_mask, key_padding_mask, n)
        causal = is_causal and mask is None
        weights = None
        if need_weights:
            context, weights = self._attend_with_weights(q, k, v, mask, causal)
            if average_attn_weights:
                weights = F.mean(weights, 1)
            if unbatched:
                weights = F.squeeze(weights, 0)
        else:  # one op, which the JIT runs blockwise without the [L, S] weights
            context = F.scaled_dot_product_attention(q, k, v, mask, causal)
        context = F.transpose(context, 1, 2)  # [N, L, heads, head_dim]
        output = self.out_proj(F.reshape(context, [n, context.shape[1], self.embed_dim]))
        if unbatched:
            output = F.squeeze(output, 0)
        elif not self.batch_first:
            output = F.transpose(output, 0, 1)
        return output, weights


def _activation(name_or_fn):
    if callable(name_or_fn):
        return name_or_fn
    functions = {"relu": F.relu, "gelu": F.gelu}
    if name_or_fn not in functions:
        raise _unsupported("TransformerEncoderLayer", "activation", name_or_fn,
                           'it is "relu", "gelu" or a callable')
    return functions[name_or_fn]


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self_attn, linear1, linear2, norm1, norm2 and dropouts under
    torch's names; post-norm unless norm_first."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        _check_factory("TransformerEncoderLayer", device, dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clone(module):
    """A deep copy whose tensors are copies too (kiln Tensors do not pickle)."""
    memo = {}
    for m in module.modules():
        for table in (m._parameters, m._buffers):
            for value in table.values():
                if value is not None:
                    memo[id(value)] = value.clone()
    return copy.deepcopy(module, memo)


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers copies of encoder_layer in layers, then norm if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        _check_positive("TransformerEncoder", "num_layers", num_layers)
        self.layers = ModuleList([_clone(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


# Activations and reshaping ---------------------------------------------------------------------------


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace  # kiln never writes into its input; the result is the same

    def forward(self, input):
        return F.relu(input)


class ReLU6(ReLU):
    """min(max(x, 0), 6)."""

    def forward(self, input):
        return F.clamp(input, 0.0, 6.0)


class SiLU(ReLU):
    def forward(self, input):
        return F.silu(input)


class Hardsigmoid(ReLU):
    """relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardsigmoid(input)


class Hardswish(ReLU):
    """x * relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardswish(input)


class GELU(Module):
    """approximate: "none" (the erf form) or "tanh"."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise _tree.error("spec", f'GELU: approximate is "none" or "tanh", got {approximate!r}')
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)


def _softmax_dim(dim, rank):
    """torch's implicit softmax dim for dim=None (a legacy rule torch warns about)."""
    if dim is not None:
        return dim
    return 0 if rank in (0, 1, 3) else 1


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, _softmax_dim(self.dim, input.rank))


class LogSoftmax(Softmax):
    def forward(self, input):
        return F.log_softmax(input, _softmax_dim(self.dim, input.rank))


class Flatten(Module):
    """Joins axes start_dim..end_dim (inclusive) into one."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        shape = list(input.shape)
        rank = max(len(shape), 1)
        start, end = self.start_dim % rank, self.end_dim % rank
        if not (-rank <= self.start_dim < rank and -rank <= self.end_dim < rank) or start > end:
            raise _tree.error("shape", f"{self._describe()}: cannot flatten axes {self.start_dim}..{self.end_dim} of "
                                       f"an input of rank {len(shape)}")
        if start == end:
            return input
        return F.reshape(input, shape[:start] + [-1] + shape[end + 1:])
