"""docs/python.md's first example: a Python nn.Module trained with AdamW.

    PYTHONPATH=build/python python3 examples/python/quickstart.py
"""

import numpy as np
import ember as torch
import ember.nn as nn
import ember.nn.functional as F

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = MLP()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
x = torch.randn(64, 4)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()      # 3 classes
for step in range(200):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
with torch.no_grad():
    acc = (model(x).argmax(1) == y).float().mean().item()
print(model)
print(f"loss {loss.item():.3f}, train accuracy {acc:.2f}")
a = model.fc1.weight.detach().numpy()            # zero-copy view of the weights
print(type(a).__name__, a.shape, np.shares_memory(a, model.fc1.weight.detach().numpy()))
