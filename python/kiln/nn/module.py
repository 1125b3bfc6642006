"""torch.nn.Module: parameters, buffers and submodules by name, the state_dict and load_state_dict."""

import collections

from .. import _kiln, _jit, _module_weights, _tree
from .. import functional as F
from ._checks import _is_cpu, _is_float32, _unsupported


def _is_tensor_like(value):
    return isinstance(value, _kiln.Tensor) or hasattr(value, "__dlpack__")


def _as_tensor(value):
    """A kiln Tensor sharing value's memory; torch tensors that require grad are detached first."""
    if not isinstance(value, _kiln.Tensor) and hasattr(value, "detach"):
        value = value.detach()
    return _kiln.Tensor(value)


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
        _module_weights.note_module_change()

    def register_parameter(self, name, param):
        """A parameter (None: declared but absent, as torch's bias=False)."""
        self._check_new_name(name, "parameter")
        self._forget(name)
        self._parameters[name] = None if param is None else _as_tensor(param)
        _module_weights.note_module_change()

    def register_buffer(self, name, tensor, persistent=True):
        """State that is not learned (running statistics). A non-persistent buffer is left out of
        state_dict and baked into a traced graph as a constant."""
        self._check_new_name(name, "buffer")
        self._forget(name)
        self._buffers[name] = None if tensor is None else _as_tensor(tensor)
        if not persistent:
            self._non_persistent_buffers.add(name)
        _module_weights.note_module_change()

    def add_module(self, name, module):
        self._check_new_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise _tree.error("spec", f"{type(self).__name__}.add_module('{name}'): expected a kiln.nn.Module, "
                                      f"got {type(module).__name__}")
        self._forget(name)
        self._modules[name] = module
        _module_weights.note_module_change()

    register_module = add_module

    def _pop_module(self, name):
        """Removes a submodule (for the containers), telling compiled callables that bound the tree."""
        module = self._modules.pop(name)
        _module_weights.note_module_change()
        return module

    def __setattr__(self, name, value):
        self._check_initialised(name)
        if isinstance(value, Module):
            self.add_module(name, value)
        elif name in self._buffers:
            self._buffers[name] = None if value is None else _as_tensor(value)
            _module_weights.note_module_change()
        elif name in self._modules and value is None:
            self._modules[name] = None
            _module_weights.note_module_change()
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
        """While kiln.compile traces, a weight read by name from the callable's session (a
        non-persistent buffer, not in the session, as a constant); otherwise the tensor itself."""
        weights = _jit.tracing_weights()
        if value is None or weights is None:
            return value
        if name in self._non_persistent_buffers:
            return F.constant(value)
        return F.constant_external(weights.weight_name(self, name), value.layout)

    def _set_prefixes(self, prefix=""):
        """Names each module by its dotted path from this one (the compiled root), for messages."""
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

    # Devices and dtypes ---------------------------------------------------------------------------

    def to(self, *args, **kwargs):
        """torch's to(device, dtype): accepted where the module already is (the CPU; float32 when
        every floating tensor is f32), refused by name otherwise. Returns self."""
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for value in args:
            if isinstance(value, _kiln.DType) or type(value).__name__ == "dtype":  # torch's or numpy's
                dtype = value
            else:
                device = value
        layer = f"{type(self).__name__}.to"
        if device is not None and not _is_cpu(device):
            raise _unsupported(layer, "device", device, "kiln's modules run on the CPU")
        if dtype is not None and not _is_float32(dtype):
            raise _unsupported(layer, "dtype", dtype, "kiln does not convert a module's tensors")
        if dtype is not None:
            self._check_all_float32(layer)
        return self

    def cpu(self):
        return self

    def float(self):
        """self, when every floating tensor is already f32 (kiln does not convert them)."""
        self._check_all_float32(f"{type(self).__name__}.float()")
        return self

    def _check_all_float32(self, what):
        floating = (_kiln.DType.float64, _kiln.DType.float16, _kiln.DType.bfloat16)
        for name, tensor in list(self.named_parameters()) + list(self.named_buffers()):
            if tensor.dtype in floating:
                raise _tree.error("unsupported", f"{what} is not supported: '{name}' is {tensor.dtype.name} and "
                                                 "kiln does not convert a module's tensors")

    def _refuse_conversion(self, method, why):
        raise _tree.error("unsupported", f"{type(self).__name__}.{method}() is not supported: {why}")

    def cuda(self, device=None):
        self._refuse_conversion("cuda", "kiln's modules run on the CPU")

    def half(self):
        self._refuse_conversion("half", "kiln does not convert a module's tensors")

    def bfloat16(self):
        self._refuse_conversion("bfloat16", "kiln does not convert a module's tensors")

    def double(self):
        self._refuse_conversion("double", "kiln does not convert a module's tensors")

    def requires_grad_(self, requires_grad=True):
        """Accepted as False (kiln's tensors never track gradients); True is refused."""
        if requires_grad:
            raise _unsupported(f"{type(self).__name__}.requires_grad_", "requires_grad", requires_grad,
                               "kiln computes no gradients")
        return self

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
        _module_weights.note_module_change()
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
