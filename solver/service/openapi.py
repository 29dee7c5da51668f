"""The published contract, ``/openapi.json``: FastAPI's document plus the instance schemas.

Request bodies take an instance as a free JSON object (so that a mistake in it
gets the CLI's own message, from the same validation); the document still
publishes what that object must be: ``components/schemas/Instance`` and
``Portfolio``, the JSON Schemas ``planopt schema`` prints, and the bearer scheme.
"""

from __future__ import annotations

from typing import Any

from fastapi.openapi.utils import get_openapi

REF = "#/components/schemas/{model}"


def published_openapi(app) -> dict[str, Any]:
    """The ``/openapi.json`` document (built once): FastAPI's, with the Instance and Portfolio schemas and the bearer
    scheme on every API path but /api/health."""
    if app.openapi_schema:
        return app.openapi_schema
    from planopt.models.schema.portfolio import Portfolio
    from planopt.models.schema.instance import Instance
    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for model in (Instance, Portfolio):
        schema = model.model_json_schema(ref_template=REF)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    for path, operations in doc["paths"].items():
        if path.startswith("/api/") and path != "/api/health":
            for operation in operations.values():
                operation["security"] = [{"bearer": []}]
    app.openapi_schema = doc
    return doc
