"""The server's bad-input catalogue (`scripts/bad_requests.py`) as tests: each hostile request
gets its status and an OpenAI error object that says what and where (or, for inputs that are
merely hard, a complete output), and the server keeps answering. The cases that compile or
generate for seconds run in `scripts/bad-inputs-server` only."""

import pytest

import bad_requests

CASES = [c for c in bad_requests.cases() if not c.slow]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_request(server, case):
    status, body = bad_requests.send(server.base, server.key, case)
    assert bad_requests.problems(case, status, body) == []
    assert server.get("/health", key=None)[0] == 200
