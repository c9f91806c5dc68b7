"""A deployment's data model files through the Build API: list, read, and upload validated by compiling
(``GET /build/api/v1/deployments/{id}/files``, ``GET .../files/{path}``, ``POST .../data-model``).

An upload is applied to a copy of the model directory (hard links, so data files beside the model cost nothing),
compiled there with the semantic compiler, and refused as a whole (400, the compiler's ``file:line`` message) when
it fails. When it compiles, the copy is swapped in for the model directory (two renames in the same parent) and
the registry of the uploading process looks again at once, so its next request serves the new model; other
processes notice the change on their next look and until then, and during the swap, keep serving the last good
one (a directory that is briefly missing keeps the model it had).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import tempfile
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from embedadmin.accounts import selectors as accounts_selectors
from embedadmin.accounts import services as accounts
from embedadmin.accounts.authentication import PlatformRequest
from embedadmin.accounts.models import Deployment
from embedadmin.core.edge.bodies import json_object_body
from embedadmin.core.edge.times import iso_time
from embedadmin.core.errors import BadRequest, NotFound
from embedadmin.core.parsers import JSONBodyParser
from embedadmin.platform.openapi import error, many, page_of, page_operation
from embedadmin.platform.platform_view import DEPLOYMENT_NOT_FOUND, IN_MEMORY_PAGE, PlatformView, page_of_list
from embedadmin.semantic.errors import ModelError, ModelProblem
from embedadmin.semantic.modeling.compiler import compile_model
from embedadmin.semantic.modeling.files import list_model_files, read_model_files
from embedadmin.semantic.modeling.registry import load_model
from embedadmin.semantic.sources.registry import dialect_of

UPLOAD_SUFFIXES = (".yml", ".yaml", ".jinja", ".js")
MAX_FILES = 1000
MAX_FILE_BYTES = 1024 * 1024
_STAGED = "model"
_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def slug_of(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:63].strip("-")
    return slug or "deployment"


def file_path_check(path: Any) -> str:
    """A relative POSIX path of a model file (YAML, Jinja or JavaScript) inside the model directory: no ``..``, no
    absolute path, no hidden part, no backslash; else 400."""
    if not isinstance(path, str) or not 0 < len(path) <= 500:
        raise BadRequest("path: must be a relative file path of at most 500 characters")
    pure = PurePosixPath(path)
    if path.startswith("/") or "\\" in path or pure.is_absolute():
        raise BadRequest(f"path {path!r}: must be relative to the model directory")
    parts = path.split("/")
    if any(part in ("", ".", "..") or not _PART_RE.match(part) for part in parts):
        raise BadRequest(f"path {path!r}: no '..', hidden or empty parts; letters, digits, '_', '-' and '.' only")
    if not path.endswith(UPLOAD_SUFFIXES):
        raise BadRequest(f"path {path!r}: only model files ({', '.join(UPLOAD_SUFFIXES)}) are accepted")
    return path


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    updatedAt: str

    def __iter__(self) -> Any:
        return iter(asdict(self).items())


def _root(deployment: Deployment) -> Path | None:
    return Path(deployment.model_dir) if deployment.model_dir else None


def _listed(root: Path) -> list[Path]:
    """Model files and Jinja templates under ``root``, hidden ones skipped."""
    found = set(list_model_files(root))
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.update(Path(directory) / n for n in names if n.endswith(".jinja") and not n.startswith("."))
    return sorted(found)


def model_files_of(deployment: Deployment) -> list[FileInfo]:
    root = _root(deployment)
    if root is None or not root.is_dir():
        return []
    infos = []
    for path in _listed(root):
        stat = path.stat()
        updated = iso_time(dt.datetime.fromtimestamp(stat.st_mtime, tz=dt.UTC))
        infos.append(FileInfo(path.relative_to(root).as_posix(), stat.st_size, updated))
    return infos


def model_file_read(deployment: Deployment, path: str) -> dict[str, Any]:
    path = file_path_check(path)
    root = _root(deployment)
    target = root / path if root is not None else None
    if root is None or target is None or not target.is_file() or not target.resolve().is_relative_to(root.resolve()):
        raise NotFound(f"File {path} not found in deployment {deployment.pk}")
    info = next(f for f in model_files_of(deployment) if f.path == path)
    return {**dict(info), "content": target.read_text(encoding="utf-8", errors="replace")}


def upload_of(request: Request) -> tuple[dict[str, str], bool]:
    """The uploaded files ``{path: content}`` and whether they replace every other model file."""
    files: dict[str, str] = {}
    if request.content_type.startswith("multipart/form-data"):
        for field, upload in request.FILES.items():
            path = file_path_check(field)
            if upload.size > MAX_FILE_BYTES:
                raise BadRequest(f"{path}: larger than {MAX_FILE_BYTES} bytes")
            try:
                files[path] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise BadRequest(f"{path}: must be UTF-8 text") from None
        replace = request.POST.get("replace", "false") == "true"
    else:
        data = json_object_body(request, fields=("files", "replace"))
        given = data.get("files")
        if not isinstance(given, list):
            raise BadRequest("files: must be a list of {path, content}")
        for index, entry in enumerate(given):
            if not isinstance(entry, dict) or set(entry) != {"path", "content"}:
                raise BadRequest(f"files[{index}]: must be an object {{path, content}}")
            path = file_path_check(entry["path"])
            content = entry["content"]
            if not isinstance(content, str) or len(content.encode()) > MAX_FILE_BYTES or "\x00" in content:
                raise BadRequest(f"files[{index}].content: must be text of at most {MAX_FILE_BYTES} bytes, no NUL")
            if path in files:
                raise BadRequest(f"files[{index}].path: {path} is given twice")
            files[path] = content
        replace = data.get("replace", False)
        if not isinstance(replace, bool):
            raise BadRequest("replace: must be a boolean")
    if not files:
        raise BadRequest("files: at least one file is required")
    if len(files) > MAX_FILES:
        raise BadRequest(f"files: at most {MAX_FILES} files per upload")
    return files, replace


def _copy(source: Path, target: Path) -> None:
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


def model_upload(deployment: Deployment, files: dict[str, str], *, replace: bool) -> dict[str, Any]:
    """Compile the model directory with ``files`` written over it (``replace``: with no other model file) and, when
    it compiles, make that the model directory; :class:`ModelError` (400) and nothing written when it does not. With
    the deployment's "load what compiles", it compiles when a cube or view does; the others are answered as
    ``compilerErrors``."""
    root = _root(deployment)
    if root is None:
        root = Path(settings.VAR_DIR) / "models" / str(deployment.pk)
        root.mkdir(parents=True, exist_ok=True)
        accounts.deployment_configure(deployment=deployment, model_dir=str(root))
        root = Path(deployment.model_dir)
    root = root.resolve()
    parent = root.parent
    candidate = Path(tempfile.mkdtemp(prefix=f".{root.name}.upload-", dir=parent))
    try:
        staged = candidate / _STAGED
        if root.is_dir():
            _copy(root, staged)
        else:
            staged.mkdir()
        if replace:
            for old in _listed(staged):
                old.unlink()
        for path, content in files.items():
            target = staged / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                target.unlink()  # a hard link to the live file: replace it, never write through it
            target.write_text(content, encoding="utf-8")
        dialect = dialect_of(accounts_selectors.deployment_data_source_url(deployment=deployment))
        partial = deployment.load_partial_model
        compiled = compile_model(
            read_model_files(staged, list_model_files(staged)), root=staged, dialect=dialect, partial=partial
        )
        retired = parent / f".{root.name}.old-{uuid.uuid4().hex}"
        if root.is_dir():
            os.rename(root, retired)
        os.rename(staged, root)
        shutil.rmtree(retired, ignore_errors=True)
        # This process serves the new model from its next request (not after the registry's check interval);
        # other processes notice the change on their next look.
        load_model(deployment.model_dir, dialect=dialect, check_interval=0, partial=partial)
    except ModelError as exc:
        raise ModelError([_renamed(problem, root.name) for problem in exc.problems]) from None
    finally:
        shutil.rmtree(candidate, ignore_errors=True)
    answer: dict[str, Any] = {"files": sorted(files), "entities": sorted(compiled.entities)}
    if compiled.compiler_errors:
        answer["compilerErrors"] = [
            {
                "name": e.entity,
                "file": _renamed(ModelProblem(e.file, e.line, e.member, e.message), root.name).file,
                "line": e.line,
                "member": e.member,
                "message": e.message,
            }
            for e in compiled.compiler_errors
        ]
    return answer


def _renamed(problem: ModelProblem, name: str) -> ModelProblem:
    """The problem with its file named as in the model directory (``<dir>/cubes/x.yml``), not the staging copy."""
    file = problem.file
    if file.startswith(f"{_STAGED}/"):
        file = f"{name}/{file[len(_STAGED) + 1 :]}"
    return ModelProblem(file, problem.line, problem.member, problem.message)


# --- the views --------------------------------------------------------------------------------------------------------


# Fields shared by two shapes: each inline_serializer gets its own dict (DRF takes the fields out of the dict a
# serializer class is made from, which left the second shape with only its own field).
MODEL_FILE_FIELDS: dict[str, serializers.Field] = {
    "path": serializers.CharField(help_text="Relative to the model directory"),
    "size": serializers.IntegerField(help_text="Bytes"),
    "updatedAt": serializers.DateTimeField(),
}
MODEL_FILE = inline_serializer("ModelFile", dict(MODEL_FILE_FIELDS))


class ModelFileListView(PlatformView):
    """``GET /build/api/v1/deployments/{id}/files``: the deployment's model files (YAML and Jinja), by path."""

    @page_operation(
        page_of("ModelFilePage", MODEL_FILE, **IN_MEMORY_PAGE),
        operation_id="build_api_v1_deployments_files_list",
        errors={404: DEPLOYMENT_NOT_FOUND},
    )
    def get(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        files = model_files_of(deployment)
        return Response(page_of_list(files, params=request.query_params, key=lambda f: f.path, serialize=dict))


class ModelFileView(PlatformView):
    """``GET /build/api/v1/deployments/{id}/files/{path}``: one model file, ``{path, size, updatedAt, content}``."""

    @extend_schema(
        responses={
            200: inline_serializer(
                "ModelFileContent", {**MODEL_FILE_FIELDS, "content": serializers.CharField(allow_blank=True)}
            ),
            400: error("Not a relative path of a model file (.yml, .yaml, .jinja)"),
            404: error("No such deployment in the caller's account, or no such file in its model"),
        }
    )
    def get(self, request: PlatformRequest, deployment_id: str, file_path: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        return Response(model_file_read(deployment, file_path))


class DataModelUploadView(PlatformView):
    """``POST /build/api/v1/deployments/{id}/data-model``: JSON ``{files: [{path, content}], replace?}`` or a
    multipart form whose file fields are named by their path. Compiled as a whole before anything is written
    (400 with the compiler's ``file:line`` message when it fails); then swapped into the model directory at once."""

    audit_via = "build_api"
    audit_resource = "data_model"
    audit_verbs = {"POST": "upload"}
    audit_id_kwarg = "deployment_id"

    parser_classes = [JSONBodyParser, MultiPartParser]

    @extend_schema(
        request={
            "application/json": inline_serializer(
                "DataModelUpload",
                {
                    "files": many(
                        inline_serializer(
                            "DataModelFile",
                            {
                                "path": serializers.CharField(max_length=500, help_text="A .yml, .yaml or .jinja path"),
                                "content": serializers.CharField(allow_blank=True),
                            },
                        ),
                        min_length=1,
                        max_length=MAX_FILES,
                    ),
                    "replace": serializers.BooleanField(
                        required=False, help_text="true: the upload replaces every other model file"
                    ),
                },
            ),
            "multipart/form-data": {
                "type": "object",
                "description": "One file field per model file, named by its path",
                "additionalProperties": {"type": "string", "format": "binary"},
            },
        },
        responses={
            200: inline_serializer(
                "DataModelUploaded",
                {
                    "files": serializers.ListField(child=serializers.CharField(), help_text="The paths written"),
                    "entities": serializers.ListField(child=serializers.CharField(), help_text="Cubes and views"),
                    "compilerErrors": serializers.ListField(
                        child=serializers.DictField(),
                        required=False,
                        help_text='With "load what compiles": each cube or view left out (name, file, line, member, '
                        "message); absent when the model compiles whole",
                    ),
                },
            ),
            400: error("Invalid files, or a model that does not compile (the compiler's file:line message)"),
            404: DEPLOYMENT_NOT_FOUND,
        },
    )
    def post(self, request: PlatformRequest, deployment_id: str) -> Response:
        deployment = self.deployment(request, deployment_id)
        files, replace = upload_of(request)
        result = model_upload(deployment, files, replace=replace)
        return Response(result)
