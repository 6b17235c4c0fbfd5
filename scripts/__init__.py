"""Developer scripts (not shipped): ``python -m scripts.ci``."""
