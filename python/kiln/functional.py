"""Graph-building functions (kiln's F::): eager on concrete tensors, staged while tracing, each op
recording the Python line that called it."""

from . import _kiln

__all__ = [name for name in dir(_kiln.functional) if not name.startswith("_")]
globals().update({name: getattr(_kiln.functional, name) for name in __all__})
