"""kiln.nn's layers against torch.nn's: the same constructor arguments, the torch layer's state_dict
loaded through DLPack, the same result on both tiers; and the module API (state_dict, buffers,
load_state_dict, train/eval, the tree) as torch's."""
import numpy as np
import pytest

import kiln
from kiln import nn

torch = pytest.importorskip("torch", reason="kiln.nn is compared with torch.nn (python3-torch)")


def randomised(layer):
    """Parameters and running statistics away from their defaults, so loading them counts."""
    torch.manual_seed(3)
    with torch.no_grad():
        for name, tensor in list(layer.named_parameters()) + list(layer.named_buffers()):
            if name.endswith("running_var"):
                tensor.uniform_(0.5, 1.5)
            elif tensor.is_floating_point():
                tensor.uniform_(-0.5, 0.5) if "bias" in name or "mean" in name else tensor.uniform_(0.5, 1.5)
    return layer


def run(session, port, reference, *inputs):
    """Both layers in eval mode, the port loaded from the reference; kiln's outputs and torch's."""
    reference.eval()
    assert list(port.state_dict()) == [n for n in reference.state_dict() if not n.endswith("num_batches_tracked")]
    port.load_state_dict(reference.state_dict())
    with torch.no_grad():  # on copies: an inplace torch layer overwrites its input
        expected = reference(*[x.clone() for x in inputs])
    actual = kiln.compile(port.eval(), session=session)(*inputs)
    return actual, expected


def assert_close(actual, expected, tolerance=1e-5):
    expected = expected.numpy()
    actual = np.asarray(actual)
    assert actual.shape == expected.shape
    assert np.abs(actual - expected).max() <= tolerance * max(1.0, float(np.abs(expected).max()))


def image(channels=4, size=9):
    return torch.randn(2, channels, size, size, generator=torch.Generator().manual_seed(5))


def sequence(channels=4, length=17):
    return torch.randn(2, channels, length, generator=torch.Generator().manual_seed(6))


