"""From a Python signature to a tool's schemas and back: JSON Schema from type hints and its
bounds, validation and coercion, pydantic types, elicitation forms and docstrings."""
