"""The service layer: service days over the log, the webhook and host receiver, the
partner API, what partners should hear. Error codes are values here; HTTP maps them.
"""
