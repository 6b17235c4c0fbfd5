"""Runnable examples, one topic each; see each file's docstring for how to run it.

The wheel ships this directory as the private package ``mcpline._examples`` so that
``mcpline demo`` serves ``quickstart.py`` itself; nothing here is a public API.
"""
