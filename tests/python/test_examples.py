"""The scripts of examples/python run and print what the README and docs/python.md show."""
import os
import subprocess
import sys

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def run(name):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, name)], check=True, capture_output=True,
                          text=True, env=dict(os.environ)).stdout


def test_max_examples():
    out = run("max_examples.py")
    assert out.startswith("tensor([[3, 3], [3, 3], [3, 3], [3, 3]], f32)\n")
    assert '"kiln.add"(%arg0, %arg1)' in out and 'loc("max_examples.py":18:13)' in out


def test_lucid_module():
    lines = run("lucid_module.py").splitlines()
    assert [line.split(" [")[0] for line in lines[:3]] == ["1 (1, 2)", "5 (5, 2)", "9 (9, 2)"]
    assert lines[3] == "['fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight'] 1 entry"
