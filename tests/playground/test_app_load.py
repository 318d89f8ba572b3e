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
        solo = client(url)
        alone = {(s, n): texts(solo.predict(*request(folders, s, n), api_name="/compare")[7])
                 for s in range(SESSIONS) for n in range(REQUESTS)}
        assert len(set(alone.values())) == len(alone)  # distinct, so cross-talk would show

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
        for key, out in completed.items():
            assert out == alone[key], key
        assert all("queue is full" in str(error).lower() for error in refused), refused
        assert completed and refused  # the queue both served and refused under this load

        after = client(url)
        assert texts(after.predict(*request(folders, 0, 0), api_name="/compare")[7]) == alone[0, 0]
        assert after.predict(api_name="/limits")["limits"]["max_new_tokens"] == 48
