"""Rows packed a column at a time into the request Milvus receives.

pymilvus packs a row-based insert or upsert value by value, each through its
generic type dispatch: ~0.12 ms of the event loop per memory row (29 fields),
a fifth of the loop's time in batched writes (py-spy, benchmarks/README "Pipeline
cost with the model elsewhere"), spent while the group commit waits to send.
Packing each column at once from the collection's schema builds the same
protobuf in about a quarter of the time.

`use_column_packing` installs it on one client's connection handler: the
handler's two row-request builders are replaced on that object only, so every
other part of pymilvus (retries, auth metadata, the schema cache and its
refresh on a schema mismatch) stays pymilvus'. Whatever the packer does not
know (a field type recalld's collections do not use, nullable or default
values, dynamic fields, struct arrays, partial updates, a None value) goes to
pymilvus' own builder: a pymilvus that renames the hook or a schema that grows
costs speed, never rows. The unit tests check the packing equals pymilvus' own,
field by field, for every collection recalld creates.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import orjson
from pymilvus import DataType
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

log = logging.getLogger(__name__)

_SCALAR_SLOTS = {
    DataType.VARCHAR: "string_data",
    DataType.INT8: "int_data",
    DataType.INT16: "int_data",
    DataType.INT32: "int_data",
    DataType.INT64: "long_data",
    DataType.FLOAT: "float_data",
    DataType.DOUBLE: "double_data",
    DataType.BOOL: "bool_data",
}

_INSERT_HOOK = "_prepare_row_insert_request"
_UPSERT_HOOK = "_prepare_row_upsert_request"


class UnsupportedRows(Exception):
    """The rows or schema need pymilvus' general packing."""


