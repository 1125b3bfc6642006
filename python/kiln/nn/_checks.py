"""Argument checks shared by the layers: torch's argument forms, and refusals by name."""

from .. import _kiln, _tree


def _unsupported(layer, argument, value, why):
    return _tree.error("unsupported", f"{layer}: {argument}={value!r} is not supported: {why}")


def _pair(layer, argument, value):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise _tree.error("spec", f"{layer}: {argument} is an int or a pair of ints, got {value!r}")


def _single(layer, argument, value):
    """torch's _single: an int, or a sequence of one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], int):
        return tuple(value)
    raise _tree.error("spec", f"{layer}: {argument} is an int or a sequence of one int, got {value!r}")


def _is_cpu(device):
    """A kiln Device, a torch.device or a string naming the CPU."""
    return device == _kiln.CPU() if isinstance(device, _kiln.Device) else str(device) in ("cpu", "cpu:0")


def _is_float32(dtype):
    """A kiln DType, a torch or numpy dtype or a string naming float32."""
    return str(dtype) in ("torch.float32", "float32", "DType.float32")


def _check_factory(layer, device, dtype):
    """torch's device and dtype arguments: kiln's layers are f32 on the CPU."""
    if device is not None and not _is_cpu(device):
        raise _unsupported(layer, "device", device, "kiln's layers live on the CPU")
    if dtype is not None and not _is_float32(dtype):
        raise _unsupported(layer, "dtype", dtype, "kiln's layers are created in float32 (load other dtypes "
                                                  "with load_state_dict)")


def _check_positive(layer, argument, value):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _tree.error("spec", f"{layer}: {argument} must be a positive int, got {value!r}")


def _check_padding_mode(layer, padding_mode):
    if padding_mode != "zeros":
        raise _unsupported(layer, "padding_mode", padding_mode, "kiln pads with zeros only")


def _static_size(layer, x, axis, why):
    size = x.shape[axis]
    if not isinstance(size, int):
        raise _unsupported(layer, "input", f"a symbolic axis {axis}", why)
    return size
