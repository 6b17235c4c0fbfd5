"""The check groups, one module each; `mcpline.check.registry` lists them and their order."""
