"""torchvision's resnet18 and mobilenet_v2 and a two-layer transformer encoder, written with kiln.nn as
torchvision and torch write them, loaded from the torch models' state_dict() through DLPack, match
torch on both tiers: max abs error <= 1e-4 * max(1, max|ref|)."""
import time

import numpy as np
import pytest

import kiln
from kiln import functional as F
from kiln import nn

torch = pytest.importorskip("torch", reason="the ports are compared with torch (python3-torch)")
torchvision = pytest.importorskip("torchvision", reason="the ports are compared with torchvision "
                                                        "(python3-torchvision)")


# torchvision/models/resnet.py, with kiln.nn for torch.nn.
class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, 2)
        self.layer2 = self._make_layer(128, 2, stride=2)
        self.layer3 = self._make_layer(256, 2, stride=2)
        self.layer4 = self._make_layer(512, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = F.flatten(self.avgpool(x), 1)
        return self.fc(x)


# torchvision/models/mobilenetv2.py and ops/misc.py's Conv2dNormActivation.
def _make_divisible(v, divisor, min_value=None):
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class Conv2dNormActivation(nn.Sequential):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, activation_layer=nn.ReLU6):
        padding = (kernel_size - 1) // 2
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, groups=groups, bias=False),
                  nn.BatchNorm2d(out_channels)]
        if activation_layer is not None:
            layers.append(activation_layer(inplace=True))
        super().__init__(*layers)
        self.out_channels = out_channels


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1))
        layers.extend([Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                       nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                       nn.BatchNorm2d(oup)])
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, round_nearest=8, dropout=0.2):
        super().__init__()
        settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                    [6, 320, 1, 1]]
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in settings:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(F.flatten(x, 1))


def randomise_batch_norms(model):
    """Running statistics and affine parameters away from their 0/1 defaults, so loading them counts."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model


def check_port(session, port, reference, *inputs):
    """port loads reference's state_dict; both run in eval mode; kiln's result is within tolerance."""
    reference.eval()
    torch_state = reference.state_dict()
    kiln_names = list(port.state_dict())
    assert kiln_names == [n for n in torch_state if not n.endswith("num_batches_tracked")]
    assert [n for n, _ in port.named_modules()] == [n for n, _ in reference.named_modules()]
    assert port.load_state_dict(torch_state) == ([], [])
    compiled = kiln.compile(port.eval(), session=session)
    with torch.no_grad():
        expected = reference(*inputs).numpy()
    start = time.perf_counter()
    actual = np.asarray(compiled(*inputs))
    first_call = time.perf_counter() - start
    assert actual.shape == expected.shape
    error = float(np.abs(actual - expected).max())
    bound = 1e-4 * max(1.0, float(np.abs(expected).max()))
    assert error <= bound, f"max abs error {error} > {bound}"
    print(f"{type(port).__name__} on {session.mode}: max abs error {error:.2e} (bound {bound:.2e}), "
          f"first call {first_call:.2f} s")


def test_resnet18_matches_torchvision(session):
    torch.manual_seed(0)
    reference = randomise_batch_norms(torchvision.models.resnet18())
    check_port(session, ResNet18(), reference, torch.randn(1, 3, 64, 64))


def test_mobilenet_v2_matches_torchvision(session):
    torch.manual_seed(1)
    reference = randomise_batch_norms(torchvision.models.mobilenet_v2())
    check_port(session, MobileNetV2(), reference, torch.randn(1, 3, 64, 64))


def test_transformer_encoder_matches_torch(session):
    torch.manual_seed(2)
    layer = dict(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True)
    reference = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**layer), num_layers=2)
    port = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), num_layers=2)
    check_port(session, port, reference, torch.randn(2, 10, 32))
