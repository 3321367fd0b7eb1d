package chaos

import (
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echo serves an echo server on loopback until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes a byte and waits up to d for it to come back.
func roundTrip(c net.Conn, d time.Duration) error {
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

func TestProxyRules(t *testing.T) {
	if !Supported() {
		t.Skip("needs Linux /proc")
	}
	n := NewNet()
	t.Cleanup(n.Close)
	p, err := n.Listen(1, "peer")
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(echo(t))
	// This process plays node 0.
	n.SetPID(0, os.Getpid())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}
	// Blackhole: the byte is held, then delivered when the link passes again.
	n.Set(0, 1, Blackhole)
	if err := roundTrip(c, 200*time.Millisecond); err == nil {
		t.Fatal("blackholed link delivered a byte")
	}
	n.Set(0, 1, Pass)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("held byte not delivered after heal: %v", err)
	}
	// Another source is not affected by node 0's rule.
	n.SetPID(0, 0)
	n.Set(0, 1, Drop)
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 5*time.Second); err != nil {
		t.Fatalf("external connection through a rule for node 0: %v", err)
	}
	// Drop: node 0's connections are closed and new ones refused.
	n.SetPID(0, os.Getpid())
	n.Set(0, 1, Drop)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3, 5*time.Second); err == nil {
		t.Fatal("dropped link delivered a byte")
	}
}
