"""The API's documentation pages, /docs (Swagger UI) and /redoc (ReDoc), whose scripts and styles the node serves
itself from the fastapi-offline package: FastAPI's defaults load them from a CDN, so the pages were blank offline,
on an air-gapped host and behind a firewall that blocks it."""

# No `from __future__ import annotations`: FastAPI resolves route annotations at import.

from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

from engram.services.gateway.rest.problems import problem

DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"
ASSETS_PATH = "/docs/assets"
OPENAPI_PATH = "/openapi.json"
ASSET_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
# They change only with the package: a day in the browser's cache.
ASSET_HEADERS = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True, slots=True)
class DocsAsset:
    body: bytes
    media_type: str


@cache
def load_assets() -> dict[str, DocsAsset]:
    """The files the two pages load, read once (at the first request for one) from the installed package; only these
    names are ever served."""
    folder = files("fastapi_offline") / "static"
    return {name: DocsAsset((folder / name).read_bytes(), media_type) for name, media_type in ASSET_TYPES.items()}


# GET /docs, /redoc and /docs/assets/<file>; the pages are titled after the app serving them.
router = APIRouter()


@router.get(DOCS_PATH, include_in_schema=False)
async def swagger_ui(request: Request) -> HTMLResponse:
    openapi_url, assets_url = _urls(request)
    return get_swagger_ui_html(
        openapi_url=openapi_url,
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=f"{assets_url}/swagger-ui-bundle.js",
        swagger_css_url=f"{assets_url}/swagger-ui.css",
        swagger_favicon_url=f"{assets_url}/favicon.png",
    )


@router.get(REDOC_PATH, include_in_schema=False)
async def redoc(request: Request) -> HTMLResponse:
    openapi_url, assets_url = _urls(request)
    return get_redoc_html(
        openapi_url=openapi_url,
        title=f"{request.app.title} - ReDoc",
        redoc_js_url=f"{assets_url}/redoc.standalone.js",
        redoc_favicon_url=f"{assets_url}/favicon.png",
        with_google_fonts=False,
    )


@router.api_route(ASSETS_PATH + "/{name}", methods=["GET", "HEAD"], include_in_schema=False)
async def asset(name: str) -> Response:
    found = load_assets().get(name)
    if found is None:
        return problem(404, f"The API docs have no file {name[:80]!r}. Open {DOCS_PATH}.")
    return Response(found.body, media_type=found.media_type, headers=ASSET_HEADERS)


def _urls(request: Request) -> tuple[str, str]:
    """The OpenAPI document's and the assets' URLs as this node is reached (behind a proxy's root path too)."""
    root = request.scope.get("root_path", "")
    return root + OPENAPI_PATH, root + ASSETS_PATH
