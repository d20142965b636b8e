"""super_resolution/super_resolve.py of pytorch/examples, reproduced: loads the whole model
that main.py saved, under ``torch.serialization.safe_globals``, and upscales one image (a
test image of data.py instead of a photograph read with PIL); prints its PSNR against the
original."""

import argparse
import json
from math import log10

import numpy as np
import torch

from data import test_image
from model import Net

parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
parser.add_argument('--model', type=str, required=True)
parser.add_argument('--upscale_factor', type=int, default=2)
opt = parser.parse_args()

low, original = test_image(opt.upscale_factor)
with open(opt.model, 'rb') as f:
    safe_globals = [
        Net,
        torch.nn.modules.activation.ReLU,
        torch.nn.modules.conv.Conv2d,
        torch.nn.modules.pixelshuffle.PixelShuffle,
    ]
    with torch.serialization.safe_globals(safe_globals):
        model = torch.load(f)
input = torch.from_numpy(low).view(1, -1, low.shape[1], low.shape[2])
out = model(input).cpu()
out_img_y = out[0].detach().numpy()
out_img_y = out_img_y.clip(0, 1)
psnr = 10 * log10(1 / float(np.mean((out_img_y - original) ** 2)))
print(json.dumps({"image_psnr": psnr}))
