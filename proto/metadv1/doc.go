// Package metadv1 holds the protobuf messages and gRPC services of metad (protobuf package
// metad.v1): the client API (service Metadata, metadata.proto), the operator API (service Admin,
// admin.proto), the Raft log commands (Envelope and Command, command.proto), the snapshot records
// (snapshot.proto) and the types they share (types.proto). It imports only protobuf and grpc.
//
// The .pb.go files are generated and committed, so a fresh clone builds without protoc. After
// editing a .proto file, regenerate them from the repository root with
//
//	make proto    # runs ./proto/generate.sh
//
// which installs protoc (Debian's protobuf-compiler) if missing and the pinned protoc-gen-go and
// protoc-gen-go-grpc into bin/tools; the output is deterministic.
//
// Wire compatibility rules (command.proto and snapshot.proto are durable formats, replayed and
// restored by later releases; the APIs are spoken by older clients):
//   - A field number, enum value or oneof case is never reused or renumbered. A removed field is
//     declared `reserved N; reserved "name";` in its message, with a comment saying what it was.
//   - A change that old code would misread bumps EnvelopeFormatVersion or SnapshotFormatVersion;
//     readers refuse versions they do not know.
//   - Every Command oneof case has a message of the same name in CamelCase, and every case must have
//     a handler in the FSM's dispatch table; proto_test.go checks that every case round-trips.
//   - Keys and group ids are bytes (any byte but NUL); ids from counters start at 1 (0 = none);
//     times are int64 Unix nanoseconds, durations uint64 milliseconds, sizes uint64 bytes.
package metadv1
