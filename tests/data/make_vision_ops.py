#!/usr/bin/python3
"""Writes vision_ops.inc: PyTorch's results of adaptive_avg_pool2d, group_norm, instance_norm,
conv_transpose2d and interpolate on f32 inputs.

Run with Debian's python3-torch: /usr/bin/python3 tests/data/make_vision_ops.py

Each case holds its inputs (standard normal from a fixed seed, or with edge values: NaN, +-inf, -0
spread through them) and torch 1.13's f32 result, each float as the shortest decimal that reads
back as it. Sizes are odd
(1, 7, 17); adaptive windows both uniform (H % out == 0, oneDNN's path in the JIT) and not.

interpolate's inputs have C = 2 and are contiguous NCHW, so torch runs its channels-first kernels:
for a tensor torch also counts as channels-last (C = 1 with H = 1, say) it picks other kernels,
whose nearest index differs where the size is kept but the scale is not 1.
"""
import math
import pathlib

import numpy
import torch

EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0]


def sample(dims, seed, edges=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(dims, generator=g, dtype=torch.float32)
    if edges:
        flat = x.view(-1)
        for i in range(0, flat.numel(), 5):
            flat[i] = EDGES[(i // 5) % len(EDGES)]
    return x


def cases():
    """(op, x, weight, bias, ints, reals, mode, align_corners, result)"""
    seed = 0
    for dims, out, edges in [
        ((2, 3, 7, 17), (1, 1), False),
        ((2, 3, 7, 17), (7, 17), False),
        ((2, 3, 7, 17), (3, 5), False),
        ((1, 2, 17, 7), (4, 3), False),
        ((1, 1, 1, 1), (1, 1), False),
        ((1, 1, 1, 7), (3, 17), False),
        ((2, 3, 14, 17), (7, 1), False),
        ((2, 3, 7, 17), (3, 5), True),
        ((2, 3, 14, 17), (7, 17), True),
    ]:
        seed += 1
        x = sample(dims, seed, edges)
        y = torch.nn.functional.adaptive_avg_pool2d(x, out)
        yield "adaptive_avg_pool2d", x, None, None, list(out), [], "", False, y

    F = torch.nn.functional
    for dims, groups, affine, eps, edges in [
        ((2, 6, 7, 17), 3, "both", 1e-5, False),
        ((2, 6, 1, 17), 1, "none", 1e-5, False),
        ((1, 6, 7, 1), 6, "weight", 1e-3, False),
        ((1, 7, 17, 1), 7, "bias", 1e-5, False),
        ((3, 4, 5), 2, "both", 1e-5, False),
        ((2, 4), 2, "both", 1e-5, False),
        ((1, 1, 1, 2), 1, "none", 1e-5, False),
        ((2, 6, 7, 17), 3, "both", 1e-5, True),
    ]:
        seed += 1
        x = sample(dims, seed, edges)
        w = sample((dims[1],), seed + 1000) if affine in ("both", "weight") else None
        b = sample((dims[1],), seed + 2000) if affine in ("both", "bias") else None
        y = F.group_norm(x, groups, w, b, eps)
        yield "group_norm", x, w, b, [groups], [eps], "", False, y
    for dims, affine, eps, edges in [
        ((2, 3, 7, 17), True, 1e-5, False),
        ((1, 7, 17, 7), False, 1e-5, False),
        ((2, 3, 1, 7), True, 1e-2, False),
        ((2, 3, 17), True, 1e-5, False),
        ((2, 3, 7, 17), True, 1e-5, True),
    ]:
        seed += 1
        x = sample(dims, seed, edges)
        w = sample((dims[1],), seed + 1000) if affine else None
        b = sample((dims[1],), seed + 2000) if affine else None
        y = F.instance_norm(x, weight=w, bias=b, eps=eps)
        yield "instance_norm", x, w, b, [], [eps], "", False, y
    for xd, wd, bias, stride, pad, out_pad, groups, dil, edges in [
        ((2, 4, 7, 5), (4, 3, 3, 3), True, (1, 1), (0, 0), (0, 0), 1, (1, 1), False),
        ((1, 4, 7, 17), (4, 3, 3, 2), True, (2, 3), (1, 0), (1, 2), 1, (1, 1), False),
        ((2, 6, 5, 7), (6, 2, 3, 3), False, (2, 2), (1, 1), (1, 1), 3, (1, 1), False),
        ((1, 2, 7, 7), (2, 5, 2, 3), True, (1, 1), (1, 2), (1, 1), 1, (2, 2), False),
        ((1, 1, 1, 1), (1, 1, 1, 1), True, (1, 1), (0, 0), (0, 0), 1, (1, 1), False),
        ((1, 3, 1, 17), (3, 2, 3, 1), False, (3, 1), (0, 0), (2, 0), 1, (1, 1), False),
        ((2, 4, 7, 5), (4, 3, 3, 3), True, (2, 1), (1, 1), (1, 0), 1, (1, 1), True),
    ]:
        seed += 1
        x = sample(xd, seed, edges)
        w = sample(wd, seed + 1000)
        b = sample((wd[1] * groups,), seed + 2000) if bias else None
        y = F.conv_transpose2d(x, w, b, stride, pad, out_pad, groups, dil)
        yield "conv_transpose2d", x, w, b, [*stride, *pad, *out_pad, groups, *dil], [], "", False, y
    for h, w in [(7, 5), (1, 17), (17, 1)]:
        configs = [((1, 1), None), ((2 * h, w), None), ((3, 5), None), ((h, w + 1), None)]
        for sc in [(2.0, 0.5), (1.1, 1.5), (0.6, 2.3), (2.0000001, 1.9999999)]:
            size = (math.floor(h * sc[0]), math.floor(w * sc[1]))
            if min(size) > 0:
                configs.append((size, sc))
        for (size, sc), edges in [(c, False) for c in configs] + [(configs[3], True), (configs[-1], True)]:
            seed += 1
            x = sample((1, 2, h, w), seed, edges)
            for mode, align in [("nearest", None), ("bilinear", False), ("bilinear", True)]:
                given = {"size": size} if sc is None else {"scale_factor": sc}
                y = F.interpolate(x, mode=mode, align_corners=align, **given)
                assert tuple(y.shape[2:]) == tuple(size)
                yield "interpolate", x, None, None, list(size), list(sc or []), mode, bool(align), y


def literal(v):
    """The shortest decimal that reads back as the f32 v."""
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    text = repr(numpy.float32(v))
    return text + ("f" if "." in text or "e" in text else ".f")


def array(name, t):
    return "constexpr float %s[] = {%s};\n" % (name, ", ".join(literal(v) for v in t.reshape(-1).tolist()))


def dims4(t):
    d = list(t.shape) if t is not None else []
    return "{" + ", ".join(str(v) for v in d + [0] * (4 - len(d))) + "}"


def main():
    out = [
        "// Generated by tests/data/make_vision_ops.py with torch %s; do not edit.\n" % torch.__version__,
        "// Read by tests/test_vision_ops.cpp, which defines VisionCase first.\n",
        "// clang-format off\n",
    ]
    rows = []
    names = {}  # an input's text -> the array that holds it, so cases share inputs

    def input_array(name, t):
        text = array("%s", t)
        if text not in names:
            names[text] = name
            out.append(text % name)
        return names[text]

    for i, (op, x, w, b, ints, reals, mode, align, y) in enumerate(cases()):
        x_name = input_array("kVision%d_x" % i, x)
        out.append(array("kVision%d_want" % i, y))
        if w is not None:
            out.append(array("kVision%d_w" % i, w))
        if b is not None:
            out.append(array("kVision%d_b" % i, b))
        ints = ints + [0] * (9 - len(ints))
        reals = reals + [0.0] * (2 - len(reals))
        rows.append(
            '    {"%s", %s, %s, %s, {%s}, {%s}, "%s", %s, %s, %s, %s, %s, kVision%d_want},\n'
            % (op, dims4(x), dims4(w), dims4(b), ", ".join(map(str, ints)), ", ".join(repr(float(r)) for r in reals),
               mode, "true" if align else "false", dims4(y), x_name, "kVision%d_w" % i if w is not None else "nullptr",
               "kVision%d_b" % i if b is not None else "nullptr", i))
    out.append("constexpr VisionCase kVisionCases[] = {\n")
    out.extend(rows)
    out.append("};\n")
    pathlib.Path(__file__).with_name("vision_ops.inc").write_text("".join(out))


if __name__ == "__main__":
    main()
