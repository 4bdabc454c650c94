"""Structured logging: console on a TTY, JSON lines otherwise, each event with its service.

Services bind ``service`` into the context of their task (``bind_service``); every log line made
inside that task, including those of libraries that log through ``logging``, carries it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from energy_platform.core.settings import LogSettings


def configure_logging(settings: LogSettings, *, stream: Any = None) -> None:
    """Route structlog and the standard ``logging`` module to one renderer on ``stream``."""
    stream = stream or sys.stderr
    as_json = settings.format == "json" or (settings.format == "auto" and not stream.isatty())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder(), _drop_color_message],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.level.upper())
    # uvicorn logs each request at info through its own loggers; the platform has metrics for that.
    logging.getLogger("uvicorn.access").disabled = True
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(root.level)),
        cache_logger_on_first_use=True,
    )


def _drop_color_message(
    _: Any, __: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    # uvicorn attaches an ANSI-coloured copy of each message; one copy is enough.
    event.pop("color_message", None)
    return event


def bind_service(name: str) -> None:
    """Mark every log event of the current task (and tasks it starts) with the service name."""
    structlog.contextvars.bind_contextvars(service=name)
