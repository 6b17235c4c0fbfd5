"""pydantic support, for signatures and types that use it: the model of a signature's
arguments and its binding, JSON Schemas of pydantic types, their errors as text, and the
encoding of pydantic values. pydantic is imported only when one of these runs."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Literal

from .annotations import Translate, prepare, pydantic_loaded
from .bounds import MAX_REPORTED_ERRORS, ArgumentError, SchemaError


@functools.cache
def _generator() -> Any:
    """pydantic's JSON Schema generator, without the titles it invents for every field."""
    from pydantic.json_schema import GenerateJsonSchema

    class Generator(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return Generator


def error_text(exc: Any) -> str:
    """A pydantic ``ValidationError`` as ``field: message`` pairs."""
    parts = []
    for err in exc.errors(include_url=False)[:MAX_REPORTED_ERRORS]:
        loc = "/".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{'/' + loc if loc else 'arguments'}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def arguments_model(
    name: str, params: list[tuple[str, Any, Any]], arg_docs: dict[str, str], *, var_kw: bool
) -> tuple[Any, dict[str, Any]]:
    """The pydantic model of a signature's arguments (fields ``p0``, ``p1``, … aliased to the
    parameters' names) and its JSON Schema; `SchemaError` naming the parameter it cannot take."""
    import pydantic
    from pydantic.fields import FieldInfo

    fields: dict[str, Any] = {}
    for i, (pname, hint, default) in enumerate(params):
        where = f"{name}: parameter {pname!r}"
        tr = Translate(where, pydantic=True)
        try:
            tp = prepare(hint, tr, arg_docs.get(pname), default)
        except TypeError as exc:  # msgspec.Meta(tz=...)
            raise SchemaError(f"{where}: {exc}") from None
        if isinstance(default, FieldInfo):
            if default.alias or default.validation_alias:
                raise SchemaError(
                    f"{where}: Field(alias=...) cannot be honoured; the argument is named "
                    "after the parameter (rename the parameter instead)"
                )
            spec = FieldInfo.merge_field_infos(default, pydantic.Field(alias=pname))
        elif default is inspect.Parameter.empty:
            spec = pydantic.Field(alias=pname)
        else:
            spec = pydantic.Field(default, alias=pname)
        # Fields are named p0, p1, ... so that no parameter name can clash with
        # BaseModel's own attributes (json, schema, model_*); the alias is the name.
        fields[f"p{i}"] = (tp, spec)
    model_name = re.sub(r"\W", "_", name) + "Arguments"
    config = pydantic.ConfigDict(
        extra="ignore" if var_kw else "forbid", arbitrary_types_allowed=False
    )
    try:
        model = pydantic.create_model(model_name, __config__=config, **fields)
        root = model.model_json_schema(
            by_alias=True,
            ref_template="#/$defs/{model}",
            schema_generator=_generator(),
        )
    except (TypeError, ValueError, pydantic.PydanticUserError) as exc:
        raise SchemaError(_culprit(name, params, exc)) from exc
    return model, dict(root)


def bind_arguments(
    model: Any, names: list[str], var_kw: bool, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Typed keyword arguments from validated JSON arguments, by ``model``
    (`arguments_model`); `ArgumentError` naming each field that does not convert."""
    import pydantic

    known = {k: v for k, v in arguments.items() if k in names} if var_kw else arguments
    try:
        value = model.model_validate(known)
    except pydantic.ValidationError as exc:
        raise ArgumentError(error_text(exc)) from None
    out = {n: getattr(value, f"p{i}") for i, n in enumerate(names)}
    if var_kw:
        out.update((k, v) for k, v in arguments.items() if k not in names)
    return out


def _culprit(name: str, params: list[tuple[str, Any, Any]], exc: Exception) -> str:
    """pydantic failed on a whole signature: say which parameter."""
    import pydantic

    for pname, hint, _ in params:
        try:
            pydantic.TypeAdapter(hint).json_schema()
        except Exception as inner:
            first = str(inner).splitlines()[0]
            return (
                f"{name}: parameter {pname!r}: pydantic cannot describe this type ({first}); "
                "in a signature that uses pydantic every parameter needs a type pydantic "
                "knows (a msgspec.Struct does not mix with pydantic: use a model or dataclass)"
            )
    return f"{name}: cannot derive a JSON Schema: {str(exc).splitlines()[0]}"


def output_schema(
    tp: Any, mode: Literal["validation", "serialization"] = "serialization"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A type's JSON Schema as pydantic describes it (by default as values are sent), and
    its ``$defs``; `SchemaError` when pydantic cannot."""
    import pydantic

    try:
        schema = pydantic.TypeAdapter(tp).json_schema(
            mode=mode,
            ref_template="#/$defs/{model}",
            schema_generator=_generator(),
        )
    except Exception as exc:
        raise SchemaError(f"pydantic cannot describe {tp!r}: {str(exc).splitlines()[0]}") from exc
    schema = dict(schema)
    return schema, dict(schema.pop("$defs", {}))


def enc_hook(value: Any) -> Any:
    """What msgspec cannot encode: pydantic models and types (when pydantic is loaded)."""
    if pydantic_loaded():
        import pydantic_core

        return pydantic_core.to_jsonable_python(value, by_alias=True)
    raise TypeError(f"Encoding objects of type {type(value).__name__} is unsupported")
