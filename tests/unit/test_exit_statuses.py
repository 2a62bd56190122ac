"""`hoststand host ...` exits 2 for exactly the refusals the HTTP edge answers 400 or 422."""

from __future__ import annotations

from feed.hostcli import BAD_INPUT_CODES, EXIT_BAD_INPUT, EXIT_REFUSED, exit_status
from feed.http.statuses import HTTP_STATUS


def test_a_host_command_exits_as_bad_input_for_the_codes_http_answers_400_or_422() -> None:
    # feed.hostcli may not import feed.http, so it names the codes itself: this keeps a code
    # added to statuses.py as bad input from exiting 1 ("refused") at the terminal.
    bad_input = {code for code, status in HTTP_STATUS.items() if status in (400, 422)}
    assert bad_input == BAD_INPUT_CODES
    for code in HTTP_STATUS:
        assert exit_status(code) == (EXIT_BAD_INPUT if code in bad_input else EXIT_REFUSED)
