package kvfeed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"metad/watch"
)

// sendHWM is the most messages the PUB socket queues for its subscribers; past it, it drops new
// ones (each a gap in the sequence), as the old master's socket does at the same mark.
const sendHWM = 10000

// objectEvents is what the feed reads from the window: the old master's events are of objects only.
var objectEvents = watch.Filter{Kinds: []watch.Kind{watch.Stored, watch.Changed, watch.Removed, watch.Evicted}}

// Config is a Publisher's configuration.
type Config struct {
	// Endpoint is where the PUB socket binds: tcp://host:port (host "*" or empty: every
	// interface; port 0: a free port, see Addr) or ipc://path. Required.
	Endpoint string
	// BackendID is every event's backend_id: who publishes. Required.
	BackendID string
	// Now is the wall clock the batch times are read from; nil: time.Now.
	Now func() time.Time
}

// Validate checks the config with messages that name the setting.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := SplitEndpoint(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("kvfeed: %w", err))
	}
	if c.BackendID == "" {
		errs = append(errs, errors.New("kvfeed: backend id: must not be empty"))
	}
	return errors.Join(errs...)
}

// SplitEndpoint checks a ZMQ endpoint and returns its transport, "tcp" or "ipc", and address:
// host:port with a numeric port for tcp, the socket file's path for ipc.
func SplitEndpoint(ep string) (transport, addr string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("endpoint %q: %s; want tcp://host:port or ipc://path", ep, why)
	}
	transport, addr, ok := strings.Cut(ep, "://")
	switch {
	case ep == "":
		return bad("empty")
	case !ok:
		return bad("no transport")
	case transport == "tcp":
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return bad(err.Error())
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return bad("the port must be a number from 0 to 65535")
		}
	case transport == "ipc":
		if addr == "" {
			return bad("no path")
		}
	default:
		return bad("unknown transport " + strconv.Quote(transport))
	}
	return transport, addr, nil
}

// Publisher is safe for concurrent use. New starts its goroutine, which alone reads the cursor,
// packs and sends (it owns the fields below run's comment); Close stops it.
type Publisher struct {
	cfg    Config
	w      *watch.Window
	sock   zmq4.Socket
	log    *slog.Logger
	m      *metrics
	cancel context.CancelFunc // ends run's context
	done   chan struct{}      // closed by run when it returns

	closeOnce sync.Once
	closeErr  error

	// Owned by run's goroutine.
	enc    *encoder
	seq    uint64 // the next message's sequence number
	nextID uint64 // the next event's id
}

// New binds the PUB socket at cfg.Endpoint, subscribes to w from the next change and starts
// publishing. log may be nil.
func New(cfg Config, w *watch.Window, log *slog.Logger) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "kvfeed")
	sock := zmq4.NewPub(context.Background(), zmq4.WithLogger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
	if err := sock.SetOption(zmq4.OptionHWM, sendHWM); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvfeed: send high-water mark: %w", err)
	}
	if err := sock.Listen(cfg.Endpoint); err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvfeed: bind %s: %w", cfg.Endpoint, err)
	}
	cur, err := w.Subscribe(watch.Rev{}, objectEvents)
	if err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("kvfeed: watch: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{cfg: cfg, w: w, sock: sock, log: log, m: newMetrics(), cancel: cancel, done: make(chan struct{}),
		enc: newEncoder(), seq: 1, nextID: 1}
	go p.run(ctx, cur)
	log.Info("KV event feed publishing", "endpoint", cfg.Endpoint, "addr", sock.Addr().String(), "backend_id", cfg.BackendID)
	return p, nil
}

// Addr is the address the socket is bound to (the port chosen for port 0).
func (p *Publisher) Addr() net.Addr { return p.sock.Addr() }

// Close stops publishing and closes the socket; messages still queued in it may be lost (the
// socket library keeps one idle goroutine per closed PUB socket). It returns the socket's close
// error; later calls return the same.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.cancel()
		<-p.done
		p.closeErr = p.sock.Close()
	})
	return p.closeErr
}

// run reads the window until ctx ends or the window closes, publishing what each event makes.
// After a cursor falls behind or the state is replaced, it subscribes again from the next change
// and skips a sequence number (the gap rule of the package doc).
func (p *Publisher) run(ctx context.Context, cur *watch.Cursor) {
	defer close(p.done)
	defer func() { cur.Close() }() // the current cursor (closing one twice is harmless)
	buf := make([]watch.Event, 0, MaxBatch)
	var out []Event
	for {
		evs, err := cur.Next(ctx, buf[:0], MaxBatch, nil)
		out = out[:0]
		for i := range evs {
			out = appendEvents(out, &evs[i])
		}
		clear(evs) // hold no object state until the next read
		for i := 0; i < len(out); i += MaxBatch {
			p.publish(out[i:min(i+MaxBatch, len(out))])
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil || errors.Is(err, watch.ErrClosed) {
			return
		}
		// Fell behind, or the state was replaced: the events in between are lost.
		p.seq++
		cur.Close()
		next, serr := p.w.Subscribe(watch.Rev{}, objectEvents)
		if serr != nil {
			p.log.Warn("KV event feed stopped: cannot watch again", "err", serr)
			return
		}
		cur = next
		p.m.gaps.Inc() // after the new cursor exists: a change applied from now on is published
		p.log.Warn("KV event feed lost events: subscribers see a sequence gap", "err", err, "next_seq", p.seq)
	}
}

// publish sends evs (1..MaxBatch) as the next message.
func (p *Publisher) publish(evs []Event) {
	ts := p.cfg.Now().UnixMilli()
	payload, err := p.enc.batch(ts, p.nextID, p.cfg.BackendID, evs)
	if err != nil { // packing plain structs cannot fail; nothing is sent, no number used
		p.log.Error("KV event feed: cannot pack a batch", "err", err)
		return
	}
	p.nextID += uint64(len(evs))
	seq := make([]byte, 8)
	binary.BigEndian.PutUint64(seq, p.seq)
	p.seq++
	if err := p.sock.SendMulti(zmq4.NewMsgFrom([]byte{}, seq, payload)); err != nil {
		p.log.Warn("KV event feed: send failed (a gap for subscribers)", "err", err)
		return
	}
	p.m.messages.Inc()
	p.m.events.Add(float64(len(evs)))
}
