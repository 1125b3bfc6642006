from typing import Any, Optional, Sequence

from . import DType, Tensor

class StepState:
    index: int
    op: str
    location: str
    inputs: list[str]
    results: list[str]
    mlir: str
    function: str
    callee: str
    fused: bool
    done: bool

class StackFrame:
    function: str
    location: str

class TierDifference:
    op: str
    value: str
    fused_step: str
    narrowed: bool
    tier: str
    interp: Tensor
    jit: Tensor
    first_index: int
    max_abs_error: float
    max_rel_error: float
    def message(self) -> str: ...

class TensorSummary:
    dims: list[int]
    dtype: DType
    numel: int
    finite: int
    min: float
    max: float
    mean: float
    std: float
    nan: int
    pos_inf: int
    neg_inf: int

def summary(tensor: Tensor) -> TensorSummary: ...

class Stepper:
    def __init__(self, callable_: Any, inputs: Sequence[Any], tier: str = "interp", keep_all: bool = False) -> None: ...
    def break_on_kind(self, kind: str) -> None: ...
    def break_on_value(self, value: str) -> None: ...
    def break_on_line(self, file_and_line: str) -> None: ...
    def watch_nan(self) -> None: ...
    def watch_inf(self) -> None: ...
    def watch_range(self, value: str, lo: float, hi: float) -> None: ...
    def keep(self, value: str) -> None: ...
    def step(self) -> bool: ...
    def next(self) -> bool: ...
    def continue_(self) -> bool: ...
    def finish(self) -> list[Tensor]: ...
    def restart(self) -> None: ...
    @property
    def current(self) -> StepState: ...
    def where(self) -> list[StackFrame]: ...
    @property
    def stop_reason(self) -> str: ...
    def value(self, value: str) -> Tensor: ...

def compare_tiers(callable_: Any, inputs: Sequence[Any], tolerance: float = 1e-4, tier: str = "") -> Optional[TierDifference]: ...
