package relp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestClientOffers(t *testing.T) {
	offers, err := ParseOffers(ClientOffers("lutkit,1.0,https://example.org"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"relp_version": "0", "relp_software": "lutkit,1.0,https://example.org", "commands": "syslog"} {
		if v, ok := Lookup(offers, name); !ok || v != want {
			t.Errorf("%s = %q %v, want %q", name, v, ok, want)
		}
	}
}

func TestCheckOpen(t *testing.T) {
	// The answer of librelp 1.11's server (imrelp).
	check := func(s string) error {
		rsp, err := ParseRsp([]byte(s))
		if err != nil {
			return err
		}
		return CheckOpen(rsp)
	}
	if err := check("200 OK\nrelp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog"); err != nil {
		t.Fatal(err)
	}
	if err := check("200 OK\nrelp_version=0\ncommands=foo,syslog"); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"500 required command not supported by client": "refused the session: 500 required command",
		"200 OK\ncommands=syslog":                      "no relp_version",
		"200 OK\nrelp_version=1\ncommands=syslog":      `version "1"`,
		"200 OK\nrelp_version=0\ncommands=foo":         "does not enable the syslog command",
		"200 OK\nrelp_version=0":                       "does not enable the syslog command",
		"OK":                                           "three-digit status",
		"200 OK\n=x":                                   "has no name",
	} {
		if err := check(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckOpen(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestReadAnswer(t *testing.T) {
	r := NewReader(strings.NewReader("2 rsp 6 200 OK\n3 rsp 22 500 message too long\nx\n0 serverclose 0\n4 syslog 1 a\n"), 4096)
	a, err := ReadAnswer(r)
	if err != nil || a.Txnr != 2 || !a.Rsp.OK() || a.ServerClose {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = ReadAnswer(r)
	if err != nil || a.Txnr != 3 || a.Rsp.Code != 500 || a.Rsp.Text != "message too long" || string(a.Rsp.Extra) != "x" {
		t.Fatalf("%+v %v", a, err)
	}
	if a, err = ReadAnswer(r); err != nil || !a.ServerClose {
		t.Fatalf("%+v %v", a, err)
	}
	var fe *FrameError
	if _, err = ReadAnswer(r); !errors.As(err, &fe) || !strings.Contains(err.Error(), `command "syslog"`) || fe.Offset != 63 {
		t.Fatalf("a syslog command from the server: %v", err)
	}
	if _, err := ReadAnswer(NewReader(strings.NewReader("1 rsp 2 OK\n"), 4096)); !errors.As(err, &fe) || fe.Offset != 0 {
		t.Fatalf("an rsp without a status: %v", err)
	}
	if _, err := ReadAnswer(NewReader(strings.NewReader(""), 4096)); !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v", err)
	}
}

func TestTxnrArithmetic(t *testing.T) {
	for _, c := range []struct {
		t    uint32
		n    int
		want uint32
	}{{1, 0, 1}, {2, 5, 7}, {MaxTxnr, 1, 1}, {MaxTxnr - 1, 3, 2}, {5, MaxTxnr, 5}, {3, 2*MaxTxnr + 1, 4}} {
		if got := AddTxnr(c.t, c.n); got != c.want {
			t.Errorf("AddTxnr(%d, %d) = %d, want %d", c.t, c.n, got, c.want)
		}
		if d := TxnrDistance(c.t, c.want); d != c.n%MaxTxnr {
			t.Errorf("TxnrDistance(%d, %d) = %d, want %d", c.t, c.want, d, c.n%MaxTxnr)
		}
	}
	n := uint32(MaxTxnr - 2)
	for i := range 5 {
		if AddTxnr(MaxTxnr-2, i) != n {
			t.Fatalf("AddTxnr(MaxTxnr-2, %d) = %d, NextTxnr says %d", i, AddTxnr(MaxTxnr-2, i), n)
		}
		n = NextTxnr(n)
	}
}

// FuzzReadAnswers reads arbitrary bytes as what a server sends a client:
// no panic, every answer read is an rsp with a three-digit status or a
// serverclose, and its response writes back to one that reads the same;
// the answer to open is checked without a panic.
func FuzzReadAnswers(f *testing.F) {
	f.Add([]byte("1 rsp 92 200 OK\nrelp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog\n2 rsp 6 200 OK\n"))
	f.Add([]byte("2 rsp 25 500 message too long\nx\n0 serverclose 0\n"))
	f.Add([]byte("3 rsp 0\n4 syslog 1 a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), 1024)
		for {
			a, err := ReadAnswer(r)
			if err != nil {
				var fe *FrameError
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &fe) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				return
			}
			if a.ServerClose {
				continue
			}
			if a.Rsp.Code < 0 || a.Rsp.Code > 999 {
				t.Fatalf("status %d", a.Rsp.Code)
			}
			if bytes.IndexByte([]byte(a.Rsp.Text), '\n') >= 0 {
				t.Fatalf("status text %q holds a LF", a.Rsp.Text)
			}
			again := AppendRsp(nil, a.Rsp.Code, a.Rsp.Text, a.Rsp.Extra)
			b, err := ParseRsp(again)
			if err != nil || b.Code != a.Rsp.Code || b.Text != a.Rsp.Text || !bytes.Equal(b.Extra, a.Rsp.Extra) {
				t.Fatalf("answer %+v writes back as %q, read as %+v %v", a.Rsp, again, b, err)
			}
			_ = CheckOpen(a.Rsp)
		}
	})
}
