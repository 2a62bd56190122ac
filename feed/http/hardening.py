"""Headers every response carries, whichever layer answered it (a hot path, a FastAPI
route, the tablet's static files, /docs, an error): the browser is told not to guess a
type, not to frame the page, and not to send our URLs to anybody else.

A header a response already sets (the tablet page's own Content-Security-Policy) is kept.
"""

from __future__ import annotations

from feed.http.hotpaths import ASGIApp, Message, Receive, Scope, Send

HEADERS = (
    # A JSON reply holding a guest's name is never run as a script or drawn as a page.
    (b"x-content-type-options", b"nosniff"),
    # The host's page and /docs cannot be framed by another site and tapped through
    # (browsers without CSP frame-ancestors read this one).
    (b"x-frame-options", b"DENY"),
    # The tablet's event stream carries its host token in its query (?token=).
    (b"referrer-policy", b"no-referrer"),
)


class Hardened:
    """`app` with HEADERS added to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {bytes(name).lower() for name, _ in headers}
                headers += [(n, v) for n, v in HEADERS if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_)
