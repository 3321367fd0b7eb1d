"""Protobuf messages of the metad.v1 API that the client sends and answers (types_pb2,
metadata_pb2, admin_pb2), generated from proto/ by `make proto`; the server's schemas (the Raft
log commands, the snapshot records) and gRPC stubs are not shipped.

Do not edit the *_pb2* modules: proto/generate.sh rewrites them.
"""