def pack_columns(fields: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> list[Any]:
    """Each written field's values as one FieldData, as pymilvus' row packing makes it.

    `fields` is the collection's schema as pymilvus describes it. Raises
    UnsupportedRows when a field or value needs pymilvus' general packing.
    """
    try:
        return [_column(field, rows) for field in fields if _written(field)]
    except (TypeError, ValueError, OverflowError) as error:  # protobuf refused a value
        raise UnsupportedRows(str(error)) from None


def _written(field: dict[str, Any]) -> bool:
    return not (field.get("is_function_output") or field.get("auto_id"))


def _column(field: dict[str, Any], rows: Sequence[dict[str, Any]]) -> Any:
    """One field's FieldData; Milvus computes function outputs and auto ids itself."""
    if field.get("nullable") or field.get("default_value") is not None:
        raise UnsupportedRows(f"field {field['name']} may be null or defaulted")
    name = field["name"]
    kind = field["type"]
    try:
        values = [row[name] for row in rows]
    except KeyError:
        raise UnsupportedRows(f"a row lacks field {name}") from None
    if any(value is None for value in values):
        raise UnsupportedRows(f"a row has no value for {name}")
    data = schema_pb2.FieldData(field_name=name, type=kind)
    slot = _SCALAR_SLOTS.get(kind)
    if kind == DataType.VARCHAR:
        longest = int(field["params"]["max_length"])
        if not all(isinstance(value, str) and len(value) <= longest for value in values):
            raise UnsupportedRows(f"a value of {name} is not a string of its length")
    if slot is not None:
        getattr(data.scalars, slot).data.extend(values)
    elif kind == DataType.JSON:
        # A str is JSON text to pymilvus, not a string value: it decides those.
        if not all(isinstance(value, dict | list) for value in values):
            raise UnsupportedRows(f"a value of {name} is not a JSON object or array")
        data.scalars.json_data.data.extend([orjson.dumps(value) for value in values])
    elif kind == DataType.ARRAY and field.get("element_type") == DataType.VARCHAR:
        arrays = data.scalars.array_data.data
        for value in values:
            arrays.add().string_data.data.extend(value)
    elif kind == DataType.FLOAT_VECTOR:
        dimension = int(field["params"]["dim"])
        matrix = np.asarray(values, dtype=np.float32)
        if matrix.shape != (len(rows), dimension):
            raise UnsupportedRows(f"{name} vectors are not {dimension}-dimensional")
        data.vectors.dim = dimension
        data.vectors.float_vector.data.extend(matrix.ravel().tolist())
    else:
        raise UnsupportedRows(f"field {name} has type {kind!r}")
    return data


def _packable(schema: dict[str, Any], kwargs: dict[str, Any]) -> bool:
    return not (
        schema.get("enable_dynamic_field")
        or schema.get("struct_array_fields")
        or kwargs.get("partial_update")
        or kwargs.get("field_ops")
        or kwargs.get("namespace")
    )


def _packed(
    kind: Any, collection: str, partition: str | None, rows: Any, described: Any, kwargs: Any
) -> Any | None:
    """The request built by column, or None where pymilvus must build it.

    `described` is what the handler's `_get_schema` answers: (schema, its timestamp).
    """
    schema, stamp = described
    if not isinstance(rows, list) or not _packable(schema, kwargs):
        return None
    request = kind(
        collection_name=collection,
        partition_name=partition if isinstance(partition, str) else "",
        num_rows=len(rows),
        schema_timestamp=stamp,
    )
    try:
        request.fields_data.extend(pack_columns(schema["fields"], rows))
    except UnsupportedRows:
        return None
    return request


def _rows(entity_rows: Any) -> Any:
    return [entity_rows] if isinstance(entity_rows, dict) else entity_rows


def use_column_packing(handler: Any) -> bool:
    """Packs this pymilvus connection handler's row inserts and upserts by column.

    Works on the async and the sync handler. Returns whether it was installed
    (False: this pymilvus has no such hooks; it keeps packing its own way).
    """
    insert = getattr(handler, _INSERT_HOOK, None)
    upsert = getattr(handler, _UPSERT_HOOK, None)
    schema_of = getattr(handler, "_get_schema", None)
    if insert is None or upsert is None or schema_of is None:
        log.info("pymilvus offers no row-request hooks; rows are packed by pymilvus")
        return False
    if inspect.iscoroutinefunction(insert):
        setattr(handler, _INSERT_HOOK, _async_insert(insert, schema_of))
        setattr(handler, _UPSERT_HOOK, _async_upsert(upsert, schema_of))
    else:
        setattr(handler, _INSERT_HOOK, _sync_insert(insert, schema_of))
        setattr(handler, _UPSERT_HOOK, _sync_upsert(upsert, schema_of))
    return True


def _async_insert(original: Callable[..., Any], schema_of: Callable[..., Any]) -> Any:
    @functools.wraps(original)
    async def prepare(
        collection_name: str,
        entity_rows: Any,
        partition_name: str | None = None,
        schema: dict[str, Any] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the signature pymilvus calls
        context: Any = None,
        **kwargs: Any,
    ) -> Any:
        if _packable({}, kwargs):
            described = await schema_of(
                collection_name, schema=schema, timeout=timeout, context=context, **kwargs
            )
            request = _packed(
                milvus_pb2.InsertRequest,
                collection_name,
                partition_name,
                _rows(entity_rows),
                described,
                kwargs,
            )
            if request is not None:
                return request
        return await original(
            collection_name, entity_rows, partition_name, schema, timeout, context=context, **kwargs
        )

    return prepare


def _async_upsert(original: Callable[..., Any], schema_of: Callable[..., Any]) -> Any:
    @functools.wraps(original)
    async def prepare(
        collection_name: str,
        rows: Any,
        partition_name: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the signature pymilvus calls
        context: Any = None,
        **kwargs: Any,
    ) -> Any:
        if _packable({}, kwargs):
            described = await schema_of(collection_name, timeout=timeout, context=context, **kwargs)
            request = _packed(
                milvus_pb2.UpsertRequest, collection_name, partition_name, rows, described, kwargs
            )
            if request is not None:
                return request
        return await original(
            collection_name, rows, partition_name, timeout, context=context, **kwargs
        )

    return prepare


def _sync_insert(original: Callable[..., Any], schema_of: Callable[..., Any]) -> Any:
    @functools.wraps(original)
    def prepare(
        collection_name: str,
        entity_rows: Any,
        partition_name: str | None = None,
        schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        context: Any = None,
        **kwargs: Any,
    ) -> Any:
        if _packable({}, kwargs):
            described = schema_of(collection_name, timeout=timeout, context=context, **kwargs)
            request = _packed(
                milvus_pb2.InsertRequest,
                collection_name,
                partition_name,
                _rows(entity_rows),
                described,
                kwargs,
            )
            if request is not None:
                return request
        return original(
            collection_name, entity_rows, partition_name, schema, timeout, context=context, **kwargs
        )

    return prepare


def _sync_upsert(original: Callable[..., Any], schema_of: Callable[..., Any]) -> Any:
    @functools.wraps(original)
    def prepare(
        collection_name: str,
        rows: Any,
        partition_name: str | None = None,
        timeout: float | None = None,
        context: Any = None,
        **kwargs: Any,
    ) -> Any:
        if _packable({}, kwargs):
            described = schema_of(collection_name, timeout=timeout, context=context, **kwargs)
            request = _packed(
                milvus_pb2.UpsertRequest, collection_name, partition_name, rows, described, kwargs
            )
            if request is not None:
                return request
        return original(collection_name, rows, partition_name, timeout, context=context, **kwargs)

    return prepare
