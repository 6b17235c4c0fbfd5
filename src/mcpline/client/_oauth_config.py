"""The arguments of `mcpline.client.oauth.OAuth` from plain settings (the ``auth`` object of
an ``mcpServers`` config entry, or the CLI's ``--auth KEY=VALUE`` options), for
`mcpline.client.oauth.oauth_settings`.

``grant`` picks the flow: ``authorization_code`` (the default: a browser),
``client_credentials``, ``workload_identity`` or ``identity_assertion``; the other keys
are that flow's arguments. Secrets come from files (``client_secret_file``,
``private_key_file``, ``token_file``, ``id_token_file``), commands (``token_command``,
``id_token_command``) or, in a config file, ``${VAR}`` (``client_secret``, ``token``,
``id_token``); ``dpop`` is ``true``/``false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from ._oauth_grants import ClientCredentials, Grant, IdentityAssertion, WorkloadIdentity
from ._oauth_stores import TokenStore

GRANTS = ("authorization_code", "client_credentials", "workload_identity", "identity_assertion")
_COMMON = {"grant", "dpop", "scopes", "client_id", "client_secret", "client_secret_file"}
_KEYS = {
    "authorization_code": _COMMON | {"token_endpoint_auth_method"},
    "client_credentials": _COMMON
    | {"private_key_file", "signing_algorithm", "token_endpoint_auth_method"},
    "workload_identity": _COMMON | {"token", "token_file", "token_command"},
    "identity_assertion": _COMMON
    | {
        "idp_token_endpoint",
        "idp_client_id",
        "idp_client_secret",
        "idp_client_secret_file",
        "id_token",
        "id_token_file",
        "id_token_command",
        "token_endpoint_auth_method",
    },
}
MAX_SECRET_FILE_BYTES = 64 * 1024


def _read(path: str, what: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read the {what} file {path}: {exc.strerror}") from None
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise ValueError(f"the {what} file {path} holds more than {MAX_SECRET_FILE_BYTES} bytes")
    return data.decode("utf-8", "replace").strip()


def _flag(value: Any, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ValueError(f"auth {key} must be true or false")


class OAuthArguments(TypedDict):
    """The keyword arguments of `mcpline.client.oauth.OAuth` that settings give."""

    client_name: str
    client_id: str | None
    client_secret: str | None
    token_endpoint_auth_method: str | None
    scopes: list[str] | None
    store: TokenStore | None
    grant: Grant | None
    dpop: bool | None


def oauth_arguments(
    settings: Mapping[str, Any], *, client_name: str = "mcpline", store: TokenStore | None = None
) -> OAuthArguments:
    """The `OAuth` arguments ``settings`` describe (see the module docs); ValueError names what
    is wrong (never a secret's value)."""
    grant_name = str(settings.get("grant") or "authorization_code").replace("-", "_")
    if grant_name not in _KEYS:
        raise ValueError(f"auth grant must be one of {', '.join(GRANTS)}, not {grant_name!r}")
    unknown = sorted(set(settings) - _KEYS[grant_name])
    if unknown:
        raise ValueError(f"auth for the {grant_name} grant does not take {', '.join(unknown)}")
    s = {k: v for k, v in settings.items() if v is not None}
    for key, value in s.items():
        if key not in ("dpop", "scopes") and not isinstance(value, str):
            raise ValueError(f"auth {key} must be a string")
    secret = s.get("client_secret")
    if "client_secret_file" in s:
        secret = _read(s["client_secret_file"], "client secret")
    scopes = s.get("scopes")
    if isinstance(scopes, str):
        scopes = scopes.split()
    if scopes is not None and not (
        isinstance(scopes, list) and all(isinstance(x, str) for x in scopes)
    ):
        raise ValueError("auth scopes must be a list of strings or a space-separated string")
    dpop = _flag(s.get("dpop"), "dpop")
    client_id = s.get("client_id")
    grant: Grant | None = None
    if grant_name == "client_credentials":
        if client_id is None:
            raise ValueError("auth for the client_credentials grant needs a client_id")
        pem = _read(s["private_key_file"], "private key") if "private_key_file" in s else None
        grant = ClientCredentials(
            client_id,
            client_secret=secret,
            private_key=pem,
            signing_algorithm=s.get("signing_algorithm"),
            token_endpoint_auth_method=s.get("token_endpoint_auth_method"),
        )
    elif grant_name == "workload_identity":
        grant = WorkloadIdentity(
            client_id=client_id,
            client_secret=secret,
            token=s.get("token"),
            token_file=s.get("token_file"),
            token_command=s.get("token_command"),
        )
    elif grant_name == "identity_assertion":
        if client_id is None or "idp_token_endpoint" not in s:
            raise ValueError(
                "auth for the identity_assertion grant needs a client_id and an idp_token_endpoint"
            )
        idp_secret = s.get("idp_client_secret")
        if "idp_client_secret_file" in s:
            idp_secret = _read(s["idp_client_secret_file"], "IdP client secret")
        grant = IdentityAssertion(
            client_id=client_id,
            client_secret=secret,
            idp_token_endpoint=s["idp_token_endpoint"],
            idp_client_id=s.get("idp_client_id"),
            idp_client_secret=idp_secret,
            id_token=s.get("id_token"),
            id_token_file=s.get("id_token_file"),
            id_token_command=s.get("id_token_command"),
            token_endpoint_auth_method=s.get("token_endpoint_auth_method"),
        )
    return OAuthArguments(
        client_name=client_name,
        client_id=client_id if grant is None else None,
        client_secret=secret if grant is None else None,
        token_endpoint_auth_method=s.get("token_endpoint_auth_method") if grant is None else None,
        scopes=scopes,
        store=store,
        grant=grant,
        dpop=dpop,
    )


__all__ = ["GRANTS", "OAuthArguments", "oauth_arguments"]
