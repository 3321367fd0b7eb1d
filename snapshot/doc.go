// Package snapshot is metad's snapshot file format: the bytes a Raft snapshot, `metactl snapshot
// save` and an offline restore all read and write. It knows the records (package proto/metadv1) but
// nothing of the store or of Raft.
//
// # Layout
//
// File version 2 (FileVersionChunked, what NewWriter writes):
//
//	magic      8 bytes  "METADSNP"
//	version    4 bytes  big-endian uint32, the file format version (2)
//	header     frame    metadv1.SnapshotHeader: format version, index, term, created-at, counts
//	chunk*              the records (segments by id, then each tenant followed by its objects by
//	                    key, ...), at most ChunkRecords a chunk:
//	  count    uvarint  records in the chunk, at least 1
//	  length   uvarint  bytes of its frames
//	  records  frame*   count frames of metadv1.Record
//	  checksum 4 bytes  big-endian CRC-32C (Castagnoli) of the chunk's count, length and frames
//	end        1 byte   0 (a chunk count of zero)
//	checksum   4 bytes  big-endian CRC-32C of every byte before it
//
// File version 1 (FileVersionWhole, which every release reads; NewWriterVersion) has the records
// as one run of frames after the header, then the end byte and the checksum.
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
// A chunk's own checksum lets the reader refuse a damaged chunk, and name it, before it returns any
// of its records, and bounds its memory by one chunk; the chunks can be checked and decoded apart.
// The file's checksum still covers every byte, header included. Framing costs under 4 bytes a
// record plus about 10 bytes a chunk.
package snapshot
