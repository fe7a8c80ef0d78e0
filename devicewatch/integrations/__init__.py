"""Epoch and phase events for scripts that use a framework's own training loop."""
