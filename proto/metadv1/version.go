package metadv1

// Encoding versions written by this release. A reader that meets a higher version refuses it with
// an error (snapshot) or panics with the log index (log entry) rather than misread it.
const (
	// EnvelopeFormatVersion is Envelope.format_version for the Raft log entries this release writes.
	EnvelopeFormatVersion uint32 = 1
	// SnapshotFormatVersion is SnapshotHeader.format_version for the snapshot records this release
	// writes.
	SnapshotFormatVersion uint32 = 1
)
