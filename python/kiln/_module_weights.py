"""The kiln.nn modules a compiled callable reads, bound by name as weights of its session.

While kiln.compile traces, a module's parameters and persistent buffers are read as
F.constant_external under dotted names registered here, so the graph reads the module's own memory
(no copy in the graph, one packed form per weight shared by every callable of the session). The
compiled module is bound under its state_dict names; any other module a traced function calls gets
a name of its own, unique in the process ("Sequential_0.2.weight"), so that callables sharing a
session (the default one) never overwrite each other's weights, and a module two callables call is
bound once. Before each call, sync() sets a new version of every name whose tensor the modules
replaced since (load_state_dict, attribute assignment), so the next call computes with it."""

import itertools
import threading
import weakref

_changes = itertools.count(1)
_generation = 0  # of the modules' tensors and submodules, process-wide
_root_names = weakref.WeakKeyDictionary()  # module -> its unique name as a root outside a compiled module
_root_numbers = itertools.count()


def note_module_change():
    """Called by kiln.nn.Module after it replaced a tensor or a submodule: callables re-sync."""
    global _generation
    _generation = next(_changes)


def _unique_root_name(module):
    name = _root_names.get(module)
    if name is None:
        name = f"{type(module).__name__}_{next(_root_numbers)}"
        _root_names[module] = name
    return name


class ModuleWeights:
    """The modules one compiled callable has read, and the tensors it has set in its session."""

    def __init__(self, session):
        self._session = session
        self._lock = threading.RLock()
        self._roots = []  # (prefix, module), in the order first read; a root's tree is named from it
        self._prefixes = {}  # id(module) -> prefix, for every module under a root (the first root wins)
        self._bound = {}  # weight name -> the tensor last set in the session under it
        self._synced = _generation

    def add_root(self, module, prefix):
        """Binds module and its submodules under prefix ("" for the compiled module itself)."""
        with self._lock:
            self._roots.append((prefix, module))
            self._name_tree(prefix, module)
            self._bind_state(prefix, module)

    def weight_name(self, module, name):
        """The session's name for module's tensor `name`; a module met first here becomes a root."""
        with self._lock:
            prefix = self._prefixes.get(id(module))
            if prefix is None:
                prefix = _unique_root_name(module) + "."
                self.add_root(module, prefix)
            return prefix + name

    def sync(self):
        """Sets a new version of each weight whose tensor changed on its module since the last call."""
        generation = _generation  # read first: a change made during the walk is caught next time
        if generation == self._synced:
            return
        with self._lock:
            self._prefixes.clear()
            for prefix, module in self._roots:
                self._name_tree(prefix, module)
                self._bind_state(prefix, module)
            self._synced = generation

    def _name_tree(self, prefix, root):
        for path, module in root.named_modules(remove_duplicate=False):
            self._prefixes.setdefault(id(module), f"{prefix}{path}." if path else prefix)

    def _bind_state(self, prefix, root):
        for name, tensor in root.state_dict().items():
            full = prefix + name
            if self._bound.get(full) is not tensor:
                self._session.set_weight(full, tensor)
                self._bound[full] = tensor
