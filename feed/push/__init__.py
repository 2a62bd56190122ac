"""The push to partners: the outbox sender and HTTP delivery with back-off."""
