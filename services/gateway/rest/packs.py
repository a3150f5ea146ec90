"""REST for expert packs: /v1/packs (list, install) and /v1/packs/{name} (the whole pack in its folder layout),
used by `engram packs`."""

# No `from __future__ import annotations`: FastAPI reads the routes' annotations as objects.

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field

from engram.packs.format import MAX_NAME_CHARS, NAME_PATTERN, Pack
from engram.services.gateway.rest.dependencies import CurrentCaller, Packs
from engram.services.gateway.rest.problems import ERROR_RESPONSES, PROBLEM_MEDIA_TYPE, Problem


class PackSummaryOut(BaseModel):
    name: str
    description: str = ""
    version: str = ""
    extends: str = ""
    tags: list[str] = Field(default_factory=list)
    author: str = ""
    knowledge_count: int = 0
    examples_count: int = 0
    files: int = 0


class PacksResult(BaseModel):
    packs: list[PackSummaryOut]


class PackIn(BaseModel):
    """A pack to install: its meta.json and its Markdown files by path (memory/ files are left out)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN)
    meta: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    replace: bool = Field(default=False, description="Update an installed pack's files (its memories are kept).")


class InstalledOut(BaseModel):
    name: str
    files: int
    replaced: bool


class PackOut(BaseModel):
    name: str
    meta: dict[str, Any]
    files: dict[str, str] = Field(description="Every file by path, memory/ rendered from the pack's memories.")


_EXISTS: dict[int | str, dict[str, Any]] = {
    409: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "The pack is installed already"}
}

_NO_PACK: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "No such pack in your namespace"}
}


# Routes /v1/packs and /v1/packs/{name}. build_app includes them; each takes the app's pack service and the caller
# as injected dependencies (rest/dependencies.py).
router = APIRouter(prefix="/v1", tags=["packs"], responses=ERROR_RESPONSES)
PackName = Annotated[
    str, Path(min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN, description="The pack's name.")
]


@router.get("/packs", response_model=PacksResult, summary="The expert packs installed in your namespace")
async def list_packs(caller: CurrentCaller, packs: Packs) -> PacksResult:
    return PacksResult(packs=[PackSummaryOut(**p) for p in await packs.installed(caller)])


@router.post("/packs", response_model=InstalledOut, responses=_EXISTS,
             summary="Install (or with replace, update) an expert pack")  # fmt: skip
async def install_pack(body: PackIn, caller: CurrentCaller, packs: Packs) -> InstalledOut:
    """Needs a key with the packs (or admin) scope. Paths are checked (nothing outside the pack); 409 when
    the pack exists and replace is false."""
    pack = Pack(name=body.name, meta=body.meta, files=body.files)
    return InstalledOut(**await packs.install(caller, pack, replace=body.replace))


@router.get("/packs/{name}", response_model=PackOut, responses=_NO_PACK, summary="One pack in its folder layout")
async def get_pack(name: PackName, caller: CurrentCaller, packs: Packs) -> PackOut:
    pack = await packs.export(caller, name)
    return PackOut(name=pack.name, meta=pack.meta, files=pack.files)
