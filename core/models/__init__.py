"""Model backends behind the ModelClient protocol."""
