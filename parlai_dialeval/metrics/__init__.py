"""Automatic metrics."""
