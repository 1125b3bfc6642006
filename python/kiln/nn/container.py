"""Sequential, ModuleList and ModuleDict: modules holding modules by name."""

import collections

from .module import Module


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
            self._pop_module(key)

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
        self._pop_module(key)

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
        return self._pop_module(key)

    def clear(self):
        for key in list(self._modules):
            self._pop_module(key)
