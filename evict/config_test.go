package evict

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c := DefaultConfig()
	c.HighWatermark, c.NOFEvictRatio, c.BatchSize, c.BusyInterval = 1.5, 0, 0, -1
	err := c.Validate()
	for _, want := range []string{
		"evict: high_watermark must be in (0, 1], got 1.5",
		"evict: nof_evict_ratio must be in (0, 1], got 0",
		"evict: batch_size must be at least 1, got 0",
		"evict: busy_interval must be positive, got -1ns",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if _, err := New(c, nil, nil, nil); err == nil {
		t.Error("New accepted an invalid config")
	}
}
