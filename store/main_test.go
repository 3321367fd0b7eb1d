package store

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's test run if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
