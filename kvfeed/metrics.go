package kvfeed

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	messages prometheus.Counter
	events   prometheus.Counter
	gaps     prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		messages: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_kvfeed_messages_published_total",
			Help: "Messages (batches of events) the KV event feed handed to its PUB socket."}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_kvfeed_events_published_total",
			Help: "Stored and removed events the KV event feed handed to its PUB socket."}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{Name: "metad_kvfeed_gaps_total",
			Help: "Sequence gaps the KV event feed made: its cursor fell out of the watch window or the state was replaced, and events were lost."}),
	}
}

// RegisterMetrics registers the publisher's metrics with reg.
func (p *Publisher) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{p.m.messages, p.m.events, p.m.gaps} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
