"""Every answer of every operation in the OpenAPI document, errors as problem JSON.

Litestar documents what a handler returns; the errors come from the platform's error tree and
from Litestar's own checks, which it does not know about. ``document_problems`` adds them to
every operation in one place, from what the operation has:

- query parameters or a request body (``request`` or ``data``): 400 (and 413 for a body over
  the size limit);
- path parameters: 404 (an id or serial number that names nothing), and 400 where a path
  parameter has a format of its own (declared, see below);
- a dependency that authenticates (``authenticating`` of ``build_app``): its statuses (401,
  403), and its security scheme (so that API explorers offer to send the credential);
- anything a handler raises on its own: ``opt=problems(409, 429)`` on its decorator;
- a body a handler reads itself: ``opt=request_body(...)`` documents it (and its 400, 413);
- a handler that authenticates inside its own query (one round trip) instead of through the
  dependency: ``opt=authenticates_as("caller")`` gives it that dependency's statuses and scheme;
- a success body sent as text of another media type (CSV), on request or always:
  ``opt=text_answer("text/csv", description)`` documents it as a string of that type.

It also writes fixed-length tuples (a data point ``[t, v]``) without ``prefixItems``: an
array of ``anyOf`` its member types with ``minItems = maxItems``. Schemathesis (4.32) turns
``prefixItems`` into a draft-4 ``items`` list that its own response validator then refuses, and
many client generators do not read ``prefixItems`` either.

Each error response is ``application/problem+json`` with the ``Problem`` schema. A 400 may
also be ``text/plain``: a request the HTTP server cannot parse at all (a request line or header
block over h11's 16 KiB, bytes that are not HTTP) never reaches the app, and uvicorn answers it
in plain text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from http import HTTPStatus

import msgspec
from litestar import Litestar
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.handlers import HTTPRouteHandler
from litestar.openapi.spec import (
    OpenAPI,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Reference,
    RequestBody,
    Schema,
    SecurityRequirement,
    SecurityScheme,
)
from litestar.routes import HTTPRoute

from energy_platform.core.http.problems import PROBLEM_JSON

BODY_OPT = "request_body"
"""Key of a handler's ``opt`` describing a body it reads itself (``await request.body()``)."""
PROBLEMS_OPT = "problems"
"""Key of a handler's ``opt`` naming the error statuses its own body can answer."""
AUTHENTICATES_OPT = "authenticates_as"
"""Key of a handler's ``opt`` naming the authenticating dependency its own query stands in for."""
TEXT_ANSWER_OPT = "text_answer"
"""Key of a handler's ``opt`` naming a text media type its success body may come as."""
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def problems(*statuses: int) -> dict[str, tuple[int, ...]]:
    """A handler's ``opt`` naming the error statuses its own body answers (409, 429, 503...)."""
    return {PROBLEMS_OPT: statuses}


def request_body(description: str, media: Mapping[str, Schema]) -> dict[str, RequestBody]:
    """A handler's ``opt`` documenting the body it reads and parses itself, by media type:
    Litestar documents only a body it decodes."""
    content = {name: OpenAPIMediaType(schema=schema) for name, schema in media.items()}
    return {BODY_OPT: RequestBody(content=content, description=description, required=True)}


def authenticates_as(*dependencies: str) -> dict[str, tuple[str, ...]]:
    """A handler's ``opt`` for one that checks the credential of ``dependencies`` itself."""
    return {AUTHENTICATES_OPT: dependencies}


def text_answer(media_type: str, description: str) -> dict[str, tuple[str, str]]:
    """A handler's ``opt`` for a success body that comes as text of ``media_type`` (besides, or
    instead of, what Litestar documents from the return annotation)."""
    return {TEXT_ANSWER_OPT: (media_type, description)}


PROBLEM_SCHEMA = Schema(
    type=OpenAPIType.OBJECT,
    description="RFC 9457 problem details.",
    required=["type", "title", "status", "detail"],
    properties={
        "type": Schema(type=OpenAPIType.STRING, description="urn:energy-platform:problem:..."),
        "title": Schema(type=OpenAPIType.STRING),
        "status": Schema(type=OpenAPIType.INTEGER, description="The HTTP status."),
        "detail": Schema(type=OpenAPIType.STRING),
        "field": Schema(
            type=OpenAPIType.STRING, description="Path of the offending input, for 400."
        ),
    },
)


class Authentication(msgspec.Struct, frozen=True):
    """How a dependency authenticates callers: its scheme and the statuses it answers."""

    scheme: SecurityScheme
    statuses: tuple[int, ...] = (401,)


def bearer(description: str) -> Authentication:
    return Authentication(SecurityScheme(type="http", scheme="bearer", description=description))


def api_key_header(name: str, description: str, *statuses: int) -> Authentication:
    scheme = SecurityScheme(
        type="apiKey", name=name, security_scheme_in="header", description=description
    )
    return Authentication(scheme, statuses)


UNPARSABLE = Schema(
    type=OpenAPIType.STRING, description="The HTTP server's answer to a request it cannot parse."
)