# (name, constructor arguments, input): each layer built as nn.name(*args, **kwargs) and torch.nn.name(...).
CASES = [
    ("Linear", (8, 5), {}, lambda: torch.randn(3, 8)),
    ("Linear", (8, 5), {"bias": False}, lambda: torch.randn(2, 3, 8)),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1}, sequence),
    ("Conv1d", (4, 8, (3,)), {"padding": "same", "dilation": 2, "groups": 2, "bias": False}, sequence),
    ("Conv1d", (4, 4, 4), {"padding": "same"}, sequence),
    ("Conv1d", (4, 6, 5, 1, "valid"), {}, sequence),
    ("Conv2d", (4, 6, 3), {"stride": 2, "padding": 1}, image),
    ("Conv2d", (4, 8, (3, 1)), {"padding": "same", "dilation": 2, "groups": 2, "bias": False}, image),
    ("Conv2d", (4, 4, 4), {"padding": "same"}, image),
    ("Conv2d", (4, 6, 3, 1, "valid"), {}, image),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1}, image),
    ("ConvTranspose2d", (4, 6, 2), {"groups": 2, "bias": False}, image),
    ("Upsample", (), {"scale_factor": 2}, image),
    ("Upsample", ((5, 7),), {"mode": "bilinear", "align_corners": True}, image),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}, image),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, image),
    ("UpsamplingBilinear2d", ((4, 6),), {}, image),
    ("MaxPool2d", (3, 2, 1), {}, image),
    ("MaxPool2d", (2,), {}, image),
    ("AvgPool2d", (3, 2, 1), {}, image),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, image),
    ("AdaptiveAvgPool2d", ((1, 1),), {}, image),
    ("AdaptiveAvgPool2d", ((3, None),), {}, image),
    ("BatchNorm2d", (4,), {}, image),
    ("BatchNorm2d", (4,), {"affine": False, "eps": 1e-3}, image),
    ("BatchNorm2d", (4,), {"track_running_stats": False}, image),
    ("GroupNorm", (2, 4), {}, image),
    ("InstanceNorm2d", (4,), {}, image),
    ("InstanceNorm2d", (4,), {"affine": True, "track_running_stats": True}, image),
    ("LayerNorm", (8,), {"eps": 1e-6}, lambda: torch.randn(2, 3, 8)),
    ("LayerNorm", ([3, 8],), {"elementwise_affine": False}, lambda: torch.randn(2, 3, 8)),
    ("Embedding", (10, 4), {"padding_idx": 0}, lambda: torch.tensor([[0, 3, 9], [2, 2, 1]])),
    ("Dropout", (0.3,), {}, lambda: torch.randn(4, 5)),
    ("Identity", (54,), {"unused": 1}, lambda: torch.randn(4, 5)),
    ("ReLU", (), {"inplace": True}, lambda: torch.randn(4, 5)),
    ("ReLU6", (), {}, lambda: torch.randn(4, 5) * 8),
    ("GELU", (), {}, lambda: torch.randn(4, 5)),
    ("GELU", (), {"approximate": "tanh"}, lambda: torch.randn(4, 5)),
    ("SiLU", (), {}, lambda: torch.randn(4, 5)),
    ("Sigmoid", (), {}, lambda: torch.randn(4, 5)),
    ("Tanh", (), {}, lambda: torch.randn(4, 5)),
    ("Hardsigmoid", (), {"inplace": True}, lambda: torch.randn(4, 5) * 4),
    ("Hardswish", (), {}, lambda: torch.randn(4, 5) * 4),
    ("LeakyReLU", (0.2,), {}, lambda: torch.randn(4, 5)),
    ("ELU", (), {"alpha": 0.5}, lambda: torch.randn(4, 5)),
    ("Softplus", (2.0, 5.0), {}, lambda: torch.randn(4, 5) * 4),
    ("Softmax", (), {"dim": 1}, lambda: torch.randn(2, 3, 5)),
    ("Softmax", (), {}, lambda: torch.randn(2, 3, 5)),  # dim None: torch's implicit dim 0 for rank 3
    ("LogSoftmax", (-1,), {}, lambda: torch.randn(2, 3, 5)),
    ("Flatten", (), {}, lambda: torch.randn(2, 3, 4, 5)),
    ("Flatten", (0, 2), {}, lambda: torch.randn(2, 3, 4, 5)),
]


