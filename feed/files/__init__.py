"""The feed files: partner documents, their writer, the export and its schedule."""
