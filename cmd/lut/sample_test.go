package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lutkit/lutkit/internal/sample"
)

// lut sample writes what package sample generates, to stdout or a file;
// the customers table compiles, and the sites table compiles into an MMDB
// whose records are the sites'.
func TestSampleCommands(t *testing.T) {
	dir := t.TempDir()
	var want bytes.Buffer
	if err := sample.WriteCustomers(&want, 500, 4); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "sample", "customers", "500", "--seed", "4"); got != want.String() {
		t.Fatal("lut sample customers differs from sample.WriteCustomers")
	}
	csvPath := filepath.Join(dir, "c.csv")
	mustRun(t, "sample", "customers", "500", "--seed", "4", "--out", csvPath)
	if b, _ := os.ReadFile(csvPath); !bytes.Equal(b, want.Bytes()) {
		t.Fatal("--out wrote something else")
	}
	lut := filepath.Join(dir, "c.lut")
	mustRun(t, "compile", "--key", "Index", "--out", lut, csvPath)
	c := sample.NewCustomer(4, 321)
	if got := mustRun(t, "get", lut, "321"); !strings.Contains(got, `"Email":"`+c.Email+`"`) || !strings.Contains(got, `"Customer Id":"`+c.ID+`"`) {
		t.Fatalf("row 321: %s, want %+v", got, c)
	}

	sites := filepath.Join(dir, "sites.csv")
	mustRun(t, "sample", "sites", "20", "--out", sites)
	mmdb := filepath.Join(dir, "sites.mmdb")
	mustRun(t, "compile", "--out", mmdb, "--profile", "city", "--network", "network",
		"--field", "city.names.en=city", "--field", "country.iso_code=country",
		"--field", "location.latitude=lat", "--field", "location.longitude=lon", "--field", "site=site", sites)
	s := sample.NewSite(1, 20, 13)
	for _, addr := range []string{s.IPv4.Addr().Next().String(), s.IPv6.Addr().Next().String()} {
		got := mustRun(t, "get", mmdb, addr)
		if !strings.Contains(got, `"`+s.Name+`"`) || !strings.Contains(got, `"`+s.City+`"`) {
			t.Fatalf("%s: %s, want site %+v", addr, got, s)
		}
	}

	// Errors exit 2 and say why.
	for _, args := range [][]string{
		{"sample", "customers", "many"},
		{"sample", "sites", "0"},
		{"sample", "events", "10", "--format", "cef"},
		{"sample", "events", "10", "--send", "127.0.0.1:1"},
		{"sample", "events", "10", "--send", "tcp://127.0.0.1:1", "--out", "x"},
	} {
		if _, errs, code := run(t, args...); code == 0 || errs == "" {
			t.Errorf("lut %s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
		}
	}
}

func TestSampleEventsSend(t *testing.T) {
	o := sample.EventOptions{Seed: 3, Format: sample.RFC3164, Customers: 50, Sites: 5, Internal: 50}
	var want bytes.Buffer
	if err := sample.WriteEvents(&want, 10, 2000, o); err != nil {
		t.Fatal(err)
	}
	args := []string{"sample", "events", "2000", "--first", "10", "--seed", "3", "--format", "rfc3164", "--customers", "50", "--sites", "5", "--internal", "50", "--ipv6", "0"}
	if got := mustRun(t, args...); got != want.String() {
		t.Fatal("lut sample events differs from sample.WriteEvents")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- string(b)
	}()
	_, errs, code := run(t, append(args, "--send", "tcp://"+ln.Addr().String())...)
	if code != 0 || !strings.Contains(errs, "sent 2000 events") {
		t.Fatalf("--send: exit %d, stderr %q", code, errs)
	}
	if g := <-got; g != want.String() {
		t.Fatalf("received %d bytes, want the %d written", len(g), want.Len())
	}
}
