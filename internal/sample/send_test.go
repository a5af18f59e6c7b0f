package sample

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSendTCP(t *testing.T) {
	var events bytes.Buffer
	if err := WriteEvents(&events, 0, 3000, EventOptions{Seed: 9}); err != nil {
		t.Fatal(err)
	}
	for _, octets := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				got <- nil
				return
			}
			defer c.Close()
			b, _ := io.ReadAll(c) // until the sender closes its side
			got <- b
		}()
		n, err := Send(context.Background(), "tcp://"+ln.Addr().String(), bytes.NewReader(events.Bytes()), SendOptions{OctetCount: octets})
		if err != nil || n != 3000 {
			t.Fatalf("octet counting %v: sent %d, %v", octets, n, err)
		}
		b := <-got
		ln.Close()
		if !octets {
			if !bytes.Equal(b, events.Bytes()) {
				t.Fatalf("newline framing: received %d bytes, sent %d", len(b), events.Len())
			}
			continue
		}
		// Undo the octet counting: LEN SP MSG, repeated.
		var plain bytes.Buffer
		for len(b) > 0 {
			sp := bytes.IndexByte(b, ' ')
			size, err := strconv.Atoi(string(b[:sp]))
			if sp < 0 || err != nil || sp+1+size > len(b) {
				t.Fatalf("bad frame at %q", b[:min(len(b), 40)])
			}
			plain.Write(b[sp+1 : sp+1+size])
			plain.WriteByte('\n')
			b = b[sp+1+size:]
		}
		if !bytes.Equal(plain.Bytes(), events.Bytes()) {
			t.Fatal("octet counting: the messages differ from the lines sent")
		}
	}
}

func TestSendUDPAndRate(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	lines := "a b\nc\n\nlast line without a newline"
	start := time.Now()
	n, err := Send(context.Background(), "udp://"+pc.LocalAddr().String(), strings.NewReader(lines), SendOptions{Rate: 40})
	if err != nil || n != 4 {
		t.Fatalf("sent %d, %v", n, err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("4 lines at 40/s took %v", d)
	}
	buf := make([]byte, 100)
	var got []string
	for range 4 {
		if err := pc.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		k, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(buf[:k]))
	}
	if strings.Join(got, "|") != "a b|c||last line without a newline" {
		t.Fatalf("datagrams %q", got)
	}
}

func TestSendErrors(t *testing.T) {
	for _, target := range []string{"127.0.0.1:5514", "http://127.0.0.1:1", "tcp://", "tcp://127.0.0.1:1/x"} {
		if _, err := Send(context.Background(), target, strings.NewReader("x\n"), SendOptions{}); err == nil {
			t.Errorf("%q: no error", target)
		}
	}
	// Nobody listens: the dial fails.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Send(context.Background(), "tcp://"+addr, strings.NewReader("x\n"), SendOptions{}); err == nil {
		t.Error("closed port: no error")
	}
	// A cancelled context stops a paced send.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = io.Copy(io.Discard, bufio.NewReader(c)) // until the sender gives up
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	n, err := Send(ctx, "tcp://"+ln.Addr().String(), strings.NewReader(strings.Repeat("x\n", 1000)), SendOptions{Rate: 100})
	if err == nil || n >= 1000 {
		t.Fatalf("cancelled send: %d lines, %v", n, err)
	}
}
