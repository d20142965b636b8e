"""nanoGPT's sample.py (https://github.com/karpathy/nanoGPT), reproduced for the
character-level checkpoint that train.py writes: loads ckpt.pt (a dict with the state dict,
the model arguments and the config), strips a compiled model's prefix, and draws samples with
temperature and top-k. The vocabulary comes from meta.json (no tiktoken branch). Prints how
many characters were drawn and the share of them that are letters or spaces."""

import json
import os
from contextlib import nullcontext

import torch

from model import GPT, GPTConfig

init_from = 'resume'
out_dir = 'out'
start = "\n"
num_samples = 10
max_new_tokens = 500
temperature = 0.8
top_k = 200
seed = 1337
device = 'cuda'
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() \
    else 'float16'
compile = False
exec(open(os.path.join(os.path.dirname(__file__), 'configurator.py')).read())

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = 'cuda' if 'cuda' in device else 'cpu'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type,
                                                                     dtype=ptdtype)

ckpt_path = os.path.join(out_dir, 'ckpt.pt')
checkpoint = torch.load(ckpt_path, map_location=device)
model = GPT(GPTConfig(**checkpoint['model_args']))
state_dict = checkpoint['model']
unwanted_prefix = '_orig_mod.'
for k in list(state_dict):
    if k.startswith(unwanted_prefix):
        state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
model.load_state_dict(state_dict)
model.eval()
model.to(device)
if compile:
    model = torch.compile(model)

meta_path = os.path.join('data', checkpoint['config']['dataset'], 'meta.json')
with open(meta_path) as f:
    meta = json.load(f)
stoi, itos = meta['stoi'], {int(i): c for i, c in meta['itos'].items()}


def encode(s):
    return [stoi[c] for c in s]


def decode(ids):
    return ''.join([itos[i] for i in ids])


start_ids = encode(start)
x = (torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...])
drawn = ""
with torch.no_grad():
    with ctx:
        for _ in range(num_samples):
            y = model.generate(x, max_new_tokens, temperature=temperature, top_k=top_k)
            text = decode(y[0].tolist())
            print(text)
            print('---------------')
            drawn += text[len(start):]
print(json.dumps({"drawn": len(drawn),
                  "letters_or_spaces": sum(c.isalpha() or c == ' ' for c in drawn) / len(drawn)}))
