"""The OpenAPI documents list the error answers of each operation as problem JSON."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar

from energy_platform.api import app as data
from energy_platform.core.settings import Settings
from energy_platform.forwarder.http import app as forwarder
from energy_platform.provisioning.http import app as provisioning

BUILDERS = {
    "api": data.create_app,
    "provisioning": provisioning.create_app,
    "forwarder": forwarder.create_app,
}


def document(name: str) -> dict[str, Any]:
    app: Litestar = BUILDERS[name](Settings())
    return app.openapi_schema.to_schema()


def answers(doc: dict[str, Any], method: str, path: str) -> set[str]:
    return set(doc["paths"][path][method]["responses"])


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_error_answer_is_problem_json_with_its_schema(name: str) -> None:
    doc = document(name)
    assert "Problem" in doc["components"]["schemas"]
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    content = response["content"]
                    schema = content["application/problem+json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Problem"}, (method, path)


def test_data_api_operations_list_what_they_answer() -> None:
    doc = document("api")
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if path.startswith(("/users", "/feeds")):
                assert {"401", "404"} <= set(operation["responses"]), (method, path)
    data_path = "/feeds/{feed_id}/streams/{stream_id}/data"
    assert answers(doc, "get", data_path) == {"200", "400", "401", "404"}
    # Writing needs a write token: 403 for a read one.
    assert answers(doc, "patch", "/users/{user_id}/notifications") == {
        "205", "400", "401", "403", "404", "413",
    }  # fmt: skip
    tokens = "/users/{user_id}/tokens"
    assert answers(doc, "get", tokens) == {"200", "401", "403", "404"}
    # A body Litestar decodes (``data``) is a body too: 400 and 413.
    assert answers(doc, "post", tokens) == {"201", "400", "401", "403", "404", "409", "413"}
    assert answers(doc, "delete", tokens + "/{name}") == {"204", "401", "403", "404", "409"}
    # Reads stay open to read tokens.
    assert "403" not in set(answers(doc, "get", "/users/{user_id}/notifications"))
    assert answers(doc, "get", "/readyz") == {"200", "503"}
    assert doc["components"]["securitySchemes"]["caller"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A user token (`admin users add`).",
    }
    assert doc["paths"]["/feeds/{feed_id}"]["get"]["security"] == [{"caller": []}]
    assert "security" not in doc["paths"]["/healthz"]["get"]
    assert answers(doc, "get", "/healthz") == {"200"}


def test_provisioning_operations_list_what_they_answer() -> None:
    doc = document("provisioning")
    assert answers(doc, "get", "/api/device/{sn}/boot") == {
        "200", "202", "400", "404", "409", "429",
    }  # fmt: skip
    assert answers(doc, "get", "/api/device/{sn}/upgrade") == {"200", "400", "404", "429"}
    assert answers(doc, "post", "/api/device/{sn}/pair") == {
        "200", "304", "400", "401", "403", "404", "413",
    }  # fmt: skip
    assert answers(doc, "get", "/api/device/{sn}/secret") == {
        "200", "400", "401", "403", "404", "503",
    }  # fmt: skip
    assert doc["paths"]["/api/device/{sn}/secret"]["get"]["security"] == [{"cluster": []}]
    assert "security" not in doc["paths"]["/api/device/{sn}/boot"]["get"]  # homebases: by SN
    upgrade = doc["paths"]["/api/device/{sn}/upgrade"]["get"]["responses"]["200"]
    assert set(upgrade["content"]) == {"application/octet-stream"}


def test_forwarder_operations_list_what_they_answer() -> None:
    doc = document("forwarder")
    assert answers(doc, "get", "/config") == {"200", "401", "404"}
    assert answers(doc, "post", "/config") == {"200", "400", "401", "413"}
    assert {"200", "201", "400", "401", "409"} <= answers(doc, "post", "/register/{sn}")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_an_optional_parameter_is_its_plain_type_without_null(name: str) -> None:
    doc = document(name)
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                assert "null" not in str(schema.get("type")), (method, path, parameter["name"])
                assert None not in schema.get("enum", []), (method, path, parameter["name"])
                assert "oneOf" not in schema, (method, path, parameter["name"])


def test_resolution_is_an_optional_enum() -> None:
    operation = document("api")["paths"]["/feeds/{feed_id}/streams/{stream_id}/data"]["get"]
    (resolution,) = [p for p in operation["parameters"] if p["name"] == "resolution"]
    assert resolution["required"] is False
    assert {k: resolution["schema"][k] for k in ("type", "enum")} == {
        "type": "string",
        "enum": ["hour", "day", "month"],
    }


def test_a_processed_stream_documents_its_quantity_and_an_optional_register() -> None:
    schemas = document("api")["components"]["schemas"]
    processed = schemas["ProcessedStream"]
    assert processed["properties"]["quantity"]["enum"] == [
        "consumption", "export", "cost", "credit", "mean",
    ]  # fmt: skip
    assert "quantity" in processed["required"]
    # register's old name, tariff, is answered too and marked deprecated; register is not.
    for name, deprecated in (("register", None), ("tariff", True)):
        assert processed["properties"][name]["oneOf"] == [{"type": "integer"}]
        assert processed["properties"][name].get("deprecated") is deprecated
        assert name not in processed["required"]
    for other in ("RawStream", "SystemStream"):
        assert not {"quantity", "register", "tariff"} & set(schemas[other]["properties"]), other


def test_the_bill_documents_its_vat_gas_in_kwh_and_the_heat_medium() -> None:
    schemas = document("api")["components"]["schemas"]
    bill, line = schemas["Bill"], schemas["BillLine"]
    assert "vat" in bill["required"]
    assert "vat" in line["required"]
    assert "kwh" in line["properties"]
    assert "kwh" not in line["required"]
    assert "heat" in line["properties"]["medium"]["enum"]
    medium = str(schemas["StreamConfig"]["properties"]["medium"])
    assert "'heat'" in medium, medium
