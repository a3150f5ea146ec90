"""The kernel's exception hierarchy, translated once at each protocol edge (gRPC, MCP, REST).

Every error carries its data as attributes (``OwnershipError.owner``). Over gRPC the data travels as structure
(a ``google.rpc.ErrorInfo`` whose reason is the class's ``reason``; see engram.grpc.rpc), and the client rebuilds the
same class with the same data, so an error raised in ingest reaches the MCP tool intact.

An error's ``code`` names its kind, and KINDS says once how each kind is answered: the gRPC status (every server's
ErrorInterceptor, engram.grpc.rpc) and the HTTP status of the REST problem (services/gateway/rest/problems.py), whose
problem code is the kind itself. MCP answers with the error's message alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

from engram.model import format_time

DEFAULT_RETRY_AFTER_SECONDS = 2.0


class EngramError(Exception):
    """Base of every error Engram reports to a caller; the message says what to do next."""

    code: ClassVar[str] = "internal"  # the kind, shared by gRPC status, REST status and MCP
    reason: ClassVar[str] = "ENGRAM_ERROR"  # the exact class, as it travels over gRPC
    by_reason: ClassVar[dict[str, type[EngramError]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "reason" not in cls.__dict__:
            cls.reason = _reason_of(cls.__name__)
        EngramError.by_reason[cls.reason] = cls

    def details(self) -> dict[str, str]:
        """The error's data as text, enough for rebuild() to make an equal error."""
        return {}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        """The error again from its message and details (on the other side of a gRPC call)."""
        return cls(message)


EngramError.by_reason[EngramError.reason] = EngramError


@dataclass(frozen=True, slots=True)
class Kind:
    """How an error of one kind is answered at each edge; ``code`` is EngramError.code and the REST problem's code."""

    code: str
    grpc_status: str  # the name of its grpc.StatusCode
    http_status: int


# The one code table: error class (by its code) -> gRPC status, HTTP status, problem code. A gRPC status that two
# kinds share comes back as the first of them from a peer that sent no ErrorInfo (engram.grpc.rpc.error_from_rpc).
KINDS: dict[str, Kind] = {
    kind.code: kind
    for kind in (
        Kind("invalid_argument", "INVALID_ARGUMENT", 400),  # InvalidArgument
        Kind("not_found", "NOT_FOUND", 404),  # NotFound, NoVersionAt
        Kind("unauthenticated", "UNAUTHENTICATED", 401),  # Unauthenticated
        Kind("permission_denied", "PERMISSION_DENIED", 403),  # PermissionDenied, OwnershipError
        Kind("failed_precondition", "FAILED_PRECONDITION", 409),  # VersionConflict: the problem names the version
        Kind("unavailable", "UNAVAILABLE", 503),  # Unavailable
        Kind("resource_exhausted", "RESOURCE_EXHAUSTED", 507),  # DiskFull
        Kind("payload_too_large", "RESOURCE_EXHAUSTED", 413),  # PayloadTooLarge
        Kind("unsupported_media_type", "INVALID_ARGUMENT", 415),  # UnsupportedMediaType (the gateway's own)
        Kind("unimplemented", "UNIMPLEMENTED", 501),  # NotImplementedYet
        Kind("internal", "INTERNAL", 500),  # EngramError: a bug, answered without internals
        Kind("already_exists", "ALREADY_EXISTS", 409),
        Kind("aborted", "ABORTED", 409),  # not raised yet: mapped ahead, so a new error never turns into a 500
    )
}


def kind_of(error: EngramError) -> Kind:
    """The row of KINDS that answers this error (ImportStopped and RemoteError carry their kind per instance);
    an unknown code is answered as internal."""
    return KINDS.get(error.code, KINDS["internal"])


def _reason_of(name: str) -> str:
    """OwnershipError -> OWNERSHIP_ERROR."""
    out = [name[0]]
    for char in name[1:]:
        if char.isupper():
            out.append("_")
        out.append(char)
    return "".join(out).upper()


class InvalidArgument(EngramError):
    """The request is malformed: a field is missing, too large or of the wrong type."""

    code = "invalid_argument"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    def details(self) -> dict[str, str]:
        return {"field": self.field, "problem": self.problem}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        field, _, problem = message.partition(": ")
        return cls(details.get("field", field), details.get("problem", problem))


class NotFound(EngramError):
    """No memory with that id in the caller's namespace."""

    code = "not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"No memory with id '{memory_id}' in this namespace. Use search_memory or list_memories to find ids."
        )
        self.memory_id = memory_id

    def details(self) -> dict[str, str]:
        return {"memory_id": self.memory_id}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("memory_id", ""))


class NoVersionAt(NotFound):
    """The memory did not exist yet at the time asked for."""

    def __init__(self, memory_id: str, at: float, created_at: float) -> None:
        EngramError.__init__(
            self,
            f"Memory '{memory_id}' did not exist yet at {format_time(at)} (it was created at "
            f"{format_time(created_at)}). Ask for a later time, or use memory_history to see its versions.",
        )
        self.memory_id = memory_id
        self.at = at
        self.created_at = created_at

    def details(self) -> dict[str, str]:
        return {"memory_id": self.memory_id, "at": repr(self.at), "created_at": repr(self.created_at)}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("memory_id", ""), float(details.get("at", 0)), float(details.get("created_at", 0)))


class Unauthenticated(EngramError):
    """No valid credentials."""

    code = "unauthenticated"


class PermissionDenied(EngramError):
    """Authenticated, but not allowed to do this."""

    code = "permission_denied"


