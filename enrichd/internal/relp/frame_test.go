package relp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestReadFrames(t *testing.T) {
	in := "1 open 86 relp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog\n" +
		"2 syslog 5 hello\n" +
		"3 close 0\n" +
		"0 serverclose 0\n"
	r := NewReader(strings.NewReader(in), 128<<10)
	want := []struct {
		txnr uint32
		cmd  string
		data string
	}{
		{1, CmdOpen, "relp_version=0\nrelp_software=librelp,1.11.0,http://librelp.adiscon.com\ncommands=syslog"},
		{2, CmdSyslog, "hello"},
		{3, CmdClose, ""},
		{0, CmdServerClose, ""},
	}
	for _, w := range want {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Txnr != w.txnr || f.Cmd != w.cmd || string(f.Data) != w.data {
			t.Fatalf("got %d %q %q, want %d %q %q", f.Txnr, f.Cmd, f.Data, w.txnr, w.cmd, w.data)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	for in, want := range map[string]string{
		"x syslog 1 a\n":                        "in the transaction number",
		"1234567890 syslog 1 a\n":               "longer than 9 digits",
		" syslog 1 a\n":                         "in the transaction number",
		"1 sys-log 1 a\n":                       "in the command",
		"1  1 a\n":                              "in the command",
		"1 " + strings.Repeat("a", 33) + " 0\n": "longer than 32 letters",
		"1 syslog x\n":                          "in the data length",
		"1 syslog 0 \n":                         "after a data length of 0",
		"1 syslog 2\n":                          "after the data length",
		"1 syslog 1 ab\n":                       "trailer",
		"1 syslog 100 a\n":                      "", // cut short
		"1 syslog 9999 " + strings.Repeat("a", 9999) + "\n": "longer than the limit",
	} {
		_, err := NewReader(strings.NewReader(in), 4096).Next()
		if want == "" {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%.20q: %v, want io.ErrUnexpectedEOF", in, err)
			}
			continue
		}
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want a FrameError with %q", in, err, want)
		}
	}
}

func TestFrameErrorOffset(t *testing.T) {
	r := NewReader(strings.NewReader("1 syslog 3 abc\n2 syslog 3 abcX"), 4096)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	var fe *FrameError
	if !errors.As(err, &fe) || fe.Offset != 15 {
		t.Fatalf("%v, want a FrameError at octet 15", err)
	}
}

func TestAppendRoundTrip(t *testing.T) {
	var buf []byte
	for i := range 1000 {
		buf = AppendFrame(buf, uint32(i+1), CmdSyslog, bytes.Repeat([]byte{'a' + byte(i%26)}, i))
	}
	r := NewReader(bytes.NewReader(buf), 4096)
	for i := range 1000 {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Txnr != uint32(i+1) || f.Cmd != CmdSyslog || len(f.Data) != i {
			t.Fatalf("frame %d: %d %q %d octets", i, f.Txnr, f.Cmd, len(f.Data))
		}
	}
}

func TestNextTxnr(t *testing.T) {
	if NextTxnr(1) != 2 || NextTxnr(MaxTxnr) != 1 {
		t.Fatal("NextTxnr does not wrap at 999,999,999 to 1")
	}
}

func TestRsp(t *testing.T) {
	r, err := ParseRsp([]byte("200 OK\nrelp_version=0\ncommands=syslog"))
	if err != nil || !r.OK() || r.Text != "OK" {
		t.Fatalf("%+v %v", r, err)
	}
	offers, err := ParseOffers(r.Extra)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := Lookup(offers, "commands"); !ok || v != "syslog" {
		t.Fatalf("commands = %q %v", v, ok)
	}
	if r, err := ParseRsp(nil); err != nil || !r.OK() {
		t.Fatalf("empty rsp: %+v %v", r, err)
	}
	if r, err := ParseRsp([]byte("500 protocol error")); err != nil || r.OK() || r.Code != 500 || r.Text != "protocol error" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"OK", "20", "2000 OK", "x00 OK"} {
		if _, err := ParseRsp([]byte(bad)); err == nil {
			t.Errorf("ParseRsp(%q) accepted", bad)
		}
	}
	if _, err := ParseOffers([]byte("=x")); err == nil {
		t.Error("an offer with no name accepted")
	}
	if got := string(AppendRsp(nil, 200, "OK", AppendOffers(nil, Offer{"relp_version", "0"}, Offer{"commands", "syslog"}))); got != "200 OK\nrelp_version=0\ncommands=syslog" {
		t.Fatalf("AppendRsp: %q", got)
	}
}

// Reading the frames a client sends and answering them.
func ExampleReader() {
	in := "1 open 30 relp_version=0\ncommands=syslog\n2 syslog 11 <13>1 hello\n3 close 0\n"
	r := NewReader(strings.NewReader(in), 128<<10)
	var out []byte
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		switch f.Cmd {
		case CmdOpen:
			out = AppendFrame(out, f.Txnr, CmdRsp, AppendRsp(nil, 200, "OK", f.Data))
		case CmdSyslog:
			fmt.Printf("message %d: %s\n", f.Txnr, f.Data)
			out = AppendFrame(out, f.Txnr, CmdRsp, AppendRsp(nil, 200, "OK", nil))
		case CmdClose:
			out = AppendFrame(out, f.Txnr, CmdRsp, nil)
			out = AppendFrame(out, 0, CmdServerClose, nil)
		}
	}
	fmt.Print(string(out))
	// Output:
	// message 2: <13>1 hello
	// 1 rsp 37 200 OK
	// relp_version=0
	// commands=syslog
	// 2 rsp 6 200 OK
	// 3 rsp 0
	// 0 serverclose 0
}

func TestParseRspOKDoesNotAllocate(t *testing.T) {
	data := []byte("200 OK")
	if n := testing.AllocsPerRun(100, func() {
		if r, err := ParseRsp(data); err != nil || r.Text != "OK" {
			t.Fatal(r, err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per 200 OK answer", n)
	}
}
