"""Importing this module registers the built-in tasks (their ``@register`` decorators run)."""

from . import adding, data_file, periodic, recall, reber, spikes, temporal_order  # noqa: F401
