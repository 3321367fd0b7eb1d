package ha

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// NewRaftLogger bridges hashicorp/raft's hclog output into slog: hclog writes JSON lines into a
// writer that re-emits each as one slog record at the matching level, with its fields as
// attributes. Every Raft instance of metad logs through it, package datadir's offline ones too.
func NewRaftLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "raft",
		Level:      hclog.Info,
		JSONFormat: true,
		Output:     &slogWriter{log: log},
	})
}

type slogWriter struct{ log *slog.Logger }

func (w *slogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			w.log.Info(string(line))
			continue
		}
		level := slog.LevelInfo
		switch m["@level"] {
		case "trace", "debug":
			level = slog.LevelDebug
		case "warn":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		}
		msg, _ := m["@message"].(string)
		attrs := make([]any, 0, 2*len(m))
		for k, v := range m {
			if k == "@level" || k == "@message" || k == "@timestamp" {
				continue
			}
			attrs = append(attrs, k, v)
		}
		w.log.Log(context.Background(), level, msg, attrs...)
	}
	return len(p), nil
}