@pytest.mark.filterwarnings("ignore:.*(padding='same'|Implicit dimension choice).*:UserWarning")
@pytest.mark.parametrize("name, args, kwargs, make_input", CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_layer_matches_torch(session, name, args, kwargs, make_input):
    torch.manual_seed(4)
    reference = randomised(getattr(torch.nn, name)(*args, **kwargs))
    actual, expected = run(session, getattr(nn, name)(*args, **kwargs), reference, make_input())
    assert_close(actual, expected)


MHA_CASES = [
    # (constructor kwargs, forward kwargs, self-attention)
    ({}, {}, False),
    ({"batch_first": True}, {"need_weights": False}, True),
    ({"batch_first": True, "bias": False}, {"average_attn_weights": False}, False),
    ({"kdim": 6, "vdim": 3}, {}, False),
    ({"batch_first": True}, {"attn_mask": "bool"}, True),
    ({"batch_first": True}, {"attn_mask": "float", "key_padding_mask": True, "need_weights": False}, False),
]


def kiln_mask(mask):
    """The mask as a kiln Tensor: torch 1.13 and numpy 1.24 do not export bool through DLPack."""
    if mask.dtype != torch.bool:
        return kiln.Tensor(mask)
    return kiln.functional.cast(kiln.Tensor(mask.to(torch.uint8)), kiln.DType.bool)


class AttentionCall(nn.Module):
    """Calls attention with keywords: kiln.compile passes the positional tensors, and the masks given
    here are constants of the graph."""

    def __init__(self, attention, **keywords):
        super().__init__()
        self.attention = attention
        self.keywords = keywords

    def forward(self, q, k, v):
        return self.attention(q, k, v, **self.keywords)


@pytest.mark.parametrize("options, call, self_attention", MHA_CASES, ids=[str(i) for i in range(len(MHA_CASES))])
def test_multihead_attention_matches_torch(session, options, call, self_attention):
    torch.manual_seed(6)
    reference = randomised(torch.nn.MultiheadAttention(8, 2, **options))
    port = nn.MultiheadAttention(8, 2, **options)
    batch_first = options.get("batch_first", False)
    L, S, N = 5, 5 if self_attention else 7, 2

    def sequence(length, width):
        return torch.randn(N, length, width) if batch_first else torch.randn(length, N, width)

    query = sequence(L, 8)
    key = query if self_attention else sequence(S, options.get("kdim", 8))
    value = query if self_attention else sequence(S, options.get("vdim", 8))
    call = dict(call)
    if call.get("attn_mask") == "bool":
        call["attn_mask"] = torch.triu(torch.ones(L, S, dtype=torch.bool), 1)
    elif call.get("attn_mask") == "float":
        call["attn_mask"] = torch.randn(L, S)
    if call.get("key_padding_mask"):
        call["key_padding_mask"] = torch.tensor([[False] * (S - 2) + [True] * 2, [False] * S])
    kiln_call = {k: kiln_mask(v) if isinstance(v, torch.Tensor) else v for k, v in call.items()}

    reference.eval()
    port.load_state_dict(reference.state_dict())
    with torch.no_grad():
        expected = reference(query, key, value, **call)
    actual = kiln.compile(AttentionCall(port, **kiln_call).eval(), session=session)(query, key, value)
    assert_close(actual[0], expected[0])
    if expected[1] is None:
        assert actual[1] is None
    else:
        assert_close(actual[1], expected[1])


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_is_causal_masks_later_keys(session, need_weights):
    torch.manual_seed(8)
    reference = randomised(torch.nn.MultiheadAttention(8, 2, batch_first=True)).eval()
    port = nn.MultiheadAttention(8, 2, batch_first=True)
    port.load_state_dict(reference.state_dict())
    x = torch.randn(2, 5, 8)
    with torch.no_grad():  # torch 1.13's is_causal is spelled as the mask it stands for
        expected = reference(x, x, x, attn_mask=torch.triu(torch.full((5, 5), float("-inf")), 1))[0]
    compiled = kiln.compile(AttentionCall(port, need_weights=need_weights, is_causal=True), session=session)
    assert_close(compiled(x, x, x)[0], expected)


def test_transformer_encoder_layer_norm_first_gelu_matches_torch(session):
    torch.manual_seed(7)
    options = dict(d_model=16, nhead=2, dim_feedforward=32, activation="gelu", norm_first=True)
    reference = torch.nn.TransformerEncoderLayer(**options)
    mask = torch.triu(torch.full((6, 6), float("-inf")), 1)
    with torch.no_grad():
        actual, expected = run(session, nn.TransformerEncoderLayer(**options), reference, torch.randn(6, 2, 16), mask)
    assert_close(actual, expected)


def test_rms_norm_matches_its_formula(session):
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    weight = np.linspace(0.5, 1.5, 24, dtype=np.float32).reshape(3, 8)
    norm = nn.RMSNorm([3, 8])
    norm.load_state_dict({"weight": weight})
    eps = np.finfo(np.float32).eps
    expected = x / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + eps) * weight
    np.testing.assert_allclose(np.asarray(kiln.compile(norm, session=session)(x)), expected, rtol=1e-5, atol=1e-6)


# The module API -------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.act = nn.ReLU(inplace=True)
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(4 * 8 * 8, 2))

    def forward(self, x):
        return self.head(self.act(self.bn(self.conv(x))))


