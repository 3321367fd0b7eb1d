package snapshot

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (Each's readers and workers).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
