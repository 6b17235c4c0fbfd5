"""`Registry`: what one server serves (tools, resources, prompts, completions and the OAuth
scopes each needs) and what it advertises from them.

`mcpline.Server`'s decorators write it; the dispatcher (`mcpline.server.methods`), the task
runtime and the HTTP transport read it, through the names below only. Resources (URI
templates) and completions are built on first use, so a tools-only server does not load
them.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from ..errors import JsonRpcError
from ..spec import COMPLETE, PROMPTS_GET, RESOURCES_READ, TASKS_EXTENSION, TOOLS_CALL
from .scopes import ScopeRules

if TYPE_CHECKING:
    from .completion import Completions
    from .prompts import Prompt
    from .resources import Resource, Resources
    from .tools import Tool

LISTED_KINDS = ("tools", "prompts", "resources")
"""The kinds whose lists a server advertises once one of them is registered."""


class Registry:
    """The tools, resources, prompts and completions of one server."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        """Registered tools by name, hidden ones too."""
        self.hidden_tools: set[str] = set()
        """Tools left out of ``tools/list`` (still callable)."""
        self.task_tools: dict[str, str] = {}
        """Tools registered with ``task=``: name → ``"optional"`` or ``"required"``."""
        self.prompts: dict[str, Prompt] = {}
        """Registered prompts by name."""
        self.scopes = ScopeRules()
        """The OAuth scopes tools, prompts and resources require (their ``scopes=``)."""
        self.offered: set[str] = set()
        """Which of `LISTED_KINDS` were ever registered (advertised from then on)."""
        self._listed: list[dict[str, Any]] | None = None

    # --- registries built on first use ---------------------------------------------------------

    @cached_property
    def resources(self) -> Resources:
        """Static resources and templates (built on first use)."""
        from .resources import Resources

        return Resources()

    @cached_property
    def completions(self) -> Completions:
        """Completers of ``completion/complete`` (built on first use)."""
        from .completion import Completions

        return Completions()

    def has_resources(self) -> bool:
        """Whether `resources` was ever built (else no resource is registered)."""
        return "resources" in self.__dict__

    def has_completions(self) -> bool:
        """Whether `completions` was ever built (else no completer is registered)."""
        return "completions" in self.__dict__

    # --- writing ---------------------------------------------------------------------------------

    def add_tool(self, tool: Tool, *, task: str | None, hidden: bool) -> None:
        """Register ``tool`` (`ValueError` for a name taken), run as a task per ``task``."""
        if tool.name in self.tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        if task is not None:
            self.task_tools[tool.name] = task
        if hidden:
            self.hidden_tools.add(tool.name)
        self._listed = None
        self.offered.add("tools")

    def remove_tool(self, name: str) -> bool:
        """Unregister a tool (`KeyError` if there is none); whether it was listed."""
        del self.tools[name]
        self.scopes.set("tool", name, None)
        self.task_tools.pop(name, None)
        self._listed = None
        if name in self.hidden_tools:
            self.hidden_tools.discard(name)
            return False
        return True

    def add_resource(self, resource: Resource) -> None:
        """Register a static resource or a template."""
        self.resources.add(resource)
        self.offered.add("resources")

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by URI/template (`KeyError` if there is none)."""
        self.resources.remove(uri)
        self.scopes.set("resource", uri, None)

    def add_prompt(self, prompt: Prompt) -> None:
        """Register ``prompt`` (`ValueError` for a name taken)."""
        if prompt.name in self.prompts:
            raise ValueError(f"a prompt named {prompt.name!r} is already registered")
        self.prompts[prompt.name] = prompt
        self.offered.add("prompts")

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt (`KeyError` if there is none)."""
        del self.prompts[name]
        self.scopes.set("prompt", name, None)

    # --- reading ---------------------------------------------------------------------------------

    def listed_tools(self) -> list[dict[str, Any]]:
        """The ``tools/list`` definitions in order, built once per change (not per page)."""
        listed = self._listed
        if listed is None:
            hidden = self.hidden_tools
            listed = [t.definition for t in self.tools.values() if t.name not in hidden]
            self._listed = listed
        return listed

    def watchable(self, uri: str) -> bool:
        """Whether a listen may subscribe to ``uri`` (a resource served here, or a parent)."""
        return self.has_resources() and self.resources.watchable(uri)

    def capabilities(self, *, tasks: bool) -> dict[str, Any]:
        """The ``ServerCapabilities`` of what is registered (``tasks``: whether the tasks
        extension is offered, which also depends on the server's store and history)."""
        caps: dict[str, Any] = {}
        if "tools" in self.offered:
            caps["tools"] = {"listChanged": True}
        if "prompts" in self.offered:
            caps["prompts"] = {"listChanged": True}
        if "resources" in self.offered:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if (self.has_completions() and self.completions) or self.auto_completions():
            caps["completions"] = {}
        caps["logging"] = {}
        if tasks:
            caps["extensions"] = {TASKS_EXTENSION: {}}
        return caps

    def auto_completions(self) -> bool:
        """Whether some prompt argument or template variable completes itself (an enum)."""
        if not self.prompts and not self.has_resources():
            return False
        from . import completion

        for prompt in self.prompts.values():
            schema = prompt.signature.schema
            if any(completion.choices_for(schema, a) for a in prompt.arguments):
                return True
        for res in self.resources.templates.values():
            tschema = res.signature.schema if res.signature else None
            names = res.template.variables if res.template else ()
            if any(completion.choices_for(tschema, v) for v in names):
                return True
        return False

    def required_scopes(self, method: str, params: Any) -> frozenset[str]:
        """The scopes a ``tools/call``, ``prompts/get``, ``resources/read`` or a
        ``completion/complete`` of a prompt's or resource template's argument with these params
        requires (none for other methods or for what is not registered)."""
        if not self.scopes or not isinstance(params, dict):
            return frozenset()
        if method == COMPLETE:
            ref = params.get("ref")
            if not isinstance(ref, dict):
                return frozenset()
            if ref.get("type") == "ref/prompt":
                method, params = PROMPTS_GET, ref
            elif ref.get("type") == "ref/resource":
                method, params = RESOURCES_READ, ref
        key = params.get("uri" if method == RESOURCES_READ else "name")
        if not isinstance(key, str):
            return frozenset()
        if method == TOOLS_CALL:
            return self.scopes.required("tool", key)
        if method == PROMPTS_GET:
            return self.scopes.required("prompt", key)
        if method == RESOURCES_READ:
            return self.scopes.required("resource", key) or self._resource_scopes(key)
        return frozenset()

    def _resource_scopes(self, uri: str) -> frozenset[str]:
        """The scopes of the resource or template serving ``uri`` (none if there is none)."""
        if not self.has_resources():
            return frozenset()
        try:
            res, _ = self.resources.resolve(uri)
        except JsonRpcError:
            return frozenset()
        return self.scopes.required("resource", res.uri)


__all__ = ["LISTED_KINDS", "Registry"]
