"""The suite's fixtures and markers; the shared helpers they use live in tests/helpers.py."""
from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest  # noqa: E402
import torch  # noqa: E402

from helpers import tiny_model  # noqa: E402

# Under pytest-xdist (scripts/test runs two workers) each worker has a core of its own: a second
# intra-op thread would contend with the other worker's. Run alone, the suite uses both cores.
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else max(1, min(2, os.cpu_count() or 1)))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # and so does a subprocess a test starts (the CLI's test): with torch's default of a thread a
    # core it took 60 s beside the other worker, against 19 s alone.
    os.environ["OMP_NUM_THREADS"] = "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: loads the real embedded SmolLM2 model (slower)")
    config.addinivalue_line("markers", "browser: drives the app in headless Chromium")


@pytest.fixture(autouse=True)
def own_costs_folder(tmp_path_factory, monkeypatch):
    """Each test's learned costs in a folder of its own, never the user's cache: a cost file left by
    one test (or by a real run) would change what the next one's cost policy chooses."""
    monkeypatch.setenv("SPECDEC_COSTS", str(tmp_path_factory.mktemp("costs")))


@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors gain nothing from intra-op threads; on a busy 2-core machine two threads wait on
    each other (a forward of the tiny model measured 270 ms with 2 threads, 2.3 ms with 1). A module
    opts in with pytestmark = pytest.mark.usefixtures("one_thread")."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def llama():
    return tiny_model("llama", seed=0)


@pytest.fixture(scope="session")
def qwen():
    return tiny_model("qwen2", seed=3)