def test_state_dict_holds_parameters_then_buffers_by_torch_names():
    block = Block()
    assert list(block.state_dict()) == ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                        "bn.running_var", "head.2.weight", "head.2.bias"]
    assert [n for n, _ in block.named_parameters()] == ["conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                                        "head.2.weight", "head.2.bias"]
    assert [n for n, _ in block.named_buffers()] == ["bn.running_mean", "bn.running_var"]
    assert [n for n, _ in block.named_children()] == ["conv", "bn", "act", "head"]
    assert [type(m).__name__ for m in block.children()] == ["Conv2d", "BatchNorm2d", "ReLU", "Sequential"]
    assert [n for n, _ in block.named_modules()] == ["", "conv", "bn", "act", "head", "head.0", "head.1", "head.2"]
    assert len(list(block.modules())) == 8
    assert nn.Linear(2, 3, bias=False).bias is None


def test_load_state_dict_strict_and_not():
    block = Block()
    state = {name: np.asarray(value) * 2 for name, value in block.state_dict().items()}
    state["bn.num_batches_tracked"] = np.array(7, np.int64)  # torch's, accepted and dropped
    assert block.load_state_dict(state) == ([], [])
    np.testing.assert_array_equal(np.asarray(block.bn.running_var), np.full(4, 2, np.float32))

    partial = dict(state)
    del partial["conv.bias"]
    partial["extra.weight"] = np.zeros(2, np.float32)
    with pytest.raises(kiln.Error) as error:
        block.load_state_dict(partial)
    assert error.value.kind == "weight"
    assert "missing ['conv.bias']" in str(error.value) and "unexpected ['extra.weight']" in str(error.value)

    partial["conv.weight"] = np.asarray(state["conv.weight"]) * 3
    result = block.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["conv.bias"] and result.unexpected_keys == ["extra.weight"]
    assert repr(block.load_state_dict(state)) == "<All keys matched successfully>"


def test_load_state_dict_replaces_nothing_when_one_entry_is_wrong():
    block = Block()
    before = np.asarray(block.conv.weight).copy()
    state = {name: np.asarray(value) + 1 for name, value in block.state_dict().items()}
    state["bn.running_mean"] = np.zeros(5, np.float32)
    with pytest.raises(kiln.Error, match=r"'bn.running_mean' is f32 \[4\] on cpu:0, got f32 \[5\]"):
        block.load_state_dict(state, strict=False)
    np.testing.assert_array_equal(np.asarray(block.conv.weight), before)


def test_load_state_dict_shares_torch_memory():
    reference = torch.nn.Linear(3, 2)
    port = nn.Linear(3, 2)
    port.load_state_dict(reference.state_dict())
    with torch.no_grad():
        reference.weight.fill_(0.25)
    np.testing.assert_array_equal(np.asarray(port.weight), np.full((2, 3), 0.25, np.float32))


def test_train_and_eval_set_every_module_and_return_self():
    block = Block()
    assert block.training and block.head[1].training  # torch's default
    assert block.eval() is block
    assert not any(m.training for m in block.modules())
    assert block.train() is block
    assert all(m.training for m in block.modules())
    with pytest.raises(kiln.Error):
        block.train("no")


def test_training_mode_forward_is_refused_not_computed_as_eval(session):
    x = np.ones((1, 3, 8, 8), np.float32)
    block = Block()
    with pytest.raises(kiln.Error) as error:
        kiln.compile(block, session=session)(x)
    assert error.value.kind == "unsupported"
    assert "module 'bn' (BatchNorm2d) is in training mode" in str(error.value) and ".eval()" in str(error.value)
    block.eval()
    block.head[1].train()
    with pytest.raises(kiln.Error, match=r"module 'head.1' \(Dropout\) is in training mode"):
        kiln.compile(block, session=session)(x)
    compiled = kiln.compile(block.eval(), session=session)
    assert np.asarray(compiled(x)).shape == (1, 2)
    block.head[1].train()  # the graph traced in eval mode must not serve training mode
    with pytest.raises(kiln.Error, match=r"module 'head.1' \(Dropout\) is in training mode"):
        compiled(x)
    # Without running statistics, both modes normalise with the batch's, as torch's.
    batch_stats = nn.BatchNorm2d(3, track_running_stats=False)
    assert batch_stats.training and list(batch_stats.state_dict()) == ["weight", "bias"]
    out = np.asarray(kiln.compile(batch_stats, session=session)(np.arange(48, dtype=np.float32).reshape(1, 3, 4, 4)))
    np.testing.assert_allclose(out.mean(axis=(0, 2, 3)), 0, atol=1e-5)


@pytest.mark.parametrize("make, argument", [
    (lambda: nn.Conv2d(3, 4, 3, padding_mode="reflect"), "padding_mode='reflect'"),
    (lambda: nn.Conv2d(3, 4, 3, stride=2, padding="same"), "padding='same'"),
    (lambda: nn.Conv1d(3, 4, 3, stride=2, padding="same"), "padding='same'"),
    (lambda: nn.Conv2d(3, 4, 3, device="cuda"), "device='cuda'"),
    (lambda: nn.Linear(3, 4, dtype="float64"), "dtype='float64'"),
    (lambda: nn.MaxPool2d(2, ceil_mode=True), "ceil_mode=True"),
    (lambda: nn.MaxPool2d(2, dilation=2), "dilation=2"),
    (lambda: nn.MaxPool2d(2, return_indices=True), "return_indices=True"),
    (lambda: nn.AvgPool2d(2, divisor_override=3), "divisor_override=3"),
    (lambda: nn.Upsample(scale_factor=2, mode="bicubic"), "mode='bicubic'"),
    (lambda: nn.Upsample(scale_factor=2, align_corners=True), "align_corners=True"),
    (lambda: nn.Embedding(4, 2, max_norm=1.0), "max_norm=1.0"),
    (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True), "add_bias_kv=True"),
    (lambda: nn.MultiheadAttention(8, 2, add_zero_attn=True), "add_zero_attn=True"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="swish"), "activation='swish'"),
])
def test_unsupported_arguments_are_refused_by_name(make, argument):
    with pytest.raises(kiln.Error) as error:
        make()
    assert error.value.kind == "unsupported" and argument in str(error.value)


