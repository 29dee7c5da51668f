"""The page at ``/`` and its files: no build step, nothing fetched from the internet.

``index.html``, ``page.js`` and ``page.css`` ship in this package (``static/``);
the plotting library is plotly.js as the ``plotly`` Python package ships it
(``plotly/package_data/plotly.min.js``), served from the installed package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

from planopt.messages import shorten
from planopt.service.paths import NotFound

router = APIRouter(include_in_schema=False)
STATIC = files("planopt.service") / "static"
TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


def plotly_js() -> Path:
    """The installed ``plotly`` package's plotly.min.js."""
    import plotly
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


@router.get("/")
def page() -> HTMLResponse:
    """The page (``static/index.html``)."""
    return HTMLResponse((STATIC / "index.html").read_text())


@router.get("/static/plotly.min.js")
def plotly_file() -> FileResponse:
    """plotly.js from the installed package, cached by the browser for a day."""
    return FileResponse(plotly_js(), media_type="text/javascript", headers={"cache-control": "max-age=86400"})


@router.get("/static/{name}")
def static_file(name: str) -> Response:
    """One of the package's static files by bare name (no folders, no dot-files); 404 otherwise."""
    # only the package's own files by bare name: no folders, no dot-files
    if "/" in name or name.startswith(".") or Path(name).suffix not in TYPES or not (STATIC / name).is_file():
        raise NotFound(f"no file {shorten(repr(name))}")
    return Response((STATIC / name).read_bytes(), media_type=TYPES[Path(name).suffix])


@router.get("/favicon.ico")
def favicon() -> Response:
    """No icon: an empty 204 answer (so that browsers stop asking with a 404)."""
    return Response(status_code=204)
