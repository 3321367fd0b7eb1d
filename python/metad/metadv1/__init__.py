"""Protobuf messages and gRPC stubs of the metad.v1 API, generated from proto/ by `make proto`.

Do not edit the *_pb2* modules: proto/generate.sh rewrites them.
"""
