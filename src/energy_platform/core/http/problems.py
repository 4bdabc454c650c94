"""RFC 9457 problem details: the one place where errors become HTTP responses."""

from __future__ import annotations

from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from energy_platform.core.errors import PlatformError, Unavailable
from energy_platform.core.faults import is_outside_fault

PROBLEM_JSON = "application/problem+json"
log = structlog.get_logger()


class Problem(msgspec.Struct, omit_defaults=True):
    type: str
    title: str
    status: int
    detail: str
    field: str | None = None
    """Path of the offending input, for validation errors."""


def problem_type(slug: str) -> str:
    return f"urn:energy-platform:problem:{slug}"


def problem_response(problem: Problem, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        msgspec.json.encode(problem),
        status_code=problem.status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def platform_error_handler(_: Request[Any, Any, Any], exc: PlatformError) -> Response[bytes]:
    if exc.status >= 500:
        log.error("request failed", error=exc.detail, exc_info=exc)
    return problem_response(
        Problem(problem_type(exc.slug), exc.title, exc.status, exc.detail, exc.field),
        dict(exc.headers) or None,
    )


def http_exception_handler(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    """Litestar's own errors (unknown route, wrong method, invalid parameter, body too large)."""
    field = None
    detail = exc.detail
    if isinstance(exc, ValidationException) and isinstance(exc.extra, list) and exc.extra:
        first = exc.extra[0]
        if isinstance(first, dict):
            field = _wire_name(request, first.get("key"))
            detail = first.get("message") or detail
            if field and detail:
                detail = f"{field}: {detail}"
    status = exc.status_code
    slug = "invalid-input" if status == 400 else _slug(status)
    title = "Invalid input" if status == 400 else _title(status)
    return problem_response(Problem(problem_type(slug), title, status, detail, field), exc.headers)


def _wire_name(request: Request[Any, Any, Any], key: str | None) -> str | None:
    """The parameter's name in the request (``id``), not in the handler's signature (``ids``)."""
    try:
        parameter = request.route_handler.parsed_fn_signature.parameters[key or ""]
    except (KeyError, AttributeError):
        return key
    name = getattr(parameter.kwarg_definition, "name", None)
    return name or key


def unexpected_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    if is_outside_fault(exc):
        # The database unreachable or out of time (a statement timeout on a loaded server):
        # the request itself was fine, and may be answered when retried.
        return platform_error_handler(
            request,
            Unavailable(
                "the database could not be reached or did not answer in time; retry later"
                f" ({type(exc).__name__})"
            ),
        )
    log.error("unexpected error", exc_info=exc)
    status = HTTP_500_INTERNAL_SERVER_ERROR
    return problem_response(
        Problem(problem_type("internal-error"), "Internal error", status, "unexpected error")
    )


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _slug(status: int) -> str:
    return _title(status).lower().replace(" ", "-")


EXCEPTION_HANDLERS: dict[int | type[Exception], Any] = {
    PlatformError: platform_error_handler,
    HTTPException: http_exception_handler,
    Exception: unexpected_error_handler,
}
