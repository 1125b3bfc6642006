"""kiln: trace Python functions over tensors into staged graphs, bind weights by name, run them on
a reference interpreter and a JIT tier. The API follows Modular MAX (compilation.stage/compile) and
lucid (kiln.compile(module_or_fn, dynamic))."""

import os as _os

from . import _kiln
from ._kiln import has_jit
from ._kiln import (CPU, BufferLayout, Device, Dim, DType, Error, Session, StagedGraph, Tensor, TensorLayout,
                    ValuesAndIndices, from_dlpack, load_npy, load_safetensors, load_staged, parse_staged, save_npy,
                    save_safetensors)
from . import functional
from . import compilation
from ._jit import CompiledModule, JitFunction, compile
from . import nn
from . import debug

_kiln._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)

__all__ = ["CPU", "BufferLayout", "CompiledModule", "Device", "Dim", "DType", "Error", "JitFunction", "debug", "Session",
           "StagedGraph", "Tensor", "TensorLayout", "ValuesAndIndices", "compilation", "compile", "from_dlpack",
           "functional", "load_npy", "load_safetensors", "load_staged", "nn", "parse_staged", "save_npy",
           "save_safetensors"]
