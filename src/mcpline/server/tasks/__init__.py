"""The tasks extension on the server: the manager, its runs, the task handle, the stores and
the quota."""