class OwnershipError(PermissionDenied):
    """Only the owning agent modifies a memory."""

    def __init__(self, owner: str, caller: str) -> None:
        super().__init__(
            f"Memory owned by '{owner}', you are '{caller}'. Use search_memory to read it, or save your own version."
        )
        self.owner = owner
        self.caller = caller

    def details(self) -> dict[str, str]:
        return {"owner": self.owner, "caller": self.caller}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("owner", ""), details.get("caller", ""))


class VersionConflict(EngramError):
    """The expected version of a compare-and-set did not match."""

    code = "failed_precondition"

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"Expected version {expected} but the memory is at version {actual}. Get it again and retry.")
        self.expected = expected
        self.actual = actual

    def details(self) -> dict[str, str]:
        return {"expected": str(self.expected), "actual": str(self.actual)}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(int(details.get("expected", 0)), int(details.get("actual", 0)))


class _Retryable(EngramError):
    """An error after which the same request may succeed later; retry_after says when (seconds)."""

    retry_after: float

    def details(self) -> dict[str, str]:
        return {"retry_after": f"{self.retry_after:g}"}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        error.retry_after = float(details.get("retry_after", DEFAULT_RETRY_AFTER_SECONDS))
        return error


class Unavailable(_Retryable):
    """A dependency (log, index) is not reachable or not caught up; retrying later may succeed."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after: float = DEFAULT_RETRY_AFTER_SECONDS) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DiskFull(_Retryable):
    """The data dir (or the log's store) is out of space: writes are refused until space is freed."""

    code = "resource_exhausted"

    RESUMES = "Free some space; writes resume by themselves, no restart needed."

    def __init__(self, detail: str, *, hint: str = RESUMES, retry_after: float = 10.0) -> None:
        super().__init__(f"Disk full: {detail} {hint}".rstrip())
        self.retry_after = retry_after

    @classmethod
    def for_path(cls, path: str, free_bytes: int, reserve_bytes: int) -> DiskFull:
        mib = 1024 * 1024
        return cls(
            f"only {free_bytes // mib} MiB free in {path}; writes need at least {reserve_bytes // mib} MiB "
            "(ENGRAM_DISK_RESERVE_MB)."
        )


class PayloadTooLarge(EngramError):
    """A request body (or one line of an import) is over its size limit; ``setting`` is the variable that sets it."""

    code = "payload_too_large"

    def __init__(
        self, size: int | None, limit: int, what: str = "The request body", *, setting: str = "", hint: str = ""
    ) -> None:
        named = f" ({setting})" if setting else ""
        hint = hint or "Send less: split the content into several memories."
        if size is None:  # a streamed body, refused once it passed the limit
            super().__init__(f"{what} is larger than the limit of {format_bytes(limit)}{named}. {hint}")
        else:
            super().__init__(f"{what} is {format_bytes(size)}; the limit is {format_bytes(limit)}{named}. {hint}")
        self.size = size
        self.limit = limit
        self.what = what
        self.setting = setting
        self.hint = hint

    def details(self) -> dict[str, str]:
        size = "" if self.size is None else str(self.size)
        return {"size": size, "limit": str(self.limit), "what": self.what, "setting": self.setting, "hint": self.hint}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        size = details.get("size", "")
        return cls(
            int(size) if size else None,
            int(details.get("limit", 0)),
            details.get("what", "The request body"),
            setting=details.get("setting", ""),
            hint=details.get("hint", ""),
        )


def format_bytes(size: int) -> str:
    """1048576 -> '1 MiB', 3145771 -> '3.0 MiB', 1500 -> '1500 bytes'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB"
    return f"{size} bytes"


class UnsupportedMediaType(EngramError):
    """The request body is not in the media type its route reads."""

    code = "unsupported_media_type"

    def __init__(self, got: str, expected: str) -> None:
        shown = f"Content-Type {got!r}" if got else "no Content-Type"
        super().__init__(f"This route reads {expected} but the request has {shown}; send Content-Type: {expected}.")
        self.got = got
        self.expected = expected

    def details(self) -> dict[str, str]:
        return {"got": self.got, "expected": self.expected}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("got", ""), details.get("expected", "application/json"))


class ImportStopped(EngramError):
    """A bulk import stopped part-way; ``result`` says what was stored and ``resume_from`` where to go on.

    Its kind is the cause's (e.g. ``unavailable`` when the log went away), so the status tells the caller whether
    retrying later can help.
    """

    def __init__(self, cause: EngramError, result: dict[str, Any], resume_from: int) -> None:
        super().__init__(f"The import stopped before line {resume_from}: {cause} Resume from line {resume_from}.")
        self.code = cause.code  # type: ignore[misc]  # per instance: the cause's kind
        self.retry_after = getattr(cause, "retry_after", DEFAULT_RETRY_AFTER_SECONDS)
        self.result = result
        self.resume_from = resume_from

    def details(self) -> dict[str, str]:
        return {"code": self.code, "resume_from": str(self.resume_from), "retry_after": f"{self.retry_after:g}"}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        # Only the gateway raises it; rebuilt from its details should it ever cross gRPC.
        cause = RemoteError(details.get("code", "internal"), message)
        cause.retry_after = float(details.get("retry_after", DEFAULT_RETRY_AFTER_SECONDS))  # type: ignore[attr-defined]
        error = cls(cause, {}, int(details.get("resume_from", 0) or 0))
        Exception.__init__(error, message)
        return error


class RemoteError(EngramError):
    """An error a service reported over gRPC without structure (e.g. an older peer), kept with its kind."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code  # type: ignore[misc]  # per instance: the kind the peer reported


class NotImplementedYet(EngramError):
    """An RPC of the contract that a later release builds."""

    code = "unimplemented"

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not available yet in this version of Engram.")
        self.what = what

    def details(self) -> dict[str, str]:
        return {"what": self.what}

    @classmethod
    def rebuild(cls, message: str, details: dict[str, str]) -> Self:
        return cls(details.get("what", message))
