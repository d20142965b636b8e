"""ResNet-18 and MobileNetV3-small written in torch, layer for layer as torchvision's
``resnet18`` and ``mobilenet_v3_small`` (the PyPI torchvision does not import beside the torch
2.13 CPU build the tests use). Used only as models to export with ``torch.onnx.export``."""

from __future__ import annotations

from typing import Any


def resnet18(torch: Any, num_classes: int = 1000) -> Any:
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride,
                                                          bias=False), nn.BatchNorm2d(planes))

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return torch.relu(out + identity)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    inplanes = 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)]
        inplanes = planes
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def _divisible(v: float, divisor: int = 8) -> int:
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def mobilenet_v3_small(torch: Any, num_classes: int = 1000) -> Any:
    nn = torch.nn

    def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int, act: Any) -> list[Any]:
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
        return layers + ([act()] if act is not None else [])

    class SqueezeExcitation(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            squeeze = _divisible(channels // 4)
            self.fc1 = nn.Conv2d(channels, squeeze, 1)
            self.fc2 = nn.Conv2d(squeeze, channels, 1)

        def forward(self, x: Any) -> Any:
            scale = torch.nn.functional.adaptive_avg_pool2d(x, 1)
            scale = nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(scale))))
            return scale * x

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, k: int, expanded: int, cout: int, se: bool, act: Any,
                     stride: int) -> None:
            super().__init__()
            self.residual = stride == 1 and cin == cout
            layers: list[Any] = []
            if expanded != cin:
                layers += conv_bn(cin, expanded, 1, 1, 1, act)
            layers += conv_bn(expanded, expanded, k, stride, expanded, act)
            if se:
                layers.append(SqueezeExcitation(expanded))
            layers += conv_bn(expanded, cout, 1, 1, 1, None)
            self.block = nn.Sequential(*layers)

        def forward(self, x: Any) -> Any:
            y = self.block(x)
            return y + x if self.residual else y

    hs, re = nn.Hardswish, nn.ReLU
    settings = [(16, 3, 16, 16, True, re, 2), (16, 3, 72, 24, False, re, 2),
                (24, 3, 88, 24, False, re, 1), (24, 5, 96, 40, True, hs, 2),
                (40, 5, 240, 40, True, hs, 1), (40, 5, 240, 40, True, hs, 1),
                (40, 5, 120, 48, True, hs, 1), (48, 5, 144, 48, True, hs, 1),
                (48, 5, 288, 96, True, hs, 2), (96, 5, 576, 96, True, hs, 1),
                (96, 5, 576, 96, True, hs, 1)]
    layers = conv_bn(3, 16, 3, 2, 1, hs)
    layers += [InvertedResidual(*s) for s in settings]
    layers += conv_bn(96, 576, 1, 1, 1, hs)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(576, 1024), nn.Hardswish(),
               nn.Dropout(0.2), nn.Linear(1024, num_classes)]
    return nn.Sequential(*layers)
