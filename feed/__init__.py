"""The partner side: restaurants and their days, availability, feeds, the receiver and the CLI."""
