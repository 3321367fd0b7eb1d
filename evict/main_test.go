package evict

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// hashicorp/raft's network transport and its pooled connections wind down asynchronously
		// after Shutdown returns; they hold nothing of the test.
		goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*NetworkTransport).listen"),
	)
}
