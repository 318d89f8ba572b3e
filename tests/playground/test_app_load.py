"""Load test against a launched app: 6 gradio_client sessions send 3 requests each, all at once,
into a queue that holds 4. Every request either completes with exactly the output it gives alone
or gets a clear queue-full error; nobody sees another's output; the server is fine afterwards."""
from __future__ import annotations

import threading

import pytest
from gradio_client.exceptions import AppError
from gradio_client.utils import QueueError

from helpers import args, client, launched, make_folders

SESSIONS, REQUESTS = 6, 3


def request(folders, session: int, n: int) -> list:
    # Sampled with its own seed and prompt, so every request's output is its own.
    return args(f"session {session} request {n}: abc abc abc", folders["target"], temperature=1.0,
                max_new_tokens=16, seed=100 * session + n)


def texts(stats: dict) -> tuple[str, str]:
    return stats["standard"]["text"], stats["speculative"]["text"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_folders(tmp_path_factory.mktemp("models"))


def test_concurrent_sessions_get_their_own_output_or_a_queue_full_error(folders):
    with launched(queue_max_size=4) as (url, _):
        outcomes: dict = {}
        start = threading.Barrier(SESSIONS)

        def session(s: int) -> None:
            api = client(url)
            start.wait()
            jobs = [api.submit(*request(folders, s, n), api_name="/compare") for n in range(REQUESTS)]
            for n, job in enumerate(jobs):
                try:
                    outcomes[s, n] = texts(job.result(timeout=120)[7])
                except (QueueError, AppError) as error:
                    outcomes[s, n] = error

        threads = [threading.Thread(target=session, args=(s,)) for s in range(SESSIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)

        assert len(outcomes) == SESSIONS * REQUESTS
        completed = {key: out for key, out in outcomes.items() if not isinstance(out, Exception)}
        refused = [out for out in outcomes.values() if isinstance(out, Exception)]
        assert all("queue is full" in str(error).lower() for error in refused), refused
        assert len(completed) > 1 and refused  # the queue both served and refused under this load

        # Afterwards, each served request asked again alone (the server keeps serving): the same
        # output, and no two alike, so an output handed to the wrong session would show.
        after = client(url)
        alone = {key: texts(after.predict(*request(folders, *key), api_name="/compare")[7]) for key in completed}
        assert len(set(alone.values())) == len(alone)
        for key, out in completed.items():
            assert out == alone[key], key
        assert after.predict(api_name="/limits")["limits"]["max_new_tokens"] == 48


def test_the_page_answers_within_2_seconds_while_a_slow_fetch_runs(folders):
    """Issue #20: a fetch or conversion (faked: a loader that takes 5 s) runs on a worker thread, so
    the server's event loop keeps serving `/` and /limits to everyone else meanwhile."""
    import time
    import urllib.request

    from specdec.models.loading import load_model
    from specdec.playground.store import ModelStore

    started = threading.Event()

    def slow_loader(spec, *args, **kwargs):
        started.set()
        time.sleep(5)  # the fetch and the conversion
        return load_model(spec, *args, **kwargs)

    store = ModelStore(max_models=3, device="cpu", loader=slow_loader)
    with launched(store=store) as (url, _):
        job = client(url).submit(*args("abc abc", folders["target"], max_new_tokens=4), api_name="/compare")
        assert started.wait(30)
        for _ in range(3):
            begin = time.monotonic()
            with urllib.request.urlopen(url, timeout=10) as page:
                assert page.status == 200 and b"specdec" in page.read()
            assert time.monotonic() - begin < 2.0
        assert client(url).predict(api_name="/limits")["loaded"] == []  # still fetching, and answering
        assert job.result(timeout=120)[7]["finished"]
