"""kiln: trace Python functions over tensors into staged graphs, bind weights by name, run them on
a reference interpreter and a JIT tier. The API follows Modular MAX (compilation.stage/compile) and
lucid (kiln.compile(module_or_fn, dynamic))."""

import os as _os

from . import _kiln
from ._kiln import has_accelerator_tier, has_jit
from ._kiln import (CPU, Accelerator, BufferLayout, Device, Dim, DType, Error, Session, StagedGraph, Tensor, TensorLayout,
                    ValuesAndIndices, from_dlpack, load_npy, load_safetensors, load_staged, parse_staged, save_npy,
                    save_safetensors)
from . import functional
from . import compilation
from ._jit import CompiledModule, JitFunction, compile
from . import nn
from . import debug



def devices():
    """The accelerators (Vulkan devices) kiln can run on, one dict each (index, name, type, driver,
    api, device_local_bytes, ...); empty where there is none (accelerator_unavailable_reason says why)."""
    return _kiln._accelerator_devices()[0]


def accelerator_count():
    """How many accelerators kiln can run on; 0 where this build or machine has none."""
    return len(devices())


def accelerator_unavailable_reason():
    """Why there is no accelerator (the build's tier, the Vulkan loader, a driver, a device), or ""."""
    return _kiln._accelerator_devices()[1]


_kiln._set_package_dir(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)

__all__ = ["Accelerator", "accelerator_count", "accelerator_unavailable_reason", "devices", "CPU", "BufferLayout", "CompiledModule", "Device", "Dim", "DType", "Error", "JitFunction", "debug", "Session",
           "StagedGraph", "Tensor", "TensorLayout", "ValuesAndIndices", "compilation", "compile", "from_dlpack",
           "functional", "load_npy", "load_safetensors", "load_staged", "nn", "parse_staged", "save_npy",
           "save_safetensors"]
