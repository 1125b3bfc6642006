"""lucid's compile forms over a kiln.nn module, with numpy arrays in and out (zero-copy).

  PYTHONPATH=build/python /usr/bin/python3 examples/python/lucid_module.py
"""
import numpy as np

import kiln
from kiln import functional as F


class MLP(kiln.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = kiln.nn.Linear(4, 16, seed=1)
        self.fc2 = kiln.nn.Linear(16, 2, seed=2)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


model = kiln.compile(MLP(), dynamic=True)  # dim 0 symbolic: one entry for every batch
for batch in (1, 5, 9):
    y = np.asarray(model(np.ones((batch, 4), np.float32)))
    print(batch, y.shape, y[0])
print(sorted(model.state_dict()), model.stats().entries, "entry")


@kiln.compile
def scaled_tanh(x, k):
    return F.tanh(x) * k


print(np.asarray(scaled_tanh(np.linspace(-1, 1, 5, dtype=np.float32), 2.0)))
