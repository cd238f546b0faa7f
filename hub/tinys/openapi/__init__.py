"""A tiny's OpenAPI schema (its ``worker``) as tools: one tool per operation (docs/protocol.md,
turn step 5).

The schema is a stranger's text and so is every tool call the model makes with it, so nothing
here trusts either: the schema is fetched through the network guard with a size and time bound,
parsed into a fresh, bounded structure, and every call goes through the guard again, to the
server the schema names. A bad schema is an ``OpenAPIError`` with a sentence for a person; a bad
call is a tool error the model reads. Neither is a crash.

One job a module, each importing only those listed before it:

- ``model``: `Operation`, `OpenAPIError` and every bound on a schema and a call;
- ``names``: tool names strands accepts, unique within a schema and a turn; texts shortened;
- ``schema``: the document's local ``$ref``s and the bounded JSON schema copy the model reads;
- ``parse``: a parsed document into operations (OpenAPI 3.x, Swagger 2.0 where cheap);
- ``load``: fetching and reading a schema, cached per source for a few minutes;
- ``call``: one operation called with the model's input, its answer as text;
- ``tools``: operations as strands tools.
"""

from hub.tinys.openapi.call import call_operation
from hub.tinys.openapi.load import forget_cached_schemas, load_operations
from hub.tinys.openapi.model import (
    MAX_OPERATIONS,
    MAX_RESULT_CHARS,
    MAX_SCHEMA_BYTES,
    OpenAPIError,
    Operation,
    Parameter,
)
from hub.tinys.openapi.names import tool_name, unique_name
from hub.tinys.openapi.parse import parse_operations
from hub.tinys.openapi.tools import operation_tools

__all__ = [
    "MAX_OPERATIONS",
    "MAX_RESULT_CHARS",
    "MAX_SCHEMA_BYTES",
    "OpenAPIError",
    "Operation",
    "Parameter",
    "call_operation",
    "forget_cached_schemas",
    "load_operations",
    "operation_tools",
    "parse_operations",
    "tool_name",
    "unique_name",
]