def document_problems(app: Litestar, authenticating: Mapping[str, Authentication]) -> None:
    """Add the error answers of every operation of ``app`` to its OpenAPI document."""
    openapi = app.plugins.get(OpenAPIPlugin).provide_openapi()  # built once, then served
    if openapi.components.schemas is None:
        openapi.components.schemas = {}
    openapi.components.schemas["Problem"] = PROBLEM_SCHEMA
    if authenticating:
        openapi.components.security_schemes = {
            name: auth.scheme for name, auth in authenticating.items()
        }
    _tuples_without_prefix_items(openapi)
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if not handler.resolve_include_in_schema():
                continue
            for method in handler.http_methods:
                operation = _operation(openapi, route.path_format or "/", method)
                if operation is None:
                    continue
                _optional_parameters_without_null(operation)
                if BODY_OPT in handler.opt:
                    operation.request_body = handler.opt[BODY_OPT]
                used = _authentications(handler, authenticating)
                if used:
                    requirements: list[SecurityRequirement] = [{name: []} for name in used]
                    operation.security = requirements
                _add_text_answer(handler, operation)
                statuses = _statuses(handler, method, operation)
                for name in used:
                    statuses.update(authenticating[name].statuses)
                _add_problems(operation, statuses)


def _tuples_without_prefix_items(node: object) -> None:
    """Every tuple ``Schema`` below ``node``: ``anyOf`` its members, a fixed length."""
    if isinstance(node, Schema) and node.prefix_items and node.items is None:
        members = list(node.prefix_items)
        node.prefix_items = None
        node.items = members[0] if len(members) == 1 else Schema(any_of=members)
        node.min_items = node.max_items = len(members)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for field in dataclasses.fields(node):
            _tuples_without_prefix_items(getattr(node, field.name))
    elif isinstance(node, dict):
        for value in node.values():
            _tuples_without_prefix_items(value)
    elif isinstance(node, list | tuple):
        for value in node:
            _tuples_without_prefix_items(value)


def _optional_parameters_without_null(operation: Operation) -> None:
    """An optional parameter (``x: Enum | None = None``) is left out, never sent as null: its
    schema is the plain type (an enum stays an enum), which client generators read as an
    optional value instead of a union with a null type."""
    for parameter in operation.parameters or []:
        schema = getattr(parameter, "schema", None)
        if getattr(parameter, "required", True) or not isinstance(schema, Schema):
            continue
        if isinstance(schema.type, list) and OpenAPIType.NULL in schema.type:
            kept = [t for t in schema.type if t != OpenAPIType.NULL]
            schema.type = kept[0] if len(kept) == 1 else kept
            if schema.enum is not None:
                schema.enum = [v for v in schema.enum if v is not None]
        if schema.one_of:
            kept = [o for o in schema.one_of if getattr(o, "type", None) != OpenAPIType.NULL]
            if len(kept) == 1 and isinstance(kept[0], Schema):
                # The one remaining type, merged into the parameter's own constraints (an
                # items schema the parameter declares itself, schema_extra, stays).
                only = kept[0]
                schema.one_of = None
                schema.type, schema.enum = only.type, only.enum
                schema.items = schema.items or only.items
            else:
                schema.one_of = kept


def _operation(openapi: OpenAPI, path: str, method: str) -> Operation | None:
    item = (openapi.paths or {}).get(path)
    operation = getattr(item, method.lower(), None) if item is not None else None
    return operation if isinstance(operation, Operation) else None


def _authentications(
    handler: HTTPRouteHandler, authenticating: Mapping[str, Authentication]
) -> list[str]:
    """The authenticating dependencies this handler resolves or stands in for."""
    dependencies = handler.resolve_dependencies()
    parameters = handler.parsed_fn_signature.parameters
    itself = handler.opt.get(AUTHENTICATES_OPT, ())
    return [
        name
        for name in authenticating
        if (name in dependencies and name in parameters) or name in itself
    ]


def _statuses(handler: HTTPRouteHandler, method: str, operation: Operation) -> set[int]:
    statuses = set(handler.opt.get(PROBLEMS_OPT, ()))
    places = {getattr(p, "param_in", None) for p in operation.parameters or []}
    if "query" in places:
        statuses.add(400)
    if "path" in places:
        statuses.add(404)
    # A body is read either raw (``request``) or decoded by Litestar into ``data``.
    reads_body = {"request", "data"} & handler.parsed_fn_signature.parameters.keys()
    if method in BODY_METHODS and reads_body:
        statuses.update((400, 413))
    return statuses


def _add_text_answer(handler: HTTPRouteHandler, operation: Operation) -> None:
    """The text media type of ``text_answer`` on the operation's success responses; a schema
    Litestar made up for it (a streamed body's, which it cannot know) gives way."""
    if TEXT_ANSWER_OPT not in handler.opt:
        return
    media_type, description = handler.opt[TEXT_ANSWER_OPT]
    for status, response in (operation.responses or {}).items():
        if int(status) < 300 and isinstance(response, OpenAPIResponse):
            content = response.content if response.content is not None else {}
            content[media_type] = OpenAPIMediaType(
                schema=Schema(type=OpenAPIType.STRING, description=description)
            )
            response.content = content


def _add_problems(operation: Operation, statuses: set[int]) -> None:
    # Litestar's own guess (a 400 in its own JSON shape) gives way to the platform's answers.
    responses = {k: v for k, v in (operation.responses or {}).items() if int(k) < 400}
    for status in sorted(statuses):
        content = {PROBLEM_JSON: OpenAPIMediaType(schema=Reference("#/components/schemas/Problem"))}
        if status == 400:
            content["text/plain"] = OpenAPIMediaType(schema=UNPARSABLE)
        responses[str(status)] = OpenAPIResponse(
            description=HTTPStatus(status).phrase, content=content
        )
    operation.responses = responses
