#!/usr/bin/python3
"""Writes torch_floor_division.inc: torch.floor_divide and torch.remainder on f32 and i32 pairs.
    /usr/bin/python3 tests/data/make_torch_floor_division.py > tests/data/torch_floor_division.inc
"""
import torch

A = [7.0, -7.0, 7.0, -7.0, 7.5, -7.5, 0.0, -0.0, 1.0, 5.0, 1e30, 3.0, float("inf"), float("nan"), 6.0]
B = [2.0, 2.0, -2.0, -2.0, 2.0, 0.5, 3.0, 3.0, -3.0, 0.0, 7.0, float("inf"), 2.0, 1.0, -3.0]
IA = [7, -7, 7, -7, 0, 1, -1, 9, -9, 2147483647]
IB = [2, 2, -2, -2, 3, -3, 3, 3, -3, 2]


def literal(x):
    if x != x:
        return "kNaN"
    if x in (float("inf"), float("-inf")):
        return ("-" if x < 0 else "") + "kInf"
    return repr(float(x)) + "f"


def floats(name, t):
    return "constexpr float " + name + "[] = {" + ", ".join(literal(float(x)) for x in t.tolist()) + "};"


def ints(name, t):
    return "constexpr int32_t " + name + "[] = {" + ", ".join(str(int(x)) for x in t.tolist()) + "};"


a, b = torch.tensor(A, dtype=torch.float32), torch.tensor(B, dtype=torch.float32)
ia, ib = torch.tensor(IA, dtype=torch.int32), torch.tensor(IB, dtype=torch.int32)
print("// clang-format off")
print(f"// torch {torch.__version__}; written by make_torch_floor_division.py")
print(floats("kFloatA", a))
print(floats("kFloatB", b))
print(floats("kFloatFloorDivide", torch.floor_divide(a, b)))
print(floats("kFloatRemainder", torch.remainder(a, b)))
print(ints("kIntA", ia))
print(ints("kIntB", ib))
print(ints("kIntFloorDivide", torch.floor_divide(ia, ib)))
print(ints("kIntRemainder", torch.remainder(ia, ib)))
