package backup

import "github.com/prometheus/client_golang/prometheus"

// Reasons a backup fails, the values of metad_backup_failures_total's reason label.
const (
	reasonSnapshot   = "snapshot"   // taking or reading the snapshot failed
	reasonWrite      = "write"      // the directory or the file could not be written or read back
	reasonVerify     = "verify"     // the file written does not verify
	reasonLeadership = "leadership" // this member stopped leading before the backup was done
)

var failureReasons = []string{reasonSnapshot, reasonWrite, reasonVerify, reasonLeadership}

// Metrics of the backup loop, all declared here and registered on an injected registry (never in
// init). Names: metad_backup_*.
type metrics struct {
	lastSuccess prometheus.Gauge
	lastSize    prometheus.Gauge
	lastIndex   prometheus.Gauge
	files       prometheus.Gauge
	failures    *prometheus.CounterVec
	duration    prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_success_timestamp_seconds",
			Help: "When the snapshot of the newest backup this member wrote was taken (Unix seconds; at start: the newest backup in --backup-dir; 0: none). The backups' age is time() minus the largest value over the members.",
		}),
		lastSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_size_bytes",
			Help: "Bytes of the backup that metad_backup_last_success_timestamp_seconds describes.",
		}),
		lastIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_index",
			Help: "Raft index of the backup that metad_backup_last_success_timestamp_seconds describes.",
		}),
		files: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_files",
			Help: "Backups in --backup-dir after this member's last backup and its retention (at start: as found).",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_backup_failures_total",
			Help: "Scheduled backups that failed and left no file, by reason: snapshot (taking or reading it), write (the directory or the file), verify (the file written does not verify), leadership (this member stopped leading meanwhile).",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_backup_duration_seconds",
			Help:    "Time of each successful backup: snapshot, write, fsync, verification, rename and retention.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}),
	}
	for _, r := range failureReasons {
		m.failures.WithLabelValues(r)
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.lastSuccess, m.lastSize, m.lastIndex, m.files, m.failures, m.duration} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// newest sets the gauges that describe the newest backup to f.
func (m *metrics) newest(f File) {
	m.lastSuccess.Set(float64(f.Time.UnixMilli()) / 1e3)
	m.lastSize.Set(float64(f.Size))
	m.lastIndex.Set(float64(f.Index))
}
