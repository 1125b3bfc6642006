#!/usr/bin/python3
"""Writes torch_result_types.inc: torch.result_type(a, b) for a a tensor or a 0-d tensor of each dtype
and b any of those or a Python int or float. Run with Debian's python3-torch:
    /usr/bin/python3 tests/data/make_torch_result_types.py > tests/data/torch_result_types.inc
"""
import torch

DTYPES = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
          "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
NAMES = {v: k for k, v in DTYPES.items()}


def operand(form, dtype):
    if form == "int":
        return 3
    if form == "float":
        return 2.5
    return torch.ones(2, dtype=DTYPES[dtype]) if form == "tensor" else torch.tensor(1, dtype=DTYPES[dtype])


FORMS = [("tensor", n) for n in DTYPES] + [("zerodim", n) for n in DTYPES] + [("int", ""), ("float", "")]
print("// clang-format off")
print(f"// torch {torch.__version__}: torch.result_type(a, b) as "
      "{a's form, a's dtype, b's form, b's dtype, result}; written by make_torch_result_types.py")
for fa, da in FORMS:
    if fa in ("int", "float"):
        continue
    for fb, db in FORMS:
        result = NAMES[torch.result_type(operand(fa, da), operand(fb, db))]
        print(f'{{"{fa}", "{da}", "{fb}", "{db}", "{result}"}},')
