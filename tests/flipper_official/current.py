"""The official messages with the storage fields later protobuf versions added.

The generated modules here are those of the published package (protobuf version 0.14-era); the
emulated device reports protobuf 0.25. Three storage fields came after the package was built
(flipperzero-protobuf ``storage.proto``, 0.19 on): ``ListRequest.include_md5`` (2, bool),
``ListRequest.filter_max_size`` (3, uint32) and ``File.md5sum`` (5, string). This builds the same
official descriptors in a pool of their own with those three fields added, so a test speaks
them through the protobuf runtime, not through bytes written by hand.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.flipper_official import (
    application_pb2,
    desktop_pb2,
    flipper_pb2,
    gpio_pb2,
    gui_pb2,
    property_pb2,
    storage_pb2,
    system_pb2,
)

_LATER = {
    "File": [("md5sum", 5, descriptor_pb2.FieldDescriptorProto.TYPE_STRING)],
    "ListRequest": [
        ("include_md5", 2, descriptor_pb2.FieldDescriptorProto.TYPE_BOOL),
        ("filter_max_size", 3, descriptor_pb2.FieldDescriptorProto.TYPE_UINT32),
    ],
}


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    modules = (storage_pb2, system_pb2, application_pb2, gui_pb2, gpio_pb2, property_pb2)
    for module in (*modules, desktop_pb2, flipper_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(proto)
        if proto.name == "storage.proto":
            for message in proto.message_type:
                for name, number, kind in _LATER.get(message.name, []):
                    message.field.add(
                        name=name,
                        number=number,
                        type=kind,
                        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                    )
        pool.Add(proto)
    return pool


_POOL = _pool()
Main: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("PB.Main"))
"""PB.Main of protobuf 0.19 and later (for the storage fields above)."""
