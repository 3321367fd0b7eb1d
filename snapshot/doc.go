// Package snapshot is metad's snapshot file format: the bytes a Raft snapshot, `metactl snapshot
// save` and an offline restore all read and write. It knows the records (package proto/metadv1) but
// nothing of the store or of Raft.
//
// # Layout
//
//	magic      8 bytes  "METADSNP"
//	version    4 bytes  big-endian uint32, the file format version (1)
//	header     frame    metadv1.SnapshotHeader: format version, index, term, created-at, counts
//	records    frame*   metadv1.Record: segments by id, then each tenant followed by its objects by key
//	end        1 byte   a zero-length frame
//	checksum   4 bytes  big-endian CRC-32C (Castagnoli) of every byte before it
//
// A frame is a uvarint length followed by that many bytes of a deterministic protobuf encoding. The
// same state therefore always gives the same bytes, which the determinism tests compare.
//
// # Why it is shaped so
//
// Restores happen when things have gone badly wrong, so a file must never be half-applied. The
// reader verifies as it streams (magic, version, frame bounds, record decoding, counts against the
// header) and reports the checksum verdict only at the end: a consumer builds new state from the
// records and swaps it in only after Next has returned io.EOF, which means the checksum matched and
// nothing follows the trailer. Every failure wraps one of ErrBadMagic, ErrFutureVersion,
// ErrTruncated, ErrCorrupt or ErrChecksum, so tools can say which.
//
// One checksum for the whole file instead of one per record keeps framing under 4 bytes a record
// (the 120-bytes-per-object budget); the cost is that corruption is reported at the end, which is
// exactly when the restore would have swapped.
package snapshot
