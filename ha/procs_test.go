package ha

import (
	"runtime"
	"testing"
)

func TestSetProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)

	if got := SetProcs(2, ""); got != def+2 || runtime.GOMAXPROCS(0) != def+2 {
		t.Fatalf("SetProcs(2): got %d, GOMAXPROCS %d, want %d", got, runtime.GOMAXPROCS(0), def+2)
	}
	// Again: from the default, not from the value the first call set.
	if got := SetProcs(2, ""); got != def+2 {
		t.Fatalf("SetProcs(2) twice: got %d, want %d", got, def+2)
	}
	if got := SetProcs(0, ""); got != def {
		t.Fatalf("SetProcs(0): got %d, want the default %d", got, def)
	}
	// An operator's GOMAXPROCS stands: whatever is in force stays.
	runtime.GOMAXPROCS(def + 5)
	if got := SetProcs(2, "7"); got != def+5 || runtime.GOMAXPROCS(0) != def+5 {
		t.Fatalf("SetProcs with GOMAXPROCS set: got %d, GOMAXPROCS %d, want %d unchanged", got, runtime.GOMAXPROCS(0), def+5)
	}
}
