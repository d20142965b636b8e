"""minGPT's mingpt/utils.py, reproduced: set_seed, setup_logging and CfgNode (a yacs-like
configuration with ``--a.b=value`` overrides)."""

import json
import os
import random
import sys
from ast import literal_eval

import numpy as np
import torch


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def setup_logging(config):
    work_dir = config.system.work_dir
    os.makedirs(work_dir, exist_ok=True)
    with open(os.path.join(work_dir, 'args.txt'), 'w') as f:
        f.write(' '.join(sys.argv))
    with open(os.path.join(work_dir, 'config.json'), 'w') as f:
        f.write(json.dumps(config.to_dict(), indent=4))


class CfgNode:
    """A lightweight configuration class inspired by yacs."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __str__(self):
        return self._str_helper(0)

    def _str_helper(self, indent):
        parts = []
        for k, v in self.__dict__.items():
            if isinstance(v, CfgNode):
                parts.append("%s:\n" % k)
                parts.append(v._str_helper(indent + 1))
            else:
                parts.append("%s: %s\n" % (k, v))
        return "".join(' ' * (indent * 4) + p for p in parts)

    def to_dict(self):
        return {k: v.to_dict() if isinstance(v, CfgNode) else v for k, v in self.__dict__.items()}

    def merge_from_dict(self, d):
        self.__dict__.update(d)

    def merge_from_args(self, args):
        """Overrides of the form ``--trainer.batch_size=32`` (values through literal_eval)."""
        for arg in args:
            keyval = arg.split('=')
            assert len(keyval) == 2, "expecting each override arg to be of form --arg=value"
            key, val = keyval
            try:
                val = literal_eval(val)
            except ValueError:
                pass  # a plain string
            assert key[:2] == '--'
            keys = key[2:].split('.')
            obj = self
            for k in keys[:-1]:
                obj = getattr(obj, k)
            assert hasattr(obj, keys[-1]), f"{key} is not an attribute that exists in the config"
            print("command line overwriting config attribute %s with %s" % (key, val))
            setattr(obj, keys[-1], val)
