"""The partner side: restaurants and their days, availability, feeds, the receiver and the CLI."""

import logging

# The service logs events (a refused booking, a cancel refused) as records of "hoststand.*".
# `hoststand serve` writes them (feed.http.logs); the other commands say what happened in
# their own words, and without a handler Python's last resort would print each record's bare
# event ("book", "cancel") on stderr above the command's own error line.
logging.getLogger("hoststand").addHandler(logging.NullHandler())
