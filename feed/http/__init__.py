"""The HTTP edge: the FastAPI app, the plain-ASGI hot paths, v3 routes, statuses and
responses, and the serving process that runs them with the background work.
"""
