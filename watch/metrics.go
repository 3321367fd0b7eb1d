package watch

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	events      prometheus.Counter
	retained    prometheus.Gauge
	bytes       prometheus.Gauge
	subscribers prometheus.Gauge
	cutOff      prometheus.Counter
	compacted   prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_watch_events_total",
			Help: "Events this member's apply made (each change of an object a reader can see)."}),
		retained: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metad_watch_window_events",
			Help: "Events the watch window retains."}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metad_watch_window_bytes",
			Help: "Bytes the watch window counts its retained events as holding."}),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metad_watch_subscribers",
			Help: "Watch streams open on this member."}),
		cutOff: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_watch_streams_cut_off_total",
			Help: "Watch streams ended because they fell out of the window or the state was replaced."}),
		compacted: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_watch_compacted_total",
			Help: "Watch requests refused because their start revision is older than the window."}),
	}
}

// RegisterMetrics registers the window's metrics with reg.
func (w *Window) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{w.m.events, w.m.retained, w.m.bytes, w.m.subscribers, w.m.cutOff, w.m.compacted} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