def test_invalid_arguments_are_spec_errors():
    for make in (lambda: nn.Dropout(1.5), lambda: nn.Conv2d(3, 4, 3, groups=2), lambda: nn.GroupNorm(3, 4),
                 lambda: nn.Conv1d(3, 4, 3, groups=2), lambda: nn.Conv1d(3, 4, (3, 3)),
                 lambda: nn.MultiheadAttention(8, 3), lambda: nn.GELU("fast"), lambda: nn.Upsample()):
        with pytest.raises(kiln.Error) as error:
            make()
        assert error.value.kind == "spec"


def test_containers_index_and_name_as_torch():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    assert isinstance(seq[1], nn.Tanh) and isinstance(seq[-1], nn.Sigmoid) and len(seq) == 3
    assert [n for n, _ in seq[1:].named_children()] == ["1", "2"]
    named = nn.Sequential(__import__("collections").OrderedDict(first=nn.ReLU(), second=nn.Tanh()))
    assert [n for n, _ in named.named_children()] == ["first", "second"]
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    del layers[0]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2"] and isinstance(layers[2], nn.ReLU)
    assert list(layers.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    heads = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.Identity()})
    heads["c"] = nn.ReLU()
    assert list(heads) == ["a", "b", "c"] and "b" in heads and list(heads.state_dict()) == ["a.weight", "a.bias"]
    with pytest.raises(IndexError):
        seq[3]


def test_non_persistent_buffer_is_left_out_of_state_dict_and_baked_in(session):
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("factor", np.full(3, 2.0, np.float32), persistent=False)
            self.register_buffer("offset", np.ones(3, np.float32))

        def forward(self, x):
            return x * self.factor + self.offset

    module = Scale()
    assert list(module.state_dict()) == ["offset"] and [n for n, _ in module.named_buffers()] == ["factor", "offset"]
    out = kiln.compile(module, session=session)(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), [1.0, 3.0, 5.0])
