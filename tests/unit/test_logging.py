import io
import json
import logging

import structlog

from energy_platform.core.logs import bind_service, configure_logging
from energy_platform.core.settings import LogSettings


def test_json_lines_carry_the_service_for_structlog_and_stdlib_events() -> None:
    out = io.StringIO()  # not a TTY: "auto" means JSON
    configure_logging(LogSettings(format="auto", level="info"), stream=out)
    bind_service("api")
    try:
        structlog.get_logger().info("hello", port=8000)
        logging.getLogger("uvicorn.error").info("from %s", "a library")
        structlog.get_logger().debug("below the level")
    finally:
        structlog.contextvars.clear_contextvars()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["event"] for line in lines] == ["hello", "from a library"]
    assert all(line["service"] == "api" and line["level"] == "info" for line in lines)
    assert lines[0]["port"] == 8000
    assert "timestamp" in lines[0]
